"""Markdown of a replay, for $GITHUB_STEP_SUMMARY: a headline, the counts, one table row per claim.

Text from claims, checks and file names is escaped (issue 13): control characters are
shown as escapes, and every character Markdown or HTML gives a meaning to is escaped
with a backslash, so a label cannot open a link, an image, raw HTML or a new table row.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from physverify.text import visible

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult

# Any ASCII punctuation may be backslash-escaped (CommonMark, "Backslash escapes"). These
# start emphasis, code, links, images, HTML, entities, math ($), references (#) and cells.
# ">" quotes only at the start of a line, where escaped text never stands.
_SPECIAL = re.compile(r"([\\`*_\[\]<!|~&$#])")
_BACKTICKS = re.compile("`+")


def _cell(text: object) -> str:
    """``text`` as inert Markdown on one line: escapes shown, punctuation escaped."""
    return _SPECIAL.sub(r"\\\1", visible(text))


def _code(text: object) -> str:
    """``text`` as a code span: a fence longer than any run of backticks in it (CommonMark, "Code spans").

    Inside a code span nothing is Markdown or HTML; only a pipe needs its escape, which
    GitHub Flavored Markdown's table reader takes before the code span is read.
    """
    shown = visible(text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def _row(run: ClaimRun) -> str:
    mark = "**fails the gate**: " + _cell("; ".join(run.failures)) if run.failures else ""
    cells = (_cell(run.verdict or "(removed)"), _cell(run.transition), _code(run.key), _code(run.location),
             _cell(run.baseline_verdict or ""),
             (mark or _cell(run.reason)) + (f"; {_cell(run.evidence)}" if run.evidence else ""))
    return "| " + " | ".join(cells) + " |"


def render(result: ReplayResult) -> str:
    """The replay as a Markdown section: the gate's outcome, the counts, the table, warnings."""
    headline = "gate failed" if result.exit_code else "gate passed"
    lines = [f"## physverify replay: {headline}", "", _cell(result.summary() + "."), ""]
    if result.claims:
        lines += ["| verdict | transition | claim | file:line | baseline | note |",
                  "|---|---|---|---|---|---|", *(_row(run) for run in result.claims), ""]
    lines += [f"> {_cell(way)}" for way in result.ways_forward()]
    lines += [f"> warning: {_cell(w)}" for w in result.warnings]
    lines += [f"> {_cell(n)}" for n in result.notes]
    return "\n".join(lines)
