"""The settings of one run, resolved once: flag over physverify.yaml over [tool.physverify] over default.

Every entry point (cli.py, action.py, mcp_server.py, the sandbox plan) hands the values
it was given to ``resolve``; what a command uses afterwards is the ``RunSettings`` it
returns, never the flag or the file again. Each option is one row of ``OPTIONS``: its
name, the flag and the physverify.yaml key it comes from, its default, and the one
function that checks a flag's value (config.py checks the file's). The environment
variables physverify reads about a run are read here and nowhere else.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from physverify.errors import RefusedError, UsageError
from physverify.isolation.modes import ISOLATION_MODES

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_LEDGER = "confirm_ledger.jsonl"  # spec section 3: confirm's --ledger default; replay's file name


class FolderConfig(Protocol):
    """What ``resolve`` reads of a folder's physverify.yaml (config.Config has it).

    A protocol rather than an import of config.py: config.py asks repo.py for the repository
    root of its expect keys, and repo.py reads the sandbox's variables here, so importing
    config.py from this module would close a cycle.
    """

    @property
    def folder(self) -> Path: ...

    @property
    def path(self) -> Path | None: ...

    @property
    def preload(self) -> tuple[str, ...]: ...

    @property
    def isolation(self) -> str | None: ...

    def origin(self, key: str) -> Path | None: ...


# The variables the sandbox sets inside (sandbox/README.md): the repository's mount point,
# and its commit read on the host, since the container has no .git folder.
REPO_ENV = "PHYSVERIFY_REPO"
REPO_COMMIT_ENV = "PHYSVERIFY_REPO_COMMIT"
CACHE_ENV = "PHYSVERIFY_CACHE_DIR"


def sandbox_repo(env: Mapping[str, str] | None = None) -> Path | None:
    """$PHYSVERIFY_REPO: the repository root when running inside the sandbox, else None."""
    value = (os.environ if env is None else env).get(REPO_ENV)
    return Path(value) if value else None


def sandbox_commit(env: Mapping[str, str] | None = None) -> str | None:
    """$PHYSVERIFY_REPO_COMMIT: the commit the host read for the sandbox, else None."""
    value = (os.environ if env is None else env).get(REPO_COMMIT_ENV)
    return value or None


def cache_setting(env: Mapping[str, str] | None = None) -> str | None:
    """$PHYSVERIFY_CACHE_DIR as given: a folder, ``off``, or None for the user's cache folder."""
    value = (os.environ if env is None else env).get(CACHE_ENV)
    return value or None


# --- the values of flags ---------------------------------------------------------------
def parse_timeout(value: object) -> float:
    """A positive, finite number of seconds; UsageError for anything else (spec section 4).

    A timeout beyond any run (1e10 s is three centuries) is accepted and waits as long as
    the claim runs: the waits below cap what they hand to the system (``wait_limit``).
    """
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int of 400 digits
        raise UsageError(f"--timeout must be a number of seconds, not {_shown(value)}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"--timeout must be a positive, finite number of seconds, not {_shown(value)}")
    return seconds


def parse_jobs(value: object) -> int:
    """A whole number of at least 1; UsageError otherwise."""
    try:
        jobs = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):  # ValueError also for a number of over 4,300 digits
        raise UsageError(f"--jobs must be a whole number of at least 1, not {_shown(value)}") from None
    if jobs < 1:
        raise UsageError(f"--jobs must be a whole number of at least 1, not {_shown(value)}")
    return jobs


def parse_isolation(value: object) -> str:
    """fresh or fork (isolate.py's two ways to start a claim's child); UsageError otherwise."""
    if value not in ISOLATION_MODES:
        raise UsageError(f"--isolation must be {' or '.join(ISOLATION_MODES)}, not {_shown(value)}")
    return str(value)


def parse_reason(value: str | None) -> str | None:
    """--allow-dependent-reference: None, or a reason in words; UsageError for a blank one.

    The reason is what the ledger keeps next to the notes it overrides (spec rule 1), so an
    empty string would set rule 1 aside with nothing recorded.
    """
    if value is not None and not str(value).strip():
        raise UsageError("--allow-dependent-reference needs the reason in words (the ledger records it next to the "
                         "notes it overrides), not an empty text")
    return value


# Digits only as ASCII: str.isdigit() is true for '²', which int() refuses (issue 21, item 10).
_MAX_SHARD_DIGITS = 9


