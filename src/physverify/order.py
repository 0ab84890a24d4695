"""Observed order of accuracy: is the error falling as fast as the method promises?

A method of order p has a global error close to C * h**p once the step h is small
enough (Hairer, Norsett and Wanner, Solving ODEs I, sec. II.3). Given the errors at
several step sizes, ``check_order`` fits p on a log-log scale over the finest levels
whose pairwise orders have settled, and compares it with the order the method should
have (the observed order of Roache, Verification and Validation in Computational
Science and Engineering, ch. 5). A FAIL is decided only on settled asymptotic evidence;
whatever cannot be judged is INCONCLUSIVE and says which resolutions to add. The
messages are part of the interface (DESIGN.md, "Public check API"): they say what was
seen and what to do next.

All functions take ``hs`` and ``errors`` as sequences of numbers (lists, tuples or 1-D
numpy arrays), in any order; results list them coarsest first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from physverify._compat import accepts_060
from physverify.arrays import epsilon
from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS, OrderResult

# The order is fitted on a log scale, so an exact power law C*h**p gives p only up to
# round-off of the logarithms. The slack keeps a decision at the edge of the accepted
# range independent of the last bit of the fit.
_ORDER_SLACK = 1e-6
# Below this order between two resolutions the error has stopped falling (halving h
# removes less than 7 % of it).
STALL_ORDER = 0.1
# Errors within this relative spread are "the same at every resolution".
SAME_SPREAD = 0.1
# A stall within this factor of the noise floor is round-off, not a defect.
ROUNDOFF_FACTOR = 100.0
# An order within this distance of an integer is "a clean integer".
_CLEAN_INTEGER = 0.05
# Soundness before decisiveness (DESIGN.md, "Public check API"; issue 9): a FAIL becomes a
# confirmed defect, so only the asymptotic range may give one. The pairwise orders of
# e = C h**p (1 + a h**q) tend to p as the correction term dies out (Roache,
# Verification and Validation in Computational Science and Engineering, ch. 5): they
# have "settled" once consecutive ones agree within this spread.
_SETTLED_SPREAD = 0.2
# Below the true order, the pairwise orders of e = C h**p (1 + a h**q) with a < 0 climb
# towards p, each step a factor rho of the one before. In the asymptotic range rho is
# r**-q (2/3 at most for r >= 1.5, q >= 1), but just after the error passed through zero
# (1 + a h**q changing sign at a coarser level) rho is close to 1. An order below the
# range is a FAIL only when it stays below even if it climbs on with rho = 0.9, that is,
# by 9 times its last step.
_PROJECTION = 9.0
# A PASS needs the order to stay in range if it falls on as the asymptotic range allows
# (rho <= 2/3: twice its last step). A false pass is a false "rejected".
_PASS_PROJECTION = 2.0
# A pairwise order this far above the settled ones just before them is a plunge of the
# error (possibly through zero). A FAIL needs three settled pairs, or two after a pair
# that is known not to plunge.
_PLUNGE = 1.0
# A PASS or a FAIL on the order needs its settled levels to span at least this factor in h:
# three levels refined by 2 span 4, four refined by 1.5 span 3.4; five levels refined by 1.05
# span 1.2, over which a pre-asymptotic order drifts by less than the settling spread.
DECISION_SPAN = 3.0
# An error that grows by more than this factor from one resolution to the next finer
# one is an unstable blow-up (steps beyond a stability limit), not a measured order.
_BLOW_UP = 10.0
# A stall is a FAIL only when the error stays flat while h shrinks by this factor: over
# a shorter stretch the error can be passing through an extremum as a function of h.
STALL_SPAN = 4.0 - 1e-9

SAME_AT_EVERY_RESOLUTION = (
    "; the error is the same at every resolution, which points to something independent of the step "
    "(a jump in the model such as a potential cutoff crossing, a wrong constant, or a reference for a "
    "different problem) rather than to the integrator"
)

# What a study refines decides which causes a message names (issue 16): a time integrator's
# defects are stages and stale values, a spatial operator's are stencils, closures and values
# stored at the wrong place. "steps" is a study that does not say (convergence_study).
REFINES = ("time", "space", "path", "steps")
_CAUSES = {
    "time": "a stage at the wrong time, a stale value such as an old acceleration, a full step where a half step "
            "belongs",
    "space": "a stencil coefficient, a boundary closure, a value stored at another grid location (cell centre, "
             "face, node)",
    "path": "in space a stencil coefficient, a boundary closure or a value stored at another grid location (cell "
            "centre, face, node); in time a stage at the wrong time or a stale value",
    "steps": "in time a stage at the wrong time or a stale value; in space a stencil coefficient, a boundary "
             "closure or a value stored at another grid location",
}
_WHAT_REFINES = {"time": "the integrator", "space": "the spatial discretisation",
                 "path": "the discretisation", "steps": "the discretisation"}


def same_at_every_resolution(refines: str = "time") -> str:
    """The hint after an error that is the same at every level, naming what the study refines."""
    if refines == "time":
        return SAME_AT_EVERY_RESOLUTION  # the spec's quoted wording (spec/confirm.md)
    return SAME_AT_EVERY_RESOLUTION.replace("the integrator", _WHAT_REFINES[refines])


def effective_floor(floor: float, scale: float) -> float:
    """The noise floor for a solution of size ``scale``: ``floor * max(1, |scale|)``.

    Round-off is relative: each step loses about machine epsilon times the size of the
    numbers it adds, and those losses accumulate over the steps. An absolute floor of
    1e-12 fits a solution of size 1; a solution of size 1e6 has round-off near 1e-10,
    which would otherwise be read as a discretisation error that stopped decreasing.
    The floor does not shrink below ``floor`` for small solutions, because the
    intermediate quantities of a step (velocities, forces, the forcing of a manufactured
    solution) can be of size 1 even when the solution is not.
    """
    return floor * max(1.0, abs(scale))


def fit_order(hs: Sequence[float], errors: Sequence[float]) -> float:
    """The least-squares slope of log(error) against log(h): the observed order.

    Assumes at least two distinct positive step sizes and positive errors; raises
    ValueError otherwise.
    """
    h, e = np.asarray(hs, dtype=float), np.asarray(errors, dtype=float)
    if h.shape != e.shape or h.size < 2 or np.any(h <= 0) or np.any(e <= 0) or np.ptp(h) == 0:
        raise ValueError("fit_order needs two or more distinct positive step sizes and positive errors")
    slope, _intercept = np.polyfit(np.log(h), np.log(e), 1)
    return float(slope)


def pairwise_orders(hs: Sequence[float], errors: Sequence[float]) -> list[float]:
    """The order between each pair of consecutive resolutions, in the order given.

    ``log(e[i] / e[i+1]) / log(h[i] / h[i+1])``; a zero error gives an infinite order,
    two equal step sizes give nan.
    """
    h, e = np.asarray(hs, dtype=float), np.asarray(errors, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        orders = np.log(e[:-1] / e[1:]) / np.log(h[:-1] / h[1:])
    return [float(q) for q in orders]


def _result(status: str, message: str, expected: float | None, hs: Sequence[float], errors: Sequence[float],
            fitted: float | None = None, floor: float | None = None, fit_hs: Sequence[float] = ()) -> OrderResult:
    return OrderResult(
        status,
        message,
        None if expected is None else float(expected),
        fitted,
        tuple(float(x) for x in hs),
        tuple(float(x) for x in errors),
        floor,
        tuple(float(x) for x in fit_hs),
    )


def _input_problem(hs: Sequence[float], errors: Sequence[float]) -> str | None:
    """Why these step sizes cannot give an order (INCONCLUSIVE), or None."""
    if len(hs) != len(errors):
        return f"{len(hs)} step sizes but {len(errors)} errors; give one error per step size"
    if len(hs) < 2:
        return f"{len(hs)} resolution given; an order needs at least two"
    if not all(math.isfinite(h) and h > 0 for h in hs):
        return "the step sizes must be positive finite numbers, got " + ", ".join(f"{h:g}" for h in hs)
    if len(set(hs)) != len(hs):
        return "two resolutions have the same step size; give distinct step sizes"
    return None


def _sorted_coarsest_first(hs: Sequence[float], errors: Sequence[float]) -> tuple[list[float], list[float]]:
    pairs = sorted(zip((float(h) for h in hs), (float(e) for e in errors)), key=lambda pair: -pair[0])
    return [h for h, _ in pairs], [e for _, e in pairs]


def _fmt_orders(orders: Sequence[float]) -> str:
    return ", ".join(f"{q:.2f}" for q in orders)


def _finer_than(h: float) -> str:
    return f"add resolutions finer than h = {h:g}"


def check_exact(hs: Sequence[float], errors: Sequence[float], *, floor: float = 1e-12,
                scale: float = 1.0) -> OrderResult:
    """EXACT when every error is at round-off (below ``floor`` grown with ``scale``), else FAIL.

    Use it where the method must reproduce the solution exactly (a patch test: a
    solution the method integrates without truncation error). EXACT proves the method
    is exact on this problem at these steps; it says nothing about its order on others.
    A FAIL reports the order the error falls at (``fitted``) when two or more errors are
    above the floor. Mismatched lengths, no resolutions or a non-finite ``scale`` give
    INCONCLUSIVE; a non-finite error is FAIL.
    """
    if len(hs) != len(errors) or len(hs) == 0:
        return _result(INCONCLUSIVE, f"{len(hs)} step sizes but {len(errors)} errors; give one error per step size",
                       None, hs, errors)
    if not math.isfinite(scale):
        return _result(INCONCLUSIVE, _bad_scale(scale), None, hs, errors)
    h, e = _sorted_coarsest_first(hs, errors)
    level = effective_floor(floor, scale)
    if not all(math.isfinite(x) for x in e):
        return _result(FAIL, _non_finite_message(h, e), None, h, e, floor=level)
    above = [(x, step) for step, x in zip(h, e) if x > level]
    if not above:
        return _result(EXACT, f"error below {level:g} at every resolution; order not measurable", None, h, e,
                       floor=level)
    worst, at = max(above)
    fitted = _fit_or_none([step for _, step in above], [x for x, _ in above])
    order = "" if fitted is None else f", observed order {fitted:.2f}"
    return _result(FAIL, f"error above the round-off floor {level:g} at {len(above)} of {len(e)} resolutions "
                   f"(largest {worst:.3g} at h = {at:g}{order}), where an exact result was expected", None, h, e,
                   fitted, floor=level, fit_hs=[step for _, step in sorted(above, key=lambda p: -p[1])])


def _fit_or_none(hs: Sequence[float], errors: Sequence[float]) -> float | None:
    if len(set(hs)) < 2:
        return None
    return fit_order(hs, errors)


def _bad_scale(scale: float) -> str:
    return (f"scale is {scale}, not a finite number, so the noise floor is unknown; pass the size of the solution "
            "(a finite number)")


def _non_finite_message(h: Sequence[float], e: Sequence[float]) -> str:
    bad = [step for step, x in zip(h, e) if not math.isfinite(x)]
    return (f"error is not finite at {len(bad)} of {len(e)} resolutions (first at h = {bad[0]:g}): the solution blew "
            "up or a NaN entered; look for a division by zero, or drop steps beyond the method's stability limit")



def _tol_060(value: float | None) -> dict[str, float]:
    """0.6.0's ``tol``: one value for both tolerances (None: the defaults)."""
    return {} if value is None else {"tol_low": float(value), "tol_high": float(value)}


