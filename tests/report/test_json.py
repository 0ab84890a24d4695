"""JSON output of a replay: every ledger object plus its transition and baseline."""

from __future__ import annotations

import json

from physverify.gate.replay import ReplayResult
from physverify.report import json as json_report


def test_every_claim_keeps_its_ledger_fields_and_gains_transition_and_baseline(result: ReplayResult, failing: set[str]) -> None:
    data = json.loads(json_report.render(result))
    claims = {c["claim_key"]: c for c in data["claims"]}
    assert set(claims) == {run.key for run in result.claims}
    regressed = claims["claims/regressed.py"]
    assert (regressed["transition"], regressed["verdict"], regressed["baseline_verdict"]) == (
        "regressed", "confirmed", "rejected")
    assert regressed["reference"] == "Butcher, sec. 23" and regressed["checks"][0]["status"] == "FAIL"
    assert {k for k, c in claims.items() if c["gate_failures"]} == failing
    assert claims["claims/gone.py"]["verdict"] is None
    assert data["exit_code"] == 1 and data["skipped_unaffected"] == 1 and data["written"] == 4
    assert data["counts"] == {"new": 2, "unchanged": 2, "fixed": 1, "regressed": 1, "removed": 1}
