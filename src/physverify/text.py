"""Strings from outside physverify, made safe to encode and to show (issue 13, items 4, 10, 17).

Labels, messages, exception text, CLAIM values, file names and ledger lines come from code
and files physverify did not write. Two things go wrong with them:

- A lone surrogate ("\\ud800": a JSON ``\\u`` escape, a CLAIM literal, or an undecodable
  file name decoded with surrogateescape) cannot be encoded as UTF-8, so every write of
  it raises. ``clean`` replaces each surrogate with its escape, as text; it is applied
  where such strings enter the parent (the child's result, the ledger object of a run).
- A control character shown as it is moves a terminal's cursor or clipboard (ANSI and
  OSC escapes), starts a new line that looks like physverify's own ("gate passed") or a
  runner's workflow command ("::warning::"), or is not allowed in XML 1.0. Bidirectional
  formatting marks reorder what a reader sees. ``visible`` shows each of them as an
  escape (ESC as the four characters ``\\x1b``), so the text stays readable and inert.
- The GitHub runner also reads its older command form, ``##[name]data``, anywhere in a line
  of the log, not only at its start (actions/runner, ActionCommand.TryParse finds the
  prefix with IndexOf; ``##[stop-commands]TOKEN`` switches every later command off). A
  label printed in the middle of physverify's own line is still a command there, so
  ``visible`` shows the second "#" of ``##[`` as ``\\x23`` and ``dumps`` as ``\\u0023``.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from typing import Any

# Lone surrogates: a Python str holds a pair as two code points, so every one is unencodable.
_SURROGATES = re.compile("[\ud800-\udfff]")
# What ``visible`` escapes: C0 controls and DEL, C1 controls (\x9b is CSI on some
# terminals), the characters str.splitlines() also breaks at (\x85, U+2028, U+2029, and
# \x1c-\x1e already among C0), bidirectional marks and overrides (U+061C, U+200E,
# U+200F, U+202A-U+202E, U+2066-U+2069), surrogates, and the noncharacters U+FFFE and
# U+FFFF, which XML 1.0 forbids.
_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
_UNSAFE_RE = re.compile(f"[{_UNSAFE}]")
# The ones JSON output spells as \u escapes although json.dumps(ensure_ascii=False) keeps
# them: C0 is escaped by json.dumps already, surrogates are gone after ``clean``.
_JSON_UNSAFE_RE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# The runner's legacy workflow-command prefix; none of physverify's outputs holds it whole.
LEGACY_COMMAND = "##["


def clean_str(text: str) -> str:
    """``text`` with each lone surrogate replaced by its escape (``\\ud800``); otherwise unchanged."""
    return _SURROGATES.sub(_escape, text)


def clean(value: Any) -> Any:
    """``value`` (JSON-like: dict, list, tuple, str, ...) with ``clean_str`` applied to every string in it.

    A loop, not recursion: a child's result may nest as deep as the JSON reader allows,
    and cleaning it must not be what runs out of stack.
    """
    top: list[Any] = [None]
    todo: list[tuple[Any, Any, Any]] = [(value, top, 0)]  # (item, the container it goes into, its slot there)
    while todo:
        item, into, slot = todo.pop()
        if isinstance(item, str):
            into[slot] = clean_str(item)
        elif isinstance(item, Mapping):
            mapping: dict[Any, Any] = {}
            into[slot] = mapping
            for key, inner in item.items():
                key = clean_str(key) if isinstance(key, str) else key
                mapping[key] = None  # the slot now, so the keys keep their order
                todo.append((inner, mapping, key))
        elif isinstance(item, (list, tuple)):
            items: list[Any] = [None] * len(item)
            into[slot] = items
            todo.extend((inner, items, i) for i, inner in enumerate(item))
        else:
            into[slot] = item
    return top[0]


def visible(text: object, keep: str = "") -> str:
    """``str(text)`` on one line: every control, line-breaking or bidi character as an escape, and no ``##[``.

    Characters in ``keep`` (say "\\n" for a multi-line XML text) stay as they are.
    """
    shown = _UNSAFE_RE.sub(lambda m: m.group() if m.group() in keep else _escape(m), str(text))
    return shown.replace(LEGACY_COMMAND, "#\\x23[")  # an escape starts with "\\", so none makes a new "##["


def dumps(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON that encodes as UTF-8 and breaks no line: surrogates cleaned, unsafe characters as \\u escapes.

    The escapes read back to the same characters, so nothing but surrogates changes.
    """
    return json_safe(json.dumps(clean(value), indent=indent, ensure_ascii=False, default=lambda v: clean_str(str(v))))


def json_safe(body: str) -> str:
    """JSON text ``body`` with C1 controls, line separators, bidi marks and the runner's ``##[`` as \\u escapes.

    Only a JSON string can hold these characters ("#" is no JSON syntax), and \\uXXXX is the
    same character there, so the document reads back to the same value.
    """
    escaped = _JSON_UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", body)
    return escaped.replace(LEGACY_COMMAND, "#\\u0023[")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple, _REPR.maxset = 2, 4, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def short_repr(value: object) -> str:
    """``repr(value)`` cut to at most 80 characters: a message never prints the whole of a huge value."""
    return clip(_REPR.repr(value))


def plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, with an "s" unless ``n`` is 1: "1 line", "3 lines"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def clip(text: str, limit: int = 80) -> str:
    """``text`` cut to at most ``limit`` characters, "..." marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