@accepts_060(tol=_tol_060)
def check_order(
    hs: Sequence[float],
    errors: Sequence[float],
    expected: float,
    *,
    tol_low: float = 0.3,
    tol_high: float | None = 1.0,
    floor: float = 1e-12,
    scale: float = 1.0,
    fit_points: int = 4,
    atol: float | None = None,
    refines: str = "time",
    precision: Any = None,
    roundoff: Sequence[float] | None = None,
) -> OrderResult:
    """PASS when the settled observed order lies in [expected - tol_low, expected + tol_high).

    ``tol_high=None`` means no upper limit: any settled order at or above ``expected -
    tol_low`` passes, the form for a claim of "at least order p" that must not break when
    the code gets more accurate. An order equal to the top of the range within the fit's
    round-off (2.0000000000000018 against 2) is inside it. ``refines`` says what the levels
    refine ("time", "space", "path" for a refinement_path, "steps" when unknown), so that a
    FAIL names causes that fit: stages and stale values in time; stencils, boundary closures
    and values stored at another grid location in space.

    Assumes ``errors[i]`` is a norm of the global error at step size ``hs[i]`` and
    ``scale`` the size of the solution. Levels whose error is larger than the solution,
    non-finite at the coarse end (beyond a stability limit), or below the noise floor
    (``effective_floor(floor, scale)``) are not used. Of the rest, the finest levels
    whose pairwise orders agree within 0.2 are "settled"; the order is the least-squares
    slope over at most ``fit_points`` of them, finest first. A PASS or a FAIL on the order
    needs the settled levels to span a factor DECISION_SPAN (3) in h.

    PASS: three or more settled levels with the order in range. It shows that the error
    falls like h**expected on this problem at these steps; it does not prove the method
    right on other problems, nor that the error constant is small (give ``atol`` to
    require the finest error to be at most atol). FAIL, only on settled asymptotic
    evidence: an order below the range that the finest levels agree on and are not
    moving out of, an error that stops decreasing while h shrinks four-fold far above
    round-off and did not plunge just before (or is the same at every level, even larger than the solution: the code
    solves another equation), a NaN or infinity at a finer level than a finite one, or
    only ``atol`` missed. EXACT: every error below the floor. INCONCLUSIVE, naming the resolutions to
    add: orders still moving, an order above the range (the problem may be too easy or
    pre-asymptotic; never by itself a defect), errors larger than the solution, an
    unstable blow-up, round-off reached, or input that cannot give an order.

    Growth is evidence (``_growth``): an error that grows as h shrinks at a settled rate over
    three or more pairs of levels spanning DECISION_SPAN (two where the error is already ten
    times the solution's size at the first of them), from the first levels on, far above
    what round-off could make, is a FAIL at any size of the error (the discretisation is
    inconsistent). An error that rises only at coarse levels and then falls (a pre-asymptotic
    hump) is judged by its falling levels; one that falls and then grows, or whose growth
    round-off could explain, is never a FAIL.

    ``precision`` (a floating dtype such as numpy.float32) is the precision the code computed
    in, when it is lower than that of the errors given (a float32 code that returns float64):
    the floor is raised to its round-off (ten machine epsilons of a solution of size 1) and the
    message names it. ``roundoff`` is the round-off of the error at each level, one value per h
    in the order given, where it grows as h shrinks (n steps accumulate n round-offs, a k-th
    difference quotient divides eps |u| by h**k): the finest levels whose error has stopped
    falling within _NEAR_ROUNDOFF of it are not used, and say so; every error within it is EXACT.
    With either: the finest levels within their round-off cannot show an order moving out of the
    range (a PASS of the levels above them stands, never a FAIL); levels below the floor that go
    on falling at an accepted order are used; growth is judged against the round-off with a
    margin of GROWTH_OVER_BOUND.
    """
    if refines not in REFINES:
        raise ValueError(f"check_order(refines={refines!r}): refines must be one of {', '.join(REFINES)}")
    problem = _input_problem(hs, errors)
    if problem is None and not math.isfinite(scale):
        problem = _bad_scale(scale)
    if problem is not None:
        return _result(INCONCLUSIVE, problem, expected, hs, errors)
    if roundoff is not None and len(roundoff) != len(hs):
        return _result(INCONCLUSIVE, f"{len(hs)} step sizes but {len(roundoff)} round-off values; give one per step "
                       "size", expected, hs, errors)
    h, e = _sorted_coarsest_first(hs, errors)
    if any(x < 0 for x in e if not math.isnan(x)):
        return _result(INCONCLUSIVE, "an error is negative; errors must be norms (>= 0)", expected, h, e)
    finite = _finite_fine_end(e)
    if finite is None:
        return _result(FAIL, _non_finite_message(h, e), expected, h, e)
    eps, name = _precision(precision)
    level = effective_floor(max(floor, PRECISION_ULPS * eps), scale)
    noise = _per_level(hs, roundoff, h, level)
    named = "" if name is None or name == "float64" else f"assuming {name} precision: "
    if all(x <= max(level, r) for x, r in zip(e[finite:], noise[finite:])) and _not_truncation(e[finite:], roundoff):
        within = f"{level:g}" if roundoff is None else f"the round-off of each level (at most {max(noise):.3g})"
        return _result(EXACT, f"{named}error below {within} at every resolution; order not measurable", expected,
                       h, e, floor=level)
    # Only a stated precision or round-off leaves levels out: with the default floor alone, an error
    # near it stays "round-off reached" (INCONCLUSIVE), as it always was.
    kept, excluded = (_roundoff_tail(h, e, noise, finite, expected - tol_low) if name is not None or roundoff is not None
                      else (len(e), False))
    limits = _Limits(tol_low, math.inf if tol_high is None else tol_high, level, abs(scale), fit_points, atol,
                     refines, name, dict(zip(h[finite:kept], noise[finite:kept])) if roundoff is not None else {})
    status, message, fitted, window = _judge_levels(h[finite:kept], e[finite:kept], len(e), expected, limits)
    if status == INCONCLUSIVE and (name is not None or roundoff is not None):
        # The finest levels within their round-off still fall at an accepted order (_roundoff_tail kept
        # them), but round-off bends their pairwise orders either way, so they cannot show that the order
        # is still moving: a PASS of the levels above them stands. Never a FAIL: a level falling at an
        # accepted order is evidence against one.
        above = _within_roundoff_tail(e, noise, finite, kept)
        if above < kept:
            judged = _judge_levels(h[finite:above], e[finite:above], len(e), expected, limits)
            if judged[0] == PASS:
                (status, message, fitted, window), kept, excluded = judged, above, True
    if status == FAIL and roundoff is not None and GROWS not in message:
        # A FAIL on the order or on a flat error must rest on levels above their round-off: an error
        # within it may be round-off alone, at any level (a truncation error near zero between two
        # levels whose round-off happens to be large looks flat).
        inside = [i for i in range(finite, kept) if level < e[i] <= noise[i]]  # those below the floor are out
        if inside:
            use = [i for i in range(finite, kept) if i not in inside]
            judged = _judge_levels([h[i] for i in use], [e[i] for i in use], len(e), expected, limits)
            status, fitted, window = judged[0], judged[2], judged[3]
            message = (f"{len(inside)} level{'s' if len(inside) > 1 else ''} within {limits.precision or 'the code'}'s "
                       f"round-off (h = {', '.join(f'{h[i]:g}' for i in inside)}) not used; {judged[1]}")
    if excluded:
        message = (f"levels h <= {h[kept]:g} are at {limits.precision or 'the code'}'s round-off and were not used; "
                   + message)
    message = named + message
    if finite and status != FAIL:
        message += (f" (the {finite} coarsest resolutions gave a non-finite error and were left out: they are beyond "
                    "the method's stability limit)")
    return _result(status, message, expected, h, e, fitted, floor=level, fit_hs=window)


