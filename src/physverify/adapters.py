"""Adapters from a real code's step routine to the integrate contract of physverify.mms.

Most codes do not offer ``integrate(source, y0, t_end, n_steps)``: they have a routine that
takes one step, and a loop around it (often ``while t < t_end``) that lives in a script or a
notebook. The adapters here own that loop, so a claim file only names the step routine and
the right-hand side or force of the code under test:

- ``from_step(step, rhs)`` for a first-order stepper ``step(f, t, y, h) -> y_next``;
- ``from_second_order_step(step, accel)`` for position/velocity steppers (Verlet, leapfrog,
  Beeman) ``step(x, v, t, h, accel) -> (x, v)``;
- ``exact_steps(t_end, n)``, the step times both use, for claims that drive a code's own
  loop body with another signature.

Why the loop is not the code's own: a loop ``while t < t_end: ...; t += h`` adds h to a
float n times, and the sum can fall short of t_end by one ulp; then the loop takes n + 1
steps (11 for n = 10, 81 for n = 80 with t_end = 1), so the end state belongs to another
time, and the error no longer falls with h. The times here are computed as k * t_end / n,
each with one rounding, so exactly n steps are taken and the last ends at t_end itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from physverify import frameworks
from physverify.arrays import as_array
from physverify.errors import PhysverifyError
from physverify.mms import Integrate, Source

Rhs = Callable[[float, np.ndarray], Any]
Step = Callable[[Rhs, float, np.ndarray, float], Any]
Accel = Callable[[np.ndarray, np.ndarray, float], Any]
SecondOrderStep = Callable[[np.ndarray, np.ndarray, float, float, Accel], Any]

# The position part of a manufactured forcing for a state (x, v) is x' - v, zero when the
# manufactured velocity is the derivative of the manufactured position; the complex-step
# derivative of physverify.mms gives it to round-off. Anything above this multiple of the
# state's size means v is not x', and the forcing cannot enter the acceleration alone.
_POSITION_FORCING_TOLERANCE = 1e-9


def exact_steps(t_end: float, n: int) -> np.ndarray:
    """The n + 1 times ``k * t_end / n`` for k = 0 ... n: 0.0 first, ``t_end`` itself last.

    Each time is computed on its own (one multiplication, one division), so no round-off
    accumulates from step to step, as it does when a loop adds h to t; the last is set to
    ``t_end`` exactly, since (n * t_end) / n can differ from t_end in the last bit.
    """
    count = _step_count(n)
    end = float(t_end)
    if not np.isfinite(end):
        raise PhysverifyError(f"exact_steps needs a finite end time, got {t_end!r}")
    times = np.arange(count + 1, dtype=float) * end / count
    times[-1] = end
    return times


def _step_count(n: int) -> int:
    """n as a positive int; a bool, a fraction or a non-positive count is a PhysverifyError."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise PhysverifyError(f"the number of steps must be a positive integer, got {n!r}")
    return int(n)


def _source_at(source: Source, t: float, size: int) -> np.ndarray:
    """source(t) as a float array of the state's size (a scalar such as zero_source's 0.0 broadcasts)."""
    value = np.asarray(source(t), dtype=float)
    try:
        return np.broadcast_to(value, (size,))
    except ValueError:
        raise PhysverifyError(f"the source gave shape {value.shape} at t = {t:g}, but the state has {size} "
                              "components") from None


