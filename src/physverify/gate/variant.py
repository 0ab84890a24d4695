"""A claim that names its fix (issue 17): the ``defect`` and ``fix`` keys, found in the file, swapped.

Pure functions of text: ``key_problem`` is the load rule for the two optional CLAIM keys,
``locate`` finds which of the two texts the file holds and where, and ``build`` returns the
file's source with that text swapped for the other. Nothing here reads or writes a file
(evaluate.py reads the target once; the child is served the result through the import
system, isolation/variant_import.py), so the whole table of cases is tested with plain strings.

Matching compares whole lines with their leading and trailing whitespace stripped, so a
re-indented block still matches; a fragment of a line never does, because "0*5" may occur
in many places and a claim must say which line is wrong.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import NamedTuple

DEFECT = "defect"
FIX = "fix"
KEYS = (DEFECT, FIX)
# A defect is a few lines: these bounds keep a hostile claim from making the match or the
# message cost more than the file it is about (a 1 MB key fits in a 1 MiB claim file).
MAX_TEXT_LINES = 200
MAX_TEXT_CHARS = 20_000
# The target file is read whole in the parent and sent to the child; a source file of a
# physics code is rarely above a megabyte.
MAX_SOURCE_BYTES = 16 * 1024 * 1024

# Python's own line ends (the tokenizer's), not str.splitlines', which also splits at a
# form feed or U+2028 inside a string literal.
_LINE_END = re.compile(r"\r\n|\r|\n")
# Control characters other than the newline and the tab: nothing a line of code needs, and
# what a hostile key would use to hide text from a terminal or a diff.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


class VariantError(Exception):
    """The file holds neither text, both, or one more than once: a load error (rule 0)."""


class Match(NamedTuple):
    """Which text the file holds (``defect`` or ``fix``), where (1-based ``line``), and how many lines."""

    held: str
    line: int
    length: int

    @property
    def other(self) -> str:
        return FIX if self.held == DEFECT else DEFECT


# --- the load rule (claim.py calls it) --------------------------------------------------
def key_problem(claim: Mapping[str, object]) -> str | None:
    """Why the claim's ``defect``/``fix`` keys cannot be used, or None (also when it has neither)."""
    present = [key for key in KEYS if key in claim]
    if not present:
        return None
    if len(present) == 1:
        other = FIX if present[0] == DEFECT else DEFECT
        return (f"CLAIM has {present[0]!r} but not {other!r}; give both (the claimed mistake and what it should be) "
                "or neither")
    for key in KEYS:
        problem = _text_problem(key, claim[key])
        if problem is not None:
            return problem
    if text_lines(str(claim[DEFECT])) == text_lines(str(claim[FIX])):
        return "CLAIM['defect'] and CLAIM['fix'] are the same lines; the fix must change something"
    return None


def _text_problem(key: str, value: object) -> str | None:
    if not isinstance(value, str):
        return None  # claim.py's own rule says it must be a string
    if len(value) > MAX_TEXT_CHARS:
        return f"CLAIM[{key!r}] is {len(value):,} characters long; a defect or fix has at most {MAX_TEXT_CHARS:,}"
    found = _CONTROL.search(value)
    if found is not None:
        return (f"CLAIM[{key!r}] holds the control character {found.group()!r}; give the line(s) of code as they "
                "are, separated by newlines")
    lines = text_lines(value)
    if not lines:
        return f"CLAIM[{key!r}] has no line of code"
    if len(lines) > MAX_TEXT_LINES:
        return f"CLAIM[{key!r}] has {len(lines)} lines; a defect or fix has at most {MAX_TEXT_LINES}"
    return None


def text_lines(text: str) -> list[str]:
    """The text's lines, stripped, without the blank lines before the first and after the last."""
    lines = [line.strip() for line in _LINE_END.split(text)]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _raw_lines(text: str) -> list[str]:
    """The text's lines as given (for their relative indentation), without the blank ones at either end."""
    lines = [line.rstrip() for line in _LINE_END.split(text)]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


# --- finding the text -------------------------------------------------------------------
def split_source(source: str) -> list[str]:
    """The source's lines, each with its own line end (the last may have none)."""
    parts = _LINE_END.split(source)
    ends = _LINE_END.findall(source)
    lines = [part + end for part, end in zip(parts, ends)]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _starts_at(stripped: Sequence[str], index: int, wanted: Sequence[str]) -> bool:
    return list(stripped[index : index + len(wanted)]) == list(wanted)


