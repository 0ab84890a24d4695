"""Plain-text output for a terminal: the confirm verdict (spec section 2) and run results.

Every field that comes from a claim, a check, a ledger or a file name is shown through
``visible``, so a newline or an escape in it cannot start a line of its own ("gate
passed", "::warning::") or reach the terminal (issue 13).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from physverify.checks import STATUSES
from physverify.text import visible
from physverify.verdict import variant_name

if TYPE_CHECKING:
    from physverify.gate.results import RunOutcome

def _outcome_line(role: str, outcome: Mapping[str, Any], where: str = "") -> str:
    message = visible(outcome.get("message") or "")
    line = f"  {where}{role} {visible(outcome.get('status'))} {visible(outcome.get('label'))}"
    return f"{line}: {message}" if message else line


def finished_line(role: str, outcome: Mapping[str, Any], run: str | None = None) -> str:
    """The line of one control or check as ``confirm`` prints it when the child finishes it."""
    return _outcome_line(role, outcome, where=f"{run}: " if run else "")


def render_confirm(record: Mapping[str, Any]) -> str:
    """The verdict line, one line for the control and one per check, then the claim and its reference."""
    # ``ledger show`` renders a line read back from a ledger, which a hand edit (or a hostile
    # commit) may have given any shape: every field is looked up, never assumed.
    impact = f" (impact: {visible(record['impact'])})" if record.get("impact") else ""
    lines = [f"{visible(record.get('verdict'))}{impact}: {visible(record.get('reason') or '')}"]
    control = record.get("control")
    if isinstance(control, Mapping):
        lines.append(_outcome_line("control", control))
    checks = record.get("checks")
    lines.extend(_outcome_line("check", check) for check in (checks if isinstance(checks, list) else [])
                 if isinstance(check, Mapping))
    lines.extend(_variant_lines(record))
    if record.get("text") is not None:
        place = f"{record.get('file')}:{record.get('line')}"
        lines.append(f"  claim: {visible(record['text'])} ({visible(place)}, from {visible(record.get('source'))})")
        lines.append(f"  reference: {visible(record.get('reference'))}")
        lines.extend(_unfound_target(record))
    allowed = record.get("allow_dependent_reference")
    if allowed:
        reason = allowed.get("reason") if isinstance(allowed, Mapping) else allowed
        lines.append(f"  dependent reference allowed: {visible(reason)}")
    return "\n".join(lines)


def _unfound_target(record: Mapping[str, Any]) -> list[str]:
    """A note when CLAIM["file"] named no file: a typo there is otherwise silent (only a null hash in the ledger)."""
    file = record.get("file")
    if not isinstance(file, str) or not file or "file_sha256" not in record or record["file_sha256"] is not None:
        return []
    return [f"  note: CLAIM['file'] {visible(repr(file))} was not found from the repository root or next to the "
            "claim file, so no hash of it is recorded; check the path (relative to the repository root)"]


def _variant_lines(record: Mapping[str, Any]) -> list[str]:
    """For a claim that names its fix (issue 17): where the held text is, and the variant run's outcomes."""
    side = record.get("variant")
    if not isinstance(side, Mapping):
        return []
    name = variant_name(str(side.get("held")))
    lines = [f"  the file holds the {visible(side.get('held'))} at line {visible(side.get('line'))}; "
             f"the second run is {name}"]
    control, checks = side.get("control"), side.get("checks")
    if not isinstance(control, Mapping):
        return lines + ["  (the second run did not take place: the run on the code decided the verdict)"]
    lines.append(_outcome_line("control", control, where=f"{name}: "))
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, Mapping):
            lines.append(_outcome_line("check", check, where=f"{name}: "))
    return lines


def render_run(outcome: RunOutcome) -> str:
    """One line per check (status, family, label, message), a line per spec that could not load, then counts."""
    lines: list[str] = []
    for spec in outcome.specs:
        if spec.load_error is not None:
            lines.append(f"LOAD-ERROR {visible(spec.load_error)}")
            continue
        for check in spec.checks:
            label, message = visible(check.get("label")), visible(check.get("message"))
            lines.append(f"{_status(check.get('status')):<12} {visible(check.get('family')):<10} {label}: {message}")
    lines.append(visible(outcome.summary()))
    return "\n".join(lines)


def _status(status: object) -> str:
    # The status starts the line: one the child made up is quoted, so it cannot pass for
    # physverify's own word or a workflow command.
    return str(status) if status in STATUSES else repr(visible(status))


# --- physverify replay ------------------------------------------------------------------
if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult


def replay_line(run: ClaimRun) -> str:
    """One claim of a replay: verdict, transition, claim path, file:line (and the baseline when it moved)."""
    was = f" (was {visible(run.baseline_verdict)})" if run.transition not in ("new", "unchanged") else ""
    line = f"{run.verdict or '(removed)':<13}  {run.transition:<11}  {visible(run.key)}  {visible(run.location)}{was}"
    if run.verdict == "not decidable":  # a load error or an untrusted test: say why, it needs action
        line += f"\n  why: {visible(run.reason)}"
    if run.evidence:  # the check that decided it, for every claim that moved or fails (issue 10)
        line += f"\n  {visible(run.evidence)}"
    return line + "".join(f"\n  gate: {visible(failure)}" for failure in run.failures)


def render(result: ReplayResult) -> str:
    """A replay: one line per claim, warnings, the counts, the gate's outcome, what to do next."""
    lines = [replay_line(run) for run in result.claims]
    lines += [f"warning: {visible(warning)}" for warning in result.warnings]
    lines.append(visible(result.summary()))
    if result.gate_failed:
        failing = sum(bool(run.failures) for run in result.claims)
        lines.append(f"gate failed: {failing} claim(s) (fail_on: {', '.join(sorted(result.fail_on)) or 'nothing'})")
        lines += [visible(way) for way in result.ways_forward()]
    elif result.exit_code:  # --pre-commit: a ledger the hook changed must be reviewed and staged
        lines.append("stopped: no verdict fails the gate, but the ledger changed")
    else:
        lines.append("gate passed")
    lines += [visible(note) for note in result.notes]
    return "\n".join(lines)


PROGRESS_EVERY_S = 5.0  # a CI log gets a count this often at most: alive, not flooded


class CountedProgress:
    """A replay's progress for a log that is not a terminal: ``[k/N] claims done (T s)`` through ``write``, at most
    every ``every_s`` and when the last claim ends (each claim's own line is the report's, at the end)."""

    def __init__(self, write: Callable[[str], None], start: float, every_s: float = PROGRESS_EVERY_S) -> None:
        self.write, self.start, self.every_s = write, start, every_s
        self.last = start

    def __call__(self, run: object, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < self.every_s:
            return
        self.last = now
        self.write(f"[{done}/{total}] claims done ({now - self.start:.0f} s)\n")
