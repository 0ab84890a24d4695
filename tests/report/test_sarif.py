"""SARIF output of a replay, validated against the SARIF 2.1.0 schema (tests/data, see its README)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from physverify.gate.rules import TRANSITIONS
from physverify.gate.replay import ReplayResult
from physverify.report import sarif

SCHEMA = Path(__file__).resolve().parent.parent / "data" / "sarif-schema-2.1.0-excerpt.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def test_the_log_is_valid_sarif_2_1_0(result: ReplayResult, validator: jsonschema.Draft7Validator) -> None:
    log = json.loads(sarif.render(result))
    errors = sorted(validator.iter_errors(log), key=str)
    assert errors == [], [e.message for e in errors]


def test_the_schema_refuses_what_sarif_does_not_allow(result: ReplayResult, validator: jsonschema.Draft7Validator) -> None:
    # the validation has teeth: an unknown level or a line 0 is rejected
    log: dict[str, Any] = json.loads(sarif.render(result))
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert not validator.is_valid(log)
    log = json.loads(sarif.render(result))
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert not validator.is_valid(log)


def test_confirmed_claims_and_gate_failures_are_results_one_rule_per_transition(
    result: ReplayResult, failing: set[str]
) -> None:
    run = json.loads(sarif.render(result))["runs"][0]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert set(rules) == set(TRANSITIONS) and len(rules) == len(TRANSITIONS)
    results = {r["properties"]["claim"]: r for r in run["results"]}
    confirmed = {c.key for c in result.claims if c.verdict == "confirmed"}
    moved = {c.key for c in result.claims if c.transition != "unchanged"}
    assert set(results) == confirmed | failing | moved  # a fix, good news, is a note
    for claim, found in results.items():
        assert rules[found["ruleIndex"]] == found["ruleId"]
        assert found["locations"][0]["physicalLocation"]["region"] == {"startLine": 12}
    assert results["claims/regressed.py"]["level"] == "error"
    assert results["claims/fixed.py"]["level"] == "note"
    assert results["claims/known.py"]["level"] == "warning"


def test_the_rule_indices_already_published_never_move() -> None:
    """Code scanning keys alerts by rule: a new transition goes at the end of sarif.RULES, an old one keeps its place."""
    published = ["new", "unchanged", "fixed", "regressed", "undecidable", "decided", "removed"]  # physverify 0.1
    assert [rule_id for rule_id, _ in sarif.RULES][:len(published)] == published
    assert all(sarif.RULE_INDEX[rule_id] == index for index, rule_id in enumerate(published))
