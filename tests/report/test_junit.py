"""JUnit output of a replay: a testcase per claim, gate failures as failures, parsed back."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from physverify.replay import ReplayResult
from physverify.report import junit


def test_each_claim_is_a_testcase_and_only_gate_failures_are_failures(result: ReplayResult, failing: set[str]) -> None:
    root = ET.fromstring(junit.render(result).encode())
    suite = root.find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == {run.key for run in result.claims}
    assert {name for name, case in cases.items() if case.find("failure") is not None} == failing
    assert suite.get("tests") == "7" and suite.get("failures") == "3" and suite.get("skipped") == "1"
    regressed = cases["claims/regressed.py"].find("failure")
    assert regressed is not None and regressed.get("type") == "regressed"
    assert regressed.get("message") == "regressed: rejected -> confirmed"
    assert cases["claims/regressed.py"].get("file") == "sim/rk4.py" and cases["claims/regressed.py"].get("line") == "12"
    assert cases["claims/regressed.py"].get("time") == "1.750"
    assert cases["claims/gone.py"].find("skipped") is not None