def _finite_fine_end(e: Sequence[float]) -> int | None:
    """Where the finite finest levels start; None when a finer level than a finite one is not finite."""
    bad = [i for i, x in enumerate(e) if not math.isfinite(x)]
    if not bad:
        return 0
    # A blow-up at the coarsest steps is an explicit method beyond its stability limit;
    # a NaN at a finer step than a finite one entered from somewhere else.
    if bad != list(range(len(bad))) or len(bad) == len(e):
        return None
    return len(bad)


class _Limits(NamedTuple):
    tol_low: float
    tol_high: float
    level: float
    scale: float
    fit_points: int
    atol: float | None
    refines: str = "time"
    precision: str | None = None
    noise: Mapping[float, float] = {}  # h -> the round-off of that level, where it is known per level


# The floor of a code computing at machine epsilon eps is never below this many eps of a solution of size 1.
PRECISION_ULPS = 10.0
# The finest levels whose error stopped falling within this factor of their round-off are not used.
_NEAR_ROUNDOFF = 10.0
_PRECISION_NAMES = {"float16": "float16", "float32": "float32", "float64": "float64", "longdouble": "long double",
                    "float128": "long double", "float96": "long double", "bfloat16": "bfloat16"}


def _precision(precision: Any) -> tuple[float, str | None]:
    """The machine epsilon of ``precision`` (0 when None) and its name (None when not given)."""
    if precision is None:
        return 0.0, None
    dtype = np.dtype(precision)
    return epsilon(dtype), _PRECISION_NAMES.get(dtype.name, dtype.name)


