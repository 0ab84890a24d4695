"""An adversarial audit of the deterministic studies' verdicts (FAIL becomes "confirmed", PASS "rejected").

Each case is a realistic code written from the physics, in a regime where a naive order check
decides wrongly; the expected verdict is stated from the physics before the study is run. The
cases that broke a study are regression tests of its fix; the ones that held stay as guards.
"""

from __future__ import annotations

import numpy as np
import pytest

from physverify import (
    EXACT,
    FAIL,
    INCONCLUSIVE,
    PASS,
    ManufacturedODE,
    check_order,
    convergence_study,
    from_step,
    mms_order_study,
    mms_trajectory_study,
    reference_study,
    refine,
    reversibility_study,
)
from physverify.errors import PhysverifyError
from physverify.mms import check_derivative

# --- a dissipative method that loses the solution at coarse steps ---------------------------------
# Backward Euler on the undamped oscillator x'' = -W**2 x damps each step by (1 + (W h)**2)**-1/2,
# so after n = T / h steps the amplitude is about exp(-W**2 T h / 2) (Hairer and Wanner, Solving
# ODEs II, sec. IV.3: the stability function 1 / (1 - z)). With W = 10, T = 10 the numerical
# solution is essentially zero for n = 100 ... 800: the error is the exact solution itself, the
# same at every level, from a correct first-order method. Expected: INCONCLUSIVE, never FAIL.
W = 10.0
T_END = 10.0
SYSTEM = np.array([[0.0, 1.0], [-W**2, 0.0]])
COARSE = [100, 200, 400, 800]


def _oscillator(t: float, y: np.ndarray) -> np.ndarray:
    return SYSTEM @ y


def _backward_euler(f, t: float, y: np.ndarray, h: float) -> np.ndarray:  # noqa: ANN001
    """One backward Euler step of the linear y' = SYSTEM y + s(t): (I - h SYSTEM) y_new = y + h s(t + h)."""
    source = f(t + h, np.zeros_like(y))  # f(t, 0) is the source alone for a linear right-hand side
    x, v = y + h * source
    return np.array([x + h * v, v - h * W**2 * x]) / (1.0 + (h * W) ** 2)  # (I - h SYSTEM)**-1 by hand


BACKWARD_EULER = from_step(_backward_euler, _oscillator)
FREE = ManufacturedODE(lambda t: np.array([np.cos(W * t), -W * np.sin(W * t)]), _oscillator)


def test_backward_euler_that_damps_the_solution_away_is_not_confirmed_defective_against_a_reference() -> None:
    result = reference_study(BACKWARD_EULER, _oscillator, [1.0, 0.0], T_END, COARSE, 1)
    assert result.status == INCONCLUSIVE, result.message
    assert "do not shrink" in result.message and "finer than h = 0.0125" in result.message


def test_backward_euler_that_damps_the_solution_away_is_not_confirmed_defective_by_mms() -> None:
    result = mms_order_study(BACKWARD_EULER, FREE, T_END, COARSE, 1)
    assert result.status == INCONCLUSIVE, result.message


@pytest.mark.slow  # about 100,000 steps through the adapter
def test_a_plan_refines_backward_euler_past_the_lost_levels_to_its_first_order() -> None:
    result = mms_order_study(BACKWARD_EULER, FREE, T_END, refine(100, max_n=100 * 2**9), 1)
    assert result.status == PASS and len(result.errors) > 5, result.message


def _lost_error(n: int) -> float:
    state = BACKWARD_EULER(lambda t: np.zeros(2), np.array([1.0, 0.0]), T_END, n)
    return float(np.max(np.abs(state - FREE.value(T_END))))


def test_errors_alone_as_large_as_the_solution_and_flat_are_not_a_defect() -> None:
    result = convergence_study(_lost_error, COARSE, 1, h=lambda n: T_END / n, scale=W)
    assert result.status == INCONCLUSIVE, result.message
    assert "as large as the solution itself" in result.message and "error_at may return" in result.message


def test_a_flat_error_smaller_than_half_the_solution_still_fails_from_errors_alone() -> None:
    # The spec's worked example (0.462 on a solution of size 1) keeps its FAIL.
    assert check_order([0.1, 0.05, 0.025, 0.0125], [0.4621, 0.4620, 0.4622, 0.4620], 2).status == FAIL


