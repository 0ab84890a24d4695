"""What a replay found: the result types every report renders, and the gate's exit rule (issue 19).

They live apart from replay.py, as pytest's reports live apart from its runner: the
formats in report/, the Action and the MCP server read them, and none of them imports a
command to do so. ``exit_code`` is the one rule that turns judged claims into the gate's
exit, and ``with_fail_on`` the one way to judge a result again under another fail_on
(the Action's input), so no entry point rebuilds either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from physverify.gate import rules as gate
from physverify.checks import ERROR, FAIL, INCONCLUSIVE, STATUSES
from physverify.gate.rules import TRANSITIONS, UNCHANGED
from physverify.text import plural
from physverify.verdict import EXIT_ERROR, EXIT_FINDING, EXIT_OK, NOT_DECIDABLE, ExitCode, evidence

__all__ = ["ClaimRun", "ReplayResult", "RunOutcome", "SpecOutcome", "exit_code", "gate_failures", "with_fail_on"]


@dataclass(frozen=True)
class ClaimRun:
    """One claim in a replay: its ledger object (None when removed), baseline, transition, gate failures."""

    key: str
    transition: str
    verdict: str | None
    baseline_verdict: str | None
    record: Mapping[str, Any] | None
    baseline: Mapping[str, Any] | None
    expected: str | None = None
    failures: tuple[str, ...] = ()  # why this claim fails the gate; empty when it does not
    target: str | None = None  # the claimed file, relative to the repository root when found
    line: int | None = None
    recorded: bool = False  # a ledger line was written for it in this run
    # its latest verdict in the ledger the change commits (committed) or has staged (staged, the hook), when
    # that ledger differs from the baseline's: what gate.failures judges besides the transition
    committed: str | None = None
    staged: str | None = None
    seconds: float | None = None  # the claim's whole run (reading to verdict, every child); None when not run

    @property
    def location(self) -> str:
        """The claimed place as file:line (the claim file itself when the target is unknown)."""
        if self.target is None:
            return self.key
        return f"{self.target}:{self.line}" if self.line is not None else self.target

    @property
    def reason(self) -> str:
        """The verdict's one-sentence reason (or why a removed claim has none)."""
        if self.record is None:
            return "the claim file is gone; its last verdict was " + str(self.baseline_verdict)
        return str(self.record.get("reason") or "")

    @property
    def evidence(self) -> str | None:
        """The check that decided the verdict, 'check FAIL <label>: <message>' (None for an unchanged, passing claim)."""
        if self.transition == UNCHANGED and not self.failures:
            return None
        return evidence(self.record or self.baseline or {})

    def change(self) -> str:
        """The transition in words, with both verdicts: 'regressed: rejected -> confirmed'."""
        return gate.change(self.transition, self.baseline_verdict, self.verdict)


@dataclass(frozen=True)
class ReplayResult:
    """Everything a replay found, for the renderers in report/, and its exit code."""

    claims: tuple[ClaimRun, ...]
    skipped: tuple[str, ...]  # claim keys not re-run because no input changed
    ledger: Path
    written: int
    fail_on: frozenset[str]
    exit_code: int
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    baseline_ref: str | None = None
    shard: str | None = None

    def counts(self) -> dict[str, int]:
        """How many claims had each transition, in the order of TRANSITIONS."""
        return {t: n for t in TRANSITIONS if (n := sum(run.transition == t for run in self.claims))}

    @property
    def gate_failed(self) -> bool:
        return any(run.failures for run in self.claims)

    def ways_forward(self) -> tuple[str, ...]:
        """What the person can do about the gate's failures (docs/replay.md), one sentence per kind; () when it holds.

        A failure alone names what moved, not what to do; every format that shows it can show these.
        """
        failing = [run for run in self.claims if run.failures]
        regressed = [run for run in failing if run.transition == gate.REGRESSED]
        ways = []
        if regressed:
            key = regressed[0].key if len(regressed) == 1 else "CLAIM.py"
            ways.append("to pass: fix the code the claim is about (re-running or staging the ledger does not clear a "
                        f"regression), or pin a defect kept on purpose with 'expect: {{{key}: confirmed}}' in the "
                        "claims folder's physverify.yaml, in a reviewed commit (docs/replay.md)")
        if any(run.verdict == NOT_DECIDABLE for run in failing):
            ways.append("to pass: a claim that cannot be judged says why on its 'why:' line; "
                        "docs/troubleshooting.md says what to change")
        return tuple(ways)

    def summary(self) -> str:
        """``3 claims: 2 unchanged, 1 new; 0 skipped as unaffected; 1 line written to LEDGER``."""
        counts = ", ".join(f"{n} {t}" for t, n in self.counts().items()) or "no claims run"
        return (
            f"{plural(len(self.claims), 'claim')}: {counts}; {len(self.skipped)} skipped as unaffected; "
            f"{plural(self.written, 'line')} written to {self.ledger}"
        )


