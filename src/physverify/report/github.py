"""GitHub Actions workflow commands for a replay: annotations on the claimed file:line.

``::error`` for a claim that fails the gate, ``::warning`` for a confirmed defect that is
still there (or whose claim file is gone), ``::notice`` for any other claim that moved (a
fix, a new or decided claim), each naming the check that decided it. Escaping follows the runner's rules for
workflow commands (actions/toolkit, core/src/command.ts): in the message, %, CR and LF
are percent-encoded; in a property, also ':' and ','. Every other control character, and
the bidi marks, are shown as escapes first (physverify.text.visible), so no text from a
claim reaches the log as an ANSI escape or a line of its own (issue 13).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from physverify.gate.rules import REMOVED, UNCHANGED
from physverify.report import finding
from physverify.text import visible
from physverify.verdict import CONFIRMED

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult


def escape_data(text: str) -> str:
    """``text`` safe as a workflow command's message."""
    return visible(text, keep="\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """``text`` safe as a workflow command's property value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: object) -> str:
    """One workflow command line: ::name key=value,...::message."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _kind(run: ClaimRun) -> str | None:
    if run.failures:
        return "error"
    if run.verdict == CONFIRMED or (run.transition == REMOVED and run.baseline_verdict == CONFIRMED):
        return "warning"  # a defect that is there, or a confirmed claim whose file is gone: loudly
    return "notice" if run.transition != UNCHANGED else None  # a fix, a new or decided claim: with its evidence


def _annotation(run: ClaimRun, kind: str) -> str:
    title = f"physverify: claim {run.transition}" if kind != "warning" else "physverify: confirmed defect"
    return command(kind, finding(run), file=run.target or run.key, line=run.line, title=title)


# GitHub shows at most this many annotations of each kind (error, warning, notice) for a step;
# the rest are in the log only ("Workflow commands for GitHub Actions", annotation limits).
SHOWN_PER_KIND = 10


def annotation_lines(result: ReplayResult) -> list[tuple[str, str]]:
    """(kind, workflow command) of each annotation, claims that moved or fail the gate first: when GitHub's cap
    hides some, the hidden ones are unchanged defects, not the change a reader is looking for."""
    runs = sorted(result.claims, key=lambda run: run.transition == UNCHANGED and not run.failures)  # stable
    found = [(kind, _annotation(run, kind)) for run in runs if (kind := _kind(run)) is not None]
    found += [("warning", command("warning", w, title="physverify: ledger")) for w in result.warnings]
    kind = "error" if result.exit_code else "notice"
    return found + [(kind, command(kind, n, title="physverify replay")) for n in result.notes]


def hidden(result: ReplayResult) -> dict[str, int]:
    """How many annotations of each kind GitHub will not show (over SHOWN_PER_KIND), for the kinds over it."""
    counts: dict[str, int] = {}
    for kind, _ in annotation_lines(result):
        counts[kind] = counts.get(kind, 0) + 1
    return {kind: n - SHOWN_PER_KIND for kind, n in counts.items() if n > SHOWN_PER_KIND}


def render(result: ReplayResult) -> str:
    """One annotation per claim worth one (those that moved or fail first), then a summary line for the log."""
    lines = [line for _, line in annotation_lines(result)]
    counts = ", ".join(f"{n} {t}" for t, n in result.counts().items()) or "no claims run"
    lines.append(f"physverify replay: {'gate failed' if result.exit_code else 'gate passed'} ({counts}; "
                 f"{len(result.skipped)} skipped as unaffected)")
    return "\n".join(lines)