def parse_shard(text: str) -> tuple[int, int]:
    """K/N as (K, N) with 1 <= K <= N; UsageError otherwise (also for '²/³' and a count of 5,000 digits)."""
    k, sep, n = str(text).partition("/")
    k, n = k.strip(), n.strip()
    numbers = all(part.isascii() and part.isdigit() and len(part) <= _MAX_SHARD_DIGITS for part in (k, n))
    if not (sep and numbers) or not 1 <= int(k) <= int(n):
        raise UsageError(f"--shard must be K/N with 1 <= K <= N <= {10**_MAX_SHARD_DIGITS - 1:,} (for example 2/3), "
                         f"not {_shown(text)}")
    return int(k), int(n)


def _shown(value: object) -> str:
    from physverify.text import short_repr

    return short_repr(value)


# --- one row per option ------------------------------------------------------------------
class Option(NamedTuple):
    """One setting: where it comes from and how a flag's value is checked."""

    name: str  # the RunSettings field
    flag: str  # the command-line flag (the Action's input and the MCP argument carry the same value)
    key: str | None  # the physverify.yaml key of the first claims folder, or None
    default: Callable[[FolderConfig | None], Any]  # of the first claims folder's settings
    parse: Callable[[Any], Any]


def _cpus(config: FolderConfig | None) -> int:
    return os.cpu_count() or 1


def _default_ledger(config: FolderConfig | None) -> Path:
    """Inside the first claims folder, so it is a tracked file of the repository (replay.py says why)."""
    return config.folder / DEFAULT_LEDGER if config is not None else Path(DEFAULT_LEDGER)


OPTIONS: tuple[Option, ...] = (
    Option("timeout_s", "--timeout", "timeout", lambda config: DEFAULT_TIMEOUT_S, parse_timeout),
    Option("jobs", "--jobs", "jobs", _cpus, parse_jobs),
    Option("isolation", "--isolation", "isolation", lambda config: None, parse_isolation),
    Option("shard", "--shard", None, lambda config: None, parse_shard),
    Option("ledger", "--ledger", "ledger", _default_ledger, Path),
)


@dataclass(frozen=True)
class RunSettings:
    """What one run uses, resolved once (``resolve``)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    jobs: int = 1
    isolation: str | None = None  # fresh | fork; None: isolate.py's default (fork on Linux)
    shard: tuple[int, int] | None = None
    ledger: Path = Path("confirm_ledger.jsonl")
    preload: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)  # option -> "flag", the file's path, or "default"

    def isolation_for(self, config: FolderConfig) -> str | None:
        """The isolation of a claim in ``config``'s folder: the flag when given, else that folder's own setting."""
        return self.isolation if self.sources.get("isolation") == "flag" else config.isolation


def resolve(flags: Mapping[str, object], config: FolderConfig | None = None) -> RunSettings:
    """Each option from its flag (when given), else the first folder's settings, else its default.

    The folder's settings are its physverify.yaml over its repository's [tool.physverify]
    (config.load_config merges the two).

    ``flags`` maps RunSettings field names to the values as given (None: not given);
    a bad flag value is a UsageError naming the flag. The file's values were checked
    when config.py read it.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        given = flags.get(option.name)
        configured = getattr(config, option.key, None) if config is not None and option.key else None
        if given is not None:
            values[option.name], sources[option.name] = option.parse(given), "flag"
        elif configured is not None:
            origin = config.origin(option.key) if config is not None and option.key else None
            values[option.name], sources[option.name] = configured, str(origin or "")
        else:
            values[option.name], sources[option.name] = option.default(config), "default"
    preload = config.preload if config is not None else ()
    return RunSettings(**values, preload=preload, sources=sources)


def default_ledger(config: FolderConfig) -> Path:
    """The ledger replay uses without --ledger: physverify.yaml's ``ledger``, else claims/confirm_ledger.jsonl."""
    return resolve({}, config).ledger


# Every wait handed to the system is capped here: a socket's or a lock's timeout beyond
# time_t or threading.TIMEOUT_MAX raises OverflowError (issue 21, item 10: --timeout 1e10 in
# fork mode). A hundred days is no limit to any claim; the ledger keeps the timeout as given.
MAX_WAIT_S = 100 * 86400.0


def wait_limit(seconds: float) -> float:
    """``seconds`` as a wait the system accepts: at most MAX_WAIT_S."""
    return min(seconds, MAX_WAIT_S)


SANDBOX_HINT = "sandbox/README.md"


def require_trust(trusted: bool, command: str = "confirm") -> None:
    """Refuse to run code under test unless it is trusted or we are inside the sandbox (spec section 5).

    ``command``: the command the refusal suggests running in the sandbox (confirm or replay).
    """
    if trusted or sandbox_repo() is not None:
        return
    raise RefusedError(
        "refusing to run the code under test: pass --trusted if the code is yours or reviewed, "
        f"or run it inside the sandbox ('physverify sandbox -- {command} ...', see {SANDBOX_HINT})"
    )
