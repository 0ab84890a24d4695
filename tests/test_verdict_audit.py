"""An adversarial audit of the deterministic studies' verdicts (FAIL becomes "confirmed", PASS "rejected").

Each case is a realistic code written from the physics, in a regime where a naive order check
decides wrongly; the expected verdict is stated from the physics before the study is run. The
cases that broke a study are regression tests of its fix; the ones that held stay as guards.
"""

from __future__ import annotations

from collections.abc import Callable

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
    drift_study,
    from_step,
    identity_check,
    invariant_study,
    mms_order_study,
    mms_trajectory_study,
    operator_study,
    reference_study,
    refine,
    refinement_path,
    reversibility_study,
    self_convergence_study,
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


@pytest.mark.slow  # a DOP853 reference over 16 periods
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


def test_a_flat_error_smaller_than_half_the_solution_still_fails_from_errors_alone() -> None:
    # The spec's worked example (0.462 on a solution of size 1) keeps its FAIL in a study, and
    # check_order called directly keeps the FAIL of a flat error at any size (claims written for
    # it, such as claims/oscillator_damping_order.py with 1.87 at the default scale, rely on it).
    hs = [0.1, 0.05, 0.025, 0.0125]
    assert check_order(hs, [0.4621, 0.4620, 0.4622, 0.4620], 2).status == FAIL
    assert convergence_study(dict(zip([10, 20, 40, 80], [0.4621, 0.4620, 0.4622, 0.4620])).__getitem__,
                             [10, 20, 40, 80], 2).status == FAIL
    assert check_order(hs, [1.871, 1.870, 1.872, 1.870], 2).status == FAIL


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


@pytest.mark.slow  # about 20,000 upwind steps per case
def test_upwind_smearing_a_pulse_away_is_not_confirmed_defective() -> None:
    result = convergence_study(_upwind_error_and_solution, [64, 128, 256, 512], 1, refines="space")
    assert result.status == INCONCLUSIVE, result.message
    # From errors alone it stays check_order's FAIL: claims written for it rely on that (a limit).
    assert convergence_study(_upwind_error, [64, 128, 256, 512], 1, refines="space").status == FAIL


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


def test_a_float32_code_at_its_round_off_is_neither_exact_nor_told_to_refine() -> None:
    result = mms_order_study(RK4_FLOAT32, WAVY, 2.0, [16, 32, 64, 128, 256, 512], 4)
    assert result.status == INCONCLUSIVE, result.message
    assert "single (float32) precision" in result.message and "use coarser steps" in result.message
    assert "finer than" not in result.message


@pytest.mark.slow
def test_a_float32_code_flat_at_its_round_off_from_the_coarsest_level_is_exact_up_to_its_precision() -> None:
    # Issue 35: from n = 64 on every error is float32 round-off that does not fall with n, as a free
    # particle's is; within n eps |u| at every level that is exactness at this precision, never "refine".
    result = mms_order_study(RK4_FLOAT32, WAVY, 2.0, [64, 128, 256, 512, 1024, 2048], 4)
    assert result.status == EXACT, result.message
    assert "exact up to the code's precision" in result.message and "finer than" not in result.message


# A free particle in float32: velocity Verlet reproduces straight-line motion, but h = 1.5 / 50 is not a
# float32 number, so the end state is a few units in the last place off at every n (6 at n = 50, 27 at
# n = 400), no smaller at finer steps. Expected: EXACT up to float32, not "use coarser steps".
def _verlet_free_float32(source, y0, t_end: float, n: int, cast: bool = False) -> np.ndarray:  # noqa: ANN001
    x, v, h = np.float32(y0[0]), np.float32(y0[1]), np.float32(t_end / n)
    a = np.float32(source(0.0)[1])
    for i in range(n):
        x = x + h * v + np.float32(0.5) * h * h * a
        a_new = np.float32(source((i + 1) * t_end / n)[1])
        v = v + np.float32(0.5) * h * (a + a_new)
        a = a_new
    end = np.array([x, v], dtype=np.float32)
    return end.astype(np.float64) if cast else end


