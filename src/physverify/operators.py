"""Checks with no step size, discrete spatial operators, and time reversibility.

- ``identity_check``: a symmetry, a periodic copy, a total conserved to round-off, an exact
  reproduction. There is no resolution to refine, so no order and no invented h: the
  result is EXACT (within round-off), PASS (within a stated tolerance) or FAIL.
- ``operator_study``: a code's discrete operator (divergence, gradient, Laplacian, flux
  difference) against the exact derivative of a manufactured field, at the points where
  the code stores the result (cell centres, nodes, faces), judged by check_order.
- ``reversibility_study``: n steps forward, n steps back, compared with the start. A
  symmetric one-step method returns to round-off (Hairer, Lubich and Wanner, Geometric
  Numerical Integration, ch. V, sec. V.1); a method of order p that is not symmetric
  returns with an O(h**p) error, since each of the 2n steps errs by O(h**(p+1)).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Union

import numpy as np

from physverify import frameworks
from physverify.adapters import exact_steps
from physverify.arrays import as_array, epsilon, precision_of
from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS, OrderResult, Result
from physverify.errors import PhysverifyError
from physverify.mms import ROUNDOFF_NOT_USED, Measured, max_error, order_sweep
from physverify.order import GROWS, GROWTH_OVER_BOUND, ROUNDOFF_FACTOR, effective_floor
from physverify.refine import Refinement

# check_order's default noise floor for a quantity of size 1; effective_floor grows it with the scale.
_FLOOR = 1e-12
# identity_check's round-off is never below this many units in the last place of the values compared.
_ULPS = 16.0
# Each of the 2n steps of a round trip loses a few units of round-off of the state's size;
# this many machine epsilons per step is the round-off a round trip of many steps may carry.
_ROUNDOFF_PER_STEP = 4.0 * float(np.finfo(float).eps)

Levels = Union[Sequence[int], Refinement]
Points = Union[str, Callable[[int], Any]]
POINTS = ("cells", "nodes", "faces")
# A staggered grid's faces normal to one axis: faces along that axis, cell centres along the others
# (Arakawa C grid: u on "x-faces", v on "y-faces"; the vorticity on "nodes", the cell corners).
_FACES_ALONG = {"x-faces": 0, "y-faces": 1, "z-faces": 2}
_EPS64 = float(np.finfo(float).eps)


def _order_sweep(ns: Levels, measure: Callable[[int], Measured], h: Callable[[int], float], expected_order: float,
                 **check_order_kwargs: Any) -> OrderResult:
    """Measure at the levels ``ns`` (a list or a refinement plan) and judge the order, through mms.order_sweep.

    A list is measured whole within the check's budget; a plan level by level with the
    sequential rule, so an operator or round-trip study stops as soon as its verdict holds.
    """
    return order_sweep(ns, measure, h, expected_order, **check_order_kwargs)


def _largest_level(ns: Levels) -> int:
    """The finest level a study may reach: the largest listed, or a plan's max_n (else its start)."""
    if isinstance(ns, Refinement):
        return ns.max_n if ns.max_n is not None else ns.start
    return max((int(n) for n in ns), default=1)


# --- identities --------------------------------------------------------------------------
@dataclass(frozen=True)
class IdentityResult(Result):
    """The Result of identity_check: the largest deviation, the tolerance, the round-off and where."""

    deviation: float | None = None
    tolerance: float | None = None
    roundoff: float | None = None
    index: tuple[int, ...] = ()
    count: int = 0


