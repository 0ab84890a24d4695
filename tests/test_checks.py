"""run_check: every outcome of a check becomes a status; the budget is honoured."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
import pytest

from physverify import (
    ERROR,
    EXACT,
    FAIL,
    INCONCLUSIVE,
    PASS,
    SKIP,
    Check,
    OrderResult,
    Result,
    SkipCheck,
    requires,
    run_check,
)
from physverify.checks import remaining_budget


def solver_with_a_division_by_zero() -> Result:
    dt = 0.0
    return Result(PASS, str(1.0 / dt))


def test_an_exception_in_the_code_under_test_becomes_error_with_type_message_and_place() -> None:
    outcome = run_check(Check("mms", "divides", solver_with_a_division_by_zero))
    assert outcome.status == ERROR
    assert outcome.message.startswith("ZeroDivisionError: float division by zero (at test_checks.py:")
    assert "in solver_with_a_division_by_zero" in outcome.message


def test_skipcheck_and_a_missing_module_become_skip() -> None:
    def needs_gpu() -> Result:
        raise SkipCheck("no GPU on this machine")

    def needs_module() -> Result:
        requires("numpy", "a_module_that_is_not_installed")
        return Result(PASS)

    assert run_check(Check("x", "gpu", needs_gpu)).message == "no GPU on this machine"
    outcome = run_check(Check("x", "module", needs_module))
    assert (outcome.status, outcome.message) == (SKIP, "needs a_module_that_is_not_installed, which is not installed")


def test_a_check_that_returns_something_else_is_an_error_of_the_check() -> None:
    outcome = run_check(Check("x", "returns a float", lambda: 0.5))  # type: ignore[arg-type, return-value]
    assert outcome.status == ERROR and "returned float, not a physverify Result" in outcome.message


def test_a_check_still_running_well_past_its_budget_is_inconclusive_and_the_next_check_runs() -> None:
    def spins() -> Result:
        while True:
            time.sleep(0.01)

    started = time.monotonic()
    slow = run_check(Check("x", "never ends", spins, budget_s=0.2))
    assert slow.status == INCONCLUSIVE and "budget of 0.2 s" in slow.message
    assert time.monotonic() - started < 5
    assert run_check(Check("x", "next", lambda: Result(PASS, "ran"))).status == PASS


def test_a_broad_except_in_the_code_under_test_cannot_swallow_the_budget_stop() -> None:
    def stubborn() -> Result:
        while True:
            try:
                time.sleep(0.01)
            except Exception:
                pass

    assert run_check(Check("x", "stubborn", stubborn, budget_s=0.1)).status == INCONCLUSIVE


def test_remaining_budget_is_visible_inside_the_check_and_gone_after() -> None:
    seen: list[float | None] = []

    def look() -> Result:
        seen.append(remaining_budget())
        return Result(PASS)

    run_check(Check("x", "look", look, budget_s=10))
    assert seen[0] is not None and 9 < seen[0] <= 10
    assert remaining_budget() is None


@pytest.mark.parametrize("budget", [0, -1, float("nan"), float("inf")])
def test_a_nonsense_budget_is_refused(budget: float) -> None:
    with pytest.raises(ValueError, match="budget_s must be a positive number"):
        run_check(Check("x", "b", lambda: Result(PASS), budget_s=budget))


def test_results_know_whether_they_pass_and_refuse_unknown_statuses() -> None:
    assert Result(PASS).ok and Result(EXACT).ok and not Result(FAIL).ok
    assert OrderResult(PASS, "m", expected=2, fitted=2.01, hs=(0.1, 0.05), errors=(1e-2, 2.5e-3)).ok
    with pytest.raises(ValueError, match="unknown status"):
        Result("MAYBE")


def test_the_ledger_form_has_exactly_the_spec_fields() -> None:
    outcome = run_check(Check("mms", "label", lambda: Result(PASS, "observed order 2.00 (expected 2)")))
    assert set(outcome.to_dict()) == {"label", "family", "status", "message", "seconds"}


def test_a_result_with_numbers_keeps_them_under_one_data_key() -> None:
    """Issue 12: the ledger entry of an OrderResult carries its numbers, so a report can be drawn from it."""
    result = OrderResult(FAIL, "m", expected=2, fitted=1.01, hs=(0.1, 0.05), errors=(1e-2, float("inf")),
                         floor=1e-12, fit_hs=(0.1, 0.05))
    entry = run_check(Check("mms", "label", lambda: result)).to_dict()
    assert set(entry) == {"label", "family", "status", "message", "seconds", "data"}
    assert entry["data"] == {"expected": 2, "fitted": 1.01, "hs": [0.1, 0.05], "errors": [1e-2, None],
                             "floor": 1e-12, "fit_hs": [0.1, 0.05]}
    assert json.loads(json.dumps(entry, allow_nan=False)) == entry


def test_numpy_numbers_become_plain_lists_and_other_fields_are_left_out() -> None:
    @dataclass(frozen=True)
    class Custom(Result):
        ts: object = None
        peak: object = None
        handle: object = None

    outcome = run_check(Check("drift", "d", lambda: Custom(PASS, "", np.array([1.0, 2.0]), np.float64(3.5), object())))
    assert outcome.to_dict()["data"] == {"ts": [1.0, 2.0], "peak": 3.5}


def test_the_run_s_deadline_is_read_from_the_environment_the_parent_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35: a refinement plan stops before the run's --timeout; the child learns the deadline from its parent."""
    import time

    from physverify.checks import RUN_DEADLINE_ENV, run_time_left

    monkeypatch.delenv(RUN_DEADLINE_ENV, raising=False)
    assert run_time_left() is None
    monkeypatch.setenv(RUN_DEADLINE_ENV, repr(time.time() + 100.0))
    left = run_time_left()
    assert left is not None and 90.0 < left <= 100.0
    for garbage in ("soon", "nan", "inf"):
        monkeypatch.setenv(RUN_DEADLINE_ENV, garbage)
        assert run_time_left() is None
