"""Tests for physverify.mms: manufactured solutions, the order studies and their budget."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from support import solvers

from physverify.checks import ERROR, FAIL, INCONCLUSIVE, PASS, Check, run_check
from physverify.errors import PhysverifyError
from physverify.mms import ManufacturedODE, mms_order_study, mms_trajectory_study
from physverify.order import SAME_AT_EVERY_RESOLUTION

OMEGA = 2.0
RHS = solvers.oscillator_rhs(OMEGA)


def driven_motion(t):  # noqa: ANN001, ANN201 - takes a complex t for the complex step
    """A manufactured (x, x') that is not a free oscillation, so the forcing depends on t."""
    x = np.sin(3.0 * t) * np.exp(-0.5 * t) + 0.2 * t
    v = np.exp(-0.5 * t) * (3.0 * np.cos(3.0 * t) - 0.5 * np.sin(3.0 * t)) + 0.2
    return np.array([x, v])


MMS = ManufacturedODE(driven_motion, RHS)
NS = (16, 32, 64, 128)


# --- ManufacturedODE ------------------------------------------------------------------------
def test_the_complex_step_derivative_matches_the_analytic_one_to_round_off() -> None:
    ode = ManufacturedODE(lambda t: np.array([np.exp(np.sin(t)), t**3]), RHS)
    t = 0.7
    assert ode.derivative(t) == pytest.approx([np.cos(t) * np.exp(np.sin(t)), 3 * t**2], rel=1e-15)


def test_a_given_derivative_is_used_instead_of_the_complex_step() -> None:
    ode = ManufacturedODE(lambda t: np.array([t, t]), RHS, du=lambda t: np.array([5.0, 7.0]))
    assert list(ode.derivative(0.3)) == [5.0, 7.0]


def test_the_forcing_makes_the_manufactured_solution_exact() -> None:
    t = 0.4
    assert MMS.forcing(t) == pytest.approx(MMS.derivative(t) - RHS(t, MMS.value(t)))
    assert abs(MMS.forcing(t)[0]) < 1e-15  # (x, x') needs no forcing on x


def test_the_forcing_of_an_exact_solution_is_zero() -> None:
    free = ManufacturedODE(lambda t: np.array([np.cos(2.0 * t), -2.0 * np.sin(2.0 * t)]), RHS)
    assert np.max(np.abs(free.forcing(1.3))) < 1e-14


def test_a_solution_written_with_math_functions_asks_for_numpy_or_du() -> None:
    import math

    ode = ManufacturedODE(lambda t: np.array([math.sin(t), 0.0]), RHS)
    with pytest.raises(PhysverifyError, match="np.sin, not math.sin"):
        ode.derivative(0.1)


# --- the order study on the test solvers --------------------------------------------------------
CORRECT = [
    ("forward Euler", solvers.forward_euler(RHS), 1),
    ("explicit midpoint", solvers.explicit_midpoint(RHS), 2),
    ("RK4", solvers.rk4(RHS), 4),
    ("velocity Verlet", solvers.velocity_verlet(solvers.oscillator_accel(OMEGA)), 2),
]


@pytest.mark.parametrize(("name", "integrate", "order"), CORRECT, ids=[c[0] for c in CORRECT])
def test_a_correct_solver_passes_at_its_order(name: str, integrate, order: int) -> None:  # noqa: ANN001
    result = mms_order_study(integrate, MMS, 2.0, NS, order)
    assert (result.status, result.message) == (PASS, f"observed order {result.fitted:.2f} (expected {order})")
    assert len(result.hs) == len(NS) and result.hs[0] == pytest.approx(2.0 / NS[0])


def test_forward_euler_that_never_advances_the_clock_fails_because_the_error_does_not_decrease() -> None:
    result = mms_order_study(solvers.forward_euler(RHS, defect=True), MMS, 2.0, (64, 128, 256, 512), 1)
    assert result.status == FAIL
    assert result.message.startswith("error does not decrease with resolution (about ")


@pytest.mark.parametrize(
    ("integrate", "order"),
    [
        (solvers.explicit_midpoint(RHS, defect=True), 2),
        (solvers.rk4(RHS, defect=True), 4),
        (solvers.velocity_verlet(solvers.oscillator_accel(OMEGA), defect=True), 2),
    ],
    ids=["midpoint with a full half step", "RK4 with k3 at t + h", "Verlet with the old acceleration"],
)
def test_a_seeded_defect_drops_the_order_to_one(integrate, order: int) -> None:  # noqa: ANN001
    result = mms_order_study(integrate, MMS, 2.0, (32, 64, 128, 256), order)
    assert result.status == FAIL and result.fitted == pytest.approx(1.0, abs=0.1)
    assert result.message.startswith(f"observed order {result.fitted:.2f} (expected {order}), below the accepted range")
    assert "a clean order 1" in result.message


def test_a_wrong_reference_gives_the_same_error_at_every_resolution() -> None:
    wrong = ManufacturedODE(driven_motion, solvers.oscillator_rhs(1.0))  # omega read as 1 instead of 2
    result = mms_order_study(solvers.rk4(RHS), wrong, 2.0, NS, 4)
    assert result.status == FAIL
    assert result.message.endswith(SAME_AT_EVERY_RESOLUTION)


def test_a_state_of_the_wrong_shape_is_an_adapter_error() -> None:
    with pytest.raises(PhysverifyError, match=r"shape \(3,\)"):
        mms_order_study(lambda s, y0, t, n: np.zeros(3), MMS, 1.0, NS, 2)


def test_step_counts_must_be_positive_integers() -> None:
    with pytest.raises(PhysverifyError, match="positive integers"):
        mms_order_study(solvers.rk4(RHS), MMS, 1.0, (8, 0, 16), 4)


# --- the trajectory study ----------------------------------------------------------------------
def test_the_trajectory_study_passes_a_correct_run() -> None:
    result = mms_trajectory_study(solvers.explicit_midpoint_run(RHS), MMS, 2.0, NS, 2)
    assert result.status == PASS


def test_an_output_off_by_one_is_seen_by_the_trajectory_study_but_not_at_the_end() -> None:
    run = solvers.explicit_midpoint_run(RHS, defect=True)

    def end_state(source, y0, t_end, n):  # noqa: ANN001, ANN202
        return run(source, y0, t_end, n)[1][-1]

    assert mms_order_study(end_state, MMS, 2.0, NS, 2).status == PASS
    result = mms_trajectory_study(run, MMS, 2.0, NS, 2)
    assert result.status == FAIL and result.fitted == pytest.approx(1.0, abs=0.1)


def test_a_run_with_fewer_states_than_times_is_an_adapter_error() -> None:
    with pytest.raises(PhysverifyError, match="3 times but 2 states"):
        mms_trajectory_study(lambda s, y0, t, n: ([0.0, 0.5, 1.0], [y0, y0]), MMS, 1.0, NS, 2)


# --- run_check: budget and exceptions ----------------------------------------------------------------
def slow(integrate, seconds_per_step: float):  # noqa: ANN001, ANN201
    """The same integrator, made to cost a known wall-clock time per step."""

    def run(source, y0, t_end, n):  # noqa: ANN001, ANN202
        time.sleep(seconds_per_step * n)
        return integrate(source, y0, t_end, n)

    return run


def test_budget_s_stops_a_slow_study_before_it_overruns_and_says_so() -> None:
    integrate = slow(solvers.rk4(RHS), 0.002)
    ns = (10, 20, 40, 80, 160)  # 0.02 + 0.04 + 0.08 + 0.16 s, then 0.32 s would overrun 0.5 s
    outcome = run_check(Check("mms", "slow RK4", lambda: mms_order_study(integrate, MMS, 2.0, ns, 4), budget_s=0.5))
    # 4 of 5 on an idle machine; a loaded one may stop one resolution earlier
    assert re.match(r"stopped after [34] of 5 resolutions to stay within the budget of 0\.[45]\d? s; observed order ",
                    outcome.message), outcome.message
    assert outcome.status == PASS and outcome.seconds < 1.0  # not the hard stop at twice the budget


def test_without_a_budget_every_resolution_runs() -> None:
    outcome = run_check(Check("mms", "RK4", lambda: mms_order_study(solvers.rk4(RHS), MMS, 2.0, NS, 4)))
    assert outcome.message.startswith("observed order") and len(outcome.result.hs) == len(NS)


def test_an_exception_in_the_solver_becomes_an_error_with_its_type_and_message() -> None:
    def broken(source, y0, t_end, n):  # noqa: ANN001, ANN202
        return y0 + t_end / (n - n)

    outcome = run_check(Check("mms", "broken", lambda: mms_order_study(broken, MMS, 1.0, NS, 2)))
    assert outcome.status == ERROR
    assert outcome.message.startswith("ZeroDivisionError: float division by zero")


def test_a_budget_too_small_for_two_resolutions_is_inconclusive_and_says_what_to_do() -> None:
    integrate = slow(solvers.rk4(RHS), 0.002)
    check = Check("mms", "slow RK4", lambda: mms_order_study(integrate, MMS, 2.0, (50, 100, 200), 4), budget_s=0.15)
    outcome = run_check(check)
    assert outcome.status == INCONCLUSIVE
    assert re.match(r"stopped after 1 of 3 resolutions to stay within the budget of 0\.1[45] s; one", outcome.message)
    assert "larger budget_s" in outcome.message
