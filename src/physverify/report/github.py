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


def render(result: ReplayResult) -> str:
    """One annotation per claim worth one, then a summary line for the log."""
    lines = [_annotation(run, kind) for run in result.claims if (kind := _kind(run)) is not None]
    lines += [command("warning", w, title="physverify: ledger") for w in result.warnings]
    lines += [command("error" if result.exit_code else "notice", n, title="physverify replay") for n in result.notes]
    counts = ", ".join(f"{n} {t}" for t, n in result.counts().items()) or "no claims run"
    lines.append(f"physverify replay: {'gate failed' if result.exit_code else 'gate passed'} ({counts}; "
                 f"{len(result.skipped)} skipped as unaffected)")
    return "\n".join(lines)