def identity_check(values: Any, expected: Any = 0.0, *, rtol: float = 0.0, atol: float | None = None,
                   scale: float = 1.0) -> IdentityResult:
    """EXACT, PASS or FAIL for an identity that holds at any resolution (no step size, no order).

    ``values`` is a number or an array (``u - u[::-1]`` for a mirror symmetry, ``u[0] -
    u[-1]`` for the two copies of a periodic end point, a total minus its start value);
    ``expected`` a number or an array that broadcasts against it. Round-off is check_order's
    effective floor for ``scale`` (1e-12 times the size of the quantity, at least 1e-12).
    EXACT: the largest deviation |values - expected| is within round-off. PASS: every
    deviation is within max(atol, rtol * |expected|), where atol defaults to round-off (so
    by default a check is EXACT or FAIL). FAIL beyond that, or a value that is not finite.
    The message gives the largest deviation and its index in words. An EXACT or PASS shows
    the identity holds for these values; it says nothing about values not computed.
    """
    if not (rtol >= 0 and (atol is None or atol >= 0)):
        raise PhysverifyError(f"identity_check: rtol and atol must be at least 0, got rtol={rtol!r}, atol={atol!r}")
    got, want = _broadcast(values, expected)
    roundoff = effective_floor(_FLOOR, scale) if math.isfinite(scale) else math.nan
    if math.isfinite(roundoff) and got.size and np.all(np.isfinite(got)) and np.all(np.isfinite(want)):
        # A deviation of a few units in the last place of the numbers compared is round-off whatever
        # scale says: a total of 1e5 that moved by 4 ulps (6e-11) over a conservative run is conserved.
        own = _ULPS * float(np.finfo(float).eps) * max(float(np.max(np.abs(got))), float(np.max(np.abs(want))))
        roundoff = max(roundoff, own)
    if got.size == 0 or not math.isfinite(roundoff):
        why = "no values were given" if got.size == 0 else f"scale is {scale}, not a finite number"
        return IdentityResult(INCONCLUSIVE, f"{why}, so the identity cannot be judged", count=int(got.size))
    deviation = np.abs(got - want)
    tolerance = np.maximum(roundoff if atol is None else float(atol), float(rtol) * np.abs(want))
    if not np.isfinite(deviation).all():
        where = _index(got.shape, int(np.argmax(~np.isfinite(deviation))))
        return IdentityResult(FAIL, f"a value is not finite{_at(where, got.size)}: the computation blew up or a NaN "
                              "entered", None, None, roundoff, where, int(got.size))
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero tolerance makes any deviation infinitely over it
        excess = np.where(deviation > tolerance, deviation / tolerance, 0.0)
    worst = int(np.argmax(excess)) if excess.max() > 0 else int(np.argmax(deviation))
    where, value, allowed = _index(got.shape, worst), float(deviation.flat[worst]), float(tolerance.flat[worst])
    at = _at(where, got.size) if value > 0 else ""  # every deviation 0: no place to name
    status, text = _identity_status(float(deviation.max()), excess.max() > 0, value, allowed, roundoff, at)
    size = max(float(np.max(np.abs(got), initial=0.0)), float(np.max(np.abs(want), initial=0.0)))
    if status == FAIL and float(deviation.max()) <= effective_floor(_FLOOR, size) and size > max(1.0, abs(scale)):
        # The quantities are far larger than scale says: a sum over many cells of size 1e5 loses
        # more than 1e-12 to round-off, and the user should know that scale sets the round-off.
        text += (f"; but the values are of size {size:.3g}, where round-off is about {effective_floor(_FLOOR, size):.3g}"
                 f": if the deviation is round-off of a sum or of a long run, pass scale={size:.3g}")
    return IdentityResult(status, text, value, allowed, roundoff, where, int(got.size))


def _broadcast(values: Any, expected: Any) -> tuple[np.ndarray, np.ndarray]:
    got, want = np.asarray(values, dtype=float), np.asarray(expected, dtype=float)
    try:
        return np.broadcast_arrays(got, want)  # type: ignore[return-value]
    except ValueError:
        raise PhysverifyError(f"identity_check: values of shape {got.shape} and expected values of shape "
                              f"{want.shape} do not broadcast; give one expected value or one per value") from None


def _identity_status(largest: float, over: bool, value: float, allowed: float, roundoff: float,
                     at: str) -> tuple[str, str]:
    """The status and its sentence: EXACT within round-off, PASS within the tolerance, FAIL beyond it."""
    if largest <= roundoff:
        return EXACT, f"largest deviation {largest:.3g}{at}, within round-off {roundoff:.3g}: the identity holds exactly"
    if not over:
        return PASS, (f"largest deviation {largest:.3g}{at}, above round-off {roundoff:.3g} but within the "
                      f"tolerance {allowed:.3g}")
    return FAIL, (f"deviation {value:.3g}{at}, above the tolerance {allowed:.3g} (round-off {roundoff:.3g}): the "
                  "identity does not hold")


def _index(shape: tuple[int, ...], flat: int) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _at(where: tuple[int, ...], count: int) -> str:
    """Where a deviation is, in words: 'at index 5 of 64 values', 'at index (3, 4) ...', or nothing for one number."""
    if not where:
        return ""
    spot = str(where[0]) if len(where) == 1 else "(" + ", ".join(str(i) for i in where) + ")"
    return f" at index {spot} of {count} value{'' if count == 1 else 's'}"