FREE_PARTICLE = ManufacturedODE(lambda t: np.array([0.25 + 0.5 * t, 0.5 + 0.0 * t]), lambda t, y: np.array([y[1], 0.0 * y[0]]))


@pytest.mark.parametrize("ns", [(50, 100, 200, 400), refine(50, max_n=6400)], ids=["fixed", "plan"])
@pytest.mark.parametrize("cast", [False, True], ids=["float32-out", "cast-to-float64"])
def test_a_float32_free_particle_a_few_units_off_is_exact_up_to_its_precision(ns: object, cast: bool) -> None:
    kwargs = {"precision": np.float32} if cast else {}
    result = mms_order_study(lambda s, y0, t, n: _verlet_free_float32(s, y0, t, n, cast), FREE_PARTICLE, 1.5, ns, 2, **kwargs)
    assert result.status == EXACT, result.message
    assert result.errors[0] > 2 * float(np.finfo(np.float32).eps)  # more than the two units the old rule allowed
    assert "exact up to the code's precision" in result.message and "coarser" not in result.message


def test_float32_errors_that_fall_under_round_off_are_not_exact() -> None:
    # The truncation error is largest at the coarsest level and falls: hidden under n eps at every level
    # it is still a truncation error, of a correct or a defective method alike.
    ns = [64, 128, 256, 512]
    errors = [1.0e-6, 3e-7, 4e-7, 5e-7]  # below the floor (10 eps), the coarsest 8 units and above every finer one
    table = {n: (e, np.ones(2, dtype=np.float32)) for n, e in zip(ns, errors)}
    result = convergence_study(lambda n: table[n], ns, 2, h=lambda n: 1.0 / n)
    assert result.status == INCONCLUSIVE and "hides the truncation error" in result.message, result.message


def test_a_float32_patch_test_is_exact_up_to_its_precision_and_a_wrong_stage_still_fails() -> None:
    from physverify import patch_study

    def rk4(stage_time: float) -> Callable[..., np.ndarray]:
        def integrate(source, y0, t_end: float, n: int) -> np.ndarray:  # noqa: ANN001
            y, h = np.asarray(y0, dtype=np.float32), np.float32(t_end / n)
            f = lambda t, z: (np.array([z[1], -z[0]]) + source(t)).astype(np.float32)  # noqa: E731
            for i in range(n):
                t = i * t_end / n
                k1 = f(t, y)
                k2 = f(t + stage_time * float(h), y + h / 2 * k1)
                k3 = f(t + float(h) / 2, y + h / 2 * k2)
                k4 = f(t + float(h), y + h * k3)
                y = (y + h / np.float32(6) * (k1 + 2 * k2 + 2 * k3 + k4)).astype(np.float32)
            return y
        return integrate

    rhs = lambda t, y: np.array([y[1], -y[0]])  # noqa: E731  x'' = -x
    right = patch_study(rk4(0.5), rhs, [0.3, 0.7], [0.7, -0.2], 1.7)
    assert right.status == EXACT and "machine epsilon 1.19e-07" in right.message, right.message
    wrong = patch_study(rk4(0.0), rhs, [0.3, 0.7], [0.7, -0.2], 1.7)  # the second stage at the step's start
    assert wrong.status == FAIL, wrong.message


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


# --- long runs: a drift hidden under a bounded oscillation -----------------------------------------
# RK4 is not symplectic: on the Kepler problem its energy error drifts secularly, but at a small
# step the drift per orbit is far below the per-orbit oscillation near pericentre (Hairer, Lubich and
# Wanner, Geometric Numerical Integration, sec. I.2 and IX.8). Over T = 5 ... 20 the largest
# deviation is B + eps T with eps T ~ B / 6: its exponent 0.13 looked "bounded", a false PASS of
# "bounded" and a false FAIL of "linear". Expected: INCONCLUSIVE (add longer end times) for both.
ECC = 0.6
Q0, P0 = np.array([1 - ECC, 0.0]), np.array([0.0, np.sqrt((1 + ECC) / (1 - ECC))])


