"""Rules 0-6 of spec section 2, table-driven: every row and every note."""

from __future__ import annotations

from typing import Any

import pytest

from physverify.checks import CheckOutcome
from physverify.verdict import (
    CONFIRMED,
    EXIT_ERROR,
    EXIT_FINDING,
    EXIT_OK,
    NOT_DECIDABLE,
    REJECTED,
    Run,
    decide,
    decide_fixed,
    evidence,
)


def o(status: str, label: str = "c") -> dict[str, Any]:
    return {"label": label, "family": "mms", "status": status, "message": "", "seconds": 0.0}


ROWS = [
    # (name, kwargs, verdict, exit code, words the reason must contain)
    ("rule 0: load error", dict(load_error="x.py: CLAIM is missing the key 'impact'"), NOT_DECIDABLE, EXIT_ERROR,
     "CLAIM is missing the key 'impact'"),
    ("rule 1: dependent reference", dict(dependent_notes=["reference_rhs() calls solver.rhs"], control=o("FAIL")),
     NOT_DECIDABLE, EXIT_ERROR, "the reference is not independent: reference_rhs() calls solver.rhs"),
    ("rule 2: timeout", dict(timed_out=True, timeout_s=5.0, control=o("FAIL"), checks=[o("FAIL")]), NOT_DECIDABLE,
     EXIT_ERROR, "timed out after 5 s"),
    ("rule 3: control fails", dict(control=o("FAIL", "ctl"), checks=[o("FAIL")]), NOT_DECIDABLE, EXIT_ERROR,
     "the control 'ctl' is FAIL, not PASS, so the test itself is not trusted"),
    ("rule 3: control errors", dict(control=o("ERROR", "ctl"), checks=[o("PASS")]), NOT_DECIDABLE, EXIT_ERROR,
     "the control 'ctl' is ERROR, not PASS"),
    ("rule 3: control inconclusive", dict(control=o("INCONCLUSIVE", "ctl"), checks=[o("PASS")]), NOT_DECIDABLE,
     EXIT_ERROR, "is INCONCLUSIVE, not PASS"),
    ("rule 4: a check fails", dict(control=o("PASS"), checks=[o("FAIL", "order")]), CONFIRMED, EXIT_FINDING,
     "the control passed and 1 of 1 check failed: 'order' (FAIL)"),
    ("rule 4: FAIL outranks ERROR", dict(control=o("PASS"), checks=[o("ERROR", "e"), o("FAIL", "f")]), CONFIRMED,
     EXIT_FINDING, "1 of 2 checks failed: 'f' (FAIL)"),
    ("rule 4: FAIL outranks INCONCLUSIVE", dict(control=o("EXACT"), checks=[o("INCONCLUSIVE"), o("FAIL", "f")]),
     CONFIRMED, EXIT_FINDING, "'f' (FAIL)"),
    ("rule 5: ERROR never confirms", dict(control=o("PASS"), checks=[o("PASS"), o("ERROR", "crash")]),
     NOT_DECIDABLE, EXIT_ERROR, "an ERROR is not counted as confirmation"),
    ("rule 5: INCONCLUSIVE", dict(control=o("PASS"), checks=[o("INCONCLUSIVE", "slow")]), NOT_DECIDABLE, EXIT_ERROR,
     "'slow' (INCONCLUSIVE) did not give a PASS"),
    ("rule 5: SKIP", dict(control=o("PASS"), checks=[o("SKIP", "gpu")]), NOT_DECIDABLE, EXIT_ERROR, "'gpu' (SKIP)"),
    ("rule 6: all pass", dict(control=o("PASS"), checks=[o("PASS")]), REJECTED, EXIT_OK,
     "the control passed and the check passed"),
    ("rule 6: EXACT control and checks", dict(control=o("EXACT"), checks=[o("EXACT"), o("PASS")]), REJECTED, EXIT_OK,
     "all 2 checks passed"),
]


@pytest.mark.parametrize(("name", "kwargs", "verdict", "code", "words"), ROWS, ids=[r[0] for r in ROWS])
def test_each_rule_gives_its_verdict_exit_code_and_reason(
    name: str, kwargs: dict[str, Any], verdict: str, code: int, words: str
) -> None:
    result = decide(**kwargs)
    assert (result.verdict, result.exit_code) == (verdict, code)
    assert words in result.reason


def test_rules_apply_in_order_load_error_before_everything() -> None:
    result = decide(load_error="broken", dependent_notes=["n"], timed_out=True, control=o("PASS"), checks=[o("FAIL")])
    assert result.reason == "broken"


def test_the_error_reason_names_each_undecided_check_and_its_status() -> None:
    result = decide(control=o("PASS"), checks=[o("SKIP", "a"), o("INCONCLUSIVE", "b"), o("PASS", "c")])
    assert "'a' (SKIP), 'b' (INCONCLUSIVE)" in result.reason and "'c'" not in result.reason


def test_check_outcomes_and_their_ledger_dicts_decide_alike() -> None:
    as_objects = decide(
        control=CheckOutcome("ctl", "mms", "PASS", "", 0.1), checks=[CheckOutcome("x", "mms", "FAIL", "", 0.1)]
    )
    as_dicts = decide(control=o("PASS", "ctl"), checks=[o("FAIL", "x")])
    assert as_objects == as_dicts


