"""Tests for refinement plans (issue 16): the plan as a value, the sequential stopping rule of
the studies, the "converges, but to something else" FAIL, and claims run through
``physverify confirm`` as a process with solvers written for these tests."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.fixtures import Ran
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from physverify import (
    Check,
    ManufacturedODE,
    Refinement,
    check_order,
    convergence_study,
    invariant_study,
    mms_order_study,
    mms_trajectory_study,
    ode_checks,
    path_steps,
    reference_study,
    refine,
    refinement_path,
    run_check,
    self_convergence_study,
)
from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS
from physverify.mms import converges_elsewhere, still_changing

# --- the plan as a value -------------------------------------------------------------


def test_a_plan_lists_increasing_integer_levels_within_its_bounds() -> None:
    assert list(refine(4, max_n=40).levels()) == [4, 8, 16, 32]
    assert list(refine(3, ratio=1.5, max_levels=5).levels()) == [3, 4, 7, 10, 15]  # rounded, strictly increasing
    assert list(refine(2, ratio=1.01, max_levels=4).levels()) == [2, 3, 4, 5]  # a ratio near 1 still moves
    assert len(list(refine(4).levels())) == 20  # without bounds a plan still ends
    assert refine(8, max_n=4096).describe() == "n = 8, 16, ... up to 4096"


@pytest.mark.parametrize("kwargs", [{"start": 0}, {"start": 2.5}, {"start": 4, "ratio": 1.0},
                                    {"start": 4, "max_n": 3}, {"start": 4, "max_levels": 1},
                                    {"start": 4, "budget_s": 0.0}, {"start": 4, "ratio": math.inf}])
def test_a_plan_refuses_bounds_it_cannot_keep(kwargs: dict[str, float]) -> None:
    start = kwargs.pop("start")
    with pytest.raises(ValueError, match="refine"):
        refine(start, **kwargs)  # type: ignore[arg-type]


def test_physverify_refine_stays_the_function_once_its_module_is_loaded() -> None:
    import physverify.studies  # noqa: F401 - loads physverify.refine, the module of the same name

    assert physverify.refine is refine and isinstance(physverify.refine(4), Refinement)


# --- a list behaves as it always did; a plan stops once the verdict holds ----------------


def _alternating(n: int) -> float:
    """First order with a factor that flips at every doubling: the pairwise orders never settle."""
    return (1.5 if round(math.log2(n)) % 2 == 0 else 1.0) / n


def test_a_list_is_judged_whole_as_check_order_judges_it() -> None:
    ns = [8, 16, 32, 64]
    error = lambda n: 2.0 / n**2 * (1.0 - 3.0 / n)  # noqa: E731
    by_list = convergence_study(error, ns, 2)
    direct = check_order([1.0 / n for n in ns], [error(n) for n in ns], 2, refines="steps")
    assert (by_list.status, by_list.message, by_list.hs, by_list.errors) == (direct.status, direct.message,
                                                                             direct.hs, direct.errors)


def test_a_plan_asks_levels_one_at_a_time_and_keeps_the_ones_it_used() -> None:
    asked: list[int] = []

    def error_at(n: int) -> float:
        asked.append(n)
        return 1.0 / n**2 * (1.0 + 20.0 / n)

    result = convergence_study(error_at, refine(4, max_n=1 << 20), 2)
    assert result.status == PASS and "the verdict held with one more level" in result.message
    assert asked == sorted(asked) and len(asked) < 12  # it stopped long before max_n
    assert result.hs == tuple(1.0 / n for n in asked)
    assert result.errors == tuple(1.0 / n**2 * (1.0 + 20.0 / n) for n in asked)
    assert set(result.fit_hs) <= set(result.hs) and len(result.fit_hs) >= 3


def test_a_plan_that_reaches_max_n_undecided_is_inconclusive_and_names_the_levels_tried() -> None:
    result = convergence_study(_alternating, refine(4, max_n=256), 1)
    assert result.status == INCONCLUSIVE
    assert result.message.startswith("no verdict confirmed after n = 4, 8, 16, ..., 128, 256 (the plan reached "
                                     "max_n = 256)")
    assert len(result.hs) == 7
    short = convergence_study(_alternating, refine(4, max_levels=3), 1)
    assert "n = 4, 8, 16 (the plan's 3 levels were used)" in short.message


def test_a_decision_at_the_last_level_is_not_taken_unconfirmed() -> None:
    # first order with a large correction: the look at n = 32 passes, nothing confirms it
    result = convergence_study(lambda n: (1.0 + 30.0 / n) / n, refine(4, max_n=32), 1)
    assert result.status == INCONCLUSIVE
    assert "the finest level gave PASS but it was not confirmed with one more level" in result.message


def test_the_check_s_budget_ending_during_refinement_is_named() -> None:
    def slow(n: int) -> float:
        time.sleep(2e-4 * n)  # a level costs in proportion to n, as a time stepper does
        return _alternating(n)

    outcome = run_check(Check("convergence", "slow", lambda: convergence_study(slow, refine(4, max_n=1 << 16), 1),
                              budget_s=0.5))
    assert outcome.status == INCONCLUSIVE
    assert "would overrun the check's budget_s of 0.5 s" in outcome.message
    assert "no verdict confirmed after n = 4, 8" in outcome.message


def test_the_plan_s_own_budget_ending_during_refinement_is_named() -> None:
    def slow(n: int) -> float:
        time.sleep(2e-4 * n)
        return _alternating(n)

    result = convergence_study(slow, refine(4, max_n=1 << 16, budget_s=0.3), 1)
    assert result.status == INCONCLUSIVE and "would overrun the plan's budget_s of 0.3 s" in result.message


def test_a_plan_refines_past_levels_that_are_all_beyond_the_stability_limit() -> None:
    # a list of such levels alone is a FAIL (a blow-up); a plan starts coarse on purpose
    error = lambda n: math.inf if n < 32 else 1.0 / n**2  # noqa: E731
    assert convergence_study(error, refine(4, max_n=1024), 2).status == PASS
    assert convergence_study(error, [4, 8, 16], 2).status == FAIL
    never = convergence_study(lambda n: math.inf, refine(4, max_n=64), 2)
    assert never.status == INCONCLUSIVE and "the error is not finite at any level tried" in never.message


def test_a_plan_stops_where_the_error_reaches_round_off() -> None:
    result = convergence_study(lambda n: max(1e-14, _alternating(n) ** 6), refine(4, max_n=1 << 16), 6)
    assert result.status == INCONCLUSIVE and "the error reached the noise floor" in result.message
    assert len(result.hs) < 12


# --- Hypothesis: sequences served lazily ------------------------------------------------


def _served(p: int, c: float, a: float, q: int, unstable: int, start: int) -> tuple[list[int], object]:
    asked: list[int] = []
    levels = list(refine(start, max_n=8192).levels())

    def error_at(n: int) -> float:
        asked.append(n)
        if n in levels[:unstable]:
            # beyond a stability limit at the coarsest levels: overflowed, or huge and falling
            return math.inf if unstable % 2 else 10.0 ** (8 - levels.index(n))
        h = 1.0 / n
        return abs(c * h**p * (1.0 + a * h**q))

    return asked, error_at


@settings(max_examples=150, deadline=None)
@given(p=st.integers(1, 4), log_c=st.floats(-2.0, 2.0), a=st.floats(-60.0, 60.0), q=st.sampled_from([1, 2]),
       unstable=st.integers(0, 3), start=st.integers(2, 12))
def test_with_refine_no_sequence_of_the_true_order_fails(p: int, log_c: float, a: float, q: int, unstable: int,
                                                         start: int) -> None:
    # the correction may dominate the coarse levels and pass through zero (a < 0)
    _, error_at = _served(p, 10.0**log_c, a, q, unstable, start)
    result = convergence_study(error_at, refine(start, max_n=8192), p)  # type: ignore[arg-type]
    assert result.status != FAIL, result.message


@settings(max_examples=100, deadline=None)
@given(p=st.integers(1, 2), log_c=st.floats(-1.0, 1.0), a=st.floats(-20.0, 20.0), q=st.sampled_from([1, 2]),
       unstable=st.integers(0, 1), start=st.integers(2, 12))
def test_with_refine_a_reachable_range_passes_and_a_clean_lower_order_fails(p: int, log_c: float, a: float, q: int,
                                                                            unstable: int, start: int) -> None:
    c = 10.0**log_c
    assume(all(abs(1.0 + a * (1.0 / n) ** q) > 0.05 for n in refine(start, max_n=8192).levels()
               if n >= 64))  # no zero of the error among the levels that should settle
    asked, error_at = _served(p, c, a, q, unstable, start)
    passed = convergence_study(error_at, refine(start, max_n=8192), p)  # type: ignore[arg-type]
    assert passed.status == PASS and max(asked) <= 8192, passed.message
    asked.clear()
    failed = convergence_study(error_at, refine(start, max_n=8192), p + 1)  # type: ignore[arg-type]
    assert failed.status == FAIL and "below the accepted range" in failed.message, failed.message


# --- every study takes a plan --------------------------------------------------------


def _oscillator(t: float, y: np.ndarray) -> np.ndarray:
    return np.array([y[1], -y[0]])


def _heun(source, y0, t_end, n):  # type: ignore[no-untyped-def]
    """Heun's method for the oscillator y' = (v, -x) + source(t)."""
    h, y = t_end / n, np.asarray(y0, dtype=float)
    for k in range(n):
        t = k * h
        k1 = _oscillator(t, y) + source(t)
        k2 = _oscillator(t + h, y + h * k1) + source(t + h)
        y = y + 0.5 * h * (k1 + k2)
    return y


def _heun_run(source, y0, t_end, n):  # type: ignore[no-untyped-def]
    """Every state of Heun's method: (times, states)."""
    h, times, states = t_end / n, [0.0], [np.asarray(y0, dtype=float)]
    for k in range(n):
        states.append(_heun(lambda s, k=k: source(s + k * h), states[-1], h, 1))
        times.append((k + 1) * h)
    return times, states