def _kepler_energy(q: np.ndarray, p: np.ndarray) -> float:
    return 0.5 * float(p @ p) - 1.0 / float(np.linalg.norm(q))


def _kepler_deviation(method: str, h: float) -> Callable[[float], float]:
    def field(y: np.ndarray) -> np.ndarray:
        return np.concatenate([y[2:], -y[:2] / np.linalg.norm(y[:2]) ** 3])

    def deviation_at(t_end: float) -> float:
        y, start, worst = np.concatenate([Q0, P0]), _kepler_energy(Q0, P0), 0.0
        for _ in range(int(round(t_end / h))):
            if method == "verlet":  # Stormer-Verlet, kick-drift-kick (symplectic)
                y[2:] += h / 2 * field(y)[2:]
                y[:2] += h * y[2:]
                y[2:] += h / 2 * field(y)[2:]
            else:
                y = _rk4(lambda t, z: field(z), 0.0, y, h)
            worst = max(worst, abs(_kepler_energy(y[:2], y[2:]) - start))
        return worst

    return deviation_at


@pytest.mark.slow  # 17,500 RK4 steps of the Kepler problem per case
@pytest.mark.parametrize("expect", ["bounded", "linear"])
def test_a_drift_under_a_larger_bounded_oscillation_is_not_decided_from_short_runs(expect: str) -> None:
    result = drift_study(_kepler_deviation("rk4", 0.002), [5.0, 10.0, 20.0], expect=expect)
    assert result.status == INCONCLUSIVE and "rises in proportion to T" in result.message, result.message


@pytest.mark.slow  # about 10,000 steps of the Kepler problem
def test_stormer_verlet_keeps_the_kepler_energy_bounded_and_rk4_at_a_large_step_drifts() -> None:
    t_ends = [25.0, 50.0, 100.0]
    assert drift_study(_kepler_deviation("verlet", 0.02), t_ends).status == PASS
    assert drift_study(_kepler_deviation("rk4", 0.1), t_ends).status == FAIL
    assert drift_study(_kepler_deviation("rk4", 0.1), t_ends, expect="linear").status == PASS


# --- refinement paths that do not refine -----------------------------------------------------------
def test_a_refinement_path_whose_rounding_repeats_a_step_count_is_refused() -> None:
    # nt = round(1 * (nx / 8)**(1/2)): 1, 1, 2, 2, 2 for nx = 8, 12, 18, 27, 40.
    with pytest.raises(PhysverifyError, match=r"nx = 8 and 12 get the same number of steps"):
        refinement_path([8, 12, 18, 27, 40], space_order=1, time_order=2, nt0=1)


# --- cases that held: the studies' verdicts agree with the physics --------------------------------
def _minmod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


def _muscl_error(nx: int) -> np.ndarray:
    """MUSCL with minmod slopes for u_t + u_x = 0, periodic, CFL 0.4 (LeVeque, Finite Volume Methods,
    sec. 6.9-6.12): the cell averages of sin(2 pi x) after one period, minus the exact ones."""
    dx = 1.0 / nx
    x = (np.arange(nx) + 0.5) * dx
    exact = np.sin(2 * np.pi * x) * np.sinc(dx)  # cell averages: sin(pi dx) / (pi dx) times the centre value
    u, steps = exact.copy(), int(round(1.0 / (0.4 * dx)))
    c = 1.0 / steps / dx
    for _ in range(steps):
        face = u + 0.5 * (1 - c) * _minmod(u - np.roll(u, 1), np.roll(u, -1) - u)
        u = u - c * (face - np.roll(face, 1))
    return u - exact


