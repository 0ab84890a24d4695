"""Refinement plans: the levels a study asks for one at a time, instead of a fixed list.

A plan is a value, not a loop: ``refine(8, max_n=4096)`` says which levels may be asked for
(8, 16, 32, ... integers, strictly increasing) and where to stop at the latest. The study that
receives it decides after each level whether its evidence is settled; the plan only bounds how
far it may go. Every study that takes ``ns`` (a list of resolutions) also takes a plan, and a
list keeps the behaviour it always had.
"""

from __future__ import annotations

import math
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
