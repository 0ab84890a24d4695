"""physverify.yaml: the optional settings of a claims folder (DESIGN.md, "Replay: the gate").

The file sits in the claims folder and is read with PyYAML's safe loader, narrowed further:
anchors and aliases and a key given twice are refused (issue 13). Every key is optional;
an unknown key, a wrong type, an unknown verdict or transition is a ConfigError (exit 2)
naming the file and the key, because a typo that silently meant "no setting" would
quietly change what the gate checks.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from physverify.errors import ConfigError
from physverify.text import short_repr

# The transitions and the default fail_on live with the gate's rules; users write their names here, in fail_on.
from physverify.gate.rules import DEFAULT_FAIL_ON, TRANSITIONS
from physverify.verdict import VERDICTS

CONFIG_NAME = "physverify.yaml"

KNOWN_KEYS = ("timeout", "jobs", "ledger", "fail_on", "exclude", "expect", "isolation", "preload")
ISOLATION_MODES = ("fresh", "fork")  # isolate.py's two ways to start a claim's child


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
    isolation: str | None = None  # fresh | fork; None: isolate.py's default (fork on Linux)
    preload: tuple[str, ...] = ()  # modules the fork server imports besides those it finds


def load_config(folder: Path) -> Config:
    """The Config of ``folder``: its physverify.yaml if there is one, else the defaults."""
    path = folder / CONFIG_NAME
    if not os.path.lexists(path):
        return Config(folder=folder)
    return _config(folder, path, _read_yaml(path))


def ledger_setting(folder: Path, text: str, name: Path) -> Path | None:
    """The ``ledger`` that a physverify.yaml holding ``text`` (a commit's copy, named ``name`` in errors) gives
    ``folder``, or None when it sets none. Only that key is read: the rest was that commit's business."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{name}: is larger than {MAX_CONFIG_BYTES:,} bytes (1 MiB); a settings file is a few lines")
    return _ledger(name, folder, _parse_yaml(text, name).get("ledger"))


_KEYS_NAMED = 5  # unknown keys named in the message


def _config(folder: Path, path: Path, data: Mapping[Any, Any]) -> Config:
    # sorted by their text: YAML keys may be numbers, dates or None, which do not compare with str
    unknown = sorted((key for key in data if key not in KNOWN_KEYS), key=short_repr)
    if unknown:  # a few named, the rest counted: a file of 50,000 keys must not make a line of 500 kB
        named = ", ".join(short_repr(key) for key in unknown[:_KEYS_NAMED])
        if len(unknown) > _KEYS_NAMED:
            named += f" and {len(unknown) - _KEYS_NAMED:,} more"
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
        isolation=_isolation(path, data.get("isolation")),
        preload=_string_list(path, "preload", data.get("preload")),
    )


def _read_yaml(path: Path) -> Mapping[Any, Any]:
    # PyYAML only here, not at the top: the report modules import this one, and
    # `physverify --version` must start fast (issue 11).
    try:
        text = _read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from None
    return _parse_yaml(text, path)


def _parse_yaml(text: str, path: Path) -> Mapping[Any, Any]:
    import yaml

    from physverify.gate.safe_yaml import Refused, SettingsLoader

    try:
        data = yaml.load(text, Loader=SettingsLoader)  # a SafeLoader, narrowed
    except Refused as exc:
        raise ConfigError(f"{path}: line {exc.problem_mark.line + 1}: {exc.problem}") from None
    except yaml.reader.ReaderError as exc:  # its own text spans two lines and names "<unicode string>", not the file
        raise ConfigError(f"{path}: line {text.count(chr(10), 0, exc.position) + 1} holds the character "
                          f"{_code_point(exc.character)}, which YAML does not allow in a file") from None
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


def _code_point(character: int | str) -> str:
    """The character as U+001B (ReaderError gives its code point, or the character itself)."""
    return f"U+{character if isinstance(character, int) else ord(character):04X}"


# A settings file is a few lines; a repository's physverify.yaml may be anything, so it is
# read only when it is a regular file (a FIFO would wait for a writer for ever, a link to
# /dev/zero never end) and only up to this size (issue 13).
MAX_CONFIG_BYTES = 1 << 20


def _read_text(path: Path) -> str:
    """The file's text; OSError for a file that is not regular, ConfigError for one that is too large."""
    from physverify.gate.claim import open_regular

    with open_regular(path) as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: is larger than {MAX_CONFIG_BYTES:,} bytes (1 MiB); a settings file is a few lines")
    return data.decode("utf-8")


def _type_error(path: Path, key: str, wanted: str, value: object) -> ConfigError:
    return ConfigError(f"{path}: {key} must be {wanted}, not {short_repr(value)}{_number_hint(value, key)}")


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
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _positive_seconds(value):
        raise _type_error(path, "timeout", "a positive number of seconds", value)
    return float(value)


def _positive_seconds(value: float) -> bool:
    """Whether ``value`` is a positive number that a float holds: YAML reads 400 digits as an int no float can."""
    try:
        return math.isfinite(value) and value > 0
    except OverflowError:  # math.isfinite converts to float first
        return False


def _jobs(path: Path, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _type_error(path, "jobs", "a whole number of at least 1", value)
    return value


def _isolation(path: Path, value: object) -> str | None:
    if value is None:
        return None
    if value not in ISOLATION_MODES:
        raise _type_error(path, "isolation", " or ".join(ISOLATION_MODES), value)
    return str(value)


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
            raise ConfigError(f"{path}: fail_on: unknown transition {short_repr(name)} (known: {', '.join(TRANSITIONS)})")
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
                f"{path}: expect: {short_repr(claim)}: {short_repr(verdict)} is not a verdict (known: {', '.join(VERDICTS)})"
            )
        target = _expected_file(folder, claim)
        if target is None:  # a typo here would make the expectation never apply
            raise ConfigError(f"{path}: expect: {short_repr(claim)} is not a file in {folder} or in its repository")
        expect[target.resolve()] = verdict
    return expect


def _expected_file(folder: Path, claim: str) -> Path | None:
    """An expect key: relative to the folder of physverify.yaml, else the repository-relative key reports print."""
    from physverify.gate.repo import root_for

    for base in (folder, root_for(folder)):
        if _is_file(base / claim):
            return base / claim
    return None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system names no file either
        return False
