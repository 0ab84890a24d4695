"""Observed order of accuracy: is the error falling as fast as the method promises?

A method of order p has a global error close to C * h**p once the step h is small
enough (Hairer, Norsett and Wanner, Solving ODEs I, sec. II.3). Given the errors at
several step sizes, ``check_order`` fits p on a log-log scale and compares it with the
order the method should have. The messages are part of the interface (DESIGN.md,
"Public check API"): they say what was seen and what to do next.

All functions take ``hs`` and ``errors`` as sequences of numbers (lists, tuples or 1-D
numpy arrays), in any order; results list them coarsest first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS, OrderResult

# The order is fitted on a log scale, so an exact power law C*h**p gives p only up to
# round-off of the logarithms. The upper end of the accepted range is open: an order a
# whole unit above the expected one is the sign of a wrong expectation (or a problem the
# method solves unusually well), not a pass. The slack keeps that decision independent
# of the last bit of the fit.
_ORDER_SLACK = 1e-6
# Below this order between the two finest resolutions the error has stopped falling
# (halving h removes less than 7 % of it).
_STALL_ORDER = 0.1
# Errors within this relative spread are "the same at every resolution".
_SAME_SPREAD = 0.1
# A stall within this factor of the noise floor is round-off, not a defect.
_ROUNDOFF_FACTOR = 100.0
# An order within this distance of an integer is "a clean integer".
_CLEAN_INTEGER = 0.05

SAME_AT_EVERY_RESOLUTION = (
    "; the error is the same at every resolution, which points to something independent of the step "
    "(a jump in the model such as a potential cutoff crossing, a wrong constant, or a reference for a "
    "different problem) rather than to the integrator"
)


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


def check_exact(hs: Sequence[float], errors: Sequence[float], *, floor: float = 1e-12,
                scale: float = 1.0) -> OrderResult:
    """EXACT when every error is at round-off (below ``floor`` grown with ``scale``), else FAIL.

    Use it where the method must reproduce the solution exactly (a patch test: a
    solution the method integrates without truncation error). EXACT proves the method
    is exact on this problem at these steps; it says nothing about its order on others.
    Mismatched lengths or no resolutions give INCONCLUSIVE; a non-finite error is FAIL.
    """
    if len(hs) != len(errors) or len(hs) == 0:
        return _result(INCONCLUSIVE, f"{len(hs)} step sizes but {len(errors)} errors; give one error per step size",
                       None, hs, errors)
    h, e = _sorted_coarsest_first(hs, errors)
    level = effective_floor(floor, scale)
    if not all(math.isfinite(x) for x in e):
        return _result(FAIL, _non_finite_message(h, e), None, h, e)
    above = [(x, step) for step, x in zip(h, e) if x > level]
    if not above:
        return _result(EXACT, f"error below {level:g} at every resolution; order not measurable", None, h, e,
                       floor=level)
    worst, at = max(above)
    return _result(FAIL, f"error above the round-off floor {level:g} at {len(above)} of {len(e)} resolutions "
                   f"(largest {worst:.3g} at h = {at:g}), where an exact result was expected", None, h, e, floor=level)


def _non_finite_message(h: Sequence[float], e: Sequence[float]) -> str:
    bad = [step for step, x in zip(h, e) if not math.isfinite(x)]
    return (f"error is not finite at {len(bad)} of {len(e)} resolutions (first at h = {bad[0]:g}): the solution blew "
            "up or a NaN entered; look for a division by zero, or drop steps beyond the method's stability limit")


def check_order(
    hs: Sequence[float],
    errors: Sequence[float],
    expected: float,
    *,
    tol_low: float = 0.3,
    tol_high: float = 1.0,
    floor: float = 1e-12,
    scale: float = 1.0,
    fit_points: int = 4,
    atol: float | None = None,
) -> OrderResult:
    """PASS when the observed order lies in [expected - tol_low, expected + tol_high).

    Assumes ``errors[i]`` is a norm of the global error at step size ``hs[i]``, and that
    the finest steps are in the asymptotic range. The order is the least-squares slope
    over the finest ``fit_points`` resolutions whose error is above the noise floor
    (``effective_floor(floor, scale)``, ``scale`` being the size of the solution).
    A PASS shows that the error falls like h**expected on this problem; it does not prove
    the method right on other problems, nor that the error constant is small (give
    ``atol`` to require that the finest error is at most atol).
    EXACT: every error is below the floor. INCONCLUSIVE: the input cannot give an order,
    round-off reached, or pre-asymptotic steps whose finest pair already has the
    expected order. FAIL: the order is too low or too high, an error is not finite, the
    error stopped decreasing, or only ``atol`` was missed.
    """
    problem = _input_problem(hs, errors)
    if problem is not None:
        return _result(INCONCLUSIVE, problem, expected, hs, errors)
    h, e = _sorted_coarsest_first(hs, errors)
    if not all(math.isfinite(x) for x in e):
        return _result(FAIL, _non_finite_message(h, e), expected, h, e)
    if any(x < 0 for x in e):
        return _result(INCONCLUSIVE, "an error is negative; errors must be norms (>= 0)", expected, h, e)
    level = effective_floor(floor, scale)
    if all(x <= level for x in e):
        return _result(EXACT, f"error below {level:g} at every resolution; order not measurable", expected, h, e,
                       floor=level)
    window = [(step, x) for step, x in zip(h, e) if x > level][-max(2, fit_points):]
    if len(window) < 2:
        return _result(INCONCLUSIVE, f"only 1 of {len(e)} resolutions has an error above the noise floor {level:g}, "
                       "so no order can be measured; use coarser steps", expected, h, e, floor=level)
    wh, we = [step for step, _ in window], [x for _, x in window]
    fitted = fit_order(wh, we)
    status, message = _judge(wh, we, e, fitted, expected, tol_low, tol_high, level, atol)
    return _result(status, message, expected, h, e, fitted, floor=level, fit_hs=wh)


def _judge(wh: list[float], we: list[float], all_errors: list[float], fitted: float, expected: float,
           tol_low: float, tol_high: float, level: float, atol: float | None) -> tuple[str, str]:
    """The status and message for a fitted order over the window (wh, we)."""
    pairwise = pairwise_orders(wh, we)
    if pairwise[-1] < _STALL_ORDER or fitted < _STALL_ORDER:
        return _stalled(we, all_errors, pairwise, level)
    head = f"observed order {fitted:.2f} (expected {expected:g})"
    low, high = expected - tol_low, expected + tol_high
    if fitted < low - _ORDER_SLACK:
        return _too_low(head, pairwise, low, high, expected)
    if fitted >= high - _ORDER_SLACK:
        return FAIL, head + _too_high_advice(pairwise, low, high)
    if atol is not None and we[-1] > atol:
        return FAIL, (f"{head}, but the error at the finest level ({we[-1]:.3g}) is above atol = {atol:g}: only the "
                      "absolute tolerance was missed; the order is right, so use finer steps or look for a large "
                      "error constant")
    return PASS, head


def _stalled(we: list[float], all_errors: list[float], pairwise: list[float], level: float) -> tuple[str, str]:
    """A window whose error stopped falling: round-off (INCONCLUSIVE) or a defect (FAIL)."""
    finest = we[-1]
    if finest <= _ROUNDOFF_FACTOR * level:
        return INCONCLUSIVE, (f"round-off reached at the finest levels: the error stops decreasing at about "
                              f"{finest:.3g}, close to the noise floor {level:g}; drop the finest resolutions, use "
                              "coarser steps, or pass a larger floor")
    message = f"error does not decrease with resolution (about {finest:.3g} at the finest level)"
    if max(all_errors) - min(all_errors) <= _SAME_SPREAD * max(all_errors):
        return FAIL, message + SAME_AT_EVERY_RESOLUTION
    return FAIL, (f"{message}; it levels off (pairwise orders {_fmt_orders(pairwise)}), which points to an error "
                  "that does not depend on the step added to one that does: a wrong constant or reference, or a "
                  "jump in the model")


def _too_low(head: str, pairwise: list[float], low: float, high: float, expected: float) -> tuple[str, str]:
    """Below the accepted range: pre-asymptotic steps (INCONCLUSIVE when the finest pair is in range) or a FAIL."""
    rising = len(pairwise) >= 2 and all(b > a + 0.05 for a, b in zip(pairwise, pairwise[1:]))
    orders = f"pairwise orders {_fmt_orders(pairwise)}"
    if rising and low - _ORDER_SLACK <= pairwise[-1] < high:
        return INCONCLUSIVE, (f"{head}, but the {orders} are still rising and the finest pair is already in range: "
                              "the coarse steps are pre-asymptotic; drop the coarsest resolutions or add finer ones")
    if rising:
        return FAIL, (f"{head}, below the accepted range [{low:g}, {high:g}); the {orders} are still rising, so "
                      "the steps may be pre-asymptotic: add finer resolutions before concluding")
    nearest = _clean_integer(pairwise[-1])
    if nearest is not None and nearest >= 1 and nearest != expected:
        return FAIL, (f"{head}: a clean order {nearest}, the signature of one term that is only accurate to that "
                      "order (a stage at the wrong time, a stale value such as an old acceleration, a full step "
                      "where a half step belongs); if the method really is of order "
                      f"{nearest}, the expected order is wrong")
    return FAIL, (f"{head}, below the accepted range [{low:g}, {high:g}) ({orders}): the error falls more slowly "
                  "than the method allows")


def _clean_integer(order: float) -> int | None:
    """The integer the finest pairwise order sits on, or None (the finest pair is the most asymptotic)."""
    nearest = round(order)
    return nearest if abs(order - nearest) < _CLEAN_INTEGER else None


def _too_high_advice(pairwise: list[float], low: float, high: float) -> str:
    """What an order above the accepted range suggests."""
    nearest = _clean_integer(pairwise[-1])
    if nearest is not None:
        return (f", above the accepted range [{low:g}, {high:g}): a clean order {nearest}, so the expected order "
                "itself looks wrong (check the method's order in its reference), or the problem is one the method "
                "solves unusually well; use a less special problem")
    return (f", above the accepted range [{low:g}, {high:g}) (pairwise orders {_fmt_orders(pairwise)}): the error "
            "falls faster than the method allows; the problem may be too easy for it, or the errors are not the "
            "method's (compare against a reference for the same problem)")