def _not_truncation(e: list[float], roundoff: Sequence[float] | None) -> bool:
    """Whether errors within a round-off that grows with n can be exactness rather than hidden truncation.

    Round-off that grows with the number of steps is smallest at the coarsest level; a truncation
    error, of a correct method or a defective one, is largest there. Errors within such a
    round-off whose coarsest is more than twice every finer one are truncation hiding under it.
    """
    return roundoff is None or len(e) < 2 or e[0] <= 2.0 * max(e[1:])


def _per_level(hs: Sequence[float], roundoff: Sequence[float] | None, h: list[float], level: float) -> list[float]:
    """The round-off of each level, coarsest first (the floor where none is given)."""
    if roundoff is None:
        return [level] * len(h)
    given = {float(step): max(level, float(r)) for step, r in zip(hs, roundoff)}
    return [given[step] for step in h]


def _roundoff_tail(h: list[float], e: list[float], noise: list[float], start: int, slowest: float) -> tuple[int, bool]:
    """Where the usable levels end: before the finest levels that round-off bends.

    A level is left out when its error is within _NEAR_ROUNDOFF of its round-off and no smaller
    than the error of the level before (it has stopped falling), or within its round-off itself
    while falling more slowly than ``slowest`` (the bottom of the accepted range): there round-off
    bends the order, and the levels above it judge it. A level falling at an accepted order is
    kept however close it is, and so is one well above its round-off: they carry the truncation
    error, and keeping them is what keeps a defect visible.
    """
    end = len(e)
    while end - start > 2:
        x, before = e[end - 1], e[end - 2]
        order = math.log(before / x) / math.log(h[end - 2] / h[end - 1]) if x > 0 and before > 0 else math.inf
        stopped = x <= _NEAR_ROUNDOFF * noise[end - 1] and order < STALL_ORDER and not (
            order < -STALL_ORDER and x > GROWTH_OVER_BOUND * noise[end - 1])  # growth is judged by _growth
        bent = order < slowest and (x <= noise[end - 1] or _could_reach(h, e, noise, end - 1, slowest))
        if not (stopped or bent):
            break
        end -= 1
    return end, end < len(e)


