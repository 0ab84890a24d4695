"""physverify.yaml: the optional settings of a claims folder (DESIGN.md, "Replay: the gate").

The file sits in the claims folder and is read with PyYAML's safe loader. Every key is
optional; an unknown key, a wrong type, an unknown verdict or transition is a
ConfigError (exit 2) naming the file and the key, because a typo that silently meant
"no setting" would quietly change what the gate checks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from physverify.errors import ConfigError
from physverify.verdict import VERDICTS

CONFIG_NAME = "physverify.yaml"

# The transitions of a claim between its baseline and this run. They are named here,
# beside fail_on, because this is where users write them; replay.py uses the same names.
NEW = "new"
UNCHANGED = "unchanged"
FIXED = "fixed"  # confirmed -> rejected
REGRESSED = "regressed"  # rejected -> confirmed: the defect is back
UNDECIDABLE = "undecidable"  # confirmed/rejected -> not decidable
DECIDED = "decided"  # not decidable -> confirmed/rejected
REMOVED = "removed"  # in the baseline, the claim file is gone
TRANSITIONS = (NEW, UNCHANGED, FIXED, REGRESSED, UNDECIDABLE, DECIDED, REMOVED)
DEFAULT_FAIL_ON = frozenset({REGRESSED, FIXED, UNDECIDABLE})

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
    if not path.is_file():
        return Config(folder=folder)
    data = _read_yaml(path)
    unknown = sorted(set(data) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(KNOWN_KEYS)})")
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


def _read_yaml(path: Path) -> Mapping[str, Any]:
    import yaml  # here, not at the top: the report modules import this one, and --version must start fast (issue 11)

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where} is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from None
    if data is None:  # an empty file (or only comments) means the defaults
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of settings (known keys: {', '.join(KNOWN_KEYS)})")
    return data


def _type_error(path: Path, key: str, wanted: str, value: object) -> ConfigError:
    return ConfigError(f"{path}: {key} must be {wanted}, not {value!r}")


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


def _isolation(path: Path, value: object) -> str | None:
    if value is None:
        return None
    if value not in ISOLATION_MODES:
        raise _type_error(path, "isolation", " or ".join(ISOLATION_MODES), value)
    return str(value)


def _ledger(path: Path, folder: Path, value: object) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
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
            raise ConfigError(f"{path}: fail_on: unknown transition {name!r} (known: {', '.join(TRANSITIONS)})")
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
                f"{path}: expect: {claim!r}: {verdict!r} is not a verdict (known: {', '.join(VERDICTS)})"
            )
        target = folder / claim
        if not target.is_file():  # a typo here would make the expectation never apply
            raise ConfigError(f"{path}: expect: {claim!r} is not a file in {folder}")
        expect[target.resolve()] = verdict
    return expect
