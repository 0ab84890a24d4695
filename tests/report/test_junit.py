"""JUnit output of a replay: a testcase per claim, gate failures as failures, parsed back."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from physverify.gate.replay import ReplayResult
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


def test_control_characters_in_a_label_message_or_file_name_still_parse(result: ReplayResult) -> None:
    """Issue 13, item 10: XML 1.0 forbids them; they are shown as escapes, and nothing else changes."""
    from dataclasses import replace

    bad = "\x00\x01\x08\x0b\x0c\x1b[31m\x7f\ud800\ufffe"
    first = result.claims[0]
    hostile = replace(first, key=first.key + bad, target="sim/rk4" + bad + ".py",
                      record={**(first.record or {}), "reason": "why" + bad})
    root = ET.fromstring(junit.render(replace(result, claims=(hostile, *result.claims[1:]))).encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None
    shown = "\\x00\\x01\\x08\\x0b\\x0c\\x1b[31m\\x7f\\ud800\\ufffe"
    assert case.get("name") == "claims/regressed.py" + shown and case.get("file") == "sim/rk4" + shown + ".py"
    failure = case.find("failure")
    assert failure is not None and failure.text is not None and ("why" + shown + "; check FAIL") in failure.text
