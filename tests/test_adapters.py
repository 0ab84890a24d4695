"""from_step, from_second_order_step and exact_steps: unit properties, and whole claims through
``physverify confirm`` as a process on step routines written for these tests (issue 18, item 1)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.fixtures import Ran, verdict_line

from physverify import ManufacturedODE, from_second_order_step, from_step, mms_order_study, zero_source
from physverify.adapters import exact_steps
from physverify.errors import PhysverifyError


# --- exact_steps ----------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 3, 10, 80, 160, 1000])
@pytest.mark.parametrize("t_end", [1.0, 1.5, 0.1, 7.3])
def test_exact_steps_gives_n_plus_one_times_from_zero_to_exactly_t_end(n: int, t_end: float) -> None:
    times = exact_steps(t_end, n)
    assert len(times) == n + 1 and times[0] == 0.0 and times[-1] == t_end
    assert np.all(np.diff(times) > 0)
    assert np.all(times[1:-1] == np.arange(1, n) * t_end / n)


def test_a_loop_that_adds_h_overshoots_where_exact_steps_does_not() -> None:
    """Issue 18: ``while t < t_end`` takes 11 steps for n = 10 and 81 for n = 80."""
    for n, taken in ((10, 11), (80, 81)):
        t, steps = 0.0, 0
        while t < 1.0:
            t, steps = t + 1.0 / n, steps + 1
        assert steps == taken
        assert len(exact_steps(1.0, n)) - 1 == n


@pytest.mark.parametrize("n", [0, -3, 2.5, True, "10"])
def test_exact_steps_refuses_a_step_count_that_is_not_a_positive_integer(n: object) -> None:
    with pytest.raises(PhysverifyError, match="positive integer"):
        exact_steps(1.0, n)  # type: ignore[arg-type]


# --- from_step -------------------------------------------------------------------------------
def test_from_step_takes_exactly_n_steps_at_the_exact_times_and_adds_the_source_to_rhs() -> None:
    seen: list[tuple[float, float]] = []

    def euler(f, t, y, h):  # type: ignore[no-untyped-def]
        seen.append((t, h))
        return y + h * f(t, y)

    integrate = from_step(euler, lambda t, y: np.zeros_like(y))
    end = integrate(lambda t: np.array([1.0]), np.array([0.0]), 1.0, 80)
    assert [t for t, _ in seen] == list(exact_steps(1.0, 80)[:-1])
    assert {h for _, h in seen} == {1.0 / 80}
    assert end == pytest.approx([1.0], abs=1e-14)  # y' = 0 + 1 from 0 for one unit of time


def test_from_step_accepts_zero_source_and_refuses_a_step_that_changes_the_state_s_shape() -> None:
    integrate = from_step(lambda f, t, y, h: y + h * f(t, y), lambda t, y: -y)
    assert integrate(zero_source, np.array([1.0, 2.0]), 1.0, 4).shape == (2,)
    broken = from_step(lambda f, t, y, h: np.append(y, 0.0), lambda t, y: -y)
    with pytest.raises(PhysverifyError, match=r"step returned a state of shape \(3,\)"):
        broken(zero_source, np.array([1.0, 2.0]), 1.0, 4)


# --- from_second_order_step ----------------------------------------------------------------------
def _verlet(x, v, t, h, accel):  # type: ignore[no-untyped-def]
    a = accel(x, v, t)
    v_half = v + 0.5 * h * a
    x_new = x + h * v_half
    return x_new, v_half + 0.5 * h * accel(x_new, v_half, t + h)


def test_from_second_order_step_keeps_the_state_as_positions_then_velocities() -> None:
    integrate = from_second_order_step(_verlet, lambda x, v, t: np.zeros_like(x))
    end = integrate(zero_source, np.array([0.0, 1.0, 2.0, -1.0]), 1.5, 10)  # x = (0, 1), v = (2, -1)
    assert end == pytest.approx([3.0, -0.5, 2.0, -1.0])


def test_from_second_order_step_converges_on_a_manufactured_solution_with_the_forcing_in_the_acceleration() -> None:
    mms = ManufacturedODE(lambda t: np.array([np.sin(t) + t**2, np.cos(t) + 2 * t]),
                          lambda t, y: np.array([y[1], -4.0 * y[0]]))
    integrate = from_second_order_step(_verlet, lambda x, v, t: -4.0 * x)
    assert mms_order_study(integrate, mms, 1.0, [20, 40, 80, 160], 2).status == "PASS"


def test_from_second_order_step_refuses_a_manufactured_velocity_that_is_not_the_derivative_of_the_position() -> None:
    mms = ManufacturedODE(lambda t: np.array([np.sin(t), 3.0 + 0 * t]), lambda t, y: np.array([y[1], -y[0]]))
    integrate = from_second_order_step(_verlet, lambda x, v, t: -x)
    with pytest.raises(PhysverifyError, match="not the derivative of the manufactured position"):
        integrate(mms.forcing, mms.value(0.0), 1.0, 10)


def test_from_second_order_step_refuses_an_odd_state_and_a_step_that_returns_one_array() -> None:
    integrate = from_second_order_step(_verlet, lambda x, v, t: -x)
    with pytest.raises(PhysverifyError, match="even number of components"):
        integrate(zero_source, np.array([1.0, 2.0, 3.0]), 1.0, 4)
    single = from_second_order_step(lambda x, v, t, h, a: x, lambda x, v, t: -x)
    with pytest.raises(PhysverifyError, match=r"pair \(x, v\)"):
        single(zero_source, np.array([1.0, 0.0, 2.0, 0.0, 1.0, 0.0]), 1.0, 4)


# --- whole claims through physverify confirm ----------------------------------------------------
RK4_CODE = '''\
"""A one-step RK4 routine and the code's own driver loop (written for the tests)."""
import numpy as np


