"""Three more studies on the integrate contract of physverify.mms: an independent reference
solver, a conserved quantity, and a patch test.

Each study calls ``integrate(source, y0, t_end, n_steps) -> state at t_end`` (time
starts at 0), measures one number per resolution within the check's budget, and judges
the numbers with physverify.order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

import numpy as np

from physverify._compat import accepts_060, renamed
from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS, Check, OrderResult
from physverify.errors import PhysverifyError
from physverify.mms import (
    Integrate,
    ManufacturedODE,
    Measured,
    max_error,
    measure_resolutions,
    mms_order_study,
    mms_trajectory_study,
    order_sweep,
    precision_floor,
    steps_roundoff,
    step_counts,
)
from physverify.order import check_exact, fit_order, pairwise_orders
from physverify.refine import Refinement, as_list

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



# 0.6.0 refined an RK4 reference by ``ref_factor``; the reference is now DOP853 at ``rtol``,
# so a claim file that still passes it runs unchanged and the value has no effect.
@accepts_060(rhs_ref=renamed("rhs"), ref_factor=lambda value: {})
def reference_study(
    integrate: Integrate,
    rhs: Callable[[float, np.ndarray], Any],
    y0: Sequence[float] | np.ndarray,
    t_end: float,
    ns: Sequence[int] | Refinement,
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

    def measure(n: int) -> Measured:
        state = integrate(source, start.copy(), t_end, n)
        return max_error(state, exact), state

    check_order_kwargs.setdefault("scale", float(max(np.max(np.abs(start)), np.max(np.abs(exact)))))
    check_order_kwargs["floor"] = max(check_order_kwargs.get("floor", 1e-12), _REFERENCE_NOISE * rtol)
    check_order_kwargs.setdefault("refines", "time")
    return order_sweep(ns, measure, lambda n: t_end / n, expected_order, **check_order_kwargs)


@accepts_060(quantity=renamed("invariant"))
def invariant_study(
    integrate: Integrate,
    invariant: Callable[[np.ndarray], float],
    y0: Sequence[float] | np.ndarray,
    t_end: float,
    ns: Sequence[int] | Refinement,
    expected_order: float,
    **check_order_kwargs: Any,
) -> OrderResult:
    """Whether the drift |I(y(t_end)) - I(y0)| of a conserved quantity shrinks at least at ``expected_order``.

    ``invariant(y)`` is the quantity the physics conserves (energy, momentum, a norm),
    written from the physics; ``integrate`` is called with a zero source. There is no
    upper limit on the order (``tol_high`` defaults to None), and a drift at
    round-off at every resolution is EXACT (the method conserves it exactly, as
    symplectic or Gauss methods do for quadratic invariants). A PASS shows the drift
    shrinks fast enough at t_end; it does not prove the trajectory right (a wrong but
    conservative force passes), and a drift that oscillates can be small at a special t_end.
    """
    start = np.asarray(y0, dtype=float)
    initial = float(invariant(start))
    source = _zero_source(start)

    def drift(n: int) -> Measured:
        raw = integrate(source, start.copy(), t_end, n)  # kept as returned: its precision sets the noise floor
        end = np.asarray(raw, dtype=float)
        return abs(float(invariant(end)) - initial), raw

    scale_given = "scale" in check_order_kwargs
    check_order_kwargs.setdefault("scale", abs(initial))
    check_order_kwargs.setdefault("tol_high", None)
    check_order_kwargs.setdefault("refines", "time")
    result = order_sweep(ns, drift, lambda n: t_end / n, expected_order, **check_order_kwargs)
    if not scale_given and result.status == INCONCLUSIVE and _LARGER_THAN_SOLUTION in result.message:
        # An invariant whose value is near zero (a parabolic orbit's energy, a total momentum in the
        # centre-of-mass frame) has no size to compare drifts with: finer steps would not help.
        head = result.message[:result.message.index(_LARGER_THAN_SOLUTION)]  # a plan's levels, if any
        return replace(result, message=(
            f"drift of the invariant: {head}the drift is larger than the invariant's own value |I(y0)| = "
            f"{abs(initial):.3g} "
            f"at all but at most one resolution, which for an invariant near zero says nothing about the steps "
            f"(drifts {', '.join(f'{x:.3g}' for x in result.errors)}): pass scale = the size of its terms (the "
            "kinetic energy, the largest momentum)"))
    return replace(result, message=f"drift of the invariant: {result.message}")


_LARGER_THAN_SOLUTION = "the error is larger than the solution itself"


@accepts_060(y0=renamed("intercept"))
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
    Assumes the code's right-hand side equals ``rhs_ref``. A code that returns float32 (or lower)
    is exact up to its precision: the floor is raised to n eps of the solution for the finest
    n steps. EXACT shows the stages are consistent (right times, right increments); it says
    nothing about the order, which needs a curved solution. FAIL points to a stage at the wrong
    time or increment.
    """
    a, b = np.asarray(intercept, dtype=float), np.asarray(slope, dtype=float)
    mms = ManufacturedODE(lambda t: a + b * t, rhs_ref, du=lambda t: b)
    exact = mms.value(t_end)

    def measure(n: int) -> Measured:
        state = integrate(mms.forcing, a.copy(), t_end, n)  # kept as returned: its precision sets the floor
        return max_error(state, exact), state

    sweep = measure_resolutions(ns, measure)
    scale = float(max(np.max(np.abs(a)), np.max(np.abs(exact))))
    if sweep.eps > float(np.finfo(float).eps) and sweep.ns:
        # A code computing in float32 reproduces the line up to its own round-off, which n steps can
        # grow to n units in the last place (a systematic drift): that is exactness at its precision.
        floor = max(floor, steps_roundoff(sweep.eps, max(sweep.ns)))
    result = check_exact([t_end / n for n in sweep.ns], list(sweep.errors), floor=floor, scale=scale)
    if sweep.eps > float(np.finfo(float).eps) and sweep.ns:
        result = replace(result, message=f"the code returns its solution at machine epsilon {sweep.eps:.3g}, so the "
                         f"floor is n eps of the solution for n = {max(sweep.ns)} steps; {result.message}")
    if result.status != EXACT:
        result = replace(result, message=result.message + "; every consistent explicit Runge-Kutta method reproduces "
                         "a solution linear in t, so look for a stage evaluated at the wrong time or increment")
    return result if sweep.note is None else replace(result, message=f"{sweep.note}; {result.message}")