def _could_reach(h: list[float], e: list[float], noise: list[float], i: int, slowest: float) -> bool:
    """Whether round-off within ``noise`` at levels i - 1 and i could have bent their pairwise order from ``slowest``.

    The truncation error of a level is its error give or take its round-off, so the order between the
    two is at most log((e[i-1] + r[i-1]) / (e[i] - r[i])) / log(h[i-1] / h[i]); a pair that could be
    falling at an accepted order under that round-off is no evidence of a lower one.
    """
    lower = e[i] - noise[i]
    if lower <= 0:
        return True
    return math.log((e[i - 1] + noise[i - 1]) / lower) / math.log(h[i - 1] / h[i]) >= slowest


# A PASS rests on three levels at the fewest.
_ABOVE_ROUNDOFF = 3


def _within_roundoff_tail(e: list[float], noise: list[float], start: int, end: int) -> int:
    """Where the levels above round-off end: before the finest levels whose error is within their round-off.

    At least _ABOVE_ROUNDOFF levels are left, the fewest a PASS can rest on.
    """
    while end - start > _ABOVE_ROUNDOFF and e[end - 1] <= noise[end - 1]:
        end -= 1
    return end


def _falling_below_floor(h: list[float], e: list[float], expected: float, limits: _Limits) -> set[int]:
    """The levels below the floor that go on falling at an accepted order right after the finest level above it.

    Only where the precision or the round-off was stated: the floor is then ten units in the last place
    of a solution of size 1, a bound for a level's round-off, not a measure of it (a float32 code whose
    solution decays to 0.04 has a round-off 25 times smaller). Round-off does not fall as h shrinks, so a
    level that still falls from the one before at an order in the accepted range carries the truncation
    error; the run stops at the first that does not. Such levels only ever agree with the expected order:
    they can turn a judgement starved of levels into a PASS, never into a FAIL.
    """
    if limits.precision is None and not limits.noise:
        return set()
    last = max((j for j, x in enumerate(e) if x > limits.level), default=None)
    kept: set[int] = set()
    if last is None:
        return kept
    for j in range(last + 1, len(e)):
        if not (e[j] > 0 and e[j - 1] > 0):
            break
        order = math.log(e[j - 1] / e[j]) / math.log(h[j - 1] / h[j])
        if not (expected - limits.tol_low <= order < expected + limits.tol_high):
            break
        kept.add(j)
    return kept


def _judge_levels(h: list[float], e: list[float], n_given: int, expected: float,
                  limits: _Limits) -> tuple[str, str, float | None, list[float]]:
    """Status, message, fitted order and the steps it was fitted on, for finite, sorted levels (coarsest first)."""
    noise = [limits.noise.get(step, limits.level) for step in h]
    falling = _falling_below_floor(h, e, expected, limits)
    above = [(step, x, r) for i, (step, x, r) in enumerate(zip(h, e, noise)) if x > limits.level or i in falling]
    measurable = [(step, x) for step, x, _ in above]
    if len(measurable) < 2:
        message = (f"only {len(measurable)} of {n_given} resolutions has an error above the noise floor "
                   f"{limits.level:g}, so no order can be measured; use coarser steps")
        if measurable and measurable[0][0] < h[0]:
            # Above the floor only at a finer level than one below it: round-off that grew with the
            # number of steps (or a difference quotient), not a truncation error coarser steps would show.
            message += (f" (the error above it is at h = {measurable[0][0]:g}, finer than a level below it: "
                        "round-off grows with the number of steps, so if the method should be exact here, this is "
                        "round-off; pass a larger floor)")
        return INCONCLUSIVE, message, None, []
    if _same_everywhere([step for step, _ in measurable], [x for _, x in measurable], limits.level):
        # Kept even when the error is larger than the solution: a model or reference for
        # a different equation gives the same error at every step, resolved or not.
        return FAIL, _does_not_decrease(e[-1]) + same_at_every_resolution(limits.refines), None, []
    growth = _growth([step for step, _, _ in above], [x for _, x, _ in above], [r for _, _, r in above], limits)
    if growth is not None:
        return growth[0], growth[1], None, []
    size = max(limits.scale, limits.level)
    # Only the finest run of levels within the solution's size: a coarser level on the far side of one
    # larger than the solution is on the other side of a pre-asymptotic hump, and pairing it with the
    # fine levels would read the hump as a flat error.
    first = next((i + 1 for i in range(len(measurable) - 1, -1, -1) if measurable[i][1] > size), 0)
    resolved = measurable[first:]
    if len(resolved) < 2:
        return INCONCLUSIVE, (f"the error is larger than the solution itself (scale {size:g}) at all but at most one "
                              f"resolution, so the steps are far too coarse; {_finer_than(h[-1])}"), None, []
    wh, we = [step for step, _ in resolved], [x for _, x in resolved]
    status, message, fitted = _judge(wh, we, e, expected, limits)
    window = [] if fitted is None else wh[-_fit_points(pairwise_orders(wh, we), limits.fit_points):]
    return status, message, fitted, window