def test_every_study_that_takes_ns_takes_a_plan() -> None:
    plan = refine(8, max_n=4096)
    mms = ManufacturedODE(lambda t: np.array([np.cos(2 * t), -2 * np.sin(2 * t)]), _oscillator)
    energy = lambda y: 0.5 * float(y @ y)  # noqa: E731
    results = {
        "mms": mms_order_study(_heun, mms, 1.0, plan, 2),
        "trajectory": mms_trajectory_study(_heun_run, mms, 1.0, plan, 2),
        "reference": reference_study(_heun, _oscillator, [1.0, 0.0], 1.0, plan, 2),
        "invariant": invariant_study(_heun, energy, [1.0, 0.0], 1.0, plan, 2),
        "convergence": convergence_study(lambda n: 1.0 / n**2 + 1.0 / n**3, plan, 2),
        "self": self_convergence_study(lambda n: _heun(lambda t: 0.0, [1.0, 0.0], 1.0, n), plan, 2),
    }
    for name, result in results.items():
        assert result.status == PASS and "the verdict held with one more level" in result.message, (name, result)
        assert len(result.hs) < 10, name


def test_ode_checks_take_a_plan_and_give_the_patch_test_its_first_levels() -> None:
    mms = ManufacturedODE(lambda t: np.array([np.cos(2 * t), -2 * np.sin(2 * t)]), _oscillator)
    checks = ode_checks("Heun", _heun, rhs_ref=_oscillator, mms=mms, y0_free=[1.0, 0.0], t_end=1.0,
                        ns=refine(8, max_n=2048), order=2, quantity=lambda y: 0.5 * float(y @ y),
                        patch=([0.0, 0.0], [0.0, 0.0]))
    outcomes = {c.label + c.family: run_check(c) for c in checks}
    assert all(o.status in (PASS, EXACT) for o in outcomes.values()), outcomes
    patch = next(o for o in outcomes.values() if o.family == "patch")
    assert patch.result is not None and len(patch.result.hs) == 4  # type: ignore[attr-defined]