def test_no_checks_at_all_is_not_decidable() -> None:
    assert decide(control=o("PASS"), checks=[]).verdict == NOT_DECIDABLE


# --- claims that name their fix (issue 17): the table after rule 3 -------------------------
def run(*statuses: str, control: str = "PASS") -> Run:
    return Run(o(control, "ctl"), [o(status, f"c{i}") for i, status in enumerate(statuses)])


FIXED_ROWS = [
    # (held, code's checks, variant's checks, verdict, words)
    ("defect", ("FAIL",), ("PASS",), CONFIRMED, "the checks fail, and the claimed fix makes them pass"),
    ("defect", ("FAIL", "INCONCLUSIVE"), ("PASS", "EXACT"), CONFIRMED, "'c0' (FAIL) on the code"),
    ("defect", ("PASS",), ("FAIL",), REJECTED, "the checks pass, and the suggested change breaks them"),
    ("fix", ("EXACT",), ("FAIL",), REJECTED, "the checks pass, and fail with the claimed defect put back"),
    ("defect", ("PASS",), ("PASS",), NOT_DECIDABLE, "the checks cannot tell the code from the variant"),
    ("fix", ("PASS", "EXACT"), ("EXACT", "PASS"), NOT_DECIDABLE, "so they cannot see the claimed defect"),
    ("defect", ("FAIL",), ("FAIL",), NOT_DECIDABLE, "the checks fail with and without the change"),
    ("fix", ("FAIL", "PASS"), ("PASS", "FAIL"), NOT_DECIDABLE, "a wrong expected order, another defect"),
    ("fix", ("FAIL",), ("PASS",), NOT_DECIDABLE, "defect and fix look swapped"),
    ("defect", ("PASS", "INCONCLUSIVE"), ("FAIL",), NOT_DECIDABLE,
     "no check failed on the code, but 'c1' (INCONCLUSIVE) did not give a PASS on the code"),
    ("defect", ("FAIL",), ("PASS", "ERROR"), NOT_DECIDABLE,
     "no check failed with the fix, but 'c1' (ERROR) did not give a PASS with the fix; an ERROR is not counted"),
    ("fix", ("PASS",), ("SKIP",), NOT_DECIDABLE, "'c0' (SKIP) did not give a PASS with the defect put back"),
]


@pytest.mark.parametrize(("held", "code", "other", "verdict", "words"), FIXED_ROWS)
def test_the_fixed_table_gives_each_row(held: str, code: tuple[str, ...], other: tuple[str, ...], verdict: str,
                                        words: str) -> None:
    got = decide_fixed(held=held, code=run(*code), variant=run(*other))
    assert got.verdict == verdict and words in got.reason, got.reason


def test_rules_0_to_3_of_either_run_come_first() -> None:
    assert "is FAIL, not PASS" in decide_fixed(held="defect", code=run("FAIL", control="FAIL"), variant=None).reason
    got = decide_fixed(held="defect", code=run("FAIL"), variant=run("PASS", control="INCONCLUSIVE"))
    assert got.verdict == NOT_DECIDABLE and "'ctl' is INCONCLUSIVE in the run with the fix, not PASS" in got.reason
    got = decide_fixed(held="fix", code=run("PASS"), variant=Run(None, [], timed_out=True), timeout_s=9.0)
    assert got.reason == "timed out after 9 s in the run with the defect put back"
    got = decide_fixed(held="defect", code=run("FAIL"), variant=Run(None, [], load_error="c.py: importing it raised X"))
    assert got.reason == "c.py: importing it raised X (in the run with the fix)"
    got = decide_fixed(held="defect", code=run("FAIL"), variant=run("PASS"), served=False, file="s.py")
    assert got.verdict == NOT_DECIDABLE and got.reason.startswith("the claim never imported s.py")


def test_the_evidence_of_a_fixed_claim_is_the_decisive_pair() -> None:
    record = {"control": o("PASS"), "checks": [o("PASS", "a"), o("FAIL", "b") | {"message": "order 1"}],
              "variant": {"held": "defect", "line": 3, "control": o("PASS"), "checks": [o("PASS", "a"), o("PASS", "b")]}}
    assert evidence(record) == "check FAIL on the code, PASS with the fix: b: order 1"
    record["variant"]["checks"][1] = o("FAIL", "b") | {"message": "order 0"}
    assert evidence(record) == "check FAIL on the code, FAIL with the fix: b: order 1"
    broken = {"control": o("PASS"), "checks": [o("PASS", "a")],
              "variant": {"held": "fix", "control": o("PASS"), "checks": [o("FAIL", "a") | {"message": "off"}]}}
    assert evidence(broken) == "check PASS on the code, FAIL with the defect put back: a: off"
    exact = {"control": o("PASS"), "checks": [o("FAIL", "a"), o("FAIL", "b")],
             "variant": {"held": "defect", "control": o("PASS"), "checks": [o("FAIL", "a"), o("EXACT", "b")]}}
    assert evidence(exact) == "check FAIL on the code, EXACT with the fix: b"  # EXACT is a pass
    assert evidence({"control": o("PASS"), "checks": [o("FAIL", "x")]}) == "check FAIL x"  # no variant: as before
