"""physverify.yaml: the optional settings of a claims folder (DESIGN.md, "Replay: the gate").

The file sits in the claims folder and is read with PyYAML's safe loader, narrowed further:
anchors and aliases and a key given twice are refused (issue 13). Every key is optional;
an unknown key, a wrong type, an unknown verdict or transition is a ConfigError (exit 2)
naming the file and the key, because a typo that silently meant "no setting" would
quietly change what the gate checks.
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from physverify.errors import ConfigError

# The transitions and the default fail_on live with the gate's rules (gate.py); users write
# their names here, in fail_on, and older imports of them from this module keep working.
from physverify.gate import (  # noqa: F401 - re-exported
    DECIDED, DEFAULT_FAIL_ON, FIXED, NEW, REGRESSED, REMOVED, TRANSITIONS, UNCHANGED, UNDECIDABLE,
)
from physverify.verdict import VERDICTS

CONFIG_NAME = "physverify.yaml"

KNOWN_KEYS = ("timeout", "jobs", "ledger", "fail_on", "exclude", "expect")


@dataclass(frozen=True)
class Config:
    """The settings of one claims folder; ``path`` is None when there is no physverify.yaml."""

    folder: Path
    path: Path | None = None
    timeout: float | None = None
    jobs: int | None = None
    ledger: Path | None = None  # resolved against the claims folder
    fail_on: frozenset[str] = DEFAULT_FAIL_ON
    exclude: tuple[str, ...] = ()
    expect: Mapping[Path, str] = field(default_factory=dict)  # resolved claim path -> verdict


def load_config(folder: Path) -> Config:
    """The Config of ``folder``: its physverify.yaml if there is one, else the defaults."""
    path = folder / CONFIG_NAME
    if not path.is_file():
        return Config(folder=folder)
    data = _read_yaml(path)
    # sorted by their text: YAML keys may be numbers, dates or None, which do not compare with str
    unknown = sorted((key for key in data if key not in KNOWN_KEYS), key=_short)
    if unknown:
        named = ", ".join(_short(key) for key in unknown)
        raise ConfigError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {named} (known: {', '.join(KNOWN_KEYS)})")
    return Config(
        folder=folder,
        path=path,
        timeout=_timeout(path, data.get("timeout")),
        jobs=_jobs(path, data.get("jobs")),
        ledger=_ledger(path, folder, data.get("ledger")),
        fail_on=_fail_on(path, data.get("fail_on")),
        exclude=_string_list(path, "exclude", data.get("exclude")),
        expect=_expect(path, folder, data.get("expect")),
    )


class _Refused(yaml.MarkedYAMLError):
    """A construct _SettingsLoader will not read; ``problem`` is the whole message."""


class _SettingsLoader(yaml.SafeLoader):
    """The safe loader without anchors, aliases and explicit tags, and with each key allowed once.

    An alias shares one object, so nine nested aliases of nine items each make a value of
    9**9 items that is cheap to load and ruinous to print or walk (issue 13, item 9).
    Settings have no use for them, nor for tags: PyYAML's constructors crash on a tag with
    a value that does not fit it (`!!float` alone raises IndexError). A key given twice
    would silently keep the last value.
    """

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        anchor = event.anchor if isinstance(event, (yaml.AliasEvent, yaml.NodeEvent)) else None
        if anchor is not None:
            raise _Refused(problem=f"anchors and aliases (&{anchor}) are not allowed", problem_mark=event.start_mark)
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _Refused(problem=f"tags ({_short(tag)}) are not allowed", problem_mark=event.start_mark)
        return super().compose_node(parent, index)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. the date 2001-13-45
            raise _Refused(problem=f"{_short(node.value)} cannot be read ({exc})", problem_mark=node.start_mark) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                raise _Refused(problem=f"the key {_short(key)} is given twice", problem_mark=key_node.start_mark)
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_SettingsLoader.add_constructor("tag:yaml.org,2002:map", _SettingsLoader.construct_yaml_map)


def _read_yaml(path: Path) -> Mapping[Any, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SettingsLoader)  # a SafeLoader, narrowed
    except _Refused as exc:
        raise ConfigError(f"{path}: line {exc.problem_mark.line + 1}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where} is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except RecursionError:  # PyYAML composes nested flow collections recursively
        raise ConfigError(f"{path}: is nested too deeply to be a settings file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from None
    if data is None:  # an empty file (or only comments) means the defaults
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of settings (known keys: {', '.join(KNOWN_KEYS)})")
    return data


# A message shows at most a few items and characters of a value: a settings file is
# written by the repository, and a whole value can be arbitrarily large (issue 13, item 9).
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxset = 2, 4, 4, 4, 4
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 40


def _short(value: object) -> str:
    """Return ``repr(value)`` cut to at most 80 characters."""
    text = _SHORT.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _type_error(path: Path, key: str, wanted: str, value: object) -> ConfigError:
    return ConfigError(f"{path}: {key} must be {wanted}, not {_short(value)}{_number_hint(value, key)}")


# YAML 1.1 (PyYAML) reads a float only with a dot and, for an exponent, a sign: 1.0e+3.
# "1e3" and "1.0e3" are text to it, though every other reader takes them for numbers.
_EXPONENT = re.compile(r"([-+]?)([0-9]+)(?:\.([0-9]*))?[eE]([-+]?)([0-9]+)")


def _number_hint(value: object, key: str) -> str:
    """Say so when YAML read a number with an exponent as text, and how to write it (issue 13, item 25)."""
    match = _EXPONENT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return ""
    sign, whole, fraction, exp_sign, exponent = match.groups()
    number = float(value)  # type: ignore[arg-type]  # matched, so a str
    plain = f"{number:.0f}" if number.is_integer() and abs(number) < 1e15 else ""
    spelled = f"{sign}{whole}.{fraction or '0'}e{exp_sign or '+'}{exponent}"
    choices = [plain] if key == "jobs" else [c for c in (plain, spelled) if c]
    return f" (YAML reads {value} as a string; write {' or '.join(choices)})" if choices else ""


def _timeout(path: Path, value: object) -> float | None:
    if value is None:
        return None
    # bool is an int to Python, but "timeout: yes" is a typo, not one second
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _type_error(path, "timeout", "a positive number of seconds", value)
    return float(value)


def _jobs(path: Path, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _type_error(path, "jobs", "a whole number of at least 1", value)
    return value


def _ledger(path: Path, folder: Path, value: object) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:  # no path holds a NUL
        raise _type_error(path, "ledger", "a file path (relative to the claims folder)", value)
    return folder / value


def _string_list(path: Path, key: str, value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise _type_error(path, key, "a list of strings", value)
    return tuple(value)


def _fail_on(path: Path, value: object) -> frozenset[str]:
    if value is None:
        return DEFAULT_FAIL_ON
    names = _string_list(path, "fail_on", value)
    for name in names:
        if name not in TRANSITIONS:
            raise ConfigError(f"{path}: fail_on: unknown transition {_short(name)} (known: {', '.join(TRANSITIONS)})")
    return frozenset(names)


def _expect(path: Path, folder: Path, value: object) -> dict[Path, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(path, "expect", "a mapping of claim file (relative to the claims folder) to verdict", value)
    expect: dict[Path, str] = {}
    for claim, verdict in value.items():
        if not isinstance(claim, str) or verdict not in VERDICTS:
            raise ConfigError(
                f"{path}: expect: {_short(claim)}: {_short(verdict)} is not a verdict (known: {', '.join(VERDICTS)})"
            )
        target = _expected_file(folder, claim)
        if target is None:  # a typo here would make the expectation never apply
            raise ConfigError(f"{path}: expect: {_short(claim)} is not a file in {folder} or in its repository")
        expect[target.resolve()] = verdict
    return expect


def _expected_file(folder: Path, claim: str) -> Path | None:
    """An expect key: relative to the folder of physverify.yaml, else the repository-relative key reports print."""
    from physverify.repo import root_for

    for base in (folder, root_for(folder)):
        if _is_file(base / claim):
            return base / claim
    return None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system names no file either
        return False