# Growth. An error that grows as h shrinks, at a settled rate, is the signature of an
# inconsistent discretisation: a difference divided by h where h**2 belongs, a sum where a difference
# belongs, a missing 1/h. Its pairwise orders are negative and agree; round-off grows too, like
# eps |u| (l/h)**k for a k-th difference quotient over a field varying on a length l, or eps n**k
# (k = 1/2 or 1) over n steps, and so does a pre-asymptotic hump while it rises. So growth is a FAIL
# only when (1) the finest _GROWTH_PAIRS or more pairwise orders are below -STALL_ORDER (two where
# the error at the first of them is _FAR_BEYOND times the solution's size), the finest two agreeing
# within _SETTLED_SPREAD, spanning DECISION_SPAN in h, each step below the blow-up factor; (2) the
# error grew from the first usable level on (an error that fell first may be growing round-off, or
# the far side of a valley);
# (3) the growth is not slowing towards a turn (the rise of a hump slows before its top); (4)
# the finest error is larger than the solution (a hump stays below it), and (5)
# round-off could not have made it: where the round-off of each level is known, every growing
# error is more than GROWTH_OVER_BOUND times above it; where it is not, round-off of size `level` at the coarsest level would
# need more than _MAX_CELLS cells (or steps) per feature there to grow to the finest error.
_GROWTH_PAIRS = 3
_FAR_BEYOND = 10.0
GROWS = "the error grows as h shrinks"
# A round-off given or measured per level is a bound, at least twice what the code's own rounding makes:
# n eps is a full unit lost at every step in the same direction, where rounding loses at most half of
# one; a difference quotient's response to a change of four units of every value it reads (operators)
# is four times its response to the half unit each value is off by, and to about as much from each
# addition. Growth more than this factor above such a bound at every growing level is at least five
# times what round-off can make; settled over three pairs from the first level on, it is inconsistency.
GROWTH_OVER_BOUND = 2.5
# A pairwise order below this is growth in words ("grows", never "levels off").
_CLEARLY_GROWING = 0.25
_MAX_CELLS = 1.0e4
_INCONSISTENT = ("the discretisation is inconsistent (a difference divided by h where h**2 belongs, a sum where a "
                 "difference belongs, a missing 1/h)")


def _growth(h: list[float], e: list[float], noise: list[float], limits: _Limits) -> tuple[str, str] | None:
    """FAIL for settled growth round-off cannot explain, INCONCLUSIVE for other growth at the fine end, else None."""
    pairwise = pairwise_orders(h, e)
    if len(pairwise) < 2 or not pairwise[-1] < -STALL_ORDER:
        return None
    growing = next((i for i, q in enumerate(reversed(pairwise)) if not q < -STALL_ORDER), len(pairwise))
    settled_pairs = min(growing, _settled_tail(pairwise))
    tail = growing
    gh, ge, gn = h[-tail - 1:], e[-tail - 1:], noise[-tail - 1:]
    if max(b / a for a, b in itertools.pairwise(ge)) > _BLOW_UP:
        return None  # an unstable blow-up, judged as one
    fell = any(q > STALL_ORDER for q in pairwise[:len(pairwise) - growing])
    rate = -fit_order(gh, ge)
    # A round-off measured or stated per level is a bound already (GROWTH_OVER_BOUND says how far above it).
    near = [step for step, x, r in zip(gh, ge, gn) if x <= (GROWTH_OVER_BOUND if limits.noise else ROUNDOFF_FACTOR) * r]
    head = (f"{GROWS}: pairwise orders {_fmt_orders(pairwise)}, about {e[-1]:.3g} at the "
            "finest level")
    if fell and e[-1] <= ROUNDOFF_FACTOR * max(gn):
        return None  # growing from round-off after a fall: the round-off judgement (_stalled) says so
    if fell and pairwise[-1] < -_CLEARLY_GROWING:
        return INCONCLUSIVE, (f"{head}, after falling at coarser levels: round-off at the code's precision grows "
                              "like this (eps |u| / h**k for a k-th difference quotient, n eps over n steps), and so "
                              "does an inconsistent term that is small at coarse steps; if the code computes in a "
                              "lower precision than it returns, pass precision= (numpy.float32), or judge the order "
                              f"on the levels coarser than h = {h[-growing - 1]:g}")
    if fell or tail < 2 or not pairwise[-1] < -_CLEARLY_GROWING and tail < _GROWTH_PAIRS:
        return None  # a short or slight rise at the finest levels: judged as an error that stopped falling
    roundoff = bool(near) or (not limits.noise and _roundoff_could_grow(ge[-1], limits.level, rate, h[0], gh[-1]))
    climb = max(0.0, pairwise[-1] - pairwise[-2])
    size = max(limits.scale, limits.level)
    # Two agreeing pairs are enough where the error was already far beyond the solution at the first of
    # them (_FAR_BEYOND): a consistent, stable scheme's result stays within a few times the solution's
    # size, resolved or not, so its error cannot grow out there; a hump rises below it and turns.
    pairs = _GROWTH_PAIRS if ge[0] <= _FAR_BEYOND * size else 2
    settled = (tail >= pairs and settled_pairs >= 2 and gh[0] >= (DECISION_SPAN - _ORDER_SLACK) * gh[-1]
               and pairwise[-1] + _PASS_PROJECTION * climb < -STALL_ORDER)
    if roundoff:
        return INCONCLUSIVE, (f"{head}, small enough to be round-off at the code's precision (near "
                              f"{max(gn):.3g} and growing as h shrinks, as a difference quotient's eps |u| / h**k "
                              f"does): use coarser resolutions than h = {gh[0]:g}, where the truncation error is above "
                              "it, or pass precision= if the code computes in a lower precision")
    if settled and e[-1] <= size:
        # A consistent, stable method's error stays within about the solution's size even where it
        # rises before falling (a pre-asymptotic hump); an inconsistent term grows without bound, so
        # finer levels take it past the solution, and a hump turns before that.
        return INCONCLUSIVE, (f"{head}; it grows steadily but is still smaller than the solution itself (scale "
                              f"{size:g}), as the rising side of a pre-asymptotic hump can be: an inconsistent "
                              "discretisation keeps growing past the solution's size, a hump turns and falls; "
                              f"{_finer_than(h[-1])} to tell them apart")
    if not settled:
        return INCONCLUSIVE, (f"{head}; the growth has not settled over enough levels to tell an inconsistent "
                              "discretisation from the rising side of a pre-asymptotic hump: a decision needs "
                              f"{_GROWTH_PAIRS} pairwise orders below {-STALL_ORDER:g} over a factor "
                              f"{DECISION_SPAN:g} in h, the finest two agreeing within {_SETTLED_SPREAD:g}, growing "
                              "steadily")
    return FAIL, f"{head}; {_INCONSISTENT}"