def rhs(t, y):
    """The harmonic oscillator x'' = -4 x as a first-order system."""
    return np.array([y[1], -4.0 * y[0]])


def rk4_step(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
    k3 = f(t + 0.5 * h, y + 0.5 * h * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def simulate(y0, t_end, dt):
    """The code's own loop: it adds dt to t, so for some dt it takes one step too many."""
    t, y = 0.0, np.array(y0, dtype=float)
    while t < t_end:
        y = rk4_step(rhs, t, y, dt)
        t += dt
    return y
'''
# A stage-time slip: k3 at t + h instead of t + h/2 (Butcher, Numerical Methods for ODEs, sec. 23).
RK4_SLIP = RK4_CODE.replace("k3 = f(t + 0.5 * h,", "k3 = f(t + h,")
# A wrong increment: k4 from k2 instead of k3, which shows on an autonomous problem too.
RK4_INCREMENT = RK4_CODE.replace("k4 = f(t + h, y + h * k3)", "k4 = f(t + h, y + h * k2)")

CLAIM_HEAD = '''\
"""A claim written for the tests."""
import numpy as np

from physverify import (Check, ManufacturedODE, exact_steps, from_second_order_step, from_step, mms_order_study,
                        reference_study)

import {module}

CLAIM = {{
    "text": "a claim for the tests",
    "source": "a test",
    "file": "{module}.py",
    "line": 1,
    "reference": "{reference}",
    "impact": "used",
}}
'''

FROM_STEP_CLAIM = '''
def rhs_ref(t, y):
    return np.array([y[1], -4.0 * y[0]])  # x'' = -4 x (Taylor, Classical Mechanics, sec. 5.2)


def study(u):
    integrate = from_step(rk4.rk4_step, rk4.rhs)
    return mms_order_study(integrate, ManufacturedODE(u, rhs_ref), 1.0, [10, 20, 40, 80], 4)


def control():
    # the free oscillation is a solution of the code's own equation: the forcing is zero, and
    # a stage evaluated at the wrong time changes nothing on an autonomous problem
    return Check("mms", "RK4 is fourth order on the free oscillation",
                 lambda: study(lambda t: np.array([np.cos(2 * t), -2 * np.sin(2 * t)])))


def checks():
    return [Check("mms", "RK4 is fourth order on a forced oscillation",
                  lambda: study(lambda t: np.array([np.cos(t), -np.sin(t)])))]
'''


def confirm(cli: Callable[..., Ran], tmp_path: Path, module: str, code: str, body: str,
            reference: str = "a book") -> Ran:
    """Write the code and a claim about it into tmp_path and run ``physverify confirm`` on it.

    In this process, through the cli fixture: the tests read the printed verdict; the claim runs in its own child.
    """
    (tmp_path / f"{module}.py").write_text(code, encoding="utf-8")
    claim = CLAIM_HEAD.format(module=module, reference=reference) + textwrap.dedent(body)
    (tmp_path / "claim.py").write_text(claim, encoding="utf-8")
    return cli("confirm", "claim.py", "--trusted", "--ledger", "ledger.jsonl", cwd=tmp_path)


def verdict(ran: Ran) -> str:
    """The verdict word(s) of confirm's verdict line (after the control and check lines)."""
    match = re.match(r"(confirmed|rejected|not decidable)", verdict_line(ran.stdout))
    assert match, ran.stdout + ran.stderr
    return match.group(1)


@pytest.mark.parametrize(("code", "expected", "code_exit"), [(RK4_CODE, "rejected", 0), (RK4_SLIP, "confirmed", 1)],
                         ids=["correct", "slip"])
def test_from_step_rejects_a_correct_rk4_step_and_confirms_a_stage_time_slip(tmp_path: Path, code: str,
                                                                              expected: str, code_exit: int,
                                                                              cli: Any) -> None:
    ran = confirm(cli, tmp_path, "rk4", code, FROM_STEP_CLAIM, "Butcher, Numerical Methods for ODEs, sec. 23")
    assert verdict(ran) == expected and ran.returncode == code_exit, ran.stdout
    assert "control PASS" in ran.stdout


VERLET_CODE = '''\
"""A velocity Verlet step with the acceleration passed in, as MD codes write it (for the tests)."""


def accel(x, v, t, omega=2.0):
    return -omega**2 * x


def verlet_step(x, v, t, h, accel):
    a = accel(x, v, t)
    v_half = v + 0.5 * h * a
    x_new = x + h * v_half
    a_new = accel(x_new, v_half, t + h)
    return x_new, v_half + 0.5 * h * a_new
'''
# The old acceleration in the second half kick: first order (Hairer, Lubich and Wanner, sec. I.1.4).
VERLET_STALE = VERLET_CODE.replace("0.5 * h * a_new", "0.5 * h * a")

SECOND_ORDER_CLAIM = '''
def study(omega, u):
    integrate = from_second_order_step(verlet.verlet_step, lambda x, v, t: verlet.accel(x, v, t, omega))
    rhs_ref = lambda t, y: np.array([y[1], -omega**2 * y[0]])  # x'' = -omega**2 x
    return mms_order_study(integrate, ManufacturedODE(u, rhs_ref), 1.5, [25, 50, 100, 200], 2)


def control():
    # no force: the old and the new acceleration are both zero, so the claimed slip cannot show
    return Check("mms", "free particle", lambda: study(0.0, lambda t: np.array([0.25 + 0.5 * t, 0.5 + 0 * t])))


def checks():
    return [Check("mms", "Verlet is second order on a forced oscillator",
                  lambda: study(2.0, lambda t: np.array([np.sin(t) + t**2, np.cos(t) + 2 * t])))]
'''


@pytest.mark.parametrize(("code", "expected"), [(VERLET_CODE, "rejected"), (VERLET_STALE, "confirmed")],
                         ids=["correct", "stale"])
def test_from_second_order_step_rejects_a_correct_verlet_and_confirms_a_stale_acceleration(tmp_path: Path, code: str,
                                                                                          expected: str,
                                                                                          cli: Any) -> None:
    ran = confirm(cli, tmp_path, "verlet", code, SECOND_ORDER_CLAIM, "Hairer, Lubich and Wanner, GNI, sec. I.1.4")
    assert verdict(ran) == expected, ran.stdout
    assert "control EXACT" in ran.stdout


# The code's own loop takes 11 steps for n = 10 and 81 for n = 80; a study through it cannot be right.
OWN_LOOP_CLAIM = '''
def rhs_ref(t, y):
    return np.array([y[1], -4.0 * y[0]])  # x'' = -4 x (Taylor, Classical Mechanics, sec. 5.2)


def through_own_loop(source, y0, t_end, n_steps):
    return rk4.simulate(y0, t_end, t_end / n_steps)


def through_exact_steps(source, y0, t_end, n_steps):
    times, y = exact_steps(t_end, n_steps), np.array(y0, dtype=float)
    for t0, t1 in zip(times[:-1], times[1:]):
        y = rk4.rk4_step(rk4.rhs, t0, y, t1 - t0)
    return y


INTEGRATE = {integrate}


def control():
    return Check("reference", "no motion from rest", lambda: reference_study(INTEGRATE, rhs_ref, [0.0, 0.0], 1.0,
                                                                           [10, 20, 40, 80], 4))


def checks():
    return [Check("reference", "RK4 is fourth order on the oscillator",
                  lambda: reference_study(INTEGRATE, rhs_ref, [1.0, 0.0], 1.0, [10, 20, 40, 80], 4))]
'''


def test_a_code_whose_own_loop_overshoots_is_misjudged_through_its_loop(tmp_path: Path, cli: Any) -> None:
    """The motivating case of issue 18: the study saw 11 and 81 steps and could not reject a correct RK4."""
    ran = confirm(cli, tmp_path, "rk4", RK4_CODE, OWN_LOOP_CLAIM.format(integrate="through_own_loop"))
    assert verdict(ran) != "rejected", ran.stdout


@pytest.mark.parametrize(("code", "expected"), [(RK4_CODE, "rejected"), (RK4_INCREMENT, "confirmed")],
                         ids=["correct", "increment"])
def test_the_same_code_is_judged_rightly_when_the_claim_drives_its_step_through_exact_steps(
        tmp_path: Path, code: str, expected: str, cli: Any) -> None:
    ran = confirm(cli, tmp_path, "rk4", code, OWN_LOOP_CLAIM.format(integrate="through_exact_steps"))
    assert verdict(ran) == expected, ran.stdout


# --- compiled steps: Numba's @njit and jax.jit, called as their own users call them ------------
def _rk4_source(k3_time: str) -> str:
    return f"""
def rk4(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f({k3_time}, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
"""


def _compiled_rk4(k3_time: str) -> Any:
    numba = pytest.importorskip("numba")
    space: dict[str, Any] = {}
    exec(_rk4_source(k3_time), space)  # noqa: S102 - the test's own stepper, with the stage time to test
    return numba.njit(space["rk4"])


@pytest.mark.parametrize(("k3_time", "status"), [("t + h / 2", "PASS"), ("t + h", "FAIL")])
def test_an_njit_rk4_through_from_step_is_judged_as_compiled_code(k3_time: str, status: str) -> None:
    """Numba refused the adapter's Python closure (TypingError), so users fell back to .py_func: not the code."""
    numba = pytest.importorskip("numba")
    step = _compiled_rk4(k3_time)
    rhs = numba.njit(lambda t, y: -y)
    mms = ManufacturedODE(lambda t: np.array([np.cos(3 * t) + t * t]), lambda t, y: -y)
    result = mms_order_study(from_step(step, rhs), mms, 1.0, [8, 16, 32, 64], 4)
    assert result.status == status
    assert step.signatures and rhs.signatures  # what ran is the compiled code, the rhs too


def test_an_njit_step_with_a_plain_python_rhs_still_runs_compiled() -> None:
    step = _compiled_rk4("t + h / 2")
    mms = ManufacturedODE(lambda t: np.array([np.cos(3 * t) + t * t]), lambda t, y: -y)
    assert mms_order_study(from_step(step, lambda t, y: -y), mms, 1.0, [8, 16, 32, 64], 4).status == "PASS"
    assert step.signatures


def test_a_jax_jit_step_with_f_static_runs_and_one_that_traces_f_says_what_to_pass_in_one_line() -> None:
    jax = pytest.importorskip("jax")
    space: dict[str, Any] = {}
    exec(_rk4_source("t + h / 2"), space)  # noqa: S102 - the test's own stepper
    mms = ManufacturedODE(lambda t: np.array([np.cos(3 * t) + t * t]), lambda t, y: -y)
    static = jax.jit(space["rk4"], static_argnums=0)
    correct = mms_order_study(from_step(static, lambda t, y: -y), mms, 1.0, [4, 8, 16, 32], 4)
    assert correct.status != "FAIL" and "single (float32) precision" in correct.message  # x64 off: float32 floor
    exec(_rk4_source("t + h"), space)  # noqa: S102 - the stage at the wrong time
    wrong = mms_order_study(from_step(jax.jit(space["rk4"], static_argnums=0), lambda t, y: -y), mms, 1.0,
                            [4, 8, 16, 32], 4)
    assert wrong.status == "FAIL"
    with pytest.raises(PhysverifyError) as caught:
        from_step(jax.jit(space["rk4"]), lambda t, y: -y)(lambda t: 0.0, np.array([1.0]), 1.0, 4)
    assert "static_argnums=0" in str(caught.value) and "\n" not in str(caught.value)


def test_from_second_order_step_keeps_a_float32_code_in_float32_from_step_to_step() -> None:
    seen: list[np.dtype[Any]] = []

    def verlet32(x: np.ndarray, v: np.ndarray, t: float, h: float, accel: Any) -> tuple[np.ndarray, np.ndarray]:
        seen.append(np.asarray(x).dtype)
        x, v = np.float32(1) * np.asarray(x, np.float32), np.asarray(v, np.float32)
        half = v + np.float32(h / 2) * np.asarray(accel(x, v, t), np.float32)
        x = x + np.float32(h) * half
        return x, half + np.float32(h / 2) * np.asarray(accel(x, v, t + h), np.float32)

    end = from_second_order_step(verlet32, lambda x, v, t: -x)(lambda t: 0.0, np.array([1.0, 0.0]), 1.0, 8)
    assert end.dtype == np.float32 and seen[1:] == [np.dtype(np.float32)] * 7


def test_an_njit_verlet_through_from_second_order_step_runs_compiled_and_is_second_order() -> None:
    numba = pytest.importorskip("numba")

    @numba.njit
    def verlet(x: np.ndarray, v: np.ndarray, t: float, h: float, accel: Any) -> tuple[np.ndarray, np.ndarray]:
        half = v + h / 2 * accel(x, v, t)
        x = x + h * half
        return x, half + h / 2 * accel(x, half, t + h)

    spring = numba.njit(lambda x, v, t: -4.0 * x)
    mms = ManufacturedODE(lambda t: np.array([np.sin(t) + t * t, np.cos(t) + 2 * t]),
                          lambda t, y: np.array([y[1], -4.0 * y[0]]))
    result = mms_order_study(from_second_order_step(verlet, spring), mms, 1.0, [8, 16, 32, 64], 2)
    assert result.status == "PASS" and verlet.signatures and spring.signatures