def test_a_tvd_limiter_is_second_order_in_l1_and_not_in_the_max_norm() -> None:
    # Osher, SIAM J. Numer. Anal. 21 (1984) 217: a TVD scheme is at most first order at smooth
    # extrema, where the limiter clips the slope. L1: PASS at 2. Max norm: a settled 1.2-1.3 is the
    # scheme's real order there, so a claim of second order in the max norm is rightly a FAIL.
    ns = [32, 64, 128, 256, 512]
    l1 = convergence_study(lambda n: float(np.mean(np.abs(_muscl_error(n)))), ns, 2, refines="space")
    assert l1.status == PASS, l1.message
    linf = convergence_study(lambda n: float(np.max(np.abs(_muscl_error(n)))), ns, 2, refines="space")
    assert linf.status == FAIL and linf.fitted < 1.5, linf.message


def _upwind_square_wave_l1(nx: int) -> float:
    """First-order upwind, CFL 0.5, a square wave moved by 0.25: L1 error ~ dx**(1/2) at a jump
    (LeVeque, Finite Volume Methods, sec. 8.7, the smearing over sqrt(dx t))."""
    dx = 1.0 / nx
    x = (np.arange(nx) + 0.5) * dx
    wave = lambda s: (((s % 1.0) > 0.25) & ((s % 1.0) < 0.5)).astype(float)  # noqa: E731
    u = wave(x)
    for _ in range(int(round(0.25 / (0.5 * dx)))):
        u = u - 0.5 * (u - np.roll(u, 1))
    return float(np.mean(np.abs(u - wave(x - 0.25))))


def test_a_discontinuous_solution_passes_at_order_one_half_and_fails_a_first_order_claim() -> None:
    ns = [64, 128, 256, 512, 1024]
    assert convergence_study(_upwind_square_wave_l1, ns, 0.5, refines="space").status == PASS
    assert convergence_study(_upwind_square_wave_l1, ns, 1, refines="space").status == FAIL


def _neumann_poisson_error(n: int, closure: str) -> float:
    """-u'' = cos x on [0, 1], u'(0) = 1, u(1) = cos 1 + 1, exact u = cos x + x (LeVeque, Finite
    Difference Methods, sec. 2.12): the one-sided (U1 - U0)/h = sigma is first order globally, the
    centred ghost-point closure second order."""
    h, x = 1.0 / n, np.linspace(0.0, 1.0, n + 1)
    matrix, rhs = np.zeros((n + 1, n + 1)), np.cos(x)
    for i in range(1, n):
        matrix[i, i - 1:i + 2] = [-1 / h**2, 2 / h**2, -1 / h**2]
    matrix[n, n], rhs[n] = 1.0, np.cos(1.0) + 1.0
    if closure == "one-sided":
        matrix[0, :2], rhs[0] = [-1 / h, 1 / h], 1.0
    else:
        matrix[0, :2], rhs[0] = [1 / h, -1 / h], -1.0 + h / 2 * np.cos(0.0)
    return float(np.max(np.abs(np.linalg.solve(matrix, rhs) - (np.cos(x) + x))))


def test_a_first_order_boundary_closure_lowers_the_global_order_and_a_centred_one_does_not() -> None:
    ns = [10, 20, 40, 80, 160]
    one_sided = convergence_study(lambda n: _neumann_poisson_error(n, "one-sided"), ns, 2, refines="space")
    assert one_sided.status == FAIL and "a clean order 1" in one_sided.message
    assert convergence_study(lambda n: _neumann_poisson_error(n, "ghost"), ns, 2, refines="space").status == PASS


def _stretched_grid_error(n: int) -> float:
    """-u'' = 9 sin 3x with the three-point difference on a grid with random spacing (+-15 %): its
    truncation error is only first order, yet the solution converges at second order
    (supraconvergence: Manteuffel and White, Math. Comp. 47 (1986) 511)."""
    xi = np.linspace(0.0, 1.0, n + 1)
    x = (np.exp(2 * xi) - 1) / (np.e**2 - 1)
    x[1:-1] += (np.random.default_rng(n).random(n - 1) - 0.5) * 0.3 * np.diff(x)[:-1]
    gaps = np.diff(x)
    matrix, rhs = np.zeros((n + 1, n + 1)), 9 * np.sin(3 * x)
    for i in range(1, n):
        a, c = gaps[i - 1], gaps[i]
        matrix[i, i - 1:i + 2] = [-2 / (a * (a + c)), 2 / (a * c), -2 / (c * (a + c))]
    matrix[0, 0] = matrix[n, n] = 1.0
    rhs[0], rhs[n] = 0.0, np.sin(3.0)
    return float(np.max(np.abs(np.linalg.solve(matrix, rhs) - np.sin(3 * x))))