# --- spatial operators -------------------------------------------------------------------
def operator_study(
    apply: Callable[..., Any],
    field: Callable[..., Any],
    exact: Callable[..., Any],
    nxs: Levels,
    expected_order: float,
    *,
    domain: Sequence[Any] = (0.0, 1.0),
    sample: Points | Sequence[Points] = "cells",
    where: Points | Sequence[Points] = "cells",
    **check_order_kwargs: Any,
) -> OrderResult:
    """The observed order of a code's discrete operator ``apply(values, dx)`` against the exact derivative.

    For each nx, ``field(x)`` is sampled on a uniform grid of nx cells over ``domain`` at
    the ``sample`` points ("cells": the nx cell centres; "nodes" or "faces": the nx + 1
    cell edges; or a callable ``f(nx) -> coordinates``, such as centres with ghost cells),
    ``apply(values, dx)`` is called, and its result is compared in the max norm with
    ``exact(x)`` at the ``where`` points. A result of another length is an ERROR naming the
    lengths expected. h is the cell width; check_order judges the order (``scale`` defaults
    to the largest |field| or |exact| on 65 nodes per axis). Tensor-product 2-D (or more): ``domain`` is
    one (lo, hi) pair per axis, nx cells along each, ``field(X, Y)`` and ``exact(X, Y)`` take
    the grid arrays (indexing "ij"), ``apply(values, dx, dy)``, and ``sample``/``where`` a
    name or a tuple of one per axis (a staggered MAC grid: ("faces", "cells")). Curvilinear
    factors are the caller's field and exact functions. A PASS shows the operator converges
    at the expected order on this field at these points; it does not test boundary rows the
    ``where`` points leave out. Difference quotients amplify round-off by 1/dx**k: the study
    measures that round-off at each grid (``_roundoff_response``), and a FAIL or undecided
    result whose finest error is within ROUNDOFF_FACTOR of it is INCONCLUSIVE, saying to use
    coarser grids. The results, interpolated to fixed points, go to the sweep as the code's
    solutions, so a result converging to the wrong derivative is a FAIL at any error size.
    """
    axes = _axes(domain)
    fields = list(field) if isinstance(field, (tuple, list)) else [field]
    samples = _per_field(sample, len(fields), len(axes))
    wheres = _per_axis(where, len(axes), "where")

    span = max(hi - lo for lo, hi in axes)
    roundoff: dict[float, float] = {}  # h -> the operator's response to round-off of the field at that grid
    low: list[bool] = []
    notes: list[str] = []  # said once: the code computes in float32 because JAX's x64 is off

    def error(nx: int) -> Measured:
        values = [_evaluate(f, _grid(kinds, nx, axes), "field") for f, kinds in zip(fields, samples)]
        steps = tuple((hi - lo) / nx for lo, hi in axes)
        raw = apply(*values, *steps)
        notes[:] = notes or [frameworks.jax_x64_note(raw)]
        got = np.asarray(as_array(raw), dtype=float)
        points = _grid(wheres, nx, axes)
        want = np.broadcast_to(_evaluate(exact, points, "exact"), np.broadcast_shapes(*(p.shape for p in points)))
        if got.shape != want.shape:
            raise PhysverifyError(_length_mismatch(got.shape, want.shape, nx, where))
        precision = precision_of(raw)
        eps = max(epsilon(precision), _EPS64) if precision is not None else _EPS64
        noise = _roundoff_response(apply, values, steps, got, eps)
        roundoff[span / nx] = noise
        low.append(eps > _EPS64)  # the sweep judges a low precision's levels against this round-off
        distance = max_error(got, np.asarray(want), "apply")
        on_fixed = _on_fixed_points(got, points, axes)
        # The result's own precision travels with it (a float32 operator has float32 round-off), and
        # so does the measured round-off of this grid: the sweep judges growth against it.
        kept = np.asarray(on_fixed, dtype=precision) if on_fixed is not None and precision is not None else on_fixed
        return distance if kept is None else (distance, kept, noise)

    check_order_kwargs.setdefault("scale", max(_field_scale(f, exact, axes) for f in fields))
    check_order_kwargs.setdefault("refines", "space")  # a FAIL names stencils and grid locations, not stage times
    result = _order_sweep(nxs, error, lambda nx: span / nx, expected_order, **check_order_kwargs)
    return frameworks.with_note(_judge_roundoff(result, roundoff, span, any(low)), notes[0] if notes else "")


