"""The verdict rules of spec section 2, as one pure function, and the exit codes.

``decide`` takes what is known about one claim run (a load error, the static notes of
rule 1, whether the run timed out, the control's and the checks' statuses) and returns
the verdict, its one-sentence reason and the exit code. It does no I/O, so the whole
table is tested with plain values (tests/test_verdict.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Union

from physverify.checks import ERROR, EXACT, FAIL, INCONCLUSIVE, PASS, SKIP, CheckOutcome

CONFIRMED = "confirmed"
REJECTED = "rejected"
NOT_DECIDABLE = "not decidable"
VERDICTS = (CONFIRMED, REJECTED, NOT_DECIDABLE)

class ExitCode(IntEnum):
    """The exit codes, the same for every command and for the Action (DESIGN.md, "Commands")."""

    OK = 0  # rejected; a gate that holds; every check passed
    FINDING = 1  # confirmed; a gate that fails; a check that failed
    ERROR = 2  # not decidable, a load error, a usage error, a refusal
    CRASH = 3  # a bug in physverify: never 1, which means "confirmed" or "the gate failed"
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as a shell reports it
    TERMINATED = 143  # SIGTERM (128 + 15)


# The names from before ExitCode, kept for code that imports them.
EXIT_OK = ExitCode.OK
EXIT_FINDING = ExitCode.FINDING
EXIT_ERROR = ExitCode.ERROR
EXIT_CRASH = ExitCode.CRASH
EXIT_INTERRUPTED = ExitCode.INTERRUPTED
EXIT_TERMINATED = ExitCode.TERMINATED

EXIT_FOR_VERDICT = {REJECTED: EXIT_OK, CONFIRMED: EXIT_FINDING, NOT_DECIDABLE: EXIT_ERROR}

# A check outcome as decide() reads it: a CheckOutcome or its ledger dict.
Outcome = Union[CheckOutcome, Mapping[str, Any]]


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    exit_code: int


def _status(outcome: Outcome) -> str:
    return outcome.status if isinstance(outcome, CheckOutcome) else str(outcome["status"])


def _label(outcome: Outcome) -> str:
    return outcome.label if isinstance(outcome, CheckOutcome) else str(outcome["label"])


def _not_decidable(reason: str) -> Verdict:
    return Verdict(NOT_DECIDABLE, reason, EXIT_ERROR)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _named(outcomes: Sequence[Outcome]) -> str:
    return ", ".join(f"'{_label(o)}' ({_status(o)})" for o in outcomes)


def decide(
    *,
    load_error: str | None = None,
    dependent_notes: Sequence[str] = (),
    timed_out: bool = False,
    timeout_s: float | None = None,
    control: Outcome | None = None,
    checks: Sequence[Outcome] = (),
) -> Verdict:
    """Apply rules 0-6 in order; the first that matches gives the verdict.

    ``dependent_notes`` are the reference_notes that still count (empty when
    --allow-dependent-reference overrode them). ``load_error`` covers rule 0 and also a
    child that died before reporting (its cause is the reason).
    """
    if load_error is not None:  # rule 0
        return _not_decidable(load_error)
    if dependent_notes:  # rule 1, static: nothing has run
        return _not_decidable(
            "the reference is not independent: " + "; ".join(dependent_notes)
            + " (give --allow-dependent-reference REASON if this is intended)"
        )
    if timed_out:  # rule 2
        limit = f" after {timeout_s:g} s" if timeout_s is not None else ""
        return _not_decidable(f"timed out{limit}")
    if control is None or not checks:
        return _not_decidable("the claim's process gave no control or no checks to judge")
    if _status(control) not in (PASS, EXACT):  # rule 3; EXACT is the stronger pass
        return _not_decidable(
            f"the control '{_label(control)}' is {_status(control)}, not PASS, so the test itself is not trusted"
        )
    failed = [c for c in checks if _status(c) == FAIL]
    if failed:  # rule 4: one failing check of the correct behaviour is enough
        return Verdict(
            CONFIRMED,
            f"the control passed and {len(failed)} of {_count(len(checks), 'check')} failed: {_named(failed)}",
            EXIT_FINDING,
        )
    undecided = [c for c in checks if _status(c) in (INCONCLUSIVE, ERROR, SKIP)]
    if undecided:  # rule 5
        reason = f"the control passed and no check failed, but {_named(undecided)} did not give a PASS"
        if any(_status(c) == ERROR for c in undecided):
            reason += (
                "; an ERROR is not counted as confirmation, because the exception may come from the adapter "
                "rather than from the claimed defect (turn the crash into a check if the crash is the defect)"
            )
        return _not_decidable(reason)
    # rule 6
    passed = "the check passed" if len(checks) == 1 else f"all {len(checks)} checks passed"
    return Verdict(REJECTED, f"the control passed and {passed}", EXIT_OK)


def decisive(record: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The outcome that decided a ledger line's verdict, as (role, outcome); None when none did (a load error).

    The same order as ``decide``: a control that is not PASS, else the first FAIL check,
    else the first check that did not give a PASS, else (rejected) the first check.
    """
    control = record.get("control")
    given = record.get("checks")  # a hand-edited or foreign ledger line may hold anything here
    checks = [c for c in given if isinstance(c, Mapping)] if isinstance(given, list) else []
    if not isinstance(control, Mapping) or not checks:
        return None
    if str(control.get("status")) not in (PASS, EXACT):
        return "control", control
    for wanted in ((FAIL,), (INCONCLUSIVE, ERROR, SKIP)):
        for check in checks:
            if str(check.get("status")) in wanted:
                return "check", check
    return "check", checks[0]


def evidence(record: Mapping[str, Any]) -> str | None:
    """The decisive outcome as one line, 'check FAIL <label>: <message>', or None."""
    found = decisive(record)
    if found is None:
        return None
    role, outcome = found
    message = str(outcome.get("message") or "")
    line = f"{role} {outcome.get('status')} {outcome.get('label')}"
    return f"{line}: {message}" if message else line