def test_path_steps_serve_a_plan_the_path_a_list_gets() -> None:
    nxs = list(refine(8, max_n=256).levels())
    steps = refinement_path(nxs, space_order=2, time_order=1, nt0=3)
    assert [path_steps(nx, space_order=2, time_order=1, nx0=8, nt0=3) for nx in nxs] == steps

    def error(nx: int) -> float:  # a space error dx**2 and a time error dt, equal weight
        nt = path_steps(nx, space_order=2, time_order=1, nx0=8, nt0=3)
        return (1.0 / nx) ** 2 + 0.5 / nt

    by_plan = convergence_study(error, refine(8, max_n=256), 2, refines="path")
    by_list = convergence_study(lambda nx: (1.0 / nx) ** 2 + 0.5 / dict(zip(nxs, steps))[nx], nxs, 2, refines="path")
    assert by_plan.status == by_list.status == PASS
    assert by_plan.errors == by_list.errors[:len(by_plan.errors)]


def test_a_study_with_tol_high_none_passes_a_code_better_than_claimed() -> None:
    assert convergence_study(lambda n: n**-3.0, refine(8, max_n=1024), 1, tol_high=None).status == PASS


# --- converges, but to something else ----------------------------------------------------


def test_a_flat_error_whose_solutions_converge_is_a_fail_whatever_its_size() -> None:
    hs = [0.4, 0.2, 0.1, 0.05, 0.025]
    limit = np.array([5.0, -3.0])
    states = [limit + 40.0 * h**2 for h in hs]  # the code converges at order 2 ...
    exact = np.array([0.1, 0.2])  # ... to something far from the exact solution
    errors = [float(np.max(np.abs(s - exact))) for s in states]
    message = converges_elsewhere(hs, errors, states, 2)
    assert message is not None and "converges to the solution of another problem" in message
    assert check_order(hs, errors, 2).status != FAIL  # the error alone says "far too coarse"
    assert converges_elsewhere(hs, errors, states, 3) is None  # differences not at the expected order