def test_a_supraconvergent_scheme_on_a_rough_grid_passes_second_order() -> None:
    assert convergence_study(_stretched_grid_error, [16, 32, 64, 128, 256], 2, refines="space").status == PASS


@pytest.mark.slow  # 15,000 steps through the adapter
def test_an_exact_cubic_is_exact_not_a_fail_at_coarse_and_at_round_off_prone_resolutions() -> None:
    # RK4 on y' = s(t) is Simpson's rule, exact for a cubic (Butcher, Numerical Methods for ODEs,
    # sec. 23); at n = 1000 ... 8000 the error is round-off of a solution of size 1351.
    quadrature = from_step(_rk4, lambda t, y: 0.0 * y)
    cubic = ManufacturedODE(lambda t: np.array([50 * t**3 + 1.0]), lambda t, y: 0.0 * y)
    for ns in ([4, 8, 16, 32], [1000, 2000, 4000, 8000]):
        assert mms_order_study(quadrature, cubic, 3.0, ns, 4).status == EXACT


# --- difference quotients at round-off ------------------------------------------------------------
# The three-point Laplacian of sin(2 pi x), periodic: truncation (2 pi)**4 dx**2 / 12, round-off about
# eps / dx**2 (LeVeque, Finite Difference Methods, sec. 1.5). From nx ~ 10**4 the round-off wins and
# the error rises like dx**-2, which read as an error that levels off: a correct Laplacian confirmed
# defective. Expected: INCONCLUSIVE, saying to use coarser grids (not finer ones).
def _laplacian(u: np.ndarray, dx: float) -> np.ndarray:
    return (np.roll(u, -1) - 2 * u + np.roll(u, 1)) / dx**2


def _wave(x: np.ndarray) -> np.ndarray:
    return np.sin(2 * np.pi * x)


def _wave_second_derivative(x: np.ndarray) -> np.ndarray:
    return -((2 * np.pi) ** 2) * np.sin(2 * np.pi * x)


def test_a_laplacian_at_its_round_off_is_not_confirmed_defective() -> None:
    result = operator_study(_laplacian, _wave, _wave_second_derivative, [4096, 8192, 16384, 32768, 65536, 131072], 2)
    assert result.status == INCONCLUSIVE, result.message
    assert "round-off of the difference quotient" in result.message and "use coarser grids" in result.message
    assert "finer than" not in result.message


def test_a_first_order_operator_still_fails_far_above_its_round_off() -> None:
    one_sided = lambda u, dx: (np.roll(u, -1) - u) / dx  # noqa: E731  first order, claimed second
    result = operator_study(one_sided, _wave, lambda x: 2 * np.pi * np.cos(2 * np.pi * x), [64, 128, 256, 512], 2,
                            where=lambda nx: (np.arange(nx) + 0.5) / nx)
    assert result.status == FAIL and "a clean order 1" in result.message, result.message


