"""The optional settings of a claims folder: physverify.yaml, and [tool.physverify] in pyproject.toml.

physverify.yaml sits in the claims folder and is read with PyYAML's safe loader, narrowed
further: anchors and aliases and a key given twice are refused (issue 13). The table
[tool.physverify] of the repository's pyproject.toml takes the same keys, as ruff, pytest and
mypy read theirs. For each key physverify.yaml wins over the table (flag > physverify.yaml >
[tool.physverify] > default: settings.resolve applies the flag); a key both set to different
values gives a warning naming both files. Every key is optional; an unknown key, a wrong type,
an unknown verdict or transition is a ConfigError (exit 2) naming the file and the key,
because a typo that silently meant "no setting" would quietly change what the gate checks.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from physverify.errors import ConfigError
from physverify.text import short_repr

# The transitions and the default fail_on live with the gate's rules; users write their names here, in fail_on.
from physverify.gate.rules import DEFAULT_FAIL_ON, fail_on_problem
from physverify.isolation.modes import ISOLATION_MODES
from physverify.verdict import VERDICTS

CONFIG_NAME = "physverify.yaml"
PYPROJECT_NAME = "pyproject.toml"
TOOL_TABLE = "[tool.physverify]"



class IgnoreEntry(NamedTuple):
    """One entry of ``ignore``: a scan finding (rule, file glob, optional line) silenced, and why."""

    rule: str  # a scan rule's name, or "*"
    file: str  # a glob, matched against the path as the scan printed it and relative to the repository
    reason: str
    line: int | None = None


@dataclass(frozen=True)
class Config:
    """The settings of one claims folder; ``path`` is None when there is no physverify.yaml."""

    folder: Path
    path: Path | None = None
    timeout: float | None = None
    jobs: int | None = None
    ledger: Path | None = None  # resolved against the folder of the file that names it
    fail_on: frozenset[str] = DEFAULT_FAIL_ON
    exclude: tuple[str, ...] = ()
    expect: Mapping[Path, str] = field(default_factory=dict)  # resolved claim path -> verdict
    isolation: str | None = None  # fresh | fork; None: isolate.py's default (fork on Linux)
    preload: tuple[str, ...] = ()  # modules the fork server imports besides those it finds
    ignore: tuple[IgnoreEntry, ...] = ()  # physverify scan: findings silenced, each with its reason
    pyproject: Path | None = None  # the repository's pyproject.toml as looked for (it may not exist)
    origins: Mapping[str, Path] = field(default_factory=dict)  # key -> the file that set it
    warnings: tuple[str, ...] = ()  # keys both files set, to different values

    def origin(self, key: str) -> Path | None:
        """The file that set ``key`` (physverify.yaml or pyproject.toml), None when neither did."""
        return self.origins.get(key)


def load_config(folder: Path) -> Config:
    """The Config of ``folder``: its physverify.yaml over its repository's [tool.physverify], over the defaults."""
    path = folder / CONFIG_NAME
    exists = os.path.lexists(path)
    own = _values(path, folder, _read_yaml(path)) if exists else {}
    pyproject, table = _tool_table(folder)
    shared = _values(_table_name(pyproject), pyproject.parent, table) if table is not None else {}
    overridden = sorted(key for key in own.keys() & shared.keys() if _differ(own[key][0], shared[key][0]))
    warnings = tuple(f"{key}: {path} sets {short_repr(own[key][1])}, {_table_name(pyproject)} sets "
                     f"{short_repr(shared[key][1])}; {CONFIG_NAME} wins" for key in overridden)
    values = {key: value for key, (value, _) in {**shared, **own}.items()}
    origins = {**{key: pyproject for key in shared}, **{key: path for key in own}}
    return Config(folder=folder, path=path if exists else None, pyproject=pyproject,
                  origins=origins, warnings=warnings, **values)


def ledger_setting(folder: Path, text: str, name: Path) -> Path | None:
    """The ``ledger`` that a physverify.yaml holding ``text`` (a commit's copy, named ``name`` in errors) gives
    ``folder``, or None when it sets none. Only that key is read: the rest was that commit's business."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{name}: is larger than {MAX_CONFIG_BYTES:,} bytes (1 MiB); a settings file is a few lines")
    return _ledger(name, folder, _parse_yaml(text, name).get("ledger"))


def pyproject_ledger_setting(root: Path, text: str, name: Path) -> Path | None:
    """The ``ledger`` of [tool.physverify] in a pyproject.toml holding ``text`` (a commit's copy, named ``name``),
    relative to the repository ``root``, or None when it sets none."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{name}: is larger than {MAX_CONFIG_BYTES:,} bytes (1 MiB)")
    table = _parse_toml(text, name)
    return _ledger(_table_name(name), root, table.get("ledger")) if table is not None else None


