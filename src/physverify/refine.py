"""Refinement plans: the levels a study asks for one at a time, instead of a fixed list.

A plan is a value, not a loop: ``refine(8, max_n=4096)`` says which levels may be asked for
(8, 16, 32, ... integers, strictly increasing) and where to stop at the latest. The study that
receives it decides after each level whether its evidence is settled; the plan only bounds how
far it may go. Every study that takes ``ns`` (a list of resolutions) also takes a plan, and a
list keeps the behaviour it always had.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Without max_n or max_levels a plan still ends: this many levels at most. With ratio 2 and a
# start of 4 that is n = 4 * 2**19, about two million steps, far past any claim's budget.
DEFAULT_MAX_LEVELS = 20


@dataclass(frozen=True)
class Refinement:
    """A refinement plan: levels ``start, start*ratio, ...`` bounded by ``max_n``, ``max_levels`` and ``budget_s``."""

    start: int
    ratio: float = 2.0
    max_n: int | None = None
    max_levels: int | None = None
    budget_s: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start < 1:
            raise ValueError(f"refine(start={self.start!r}): start must be a positive integer")
        if isinstance(self.ratio, bool) or not isinstance(self.ratio, (int, float)) or not math.isfinite(self.ratio) \
                or self.ratio <= 1:
            raise ValueError(f"refine(ratio={self.ratio!r}): the ratio between levels must be a finite number above 1")
        if self.max_n is not None and (isinstance(self.max_n, bool) or not isinstance(self.max_n, int)
                                       or self.max_n < self.start):
            raise ValueError(f"refine(max_n={self.max_n!r}): max_n must be an integer at least start ({self.start})")
        if self.max_levels is not None and (isinstance(self.max_levels, bool) or not isinstance(self.max_levels, int)
                                            or self.max_levels < 2):
            raise ValueError(f"refine(max_levels={self.max_levels!r}): a plan needs at least 2 levels")
        if self.budget_s is not None and (isinstance(self.budget_s, bool) or not isinstance(self.budget_s, (int, float))
                                          or not self.budget_s > 0 or not math.isfinite(self.budget_s)):
            raise ValueError(f"refine(budget_s={self.budget_s!r}): the budget must be a positive number of seconds")

    def levels(self) -> Iterator[int]:
        """The levels in order: integers, strictly increasing, within ``max_n`` and ``max_levels``."""
        limit = self.max_levels if self.max_levels is not None else DEFAULT_MAX_LEVELS
        previous = 0
        for k in range(limit):
            n = int(round(self.start * self.ratio ** k))
            n = max(n, previous + 1)  # a ratio near 1 must still move the level
            if self.max_n is not None and n > self.max_n:
                return
            yield n
            previous = n

    def describe(self) -> str:
        """The plan in words, for messages ("n = 8, 16, ... up to 4096")."""
        bound = f" up to {self.max_n}" if self.max_n is not None else ""
        return f"n = {self.start}, {int(round(self.start * self.ratio))}, ...{bound}"


def refine(start: int, *, ratio: float = 2, max_n: int | None = None, max_levels: int | None = None,
           budget_s: float | None = None) -> Refinement:
    """A refinement plan starting at ``start`` and multiplying by ``ratio`` until a bound or a decision."""
    return Refinement(start, ratio, max_n, max_levels, budget_s)


def is_plan(ns: object) -> bool:
    """Whether ``ns`` is a refinement plan (as opposed to a list of resolutions)."""
    return isinstance(ns, Refinement)


def as_list(ns: Sequence[int] | Refinement) -> list[int]:
    """Every level a list or a plan names, for code that needs them all at once."""
    return list(ns.levels()) if isinstance(ns, Refinement) else list(ns)


# --- what the next level would cost: a plan always ends ------------------------------------------
# A level's cost grows like n**d: d = 1 for a time integration, 2 or 3 for a grid in 2-D or 3-D, more
# for a dense solve. d is read from the two latest levels, never below 1 (small levels are dominated
# by fixed costs, which would make d look smaller than it is) nor above _MAX_EXPONENT.
_MAX_EXPONENT = 4.0
# Memory is predicted from the growth of the process's peak resident size over the levels; growth
# below this many bytes is noise (allocator pools, caches), too small to extrapolate from.
_MEMORY_NOISE = 16 * 2**20
# A level is not started when the memory it is predicted to need passes this fraction of what is left.
_MEMORY_SHARE = 0.8
# Without a budget of its own, a plan leaves the other half of the run's remaining time to the rest of it.
_RUN_SHARE = 0.5


class LevelCosts:
    """The time and the memory each level took, to tell whether the next one can finish."""

    def __init__(self) -> None:
        self._levels: list[tuple[int, float, int]] = []  # (n, seconds, growth of the peak resident size)
        self._baseline = _peak_bytes()

    def record(self, n: int, seconds: float) -> None:
        """Note that level ``n`` took ``seconds`` (the peak memory is read here)."""
        self._levels.append((n, max(seconds, 0.0), max(0, _peak_bytes() - self._baseline)))

    def seconds(self, n: int) -> float:
        """The predicted time of level ``n`` (0 before any level ran)."""
        if not self._levels:
            return 0.0
        last_n, last_s, _ = self._levels[-1]
        exponent = 1.0
        if len(self._levels) >= 2:
            before_n, before_s, _ = self._levels[-2]
            if before_s > 0 and last_s > 0 and last_n > before_n:
                exponent = min(_MAX_EXPONENT, max(1.0, math.log(last_s / before_s) / math.log(last_n / before_n)))
        linear = max(s / m for m, s, _ in self._levels) * n  # the cost per unit of n never shrinks
        return max(linear, last_s * (n / last_n) ** exponent)

    def bytes(self, n: int) -> int | None:
        """The predicted growth of the peak resident size by level ``n``, or None while too small to tell."""
        grown = [(m, b) for m, _, b in self._levels if b > _MEMORY_NOISE]
        if not grown:
            return None
        last_n, last_b = grown[-1]
        exponent = 1.0
        if len(grown) >= 2 and grown[-1][1] > grown[-2][1] and last_n > grown[-2][0]:
            exponent = min(_MAX_EXPONENT, max(1.0, math.log(last_b / grown[-2][1]) / math.log(last_n / grown[-2][0])))
        return int(last_b * (n / last_n) ** exponent)

    def why_not(self, n: int, run_left: float | None) -> str | None:
        """Why level ``n`` should not start (it would not finish in the run's time, or not fit in memory), or None."""
        cost = self.seconds(n)
        if run_left is not None and cost > _RUN_SHARE * run_left:
            return (f"half of the run's remaining time ({run_left:.0f} s of --timeout left; the level would take "
                    f"about {cost:.3g} s)")
        grown, room = self.bytes(n), memory_headroom()
        if grown is not None and room is not None and grown > _MEMORY_SHARE * room:
            return (f"the memory the run allows (the level would need about {grown / 2**20:.0f} MiB, and "
                    f"{room / 2**20:.0f} MiB are left)")
        return None


def _peak_bytes() -> int:
    """The process's peak resident size so far, in bytes (0 where the platform does not say).

    Linux's VmHWM first: getrusage's ru_maxrss survives exec, so a process started by a large
    parent (a test runner, a notebook kernel) reports the parent's peak until its own levels pass
    it, and the growth of each level would read as none; VmHWM belongs to this process's memory.
    """
    own = _status_bytes("VmHWM:")
    if own is not None:
        return own
    try:
        import resource
    except ImportError:  # Windows: no getrusage; memory is then not predicted
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # bytes on macOS, KiB on Linux


def memory_headroom() -> int | None:
    """How many more bytes this process may take now: the least of what its address-space limit, its
    cgroup's limit and the machine's available memory leave (None where none is known)."""
    rooms: list[int] = []
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        size = _status_bytes("VmSize:")
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0 and size is not None:
            rooms.append(max(0, int(soft) - size))  # the limit counts address space, so compare address space
    except (ImportError, ValueError, OSError):  # no such limit on this platform: the others decide
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, usage = _number_in(limit_file), _number_in(usage_file)
        if limit is not None and usage is not None and limit < 2**60:
            rooms.append(max(0, limit - usage))
    available = _available_bytes()
    if available is not None:
        rooms.append(available)
    return min(rooms) if rooms else None


def _number_in(path: str) -> int | None:
    """The integer a cgroup file holds, or None ("max", missing, unreadable)."""
    try:
        with open(path, encoding="ascii") as file:
            text = file.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _status_bytes(key: str) -> int | None:
    """A size from /proc/self/status (Linux), in bytes, or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
