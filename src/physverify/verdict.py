"""The verdict rules of spec section 2, as one pure function, and the exit codes.

``decide`` takes what is known about one claim run (a load error, the static notes of
rule 1, whether the run timed out, the control's and the checks' statuses) and returns
the verdict, its one-sentence reason and the exit code. It does no I/O, so the whole
table is tested with plain values (tests/test_verdict.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Any, NamedTuple, Union

from physverify.checks import ERROR, EXACT, FAIL, INCONCLUSIVE, PASS, SKIP, CheckOutcome
from physverify.text import plural

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


class Verdict(NamedTuple):
    verdict: str
    reason: str
    exit_code: int


def _status(outcome: Outcome) -> str:
    return outcome.status if isinstance(outcome, CheckOutcome) else str(outcome["status"])


def _label(outcome: Outcome) -> str:
    return outcome.label if isinstance(outcome, CheckOutcome) else str(outcome["label"])


def _not_decidable(reason: str) -> Verdict:
    return Verdict(NOT_DECIDABLE, reason, EXIT_ERROR)


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
    before = _rules_0_to_3(load_error=load_error, dependent_notes=dependent_notes, timed_out=timed_out,
                           timeout_s=timeout_s, control=control, checks=checks)
    if before is not None:
        return before
    failed = [c for c in checks if _status(c) == FAIL]
    if failed:  # rule 4: one failing check of the correct behaviour is enough
        return Verdict(
            CONFIRMED,
            f"the control passed and {len(failed)} of {plural(len(checks), 'check')} failed: {_named(failed)}",
            EXIT_FINDING,
        )
    undecided = _undecided(checks)
    if undecided:  # rule 5
        reason = f"the control passed and no check failed, but {_named(undecided)} did not give a PASS"
        return _not_decidable(reason + _error_note(undecided))
    # rule 6
    passed = "the check passed" if len(checks) == 1 else f"all {len(checks)} checks passed"
    return Verdict(REJECTED, f"the control passed and {passed}", EXIT_OK)


def _rules_0_to_3(
    *, load_error: str | None, dependent_notes: Sequence[str], timed_out: bool, timeout_s: float | None,
    control: Outcome | None, checks: Sequence[Outcome], where: str = "",
) -> Verdict | None:
    """The verdict of rules 0-3, or None when the checks decide; ``where`` names the run (issue 17)."""
    if load_error is not None:  # rule 0
        return _not_decidable(load_error + (f" ({where.strip()})" if where else ""))
    if dependent_notes:  # rule 1, static: nothing has run
        return _not_decidable(
            "the reference is not independent: " + "; ".join(dependent_notes)
            + " (give --allow-dependent-reference REASON if this is intended)"
        )
    if timed_out:  # rule 2
        limit = f" after {timeout_s:g} s" if timeout_s is not None else ""
        return _not_decidable(f"timed out{limit}{where}")
    if control is None or not checks:
        return _not_decidable(f"the claim's process gave no control or no checks to judge{where}")
    if _status(control) not in (PASS, EXACT):  # rule 3; EXACT is the stronger pass
        return _not_decidable(
            f"the control '{_label(control)}' is {_status(control)}{where}, not PASS, so the test itself is not trusted"
        )
    return None


def settled(run: Run, timeout_s: float | None = None) -> Verdict | None:
    """The verdict rules 0, 2 and 3 give one run (rule 1 is static and comes first), or None when its checks decide."""
    return _rules_0_to_3(load_error=run.load_error, dependent_notes=(), timed_out=run.timed_out, timeout_s=timeout_s,
                         control=run.control, checks=run.checks)


def _undecided(checks: Sequence[Outcome]) -> list[Outcome]:
    return [c for c in checks if _status(c) in (INCONCLUSIVE, ERROR, SKIP)]


def _error_note(undecided: Sequence[Outcome]) -> str:
    if not any(_status(c) == ERROR for c in undecided):
        return ""
    return ("; an ERROR is not counted as confirmation, because the exception may come from the adapter "
            "rather than from the claimed defect (turn the crash into a check if the crash is the defect)")


# --- claims that name their fix (issue 17) ------------------------------------------------
class Run(NamedTuple):
    """One child run of a claim as the rules read it: its control and checks, or why there are none."""

    control: Outcome | None
    checks: Sequence[Outcome]
    load_error: str | None = None
    timed_out: bool = False


def variant_name(held: str) -> str:
    """The variant run in words: the fix swapped in, or the defect put back."""
    return "with the fix" if held == "defect" else "with the defect put back"


def _side(checks: Sequence[Outcome]) -> str | None:
    """FAIL when a check failed (whatever the others), PASS when every check passed, else None (rules 4-6)."""
    if any(_status(c) == FAIL for c in checks):
        return FAIL
    return None if _undecided(checks) else PASS


def decide_fixed(
    *,
    held: str,
    code: Run,
    variant: Run | None,
    file: str = "the file",
    served: bool = True,
    dependent_notes: Sequence[str] = (),
    timeout_s: float | None = None,
) -> Verdict:
    """The verdict of a claim with ``defect`` and ``fix``: rules 0-3 for both runs, then the table of issue 17.

    ``held`` is the text the file holds; ``variant`` is None when the code's run already
    ended at rules 0-3 (the variant is then not run). ``served`` says whether the variant
    run imported the variant at all.
    """
    first = _rules_0_to_3(load_error=code.load_error, dependent_notes=dependent_notes, timed_out=code.timed_out,
                          timeout_s=timeout_s, control=code.control, checks=code.checks)
    if first is not None:
        return first
    name = variant_name(held)
    if variant is None:
        return _not_decidable(f"the run {name} did not take place")
    second = _rules_0_to_3(load_error=variant.load_error, dependent_notes=(), timed_out=variant.timed_out,
                           timeout_s=timeout_s, control=variant.control, checks=variant.checks, where=f" in the run {name}")
    if second is not None:
        return second
    if not served:
        return _not_decidable(
            f"the claim never imported {file}, so the run {name} ran the code as it is; import the code under test "
            "as a module (import solver), not by reading or copying the file"
        )
    return _table(held, name, code.checks, variant.checks)


def _table(held: str, name: str, code: Sequence[Outcome], variant: Sequence[Outcome]) -> Verdict:
    on_code, on_variant = _side(code), _side(variant)
    for side, outcomes, where in ((on_code, code, "on the code"), (on_variant, variant, name)):
        if side is None:
            undecided = _undecided(outcomes)
            return _not_decidable(f"the controls passed and no check failed {where}, but {_named(undecided)} "
                                  f"did not give a PASS {where}" + _error_note(undecided))
    if on_code == FAIL and on_variant == PASS and held == "defect":
        failed = [c for c in code if _status(c) == FAIL]
        return Verdict(CONFIRMED, f"the checks fail, and the claimed fix makes them pass: {_named(failed)} on the code, "
                                  "and every check passes with the fix", EXIT_FINDING)
    if on_code == PASS and on_variant == FAIL:
        broken = _named([c for c in variant if _status(c) == FAIL])
        if held == "defect":
            return Verdict(REJECTED, f"the checks pass, and the suggested change breaks them: {broken} with the "
                                     "suggested fix", EXIT_OK)
        return Verdict(REJECTED, f"the checks pass, and fail with the claimed defect put back: {broken} with the "
                                 "defect", EXIT_OK)
    if on_code == PASS:  # and PASS on the variant
        return _not_decidable(f"the checks cannot tell the code from the variant (every check passes on the code and "
                              f"{name}), so they cannot see the claimed defect; add a check that fails on one of them")
    if on_variant == FAIL:
        both = _named([c for c in code if _status(c) == FAIL])
        return _not_decidable(f"the checks fail with and without the change ({both} on the code and {name}): what "
                              "they expect does not hold for this code (a wrong expected order, another defect)")
    return _not_decidable("the checks fail on the code and pass with the defect put back: defect and fix look "
                          "swapped; exchange CLAIM['defect'] and CLAIM['fix'] if the file holds the defect")


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
    """The decisive outcome as one line, 'check FAIL <label>: <message>', or None.

    For a claim that names its fix, the decisive pair: 'check FAIL on the code, PASS with
    the fix: <label>: <message>' (issue 17).
    """
    pair = _decisive_pair(record)
    if pair is not None:
        return pair
    found = decisive(record)
    if found is None:
        return None
    role, outcome = found
    message = str(outcome.get("message") or "")
    line = f"{role} {outcome.get('status')} {outcome.get('label')}"
    return f"{line}: {message}" if message else line


def _outcomes(value: object) -> list[Mapping[str, Any]]:
    return [c for c in value if isinstance(c, Mapping)] if isinstance(value, list) else []


def _decisive_pair(record: Mapping[str, Any]) -> str | None:
    """The check whose two runs decided a claim with ``defect`` and ``fix``, as one line; None otherwise.

    First a check that fails on one side and passes on the other, else one that fails on
    either, else the first; the checks of the two runs are paired by position.
    """
    variant = record.get("variant")
    control = record.get("control")
    if not isinstance(variant, Mapping) or not isinstance(control, Mapping):
        return None
    if str(control.get("status")) not in (PASS, EXACT):
        return None  # the code's own control decided: the plain evidence says so
    name = variant_name(str(variant.get("held")))
    other = variant.get("control")
    if isinstance(other, Mapping) and str(other.get("status")) not in (PASS, EXACT):
        return _line(f"control {other.get('status')} {name}", other)
    pairs = list(zip(_outcomes(record.get("checks")), _outcomes(variant.get("checks"))))
    if not pairs:
        return None
    statuses = [(str(a.get("status")), str(b.get("status"))) for a, b in pairs]
    passes = (PASS, EXACT)
    wanted = [i for i, (a, b) in enumerate(statuses) if (a == FAIL and b in passes) or (a in passes and b == FAIL)]
    wanted += [i for i, (a, b) in enumerate(statuses) if FAIL in (a, b)] + [0]
    code, other_check = pairs[wanted[0]]
    a, b = statuses[wanted[0]]
    shown = other_check if b == FAIL and a != FAIL else code
    return _line(f"check {a} on the code, {b} {name}: {code.get('label')}", shown)


def _line(head: str, outcome: Mapping[str, Any]) -> str:
    message = str(outcome.get("message") or "")
    return f"{head}: {message}" if message else head