def gate_failures(run: ClaimRun, fail_on: frozenset[str]) -> tuple[str, ...]:
    """Why ``run`` fails the gate under ``fail_on`` (gate.failures applied to a ClaimRun)."""
    return gate.failures(run.transition, run.baseline_verdict, run.verdict, run.expected, fail_on,
                         committed=run.committed, staged=run.staged)


def exit_code(runs: Iterable[ClaimRun], *, pre_commit: bool = False, written: int = 0) -> ExitCode:
    """The gate's exit: a finding when a claim fails it, or when the pre-commit hook wrote to the ledger."""
    failed = any(run.failures for run in runs) or (pre_commit and written > 0)
    return ExitCode.FINDING if failed else ExitCode.OK


def with_fail_on(result: ReplayResult, fail_on: frozenset[str]) -> ReplayResult:
    """``result`` judged again under ``fail_on`` (the Action's input): each claim's failures, then the exit."""
    runs = tuple(replace(run, failures=gate_failures(run, fail_on)) for run in result.claims)
    return replace(result, claims=runs, fail_on=fail_on, exit_code=exit_code(runs))


# --- physverify run (run_specs.py) ---------------------------------------------------------
_BAD = (FAIL, ERROR, INCONCLUSIVE)


@dataclass(frozen=True)
class SpecOutcome:
    """One spec file: its checks' ledger dicts, or why it could not be loaded."""

    path: str
    load_error: str | None
    checks: list[dict[str, Any]] = field(default_factory=list)
    stderr_tail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "load_error": self.load_error, "checks": self.checks, "stderr_tail": self.stderr_tail}


@dataclass(frozen=True)
class RunOutcome:
    specs: list[SpecOutcome]

    @property
    def exit_code(self) -> int:
        """2 when a spec could not load, 1 when a check is FAIL, ERROR or INCONCLUSIVE, else 0."""
        if any(spec.load_error is not None for spec in self.specs):
            return EXIT_ERROR
        if any(check["status"] in _BAD for spec in self.specs for check in spec.checks):
            return EXIT_FINDING
        return EXIT_OK

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for spec in self.specs:
            for check in spec.checks:
                counts[check["status"]] = counts.get(check["status"], 0) + 1
        counts["load errors"] = sum(spec.load_error is not None for spec in self.specs)
        return counts

    def summary(self) -> str:
        """``3 PASS, 1 FAIL, 1 load error in 2 spec files``: only the non-zero counts."""
        parts = [f"{n} {name}" if name != "load errors" or n != 1 else "1 load error" for name, n in self.counts().items() if n]
        files = f"{len(self.specs)} spec file" + ("" if len(self.specs) == 1 else "s")
        return f"{', '.join(parts) or 'no checks'} in {files}"

    def to_dict(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "counts": self.counts(), "specs": [s.to_dict() for s in self.specs]}
