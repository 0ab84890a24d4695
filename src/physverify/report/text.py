"""Plain-text output for a terminal: the confirm verdict (spec section 2) and run results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from physverify.run_specs import RunOutcome


def _outcome_line(role: str, outcome: Mapping[str, Any]) -> str:
    message = outcome.get("message") or ""
    line = f"  {role} {outcome['status']} {outcome['label']}"
    return f"{line}: {message}" if message else line


def render_confirm(record: Mapping[str, Any]) -> str:
    """The verdict line, one line for the control and one per check, then the claim and its reference."""
    impact = f" (impact: {record['impact']})" if record.get("impact") else ""
    lines = [f"{record['verdict']}{impact}: {record['reason']}"]
    if record.get("control") is not None:
        lines.append(_outcome_line("control", record["control"]))
    lines.extend(_outcome_line("check", check) for check in record.get("checks") or [])
    if record.get("text") is not None:
        lines.append(
            f"  claim: {record['text']} ({record.get('file')}:{record.get('line')}, from {record.get('source')})"
        )
        lines.append(f"  reference: {record.get('reference')}")
    if record.get("allow_dependent_reference"):
        allowed = record["allow_dependent_reference"]
        lines.append(f"  dependent reference allowed: {allowed['reason']}")
    return "\n".join(lines)


def render_run(outcome: RunOutcome) -> str:
    """One line per check (status, family, label, message), a line per spec that could not load, then counts."""
    lines: list[str] = []
    for spec in outcome.specs:
        if spec.load_error is not None:
            lines.append(f"LOAD-ERROR {spec.load_error}")
            continue
        for check in spec.checks:
            lines.append(f"{check['status']:<12} {check['family']:<10} {check['label']}: {check['message']}")
    lines.append(outcome.summary())
    return "\n".join(lines)


# --- physverify replay ------------------------------------------------------------------
if TYPE_CHECKING:
    from physverify.replay import ClaimRun, ReplayResult


def replay_line(run: ClaimRun) -> str:
    """One claim of a replay: verdict, transition, claim path, file:line (and the baseline when it moved)."""
    was = f" (was {run.baseline_verdict})" if run.transition not in ("new", "unchanged") else ""
    line = f"{run.verdict or '(removed)':<13}  {run.transition:<11}  {run.key}  {run.location}{was}"
    if run.verdict == "not decidable":  # a load error or an untrusted test: say why, it needs action
        line += f"\n  why: {run.reason}"
    if run.evidence:  # the check that decided it, for every claim that moved or fails (issue 10)
        line += f"\n  {run.evidence}"
    return line + "".join(f"\n  gate: {failure}" for failure in run.failures)


def render(result: ReplayResult) -> str:
    """A replay: one line per claim, warnings, the counts, the gate's outcome, what to do next."""
    lines = [replay_line(run) for run in result.claims]
    lines += [f"warning: {warning}" for warning in result.warnings]
    lines.append(result.summary())
    if result.gate_failed:
        failing = sum(bool(run.failures) for run in result.claims)
        lines.append(f"gate failed: {failing} claim(s) (fail_on: {', '.join(sorted(result.fail_on)) or 'nothing'})")
    elif result.exit_code:  # --pre-commit: a ledger the hook changed must be reviewed and staged
        lines.append("stopped: no verdict fails the gate, but the ledger changed")
    else:
        lines.append("gate passed")
    lines += result.notes
    return "\n".join(lines)
