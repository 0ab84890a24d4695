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
            lines.append(f"LOAD-ERROR {spec.path}: {spec.load_error}")
            continue
        for check in spec.checks:
            lines.append(f"{check['status']:<12} {check['family']:<10} {check['label']}: {check['message']}")
    lines.append(outcome.summary())
    return "\n".join(lines)
