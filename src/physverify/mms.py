"""The method of manufactured solutions for ODE integrators, and the budgeted sweep over resolutions.

Choose any smooth u(t), add the forcing s(t) = u'(t) - f(t, u(t)) to the right-hand
side, and u is the exact solution of y' = f(t, y) + s(t) (Roache, Verification and
Validation in Computational Science and Engineering, ch. 3; Salari and Knupp, Sandia
report SAND2000-1444). The error of the code under test is then known exactly at every
step size, whatever f is, so its order of accuracy can be measured.

The integrate contract (DESIGN.md, "Public check API"):
``integrate(source, y0, t_end, n_steps) -> state at t_end``: start from ``y0`` at t = 0,
take ``n_steps`` equal steps to ``t_end``, and integrate y' = f(t, y) + source(t), where
f is the code's own right-hand side and ``source(t)`` an additive forcing of the same
shape as y. For ``mms_trajectory_study`` the integrator returns the run instead of the
end state (see ``integrate_run`` there).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Union

import numpy as np

from physverify._compat import accepts_060, renamed
from physverify.arrays import as_array, epsilon, precision_of
from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS, OrderResult, remaining_budget, run_time_left
from physverify.errors import PhysverifyError
from physverify.refine import DEFAULT_MAX_LEVELS, LevelCosts, Refinement
from physverify.order import (
    ROUNDOFF_FACTOR,
    SAME_SPREAD,
    STALL_ORDER,
    STALL_SPAN,
    DOES_NOT_DECREASE,
    check_order,
    pairwise_orders,
    effective_floor,
)

Source = Callable[[float], np.ndarray]
Integrate = Callable[[Source, np.ndarray, float, int], Any]

# Squire and Trapp, SIAM Review 40 (1998) 110: Im(u(t + ih)) / h is the derivative to
# round-off for any h, because no difference of nearby numbers is taken; 1e-20 puts the
# O(h**2) truncation far below machine epsilon.
COMPLEX_STEP = 1e-20


@dataclass(frozen=True)
class ManufacturedODE:
    """A manufactured solution ``u(t)`` for the reference right-hand side ``rhs_ref(t, y)``.

    ``u`` returns the state at time t; without ``du`` it must accept a complex t (use
    numpy functions such as np.sin, not math.sin, and avoid abs, which is not analytic),
    because the derivative is taken with a complex step. ``rhs_ref`` is the right-hand
    side written from the physics, never taken from the code under test.
    """

    u: Callable[[Any], Any]
    rhs_ref: Callable[[float, np.ndarray], Any]
    du: Callable[[float], Any] | None = None

    def value(self, t: float) -> np.ndarray:
        """The manufactured solution u(t) as a float array."""
        return np.asarray(self.u(t), dtype=float)

    def derivative(self, t: float) -> np.ndarray:
        """u'(t): ``du(t)`` when given, else the complex-step derivative Im(u(t + ih)) / h."""
        if self.du is not None:
            return np.asarray(self.du(t), dtype=float)
        try:
            shifted = np.asarray(self.u(t + 1j * COMPLEX_STEP), dtype=complex)
        except TypeError as exc:
            raise PhysverifyError(
                f"the manufactured solution cannot take a complex time ({exc}); write u with numpy functions "
                "(np.sin, not math.sin) or pass du"
            ) from exc
        return np.imag(shifted) / COMPLEX_STEP

    def forcing(self, t: float) -> np.ndarray:
        """The source s(t) = u'(t) - rhs_ref(t, u(t)) that makes u the exact solution."""
        return self.derivative(t) - np.asarray(self.rhs_ref(t, self.value(t)), dtype=float)


# The derivative a manufactured solution's forcing uses (du, or the complex step of u) is
# compared with a central difference of u at a few times: a du with a typo, or a u written
# with abs or np.real (which the complex step differentiates wrongly, without an error),
# gives a forcing for another solution, and a correct code then shows an error that does
# not fall, which would be confirmed as a defect. The difference quotient's own error is
# estimated from two steps (Richardson); a mismatch beyond ten times that estimate and a
# relative 1e-6 is a wrong reference, not a finding.
_DERIVATIVE_SAMPLES = 5
_DERIVATIVE_STEP = 1e-3
_DERIVATIVE_RTOL = 1e-6


def check_derivative(mms: ManufacturedODE, t_end: float) -> None:
    """Raise PhysverifyError when ``mms.derivative`` is not the derivative of ``mms.value`` on [0, t_end].

    Samples ``_DERIVATIVE_SAMPLES`` interior times; at each, compares the derivative with the
    Richardson-extrapolated central difference of u with steps 1e-3 t_end and half that.
    """
    span = abs(float(t_end))
    if not (span > 0 and np.isfinite(span)):
        return
    delta = _DERIVATIVE_STEP * span
    for k in range(_DERIVATIVE_SAMPLES):
        t = float(t_end) * (k + 0.5) / _DERIVATIVE_SAMPLES
        values = [mms.value(t + shift) for shift in (-delta, -delta / 2, delta / 2, delta)]
        if not all(np.all(np.isfinite(v)) for v in values):
            return  # a solution that is not finite near t: the study itself will say so
        wide = (values[3] - values[0]) / (2 * delta)
        narrow = (values[2] - values[1]) / delta
        difference = (4.0 * narrow - wide) / 3.0
        used = mms.derivative(t)
        if used.shape != difference.shape:
            raise PhysverifyError(f"the manufactured derivative has shape {used.shape} at t = {t:g}, but u has shape "
                                  f"{difference.shape}")
        size = max(float(np.max(np.abs(difference), initial=0.0)), float(np.max(np.abs(used), initial=0.0)))
        roundoff = 100.0 * float(np.finfo(float).eps) * max(float(np.max(np.abs(v), initial=0.0)) for v in values) / delta
        allowed = 10.0 * np.abs(narrow - wide) + _DERIVATIVE_RTOL * size + roundoff
        miss = np.abs(used - difference)
        if np.any(miss > allowed):
            i = int(np.argmax(miss - allowed))
            which = "du" if mms.du is not None else "the complex-step derivative of u"
            hint = ("fix du" if mms.du is not None else "write u with analytic numpy functions (no abs, np.real, "
                    "np.maximum, np.round) or pass du")
            raise PhysverifyError(
                f"the manufactured solution's derivative is wrong: {which} gives {float(used.flat[i]):.6g} at t = "
                f"{t:g} (component {i}), but a central difference of u gives {float(difference.flat[i]):.6g}; the "
                f"forcing would make another function the exact solution, so no order can be judged: {hint}")


