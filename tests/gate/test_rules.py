"""gate/rules.py: transitions, the gate and the write rule for every combination (issue 10; DESIGN.md "Replay: the gate")."""

from __future__ import annotations

import itertools

import pytest

from physverify.gate import rules as gate
from physverify.gate.rules import DECIDED, FIXED, NEW, REGRESSED, REMOVED, TRANSITIONS, UNCHANGED, UNDECIDABLE
from physverify.verdict import CONFIRMED, NOT_DECIDABLE, REJECTED

C, R, N = CONFIRMED, REJECTED, NOT_DECIDABLE
GONE = None  # the claim file is gone: no verdict now

# DESIGN.md's transitions, written out for every (baseline, now) pair.
TRANSITION = {
    (None, C): NEW, (None, R): NEW, (None, N): NEW,
    (C, C): UNCHANGED, (C, R): FIXED, (C, N): UNDECIDABLE, (C, GONE): REMOVED,
    (R, R): UNCHANGED, (R, C): REGRESSED, (R, N): UNDECIDABLE, (R, GONE): REMOVED,
    (N, N): UNCHANGED, (N, C): DECIDED, (N, R): DECIDED, (N, GONE): REMOVED,
}
BASELINES = (None, C, R, N)
NOWS = (C, R, N, GONE)
RECORDED = (None, C, R, N)
EXPECTS = (None, C, R, N)
FAIL_ONS: tuple[frozenset[str], ...] = (gate.DEFAULT_FAIL_ON, frozenset(), frozenset(TRANSITIONS), frozenset({FIXED, REMOVED}))
COMBINATIONS = [c for c in itertools.product(BASELINES, NOWS, RECORDED, EXPECTS, FAIL_ONS) if c[:2] != (None, GONE)]


def should_fail(kind: str, now: str | None, expect: str | None, fail_on: frozenset[str]) -> bool:
    if expect is not None:  # a reviewed pin decides alone
        return now != expect
    return kind in fail_on or (kind == NEW and now == N and UNDECIDABLE in fail_on)


@pytest.mark.parametrize(("baseline", "now", "recorded", "expect", "fail_on"), COMBINATIONS)
def test_every_combination_gives_the_designed_transition_gate_and_write(
    baseline: str | None, now: str | None, recorded: str | None, expect: str | None, fail_on: frozenset[str]
) -> None:
    judged = gate.judge(baseline, now, recorded, expect, fail_on)
    assert judged.transition == TRANSITION[(baseline, now)]
    assert bool(judged.failures) == should_fail(judged.transition, now, expect, fail_on)
    # a line only when the verdict differs from the working ledger's latest line for the claim
    assert judged.write == (now is not None and now != recorded)
    assert gate.judge(baseline, now, recorded, expect, fail_on, record_all=True).write == (now is not None)


def test_the_default_gate_fails_regressions_and_undecidable_claims_and_passes_good_news() -> None:
    failing = {kind for kind in TRANSITIONS if kind in gate.DEFAULT_FAIL_ON}
    assert failing == {REGRESSED, UNDECIDABLE}
    assert gate.judge(C, R, C, None).failures == ()  # fixed: good news, its line is written
    assert gate.judge(N, C, N, None).failures == ()  # decided
    assert gate.judge(None, N, None, None).failures == (
        "new: not decidable (a new claim must give a verdict before the gate takes it in)",)
    assert gate.judge(None, C, None, None).failures == ()


def test_a_regression_fails_however_often_it_is_recorded() -> None:
    """Re-running or staging the ledger changes only ``recorded``: the committed baseline still says rejected."""
    first = gate.judge(R, C, R, None)
    again = gate.judge(R, C, C, None)  # the first run wrote "confirmed" to the working ledger
    assert first.failures == again.failures == ("regressed: rejected -> confirmed",)
    assert (first.write, again.write) == (True, False)


def test_pinning_a_known_defect_lets_its_regression_through_and_a_pinned_fix_cannot_move() -> None:
    assert gate.judge(R, C, C, C).failures == ()
    assert gate.judge(C, R, R, R).failures == ()
    assert gate.judge(R, C, R, R).failures == ("expected rejected (physverify.yaml), got confirmed",)
    assert gate.judge(R, GONE, R, R).failures == ("expected rejected (physverify.yaml), got removed",)


def test_a_removed_claim_fails_only_when_fail_on_names_it_and_writes_nothing() -> None:
    assert gate.judge(C, GONE, C, None) == gate.Judgement(REMOVED, (), False)
    assert gate.judge(C, GONE, C, None, {REMOVED}).failures == ("removed: confirmed -> removed",)


