"""Plain-text output of ``physverify ledger log`` and ``physverify ledger merge``.

A ledger is a file of the repository: every value read from it is shown through
``visible``, so a control character in it cannot reach the terminal (issue 13).
"""

from __future__ import annotations

from pathlib import Path

from physverify.gate.ledger import LogResult, LogRow, MergeResult
from physverify.text import clip, plural, visible

REASON_WIDTH = 90  # a terminal line; the full reason stays in the ledger
COMMIT_WIDTH = 12  # as `git log --oneline` abbreviates, plus "-dirty"


def render_log(result: LogResult, ledger: Path | None = None, *, missing: bool = False) -> str:
    """A table of the claim's history: date, verdict, commit, (claim,) reason; oldest first.

    With no rows, the message names ``ledger`` (the file read) and says when it is ``missing``.
    """
    if not result.rows:
        about = f" for {visible(result.claim)}" if result.claim else ""
        return f"no ledger lines{about}{_where(ledger, missing)}"
    show_claim = result.claim is None
    header = ("date", "verdict", "commit", *(("claim",) if show_claim else ()), "reason")
    table = [header] + [_cells(row, show_claim) for row in result.rows]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(header) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(cells, widths)), cells[-1]]).rstrip() for cells in table]
    return "\n".join(lines)


def _where(ledger: Path | None, missing: bool) -> str:
    """Which file was read, and what to do when it is not there: "no lines" alone hides a wrong ledger."""
    if ledger is None:
        return ""
    if missing:
        return (f" in {visible(str(ledger))}: there is no such file yet (a replay writes it; "
                "give --ledger FILE to read another ledger)")
    return f" in {visible(str(ledger))}"


def _cells(row: LogRow, show_claim: bool) -> tuple[str, ...]:
    cells = (row.date, row.verdict, _commit(row.repo_commit), *((row.claim,) if show_claim else ()), _trim(row.reason))
    return tuple(visible(cell) for cell in cells)


def _commit(commit: str) -> str:
    sha, dirty, _ = commit.partition("-dirty")
    return (sha[:COMMIT_WIDTH] + ("-dirty" if dirty else "")) if commit else "-"


def _trim(reason: str) -> str:
    return clip(" ".join(reason.split()), REASON_WIDTH)


def render_merge(result: MergeResult) -> str:
    """One line: how many lines went in and out, and how many exact duplicates were dropped."""
    return (f"merged {plural(result.inputs, 'ledger')} ({plural(result.lines_in, 'line')}) into "
            f"{visible(result.output)}: {plural(result.lines_out, 'line')}, "
            f"{plural(result.duplicates, 'exact duplicate')} dropped")