def test_an_operator_with_a_wrong_constant_fails_at_any_size_of_its_error() -> None:
    # (u[i+1] - u[i-1]) / dx, the factor 1/2 missing: the result converges to 2 u', so the error is
    # |u'| itself, as large as the solution; the study sees the results converge and says FAIL.
    missing_half = lambda u, dx: (np.roll(u, -1) - np.roll(u, 1)) / dx  # noqa: E731
    derivative = lambda x: 2 * np.pi * np.cos(2 * np.pi * x)  # noqa: E731
    assert operator_study(missing_half, _wave, derivative, [16, 32, 64, 128], 2).status == FAIL
    halved_y = lambda u, dx, dy: ((np.roll(u, -1, 0) - 2 * u + np.roll(u, 1, 0)) / dx**2  # noqa: E731
                                  + (np.roll(u, -1, 1) - 2 * u + np.roll(u, 1, 1)) / (2 * dy**2))
    field = lambda x, y: np.sin(2 * np.pi * x) * np.sin(2 * np.pi * y)  # noqa: E731
    result = operator_study(halved_y, field, lambda x, y: -8 * np.pi**2 * field(x, y), [8, 16, 32, 64], 2,
                            domain=((0.0, 1.0), (0.0, 1.0)))
    assert result.status == FAIL, result.message


# --- a conserved total at round-off ---------------------------------------------------------------
@pytest.mark.slow  # 1000 steps on 100,000 cells
def test_a_conservative_scheme_s_total_within_a_few_ulps_is_exact_whatever_the_scale() -> None:
    # Conservative upwind (LeVeque, Finite Volume Methods, sec. 4.1): the sum of the cell values is
    # conserved exactly in exact arithmetic. Over 1000 steps on 100,000 cells the total of 1e5 moves
    # by a few ulps (6e-11), which the default round-off of 1e-12 called a broken identity.
    x = (np.arange(100_000) + 0.5) / 100_000
    u = 1.0 + 0.5 * np.sin(2 * np.pi * x)
    start = float(u.sum())
    for _ in range(1000):
        u = u - 0.5 * (u - np.roll(u, 1))
    assert identity_check(float(u.sum()), start).status == EXACT
    assert identity_check(start * (1 + 1e-9), start).status == FAIL  # a real leak of 1e-9 is still found
    hint = identity_check(1e6 + 1e-7, 1e6)  # 860 ulps: a FAIL, with the hint to pass scale
    assert hint.status == FAIL and "pass scale=1e+06" in hint.message


# --- Richardson differences from levels beyond a stability limit -----------------------------------
# RK4 on the Prothero-Robinson problem y' = -100 (y - sin t) + cos t (Prothero and Robinson, Math.
# Comp. 28 (1974) 145) is unstable for 100 h > 2.78 (Hairer and Wanner, Solving ODEs II, sec. IV.2):
# at n = 4 ... 64 steps to t = 2 the solution grows to 1e17 ... 1e54. self_convergence_study took the
# noise floor from the coarsest solution, so a plan from n = 4 stopped "at round-off" (a floor of
# 4e5) before the stable levels; expected: the plan refines past them and PASSes at order 4.
def _rk4_prothero_robinson(n: int) -> np.ndarray:
    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        return -100.0 * (y - np.sin(t)) + np.cos(t)

    y, h = np.array([0.0]), 2.0 / n
    for k in range(n):
        y = _rk4(rhs, k * h, y, h)
    return y


@pytest.mark.slow  # about 8,000 RK4 steps
def test_a_plan_from_unstable_levels_refines_to_the_stable_ones_and_passes() -> None:
    result = self_convergence_study(_rk4_prothero_robinson, refine(4, max_n=4096), 4)
    assert result.status == PASS, result.message


def test_the_noise_floor_of_richardson_differences_comes_from_stable_levels() -> None:
    result = self_convergence_study(_rk4_prothero_robinson, [16, 32, 64, 128], 4)
    assert result.status == INCONCLUSIVE and "(scale 0.9" in result.message, result.message


