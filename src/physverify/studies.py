"""Three more studies on the integrate contract of physverify.mms: an independent reference
solver, a conserved quantity, and a patch test.

Each study calls ``integrate(source, y0, t_end, n_steps) -> state at t_end`` (time
starts at 0), measures one number per resolution within the check's budget, and judges
the numbers with physverify.order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from physverify.checks import EXACT, OrderResult
from physverify.errors import PhysverifyError
from physverify.mms import Integrate, ManufacturedODE, finish_study, max_error, measure_resolutions
from physverify.order import check_exact

# solve_ivp's global error is a small multiple of rtol times the solution's size, so
# differences below this multiple of rtol cannot be told apart from the reference's own
# error and are treated as the noise floor.
_REFERENCE_NOISE = 100.0


def _zero_source(y0: np.ndarray) -> Callable[[float], np.ndarray]:
    """A source that adds nothing, so the code integrates its own equation unchanged."""
    zeros = np.zeros_like(y0)
    return lambda t: zeros


def reference_solution(rhs: Callable[[float, np.ndarray], Any], y0: np.ndarray, t_end: float,
                       rtol: float = 1e-13) -> np.ndarray:
    """The state at t_end from scipy's DOP853 (Hairer, Norsett and Wanner, Solving ODEs I, ch. II) at ``rtol``."""
    from scipy.integrate import solve_ivp  # imported here: scipy.integrate costs ~0.3 s at every CLI start

    atol = rtol * max(1.0, float(np.max(np.abs(y0)))) * 1e-3
    solution = solve_ivp(rhs, (0.0, t_end), y0, method="DOP853", rtol=rtol, atol=atol)
    if not solution.success:
        raise PhysverifyError(f"the reference solver (solve_ivp, DOP853) failed: {solution.message}")
    return np.asarray(solution.y[:, -1], dtype=float)


def reference_study(
    integrate: Integrate,
    rhs: Callable[[float, np.ndarray], Any],
    y0: Sequence[float] | np.ndarray,
    t_end: float,
    ns: Sequence[int],
    expected_order: float,
    *,
    rtol: float = 1e-13,
    **check_order_kwargs: Any,
) -> OrderResult:
    """The observed order of ``integrate`` against scipy's DOP853 solving ``rhs`` at tolerance ``rtol``.

    ``rhs(t, y)`` is the reference right-hand side written from the physics; ``integrate``
    is called with a zero source. Assumes the solution is smooth on [0, t_end] and that
    rtol (1e-13 by default, 1e-12 at most) makes the reference far more accurate than the
    code; the noise floor is raised to 100 * rtol. A PASS shows the code converges at the
    expected order to the same solution as an independent solver of the reference
    equation; it does not prove the reference equation is the right physics.
    """
    if rtol > 1e-12:
        raise PhysverifyError(f"reference_study needs rtol 1e-12 or tighter for an accurate reference, got {rtol:g}")
    start = np.asarray(y0, dtype=float)
    exact = reference_solution(rhs, start, t_end, rtol)
    source = _zero_source(start)
    sweep = measure_resolutions(ns, lambda n: max_error(integrate(source, start.copy(), t_end, n), exact))
    check_order_kwargs.setdefault("scale", float(max(np.max(np.abs(start)), np.max(np.abs(exact)))))
    check_order_kwargs["floor"] = max(check_order_kwargs.get("floor", 1e-12), _REFERENCE_NOISE * rtol)
    return finish_study(sweep, t_end, expected_order, **check_order_kwargs)


def invariant_study(
    integrate: Integrate,
    invariant: Callable[[np.ndarray], float],
    y0: Sequence[float] | np.ndarray,
    t_end: float,
    ns: Sequence[int],
    expected_order: float,
    **check_order_kwargs: Any,
) -> OrderResult:
    """Whether the drift |I(y(t_end)) - I(y0)| of a conserved quantity shrinks at least at ``expected_order``.

    ``invariant(y)`` is the quantity the physics conserves (energy, momentum, a norm),
    written from the physics; ``integrate`` is called with a zero source. There is no
    upper limit on the order (``tol_high`` defaults to infinity), and a drift at
    round-off at every resolution is EXACT (the method conserves it exactly, as
    symplectic or Gauss methods do for quadratic invariants). A PASS shows the drift
    shrinks fast enough at t_end; it does not prove the trajectory right (a wrong but
    conservative force passes), and a drift that oscillates can be small at a special t_end.
    """
    start = np.asarray(y0, dtype=float)
    initial = float(invariant(start))
    source = _zero_source(start)

    def drift(n: int) -> float:
        end = np.asarray(integrate(source, start.copy(), t_end, n), dtype=float)
        return abs(float(invariant(end)) - initial)

    sweep = measure_resolutions(ns, drift)
    check_order_kwargs.setdefault("scale", abs(initial))
    check_order_kwargs.setdefault("tol_high", float("inf"))
    result = finish_study(sweep, t_end, expected_order, **check_order_kwargs)
    return replace(result, message=f"drift of the invariant: {result.message}")


def patch_study(
    integrate: Integrate,
    rhs_ref: Callable[[float, np.ndarray], Any],
    intercept: Sequence[float] | np.ndarray,
    slope: Sequence[float] | np.ndarray,
    t_end: float = 1.0,
    ns: Sequence[int] = (4, 8, 16, 32),
    *,
    floor: float = 1e-12,
) -> OrderResult:
    """EXACT when ``integrate`` reproduces the linear solution u(t) = intercept + slope * t to round-off.

    The source s(t) = slope - rhs_ref(t, u(t)) makes u exact for y' = f(t, y) + s(t).
    Every consistent explicit Runge-Kutta method (stage times c_i equal to the row sums
    of its matrix) reproduces a solution linear in t exactly, whatever f is, because each
    stage then sees the slope exactly (Butcher, Numerical Methods for ODEs, ch. 3).
    Assumes the code's right-hand side equals ``rhs_ref``. EXACT shows the stages are
    consistent (right times, right increments); it says nothing about the order, which
    needs a curved solution. FAIL points to a stage at the wrong time or increment.
    """
    a, b = np.asarray(intercept, dtype=float), np.asarray(slope, dtype=float)
    mms = ManufacturedODE(lambda t: a + b * t, rhs_ref, du=lambda t: b)
    exact = mms.value(t_end)
    sweep = measure_resolutions(ns, lambda n: max_error(integrate(mms.forcing, a.copy(), t_end, n), exact))
    scale = float(max(np.max(np.abs(a)), np.max(np.abs(exact))))
    result = check_exact([t_end / n for n in sweep.ns], list(sweep.errors), floor=floor, scale=scale)
    if result.status != EXACT:
        result = replace(result, message=result.message + "; every consistent explicit Runge-Kutta method reproduces "
                         "a solution linear in t, so look for a stage evaluated at the wrong time or increment")
    return result if sweep.note is None else replace(result, message=f"{sweep.note}; {result.message}")
