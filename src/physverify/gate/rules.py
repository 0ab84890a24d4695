"""The gate's rules as pure functions (DESIGN.md, "Replay: the gate"): no I/O, plain values in and out.

For one claim a replay knows four things: its verdict in the baseline (the ledger as
committed at --baseline), its verdict now (None when the claim file is gone), the latest
verdict recorded in the working ledger, and its ``expect`` entry. From those follow the
transition, whether the claim fails the gate and whether a ledger line is written.

The baseline and the recorded verdict are kept apart on purpose: the working ledger is
where a run writes, never what it is judged against, so re-running (or staging the line a
run wrote) can never clear a regression. tests/gate/test_rules.py walks every combination.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple

from physverify.text import short_repr
from physverify.verdict import CONFIRMED, NOT_DECIDABLE, REJECTED, VERDICTS

NEW = "new"  # no earlier line for the claim
UNCHANGED = "unchanged"
FIXED = "fixed"  # confirmed -> rejected
REGRESSED = "regressed"  # rejected -> confirmed: the defect is back
UNDECIDABLE = "undecidable"  # confirmed/rejected -> not decidable
DECIDED = "decided"  # not decidable -> confirmed/rejected
REMOVED = "removed"  # in the baseline, the claim file is gone
TRANSITIONS = (NEW, UNCHANGED, FIXED, REGRESSED, UNDECIDABLE, DECIDED, REMOVED)
# fixed and decided are good news and pass; "undecidable" also stands for a new claim
# that is not decidable, which the gate must not take in silently either.
DEFAULT_FAIL_ON = frozenset({REGRESSED, UNDECIDABLE})


def fail_on_problem(names: Iterable[str]) -> str | None:
    """What is wrong with a fail_on list (its names that are no transition), None when nothing is.

    physverify.yaml's ``fail_on`` and the Action's ``fail-on`` input both ask it; each caller
    raises its own error with the place the list came from.
    """
    unknown = [name for name in names if name not in TRANSITIONS]
    if not unknown:
        return None
    return f"unknown transition {', '.join(short_repr(name) for name in unknown)} (known: {', '.join(TRANSITIONS)})"


class Judgement(NamedTuple):
    transition: str
    failures: tuple[str, ...]  # why the claim fails the gate; empty when it passes
    write: bool  # append this run's line to the working ledger


def transition(before: str | None, after: str | None) -> str:
    """The transition from the baseline verdict (None: no line) to this run's (None: the file is gone)."""
    if after is None:
        return REMOVED
    if before not in VERDICTS:  # no line yet, or a hand-edited verdict we do not know
        return NEW
    if before == after:
        return UNCHANGED
    if after == NOT_DECIDABLE:
        return UNDECIDABLE
    if before == NOT_DECIDABLE:
        return DECIDED
    return FIXED if (before, after) == (CONFIRMED, REJECTED) else REGRESSED


def change(kind: str, before: str | None, after: str | None) -> str:
    """The transition in words with both verdicts: 'regressed: rejected -> confirmed'."""
    if kind in (NEW, UNCHANGED):
        return f"{kind}: {after}"
    return f"{kind}: {before or 'no verdict'} -> {after or 'removed'}"


def failures(kind: str, before: str | None, after: str | None, expected: str | None,
             fail_on: Collection[str], *, committed: str | None = None,
             staged: str | None = None) -> tuple[str, ...]:
    """Why a claim fails the gate. An ``expect`` entry, when there is one, decides alone.

    ``expect`` is a reviewed statement in physverify.yaml: a pinned known defect
    (``confirmed``) passes although it regressed, a pinned fix fails as soon as it moves.
    ``committed`` and ``staged``: the claim's line in the ledger the change commits
    (``edited_memory``) or has staged (``staged_line``), when that ledger differs from the
    baseline's. Kept with the claim's result, so a result judged again under another
    fail_on (the Action's input) keeps these failures too.
    """
    if expected is not None:
        return () if after == expected else (f"expected {expected} (physverify.yaml), got {after or 'removed'}",)
    found: tuple[str, ...] = ()
    if kind in fail_on:
        found = (change(kind, before, after),)
    elif kind == NEW and after == NOT_DECIDABLE and UNDECIDABLE in fail_on:
        found = ("new: not decidable (a new claim must give a verdict before the gate takes it in)",)
    return found + edited_memory(before, after, committed, fail_on) + staged_line(before, after, staged, fail_on)


def writes(after: str | None, recorded: str | None, record_all: bool = False) -> bool:
    """A line is appended when the verdict differs from the working ledger's latest line (or --record-all)."""
    if after is None:  # a removed claim has no new line to write
        return False
    return record_all or after != recorded


# The verdict a change's own ledger gives a claim whose baseline line it no longer holds (deleted, emptied or
# cut): merged, the claim has no baseline line, and a new claim's verdict passes unless it is not decidable.
DROPPED = "dropped"