# --- a manufactured solution that vanishes at both ends --------------------------------------------
def test_a_solution_that_vanishes_at_both_ends_does_not_make_every_error_larger_than_the_solution() -> None:
    # u = 100 sin t on [0, 2 pi] (with u' for the velocity): |u| is 1e-14 at t = 0 and t_end, so a
    # size taken from the ends alone made every error "larger than the solution itself" and no
    # plan could decide. RK4 is fourth order: PASS (Butcher, Numerical Methods for ODEs, sec. 32).
    def oscillator(t: float, y: np.ndarray) -> np.ndarray:
        return np.array([y[1], -y[0]])

    wave = ManufacturedODE(lambda t: np.array([100 * np.sin(t) * np.sin(t / 2),
                                               100 * (np.cos(t) * np.sin(t / 2) + 0.5 * np.sin(t) * np.cos(t / 2))]),
                           oscillator)
    result = mms_order_study(from_step(_rk4, oscillator), wave, 2 * np.pi, [32, 64, 128, 256], 4)
    assert result.status == PASS, result.message


# --- an invariant that is zero ----------------------------------------------------------------------
def _kepler(t: float, y: np.ndarray) -> np.ndarray:
    return np.concatenate([y[2:], -y[:2] / np.linalg.norm(y[:2]) ** 3])


def _kepler_state_energy(y: np.ndarray) -> float:
    return 0.5 * float(y[2] ** 2 + y[3] ** 2) - 1.0 / float(np.linalg.norm(y[:2]))


def test_a_zero_invariant_says_to_pass_its_size_not_to_refine() -> None:
    # The parabolic Kepler orbit from r = 1 at the escape speed sqrt(2) has energy 0 (Goldstein,
    # Classical Mechanics, sec. 3.7): every drift of RK4 is "larger than the invariant", which said
    # "add finer resolutions" however fine the steps. With the size of its terms it passes at order 4.
    start = [1.0, 0.0, 0.0, np.sqrt(2.0)]
    rk4 = from_step(_rk4, _kepler)
    result = invariant_study(rk4, _kepler_state_energy, start, 2.0, [16, 32, 64, 128, 256], 4)
    assert result.status == INCONCLUSIVE and "pass scale = the size of its terms" in result.message, result.message
    assert "finer than" not in result.message
    assert invariant_study(rk4, _kepler_state_energy, start, 2.0, [16, 32, 64, 128, 256], 4, scale=1.0).status == PASS


def test_a_second_difference_exact_on_a_quadratic_is_exact_and_at_fine_grids_says_use_coarser_ones() -> None:
    # The three-point second difference is exact on a quadratic (LeVeque, Finite Difference
    # Methods, sec. 1.5): EXACT at nx = 8 ... 64. At nx = 256 ... 2048 its round-off (eps / dx**2)
    # is all that is left, and the advice was to add finer grids, which only adds round-off.
    second = lambda u, dx: (u[2:] - 2 * u[1:-1] + u[:-2]) / dx**2  # noqa: E731
    quadratic = lambda x: np.pi * x**2 - np.e * x + 2  # noqa: E731
    curvature = lambda x: 2 * np.pi + 0 * x  # noqa: E731
    inner = lambda nx: np.arange(1, nx) / nx  # noqa: E731
    coarse = operator_study(second, quadratic, curvature, [8, 16, 32, 64], 2, sample="nodes", where=inner)
    assert coarse.status == EXACT, coarse.message
    fine = operator_study(second, quadratic, curvature, [256, 512, 1024, 2048], 2, sample="nodes", where=inner)
    assert fine.status == INCONCLUSIVE and "use coarser grids" in fine.message and "finer" not in fine.message


# --- closely spaced levels --------------------------------------------------------------------------
# Heun's method with its second stage at t + h/2 instead of t + h (a stage at the wrong time: first
# order on a driven problem; Butcher, Numerical Methods for ODEs, sec. 23, the condition sum b_i c_i
# = 1/2) on x'' = -x - 0.75 cos(t / 2), x = 2 cos t - cos(t / 2) (Taylor, Classical Mechanics, sec.
# 5.5), to t = 5. At n = 4, 5, 6, 8, 10 (ratio 1.25, a span of 2.5 in h) its pairwise orders settle
# near 2.4 while the error is still on its way down to order 1: check_order said PASS, a false
# "rejected". Expected: INCONCLUSIVE, since the settled levels span too little of h.
DRIVE = 0.5


