"""Markdown of a replay, for $GITHUB_STEP_SUMMARY: a headline, the counts, one table row per claim."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from physverify.replay import ClaimRun, ReplayResult


def _cell(text: object) -> str:
    # A pipe would end the cell and a newline the row (GitHub Flavored Markdown tables).
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _row(run: ClaimRun) -> str:
    mark = "**fails the gate**: " + "; ".join(run.failures) if run.failures else ""
    cells = (run.verdict or "(removed)", run.transition, f"`{run.key}`", f"`{run.location}`",
             run.baseline_verdict or "", (mark or run.reason) + (f"; {run.evidence}" if run.evidence else ""))
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def render(result: ReplayResult) -> str:
    """The replay as a Markdown section: the gate's outcome, the counts, the table, warnings."""
    headline = "gate failed" if result.exit_code else "gate passed"
    lines = [f"## physverify replay: {headline}", "", result.summary() + ".", ""]
    if result.claims:
        lines += ["| verdict | transition | claim | file:line | baseline | note |",
                  "|---|---|---|---|---|---|", *(_row(run) for run in result.claims), ""]
    lines += [f"> warning: {_cell(w)}" for w in result.warnings]
    lines += [f"> {_cell(n)}" for n in result.notes]
    return "\n".join(lines)
