"""The distances of distribution_study and their bounds: Kolmogorov's to a cdf, total variation to a pmf.

Kept apart from the studies because it is pure arithmetic on a sample already drawn: how a pmf
becomes cells, how labels are counted, how each distance is computed and bounded.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

# The callable pmf is summed over integers 0, 1, -1, 2, -2, ... until this many values at most.
MAX_PMF_VALUES = 200_000


def kolmogorov(x: np.ndarray, cdf: Callable[[Any], Any]) -> float | str:
    """sup |F_n - F| over the real line (the Kolmogorov distance), or why ``cdf`` could not be evaluated.

    F_n is a step function, so the supremum is reached at a distinct sample value v: F_n(v) - F(v),
    or F(v-) - F_n(v-) just below it (F increases towards v between two sample values). F(v-) is
    F at the float just below v, which for a continuous F is F(v) and for a law with atoms (a
    Poisson or binomial cdf, data with ties) leaves out the jump at v: with F(v) in its place a
    correct sampler of a discrete law showed a distance of the largest jump. DKW holds for every F.
    """
    xs = np.sort(x)
    distinct, first = np.unique(xs, return_index=True)
    below = np.nextafter(distinct, -np.inf)
    values = evaluate(cdf, np.concatenate([distinct, below]))
    if isinstance(values, str) or values.shape != (2 * distinct.size,):
        return f"cdf returned {values if isinstance(values, str) else values.shape} for {2 * distinct.size} values; " \
               "it must return one probability per value"
    if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
        return "cdf returned values outside [0, 1] or not finite; it must be a cumulative distribution function"
    at, left = values[: distinct.size], values[distinct.size:]
    up_to = np.append(first[1:], xs.size) / xs.size  # F_n(v): the share of values <= v
    before = first / xs.size  # F_n(v-): the share of values < v
    return float(max(np.max(up_to - at), np.max(left - before), 0.0))


def evaluate(function: Callable[[Any], Any], values: np.ndarray) -> np.ndarray | str:
    """``function`` on an array, element by element when it does not take arrays (math.erf, say)."""
    try:
        return np.asarray(function(values), dtype=float)
    except (TypeError, ValueError):
        try:
            return np.asarray([float(function(v)) for v in values.tolist()], dtype=float)
        except (TypeError, ValueError) as exc:
            return f"an error ({type(exc).__name__}: {exc})"


class Cells(NamedTuple):
    """The partition the total-variation bound is computed on: one cell per likely value, one for the rest."""

    keys: dict[Hashable, int]
    probabilities: np.ndarray  # of the cells in keys, then the rest (the last entry)


def cells(pmf: Mapping[Hashable, float] | Callable[[Any], Any], spare: float) -> Cells | str:
    """The values of ``pmf`` as cells, most probable first, until they hold 1 - spare of the mass.

    The remaining values (improbable ones, those outside a mapping's keys, for a callable the
    integers not summed) share the last cell. TV over this partition misses at most the
    reference's mass in that cell (|q_x - p_x| summed over it exceeds |q(R) - p(R)| by at most
    2 min(q(R), p(R))), so the bound adds it.
    """
    found = [(key, float(p)) for key, p in pmf.items()] if isinstance(pmf, Mapping) else integer_pmf(pmf, spare)
    if isinstance(found, str):
        return found
    pairs = found
    if any(not math.isfinite(p) or p < 0 or p > 1 for _, p in pairs):
        return "pmf gave a probability outside [0, 1] or not finite"
    total = math.fsum(p for _, p in pairs)
    if total > 1 + 1e-9 or (isinstance(pmf, Mapping) and abs(total - 1) > 1e-9):
        return f"pmf sums to {total:.12g}, not 1"
    pairs.sort(key=lambda kv: -kv[1])
    kept: list[tuple[Hashable, float]] = []
    for key, p in pairs:
        if p == 0 or math.fsum(q for _, q in kept) >= 1 - spare:
            break
        kept.append((key, p))
    rest = max(0.0, 1.0 - math.fsum(p for _, p in kept))
    return Cells({key: i for i, (key, _) in enumerate(kept)}, np.array([p for _, p in kept] + [rest]))


def integer_pmf(pmf: Callable[[Any], Any], spare: float) -> list[tuple[Hashable, float]] | str:
    """pmf on 0, 1, -1, 2, -2, ... until the values hold 1 - spare of the mass (at most MAX_PMF_VALUES)."""
    pairs: list[tuple[Hashable, float]] = []
    total, radius = 0.0, 0
    while total < 1 - spare and len(pairs) < MAX_PMF_VALUES:
        block = np.arange(radius, 2 * radius + 64)
        ks = np.concatenate([block, -block[block > 0]])
        values = evaluate(pmf, ks)
        if isinstance(values, str) or values.shape != ks.shape:
            return f"pmf returned {values if isinstance(values, str) else values.shape} for {ks.size} integers; " \
                   "give a mapping from value to probability, or a callable on integers"
        pairs += list(zip(ks.tolist(), values.tolist(), strict=True))
        total = math.fsum(p for _, p in pairs)
        radius = 2 * radius + 64
    if total < 1 - spare:
        return (f"pmf sums to {total:.6g} over the {len(pairs)} integers nearest 0, short of 1 - {spare:g}; "
                "give a mapping from value to probability")
    return pairs


def draw_labels(call: Callable[[], Any], m: int, who: str) -> list[Hashable] | str:
    """What ``call()`` returned as m hashable values (numbers or labels), or why it is not that."""
    values = call()
    if isinstance(values, np.ndarray):
        if values.ndim != 1 or values.shape[0] != m:
            return f"{who} returned shape {values.shape} where {m} values were asked for; it must return m values"
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return f"{who} returned {type(values).__name__}; it must return a sequence of m values"
    items = list(values)
    if len(items) != m:
        return f"{who} returned {len(items)} values where {m} were asked for; it must return exactly m"
    for i, item in enumerate(items):
        if not isinstance(item, Hashable):
            return f"{who} returned a {type(item).__name__} at index {i}; each observation must be one value"
        if isinstance(item, float) and not math.isfinite(item):
            return (f"{who} returned a value that is not finite at index {i}: a NaN or inf is a crash of the code, "
                    "not an observation")
    return items


def total_variation(items: list[Hashable], cells: Cells, level: float) -> tuple[float, float]:
    """TV between the empirical and the reference pmf over the cells, and its (1 - level) deviation bound.

    Weissman, Ordentlich, Seroussi, Verdu and Weinberger, HP Labs HPL-2003-97, Thm. 2.1:
    P(||p_n - p||_1 >= e) <= (2**k - 2) exp(-n e**2 / 2) for k cells, so TV = L1 / 2 deviates by more
    than sqrt((ln(2**k - 2) + ln(1 / level)) / (2 n)) with probability at most level.
    """
    counts = np.zeros(cells.probabilities.size)
    for value, count in Counter(items).items():
        counts[cells.keys.get(value, cells.probabilities.size - 1)] += count
    n, k = len(items), cells.probabilities.size
    tv = 0.5 * float(np.abs(counts / n - cells.probabilities).sum())
    log_cells = k * math.log(2) + math.log1p(-(2.0 ** (1 - k)))
    return tv, math.sqrt((log_cells + math.log(1 / level)) / (2 * n))
