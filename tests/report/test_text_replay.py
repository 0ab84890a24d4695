"""Text output of a replay: one line per claim (verdict, transition, claim, file:line), then counts."""

from __future__ import annotations

from pathlib import Path

from physverify.gate.replay import ReplayResult
from physverify.report import text


def test_one_line_per_claim_then_warnings_counts_and_the_gate(result: ReplayResult) -> None:
    lines = text.render(result).splitlines()
    claim_lines = [line for line in lines if "claims/" in line and not line.startswith(("  ", "warning", "7 claims", "to pass"))]
    assert len(claim_lines) == len(result.claims)
    assert claim_lines[0].split() == ["confirmed", "regressed", "claims/regressed.py", "sim/rk4.py:12", "(was", "rejected)"]
    assert "  gate: regressed: rejected -> confirmed" in lines
    assert "  why: the reason for not decidable" in lines  # a claim that cannot be judged says why
    assert "warning: claims/confirm_ledger.jsonl:7: cut off" in lines
    assert ("7 claims: 2 new, 2 unchanged, 1 fixed, 1 regressed, 1 removed; 1 skipped as unaffected; "
            "4 lines written to claims/confirm_ledger.jsonl") in lines
    gate = next(i for i, line in enumerate(lines) if line.startswith("gate failed: 3 claim(s)"))
    assert lines[gate + 1:] == [  # what to do next, for a regression and for a claim that cannot be judged
        "to pass: fix the code the claim is about (re-running or staging the ledger does not clear a regression), "
        "or pin a defect kept on purpose with 'expect: {claims/regressed.py: confirmed}' in the claims folder's "
        "physverify.yaml, in a reviewed commit (docs/replay.md)",
        "to pass: a claim that cannot be judged says why on its 'why:' line; docs/troubleshooting.md says what to change",
    ]


def test_a_newline_or_escape_in_a_claim_cannot_forge_a_line_or_reach_the_terminal() -> None:
    """Issue 13, item 17: the text is shown with visible escapes, one claim per line."""
    from conftest import claim_run

    from physverify.gate.rules import DEFAULT_FAIL_ON, NEW
    from physverify.verdict import NOT_DECIDABLE

    key = "claims/x.py\ngate passed\n::warning::forged\x1b]52;c;aGk=\x07\x1b[2J\u202e"
    run = claim_run(key, NEW, NOT_DECIDABLE, None)
    run = type(run)(**{**run.__dict__, "record": {**run.record, "reason": "bad\r\n::error::x\x9b"}})
    result = ReplayResult(claims=(run,), skipped=(), ledger=Path("l.jsonl"), written=0, fail_on=DEFAULT_FAIL_ON,
                          exit_code=1, notes=("n\n::notice::y",), warnings=("w\rgate passed",))
    lines = text.render(result).splitlines()
    assert lines[0].split()[:4] == ["not", "decidable", "new", "claims/x.py\\ngate"]
    assert "\\ngate passed\\n::warning::forged\\x1b]52;c;aGk=\\x07\\x1b[2J\\u202e" in lines[0]
    assert lines[1] == "  why: bad\\r\\n::error::x\\x9b"
    assert "warning: w\\rgate passed" in lines and "n\\n::notice::y" in lines
    assert not any(line.startswith("::") or line == "gate passed" for line in lines)


def test_counted_progress_writes_at_most_once_per_interval_and_always_the_last_count() -> None:
    """Issue 38: a CI log gets ``[k/N] claims done`` while claims run, never a line per claim of a large folder."""
    import time

    from physverify.report.text import CountedProgress

    quiet: list[str] = []
    counted = CountedProgress(quiet.append, time.monotonic(), every_s=3600.0)
    for done in range(1, 6):
        counted(None, done, 5)
    assert quiet == ["[5/5] claims done (0 s)\n"]
    every: list[str] = []
    counted = CountedProgress(every.append, time.monotonic(), every_s=0.0)
    for done in range(1, 4):
        counted(None, done, 3)
    assert [line.split(" ")[0] for line in every] == ["[1/3]", "[2/3]", "[3/3]"]
