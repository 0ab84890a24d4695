"""A replay result built from plain values, so each format is tested without running claims."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from physverify.gate.rules import DEFAULT_FAIL_ON, FIXED, NEW, REGRESSED, REMOVED, UNCHANGED
from physverify.gate.replay import ClaimRun, ReplayResult, gate_failures
from physverify.verdict import CONFIRMED, EXIT_FINDING, NOT_DECIDABLE, REJECTED


def record(key: str, verdict: str, text: str, line: int = 12) -> dict[str, Any]:
    return {
        "ledger_version": 1, "date": "2026-01-02T03:04:05+00:00", "physverify": "0.1.0", "claim_file": key,
        "claim_key": key, "text": text, "source": "a person", "file": "sim/rk4.py", "line": line,
        "reference": "Butcher, sec. 23", "impact": "used", "verdict": verdict,
        "reason": f"the reason for {verdict}",
        "control": {"label": "c", "family": "mms", "status": "PASS", "message": "", "seconds": 0.5},
        "checks": [{"label": "k", "family": "mms", "status": "FAIL", "message": "", "seconds": 1.25}],
    }


def claim_run(key: str, transition: str, verdict: str | None, before: str | None, text: str = "a claim",
              expected: str | None = None) -> ClaimRun:
    rec = record(key, verdict, text) if verdict is not None else None
    base = record(key, before, text) if before is not None else None
    run = ClaimRun(key, transition, verdict, before, rec, base, expected=expected, target="sim/rk4.py", line=12,
                   recorded=transition not in (UNCHANGED, REMOVED))
    return ClaimRun(**{**run.__dict__, "failures": gate_failures(run, DEFAULT_FAIL_ON)})


@pytest.fixture()
def result() -> ReplayResult:
    runs = (
        claim_run("claims/regressed.py", REGRESSED, CONFIRMED, REJECTED,
                  text='k3 uses "h" not h/2, 100% wrong: see a,b\nsecond line | pipe <xml> & more'),
        claim_run("claims/fixed.py", FIXED, REJECTED, CONFIRMED),
        claim_run("claims/known.py", UNCHANGED, CONFIRMED, CONFIRMED),
        claim_run("claims/fine.py", UNCHANGED, REJECTED, REJECTED),
        claim_run("claims/broken.py", NEW, NOT_DECIDABLE, None),
        claim_run("claims/pinned.py", NEW, CONFIRMED, None, expected=REJECTED),
        claim_run("claims/gone.py", REMOVED, None, REJECTED),
    )
    return ReplayResult(
        claims=runs, skipped=("claims/untouched.py",), ledger=Path("claims/confirm_ledger.jsonl"), written=4,
        fail_on=DEFAULT_FAIL_ON, exit_code=EXIT_FINDING, warnings=("claims/confirm_ledger.jsonl:7: cut off",),
    )


@pytest.fixture()
def failing() -> set[str]:
    """The claims of ``result`` that fail the gate: regressed, a new one not decidable, one that differs from expect."""
    return {"claims/regressed.py", "claims/broken.py", "claims/pinned.py"}
