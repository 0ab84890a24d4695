"""Text output of a replay: one line per claim (verdict, transition, claim, file:line), then counts."""

from __future__ import annotations

from physverify.replay import ReplayResult
from physverify.report import text


def test_one_line_per_claim_then_warnings_counts_and_the_gate(result: ReplayResult) -> None:
    lines = text.render(result).splitlines()
    claim_lines = [line for line in lines if "claims/" in line and not line.startswith(("  ", "warning", "7 claims"))]
    assert len(claim_lines) == len(result.claims)
    assert claim_lines[0].split() == ["confirmed", "regressed", "claims/regressed.py", "sim/rk4.py:12", "(was", "rejected)"]
    assert "  gate: regressed: rejected -> confirmed" in lines
    assert "  why: the reason for not decidable" in lines  # a claim that cannot be judged says why
    assert "warning: claims/confirm_ledger.jsonl:7: cut off" in lines
    assert ("7 claims: 2 new, 2 unchanged, 1 fixed, 1 regressed, 1 removed; 1 skipped as unaffected; "
            "4 lines written to claims/confirm_ledger.jsonl") in lines
    assert lines[-1].startswith("gate failed: 3 claim(s)")
