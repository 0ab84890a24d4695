"""Checks, their results, and running one check with its time budget.

A check states one piece of correct behaviour (an order of accuracy, a conserved
quantity, an exact solution) and returns a Result. ``run_check`` is the single place
where a check is executed: whatever the code under test raises is recorded as an
ERROR result, ``SkipCheck`` becomes SKIP, and ``budget_s`` is enforced.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import math
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

PASS = "PASS"
FAIL = "FAIL"
EXACT = "EXACT"
INCONCLUSIVE = "INCONCLUSIVE"
ERROR = "ERROR"
SKIP = "SKIP"
STATUSES = (PASS, FAIL, EXACT, INCONCLUSIVE, ERROR, SKIP)

# A check still running at this multiple of its budget is stopped and reported
# INCONCLUSIVE, so that one slow check cannot starve the checks after it.
OVERRUN_FACTOR = 2.0


@dataclass(frozen=True)
class Result:
    """The outcome of one check: a status from STATUSES and a sentence saying why."""

    status: str
    message: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {', '.join(STATUSES)}")

    @property
    def ok(self) -> bool:
        """True for PASS and EXACT (EXACT: the error is at round-off, a stronger pass)."""
        return self.status in (PASS, EXACT)

    def _repr_html_(self) -> str:
        """How a Jupyter notebook shows a result: the status and the message, escaped; for a result
        that keeps an order study's numbers (OrderResult), the HTML report's own convergence plot,
        or without matplotlib the numbers as a text table."""
        # Imported here, not at the top: the numerics must not import the report when they are imported.
        from physverify.plot import notebook_html

        return notebook_html(self.status, self.message, result_data(self))


@dataclass(frozen=True)
class OrderResult(Result):
    """A Result from an order-of-accuracy study, keeping the numbers it was decided on.

    ``hs`` and ``errors`` are tuples of floats (the step sizes and errors actually
    measured, coarsest first); ``fitted`` is the observed order, or None when it could
    not be measured. ``floor`` is the noise floor the errors were judged against and
    ``fit_hs`` the step sizes the order was fitted on (empty when none was fitted); the
    HTML report draws both.
    """

    expected: float | None = None
    fitted: float | None = None
    hs: tuple[float, ...] = field(default_factory=tuple)
    errors: tuple[float, ...] = field(default_factory=tuple)
    floor: float | None = None
    fit_hs: tuple[float, ...] = field(default_factory=tuple)


class SkipCheck(Exception):
    """Raise inside a check's ``run`` to report SKIP (e.g. an optional dependency is missing)."""


def requires(*modules: str) -> None:
    """Raise SkipCheck unless every named module can be imported.

    Call it at the top of a check's ``run``: ``requires("numba")``. Nothing is imported;
    only whether the module can be found is looked up.
    """
    missing = [name for name in modules if _find_spec(name) is None]
    if missing:
        raise SkipCheck(f"needs {', '.join(missing)}, which is not installed")


def _find_spec(name: str) -> object | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent package missing, or a malformed name
        return None


@dataclass(frozen=True)
class Check:
    """One statement of correct behaviour.

    ``family`` groups checks by method (``"mms"``, ``"reference"``, ``"invariant"``,
    ``"exact"``...), ``label`` says in plain words what is tested, ``run()`` returns a
    Result, and ``budget_s`` (optional) is the time the check may take.
    """

    family: str
    label: str
    run: Callable[[], Result]
    budget_s: float | None = None


@dataclass(frozen=True)
class CheckOutcome:
    """What running a Check gave: its label, family, status, message and wall-clock seconds."""

    label: str
    family: str
    status: str
    message: str
    seconds: float
    result: Result | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status in (PASS, EXACT)

    def to_dict(self) -> dict[str, Any]:
        """The ledger form of spec section 3: {label, family, status, message, seconds}, plus "data"
        when the Result carries numbers (issue 12), so a report can be drawn from the ledger alone."""
        entry: dict[str, Any] = {
            "label": self.label,
            "family": self.family,
            "status": self.status,
            "message": self.message,
            "seconds": round(self.seconds, 4),
        }
        data = None if self.result is None else result_data(self.result)
        if data:
            entry["data"] = data
        return entry


# --- the budget -------------------------------------------------------------------
# The deadline of the check being run, as a time.monotonic() value. Order studies read
# it (remaining_budget) to stop adding resolutions before the next one would overrun.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("physverify_deadline", default=None)