def _per_field(sample: Any, count: int, dims: int) -> list[list[Points]]:
    """The sample points of each field: one spec for all of them, or a list with one per field."""
    if count == 1:
        return [_per_axis(sample, dims, "sample")]
    specs = [sample] * count if isinstance(sample, str) or callable(sample) else list(sample)
    if len(specs) != count:
        raise PhysverifyError(f"operator_study: {count} fields need {count} sample point sets (one per field, each a "
                              f"name, a callable or one per axis), got {len(specs)}")
    return [_per_axis(spec, dims, "sample") for spec in specs]


def _on_fixed_points(got: np.ndarray, points: list[np.ndarray], axes: list[tuple[float, float]]) -> np.ndarray | None:
    """The result interpolated to fixed points, the same at every nx, so the sweep can see it converge; else None.

    The points of consecutive grids do not coincide (cell centres never nest), so the results are
    compared on _SCALE_NODES fixed points per axis by linear interpolation along each axis in turn
    (the grid is a tensor product), whose own O(dx**2) error shrinks with the grid: a result that
    converges, rightly or to the wrong derivative, gives differences that shrink, and one lost to an
    unresolved field gives differences that do not.
    """
    if got.ndim != len(axes) or any(p.shape != got.shape for p in points) or min(got.shape, default=0) < 2:
        return None
    values = got
    for axis, (lo, hi) in enumerate(axes):
        line = np.moveaxis(points[axis], axis, 0)[(slice(None),) + (0,) * (len(axes) - 1)]
        if np.any(np.diff(line) <= 0):
            return None
        fixed = np.linspace(lo, hi, _SCALE_NODES)
        values = np.apply_along_axis(lambda column: np.interp(fixed, line, column), axis, values)
    return values


# A difference quotient of order k turns the round-off of the field (eps |u|) into an error near
# eps |u| / dx**k, which GROWS as the grid is refined: a correct Laplacian's error turns round at
# nx ~ 10**4 and rises like dx**-2, which check_order reads as an error that levels off (a FAIL).
# The study measures that round-off at each grid instead of guessing k: the operator applied to the
# field plus a perturbation of a few units of round-off (fixed random signs), minus the operator of
# the field. An error within ROUNDOFF_FACTOR of that response is round-off, not truncation.
_PERTURBATION = 4.0 * float(np.finfo(float).eps)
_GROWTH_OVER_NOISE = 10.0


def _roundoff_response(apply: Callable[..., Any], values: list[np.ndarray], steps: tuple[float, ...],
                       got: np.ndarray, eps: float = _EPS64) -> float:
    """How much ``apply`` changes when its fields change by round-off (``eps``): the noise floor of its result."""
    sizes = [float(np.max(np.abs(v), initial=0.0)) for v in values]
    if max(sizes, default=0.0) == 0.0 or not all(math.isfinite(size) for size in sizes):
        return 0.0
    rng = np.random.default_rng(0)
    shaken_values = [v + _PERTURBATION / _EPS64 * eps * size * np.where(rng.random(np.shape(v)) < 0.5, -1.0, 1.0)
                     for v, size in zip(values, sizes)]
    shaken = np.asarray(as_array(apply(*shaken_values, *steps)), dtype=float)
    if shaken.shape != got.shape:
        return 0.0
    return float(np.max(np.abs(shaken - got), initial=0.0))