def _occurrences(stripped: Sequence[str], wanted: Sequence[str]) -> list[int]:
    first = wanted[0]
    return [i for i, line in enumerate(stripped) if line == first and _starts_at(stripped, i, wanted)]


def locate(source: str, defect: str, fix: str, line: int, *, file: str = "the file") -> Match:
    """Which text ``source`` holds: the one starting at ``line``, else the one occurring once anywhere.

    Raise VariantError naming what was found otherwise: neither text, both, or several
    occurrences (issue 17, item 1). ``file`` is the name the messages give.
    """
    stripped = [text.strip() for text in split_source(source)]
    wanted = {DEFECT: text_lines(defect), FIX: text_lines(fix)}
    at_line = [key for key in KEYS if _starts_at(stripped, line - 1, wanted[key])]
    if len(at_line) == 1:
        return Match(at_line[0], line, len(wanted[at_line[0]]))
    if len(at_line) == 2:
        raise VariantError(f"both the defect and the fix start at {file}:{line} (one is the start of the other); "
                           "give each as the whole lines it spans")
    found = {key: _occurrences(stripped, wanted[key]) for key in KEYS}
    if sum(len(places) for places in found.values()) == 1:
        held = DEFECT if found[DEFECT] else FIX
        return Match(held, found[held][0] + 1, len(wanted[held]))
    raise VariantError(_not_found_message(file, line, found, stripped, wanted))


def _not_found_message(file: str, line: int, found: Mapping[str, list[int]], stripped: Sequence[str],
                       wanted: Mapping[str, list[str]]) -> str:
    if not found[DEFECT] and not found[FIX]:
        hint = _fragment_hint(stripped, wanted)
        return (f"neither the defect nor the fix is in {file}, at line {line} or anywhere else, as whole lines"
                f"{hint}")
    if found[DEFECT] and found[FIX]:
        parts = " and ".join(f"the {key} at {_places(found[key])}" for key in KEYS)
        return (f"both the defect and the fix are in {file} ({parts}) and neither starts at line {line}, "
                "so it is not clear which one the file holds; make the texts longer until each occurs once")
    key = DEFECT if found[DEFECT] else FIX
    return (f"the {key} occurs {len(found[key])} times in {file} ({_places(found[key])}) and none starts at "
            f"line {line}; set CLAIM['line'] to the one the claim is about")


def _places(indices: Sequence[int]) -> str:
    shown = [str(i + 1) for i in indices[:10]]
    more = f" and {len(indices) - 10} more" if len(indices) > 10 else ""
    return ("line " if len(indices) == 1 else "lines ") + ", ".join(shown) + more


def _fragment_hint(stripped: Sequence[str], wanted: Mapping[str, list[str]]) -> str:
    """Say so when a one-line text is only part of a line: the commonest mistake in writing the keys."""
    for key in KEYS:
        lines = wanted[key]
        if len(lines) == 1:
            for index, text in enumerate(stripped):
                if lines[0] in text:
                    return (f"; the {key} is part of line {index + 1}, not the whole line: give the whole line")
    return ""


# --- building the variant -------------------------------------------------------------
def build(source: str, match: Match, replacement: str) -> str:
    """``source`` with the ``match.length`` lines at ``match.line`` replaced by ``replacement``.

    The replacement is dedented, then indented by the first matched line's indentation,
    keeping its own relative indentation; blank lines stay blank. Each new line ends as
    the first matched line ends (or as the file's first line when that one has no end),
    and the last as the last matched line (which may have none at the end of the file).
    """
    lines = split_source(source)
    start, stop = match.line - 1, match.line - 1 + match.length
    first, last = lines[start], lines[stop - 1]
    indent = first[: len(first) - len(first.lstrip())]
    end = first[len(first.rstrip("\r\n")) :] or next(iter(_LINE_END.findall(source)), "\n")
    last_end = last[len(last.rstrip("\r\n")) :]
    body = textwrap.dedent("\n".join(_raw_lines(replacement))).split("\n")
    new = [(indent + text if text.strip() else "") + end for text in body]
    new[-1] = new[-1][: len(new[-1]) - len(end)] + last_end
    return "".join(lines[:start] + new + lines[stop:])


def variant_source(source: str, defect: str, fix: str, line: int, *, file: str = "the file") -> tuple[Match, str]:
    """The match, and ``source`` with the held text swapped for the other."""
    match = locate(source, defect, fix, line, file=file)
    replacement = fix if match.held == DEFECT else defect
    return match, build(source, match, replacement)