# The run's deadline (spec section 4: --timeout kills the whole child) as a Unix time, set by the
# parent in the child's environment (isolate.run_child), so a refinement plan can stop before the
# run is killed and report the levels it tried instead of "timed out".
RUN_DEADLINE_ENV = "PHYSVERIFY_RUN_DEADLINE"


def run_time_left() -> float | None:
    """Seconds left before the run's --timeout kills this process, or None outside a run (or an unreadable value)."""
    raw = os.environ.get(RUN_DEADLINE_ENV)
    try:
        deadline = float(raw) if raw is not None else math.nan
    except ValueError:
        return None
    return deadline - time.time() if math.isfinite(deadline) else None


def remaining_budget() -> float | None:
    """Seconds left in the budget of the check now running, or None when it has none."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


class _BudgetOverrun(BaseException):
    # A BaseException, so that a broad ``except Exception`` in the code under test
    # cannot swallow the stop.
    pass


@contextlib.contextmanager
def _hard_stop_after(seconds: float) -> Iterator[None]:
    """Raise _BudgetOverrun in the main thread after ``seconds`` (POSIX main thread only).

    Elsewhere (Windows, another thread) there is no safe way to interrupt Python code,
    so the check simply runs to its end.
    """
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and math.isfinite(seconds)
        and seconds > 0
    )
    if not usable:
        yield
        return

    def _raise(signum: int, frame: object) -> None:
        raise _BudgetOverrun()

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _validate_budget(budget_s: float | None) -> float | None:
    if budget_s is None:
        return None
    try:
        budget = float(budget_s)
    except (TypeError, ValueError):
        budget = math.nan  # "1 s", [1]: refused below with the same sentence
    if isinstance(budget_s, bool) or not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget_s must be a positive number of seconds, not {budget_s!r}")
    return budget


def run_check(check: Check) -> CheckOutcome:
    """Run one check and never raise: every outcome of ``check.run()`` becomes a status.

    - a Result is kept as it is;
    - SkipCheck (or a failed ``requires``) gives SKIP with its message;
    - any other exception gives ERROR with ``"TypeName: message"`` and where it was raised;
    - a check still running at OVERRUN_FACTOR times its ``budget_s`` is stopped and
      reported INCONCLUSIVE, so the checks after it still run;
    - a return value that is not a Result gives ERROR (the check itself is miswritten).
    """
    start = time.monotonic()
    budget = _validate_budget(check.budget_s)
    token = _deadline.set(None if budget is None else start + budget)
    try:
        with _hard_stop_after(OVERRUN_FACTOR * budget if budget is not None else math.inf):
            result = _call(check)
    finally:
        _deadline.reset(token)
    seconds = time.monotonic() - start
    return CheckOutcome(check.label, check.family, result.status, result.message, seconds, result)


def _call(check: Check) -> Result:
    try:
        value = check.run()
    except SkipCheck as exc:
        return Result(SKIP, str(exc) or "skipped by the check")
    except _BudgetOverrun:
        return Result(
            INCONCLUSIVE,
            f"still running at {OVERRUN_FACTOR:g} times its budget of {check.budget_s:g} s, so it was stopped "
            "and the other checks went on; give it a larger budget_s or fewer resolutions",
        )
    except Exception as exc:  # recorded: a crash of the code under test is an ERROR result
        return Result(ERROR, describe_exception(exc))
    if not isinstance(value, Result):
        return Result(ERROR, f"the check returned {type(value).__name__}, not a physverify Result")
    return value


def describe_exception(exc: BaseException) -> str:
    """``"TypeName: message (at file.py:LINE in function)"``, naming the innermost frame."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return text


def result_data(result: Result) -> dict[str, Any]:
    """The fields a Result subclass adds to status and message (an OrderResult's hs, errors, expected,
    fitted, floor, fit_hs), as JSON-ready values; empty for a plain Result.

    inf and nan become None (JSON has no spelling for them; the ledger writes null too).
    A field that is not numbers, text or lists of them (a claim's own Result subclass may
    hold anything) is left out rather than allowed to break the child's JSON.
    """
    data = {}
    for spec in fields(result):
        if spec.name not in ("status", "message"):
            value = _json_ready(getattr(result, spec.name))
            if value is not _UNSERIALISABLE:
                data[spec.name] = value
    return data


_UNSERIALISABLE = object()


def _json_ready(value: Any) -> Any:
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # an array or a numpy scalar: its numbers
        value = value.tolist()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        items = [_json_ready(item) for item in value]
        return _UNSERIALISABLE if any(item is _UNSERIALISABLE for item in items) else items
    return _UNSERIALISABLE