# First-order upwind advection of a narrow Gaussian pulse (width 0.02) over 10 periods at CFL 0.5:
# the modified equation carries a diffusion a dx (1 - nu) / 2 (LeVeque, Finite Volume Methods for
# Hyperbolic Problems, sec. 8.6), which smears the pulse to a fraction of its height until dx is far
# below width**2 / t. The max error is then most of the pulse, about the same at nx = 64 ... 512.
def _upwind_pulse(nx: int) -> tuple[np.ndarray, np.ndarray]:
    x = (np.arange(nx) + 0.5) / nx
    u = np.exp(-(((x - 0.5) / 0.02) ** 2))
    exact = u.copy()  # ten whole periods later the exact pulse is back where it started
    for _ in range(20 * nx):
        u = u - 0.5 * (u - np.roll(u, 1))
    return u, exact


def _upwind_error(nx: int) -> float:
    u, exact = _upwind_pulse(nx)
    return float(np.max(np.abs(u - exact)))


def _upwind_error_and_solution(nx: int) -> tuple[float, np.ndarray]:
    u, exact = _upwind_pulse(nx)
    return float(np.max(np.abs(u - exact))), u.reshape(64, nx // 64).mean(axis=1)  # on the coarsest cells


def test_upwind_smearing_a_pulse_away_is_not_confirmed_defective() -> None:
    for error_at in (_upwind_error, _upwind_error_and_solution):
        result = convergence_study(error_at, [64, 128, 256, 512], 1, refines="space")
        assert result.status == INCONCLUSIVE, result.message


def test_a_tuple_from_error_at_lets_convergence_study_see_a_code_that_converges_elsewhere() -> None:
    # The trapezoidal rule of exp on [0, 1] against a wrong exact value (e instead of e - 1): the
    # error is flat and as large as the value, the solutions converge at order 2: a FAIL.
    def error_at(n: int) -> tuple[float, np.ndarray]:
        x = np.linspace(0.0, 1.0, n + 1)
        value = float(np.sum((np.exp(x[1:]) + np.exp(x[:-1])) / 2) / n)
        return abs(value - np.e), np.array([value])

    result = convergence_study(error_at, [8, 16, 32, 64], 2, scale=1.0)
    assert result.status == FAIL, result.message


def test_a_round_trip_of_backward_euler_that_loses_the_state_is_not_confirmed_defective() -> None:
    forward = lambda y, t, h: np.linalg.solve(np.eye(2) - h * SYSTEM, y)  # noqa: E731
    backward = lambda y, t, h: np.linalg.solve(np.eye(2) + h * SYSTEM, y)  # noqa: E731
    result = reversibility_study(forward, backward, [1.0, 0.0], T_END, COARSE, 1)
    assert result.status == INCONCLUSIVE, result.message


# --- a manufactured solution whose forcing is for another function (a wrong reference) -----------
# RK4 on the decay law y' = -y with the forcing of u(t) = 2 + sin 3t (Roache, Verification and
# Validation, ch. 3). A correct code converges to whatever function the forcing makes exact; when
# the forcing's derivative is not u', that function is not u, the error levels off, and the claim
# would be confirmed against a correct RK4. Expected: an error naming the reference (not decidable).
def _rk4(f, t: float, y: np.ndarray, h: float) -> np.ndarray:  # noqa: ANN001
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _decay(t: float, y: np.ndarray) -> np.ndarray:
    return -y


RK4_DECAY = from_step(_rk4, _decay)


@pytest.mark.parametrize("mms, what", [
    (ManufacturedODE(lambda t: np.array([2.0 + np.sin(3 * t)]), _decay, du=lambda t: np.array([np.cos(3 * t)])),
     "du gives"),  # the chain rule's factor 3 forgotten
    (ManufacturedODE(lambda t: np.array([2.0 + np.abs(np.sin(3 * t))]), _decay),
     "the complex-step derivative of u gives 0"),  # abs is not analytic: the complex step sees no slope
    (ManufacturedODE(lambda t: np.array([2.0 + np.real(np.exp(3j * t))]), _decay),
     "the complex-step derivative of u gives 0"),  # np.real drops the imaginary part the step needs
])
def test_a_forcing_for_another_function_is_a_wrong_reference_not_a_confirmed_defect(mms: ManufacturedODE,
                                                                                    what: str) -> None:
    with pytest.raises(PhysverifyError, match="the manufactured solution's derivative is wrong") as raised:
        mms_order_study(RK4_DECAY, mms, 2.0, [8, 16, 32, 64], 4)
    assert what in str(raised.value)
    run = lambda t_end: (lambda source, y0, t, n: ([t], [RK4_DECAY(source, y0, t, n)]))  # noqa: E731
    with pytest.raises(PhysverifyError, match="derivative is wrong"):
        mms_trajectory_study(run(2.0), mms, 2.0, [8, 16, 32, 64], 4)


def test_a_right_derivative_passes_the_derivative_check_even_for_a_fast_solution() -> None:
    fast = ManufacturedODE(lambda t: np.array([2.0 + np.sin(300 * t)]), _decay,
                           du=lambda t: np.array([300 * np.cos(300 * t)]))
    check_derivative(fast, 1.0)  # (300 * 1e-3)**2 / 6 is the difference quotient's own error: allowed
    result = mms_order_study(RK4_DECAY, ManufacturedODE(lambda t: np.array([2.0 + np.sin(3 * t)]), _decay), 2.0,
                             [8, 16, 32, 64], 4)
    assert result.status == PASS


# --- a single-precision code ----------------------------------------------------------------------
# RK4 computing in float32: its error levels off near eps32 |u| ~ 1e-7 by n = 32 (the truncation
# error C h**4 is below it from there on). Judged against float64's floor of 1e-12 the plateau read
# as "the error stops decreasing: add resolutions finer than h", advice that only adds round-off.
# Expected: INCONCLUSIVE naming single precision and coarser steps, never a FAIL, never EXACT.
def _rk4_float32(f, t: float, y: np.ndarray, h: float) -> np.ndarray:  # noqa: ANN001
    y, step = np.asarray(y, dtype=np.float32), np.float32(h)

    def slope(s: float, z: np.ndarray) -> np.ndarray:
        return np.asarray(f(s, z), dtype=np.float32)

    k1 = slope(t, y)
    k2 = slope(t + h / 2, y + step / 2 * k1)
    k3 = slope(t + h / 2, y + step / 2 * k2)
    k4 = slope(t + h, y + step * k3)
    return (y + step / np.float32(6) * (k1 + 2 * k2 + 2 * k3 + k4)).astype(np.float32)


RK4_FLOAT32 = from_step(_rk4_float32, _decay)
WAVY = ManufacturedODE(lambda t: np.array([2.0 + np.sin(3 * t)]), _decay)


@pytest.mark.parametrize("ns", [[16, 32, 64, 128, 256, 512], [64, 128, 256, 512, 1024, 2048]])
def test_a_float32_code_at_its_round_off_is_neither_exact_nor_told_to_refine(ns: list[int]) -> None:
    result = mms_order_study(RK4_FLOAT32, WAVY, 2.0, ns, 4)
    assert result.status == INCONCLUSIVE, result.message
    assert "single (float32) precision" in result.message and "use coarser steps" in result.message
    assert "finer than" not in result.message


def test_a_plan_on_a_float32_code_stops_at_its_round_off() -> None:
    result = mms_order_study(RK4_FLOAT32, WAVY, 2.0, refine(8, max_n=4096), 4)
    assert result.status == INCONCLUSIVE and "reached the noise floor" in result.message
    assert len(result.errors) <= 4, result.errors


@pytest.mark.slow  # 30,000 steps through the adapter
def test_a_float32_code_measured_coarse_enough_still_passes_its_order() -> None:
    # Euler in float32 at n = 2000 ... 32000: errors 1e-3 ... 7.5e-5, far above its round-off.
    def euler(f, t: float, y: np.ndarray, h: float) -> np.ndarray:  # noqa: ANN001
        y = np.asarray(y, dtype=np.float32)
        return (y + np.float32(h) * np.asarray(f(t, y), dtype=np.float32)).astype(np.float32)

    result = mms_order_study(from_step(euler, _decay), WAVY, 2.0, [2000, 4000, 8000, 16000], 1)
    assert result.status == PASS, result.message
