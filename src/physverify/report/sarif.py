"""SARIF 2.1.0 of a replay, for code scanning (GitHub's upload-sarif and others).

Results: every confirmed claim (a defect that is there), every claim that fails the gate
and every other claim that moved, at the claimed file:line, each naming its decisive
check. One rule per transition kind, so a scanner groups "regressed" apart from
"unchanged". Levels: error for a gate failure, warning for a confirmed defect that is still
there, note for the rest (a fix, a new or decided claim, a removed one). Field names and nesting
follow the OASIS SARIF 2.1.0 specification (sarifLog > runs > tool.driver.rules, results).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from physverify import __version__
from physverify.gate.rules import UNCHANGED
from physverify.report import finding
from physverify.text import dumps
from physverify.verdict import CONFIRMED

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"

# The rules, one per transition, in a fixed order: a result's ruleIndex is its rule's place
# here, and code scanning keeps alerts by rule across uploads. A new transition is appended
# at the end, never inserted, so no published index moves (tests/report/test_sarif.py).
RULES: tuple[tuple[str, str], ...] = (
    ("new", "A claim with no earlier line in the ledger"),
    ("unchanged", "A claim whose verdict is the same as in the baseline"),
    ("fixed", "A confirmed defect whose claim is now rejected"),
    ("regressed", "A rejected claim that is now confirmed: the defect is back"),
    ("undecidable", "A decided claim that is now not decidable"),
    ("decided", "A claim that was not decidable and now has a verdict"),
    ("removed", "A claim in the baseline whose file is gone"),
)
RULE_TEXT = dict(RULES)
RULE_INDEX = {rule_id: index for index, (rule_id, _) in enumerate(RULES)}


def _rule(transition: str) -> dict[str, Any]:
    return {
        "id": transition,
        "name": "Claim" + transition.capitalize(),
        "shortDescription": {"text": RULE_TEXT[transition]},
        "defaultConfiguration": {"level": "error" if transition in ("regressed", "undecidable") else "warning"},
    }


def _level(run: ClaimRun) -> str:
    if run.failures:
        return "error"
    return "warning" if run.verdict == CONFIRMED else "note"


def uri(path: str) -> str:
    """``path`` as a relative URI reference (RFC 3986), as SARIF's artifactLocation.uri must be (SARIF 2.1.0, 3.4.3).

    A path is the repository's (a claim's file name, CLAIM["file"]): raw, a "#" or "?" cut
    it short for every reader that parses the URI, a "%2e%2e" read back as "..", and a
    first segment with a colon ("https:", "javascript:") made it an absolute URI of the
    claim's choosing. Every character but the unreserved ones and "/" is percent-encoded
    as UTF-8, so the reader decodes exactly the path that was given.
    """
    return quote(path, safe="/", encoding="utf-8", errors="backslashreplace")


def _location(run: ClaimRun) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri(run.target or run.key), "uriBaseId": "%SRCROOT%"}}
    if run.line is not None and run.line >= 1:  # SARIF regions count lines from 1
        physical["region"] = {"startLine": run.line}
    return {"physicalLocation": physical}


def _result(run: ClaimRun) -> dict[str, Any]:
    record = run.record or run.baseline or {}
    return {
        "ruleId": run.transition,
        "ruleIndex": RULE_INDEX[run.transition],
        "level": _level(run),
        "message": {"text": finding(run)},
        "locations": [_location(run)],
        "partialFingerprints": {"physverifyClaim/v1": run.key},
        "properties": {
            "claim": run.key, "verdict": run.verdict, "baselineVerdict": run.baseline_verdict,
            "transition": run.transition, "reference": record.get("reference"), "impact": record.get("impact"),
            "evidence": run.evidence,
        },
    }


def to_dict(result: ReplayResult) -> dict[str, Any]:
    """The replay as a SARIF log object."""
    shown = [run for run in result.claims if run.verdict == CONFIRMED or run.failures or run.transition != UNCHANGED]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "physverify", "version": __version__,
                                "rules": [_rule(rule_id) for rule_id, _ in RULES]}},
            "invocations": [{"executionSuccessful": True, "exitCode": result.exit_code}],
            "results": [_result(run) for run in shown],
        }],
    }


def render(result: ReplayResult) -> str:
    """The replay as a SARIF 2.1.0 JSON document."""
    return dumps(to_dict(result), indent=2)