def from_step(step: Step, rhs: Rhs) -> Integrate:
    """The integrate contract from a one-step routine ``step(f, t, y, h) -> y_next`` of the code under test.

    ``rhs(t, y)`` is the code's own right-hand side; the adapter hands the step
    ``f(t, y) = rhs(t, y) + source(t)``, so a manufactured forcing enters wherever the step
    evaluates f (every stage, at the stage's own time). Assumes the step uses f for every
    evaluation of the right-hand side (a step that calls the code's rhs directly never sees
    the forcing) and takes y and h as given. It takes exactly n steps of h = t_end / n at
    the times of ``exact_steps(t_end, n)``, and returns the state after the last one as a
    float array of y0's shape, in the precision the step computed it (a state of another
    shape is a PhysverifyError).

    A compiled step is called as its own users call it: an ``@njit`` step gets f compiled
    with Numba (calling ``rhs`` as compiled code when it is ``@njit`` too, the forcing in an
    object-mode block); a ``jax.jit`` step with f static (``static_argnums=0``) gets an f it
    can trace, the forcing added through a host callback.
    """

    made = _Made()

    def integrate(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> np.ndarray:
        times = exact_steps(t_end, n_steps)
        h = float(t_end) / len(times[:-1])  # t_end / n, n already checked by exact_steps
        y = np.array(y0, dtype=float)
        forced = made.get(source, y.shape, lambda: _first_order_f(step, rhs, source, y))
        for t in times[:-1]:
            y = _same_shape(_compiled_call("from_step", step, forced, float(t), y, h), y, "step")
        return y

    return integrate


class _Made:
    """The f an adapter made for each forcing and state shape, so a compiled one is compiled once, not at every level.

    Numba takes ~0.5 s to compile one. Forcings are compared with ==: a study passes
    ``mms.forcing``, a new bound method at every level, equal to the last one.
    """

    def __init__(self) -> None:
        self._made: list[tuple[Source, tuple[int, ...], Callable[..., Any]]] = []

    def get(self, source: Source, shape: tuple[int, ...], make: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
        for known, known_shape, function in self._made:
            if known == source and known_shape == shape:
                return function
        function = make()
        self._made = [*self._made[-7:], (source, shape, function)]
        return function


def _first_order_f(step: Step, rhs: Rhs, source: Source, like: np.ndarray) -> Callable[..., Any]:
    """The f = rhs + source handed to ``step``: plain Python, or compiled for a compiled step."""
    shape, size = like.shape, like.size

    def kick(t: float, *_: Any) -> np.ndarray:
        return _source_at(source, float(t), size).reshape(shape)

    def forced(t: float, state: np.ndarray) -> np.ndarray:
        value = np.asarray(as_array(rhs(t, state)), dtype=float)
        return value + kick(t).reshape(value.shape)

    if frameworks.is_numba_dispatcher(step):
        return frameworks.numba_first_order(rhs, kick, like)
    if frameworks.is_jax_jitted(step):
        return frameworks.jax_traceable(rhs, kick)
    return forced


def _compiled_call(adapter: str, step: Callable[..., Any], *args: Any) -> Any:
    """``step(*args)``; a compiled step that cannot take the adapter's function is a one-line PhysverifyError."""
    try:
        return step(*args)
    except TypeError as exc:
        if frameworks.is_jax_jitted(step) and "function" in str(exc):
            raise PhysverifyError(f"{adapter}: {frameworks.JAX_STATIC_HINT}") from None
        raise
    except Exception as exc:  # re-raised unless it is Numba's refusal to compile, said in one line
        if frameworks.is_numba_dispatcher(step) and type(exc).__name__ == "TypingError":
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PhysverifyError(f"{adapter}: Numba could not compile the step with the adapter's function "
                                  f"({first}); compile the code's right-hand side with @njit as well, or give "
                                  "the step as its users call it") from None
        raise


def _floating(value: Any) -> np.ndarray:
    """``value`` as an array of its own float precision; anything not floating becomes float64."""
    state = as_array(value)
    return state if np.issubdtype(state.dtype, np.floating) else state.astype(float)


def _same_shape(value: Any, previous: np.ndarray, what: str) -> np.ndarray:
    """``value`` as a float array of ``previous``'s shape; another shape is an adapter mistake.

    A floating result keeps its precision (a float32 code's state stays float32, so the studies
    judge it against float32 round-off); anything else becomes float64.
    """
    state = _floating(value)
    if state.shape != previous.shape:
        raise PhysverifyError(f"{what} returned a state of shape {state.shape}, but it was given shape "
                              f"{previous.shape}")
    return state


def from_second_order_step(step: SecondOrderStep, accel: Accel) -> Integrate:
    """The integrate contract from a position/velocity stepper ``step(x, v, t, h, accel) -> (x, v)``.

    For Verlet, leapfrog, Beeman and other steppers of x'' = a(x, v, t). The contract's
    state is the flat array ``[x..., v...]``: y0 and the result are the positions followed
    by the velocities, and the step gets x and v as float arrays of half the state's
    length. ``accel(x, v, t)`` is the code's acceleration (force over mass); the step is
    handed ``accel(x, v, t) + source_v(t)``, so the manufactured forcing enters the
    acceleration only, at the time the step asks for it. That needs the forcing's position
    part to be zero: the manufactured solution's velocity must be the derivative of its
    position (u = (X(t), X'(t))); otherwise the adapter raises a PhysverifyError rather than
    drop a forcing. Assumes the step evaluates the acceleration only through the ``accel``
    it is given. Exactly n steps of h = t_end / n at the times of ``exact_steps``. The
    state returned keeps the precision of the x and v the step returned (a float32 code's
    stays float32, so the study judges it against float32 round-off); ``@njit`` and
    ``jax.jit`` steps are called as in ``from_step``.
    """

    made = _Made()

    def integrate(source: Source, y0: np.ndarray, t_end: float, n_steps: int) -> np.ndarray:
        y = np.array(y0, dtype=float).ravel()
        if y.size == 0 or y.size % 2:
            raise PhysverifyError(f"a position/velocity state has an even number of components (x..., v...), "
                                  f"got {y.size}")
        half = y.size // 2
        times = exact_steps(t_end, n_steps)
        h = float(t_end) / len(times[:-1])  # t_end / n, n already checked by exact_steps

        x, v = y[:half].copy(), y[half:].copy()
        forced = made.get(source, x.shape, lambda: _second_order_a(step, accel, source, x))
        for t in times[:-1]:
            x, v = _pair(_compiled_call("from_second_order_step", step, x, v, float(t), h, forced), half)
        return np.concatenate([x, v]).reshape(np.shape(y0))

    return integrate


def _second_order_a(step: SecondOrderStep, accel: Accel, source: Source, like: np.ndarray) -> Callable[..., Any]:
    """The acceleration accel + the source's velocity part handed to ``step``: plain Python, or compiled for it."""
    half = like.size

    def kick(x: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        both = _source_at(source, float(t), 2 * half)
        _refuse_position_forcing(both[:half], np.asarray(x), np.asarray(v), float(t))
        return np.asarray(both[half:])

    def forced(x: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        return np.asarray(as_array(accel(x, v, t)), dtype=float) + kick(x, v, t)

    if frameworks.is_numba_dispatcher(step):
        return frameworks.numba_second_order(accel, kick, like)
    if frameworks.is_jax_jitted(step):
        return frameworks.jax_traceable(accel, kick)
    return forced


def _refuse_position_forcing(position_part: np.ndarray, x: np.ndarray, v: np.ndarray, t: float) -> None:
    size = max(1.0, float(np.max(np.abs(x), initial=0.0)), float(np.max(np.abs(v), initial=0.0)))
    worst = float(np.max(np.abs(position_part), initial=0.0))
    if worst > _POSITION_FORCING_TOLERANCE * size:
        raise PhysverifyError(
            f"the manufactured forcing has a position part of {worst:.3g} at t = {t:g}: the manufactured "
            "velocity is not the derivative of the manufactured position, so the forcing cannot enter the "
            "acceleration alone; write u(t) as (X(t), X'(t))")


def _pair(value: Any, half: int) -> tuple[np.ndarray, np.ndarray]:
    """The (x, v) a second-order step returned, as arrays of ``half`` components each in their own float precision.

    Not float64 after every step: a float32 code's state stays float32 from step to step, as
    in the code's own loop, and the study learns its precision (``_same_shape``).
    """
    try:
        x, v = value
    except (TypeError, ValueError):
        raise PhysverifyError("step must return a pair (x, v)") from None
    x, v = _floating(x).ravel(), _floating(v).ravel()
    if x.size != half or v.size != half:
        raise PhysverifyError(f"step returned x and v of {x.size} and {v.size} components, but the state has "
                              f"{half} positions and {half} velocities")
    return x, v