@dataclass(frozen=True)
class Sweep:
    """The resolutions a budgeted sweep measured: step counts, errors, and a note when it stopped early.

    ``states`` holds the code's own solution at each level when the measure returned one
    (see ``order_sweep``), else None.
    """

    ns: tuple[int, ...]
    errors: tuple[float, ...]
    note: str | None
    states: tuple[np.ndarray, ...] | None = None
    eps: float = float(np.finfo(float).eps)
    roundoff: tuple[float, ...] | None = None  # the round-off of each level, where the study measured it


# What a measure returns: the error at a level, or the error and the code's own solution there.
Measured = Union[float, tuple[float, Any], tuple[float, Any, float]]


def _split(value: Any) -> tuple[float, np.ndarray | None, float, float | None]:
    """The error, the state as floats (or None), the machine epsilon of what the code returned, and a round-off.

    The state is read once through physverify.arrays (any library's array, its dtype kept); its
    precision sets the noise floor. A third item, when a study measured the round-off of its level
    itself (operator_study: the response of a difference quotient to round-off), is passed on.
    """
    if isinstance(value, tuple):
        error, state = value[0], value[1]
        measured = float(value[2]) if len(value) > 2 and value[2] is not None else None
        precision = precision_of(state)
        eps = epsilon(precision) if precision is not None else _EPS64
        return float(error), np.asarray(as_array(state), dtype=float), max(eps, _EPS64), measured
    return float(value), None, _EPS64, None


_EPS64 = float(np.finfo(float).eps)
# A code that computes in single (or half) precision has round-off near its own machine epsilon,
# not float64's: its error levels off near eps32 * |u| and grows with the number of steps (a random
# walk, sqrt(n), or a systematic drift, n eps). Judged against float64's floor that plateau reads as
# a stalled error, and "add finer resolutions" would only add round-off. The floor of such a sweep
# is eps * max(10, sqrt(n)) for its finest n (check_order's floor is raised, never lowered), and the
# round-off of each level is eps * max(10, n) times the solution's size: n steps can each lose one
# unit in the last place in the same direction.
_LOW_PRECISION_FLOOR = 10.0
ROUNDOFF_NOT_USED = "round-off and were not used"


def steps_roundoff(eps: float, n: int) -> float:
    """The round-off n steps at machine epsilon ``eps`` can make (a solution of size 1): n eps, at least 10 eps."""
    return eps * max(_LOW_PRECISION_FLOOR, float(n))


def precision_floor(eps: float, finest: int) -> float:
    """The noise floor (for a solution of size 1) of a code whose states have machine epsilon ``eps``."""
    return eps * max(_LOW_PRECISION_FLOOR, math.sqrt(max(1, finest)))


_NAMES = {"float32": "single (float32)", "float16": "half (float16)", "bfloat16": "bfloat16"}