def masks(committed: str | None, after: str, fail_on: Collection[str] = DEFAULT_FAIL_ON) -> bool:
    """Whether ``committed`` as a claim's baseline would pass a later verdict that ``after`` (the truth) fails.

    ``confirmed`` recorded for a claim that is ``rejected`` masks its regression (the next
    confirmed run is "unchanged"), ``not decidable`` masks both (the next run is "decided").
    A line stricter than the truth (``rejected`` for a confirmed claim) masks nothing. No
    line at all (None) masks a regression too: the next confirmed run is "new".
    """
    def fails(before: str | None, later: str) -> bool:
        return bool(failures(transition(before, later), before, later, None, fail_on))

    return any(fails(after, later) and not fails(committed, later) for later in VERDICTS)


def _drop_masks(before: str | None, after: str | None, fail_on: Collection[str]) -> bool:
    """Whether a ledger without the claim's baseline line (``DROPPED``) would pass a later verdict that fails now."""
    return before in VERDICTS and after is not None and masks(None, after, fail_on)


def edited_memory(before: str | None, after: str | None, committed: str | None,
                  fail_on: Collection[str] = DEFAULT_FAIL_ON) -> tuple[str, ...]:
    """The failure of a change whose own committed ledger records a verdict its code does not give.

    ``committed`` is the claim's latest verdict in the ledger as the change under test commits
    it (None when that ledger is the baseline's, or has no line for it). A change that adds a
    line the run does not reproduce passes its own gate (it is judged against the baseline),
    and once merged the line is the next change's baseline: a forged ``confirmed`` there let
    the next change's regression through as "unchanged". So the line fails here, where the
    run shows it untrue, when it would weaken the gate (``masks``). ``DROPPED``: that ledger
    has no line for a claim whose baseline has one (deleted, emptied, cut), which weakens the
    gate in the same way once merged.
    """
    if committed == DROPPED:
        return (f"the ledger this change commits has no line for it (its baseline says {before}): as the next "
                "baseline, that would let a later run pass that fails now; commit the ledger's lines with the change",
                ) if _drop_masks(before, after, fail_on) else ()
    if committed is None or after is None or committed in (before, after) or committed not in VERDICTS:
        return ()
    if not masks(committed, after, fail_on):
        return ()
    return (f"the ledger this change commits says {committed} (its baseline says {before or 'nothing'}), but "
            f"this run gives {after}: as the next baseline, that line would let a later run pass that fails now; "
            "commit the line this run writes instead",)


def staged_line(before: str | None, after: str | None, staged: str | None,
                fail_on: Collection[str] = DEFAULT_FAIL_ON) -> tuple[str, ...]:
    """The failure of a commit whose staged ledger records a verdict its staged code does not give (the hook).

    ``staged`` is the claim's latest verdict in the ledger as git's index holds it (None when
    that ledger is HEAD's, or has no line for it). A hook that stops `git commit -am` leaves
    its line in the working ledger and the code unstaged; committing the ledger alone then
    records a verdict for code the commit does not hold. Either way round it is untrue:
    ``confirmed`` over fixed code lets the defect's return pass later as "unchanged", and
    ``rejected`` over the defect reports a regression against the next, unrelated commit.
    Unlike ``edited_memory`` (the Action, judging a change that is already committed), the
    hook stops both, because the person at the commit can still stage what the line was
    written from. ``DROPPED`` (the staged ledger lost the claim's line) fails as
    ``edited_memory`` fails it.
    """
    if staged == DROPPED:
        return (f"the staged ledger has no line for it (HEAD's says {before}): committed, that would let a later "
                "run pass that fails now; stage the ledger's lines with the change",
                ) if _drop_masks(before, after, fail_on) else ()
    if staged is None or after is None or staged in (before, after) or staged not in VERDICTS:
        return ()
    return (f"the staged ledger says {staged} (HEAD's says {before or 'nothing'}), but the staged code gives "
            f"{after}: stage the code that line was written from, or take the line out of the commit",)


def judge(before: str | None, after: str | None, recorded: str | None, expected: str | None,
          fail_on: Collection[str] = DEFAULT_FAIL_ON, *, record_all: bool = False,
          committed: str | None = None, staged: str | None = None) -> Judgement:
    """The transition, the gate failures and the write decision for one claim.

    ``committed``: the claim's latest verdict in the ledger the change under test commits,
    when that differs from the baseline's ledger (``edited_memory``); ``staged``: the same
    for the ledger as staged, in the hook (``staged_line``). An ``expect`` entry decides
    alone here too. A claim whose staged line fails writes no line of its own: the line is
    the person's, to commit with its code or to take out, and a line written over it would
    only have to be undone by the next commit.
    """
    kind = transition(before, after)
    found = failures(kind, before, after, expected, fail_on, committed=committed, staged=staged)
    contradicted = expected is None and staged != DROPPED and bool(staged_line(before, after, staged))
    return Judgement(kind, found, writes(after, recorded, record_all) and not contradicted)