def test_a_flat_error_whose_solutions_still_change_is_not_a_defect() -> None:
    hs = [0.4, 0.2, 0.1, 0.05]
    states = [np.array([3.0 * (-1) ** k]) for k in range(4)]  # jumping from level to level
    errors = [3.0, 3.0, 3.0, 3.0]
    assert converges_elsewhere(hs, errors, states, 2) is None
    assert still_changing(errors, states, hs) is not None


# --- end to end: claims through physverify confirm (in this process; each claim runs in its child) --

OSCILLATOR = '''\
"""A damped, driven oscillator x'' = -x - GAMMA x' + DRIVE cos(W t), stepped with the classical RK4."""
import numpy as np

GAMMA = 1.0
SIGN = 1.0  # the sign the code gives the damping term
DRIVE = 0.0
W = 1.0


def rhs(t, y):
    return np.array([y[1], -y[0] - SIGN * GAMMA * y[1] + DRIVE * np.cos(W * t)])


def integrate(source, y0, t_end, n):
    h, y = t_end / n, np.array(y0, dtype=float)
    f = lambda s, z: rhs(s, z) + source(s)
    for k in range(n):  # an integer step count: no floating-point end test
        t = k * h
        k1 = f(t, y)
        k2 = f(t + h / 2, y + h / 2 * k1)
        k3 = f(t + h / 2, y + h / 2 * k2)
        k4 = f(t + h, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y
'''

DAMPING_CLAIM = '''\
"""Claim: the damping term of solver.py has the wrong sign."""
import numpy as np

import solver
from physverify import Check, reference_study, refine

CLAIM = {
    "text": "rhs() adds +gamma*v to the acceleration, so the damping pumps energy in",
    "source": "a test of physverify",
    "file": "solver.py",
    "line": 10,
    "reference": "Taylor, Classical Mechanics, sec. 5.4: x'' + 2 beta x' + omega0^2 x = 0",
    "impact": "used",
}
solver.SIGN = SIGN_IN_CODE
solver.DRIVE, solver.W = DRIVE, W


def reference(gamma):
    return lambda t, y: np.array([y[1], -y[0] - gamma * y[1] + DRIVE * np.cos(W * t)])


def study(gamma):
    solver.GAMMA = gamma
    return reference_study(solver.integrate, reference(gamma), [1.0, 0.0], 10.0, refine(4, max_n=1024), 4)


def control():
    # gamma = 0: the damping term vanishes whatever its sign
    return Check("reference", "RK4 is fourth order without damping", lambda: study(0.0))


def checks():
    return [Check("reference", "RK4 is fourth order with damping (gamma = 1)", lambda: study(1.0))]
'''

VERLET = '''\
"""Velocity Verlet for the pendulum x'' = -sin x; OLD = True updates v with the old acceleration only."""
import numpy as np

OLD = True


def integrate(source, y0, t_end, n):
    h = t_end / n
    x, v = float(y0[0]), float(y0[1])
    for k in range(n):
        s0, s1 = source(k * h), source((k + 1) * h)
        a0 = -np.sin(x) + s0[1]
        x_new = x + h * (v + s0[0]) + 0.5 * h * h * a0
        a1 = -np.sin(x_new) + s1[1]
        v = v + (h * a0 if OLD else 0.5 * h * (a0 + a1))
        x = x_new
    return np.array([x, v])
'''