def _roundoff_could_grow(finest: float, level: float, rate: float, coarsest_h: float, finest_h: float) -> bool:
    """Whether round-off of size ``level`` growing like h**-rate could reach ``finest`` (see _MAX_CELLS)."""
    if rate <= 0:
        return True
    cells = (finest / level) ** (1.0 / rate)  # (l / h_finest) if the finest error were round-off
    return cells <= _MAX_CELLS * coarsest_h / finest_h


def _same_everywhere(hs: list[float], errors: list[float], level: float) -> bool:
    """Three or more errors within SAME_SPREAD of each other over STALL_SPAN in h, far above round-off."""
    return (len(errors) >= 3 and hs[0] >= STALL_SPAN * hs[-1] and max(errors) - min(errors) <= SAME_SPREAD * max(errors)
            and min(errors) > ROUNDOFF_FACTOR * level)


def _flat_tail(pairwise: list[float]) -> int:
    """How many of the finest pairwise orders are below STALL_ORDER and agree within _SETTLED_SPREAD."""
    below = next((i for i, q in enumerate(reversed(pairwise)) if not q < STALL_ORDER), len(pairwise))
    return min(below, _settled_tail(pairwise))


DOES_NOT_DECREASE = "error does not decrease with resolution"


def _does_not_decrease(finest: float) -> str:
    return f"{DOES_NOT_DECREASE} (about {finest:.3g} at the finest level)"


def _fit_points(pairwise: list[float], fit_points: int) -> int:
    """How many of the finest levels the order is fitted on: the settled ones, at most fit_points, at least 2."""
    return min(_settled_tail(pairwise) + 1, max(2, fit_points))


def _settled_tail(pairwise: list[float]) -> int:
    """How many of the finest pairwise orders agree within _SETTLED_SPREAD (at least 1)."""
    count = 1
    while count < len(pairwise):
        tail = pairwise[-(count + 1):]
        if max(tail) - min(tail) > _SETTLED_SPREAD:
            break
        count += 1
    return count


def _judge(wh: list[float], we: list[float], all_errors: list[float], expected: float,
           limits: _Limits) -> tuple[str, str, float | None]:
    """The status and message for resolved levels (wh, we), coarsest first, all above the floor."""
    pairwise = pairwise_orders(wh, we)
    # Only the finest pairs: a jump at coarser steps (an error passing through zero, a
    # stability limit) is left behind once the finest levels settle.
    growth = [b / a for a, b in itertools.pairwise(we)][-2:]
    if max(growth) > _BLOW_UP:
        worst = len(we) - 1 - len(growth) + growth.index(max(growth))
        return INCONCLUSIVE, (f"the error grows {max(growth):.3g} times from h = {wh[worst]:g} to h = "
                              f"{wh[worst + 1]:g} (pairwise orders {_fmt_orders(pairwise)}): an unstable blow-up, "
                              "not an order; use steps within the method's stability limit, "
                              f"{_finer_than(wh[-1])}; if it grows at one n only, look for a loop that overshoots "
                              "the end time (`while t < t_end` with a floating-point t takes one step too many at "
                              "some n)"), None
    if pairwise[-1] < STALL_ORDER:
        return _stalled(wh, we, all_errors, pairwise, limits.noise.get(wh[-1], limits.level), limits.refines, expected)
    settled = _settled_tail(pairwise)
    points = _fit_points(pairwise, limits.fit_points)
    fitted = fit_order(wh[-points:], we[-points:])
    head = f"observed order {fitted:.2f} (expected {expected:g})"
    low, high = expected - limits.tol_low, expected + limits.tol_high
    if len(pairwise) < 2:
        return INCONCLUSIVE, (f"{head}, from only two usable resolutions, which cannot show whether the order has "
                              f"settled: {_finer_than(wh[-1])}"), fitted
    if settled < 2:
        return INCONCLUSIVE, _moving(head, pairwise, wh[-1]), fitted
    if fitted > high + _ORDER_SLACK:
        return INCONCLUSIVE, head + _too_high_advice(pairwise, low, high, wh[-1]), fitted
    span = wh[-settled - 1] / wh[-1]
    if span < DECISION_SPAN - _ORDER_SLACK:
        # Closely spaced levels (n = 100, 105, 110, ...) settle within 0.2 over a few per cent
        # of h while the orders are still drifting through a pre-asymptotic range: the drift per
        # level is small, so neither projection sees it.
        return INCONCLUSIVE, (f"{head}, but the settled levels span only a factor {span:.3g} in h (pairwise orders "
                              f"{_fmt_orders(pairwise)}), too little to tell a settled order from one still "
                              f"drifting; a decision needs a factor {DECISION_SPAN:g}: {_finer_than(wh[-1])}, or "
                              "refine by a larger ratio"), fitted
    if fitted < low - _ORDER_SLACK:
        if settled < 3 and (len(pairwise) == settled or pairwise[-settled - 1] > max(pairwise[-settled:]) + _PLUNGE):
            # The error may have plunged just before the settled levels (seen, or hidden in a
            # level too coarse to use): it may have passed through zero there, and the orders
            # after a zero climb back slowly, so two settled pairs are not enough.
            return INCONCLUSIVE, _moving(head, pairwise, wh[-1]), fitted
        return _too_low(head, pairwise, low, high, expected, wh[-1], limits.refines) + (fitted,)
    if pairwise[-1] + _PASS_PROJECTION * min(0.0, pairwise[-1] - pairwise[-2]) < low - _ORDER_SLACK:
        # Falling out of the range: pre-asymptotic levels of a lower order, not yet a PASS.
        return INCONCLUSIVE, (f"{head}, but the pairwise orders {_fmt_orders(pairwise)} are still falling towards "
                              f"the bottom of the accepted range [{low:g}, {high:g}): {_finer_than(wh[-1])} before "
                              "concluding"), fitted
    if limits.atol is not None and we[-1] > limits.atol:
        return FAIL, (f"{head}, but the error at the finest level ({we[-1]:.3g}) is above atol = {limits.atol:g}: "
                      "only the absolute tolerance was missed; the order is right, so use finer steps or look for a "
                      "large error constant"), fitted
    return PASS, head, fitted


