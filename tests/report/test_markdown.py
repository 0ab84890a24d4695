"""Markdown output of a replay: one table row per claim, cells that cannot break the table."""

from __future__ import annotations

from physverify.gate.replay import ReplayResult
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
    # what to do next, as the terminal says it (the walkthrough: a failed summary named no way forward)
    assert ("> to pass: fix the code the claim is about (re-running or staging the ledger does not clear a regression), "
            "or pin a defect kept on purpose with 'expect: {claims/regressed.py: confirmed}' in the claims folder's "
            "physverify.yaml, in a reviewed commit (docs/replay.md)") in lines


def test_html_links_and_line_breaks_in_a_claim_stay_text(result: ReplayResult) -> None:
    """Issue 13, item 17: the job summary shows a claim's words, never its HTML, links or rows."""
    from dataclasses import replace

    first = result.claims[0]
    reason = "<img src=x onerror=alert(1)> [a](javascript:x) ![t](http://t/p.png) *b* `c` $x$ &amp;\n| row |"
    hostile = replace(first, key="claims/`a`|<b>.py", failures=(),
                      record={**(first.record or {}), "reason": reason})
    row = next(line for line in markdown.render(replace(result, claims=(hostile,))).splitlines()
               if "claims/" in line and line.startswith("| "))
    assert "| ``claims/`a`\\|<b>.py`` |" in row  # a code span: inside it, nothing is HTML or Markdown
    assert ("\\<img src=x onerror=alert(1)> \\[a\\](javascript:x) \\!\\[t\\](http://t/p.png) \\*b\\* \\`c\\` "
            "\\$x\\$ \\&amp;\\\\n\\| row \\|") in row  # the newline shown as \\n