def _judge_roundoff(result: OrderResult, roundoff: dict[float, float], span: float, judged: bool = False) -> OrderResult:
    """INCONCLUSIVE, saying to use coarser grids, when a FAIL or an undecided study ends at the operator's round-off.

    ``judged``: the sweep was given the measured round-off (a low-precision code), so check_order judged
    growth against it.
    """
    if result.status not in (FAIL, INCONCLUSIVE) or not result.hs or result.hs[-1] not in roundoff:
        return result
    finest_h, finest = result.hs[-1], result.errors[-1]
    noise = roundoff[finest_h]
    if not (math.isfinite(finest) and finest <= ROUNDOFF_FACTOR * noise):
        return result
    if result.status == FAIL and GROWS in result.message and ROUNDOFF_NOT_USED in result.message:
        # The sweep judged the growth against this measured round-off (a low precision's), on the levels
        # above it by check_order's margin; the finer ones near it were left out: the FAIL does not rest on them.
        return result
    if GROWS in result.message and finest > (GROWTH_OVER_BOUND if judged else _GROWTH_OVER_NOISE) * noise:
        # Growth the sweep judged against this measured round-off (a low precision's, ``judged``) and found
        # above it by check_order's margin at every growing level: round-off cannot make that.
        return result
    clean = [h for h, e in zip(result.hs, result.errors) if h in roundoff and e > ROUNDOFF_FACTOR * roundoff[h]]
    coarser = (f"the finest grid whose error is far above its round-off is nx = {round(span / clean[-1])}"
               if clean else "no grid tried is far above it; use coarser grids")
    return replace(result, status=INCONCLUSIVE, message=(
        f"the error at the finest grid ({finest:.3g} at nx = {round(span / finest_h)}) is the round-off of the "
        f"difference quotient, not its truncation error: a change of the field by round-off changes the result by "
        f"{noise:.3g} there, and that grows as the grid is refined (eps |u| / dx**k for a k-th derivative); use "
        f"coarser grids ({coarser})"))


# The size of the field and of its image, which sets the noise floor, is read on this many
# nodes per axis: fixed, so the floor is the same at every level (a plan judges level by level).
_SCALE_NODES = 65


def _field_scale(field: Callable[..., Any], exact: Callable[..., Any], axes: list[tuple[float, float]]) -> float:
    """The largest |field| or |exact| on a fixed grid of nodes over the domain."""
    points = _grid(["nodes"] * len(axes), _SCALE_NODES - 1, axes)
    sizes = [np.max(np.abs(_evaluate(f, points, name)), initial=0.0) for f, name in ((field, "field"),
                                                                                      (exact, "exact"))]
    return float(max(sizes))


