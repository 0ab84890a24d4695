"""physverify's own process against the claims it runs: no /proc/PID/fd or memory for them, and its limits watched.

Every claim runs as the same user as physverify, inside the sandbox too, and without ptrace
such a process may still re-open another's descriptors through /proc/PID/fd, read its
memory through /proc/PID/mem, and set its resource limits with prlimit(2).

- ``protect`` makes this process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): the kernel
  then lets only a process with CAP_SYS_PTRACE open its /proc/PID/fd, /proc/PID/mem and
  /proc/PID/environ or attach to it. Inside the sandbox no claim has that capability, so
  neither the sandboxed run's result key nor a descriptor of physverify's is reachable.
  Outside it, a root caller's claims have the capability (sandbox/README.md says so).
- prlimit(2) asks only that the caller's user match, so it cannot be refused: a claim that
  lowers physverify's RLIMIT_FSIZE or RLIMIT_NOFILE keeps it from writing the ledger or
  starting the next claim. ``check`` compares the limits with a snapshot taken before the
  claim ran (and with the run's own, ``watching``), so such a run gives no verdict at all,
  with a line that says why, instead of one decided under limits a claim chose.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from physverify.errors import PhysverifyError

PR_SET_DUMPABLE = 4
Limits = Mapping[str, tuple[int, int]]
_runs: list[Limits] = []  # the snapshot of every run going on in this process (``watching``)


class LimitsChanged(PhysverifyError):
    """A claim changed physverify's own resource limits during the run: no verdict is given."""


def protect() -> bool:
    """Make this process non-dumpable (Linux); False where it cannot be (not Linux, no prctl)."""
    if not sys.platform.startswith("linux"):
        return False
    from physverify.isolation.procgroup import set_prctl

    return set_prctl(PR_SET_DUMPABLE, 0)


def snapshot() -> Limits:
    """Every resource limit of this process, by name (soft, hard); empty where there is no ``resource`` module."""
    try:
        import resource
    except ImportError:  # Windows: nothing to compare, nothing a claim could set
        return {}
    return {name: resource.getrlimit(number) for name, number in _limit_numbers()}


@functools.cache
def _limit_numbers() -> tuple[tuple[str, int], ...]:
    """The RLIMIT_ names of the ``resource`` module and their numbers, found once (three snapshots a claim)."""
    import resource

    return tuple((name, getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_"))


def check(before: Limits, now: Limits | None = None) -> None:
    """LimitsChanged when a limit differs from ``before`` or from the snapshot of a run going on here.

    ``now``: the limits just taken, when the caller has them (None: taken here).
    """
    now = snapshot() if now is None else now
    for earlier in [before, *_runs]:
        changed = [name for name, value in earlier.items() if now.get(name) != value]
        if changed:
            shown = ", ".join(f"{name} {_shown(earlier[name])} -> {_shown(now[name])}" for name in changed)
            raise LimitsChanged(f"a claim changed physverify's limits during the run ({shown}); no verdict is "
                                "reported, since what physverify decided or wrote after that may be what the claim "
                                "chose (prlimit needs only the same user; sandbox/README.md)")


@contextmanager
def watching() -> Iterator[Limits]:
    """The limits now, checked again on the way out of the block and by every ``check`` inside it."""
    before = snapshot()
    _runs.append(before)
    try:
        yield before
    except BaseException:  # clean up and re-raise, as the limits' own error when a claim changed them
        _runs.remove(before)
        check(before)
        raise
    _runs.remove(before)
    check(before)


def _shown(value: tuple[int, int]) -> str:
    soft, hard = ("unlimited" if limit < 0 else str(limit) for limit in value)
    return f"{soft}/{hard}"