def _judging(sweep: Sweep, check_order_kwargs: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """check_order's keywords for this sweep, with the floor raised for a low-precision code, and the note saying so.

    The precision is ``precision=`` when the caller gave it (a code that computes in float32 and
    returns float64), else the lowest of what the code returned. A study that measured the
    round-off of its levels (``sweep.roundoff``) passes that; the others pass n steps' n eps.
    """
    kwargs = dict(check_order_kwargs)
    given_precision = kwargs.pop("precision", None)
    eps = epsilon(given_precision) if given_precision is not None else sweep.eps
    if sweep.roundoff is not None and sweep.ns and eps > _EPS64:
        kwargs["roundoff"] = [max(r, eps * _LOW_PRECISION_FLOOR * max(1.0, abs(float(kwargs.get("scale", 1.0)))))
                              for r in sweep.roundoff]
    if not eps > _EPS64 or not sweep.ns:
        return kwargs, None
    given = float(kwargs.get("floor", 1e-12))
    # The round-off that grows with n is per level (below), so the floor itself is that of one level.
    floor = max(given, eps * _LOW_PRECISION_FLOOR)
    if "roundoff" not in kwargs:
        size = max(1.0, abs(float(kwargs.get("scale", 1.0))))
        kwargs["roundoff"] = [steps_roundoff(eps, n) * size for n in sweep.ns]
    kwargs["floor"] = floor
    name = _precision_name(eps, given_precision)
    how = "computes in" if given_precision is not None else "returns its solution in"
    note = (f"the code {how} {name} precision, so round-off is near {eps:.3g} of the solution and the noise floor "
            f"is raised to {floor:.3g} (times the solution's size)")
    return kwargs, note


def _precision_name(eps: float, given: Any) -> str:
    """The precision in words: "single (float32)", "half (float16)", or its machine epsilon."""
    if given is not None:
        dtype = np.dtype(given)
        return _NAMES.get(dtype.name, dtype.name)
    for name, dtype in (("single (float32)", np.float32), ("half (float16)", np.float16)):
        if eps == float(np.finfo(dtype).eps):
            return name
    return "bfloat16" if eps == 2.0 ** -7 else f"a precision of machine epsilon {eps:.3g}"


def measure_resolutions(ns: Sequence[int], measure: Callable[[int], Measured]) -> Sweep:
    """Call ``measure(n)`` for each step count, coarsest first, within the running check's budget.

    Before each resolution after the first, its cost is estimated from the previous ones
    (the cost of a run grows linearly with its number of steps); when it would overrun
    ``physverify.checks.remaining_budget()``, the sweep stops and says so in ``note``.
    ``measure(n)`` returns the error, or a pair (error, the code's solution at n).
    """
    order = step_counts(ns)
    # The budget left as the sweep starts: the check's budget_s less what the check did
    # before. Two significant digits keep that setup time (milliseconds) out of the message.
    budget = remaining_budget()
    done: list[int] = []
    errors: list[float] = []
    states: list[np.ndarray | None] = []
    measured: list[float | None] = []
    seconds_per_step = 0.0
    eps = _EPS64
    for n in order:
        left = remaining_budget()
        if done and left is not None and seconds_per_step * n > left:
            note = f"stopped after {len(done)} of {len(order)} resolutions to stay within the budget of {budget:.2g} s"
            return Sweep(tuple(done), tuple(errors), note, _states(states), eps, _roundoff(measured))
        start = time.monotonic()
        error, state, precision, own = _split(measure(n))
        eps = max(eps, precision)
        errors.append(error)
        states.append(state)
        measured.append(own)
        seconds_per_step = max(seconds_per_step, (time.monotonic() - start) / n)
        done.append(n)
    return Sweep(tuple(done), tuple(errors), None, _states(states), eps, _roundoff(measured))


def _roundoff(measured: list[float | None]) -> tuple[float, ...] | None:
    """The round-off a study measured at each level, when it measured it at every level."""
    return None if not measured or any(r is None for r in measured) else tuple(r for r in measured if r is not None)


def _states(states: list[np.ndarray | None]) -> tuple[np.ndarray, ...] | None:
    """The solutions when every level gave one of one shape, else None (no differences can be taken)."""
    if not states or any(s is None for s in states):
        return None
    shapes = {s.shape for s in states if s is not None}
    return tuple(s for s in states if s is not None) if len(shapes) == 1 else None


def step_counts(ns: Sequence[int]) -> list[int]:
    """The step counts as ints, smallest first; anything but positive integers is a PhysverifyError."""
    counts = [int(n) for n in ns]
    if not counts or any(n <= 0 or n != m for n, m in zip(counts, ns)):
        raise PhysverifyError(f"the step counts must be positive integers, got {list(ns)!r}")
    return sorted(counts)


def finish_study(sweep: Sweep, h: Callable[[int], float], expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """check_order on a sweep, ``h(n)`` the step size of resolution n, with the sweep's budget note in front of the message.

    With the code's solutions in ``sweep.states`` it also looks at their differences
    (``judge_sweep``): a code that converges to another problem's solution is a FAIL.
    """
    result = judge_sweep(sweep, h, expected_order, **check_order_kwargs)
    if sweep.note is None:
        return result
    if len(sweep.ns) < 2:
        return replace(result, message=f"{sweep.note}; one resolution cannot give an order: give the check a larger "
                       "budget_s or start from coarser steps")
    return replace(result, message=f"{sweep.note}; {result.message}")


def judge_sweep(sweep: Sweep, h: Callable[[int], float], expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """check_order on the sweep's errors; an undecided flat error whose solutions converge is a FAIL.

    A code whose solutions are in single or half precision is judged against its own round-off
    (``precision_floor``), and the message says so.
    """
    check_order_kwargs, note = _judging(sweep, check_order_kwargs)
    result = _judge_sweep(sweep, h, expected_order, **check_order_kwargs)
    if note is None:
        return result
    message = _levels_in_n(result.message, sweep, h, note)
    if result.status == EXACT and _exact_at_coarsest(result, sweep, check_order_kwargs):
        # Within the round-off n steps at this precision can make (n eps |u|) at every level, and at the
        # coarsest within what its own steps' round-off makes (_exact_at_coarsest): the code is exact up to
        # its precision, as a float32 free particle is.
        return replace(result, message=f"{note}; every error is within the round-off of its level ({n_eps(sweep)}): "
                       "exact up to the code's precision; order not measurable")
    if result.status == EXACT:
        return replace(result, status=INCONCLUSIVE, message=f"{note}; every error is within that round-off, which "
                       "hides the truncation error of a correct and of a defective method alike; use coarser steps, "
                       "where the error is above it")
    return replace(result, message=f"{note}; {message}")


# Exactness up to a precision is claimed only where the coarsest level, whose truncation error would
# be the largest, is within this many units in the last place of the solution, and only for a
# precision of at least float32's: float16's unit (1e-3) hides a first-order error at 64 steps.
_EXACT_ULPS = 2.0
_EXACT_EPS = 1e-6


def _exact_at_coarsest(result: OrderResult, sweep: Sweep, kwargs: dict[str, Any]) -> bool:
    """Whether errors within a low precision's round-off are exactness rather than a truncation error hiding there.

    The coarsest level's error must be within _EXACT_ULPS units in the last place of the solution, or,
    for a time integration of n0 steps there, within _EXACT_ULPS * sqrt(n0) units while no finer level
    has a smaller error. Rounding errors of n steps add up like a random walk, to about sqrt(n) units
    (Brouwer, Astron. J. 46 (1937) 149; Henrici, Discrete Variable Methods in Ordinary Differential
    Equations, 1962): a float32 free particle at 50 steps ends a few units off. A truncation error is
    largest at the coarsest level and falls as h shrinks, so one hiding in that round-off would leave
    the coarsest error above a finer one; an error that does not fall shows none.
    """
    eps = float(kwargs["floor"]) / _LOW_PRECISION_FLOOR
    size = max(1.0, abs(float(kwargs.get("scale", 1.0))))
    errors = result.errors
    if eps > _EXACT_EPS or not errors:
        return False
    if errors[0] <= _EXACT_ULPS * eps * size:
        return True
    # A measured round-off (a difference quotient's) is not that of n steps: its levels are not step counts.
    steps = sweep.roundoff is None and len(errors) >= 2 and len(errors) == len(sweep.ns)
    return steps and errors[0] <= _EXACT_ULPS * math.sqrt(min(sweep.ns)) * eps * size and errors[0] <= min(errors[1:])


def n_eps(sweep: Sweep) -> str:
    """The round-off allowed per level in words."""
    return "n eps times the solution's size for n steps, at least 10 eps" if sweep.roundoff is None else \
        "the response of the result to round-off of its input"


def _levels_in_n(message: str, sweep: Sweep, h: Callable[[int], float], note: str) -> str:
    """check_order's "levels h <= X are at the code's round-off" in the study's own words: levels n >= N, the precision."""
    marker = "are at the code's " + ROUNDOFF_NOT_USED
    if marker not in message or not message.startswith("levels h <= "):
        return message
    bound = float(message[len("levels h <= "):message.index(" ", len("levels h <= "))])
    first = min(n for n in sweep.ns if float(h(n)) <= bound * (1 + 1e-5))  # the bound is printed to 6 digits
    name = note.split(" precision,")[0].split(" in ")[-1]
    rest = message[message.index(marker) + len(marker):]
    return f"levels n >= {first} are at {name} round-off and were not used{rest}"


def _judge_sweep(sweep: Sweep, h: Callable[[int], float], expected_order: float,
                 **check_order_kwargs: Any) -> OrderResult:
    hs = [float(h(n)) for n in sweep.ns]
    result = check_order(hs, list(sweep.errors), expected_order, **check_order_kwargs)
    flat = result.status == FAIL and result.message.startswith(DOES_NOT_DECREASE)
    if sweep.states is None:
        # From errors alone a flat error stays check_order's FAIL (claims rely on it); a study that
        # sees the code's solutions can tell a solution lost to coarse steps (see still_changing).
        return result
    if flat:
        level = effective_floor(float(check_order_kwargs.get("floor", 1e-12)), float(check_order_kwargs.get("scale", 1.0)))
        unresolved = still_changing(list(sweep.errors), list(sweep.states), hs, ROUNDOFF_FACTOR * level) or \
            lost(list(sweep.errors), list(sweep.states), hs)
        return result if unresolved is None else replace(result, status=INCONCLUSIVE, message=unresolved)
    if result.status != INCONCLUSIVE:
        return result
    elsewhere = converges_elsewhere(hs, list(sweep.errors), list(sweep.states), expected_order, **check_order_kwargs)
    return result if elsewhere is None else replace(result, status=FAIL, message=elsewhere)


# A flat error whose code's solution is this small beside it at every level is the whole solution
# lost: a dissipative method at steps far too coarse (backward Euler on x'' = -w**2 x with w h >> 1
# damps by (1 + w**2 h**2)**(-n/2), which at first shrinks further as n grows) gives a solution near
# zero and an error equal to the exact solution's size at every coarse level, a plateau that ends
# only when the steps resolve the motion (Hairer and Wanner, Solving ODEs II, sec. IV.3).
_LOST = 0.1


def lost(errors: Sequence[float], states: Sequence[np.ndarray], hs: Sequence[float]) -> str | None:
    """The INCONCLUSIVE message when the code's solution is negligible beside a flat error at every level, else None."""
    sizes = [float(np.max(np.abs(np.asarray(s, dtype=float)), initial=0.0)) for s in states]
    if not errors or any(not size <= _LOST * error for size, error in zip(sizes, errors)):
        return None
    if _shrinks_as_a_power(hs, sizes):
        return None  # the code converges, cleanly, to zero: a wrong limit (a missing 1/h), not a lost solution
    finest = min(hs)
    return (f"the error is about the same at every resolution ({errors[-1]:.3g} at the finest level), but the code's "
            f"own solution is below a tenth of it at every level (at most {max(sizes):.3g}): the whole solution is "
            "lost, as a dissipative method at steps far too coarse loses it, so no order can be judged; add "
            f"resolutions finer than h = {finest:g}, where the steps resolve the motion")


# A solution lost to coarse steps decays faster than any power of h while the steps are coarse
# ((1 + w**2 h**2)**(-t/2h) for backward Euler), so the pairwise orders of its size in h keep
# changing; a code whose result is h times the right one (a missing 1/h) shrinks at one settled
# order. That code has converged, to zero: its flat error is a defect's, and check_order's FAIL stands.
_POWER_PAIRS = 3
_POWER_SPREAD = 0.2


def _shrinks_as_a_power(hs: Sequence[float], sizes: Sequence[float]) -> bool:
    """Whether the solution's size falls like h**q at one settled q > 0 over the finest _POWER_PAIRS pairs of levels."""
    pairs = sorted(zip(hs, sizes), key=lambda item: -item[0])
    if len(pairs) < _POWER_PAIRS + 1 or any(not size > 0 for _, size in pairs):
        return False
    finest = pairwise_orders([step for step, _ in pairs], [size for _, size in pairs])[-_POWER_PAIRS:]
    return (all(math.isfinite(q) for q in finest) and min(finest) > STALL_ORDER
            and max(finest) - min(finest) <= _POWER_SPREAD)


# A flat error is a defect only if the code's solution has stopped changing: while two
# consecutive levels still differ by this fraction of the error or more, the flat error
# may be a correct method on a problem it does not resolve yet (issue 16).
_STILL_CHANGING = 0.5
# A code converging to any limit, right or wrong, has differences of consecutive levels that
# shrink with h. Differences that do not shrink (their pairwise order in h below STALL_ORDER)
# belong to a solution that has not started to converge: a dissipative method at steps far
# too coarse (backward Euler with omega**2 h t_end >> 1, upwind advection of a narrow pulse)
# has lost most of the solution at every coarse level, so its error is about the solution
# itself, the same at every level, while the levels differ by amounts that grow as the
# solution starts to come back.


def still_changing(errors: Sequence[float], states: Sequence[np.ndarray], hs: Sequence[float],
                   floor: float = 0.0) -> str | None:
    """The INCONCLUSIVE message when a flat error comes with solutions that still change as much, else None.

    Also when the differences of consecutive levels do not shrink towards the fine end (their
    pairwise order below STALL_ORDER, the finest above ``floor``): a solution that changes as
    much or more with every refinement has not started to converge, whatever its error.
    """
    pairs = sorted(zip(hs, errors, states), key=lambda item: -item[0])
    if len(pairs) < 2:
        return None
    (_, _, coarse), (finest_h, finest, fine) = pairs[-2], pairs[-1]
    change = float(np.max(np.abs(np.asarray(fine, dtype=float) - np.asarray(coarse, dtype=float)), initial=0.0))
    advice = (f"so the steps are far too coarse for this problem to tell a defect from an unresolved solution; add "
              f"resolutions finer than h = {finest_h:g}")
    if change >= _STILL_CHANGING * finest:
        return (f"the error is about the same at every resolution ({finest:.3g} at the finest level), but the code's "
                f"own solution still changes by {change:.3g} between the two finest levels, {advice}")
    if len(pairs) < 3:
        return None
    before = float(np.max(np.abs(np.asarray(coarse, dtype=float) - np.asarray(pairs[-3][2], dtype=float)),
                          initial=0.0))
    ratio = pairs[-2][0] / finest_h
    if change > floor and not (before > 0 and math.log(before / change) / math.log(ratio) >= STALL_ORDER):
        return (f"the error is about the same at every resolution ({finest:.3g} at the finest level), but the "
                f"differences of the code's own solution between consecutive levels do not shrink as h shrinks "
                f"({before:.3g}, then {change:.3g}): the solution has not started to converge (a dissipative method "
                f"at far too coarse steps loses most of the solution, and its error is then about the solution "
                f"itself), {advice}")
    return None


# "Converges, but to something else" (issue 16): the code's solution is within this fraction
# of the finest error of its own limit, so the error is the distance between that limit and
# the exact solution, not a discretisation error that more resolution would remove.
_OWN_LIMIT_FRACTION = 0.1


def converges_elsewhere(hs: Sequence[float], errors: Sequence[float], states: Sequence[np.ndarray],
                        expected_order: float, **check_order_kwargs: Any) -> str | None:
    """The FAIL message when the code converges to the solution of another problem, else None.

    ``states[i]`` is the code's solution at step ``hs[i]`` (coarsest first, the same points
    at every level). The differences of consecutive levels are C h**p (1 - r**-p) when the
    code converges at order p to some limit (Richardson; Roache, Verification and Validation
    in Computational Science and Engineering, ch. 5). When check_order finds them settled
    at the expected order or above (PASS with no upper limit), while the error stays within
    10 % over the finest levels spanning a four-fold range of h, far above round-off, and
    is more than ten times the Richardson estimate d / (r**p - 1) of the code's own distance
    from its limit, then the limit is not the exact solution: whatever the size of the
    error, more resolution will not remove it. A flat error whose differences have not
    settled (a problem the method does not resolve yet) gives None.
    """
    if len(states) < 4 or len(states) != len(hs) or len(errors) != len(hs):
        return None
    pairs = sorted(zip(hs, errors, states), key=lambda item: -item[0])
    h = [float(p[0]) for p in pairs]
    e = [float(p[1]) for p in pairs]
    u = [np.asarray(p[2], dtype=float) for p in pairs]
    if not all(np.all(np.isfinite(x)) for x in u) or not all(np.isfinite(e)):
        return None
    diffs = [float(np.max(np.abs(b - a))) if a.size else 0.0 for a, b in zip(u, u[1:])]
    floor = float(check_order_kwargs.get("floor", 1e-12))
    scale = float(check_order_kwargs.get("scale", 1.0))
    size = max(abs(scale), max(float(np.max(np.abs(x), initial=0.0)) for x in u))
    settled = check_order(h[:-1], diffs, expected_order, tol_low=check_order_kwargs.get("tol_low", 0.3),
                          tol_high=None, floor=floor, scale=size, fit_points=check_order_kwargs.get("fit_points", 4))
    if settled.status != PASS or settled.fitted is None:
        return None
    span = [i for i, step in enumerate(h) if step >= STALL_SPAN * h[-1]]
    if not span:
        return None
    tail = e[span[-1]:]
    level = effective_floor(floor, scale)
    if len(tail) < 3 or min(tail) <= ROUNDOFF_FACTOR * level or max(tail) - min(tail) > SAME_SPREAD * max(tail):
        return None
    ratio = h[-2] / h[-1]
    own = diffs[-1] / (ratio ** settled.fitted - 1.0)
    if own > _OWN_LIMIT_FRACTION * e[-1]:
        return None
    return (f"error does not decrease with resolution (about {e[-1]:.3g} at the finest level, within "
            f"{SAME_SPREAD:.0%} from h = {h[span[-1]]:g} to h = {h[-1]:g}), while the code's own solutions converge: "
            f"the differences of consecutive levels fall at order {settled.fitted:.2f} (expected {expected_order:g}); "
            "the code converges to the solution of another problem (a wrong sign or constant in the model, a missing "
            "or extra term, or a reference for a different equation), whatever the size of the error")


def order_sweep(ns: Sequence[int] | Refinement, measure: Callable[[int], Measured], h: Callable[[int], float],
                expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """Measure at the levels ``ns`` (a list or a refine() plan) and judge the order: the one sweep of every study.

    Signature: ``order_sweep(ns, measure, h, expected_order, **check_order_kwargs) -> OrderResult``.
    ``measure(n)`` returns the error at level n (a norm, >= 0), or a pair ``(error, state)``
    with the code's own solution at n at the same points for every n, which lets the sweep
    see a code that converges to another problem's solution (``converges_elsewhere``).
    ``h(n)`` is the step size of level n; ``check_order_kwargs`` go to check_order.

    A list is measured whole within the check's budget (``measure_resolutions``) and judged
    once (``finish_study``), as before plans existed. A plan is measured one level at a
    time with the sequential rule of ``refine_sweep``.
    """
    if isinstance(ns, Refinement):
        return refine_sweep(ns, measure, h, expected_order, **check_order_kwargs)
    return finish_study(measure_resolutions(ns, measure), h, expected_order, **check_order_kwargs)


def refine_sweep(plan: Refinement, measure: Callable[[int], Measured], h: Callable[[int], float],
                 expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """Refine along ``plan`` until a verdict is confirmed, or INCONCLUSIVE naming the levels tried and why it stopped.

    The stopping rule: after each level from the second, the levels so far are judged as a
    list would be (``judge_sweep``). A decision (PASS, FAIL or EXACT) is taken only when the
    judgement of the levels before the newest one gave the same status: it must hold with
    one more level. A single look decides only on a window a fixed list would decide on;
    taking the first such look among many would add the chances of a pre-asymptotic look
    that happens to settle, so each decision is confirmed by the next, finer level.

    It assumes what check_order assumes, level by level: the errors (and the differences
    of the solutions) tend to C h**p (1 + a h**q) as h shrinks, so that a finer level is
    never less asymptotic than a coarser one, and the cost of a level grows linearly with n.
    It stops undecided, with INCONCLUSIVE, at the plan's ``max_n`` or ``max_levels`` (or its
    last level), when the next level would overrun the plan's ``budget_s`` or the running
    check's budget, or when the newest error has reached the noise floor (finer levels only
    add round-off).
    """
    started = time.monotonic()
    budget = remaining_budget()
    done: list[int] = []
    errors: list[float] = []
    states: list[np.ndarray | None] = []
    measured: list[float | None] = []
    costs = LevelCosts()
    eps = _EPS64
    previous: OrderResult | None = None
    before: OrderResult | None = None
    result: OrderResult | None = None
    reason = _exhausted(plan)
    for n in plan.levels():
        stop = _over_budget(plan, started, budget, costs.seconds(n)) if done else None
        stop = stop or (costs.why_not(n, run_time_left()) if done else None)
        if stop is not None:
            reason = f"the next level, n = {n}, would overrun {stop}"
            break
        start = time.monotonic()
        error, state, precision, own = _split(measure(n))
        eps = max(eps, precision)
        costs.record(n, time.monotonic() - start)
        done.append(n)
        errors.append(error)
        states.append(state)
        measured.append(own)
        if len(done) < 2 or not any(np.isfinite(errors)):
            # A plan starts coarse on purpose: levels beyond a stability limit (all non-finite
            # so far) are a reason to refine, not a blow-up at a finer step than a finite one.
            continue
        sweep = Sweep(tuple(done), tuple(errors), None, _states(states), eps, _roundoff(measured))
        result = judge_sweep(sweep, h, expected_order, **check_order_kwargs)
        adds = _adds_evidence(sweep, result, check_order_kwargs)
        if result.status != INCONCLUSIVE and previous is not None and previous.status == result.status and adds:
            return replace(result, message=f"{result.message} (refined n = {_levels(done)}; the verdict held with one "
                           "more level)")
        before, previous = previous, result
        judging, _ = _judging(sweep, check_order_kwargs)
        floor = effective_floor(float(judging.get("floor", 1e-12)), float(judging.get("scale", 1.0)))
        noise = max(floor, float(judging["roundoff"][-1])) if "roundoff" in judging else floor
        if not adds and result.status != INCONCLUSIVE:
            # A low precision leaves few levels between the pre-asymptotic range and round-off: one level
            # between the two finest, where the error is still above round-off, may confirm the verdict.
            middle = _between(done)
            if middle is not None and _over_budget(plan, started, budget, costs.seconds(middle)) is None \
                    and costs.why_not(middle, run_time_left()) is None:
                start = time.monotonic()
                error, state, precision, own = _split(measure(middle))
                costs.record(middle, time.monotonic() - start)
                done.append(middle)
                errors.append(error)
                states.append(state)
                measured.append(own)
                between = Sweep(tuple(done), tuple(errors), None, _states(states), max(eps, precision),
                                _roundoff(measured))
                confirming = judge_sweep(between, h, expected_order, **check_order_kwargs)
                if confirming.status == result.status and _adds_evidence(between, confirming, check_order_kwargs):
                    return replace(confirming, message=f"{confirming.message} (refined n = {_levels(sorted(done))}; "
                                   f"the verdict held with one more level, n = {middle}, between the two finest)")
                result = confirming
            if result.status == PASS and (before is None or before.status in (INCONCLUSIVE, PASS)) \
                    and _far_below_solution(result, float(judging.get("scale", 1.0))):
                # No finer level can confirm the pass (each is at round-off, and adds only round-off), and
                # the levels it rests on are far into the asymptotic range: it stands, as a list ending here would.
                return replace(result, message=f"{result.message} (refined n = {_levels(sorted(done))}; the finer "
                               "levels are at round-off and cannot confirm it, and the levels it rests on have errors "
                               f"below {_ASYMPTOTIC:g} of the solution)")
            reason = (f"the error reached the round-off at n = {n}, so that level cannot confirm the verdict of the "
                      "levels before it, and finer levels only add round-off")
            break
        if result.status == INCONCLUSIVE and _at_round_off(errors, noise):
            reason = f"the error reached the noise floor {noise:g} at n = {n}, where finer levels only add round-off"
            break
        if result.status == INCONCLUSIVE and _grows_after_falling(done, errors, h,
                                                                  max(1.0, abs(float(judging.get("scale", 1.0))))):
            reason = (f"the error grows from n = {done[-3]} to n = {n} after falling at coarser levels, and finer "
                      "levels only add to that growth")
            break
    return _undecided(plan, done, errors, result, reason, h, expected_order, **check_order_kwargs)


# A pass that no finer level can confirm (they are at round-off) stands only on levels whose error is
# below this fraction of the solution: a coarse level's error of a per cent or more is where a
# pre-asymptotic order shows (a float16 code's usable levels all are: its floor is 1 %), and where a
# defect's lower-order term can still hide behind a leading term of the expected order.
_ASYMPTOTIC = 1e-3


def _far_below_solution(result: OrderResult, scale: float) -> bool:
    """Whether the finest level the judgement fitted has an error below _ASYMPTOTIC of the solution's size."""
    if not result.fit_hs or result.fit_hs[-1] not in result.hs:
        return False
    return result.errors[result.hs.index(result.fit_hs[-1])] <= _ASYMPTOTIC * max(1.0, abs(scale))


def _adds_evidence(sweep: Sweep, result: OrderResult, check_order_kwargs: dict[str, Any]) -> bool:
    """Whether the newest level was used in the judgement, so that it can confirm it.

    A level below the noise floor, or one left out at round-off, repeats the judgement of the
    levels before it: it would confirm a PASS of a low-precision code on pre-asymptotic levels
    that its finer levels, hidden in round-off, would contradict. EXACT and float64 keep the old rule.
    """
    if result.status == EXACT or sweep.eps <= _EPS64 and "precision" not in check_order_kwargs:
        return True
    judging, _ = _judging(sweep, check_order_kwargs)
    floor = effective_floor(float(judging.get("floor", 1e-12)), float(judging.get("scale", 1.0)))
    return sweep.errors[-1] > floor and ROUNDOFF_NOT_USED not in result.message


def _between(done: list[int]) -> int | None:
    """The level halfway (geometrically) between the two finest levels tried, when it is a new integer."""
    finest, before = sorted(done)[-1], sorted(done)[-2]
    middle = int(round(math.sqrt(finest * before)))
    return middle if before < middle < finest and middle not in done else None


def _grows_after_falling(done: list[int], errors: list[float], h: Callable[[int], float], size: float) -> bool:
    """The two finest pairwise orders are growth (below -STALL_ORDER) and a coarser one fell, all within the
    solution's size: round-off growing (or an inconsistent term), which finer levels only add to. Errors larger
    than the solution, or growing ten-fold a level, are an unstable range that finer levels leave behind."""
    if len(errors) < 4 or not all(np.isfinite(errors)) or min(errors) <= 0 or max(errors[-3:]) > size:
        return False
    if any(b > _GROWTH_BLOW_UP * a for a, b in zip(errors[-3:], errors[-2:])):
        return False
    orders = pairwise_orders([float(h(n)) for n in done], errors)
    return max(orders[-2:]) < -STALL_ORDER and max(orders[:-2]) > STALL_ORDER


_GROWTH_BLOW_UP = 10.0  # as check_order's unstable blow-up: a ten-fold growth from one level to the next


def _at_round_off(errors: list[float], floor: float) -> bool:
    """The newest error is below the floor, or has stopped falling close to it: finer levels cannot help.

    An error that drops to the floor from far above it in one step is not round-off: an error
    C h**p (1 + a h**q) with a < 0 passes through zero at one h and grows again beyond it, so
    only an error that was already near the floor at the level before stops the refinement.
    """
    last, before = errors[-1], errors[-2]
    if last <= floor:
        return before <= ROUNDOFF_FACTOR * floor
    return last <= ROUNDOFF_FACTOR * floor and before > 0 and last / before > 2.0 ** -STALL_ORDER


def _levels(tried: Sequence[int]) -> str:
    done = sorted(tried)  # a level between the two finest may have been tried last
    return ", ".join(str(n) for n in done) if len(done) <= 6 else \
        f"{done[0]}, {done[1]}, {done[2]}, ..., {done[-2]}, {done[-1]}"


def _exhausted(plan: Refinement) -> str:
    if plan.max_n is not None:
        return f"the plan reached max_n = {plan.max_n}"
    return f"the plan's {plan.max_levels if plan.max_levels is not None else DEFAULT_MAX_LEVELS} levels were used"


def _over_budget(plan: Refinement, started: float, budget: float | None, cost: float) -> str | None:
    """Why the next level (estimated to take ``cost`` seconds) would not fit, or None."""
    left = remaining_budget()
    if left is not None and cost > left:
        return f"the check's budget_s of {budget:.2g} s" if budget is not None else "the check's budget_s"
    if plan.budget_s is not None and cost > plan.budget_s - (time.monotonic() - started):
        return f"the plan's budget_s of {plan.budget_s:g} s"
    return None


def _undecided(plan: Refinement, done: list[int], errors: list[float], result: OrderResult | None, reason: str,
               h: Callable[[int], float], expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """INCONCLUSIVE for a plan that stopped before a confirmed verdict, with the levels tried and why it stopped."""
    head = f"no verdict confirmed after n = {_levels(done)} ({reason})"
    if result is None and done and not any(np.isfinite(errors)):
        base = check_order([float(h(n)) for n in done], errors, expected_order, **check_order_kwargs)
        return replace(base, status=INCONCLUSIVE, message=f"{head}; the error is not finite at any level tried: the "
                       "steps are beyond the method's stability limit (give a larger max_n) or a NaN enters at every "
                       "step (look for a division by zero)")
    if result is None:
        hs = [float(h(n)) for n in done]
        base = check_order(hs, errors, expected_order, **check_order_kwargs)
        return replace(base, status=INCONCLUSIVE, message=f"{head}; one resolution cannot give an order: start from "
                       "coarser steps or give a larger budget")
    if result.status != INCONCLUSIVE:
        return replace(result, status=INCONCLUSIVE, message=f"{head}; the finest level gave {result.status} but it "
                       f"was not confirmed with one more level: {result.message}")
    return replace(result, message=f"{head}: {result.message}")


def max_error(state: Any, exact: np.ndarray, what: str = "integrate") -> float:
    """The max-norm of state - exact; a state of the wrong shape is an adapter mistake (PhysverifyError)."""
    got = np.asarray(state, dtype=float)
    if got.shape != exact.shape:
        raise PhysverifyError(f"{what} returned a state of shape {got.shape}, but the solution has shape {exact.shape}")
    return float(np.max(np.abs(got - exact))) if got.size else 0.0


def solution_scale(mms: ManufacturedODE, t_end: float) -> float:
    """The size of the solution (largest |u| over [0, t_end], sampled), which sets the noise floor.

    Not the ends alone: a manufactured u that vanishes at t = 0 and t_end (sin t to t_end = 2 pi)
    has a size of 1e-16 there, every error was then "larger than the solution itself", and no
    resolution could decide.
    """
    return _trajectory_scale(mms, t_end)


def mms_order_study(
    integrate: Integrate,
    mms: ManufacturedODE,
    t_end: float,
    ns: Sequence[int] | Refinement,
    expected_order: float,
    **check_order_kwargs: Any,
) -> OrderResult:
    """The observed order of ``integrate`` on a manufactured solution, judged by check_order.

    Runs ``integrate(mms.forcing, mms.value(0), t_end, n)`` for each n in ``ns`` (h =
    t_end / n; a list, or a refine() plan refined until the verdict holds with one more
    level), measures the max-norm error at t_end against ``mms.value(t_end)``, and
    passes ``scale`` (the size of the solution) to check_order unless given. The end
    states of consecutive levels also show whether the code converges, but to the
    solution of another problem (``converges_elsewhere``): a FAIL at any error size.
    Assumes the code's right-hand side equals ``mms.rhs_ref``: any difference shows up
    as an error that does not shrink. A PASS shows the code converges at the expected
    order to the solution of the reference equation at t_end; it does not test terms
    that vanish on this u, nor behaviour between 0 and t_end (see mms_trajectory_study).
    """
    check_derivative(mms, t_end)
    y0, exact = mms.value(0.0), mms.value(t_end)

    def measure(n: int) -> Measured:
        state = integrate(mms.forcing, y0.copy(), t_end, n)
        return max_error(state, exact), state

    check_order_kwargs.setdefault("scale", solution_scale(mms, t_end))
    check_order_kwargs.setdefault("refines", "time")
    return order_sweep(ns, measure, lambda n: t_end / n, expected_order, **check_order_kwargs)


def _trajectory_error(run: Any, mms: ManufacturedODE) -> float:
    """The largest max-norm error over a returned run ``(times, states)``."""
    try:
        times, states = run
    except (TypeError, ValueError) as exc:
        raise PhysverifyError("integrate_run must return a pair (times, states)") from exc
    times = np.asarray(times, dtype=float)
    states = np.asarray(states, dtype=float)
    if times.ndim != 1 or times.size == 0 or len(states) != times.size:
        raise PhysverifyError(
            f"integrate_run returned {times.size} times but {len(states)} states; give one state per time"
        )
    return max(max_error(state, mms.value(float(t)), "integrate_run") for t, state in zip(times, states))



def zero_source(t: float) -> float:
    """0.0 at every t: the source under which ``integrate`` solves its own equation unchanged.

    Kept from physverify 0.6.0, whose claim files pass it to an integrate of the
    integrate contract (the source is added to the right-hand side, so a scalar 0.0 adds
    nothing to a state of any shape).
    """
    return 0.0


@accepts_060(integrate_trajectory=renamed("integrate_run"))
def mms_trajectory_study(
    integrate_run: Callable[[Source, np.ndarray, float, int], Any],
    mms: ManufacturedODE,
    t_end: float,
    ns: Sequence[int] | Refinement,
    expected_order: float,
    **check_order_kwargs: Any,
) -> OrderResult:
    """Like mms_order_study, but the error is the largest over the whole run, not only at t_end.

    Contract: ``integrate_run(source, y0, t_end, n_steps) -> (times, states)``, where
    ``times`` is a 1-D sequence of the output times (every step, or any subset, t = 0
    included or not) and ``states[i]`` the state at ``times[i]``. A PASS shows the error
    stays O(h**expected) at every returned time, which catches errors that cancel by
    t_end (a phase error at a special end time); it proves nothing between output times.
    """
    check_derivative(mms, t_end)
    y0 = mms.value(0.0)

    def measure(n: int) -> Measured:
        run = integrate_run(mms.forcing, y0.copy(), t_end, n)
        error = _trajectory_error(run, mms)
        times, states = run
        # The end states are at the same time at every n when the run ends at t_end; their
        # differences show whether the code converges at all (issue 16).
        last = float(np.asarray(times, dtype=float)[-1])
        return (error, states[-1]) if abs(last - t_end) <= 1e-9 * max(1.0, abs(t_end)) else error

    check_order_kwargs.setdefault("scale", _trajectory_scale(mms, t_end))
    check_order_kwargs.setdefault("refines", "time")
    return order_sweep(ns, measure, lambda n: t_end / n, expected_order, **check_order_kwargs)


def _trajectory_scale(mms: ManufacturedODE, t_end: float, samples: int = 65) -> float:
    """The largest |u| over [0, t_end], sampled: the size that sets the noise floor of a whole run."""
    return float(max(np.max(np.abs(mms.value(float(t)))) for t in np.linspace(0.0, t_end, samples)))