def _axes(domain: Sequence[Any]) -> list[tuple[float, float]]:
    """The (lo, hi) pair of each axis: ``(a, b)`` is one axis, ``((a, b), (c, d))`` two."""
    pairs = [domain] if len(domain) == 2 and all(np.ndim(end) == 0 for end in domain) else list(domain)
    axes: list[tuple[float, float]] = []
    for pair in pairs:
        try:
            lo, hi = (float(end) for end in pair)
        except (TypeError, ValueError):
            raise PhysverifyError(f"operator_study: the domain must be (lo, hi) or one (lo, hi) per axis, got "
                                  f"{domain!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise PhysverifyError(f"operator_study: each axis of the domain needs finite lo < hi, got {pair!r}")
        axes.append((lo, hi))
    return axes


def _per_axis(points: Points | Sequence[Points], dims: int, name: str) -> list[Points]:
    """One point set per axis: a name or callable for all of them, or a tuple of one per axis."""
    if isinstance(points, str) and points in _FACES_ALONG:
        axis = _FACES_ALONG[points]
        if axis >= dims:
            raise PhysverifyError(f"operator_study: {name}={points!r} needs {axis + 1} axes, the domain has {dims}")
        return ["faces" if i == axis else "cells" for i in range(dims)]
    chosen: list[Points] = ([points] * dims if isinstance(points, str) or callable(points)
                            else list(points))
    if len(chosen) != dims:
        raise PhysverifyError(f"operator_study: {name} gives {len(chosen)} point sets for {dims} axes")
    for kind in chosen:
        if not callable(kind) and kind not in POINTS:
            raise PhysverifyError(f"operator_study: {name}={kind!r} is not one of {', '.join(POINTS)}, "
                                  f"{', '.join(_FACES_ALONG)} or a callable f(nx) -> coordinates")
    return chosen


def _points(kind: Points, nx: int, lo: float, hi: float) -> np.ndarray:
    """The coordinates of one axis: nx cell centres, nx + 1 nodes/faces, or what a callable gives."""
    if callable(kind):
        return np.asarray(kind(nx), dtype=float).ravel()
    dx = (hi - lo) / nx
    if kind == "cells":
        return lo + (np.arange(nx) + 0.5) * dx
    return lo + np.arange(nx + 1) * dx


def _grid(kinds: list[Points], nx: int, axes: list[tuple[float, float]]) -> list[np.ndarray]:
    lines = [_points(kind, nx, lo, hi) for kind, (lo, hi) in zip(kinds, axes)]
    return lines if len(lines) == 1 else list(np.meshgrid(*lines, indexing="ij"))


def _evaluate(function: Callable[..., Any], points: list[np.ndarray], name: str) -> np.ndarray:
    value = np.asarray(function(*points), dtype=float)
    if value.ndim and value.shape != np.broadcast_shapes(*(p.shape for p in points)):
        raise PhysverifyError(f"operator_study: {name} returned shape {value.shape} on points of shape "
                              f"{points[0].shape}; evaluate it elementwise (numpy functions)")
    return value


def _length_mismatch(got: tuple[int, ...], want: tuple[int, ...], nx: int, where: Any) -> str:
    if len(got) <= 1 and len(want) == 1:
        return (f"apply returned {got[0] if got else 1} values at nx = {nx}, but where={where!r} has {want[0]} "
                f"points; cell centres give {nx}, nodes or faces {nx + 1}, or pass a callable f(nx) -> "
                "coordinates for the points the result lives on")
    return (f"apply returned shape {got} at nx = {nx}, but where={where!r} has shape {want}; cell centres give "
            f"{nx} along an axis, nodes or faces {nx + 1}")


# --- reversibility -----------------------------------------------------------------------
def reversibility_study(
    step_forward: Callable[[np.ndarray, float, float], Any],
    step_backward: Callable[[np.ndarray, float, float], Any],
    y0: Sequence[float] | np.ndarray,
    t_end: float,
    ns: Levels,
    expected_order: float,
    *,
    require_exact: bool = False,
    **check_order_kwargs: Any,
) -> OrderResult:
    """n steps forward to t_end, n steps back to 0, and the distance from y0, for each n in ``ns``.

    ``step_forward(y, t, h)`` advances y from t to t + h (h > 0); ``step_backward(y, t, h)``
    goes back from t to t - h (for a code that takes a negative step: ``lambda y, t, h:
    step(y, t, -h)``). The times are those of ``exact_steps``. EXACT when every round trip
    returns to y0 within round-off, as a symmetric (time-reversible) method does (Hairer,
    Lubich and Wanner, Geometric Numerical Integration, ch. V). Otherwise check_order judges
    the round-trip error against ``expected_order``: a method of order p that is not
    symmetric returns with an O(h**p) error, and a wrong backward step with an error that
    does not fall. With ``require_exact=True`` a settled error above round-off is a FAIL
    ("not time-reversible"). Round-off here grows with the 2n steps of the finest round
    trip (about 4 eps per step, never below check_order's floor; n is the largest listed
    level, or a plan's max_n). A PASS or EXACT shows
    the round trip; it does not show the forward run itself is accurate.
    """
    start = np.asarray(y0, dtype=float)

    def round_trip(n: int) -> tuple[float, np.ndarray]:
        times, h = exact_steps(t_end, n), float(t_end) / n
        y = start.copy()
        for t in times[:-1]:
            y = np.asarray(step_forward(y, float(t), h), dtype=float)
        for t in times[:0:-1]:
            y = np.asarray(step_backward(y, float(t), h), dtype=float)
        # The end state goes with the error: a round trip that converges to another state (a backward step
        # that goes forward) is then told apart from one that loses the state at far too coarse steps.
        return max_error(y, start, "the round trip"), y

    check_order_kwargs.setdefault("scale", float(np.max(np.abs(start), initial=0.0)))
    steps = 2 * _largest_level(ns)
    check_order_kwargs["floor"] = max(check_order_kwargs.get("floor", _FLOOR), steps * _ROUNDOFF_PER_STEP)
    result = _order_sweep(ns, round_trip, lambda n: float(t_end) / n, expected_order, **check_order_kwargs)
    return _judge_round_trip(result, require_exact)


def _judge_round_trip(result: OrderResult, require_exact: bool) -> OrderResult:
    if result.status == EXACT:
        return replace(result, message=f"every round trip returns to the start within round-off ({result.floor:.3g}): "
                       "the method is time-reversible (symmetric) on this problem")
    message = f"round-trip error: {result.message}"
    if not require_exact or result.status not in (PASS, FAIL):
        return replace(result, message=message)
    finest = result.errors[-1] if result.errors else math.nan
    return replace(result, status=FAIL, message=(
        f"not time-reversible: the round trip misses the start by about {finest:.3g} at the finest level, far "
        f"above round-off ({result.floor:.3g}), where a symmetric method returns to round-off; {message}"))
