"""Markdown output of a replay: one table row per claim, cells that cannot break the table."""

from __future__ import annotations

from physverify.replay import ReplayResult
from physverify.report import markdown


def test_the_summary_has_a_headline_and_one_row_per_claim(result: ReplayResult) -> None:
    text = markdown.render(result)
    lines = text.splitlines()
    assert lines[0] == "## physverify replay: gate failed"
    rows = [line for line in lines if line.startswith("| ") and "`claims/" in line]
    assert len(rows) == len(result.claims)
    # every row has exactly the table's 6 cells: no pipe or newline from a message leaks out
    assert all(row.replace("\\|", "").count("|") == 7 for row in rows)
    assert any("**fails the gate**: regressed: rejected -> confirmed" in row for row in rows)
    assert "1 skipped as unaffected" in text