VERLET_CLAIM = '''\
"""Claim: the velocity update of verlet.py uses the old acceleration only, so it is first order."""
import numpy as np

import verlet
from physverify import Check, patch_study, reference_study, refine

CLAIM = {
    "text": "v is advanced with the acceleration at the start of the step only",
    "source": "a test of physverify",
    "file": "verlet.py",
    "line": 14,
    "reference": "Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. I.1.4: Stormer-Verlet is second order",
    "impact": "used",
}
PENDULUM = lambda t, y: np.array([y[1], -np.sin(y[0])])
NS = LEVELS


def control():
    # a body at rest at the bottom stays there: the defect cannot show where the acceleration is zero
    return Check("patch", "rest stays rest", lambda: patch_study(verlet.integrate, PENDULUM, [0.0, 0.0], [0.0, 0.0],
                                                                 1.0, (4, 8, 16)))


def checks():
    return [Check("reference", "Verlet is second order on the pendulum",
                  lambda: reference_study(verlet.integrate, PENDULUM, [1.0, 0.0], 10.0, NS, 2))]
'''

AT_LEAST_CLAIM = '''\
"""Claim: a stage of solver.py is evaluated at the wrong time, so the method is only second order."""
import numpy as np

import solver
from physverify import Check, ManufacturedODE, mms_order_study, refine

CLAIM = {
    "text": "k3 is evaluated at t instead of t + h/2, so RK4 drops to second order",
    "source": "a test of physverify",
    "file": "solver.py",
    "line": 18,
    "reference": "Butcher, Numerical Methods for Ordinary Differential Equations, sec. 32: RK4 is fourth order",
    "impact": "used",
}
solver.GAMMA = 1.0
MMS = ManufacturedODE(lambda t: np.array([np.cos(2 * t), -2 * np.sin(2 * t)]),
                      lambda t, y: np.array([y[1], -y[0] - y[1]]))


def control():
    return Check("mms", "a method of order 1 or more on the manufactured solution", lambda: mms_order_study(
        solver.integrate, MMS, 2.0, refine(4, max_n=2048), 1, tol_high=None))


def checks():
    # "at least third order": a claim that must not break when the code is better than that
    return [Check("mms", "the method is at least third order", lambda: mms_order_study(
        solver.integrate, MMS, 2.0, refine(4, max_n=2048), 3, tol_high=None))]
'''


def _confirm(cli: Callable[..., Ran], tmp_path: Path, files: dict[str, str]) -> dict[str, object]:
    """``physverify confirm claim.py --json -`` in this process (the cli fixture); the claim runs in its own child."""
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    ran = cli("confirm", "claim.py", "--trusted", "--json", "-", cwd=tmp_path)
    record = json.loads(ran.stdout)
    assert ran.returncode == {"confirmed": 1, "rejected": 0, "not decidable": 2}[record["verdict"]], ran.stderr
    return record


def _damping(sign: float, drive: float, w: float) -> str:
    return (DAMPING_CLAIM.replace("SIGN_IN_CODE", repr(sign))
            .replace("solver.DRIVE, solver.W = DRIVE, W", f"DRIVE, W = {drive!r}, {w!r}\nsolver.DRIVE, solver.W = DRIVE, W"))


def test_a_wrong_damping_sign_is_confirmed_though_its_error_is_larger_than_the_solution(tmp_path: Path,
                                                                                        cli: Any) -> None:
    record = _confirm(cli, tmp_path, {"solver.py": OSCILLATOR, "claim.py": _damping(-1.0, 0.0, 1.0)})
    check = record["checks"][0]  # type: ignore[index]
    assert record["verdict"] == "confirmed", record["reason"]
    assert check["status"] == FAIL and "converges to the solution of another problem" in check["message"]
    assert min(check["data"]["errors"]) > 10.0  # larger than the solution (size 1) at every level


