"""JUnit XML of a replay: one testcase per claim; a claim that fails the gate is a failure.

CI systems (GitLab, Jenkins, Azure) show JUnit files as test reports. The attributes
``file`` and ``line`` are the claimed place, so a report can link to the code. Every
string goes through ``visible``: XML 1.0 allows no control character but tab, LF and CR, no
surrogate and no U+FFFE/U+FFFF, so a label holding one would make the file unreadable
(issue 13); they are shown as escapes instead. Line breaks too: printed to a CI log, a
line of the report that began with a claim's text could be read as a workflow command.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from physverify.gate.rules import REMOVED
from physverify.text import visible

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult


def _seconds(run: ClaimRun) -> float:
    """The claim's whole run (both children of a fixed claim, start and reading included); the sum of its
    checks' own times for a result read back from an older report."""
    if run.seconds is not None:
        return run.seconds
    record = run.record or {}
    outcomes = ([record["control"]] if record.get("control") else []) + list(record.get("checks") or [])
    return sum(float(o.get("seconds") or 0.0) for o in outcomes)


def _testcase(run: ClaimRun) -> ET.Element:
    case = ET.Element("testcase", name=visible(run.key), classname="physverify.replay", time=f"{_seconds(run):.3f}")
    if run.target is not None:
        case.set("file", visible(run.target))
    if run.line is not None:
        case.set("line", str(run.line))
    why = run.reason + (f"; {run.evidence}" if run.evidence else "")
    if run.failures:
        failure = ET.SubElement(case, "failure", message=visible("; ".join(run.failures)), type=run.transition)
        failure.text = visible(f"{run.change()} at {run.location}: {why}")
    elif run.transition == REMOVED:
        ET.SubElement(case, "skipped", message=visible(run.reason))
    out = ET.SubElement(case, "system-out")
    out.text = visible(f"{run.change()} ({run.location}): {why}")
    return case


def render(result: ReplayResult) -> str:
    """The replay as a JUnit XML document (testsuites > testsuite > testcase)."""
    cases = [_testcase(run) for run in result.claims]
    failures = sum(bool(run.failures) for run in result.claims)
    skipped = sum(run.transition == REMOVED and not run.failures for run in result.claims)
    suites = ET.Element("testsuites", name="physverify replay", tests=str(len(cases)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name="physverify replay", tests=str(len(cases)), failures=str(failures),
        errors="0", skipped=str(skipped), time=f"{sum(_seconds(r) for r in result.claims):.3f}",
    )
    suite.extend(cases)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)
