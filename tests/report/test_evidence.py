"""Every format names the check that decided a claim that moved or fails the gate (issue 10, "Evidence")."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from physverify.gate.rules import DEFAULT_FAIL_ON, REGRESSED, UNCHANGED
from physverify.gate.replay import ClaimRun, ReplayResult
from physverify.report import FORMATS, render
from physverify.verdict import CONFIRMED, EXIT_FINDING, REJECTED

EVIDENCE = "check FAIL midpoint rule is second order with gamma = 0.5: observed order 1.02 (expected 2)"


def _record(verdict: str) -> dict[str, object]:
    return {
        "claim_key": "claims/midpoint.py", "text": "the midpoint rule is first order", "file": "sim/step.py", "line": 7,
        "verdict": verdict, "reason": "the control passed and 1 of 2 checks failed",
        "control": {"label": "exact for a constant force", "family": "exact", "status": "PASS", "message": "error 0"},
        "checks": [
            {"label": "energy is bounded", "family": "invariant", "status": "PASS", "message": "bounded"},
            {"label": "midpoint rule is second order with gamma = 0.5", "family": "mms", "status": "FAIL",
             "message": "observed order 1.02 (expected 2)"},
        ],
    }


def _result(transition: str) -> ReplayResult:
    run = ClaimRun("claims/midpoint.py", transition, CONFIRMED, REJECTED if transition == REGRESSED else CONFIRMED,
                   _record(CONFIRMED), {"verdict": REJECTED}, target="sim/step.py", line=7)
    if transition == REGRESSED:
        run = replace(run, failures=("regressed: rejected -> confirmed",))
    return ReplayResult((run,), (), Path("claims/confirm_ledger.jsonl"), 1, DEFAULT_FAIL_ON,
                        EXIT_FINDING if run.failures else 0)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_regressed_claim_names_its_decisive_check_in_every_format(fmt: str) -> None:
    out = render(fmt, _result(REGRESSED))
    if fmt == "json":
        assert json.loads(out)["claims"][0]["evidence"] == EVIDENCE
    elif fmt == "junit":
        case = ET.fromstring(out).find(".//testcase")
        assert case is not None and EVIDENCE in (case.findtext("failure") or "")
    elif fmt == "sarif":
        assert EVIDENCE in json.loads(out)["runs"][0]["results"][0]["message"]["text"]
    else:
        assert EVIDENCE in out


def test_an_unchanged_passing_claim_carries_no_evidence_line() -> None:
    assert _result(UNCHANGED).claims[0].evidence is None
    assert "check FAIL" not in render("text", _result(UNCHANGED))


PAIR = "check FAIL on the code, PASS with the fix: midpoint rule is second order with gamma = 0.5: observed order 1.02 (expected 2)"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_claim_that_names_its_fix_shows_the_decisive_pair_in_every_format(fmt: str) -> None:
    """Issue 17: "check FAIL on the code, PASS with the fix", whatever the format."""
    result = _result(REGRESSED)
    record = dict(result.claims[0].record or {})
    checks = record["checks"]
    assert isinstance(checks, list)
    record["variant"] = {"held": "defect", "line": 7, "control": record["control"],
                         "checks": [checks[0], {**checks[1], "status": "PASS", "message": "observed order 2.00"}]}
    result = replace(result, claims=(replace(result.claims[0], record=record),))
    out = render(fmt, result)
    if fmt in ("json", "sarif"):
        assert PAIR in json.dumps(json.loads(out), ensure_ascii=False)
    elif fmt == "junit":
        case = ET.fromstring(out).find(".//testcase")
        assert case is not None and PAIR in (case.findtext("failure") or "")
    else:
        assert PAIR in out.replace("&#x27;", "'")