def test_a_correct_method_on_a_fast_drive_it_does_not_resolve_is_not_confirmed(tmp_path: Path, cli: Any) -> None:
    # RK4 is right here; at n = 4 ... the error is larger than the solution and far from settled
    record = _confirm(cli, tmp_path, {"solver.py": OSCILLATOR, "claim.py": _damping(1.0, 100.0**2 - 1.0, 100.0)})
    assert record["verdict"] != "confirmed", record["reason"]
    assert all(c["status"] != FAIL for c in record["checks"])  # type: ignore[union-attr]


@pytest.mark.parametrize(("levels", "verdict"), [("(8, 16, 32)", "not decidable"),
                                                 ("refine(8, max_n=4096)", "confirmed")])
def test_an_old_acceleration_verlet_is_confirmed_by_refining_where_three_levels_cannot_decide(
        tmp_path: Path, levels: str, verdict: str, cli: Any) -> None:
    record = _confirm(cli, tmp_path, {"verlet.py": VERLET, "claim.py": VERLET_CLAIM.replace("LEVELS", levels)})
    assert record["verdict"] == verdict, record["reason"]
    if verdict == "confirmed":
        assert "a clean order 1" in record["checks"][0]["message"]  # type: ignore[index]


def test_a_correct_code_better_than_claimed_is_rejected_with_tol_high_none(tmp_path: Path, cli: Any) -> None:
    # RK4 against "at least third order": one order better, and a PASS
    record = _confirm(cli, tmp_path, {"solver.py": OSCILLATOR, "claim.py": AT_LEAST_CLAIM})
    assert record["verdict"] == "rejected", record["reason"]
    assert record["checks"][0]["status"] == PASS  # type: ignore[index]


def test_an_error_passing_through_zero_at_one_level_is_not_taken_for_round_off() -> None:
    """Hypothesis found it: e = h (1 - 10 h) is exactly 0 at n = 10; refining must go on past it and PASS."""
    from physverify import PASS, convergence_study, refine

    result = convergence_study(lambda n: abs((1.0 / n) * (1.0 - 10.0 / n)), refine(5, max_n=8192), 1)
    assert result.status == PASS, result.message
    assert "refined n = 5, 10, 20" in result.message


# --- plans that always end; round-off at the code's precision (issue 35) -----------------------
RK4_FLOAT32 = '''\
"""Classical RK4 for x'' = -4 x computing in float32, as GPU and JAX codes do by default (written for the tests)."""
import numpy as np


def integrate(source, y0, t_end, n, cast=False):
    y, h = np.asarray(y0, dtype=np.float32), np.float32(t_end / n)

    def f(t, z):
        return (np.array([z[1], -4.0 * z[0]], dtype=np.float32) + np.asarray(source(t), dtype=np.float32)).astype(np.float32)

    for i in range(n):
        t = i * float(h)
        k1 = f(t, y)
        k2 = f(t + 0.5 * float(h), y + h / 2 * k1)
        k3 = f(t + 0.5 * float(h), y + h / 2 * k2)
        k4 = f(t + float(h), y + h * k3)
        y = (y + h / np.float32(6) * (k1 + 2 * k2 + 2 * k3 + k4)).astype(np.float32)
    return y.astype(np.float64) if cast else y
'''
RK4_FLOAT32_SLIP = RK4_FLOAT32.replace("k3 = f(t + 0.5 * float(h),", "k3 = f(t + float(h),")
FLOAT32_CLAIM = '''\
"""Claim: the RK4 of rk4f32.py is not fourth order."""
import numpy as np

import rk4f32
from physverify import Check, ManufacturedODE, mms_order_study, refine

CLAIM = {
    "text": "integrate() is not fourth order",
    "source": "a test",
    "file": "rk4f32.py",
    "line": 16,
    "reference": "Butcher, Numerical Methods for ODEs, sec. 23: the classical RK4 tableau is fourth order",
    "impact": "used",
}


def rhs(t, y):
    return np.array([y[1], -4.0 * y[0]])  # x'' = -4 x (Taylor, Classical Mechanics, sec. 5.2)


def study(u):
    return mms_order_study(lambda s, y0, t, n: rk4f32.integrate(s, y0, t, n, cast=CAST), ManufacturedODE(u, rhs),
                           2.0, refine(4, ratio=1.5), 4, **KWARGS)


def control():
    # the free oscillation solves the code's own equation: no forcing, and a stage time makes no difference
    return Check("mms", "RK4 is fourth order on the free oscillation",
                 lambda: study(lambda t: np.array([np.cos(2 * t), -2 * np.sin(2 * t)])))


def checks():
    return [Check("mms", "RK4 is fourth order on a forced oscillation",
                  lambda: study(lambda t: np.array([np.cos(t), -np.sin(t)])))]
'''