def test_an_unknown_baseline_verdict_compares_with_nothing() -> None:
    assert gate.transition("maybe", R) == NEW


# --- a change whose own committed ledger records what its code does not give -----------------
# (committed, truth) -> whether that line, as the next baseline, would pass a later run the truth fails
MASKS = {
    (C, R): True,   # the next confirmed run would be "unchanged": a regression let through
    (N, R): True,   # the next confirmed run would be "decided"
    (N, C): True,   # the next not-decidable run would be "unchanged"
    (R, C): False,  # stricter than the truth: a later confirmed or not-decidable run still fails
    (C, N): False, (R, N): False,  # nothing fails after a not-decidable verdict
}


@pytest.mark.parametrize(("committed", "truth"), sorted(MASKS))
def test_a_committed_line_masks_exactly_the_verdicts_it_would_let_through(committed: str, truth: str) -> None:
    assert gate.masks(committed, truth) == MASKS[(committed, truth)]
    assert not gate.masks(committed, truth, frozenset())  # a gate that fails nothing has nothing to mask


@pytest.mark.parametrize(("before", "now", "committed", "fails"), [
    (R, R, C, True),       # a forged confirmed line for a rejected claim
    (None, R, C, True),    # the same for a new claim
    (R, R, N, True),
    (R, R, R, False),      # the change's ledger agrees with the run
    (C, R, R, False),      # a fix committed with its line
    (C, R, None, False),   # the change commits no line for it (the baseline's ledger)
    (R, R, "bogus", False),  # not a verdict: never a baseline (ledger.py)
    (R, C, R, False),      # stricter than the truth; the regression itself fails
])
def test_a_change_that_commits_a_line_its_code_does_not_give_fails_when_it_would_weaken_the_gate(
    before: str | None, now: str, committed: str | None, fails: bool
) -> None:
    judged = gate.judge(before, now, now, None, committed=committed)
    assert any("the ledger this change commits says" in f for f in judged.failures) == fails
    pinned = gate.judge(before, now, now, now, committed=committed)
    assert pinned.failures == ()  # an expect entry decides alone


@pytest.mark.parametrize(("before", "now", "staged", "fails"), [
    (R, R, C, True),       # the regression's line staged without the regression (the fixed code is staged)
    (C, C, R, True),       # the fix's line staged without the fix
    (R, R, N, True),
    (None, R, C, True),    # a new claim's line that its staged code does not give
    (C, R, R, False),      # the fix staged with its line
    (R, C, C, False),      # the regression staged with its line: it fails as the regression, not here
    (R, R, None, False),   # the staged ledger holds HEAD's line for it
    (R, R, "bogus", False),  # not a verdict: never a baseline (ledger.py)
])
def test_a_staged_line_its_staged_code_does_not_give_stops_the_commit_either_way_and_is_not_written_over(
    before: str | None, now: str, staged: str | None, fails: bool
) -> None:
    judged = gate.judge(before, now, staged if staged in gate.VERDICTS else now, None, staged=staged)
    assert any(f.startswith(f"the staged ledger says {staged} ") for f in judged.failures) == fails
    assert not (fails and judged.write)  # the person's line is left for them to stage with its code or take out
    pinned = gate.judge(before, now, now, now, staged=staged)
    assert pinned.failures == ()  # an expect entry decides alone
    again = gate.failures(judged.transition, before, now, None, gate.DEFAULT_FAIL_ON, staged=staged)
    assert again == judged.failures  # the same rule when a result is judged again (results.with_fail_on)


@pytest.mark.parametrize(("before", "now", "fails"), [
    (R, R, True),      # merged, the claim is new: its regression would pass as "new: confirmed"
    (C, R, True),      # a fix whose ledger forgets the claim: the same
    (N, R, True),
    (C, C, False),     # a new claim's confirmed passes anyway; its not decidable still fails
    (N, N, False),
    (R, C, False),     # the regression fails as itself
    (None, R, False),  # nothing in the baseline to drop
])
def test_a_ledger_that_drops_a_claims_line_fails_when_the_claim_would_then_pass_as_new(
    before: str | None, now: str, fails: bool
) -> None:
    committed = gate.judge(before, now, now, None, committed=gate.DROPPED)
    assert any("the ledger this change commits has no line for it" in f for f in committed.failures) == fails
    staged = gate.judge(before, now, None, None, staged=gate.DROPPED)
    assert any("the staged ledger has no line for it" in f for f in staged.failures) == fails
    assert staged.write  # the line the run writes is the one the staged ledger lacks
    assert gate.judge(before, now, now, now, committed=gate.DROPPED).failures == ()  # expect decides alone