def _moving(head: str, pairwise: list[float], finest: float) -> str:
    return (f"{head}, but the pairwise orders {_fmt_orders(pairwise)} are still moving, so the steps may be "
            f"pre-asymptotic: {_finer_than(finest)} before concluding")


def _stalled(wh: list[float], we: list[float], all_errors: list[float], pairwise: list[float],
             level: float, refines: str = "time", expected: float = math.inf) -> tuple[str, str, float | None]:
    """The error stopped falling at the finest pair: round-off, not yet settled, or a defect (FAIL)."""
    finest = we[-1]
    if finest <= ROUNDOFF_FACTOR * level:
        return INCONCLUSIVE, (f"round-off reached at the finest levels: the error stops decreasing at about "
                              f"{finest:.3g}, close to the noise floor {level:g}; drop the finest resolutions, use "
                              "coarser steps, or pass a larger floor"), None
    flat = _flat_tail(pairwise)
    if wh[-1 - flat] < STALL_SPAN * wh[-1]:
        # A short flat stretch may be the error passing through an extremum as a function
        # of the step (a pre-asymptotic term of the other sign); a defect keeps the error
        # flat while h shrinks by a factor of four or more.
        return INCONCLUSIVE, (f"the error stops decreasing only at the finest resolutions (pairwise orders "
                              f"{_fmt_orders(pairwise)}, about {finest:.3g} at the finest level); "
                              f"{_finer_than(wh[-1])} to see whether it levels off"), None
    if flat < 3 and len(pairwise) > flat and pairwise[-flat - 1] > expected + _PLUNGE:
        # The error fell faster than the method's order just before it levelled off: it may have
        # passed through zero there (e = C h**p (1 + a h**q) with a < 0), and after a zero the error
        # can stay flat over a four-fold span before it falls at order p.
        return INCONCLUSIVE, (f"the error levels off just after falling faster than order {expected:g} (pairwise "
                              f"orders {_fmt_orders(pairwise)}, about {finest:.3g} at the finest level): it may have "
                              f"passed through zero there; {_finer_than(wh[-1])} to see whether it stays level"), None
    message = _does_not_decrease(finest)
    if max(all_errors) - min(all_errors) <= SAME_SPREAD * max(all_errors):
        return FAIL, message + same_at_every_resolution(refines), None
    if min(pairwise[-flat:]) < -_CLEARLY_GROWING:
        # Never "levels off" for orders clearly below zero: the error rose over part of the stretch.
        return FAIL, (f"{message}; it grows at some levels and does not fall at any of the finest (pairwise orders "
                      f"{_fmt_orders(pairwise)}), which points to an error that does not shrink with the step: a "
                      "wrong constant or reference, a jump in the model, or an inconsistent term"), None
    return FAIL, (f"{message}; it levels off (pairwise orders {_fmt_orders(pairwise)}), which points to an error "
                  "that does not depend on the step added to one that does: a wrong constant or reference, or a "
                  "jump in the model"), None


def _too_low(head: str, pairwise: list[float], low: float, high: float, expected: float,
             finest: float, refines: str = "time") -> tuple[str, str]:
    """Settled below the range: FAIL, unless the orders are still climbing towards it."""
    orders = f"pairwise orders {_fmt_orders(pairwise)}"
    climb = max(0.0, pairwise[-1] - pairwise[-2])
    if pairwise[-1] >= low - _ORDER_SLACK or pairwise[-1] + _PROJECTION * climb >= low - _ORDER_SLACK:
        return INCONCLUSIVE, (f"{head}, below the accepted range [{low:g}, {high:g}), but the {orders} are still "
                              f"climbing towards it, so the steps may be pre-asymptotic: {_finer_than(finest)} "
                              "before concluding")
    head = f"{head}, below the accepted range [{low:g}, {high:g})"
    nearest = _clean_integer(pairwise[-1])
    if nearest is not None and nearest >= 1 and nearest != expected:
        return FAIL, (f"{head}: a clean order {nearest}, the signature of one term that is only accurate to that "
                      f"order ({_CAUSES[refines]}); if the method really is of order "
                      f"{nearest}, the expected order is wrong")
    return FAIL, f"{head} ({orders}): the error falls more slowly than the method allows"


def _clean_integer(order: float) -> int | None:
    """The integer the finest pairwise order sits on, or None (the finest pair is the most asymptotic)."""
    nearest = round(order)
    return nearest if abs(order - nearest) < _CLEAN_INTEGER else None


def _too_high_advice(pairwise: list[float], low: float, high: float, finest: float) -> str:
    """What an order above the accepted range suggests (never a defect by itself: INCONCLUSIVE)."""
    start = (f", above the accepted range [{low:g}, {high:g}) (pairwise orders {_fmt_orders(pairwise)}); an order "
             "above the range is not evidence of a defect: ")
    nearest = _clean_integer(pairwise[-1])
    if nearest is not None:
        return (start + f"a clean order {nearest} means the expected order itself looks wrong (check the method's "
                "order in its reference), or the problem may be too easy or pre-asymptotic; use a less special "
                f"problem, or {_finer_than(finest)}")
    return start + (f"the problem may be too easy or pre-asymptotic, or the errors are not the method's; "
                    f"{_finer_than(finest)}, or compare against a reference for the same problem")