@pytest.mark.parametrize("cast", [False, True], ids=["float32-out", "cast-to-float64"])
@pytest.mark.parametrize(("code", "verdict"), [(RK4_FLOAT32, "rejected"), (RK4_FLOAT32_SLIP, "confirmed")],
                         ids=["correct", "stage-at-the-wrong-time"])
def test_a_float32_rk4_with_an_unbounded_plan_is_judged_above_its_round_off(tmp_path: Path, cli: Any, code: str,
                                                                            verdict: str, cast: bool) -> None:
    kwargs = "{'precision': np.float32}" if cast else "{}"  # a cast on the way out hides the precision: say it
    claim = FLOAT32_CLAIM + f"\nCAST, KWARGS = {cast!r}, {kwargs}\n"
    record = _confirm(cli, tmp_path, {"rk4f32.py": code, "claim.py": claim})
    assert record["verdict"] == verdict, record["reason"]
    check = record["checks"][0]  # type: ignore[index]
    assert "single (float32) precision" in check["message"], check["message"]
    if verdict == "rejected":
        assert check["status"] == "PASS" and "(expected 4)" in check["message"], check["message"]
    else:
        assert check["status"] == "FAIL" and "observed order 1.0" in check["message"], check["message"]


VERLET_FLOAT32 = '''\
"""Velocity Verlet for x'' = -omega**2 x + force(t) computing in float32 (written for the tests)."""
import numpy as np


def integrate(x0, v0, t_end, n, omega, force):
    x, v, h, w2 = np.float32(x0), np.float32(v0), np.float32(t_end / n), np.float32(omega**2)
    a = -w2 * x + np.float32(force(0.0))
    for i in range(n):
        x = x + h * v + np.float32(0.5) * h * h * a
        a_new = -w2 * x + np.float32(force((i + 1) * t_end / n))
        v = v + np.float32(0.5) * h * (a + a_new)
        a = a_new
    return np.array([x, v], dtype=np.float32)
'''
VERLET_FLOAT32_CLAIM = '''\
"""Claim: the float32 Verlet of verlet32.py is only first order."""
import numpy as np

import verlet32
from physverify import Check, ManufacturedODE, mms_order_study

CLAIM = {
    "text": "integrate() uses the old acceleration, so it is only first order",
    "source": "a test",
    "file": "verlet32.py",
    "line": 10,
    "reference": "Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. I.1.4: Stormer-Verlet is second order",
    "impact": "used",
}


def study(omega, u):
    def integrate(source, y0, t_end, n):
        return verlet32.integrate(y0[0], y0[1], t_end, n, omega, lambda t: source(t)[1])
    rhs = lambda t, y: np.array([y[1], -omega**2 * y[0]])  # Taylor, Classical Mechanics, sec. 5.2
    return mms_order_study(integrate, ManufacturedODE(u, rhs), 1.5, (50, 100, 200, 400), 2)


def control():
    # no force, no acceleration: old or new makes no difference, and straight-line motion is exact
    return Check("mms", "free particle", lambda: study(0.0, lambda t: np.array([0.25 + 0.5 * t, 0.5 + 0 * t])))


def checks():
    return [Check("mms", "second order on the oscillator",
                  lambda: study(2.0, lambda t: np.array([np.cos(2 * t), -2 * np.sin(2 * t)])))]
'''


def test_a_float32_free_particle_control_is_exact_so_a_correct_float32_verlet_is_rejected(tmp_path: Path,
                                                                                         cli: Any) -> None:
    record = _confirm(cli, tmp_path, {"verlet32.py": VERLET_FLOAT32, "claim.py": VERLET_FLOAT32_CLAIM})
    control, check = record["control"], record["checks"][0]  # type: ignore[index]
    assert control["status"] == "EXACT" and "exact up to the code's precision" in control["message"], control
    assert record["verdict"] == "rejected" and check["status"] == "PASS", record["reason"]
    assert "n >= 400 are at single (float32) round-off" in check["message"], check["message"]