def _tool_table(folder: Path) -> tuple[Path, Mapping[str, Any] | None]:
    """The pyproject.toml at the root of the repository holding ``folder``, and its [tool.physverify] (or None)."""
    from physverify.gate.repo import root_for  # found without GitPython (repo.root_for says why)

    pyproject = root_for(folder) / PYPROJECT_NAME
    if not os.path.lexists(pyproject):
        return pyproject, None
    try:
        text = _read_text(pyproject)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot be read ({exc})") from None
    return pyproject, _parse_toml(text, pyproject)


def _table_name(pyproject: Path) -> Path:
    """How messages name the table: the file, then [tool.physverify]."""
    return Path(f"{pyproject} {TOOL_TABLE}")


def _parse_toml(text: str, path: Path) -> Mapping[str, Any] | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the backport, a dependency on 3.10 only
        import tomli as tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message is one line and gives the line and column
        raise ConfigError(f"{path}: is not valid TOML ({exc})") from None
    except RecursionError:  # nested arrays are parsed recursively
        raise ConfigError(f"{path}: is nested too deeply to be a settings file") from None
    tool = data.get("tool", {})
    table = tool.get("physverify") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: {TOOL_TABLE} must be a table of settings (known keys: {', '.join(KNOWN_KEYS)})")
    return table


def _differ(first: object, second: object) -> bool:
    """Whether two checked values of a key differ (two ledgers: as files, wherever each was named from)."""
    if isinstance(first, Path) and isinstance(second, Path):
        return os.path.abspath(first) != os.path.abspath(second)
    return first != second


_KEYS_NAMED = 5  # unknown keys named in the message


def _values(path: Path, base: Path, data: Mapping[Any, Any]) -> dict[str, tuple[Any, Any]]:
    """Each key ``data`` sets, checked: key -> (its value, as given). ``base``: what relative paths start from."""
    # sorted by their text: YAML keys may be numbers, dates or None, which do not compare with str
    unknown = sorted((key for key in data if key not in KNOWN_KEYS), key=short_repr)
    if unknown:  # a few named, the rest counted: a file of 50,000 keys must not make a line of 500 kB
        named = ", ".join(short_repr(key) for key in unknown[:_KEYS_NAMED])
        if len(unknown) > _KEYS_NAMED:
            named += f" and {len(unknown) - _KEYS_NAMED:,} more"
        raise ConfigError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {named} (known: {', '.join(KNOWN_KEYS)})")
    # a key given as null (YAML's "timeout:") means its default, as if it were not there
    return {key: (_READERS[key](path, base, value), value) for key, value in data.items() if value is not None}


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
    from physverify.files import open_regular

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
    problem = fail_on_problem(names)
    if problem is not None:
        raise ConfigError(f"{path}: fail_on: {problem}")
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


# One row per key: the function that checks its value, given the file's name (for messages), the
# folder relative paths start from, and the value. The Config field of each key has its name.
_READERS: Mapping[str, Callable[[Path, Path, object], Any]] = {
    "timeout": lambda path, base, value: _timeout(path, value),
    "jobs": lambda path, base, value: _jobs(path, value),
    "ledger": _ledger,
    "fail_on": lambda path, base, value: _fail_on(path, value),
    "exclude": lambda path, base, value: _string_list(path, "exclude", value),
    "expect": _expect,
    "isolation": lambda path, base, value: _isolation(path, value),
    "preload": lambda path, base, value: _string_list(path, "preload", value),
    "ignore": lambda path, base, value: _ignore(path, value),
}
KNOWN_KEYS = tuple(_READERS)


_IGNORE_SHAPE = "a list of {rule: RULE, file: GLOB, reason: TEXT, line: N (optional)}"


def _ignore(path: Path, value: object) -> tuple[IgnoreEntry, ...]:
    """The scan's ignore list: every entry names its rule and file and says why (an entry without a reason is refused)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _type_error(path, "ignore", _IGNORE_SHAPE, value)
    return tuple(_ignore_entry(path, i, item) for i, item in enumerate(value, 1))


def _ignore_entry(path: Path, index: int, item: object) -> IgnoreEntry:
    if not isinstance(item, dict) or set(item) - {"rule", "file", "reason", "line"}:
        raise _type_error(path, f"ignore entry {index}", _IGNORE_SHAPE, item)
    for key in ("rule", "file", "reason"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise ConfigError(f"{path}: ignore entry {index}: {key} must be a non-empty string "
                              f"(every silenced finding says why)")
    line = item.get("line")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        raise _type_error(path, f"ignore entry {index}: line", "a line number (1 or more)", line)
    return IgnoreEntry(item["rule"].strip(), item["file"].strip(), item["reason"].strip(), line)
