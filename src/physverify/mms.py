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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from physverify._compat import accepts_060, renamed
from physverify.checks import OrderResult, remaining_budget
from physverify.errors import PhysverifyError
from physverify.order import check_order

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


@dataclass(frozen=True)
class Sweep:
    """The resolutions a budgeted sweep measured: step counts, errors, and a note when it stopped early."""

    ns: tuple[int, ...]
    errors: tuple[float, ...]
    note: str | None


def measure_resolutions(ns: Sequence[int], measure: Callable[[int], float]) -> Sweep:
    """Call ``measure(n)`` for each step count, coarsest first, within the running check's budget.

    Before each resolution after the first, its cost is estimated from the previous ones
    (the cost of a run grows linearly with its number of steps); when it would overrun
    ``physverify.checks.remaining_budget()``, the sweep stops and says so in ``note``.
    """
    order = step_counts(ns)
    # The budget left as the sweep starts: the check's budget_s less what the check did
    # before. Two significant digits keep that setup time (milliseconds) out of the message.
    budget = remaining_budget()
    done: list[int] = []
    errors: list[float] = []
    seconds_per_step = 0.0
    for n in order:
        left = remaining_budget()
        if done and left is not None and seconds_per_step * n > left:
            note = f"stopped after {len(done)} of {len(order)} resolutions to stay within the budget of {budget:.2g} s"
            return Sweep(tuple(done), tuple(errors), note)
        start = time.monotonic()
        errors.append(float(measure(n)))
        seconds_per_step = max(seconds_per_step, (time.monotonic() - start) / n)
        done.append(n)
    return Sweep(tuple(done), tuple(errors), None)


def step_counts(ns: Sequence[int]) -> list[int]:
    """The step counts as ints, smallest first; anything but positive integers is a PhysverifyError."""
    counts = [int(n) for n in ns]
    if not counts or any(n <= 0 or n != m for n, m in zip(counts, ns)):
        raise PhysverifyError(f"the step counts must be positive integers, got {list(ns)!r}")
    return sorted(counts)


def finish_study(sweep: Sweep, h: Callable[[int], float], expected_order: float, **check_order_kwargs: Any) -> OrderResult:
    """check_order on a sweep, ``h(n)`` the step size of resolution n, with the sweep's budget note in front of the message."""
    hs = [float(h(n)) for n in sweep.ns]
    result = check_order(hs, list(sweep.errors), expected_order, **check_order_kwargs)
    if sweep.note is None:
        return result
    if len(sweep.ns) < 2:
        return replace(result, message=f"{sweep.note}; one resolution cannot give an order: give the check a larger "
                       "budget_s or start from coarser steps")
    return replace(result, message=f"{sweep.note}; {result.message}")


def max_error(state: Any, exact: np.ndarray, what: str = "integrate") -> float:
    """The max-norm of state - exact; a state of the wrong shape is an adapter mistake (PhysverifyError)."""
    got = np.asarray(state, dtype=float)
    if got.shape != exact.shape:
        raise PhysverifyError(f"{what} returned a state of shape {got.shape}, but the solution has shape {exact.shape}")
    return float(np.max(np.abs(got - exact))) if got.size else 0.0


def solution_scale(mms: ManufacturedODE, t_end: float) -> float:
    """The size of the solution (largest |u| at the start and the end), which sets the noise floor."""
    return float(max(np.max(np.abs(mms.value(0.0))), np.max(np.abs(mms.value(t_end)))))


def mms_order_study(
    integrate: Integrate,
    mms: ManufacturedODE,
    t_end: float,
    ns: Sequence[int],
    expected_order: float,
    **check_order_kwargs: Any,
) -> OrderResult:
    """The observed order of ``integrate`` on a manufactured solution, judged by check_order.

    Runs ``integrate(mms.forcing, mms.value(0), t_end, n)`` for each n in ``ns`` (h =
    t_end / n), measures the max-norm error at t_end against ``mms.value(t_end)``, and
    passes ``scale`` (the size of the solution) to check_order unless given.
    Assumes the code's right-hand side equals ``mms.rhs_ref``: any difference shows up
    as an error that does not shrink. A PASS shows the code converges at the expected
    order to the solution of the reference equation at t_end; it does not test terms
    that vanish on this u, nor behaviour between 0 and t_end (see mms_trajectory_study).
    """
    y0, exact = mms.value(0.0), mms.value(t_end)
    sweep = measure_resolutions(ns, lambda n: max_error(integrate(mms.forcing, y0.copy(), t_end, n), exact))
    check_order_kwargs.setdefault("scale", solution_scale(mms, t_end))
    return finish_study(sweep, lambda n: t_end / n, expected_order, **check_order_kwargs)


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
    ns: Sequence[int],
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
    y0 = mms.value(0.0)
    sweep = measure_resolutions(ns, lambda n: _trajectory_error(integrate_run(mms.forcing, y0.copy(), t_end, n), mms))
    check_order_kwargs.setdefault("scale", _trajectory_scale(mms, t_end))
    return finish_study(sweep, lambda n: t_end / n, expected_order, **check_order_kwargs)


def _trajectory_scale(mms: ManufacturedODE, t_end: float, samples: int = 65) -> float:
    """The largest |u| over [0, t_end], sampled: the size that sets the noise floor of a whole run."""
    return float(max(np.max(np.abs(mms.value(float(t)))) for t in np.linspace(0.0, t_end, samples)))