def _driven(t: float, y: np.ndarray) -> np.ndarray:
    return np.array([y[1], -y[0] + (DRIVE**2 - 1.0) * np.cos(DRIVE * t)])


def _heun_late_stage(f, t: float, y: np.ndarray, h: float) -> np.ndarray:  # noqa: ANN001
    k1 = f(t, y)
    k2 = f(t + 0.5 * h, y + h * k1)  # the defect: Heun's stage belongs at t + h
    return y + h / 2 * (k1 + k2)


def _heun(f, t: float, y: np.ndarray, h: float) -> np.ndarray:  # noqa: ANN001
    k1 = f(t, y)
    return y + h / 2 * (k1 + f(t + h, y + h * k1))


def test_a_stage_at_the_wrong_time_is_not_passed_on_closely_spaced_coarse_levels() -> None:
    result = reference_study(from_step(_heun_late_stage, _driven), _driven, [1.0, 0.0], 5.0, [4, 5, 6, 8, 10], 2)
    assert result.status == INCONCLUSIVE and "span only a factor" in result.message, result.message


@pytest.mark.slow  # about 8,000 steps through the adapter
def test_the_late_stage_is_found_with_levels_refined_by_two_and_the_correct_heun_passes() -> None:
    # Past the error's zero (near n = 100) the defect's first order shows.
    start, ns = [1.0, 0.0], [256, 512, 1024, 2048]
    assert reference_study(from_step(_heun_late_stage, _driven), _driven, start, 5.0, ns, 2).status == FAIL
    assert reference_study(from_step(_heun, _driven), _driven, start, 5.0, ns, 2).status == PASS


def test_an_error_that_levels_off_just_after_passing_through_zero_is_not_a_fail() -> None:
    # e = h |1 - 7.2 sqrt(h)|, a first-order error with a large half-order correction of the other
    # sign (as near a corner singularity): it passes through zero at h = 0.019 and is then flat
    # within 0.1 in order over a four-fold span before it falls at order 1.
    hs = [0.0941 / 2**k for k in range(5)]
    errors = [h * abs(1 - 7.227 * h**0.5) for h in hs]
    result = check_order(hs, errors, 1)
    assert result.status == INCONCLUSIVE and "passed through zero" in result.message, result.message
    finer = [0.0941 / 2**k for k in range(5, 10)]
    assert check_order(finer, [h * abs(1 - 7.227 * h**0.5) for h in finer], 1).status == PASS


# --- a symmetric method's round trip at round-off ---------------------------------------------------
def _kepler_verlet(y: np.ndarray, t: float, h: float) -> np.ndarray:
    """Stormer-Verlet, kick-drift-kick: symmetric, so h -> -h retraces the step (Hairer, Lubich and
    Wanner, Geometric Numerical Integration, sec. V.1)."""
    q, p = y[:2], y[2:]
    p = p + h / 2 * (-q / np.linalg.norm(q) ** 3)
    q = q + h * p
    p = p + h / 2 * (-q / np.linalg.norm(q) ** 3)
    return np.concatenate([q, p])


@pytest.mark.slow  # 30,000 Verlet steps
def test_a_symmetric_round_trip_on_an_eccentric_orbit_is_never_a_fail_and_says_when_it_is_round_off() -> None:
    # e = 0.9: the close pericentre passages amplify round-off beyond 4 eps per step, so some round
    # trips land just above the floor. Expected: EXACT or INCONCLUSIVE naming round-off, never FAIL.
    start = np.array([0.1, 0.0, 0.0, np.sqrt(19.0)])
    backward = lambda y, t, h: _kepler_verlet(y, t, -h)  # noqa: E731
    for ns in ([1000, 2000, 4000, 8000], [4000, 8000, 16000]):
        result = reversibility_study(_kepler_verlet, backward, start, 6 * np.pi, ns, 2, require_exact=True)
        assert result.status == EXACT or (result.status == INCONCLUSIVE and "this is round-off" in result.message), \
            result.message