def test_a_float32_plan_whose_finer_levels_are_at_round_off_passes_on_the_levels_above_it() -> None:
    # e = 0.3 / n**4 plus 2.5 units of float32 round-off: order 4 at n = 4, 8, 16 (errors 1e-3 ... 5e-6,
    # far below the solution), then n = 32 and the level between, 23, are at round-off: no finer level can
    # confirm the pass, and none will (finer only adds round-off); it stands on the levels above.
    from physverify import convergence_study

    result = convergence_study(lambda n: (0.3 / n**4 + 3e-7, np.ones(2, dtype=np.float32)), refine(4), 4)
    assert result.status == PASS, result.message
    assert "the finer levels are at round-off and cannot confirm it" in result.message


def test_a_float16_plan_passing_on_errors_of_per_cents_of_the_solution_is_not_taken_unconfirmed() -> None:
    # Heun with its second stage at the wrong time (first order) in float16, from soundness_growth.py: its
    # coarse levels fall like h**2.4 while the error is 2 % of the solution or more, and its first order is
    # hidden in float16's round-off (1e-3) below that. A pass no finer level confirms needs smaller errors.
    from physverify import convergence_study

    errors = {3: 5.436, 6: 1.155, 12: 0.2292, 24: 0.04169, 34: 0.01532, 48: 0.005555, 68: 0.001665, 96: 0.002257}
    result = convergence_study(lambda n: (errors[n], np.ones(2, dtype=np.float16)), refine(3), 2,
                               h=lambda n: 5.0 / n, scale=2.2170846213782553)
    assert result.status == INCONCLUSIVE, result.message


NEVER_SETTLES = '''\
"""Claim: an error that never settles, asked of an unbounded plan (written for the tests)."""
import time

from physverify import Check, convergence_study, refine

CLAIM = {
    "text": "the scheme is not second order",
    "source": "a test",
    "file": "claim.py",
    "line": 1,
    "reference": "a test",
    "impact": "unknown",
}


def control():
    return Check("order", "h**2 is second order", lambda: convergence_study(lambda n: 1.0 / n**2, [8, 16, 32, 64], 2))


def wobbling(n):
    time.sleep(n * 2e-4)  # each level costs in proportion to n, as a real solve does
    return (1.0 if (n.bit_length() % 2) else 0.25) / n  # pairwise orders 3, -1, 3, -1, ...: never settled


def checks():
    return [Check("order", "the wobbling error is second order", lambda: convergence_study(wobbling, refine(4), 2))]
'''


def test_an_unbounded_plan_on_evidence_that_never_settles_ends_before_the_timeout_naming_its_levels(
        tmp_path: Path, cli: Any) -> None:
    (tmp_path / "claim.py").write_text(NEVER_SETTLES, encoding="utf-8")
    ran = cli("confirm", "claim.py", "--trusted", "--json", "-", "--timeout", "20", cwd=tmp_path)
    record = json.loads(ran.stdout)
    assert record["verdict"] == "not decidable" and "timed out" not in record["reason"], record["reason"]
    message = record["checks"][0]["message"]
    assert record["checks"][0]["status"] == "INCONCLUSIVE", message
    assert message.startswith("no verdict confirmed after n = 4, 8, 16, ") and "half of the run's remaining time" in message


PLAN_IN_LIMITED_MEMORY = '''
import resource, sys
import numpy as np
from physverify import convergence_study, refine

with open("/proc/self/status") as status:  # the address space in use now, so the limit leaves 600 MiB to the plan
    used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (used + 600 * 2**20, resource.RLIM_INFINITY))


def wobbling_grid(n):
    grid = np.ones((n, n))  # a 2-D level: its memory grows like n**2
    grid[0, 0] = 2.0
    return float(grid.sum() - n * n) * (1.0 if (n.bit_length() % 2) else 0.25) / n


result = convergence_study(wobbling_grid, refine(256), 2)
print(result.status)
print(result.message)
'''


def test_an_unbounded_2d_plan_stops_before_a_level_whose_arrays_would_not_fit_in_memory(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "plan.py"
    script.write_text(PLAN_IN_LIMITED_MEMORY, encoding="utf-8")
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]  # no MemoryError: the plan stopped in time
    status, message = done.stdout.split("\n", 1)
    assert status == "INCONCLUSIVE" and "the memory the run allows" in message, message
    assert message.startswith("no verdict confirmed after n = 256, 512, 1024"), message