# --- studies on any measurable error (issue 9) ------------------------------------------
def _order_sweep(ns: Sequence[int] | Refinement, measure: Callable[[int], Measured],
                 h: Callable[[int], float] | None, expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """mms.order_sweep with step size h(n) (1/n by default)."""
    return order_sweep(ns, measure, h if h is not None else (lambda n: 1.0 / n), expected_order, **check_order_kwargs)


def convergence_study(
    error_at: Callable[[int], float],
    ns: Sequence[int] | Refinement,
    expected_order: float,
    *,
    h: Callable[[int], float] | None = None,
    **check_order_kwargs: Any,
) -> OrderResult:
    """The observed order of any error you can compute at resolution n, judged by check_order.

    ``error_at(n)`` returns a norm of the error (>= 0) at resolution n: grid points, cells,
    steps or steps along a refinement_path; ``h(n)`` is the step size it stands for (1/n
    by default). ``ns`` is a list, or a refine() plan refined until the verdict holds with
    one more level. Pass ``scale`` (the size of the solution) so that errors larger than the
    solution are recognised as far too coarse. ``error_at`` may return the pair ``(error,
    solution)``, the code's solution at the same points at every n (a nested grid restricted
    to the coarsest one): the study then also sees whether the solution converges, but to
    another problem's solution (a FAIL), or has not started to converge (a dissipative scheme
    that loses the whole solution at coarse steps: INCONCLUSIVE). Given errors alone, an
    error that is the same at every level is judged by check_order alone; pass
    ``refines="space"`` or ``"path"`` (default "steps") for messages that fit the study. A PASS shows the error falls like
    h**expected_order at these resolutions; it does not show which term of the scheme
    limits the order, nor that the error is measured against the right solution.
    """
    check_order_kwargs.setdefault("refines", "steps")
    return _order_sweep(ns, lambda n: _measured(error_at(n)), h, expected_order, **check_order_kwargs)


def _measured(value: Any) -> Measured:
    """An error_at's value as the sweep takes it: a float, or the pair (error, solution at fixed points)."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise PhysverifyError(f"error_at returned a tuple of {len(value)} items; return the error, or the pair "
                                  "(error, solution at the same points at every n)")
        return float(value[0]), np.asarray(value[1])  # its own precision: a float32 code has float32 round-off
    return float(value)


def self_convergence_study(
    solve: Callable[[int], Any],
    ns: Sequence[int] | Refinement,
    expected_order: float,
    **check_order_kwargs: Any,
) -> OrderResult:
    """The observed order from the differences of consecutive levels: no exact solution needed.

    ``solve(n)`` returns the solution at resolution n at the SAME physical points for
    every n (restrict a nested grid to the coarsest one: with nx = 16, 32, 64 cells,
    return ``u[::nx // 16]``). ``ns`` (a list or a refine() plan) must refine by a constant
    ratio, and four or more levels give the three differences a settled order needs.
    ``scale`` defaults to the size of the coarsest solution not beyond a stability limit
    (``_stable_size``). Its
    errors are themselves the differences of the code's solutions, so the "converges to
    something else" test of the other studies has nothing more to look at here. The difference of two
    consecutive levels is C h**p (1 - r**-p) up to higher-order terms (Richardson;
    Roache, Verification and Validation in Computational Science and Engineering, ch. 5),
    so it falls at the order of the error itself; hs are the coarser step of each pair.
    Refining only the time step at a fixed space grid measures the time order alone,
    because the space error is the same at every level and cancels in the differences.
    A PASS shows the solutions converge at the expected order to SOME limit; it does not
    show that the limit is the right solution (a wrong model converges as well as a right
    one), which needs a reference or a manufactured solution.
    """
    order = step_counts(list(ns.levels()) if isinstance(ns, Refinement) else ns)
    ratios = [b / a for a, b in pairwise(order)]
    if len(order) < 3 or max(ratios) - min(ratios) > 1e-9 * max(ratios):
        raise PhysverifyError(f"self_convergence_study needs three or more resolutions refined by one constant "
                              f"ratio, got {order}")
    solutions: dict[int, np.ndarray] = {}
    precision = [float(np.finfo(float).eps)]

    def solution(n: int) -> np.ndarray:
        if n not in solutions:  # each level is solved once, though it appears in two differences
            raw = np.asarray(solve(n))
            if np.issubdtype(raw.dtype, np.floating):
                precision[0] = max(precision[0], float(np.finfo(raw.dtype).eps))
            solutions[n] = raw.astype(float)
        return solutions[n]

    finer = dict(pairwise(order))
    # The size of the solution sets the noise floor; the coarsest level is the cheapest to ask,
    # unless it is beyond a stability limit (see _stable_size).
    if "scale" not in check_order_kwargs:
        check_order_kwargs["scale"] = _stable_size(solution, order)
    if precision[0] > float(np.finfo(float).eps):
        # A single-precision code: its differences level off at its own round-off (see precision_floor).
        check_order_kwargs["floor"] = max(float(check_order_kwargs.get("floor", 1e-12)),
                                          precision_floor(precision[0], order[-1]))
    check_order_kwargs.setdefault("refines", "steps")
    # Level n is the difference between n and the next finer level, so the last level of the
    # plan only ever appears as the finer one: the plan of differences stops one level short.
    levels: Sequence[int] | Refinement = replace(ns, max_n=order[-2]) if isinstance(ns, Refinement) else order[:-1]
    result = _order_sweep(levels, lambda n: max_error(solution(finer[n]), solution(n), "solve"), None,
                          expected_order, **check_order_kwargs)
    return replace(result, message=f"differences of consecutive levels: {result.message}")


# Two consecutive levels whose solutions differ in size by less than this factor are within any
# stability limit. A coarse level beyond it (RK4 at lambda h = -6 grows to 1e41) would set a noise
# floor that hides every difference, and the study would say "use coarser steps" (or a plan would
# stop "at round-off") where finer steps are needed.
_BLOWN_UP = 10.0


def _stable_size(solution: Callable[[int], np.ndarray], order: list[int]) -> float:
    """The size of the coarser of the first two consecutive levels whose sizes agree within _BLOWN_UP.

    Levels are solved coarsest first only as far as that pair (the study needs them anyway); when
    no pair agrees, the smallest finite size of the levels (1.0 if none is finite).
    """
    sizes: list[float] = []
    for n in order:
        sizes.append(float(np.max(np.abs(solution(n)), initial=0.0)))
        if len(sizes) >= 2 and all(np.isfinite(sizes[-2:])) and \
                max(sizes[-2:]) <= _BLOWN_UP * min(sizes[-2:]):
            return sizes[-2]
    finite = [x for x in sizes if np.isfinite(x)]
    return min(finite) if finite else 1.0


def refinement_path(nxs: Sequence[int], *, space_order: float, time_order: float, nt0: int) -> list[int]:
    """Time step counts for the space resolutions ``nxs`` with dt ~ dx**(space_order / time_order).

    ``nt0`` steps go with ``nxs[0]``; the others follow nt = nt0 * (nx / nxs[0])**(space_order
    / time_order), rounded to the nearest integer. Along this path the space error
    C_x dx**space_order and the time error C_t dt**time_order fall together, so the error
    falls like dx**space_order when both orders are right, and a lower order in either
    term shows as a lower order in dx (give h = 1/nx to convergence_study). The path
    hides a defect when the ratio is too large for it: with dt ~ dx**2 (dt/dx**2 fixed, the
    path explicit schemes need for stability), a first-order time error falls like dx**2
    and passes as second order in space. A rounding that gives two resolutions the same
    step count (a small nt0) is a PhysverifyError: the path would not refine time there.
    """
    counts = step_counts(nxs)
    if list(nxs) != counts:
        raise PhysverifyError(f"refinement_path needs increasing space resolutions, got {list(nxs)!r}")
    if not (space_order > 0 and time_order > 0 and int(nt0) == nt0 and nt0 > 0):
        raise PhysverifyError(f"refinement_path needs positive orders and a positive integer nt0, got space_order="
                              f"{space_order!r}, time_order={time_order!r}, nt0={nt0!r}")
    steps = [path_steps(nx, space_order=space_order, time_order=time_order, nx0=counts[0], nt0=nt0) for nx in counts]
    # Rounding a small nt0 * (nx / nx0)**(space_order / time_order) can give one step count to two
    # space resolutions: the time error then does not fall between them, and a correct code's error
    # levels off on a path that is not the one asked for.
    same = [(a, b) for (a, b), (m, n) in zip(pairwise(counts), pairwise(steps)) if m == n]
    if same:
        raise PhysverifyError(f"refinement_path gives the step counts {steps} for nx = {counts}: nx = {same[0][0]} and "
                              f"{same[0][1]} get the same number of steps, so the time step does not shrink between "
                              "them; give a larger nt0")
    return steps


def path_steps(nx: int, *, space_order: float, time_order: float, nx0: int, nt0: int) -> int:
    """The time step count for one space resolution ``nx`` on the refinement path through (nx0, nt0).

    nt = nt0 * (nx / nx0)**(space_order / time_order), rounded to the nearest integer (at
    least 1): the same count refinement_path gives for nx in a list starting at nx0. Use it
    in an ``error_at(nx)`` served by a refine() plan, whose levels are not known in advance::

        convergence_study(lambda nx: error(nx, path_steps(nx, space_order=2, time_order=1, nx0=8, nt0=4)),
                          refine(8, max_n=512), 2)
    """
    if not (space_order > 0 and time_order > 0 and int(nt0) == nt0 and nt0 > 0 and int(nx0) == nx0 and nx0 > 0
            and int(nx) == nx and nx > 0):
        raise PhysverifyError(f"path_steps needs positive orders and positive integers nx, nx0 and nt0, got nx={nx!r}, "
                              f"space_order={space_order!r}, time_order={time_order!r}, nx0={nx0!r}, nt0={nt0!r}")
    return max(1, round(nt0 * (nx / nx0) ** (space_order / time_order)))


# A growth exponent of the largest deviation below this is bounded; from 1 - this to 1 +
# this it is linear (secular); in between, or between linear and _FASTER, it is undecided
# (for a bounded expectation, every exponent from 1 - this up is growth).
_BOUNDED_EXPONENT = 0.25
_FASTER_EXPONENT = 1.75
_DRIFT_FLOOR = 1e-12


def drift_study(deviation_at: Callable[[float], float], t_ends: Sequence[float], *,
                expect: str = "bounded") -> OrderResult:
    """Whether the largest deviation of an invariant up to time T stays bounded or grows linearly in T.

    ``deviation_at(T)`` returns max |I(t) - I(0)| over 0 <= t <= T at a fixed step (energy,
    a norm, an angular momentum), with I written from the physics. The growth exponent g
    is the least-squares slope of log deviation on log T over ``t_ends`` (three or more,
    long against the period of the motion). A symplectic method keeps the energy error
    bounded over exponentially long times (g near 0); a non-symplectic one drifts
    secularly (g near 1) or faster (Hairer, Lubich and Wanner, Geometric Numerical
    Integration, ch. IX and X). ``expect="bounded"``: PASS when g < 0.25, FAIL when g >=
    0.75.  ``expect="linear"``: PASS when g is within
    0.25 of 1, FAIL when it is bounded or grows faster than T**1.75. The exponent
    between the two longest end times must fall in the same class as g; anything else is
    INCONCLUSIVE (add longer end times), and so is a bounded-looking g whose deviation
    still rises at a steady slope (a drift under a larger bounded oscillation, _hidden_drift). Deviations at round-off everywhere are EXACT.
    A PASS for "bounded" shows no drift up to the largest T at this step; it does not
    prove the method symplectic, and a bounded error can still be large.
    The result keeps the end times in ``hs`` and the deviations in ``errors``.
    """
    if expect not in ("bounded", "linear"):
        raise PhysverifyError(f"drift_study expects 'bounded' or 'linear', not {expect!r}")
    times = sorted(float(t) for t in t_ends)
    if len(times) < 3 or times[0] <= 0 or len(set(times)) != len(times):
        raise PhysverifyError(f"drift_study needs three or more distinct positive end times, got {list(t_ends)!r}")
    deviations = [abs(float(deviation_at(t))) for t in times]
    expected = 0.0 if expect == "bounded" else 1.0
    status, message, fitted = _judge_drift(times, deviations, expect)
    return OrderResult(status, message, expected, fitted, tuple(times), tuple(deviations))


def _judge_drift(times: list[float], deviations: list[float], expect: str) -> tuple[str, str, float | None]:
    span = f"over T = {times[0]:g} to {times[-1]:g}"
    if not all(np.isfinite(deviations)):
        return FAIL, (f"the deviation of the invariant is not finite by T = {times[-1]:g}: it grows without bound "
                       f"(expected {expect})"), None
    if all(d <= _DRIFT_FLOOR for d in deviations):
        return EXACT, f"deviation of the invariant below {_DRIFT_FLOOR:g} at every end time; no drift measurable", None
    if min(deviations) <= 0.0:
        return INCONCLUSIVE, (f"the deviation of the invariant is zero at some end times {span}, so no growth can be "
                              "measured; start from a state where the invariant is not trivially kept"), None
    g = fit_order(times, deviations)
    last = pairwise_orders(times, deviations)[-1]
    head = f"the largest deviation of the invariant grows like T**{g:.2f} {span} (expected {expect})"
    kind = _growth_kind(g, expect), _growth_kind(last, expect)
    if kind[0] != kind[1]:
        return INCONCLUSIVE, (f"{head}, but between the two longest end times it grows like T**{last:.2f}: the "
                              f"growth has not settled; add end times longer than T = {times[-1]:g}"), g
    if kind[0] == "bounded" and _hidden_drift(times, deviations):
        return INCONCLUSIVE, (f"{head}, but the deviation still rises in proportion to T (by "
                              f"{deviations[-1] - deviations[0]:.3g}, at a steady slope), as a secular drift under a "
                              "larger bounded oscillation does (a non-symplectic method at a small step): add end "
                              f"times longer than T = {times[-1]:g}, until the drift dominates or the rise stops"), g
    if kind[0] == "between":
        return INCONCLUSIVE, (f"{head}, between the exponents of bounded (0), linear (1) and faster growth (1.75 "
                              f"or more): add end times longer than T = {times[-1]:g} to tell them apart"), g
    if kind[0] == expect:
        return PASS, head, g
    return FAIL, f"{head}: {_DRIFT_MEANING[kind[0] if g < 1.0 + _BOUNDED_EXPONENT else 'faster than linear']}", g


# A bounded-looking growth exponent can hide a drift: D(T) = B + eps T has exponent eps T / (B + eps T),
# below 0.25 while the drift is under a third of the bounded part B, which a non-symplectic method's
# per-orbit oscillation of the energy can be at a small step. A bounded maximum deviation stops
# rising, or rises ever more slowly; B + eps T rises at a steady slope. A rise of this fraction of
# the last deviation, whose slope between the two longest end times is at least half the slope
# between the two shortest, is not yet "bounded".
_HIDDEN_RISE = 0.05
_STEADY_SLOPE = 0.5


def _hidden_drift(times: list[float], deviations: list[float]) -> bool:
    """Whether the deviations rise steadily in proportion to T, as B + eps T does (see _HIDDEN_RISE)."""
    rise = deviations[-1] - deviations[0]
    first = (deviations[1] - deviations[0]) / (times[1] - times[0])
    last = (deviations[-1] - deviations[-2]) / (times[-1] - times[-2])
    return rise > _HIDDEN_RISE * deviations[-1] and first > 0 and last >= _STEADY_SLOPE * first


def _growth_kind(g: float, expect: str) -> str:
    """The class of a growth exponent; against a bounded expectation, anything from 0.75 up is growth."""
    if g < _BOUNDED_EXPONENT:
        return "bounded"
    if g >= 1.0 - _BOUNDED_EXPONENT and (expect == "bounded" or g < 1.0 + _BOUNDED_EXPONENT):
        return "linear"
    if g >= _FASTER_EXPONENT:
        return "faster than linear"
    return "between"


_DRIFT_MEANING = {
    "bounded": "it stays bounded, as a symplectic method keeps the energy, not the secular drift expected",
    "linear": "a secular drift, which a symplectic method does not show (Hairer, Lubich and Wanner, Geometric "
              "Numerical Integration, sec. IX.8)",
    "faster than linear": "it grows faster than linearly, an instability or a drift that feeds on itself",
}


def ode_checks(
    label: str,
    integrate: Integrate,
    *,
    rhs_ref: Callable[[float, np.ndarray], Any],
    mms: ManufacturedODE,
    y0_free: Sequence[float] | np.ndarray,
    t_end: float,
    ns: Sequence[int] | Refinement,
    order: float,
    quantity: Callable[[np.ndarray], float] | None = None,
    floor: float = 1e-12,
    patch: tuple[Sequence[float], Sequence[float]] | None = None,
    integrate_trajectory: Callable[..., Any] | None = None,
) -> list[Check]:
    """The usual checks of an ODE integrator claimed to be of order ``order``, as a list (from physverify 0.6.0).

    Always: ``mms_order_study`` on ``mms`` and ``reference_study`` of ``rhs_ref`` from
    ``y0_free``. With ``integrate_trajectory`` (the integrate contract, returning every
    state): the largest error over the run (``mms_trajectory_study``). With ``quantity``:
    its drift at the same order (``invariant_study``). With ``patch = (intercept, slope)``:
    the linear solution reproduced exactly (``patch_study``). Each check says what it
    tests; a claim still needs its own control, and each check must test the claim's
    own property (docs/ai-review.md).
    """
    checks = [
        Check("mms", label, lambda: mms_order_study(integrate, mms, t_end, ns, order, floor=floor)),
        Check("reference", label, lambda: reference_study(integrate, rhs_ref, y0_free, t_end, ns, order, floor=floor)),
    ]
    if integrate_trajectory is not None:
        run = integrate_trajectory
        checks.append(Check("mms", f"{label} (whole trajectory)",
                            lambda: mms_trajectory_study(run, mms, t_end, ns, order, floor=floor)))
    if quantity is not None:
        conserved = quantity
        checks.append(Check("invariant", label,
                            lambda: invariant_study(integrate, conserved, y0_free, t_end, ns, order, floor=floor)))
    if patch is not None:
        intercept, slope = patch
        # A patch test needs a few levels, not a refinement: the first four of a plan.
        patch_ns = as_list(ns)[:4] if isinstance(ns, Refinement) else ns
        checks.append(Check("patch", label, lambda: patch_study(integrate, rhs_ref, intercept, slope, t_end, patch_ns)))
    return checks
