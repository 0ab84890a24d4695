"""Studies of stochastic codes (Monte Carlo, Langevin, kinetic Monte Carlo), each with a stated error rate.

Every study draws its sample through a ``numpy.random.Generator`` it makes from ``seed``, so the
same code and seed give the same sample and the same verdict in every run and isolation mode.
Each decides by an interval that holds with probability at least ``1 - alpha``:

- ``mean_study``: an equivalence test of the mean (Student's t, or batch means for a chain);
- ``distribution_study``: the Kolmogorov distance with the Dvoretzky-Kiefer-Wolfowitz band at
  Massart's constant, or the total-variation distance with the bound of Weissman et al.;
- ``weak_order_study``: the weak order of an SDE integrator from biases with Monte Carlo intervals.

PASS when the interval lies inside the band ``expected +- tol``, FAIL when it lies entirely
outside, INCONCLUSIVE otherwise with the sample size that would decide. A correct code (its
true value inside the band) then gets FAIL with probability at most alpha, and a defective one
(outside the band) PASS with probability at most alpha. When ``n`` is a refinement plan, the
sample grows through the plan's levels and each look is made at alpha / looks (Bonferroni over
the planned looks), so the stated rate holds for the whole sequence.

What the rates assume is tested where a sample can show it, and a sample that fails a test is
INCONCLUSIVE (never PASS or FAIL), so the tests cost decisions, not soundness: independence (a
lag-1 test and Flyvbjerg and Petersen's blocking test), a mean near enough to normal for the t
interval (a rule on the sample's skewness), and a draw the seed chooses (the sampler drew from
``rng`` and from no global generator).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from physverify._distances import cells, draw_labels, kolmogorov, total_variation
from physverify.checks import ERROR, FAIL, INCONCLUSIVE, PASS, Result, remaining_budget
from physverify.refine import Refinement, is_plan

GENERATOR = "numpy.random.PCG64"
# Fewer observations than this give an interval whose normal approximation nobody should trust.
MIN_SAMPLE = 10
# Below this many batches the lag-1 test of the batch means has no power at all.
MIN_BATCHES = 10
# A batch must span this many autocorrelation times (n / ess): adjacent batch means of an AR(1)
# chain then correlate by about 1 / (2 * this), and their t interval holds. The lag-1 test alone
# misses batches that are far too short, because 20 strongly correlated means look smooth, not
# correlated.
BATCH_TIMES = 10
# Level of the tests of independence, all of them together (Bonferroni): the lag-1
# autocorrelation and the blocked variances. A flag only makes the check INCONCLUSIVE (never PASS
# or FAIL), so it does not enter the stated error rates; 1 % keeps a correct, independent sample
# decided in 99 % of runs.
CORRELATION_LEVEL = 0.01
# The blocking test looks at blocks of 2, 4, 8, ... observations while there are this many
# blocks: fewer give a variance of the block means too rough to test.
MIN_BLOCKS = 32

Sizes = int | Refinement


@dataclass(frozen=True)
class StochasticResult(Result):
    """A Result from a stochastic study, with the numbers and the draw it was decided on.

    ``estimate`` lies in the interval [``low``, ``high``], which holds with probability at least
    1 - ``alpha``; the band is ``expected`` +- ``tol``. ``kind`` is "mean", "kolmogorov",
    "total variation" or "weak order". ``n`` is the sample size (per step size for the weak
    order), ``looks`` how many times the sample was judged and ``level`` the rate spent at each
    (alpha / planned looks). ``seed`` and ``generator`` name the draw. ``batches`` and ``ess``
    (effective sample size) describe a chain; ``dts``, ``biases`` and ``half_widths`` the
    weak-order study's biases and their Monte Carlo half-widths.
    """

    kind: str = ""
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    expected: float | None = None
    tol: float | None = None
    n: int = 0
    alpha: float | None = None
    level: float | None = None
    looks: int = 0
    seed: int | None = None
    generator: str = GENERATOR
    batches: int | None = None
    ess: float | None = None
    dts: tuple[float, ...] = ()
    biases: tuple[float, ...] = ()
    half_widths: tuple[float, ...] = ()


# --- arguments ------------------------------------------------------------------------------
def _sizes(n: Sizes, minimum: int = MIN_SAMPLE) -> tuple[list[int], float | None]:
    """The cumulative sample sizes to look at, and the plan's budget in seconds (None: none)."""
    if is_plan(n):
        assert isinstance(n, Refinement)
        sizes, budget = list(n.levels()), n.budget_s
    elif isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        sizes, budget = [int(n)], None
    else:
        raise TypeError(f"n must be an int or a refinement plan (physverify.refine), not {n!r}")
    if not sizes or sizes[0] < minimum:
        raise ValueError(f"n must be at least {minimum} observations, got {sizes[0] if sizes else n!r}")
    return sizes, budget


def _check_rate(alpha: float, tol: float, seed: int) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a probability strictly between 0 and 1, got {alpha!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def generator(seed: int) -> np.random.Generator:
    """The study's generator: PCG64 seeded with ``seed`` (numpy keeps PCG64's stream stable across versions)."""
    return np.random.Generator(np.random.PCG64(int(seed)))


def _draw_numbers(call: Callable[[], Any], m: int, who: str) -> np.ndarray | str:
    """What ``call()`` returned as m finite floats, or the sentence saying why it is not that."""
    values = call()
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return f"{who} returned {type(values).__name__} values that are not numbers; it must return m numbers"
    if array.ndim != 1 or array.shape[0] != m:
        shape = "a single number" if array.ndim == 0 else f"shape {array.shape}"
        return f"{who} returned {shape} where {m} values were asked for; it must return a 1-D array of exactly m numbers"
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        return (f"{who} returned {bad.size} values that are not finite (the first at index {bad[0]}): "
                "a NaN or inf is a crash of the code, not an observation")
    return array


def _lag1(x: np.ndarray) -> float:
    """The lag-1 autocorrelation of x; 0 for a constant sequence (nothing to correlate)."""
    centred = x - x.mean()
    denominator = float(centred @ centred)
    return 0.0 if denominator == 0 or x.size < 3 else float(centred[:-1] @ centred[1:]) / denominator


def _correlation_limit(count: int, level: float = CORRELATION_LEVEL) -> float:
    """The lag-1 autocorrelation above which ``count`` values are not independent at ``level``.

    For independent values sqrt(count) r1 is asymptotically standard normal (Box, Jenkins and
    Reinsel, Time Series Analysis, sec. 2.1.6), so this one-sided test flags a positive correlation.
    """
    from scipy.stats import norm  # imported here: scipy.stats costs a few tenths of a second to import

    return float(norm.ppf(1 - level)) / math.sqrt(count)


class _Correlation(NamedTuple):
    """The tests of independence of a series: its lag-1 autocorrelation and its blocked variances."""

    lag1: float
    limit: float
    ratio: float = 0.0  # the block length's variance of the mean over the independent one's, where it is largest
    block: int = 0
    ratio_limit: float = math.inf

    @property
    def flagged(self) -> bool:
        return self.lag1 > self.limit or self.ratio > self.ratio_limit

    def words(self) -> str:
        said = [f"lag-1 autocorrelation {self.lag1:.2f}, above {self.limit:.2g}"] if self.lag1 > self.limit else []
        if self.ratio > self.ratio_limit:
            said.append(f"the means of blocks of {self.block} vary {self.ratio:.3g} times as much as independent "
                        f"values' would, above {self.ratio_limit:.3g}")
        return "; ".join(said)


def _blocked(x: np.ndarray, level: float) -> tuple[float, int, float]:
    """The blocking test (Flyvbjerg and Petersen, J. Chem. Phys. 91 (1989) 461) at ``level``.

    For blocks of L = 2, 4, 8, ... values, R_L = L var(block means) / var(x) estimates how many
    times the variance of the mean exceeds the independent one's, 1 + 2 sum of the
    autocorrelations up to about lag L (Sokal's integrated autocorrelation time). For independent
    values (B - 1) R_L is about chi-squared with B - 1 degrees of freedom for B blocks; each L is
    tested one-sided at level / (number of L). The lag-1 test alone misses a chain whose
    correlation is not at lag 1: the potential energy of a weakly damped oscillator sampled every
    quarter period has a lag-1 autocorrelation near 0 and one near 1 at lag 2. Returns the ratio,
    block length and limit where R_L / limit is largest; (0, 0, inf) when no L has enough blocks.
    """
    from scipy.stats import chi2

    lengths = [2**j for j in range(1, 64) if x.size // 2**j >= MIN_BLOCKS]
    variance = float(np.var(x, ddof=1))
    if not lengths or variance == 0:
        return 0.0, 0, math.inf
    dof = np.array([x.size // length - 1 for length in lengths])
    limits = chi2.ppf(1 - level / len(lengths), dof) / dof  # one call: scipy's ppf costs most per call
    worst = (0.0, 0, math.inf)
    for length, limit in zip(lengths, limits.tolist(), strict=True):
        count = x.size // length
        means = x[: count * length].reshape(count, length).mean(axis=1)
        ratio = length * float(np.var(means, ddof=1)) / variance
        if ratio / limit > worst[0] / worst[2]:
            worst = (ratio, length, limit)
    return worst


def _correlation(series: Sequence[np.ndarray], level: float = CORRELATION_LEVEL) -> _Correlation:
    """Whether any of ``series`` (one sample, or transforms of it) is correlated, at ``level`` over all tests.

    Each series gets the lag-1 test and the blocking test at level / (2 len(series)); the result
    is the series that is most clearly correlated (or the first, when none is).
    """
    each = level / (2 * len(series))
    found: list[_Correlation] = []
    for x in series:
        ratio, block, ratio_limit = _blocked(x, each)
        found.append(_Correlation(_lag1(x), _correlation_limit(x.size, each), ratio, block, ratio_limit))
    return max(found, key=lambda c: max(c.lag1 / c.limit, c.ratio / c.ratio_limit))


def _context(result: StochasticResult) -> str:
    """The draw in words, for every message: "n = 1000, seed 0, numpy.random.PCG64, alpha = 0.001"."""
    looks = f", {result.looks} looks at {result.level:.2g} each" if result.looks > 1 and result.level else ""
    return f"n = {result.n}, seed {result.seed}, {result.generator}, alpha = {result.alpha:g}{looks}"


# --- where the randomness comes from ------------------------------------------------------------
class _Source:
    """Watches whether a sampler draws from the study's rng, as the stated rate and the replays assume.

    A sampler that draws from numpy's or Python's global generator (np.random.normal, a
    scipy.stats rvs without random_state, random.random) draws another sample in every run (the
    fork server reseeds the global generator from fresh entropy, like a fresh interpreter), so its
    verdict is not reproducible; one that returns varying values without touching rng has its
    own generator, which the seed does not reach (a fixed one makes every seed's verdict the
    verdict of one draw, so "replay with another seed" would not redraw it).
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.problem: str | None = None
        self.drew = False  # whether any call drew from rng

    def before(self) -> tuple[Any, ...]:
        import random

        return self.rng.bit_generator.state, np.random.get_state(legacy=True), random.getstate()

    def after(self, before: tuple[Any, ...], values: Any, who: str) -> None:
        import random

        own, (name, keys, position, gauss, cached), python = before
        now: tuple[Any, ...] = np.random.get_state(legacy=True)  # type: ignore[assignment]
        global_drawn = (now[0] != name or not np.array_equal(now[1], keys) or now[2:] != (position, gauss, cached)
                        or random.getstate() != python)
        varies = (bool(values.size) and bool(values.min() != values.max())) if isinstance(values, np.ndarray) \
            else len(set(values)) > 1
        self.drew = self.drew or self.rng.bit_generator.state != own
        if self.problem is not None:
            return
        if global_drawn:
            self.problem = (f"{who} drew from numpy's or Python's global random generator, which the study's seed "
                            "does not set, so the seed does not choose the draw (unseeded, another run draws another "
                            "sample and another verdict); draw every random number from rng (scipy.stats: "
                            "random_state=rng), or wrap a code that draws from global state in "
                            "`with physverify.seeded(rng):`")
        elif varies and self.rng.bit_generator.state == own:
            self.problem = (f"{who} returned varying values without drawing from rng, so its randomness comes from "
                            "a generator the study's seed does not reach (an unseeded one gives another verdict in "
                            "every run, a fixed one the same draw for every seed); draw every random number from rng "
                            "(a JAX code: key_sampler=True; Numba's jitted np.random: call an @njit function that "
                            "runs np.random.seed(int(rng.integers(2**32))) first)")


# --- growing the sample along a plan --------------------------------------------------------
def _grow(sizes: list[int], budget_s: float | None, draw: Callable[[int], str | None],
          judge: Callable[[int, float], StochasticResult], alpha: float, seed: int,
          source: _Source | None = None, generator_name: str = GENERATOR) -> StochasticResult:
    """Draw up to each cumulative size and judge it at alpha / len(sizes); stop at PASS, FAIL or ERROR.

    A sampler whose draws the seed does not choose (``source.problem``) is INCONCLUSIVE at once,
    whatever the interval says.

    The rate is split over every planned look, also those a budget ends before they are made, so
    the chance of any wrong decision along the way stays at most alpha (Bonferroni).
    """
    level, drawn, start = alpha / len(sizes), 0, time.monotonic()
    result: StochasticResult | None = None
    for size in sizes:
        if result is not None and _out_of_time(start, budget_s, drawn, size):
            return replace(result, message=f"{result.message} (the plan stopped at n = {drawn}: its next level "
                                           "would overrun the time budget)")
        problem = draw(size - drawn)
        if problem is not None:
            error = StochasticResult(ERROR, "", n=size, alpha=alpha, level=level, looks=len(sizes), seed=int(seed),
                                     generator=generator_name)
            return replace(error, message=f"{problem} ({_context(error)})")
        drawn = size
        result = replace(judge(size, level), looks=len(sizes), level=level, generator=generator_name)
        result = replace(result, message=result.message.replace("{context}", _context(result)))
        if source is not None and source.problem is not None:
            return replace(result, status=INCONCLUSIVE, message=f"{result.message}; but {source.problem}")
        if result.status != INCONCLUSIVE:
            return result
    assert result is not None
    return result


def _out_of_time(start: float, budget_s: float | None, drawn: int, size: int) -> bool:
    """Whether the next level, costing about its share of the time spent so far, would overrun a budget."""
    spent = time.monotonic() - start
    projected = spent * (size - drawn) / max(drawn, 1)
    limits = [b for b in (None if budget_s is None else budget_s - spent, remaining_budget()) if b is not None]
    return any(projected > left for left in limits)


# --- the mean --------------------------------------------------------------------------------
class _Interval(NamedTuple):
    estimate: float
    half: float
    ess: float
    correlation: _Correlation  # of the observations, or of the batch means
    short: bool = False  # batches spanning fewer than BATCH_TIMES autocorrelation times
    skewness: float = 0.0  # the observations' sample skewness
    skew_n: int | None = None  # the (effective) sample size the skewness needs, when more than there is


def _skewness(x: np.ndarray) -> float:
    """The adjusted Fisher-Pearson sample skewness G1 (Joanes and Gill, The Statistician 47 (1998) 183); 0 when constant."""
    centred = x - x.mean()
    m2 = float(centred @ centred) / x.size
    if m2 == 0 or x.size < 3:
        return 0.0
    m3 = float((centred * centred) @ centred) / x.size  # products, not **3: numpy's float power is slow
    return m3 / m2**1.5 * math.sqrt(x.size * (x.size - 1)) / (x.size - 2)


def _skew_needed(skewness: float, size: float, level: float) -> int | None:
    """The sample size at which a skewed sample's t interval keeps its one-sided error within level / 2, if above ``size``.

    The t statistic of a sample with skewness gamma has P(T <= x) = Phi(x) + gamma (2 x**2 + 1)
    phi(x) / (6 sqrt(n)) + O(1 / n) (Hall, The Bootstrap and Edgeworth Expansion, sec. 2.6), so at
    the band's edge the side that decides errs by up to level / 2 more than the normal rate: at
    most level / 2 + level / 2, the stated rate, when sqrt(n) >= |gamma| (2 z**2 + 1) phi(z) /
    (3 level). The sample's skewness understates a skewed law's at small n, so its standard
    error under normality, sqrt(6 / n), is added. This is Cochran's rule (n > 25 G1**2 at 95 %)
    with a factor that grows as the level falls: about 47 G1**2 at 1 %, 180 G1**2 at 0.1 %. It catches the skewed
    samples physics gives (waiting times, Boltzmann factors, reweighting weights); no rule on a
    sample can catch every law whose mean it misjudges (Bahadur and Savage, Ann. Math. Statist. 27
    (1956) 1115).
    """
    from scipy.stats import norm

    z = float(norm.ppf(1 - level / 2))
    factor = (2 * z * z + 1) * float(norm.pdf(z)) / (3 * level)

    def required(n: float) -> float:
        return ((abs(skewness) + math.sqrt(6 / n)) * factor) ** 2

    if size >= required(size):
        return None
    low, high = size, required(size)  # required falls with n, so n = required(size) is enough
    while high - low > 0.5:  # the smallest n >= required(n), by bisection
        middle = (low + high) / 2
        low, high = (low, middle) if middle >= required(middle) else (middle, high)
    return math.ceil(high)


def _mean_interval(x: np.ndarray, batches: int | None, level: float) -> _Interval:
    """The mean and the half-width of its (1 - level) interval: Student's t on the observations, or
    on ``batches`` batch means (Flegal and Jones, Ann. Statist. 38 (2010) 1034; Geyer, Statist. Sci.
    7 (1992) 473): the batch means of a chain whose batches are much longer than its autocorrelation
    time are nearly independent and normal, so their t interval holds."""
    from scipy.stats import t as student  # imported here, as in _correlation_limit

    if batches is not None:
        length = x.size // batches
        means = x[: batches * length].reshape(batches, length).mean(axis=1)
        spread = float(np.std(means, ddof=1))
        half = float(student.ppf(1 - level / 2, batches - 1)) * spread / math.sqrt(batches)
        asymptotic = length * spread**2  # the batch-means estimate of the chain's asymptotic variance
        variance = float(np.var(x, ddof=1))
        ess = x.size if asymptotic == 0 else min(float(x.size), x.size * variance / asymptotic)
        # a constant chain has no autocorrelation time to span: its batches are never too short
        short = asymptotic > 0 and ess < BATCH_TIMES * batches
        correlation = _Correlation(_lag1(means), _correlation_limit(batches))
        # the batch means are about as skewed as a mean of ess / batches independent values
        skewness = _skewness(x)
        needed = _skew_needed(skewness, ess, level)
        return _Interval(float(means.mean()), half, ess, correlation, short, skewness,
                         None if needed is None else math.ceil(needed * x.size / max(ess, 1e-300)))
    spread = float(np.std(x, ddof=1))
    half = float(student.ppf(1 - level / 2, x.size - 1)) * spread / math.sqrt(x.size)
    skewness = _skewness(x)
    return _Interval(float(x.mean()), half, float(x.size), _correlation([x]), False, skewness,
                     _skew_needed(skewness, x.size, level))


def _decide(low: float, high: float, band_low: float, band_high: float) -> str:
    """The equivalence test: PASS inside the band, FAIL entirely outside, INCONCLUSIVE across an edge."""
    if band_low <= low and high <= band_high:
        return PASS
    if high < band_low or low > band_high:
        return FAIL
    return INCONCLUSIVE


def _needed(n: int, half: float, distance: float, tol: float) -> str:
    """The sample size at which the half-width (shrinking like 1/sqrt(n)) would clear the nearer band edge."""
    margin = abs(abs(distance) - tol)
    if margin <= 1e-12 * max(tol, abs(distance), 1e-300):
        return "the estimate sits on the edge of the band, so no sample size decides; tol does"
    return f"about n = {math.ceil(n * (half / margin) ** 2)} would decide at the observed spread"


def mean_study(sample: Callable[[int, Any], Any], expected: float, *, tol: float, n: Sizes,
               alpha: float = 1e-3, seed: int = 0, batches: int | None = None,
               key_sampler: bool = False) -> StochasticResult:
    """Whether the mean of ``sample``'s observations is within ``tol`` of ``expected``, at error rate ``alpha``.

    ``sample(m, rng)`` returns m more observations (a chain may continue where it stopped); ``rng``
    is the study's Generator from ``seed``. PASS when the (1 - alpha) interval of the mean lies in
    expected +- tol, FAIL when it lies outside, INCONCLUSIVE otherwise with the n that would decide.
    Assumes independent observations, or a chain with ``batches`` batch means (10 or more) each much
    longer than its autocorrelation time; a lag-1 correlation or a failed blocking test of the
    observations (or a lag-1 correlation of the batch means), a sample too skewed for its size
    (``_skew_needed``), or a constant sample from a sampler that drew random numbers makes the
    check INCONCLUSIVE. ``key_sampler=True``: ``sample(m, key)`` takes a JAX key instead of rng,
    a new one at every call, made from rng's draws (``seeding.jax_key``), as JAX code is called.
    """
    _check_rate(alpha, tol, seed)
    if batches is not None and (isinstance(batches, bool) or not isinstance(batches, int) or batches < MIN_BATCHES):
        raise ValueError(f"batches must be an integer of at least {MIN_BATCHES}, got {batches!r}")
    sizes, budget = _sizes(n, MIN_SAMPLE if batches is None else 2 * batches)
    rng, parts = generator(seed), []
    source = _Source(rng)
    given, name = _randomness(rng, key_sampler)

    def draw(m: int) -> str | None:
        before, who = source.before(), f"sample({m}, {name})"
        got = _draw_numbers(lambda: sample(m, given()), m, who)
        if isinstance(got, str):
            return got
        source.after(before, got, who)
        parts.append(got)
        return None

    def judge(size: int, level: float) -> StochasticResult:
        iv = _mean_interval(np.concatenate(parts), batches, level)
        low, high = iv.estimate - iv.half, iv.estimate + iv.half
        status = _decide(low, high, expected - tol, expected + tol)
        base = StochasticResult(status, "", kind="mean", estimate=iv.estimate, low=low, high=high, expected=expected,
                                tol=tol, n=size, alpha=alpha, seed=int(seed), batches=batches, ess=iv.ess)
        if iv.half == 0 and source.drew:
            return replace(base, status=INCONCLUSIVE, message=_constant_message(base, iv, 1 - alpha))
        return replace(base, status=INCONCLUSIVE if _unreliable(iv) else status,
                       message=_mean_message(base, iv, 1 - alpha))

    return _grow(sizes, budget, draw, judge, alpha, seed, source, _generator_name(key_sampler))


def _randomness(rng: np.random.Generator, key_sampler: bool) -> tuple[Callable[[], Any], str]:
    """What each call of a sampler is given (the study's rng, or a new JAX key from it) and its name in messages."""
    if not key_sampler:
        return (lambda: rng), "rng"
    from physverify.seeding import jax_key

    return (lambda: jax_key(rng)), "key"


def _generator_name(key_sampler: bool) -> str:
    """The draw's generator as the messages name it: a key sampler's keys are words of the study's PCG64."""
    return f"{GENERATOR} (a JAX key of its words per call)" if key_sampler else GENERATOR


def _constant_message(result: StochasticResult, iv: _Interval, confidence: float) -> str:
    """Why a constant sample from a sampler that drew random numbers decides nothing.

    A code that draws no random numbers and returns a constant is judged on it (its mean is that
    constant). One that drew from rng and still returned n equal values may take another value
    rarely: counting a rare event (an acceptance, a barrier crossing) of probability p sees none
    in n trials with probability (1 - p)**n, 2 % for p = 0.002 and n = 2000, and its interval of
    width 0 would then be FAIL at any alpha. No sample of equal values bounds the mean.
    """
    return (f"mean {iv.estimate:.6g} +- 0 ({confidence:.4g} interval; {{context}}): all {result.n} observations are "
            "equal although the sampler drew random numbers, so a value it takes rarely (an event not yet seen) "
            "could move the mean by any amount and no interval can be given; give a larger n (several times "
            "1 / the event's probability)")


def _unreliable(iv: _Interval) -> bool:
    """Whether the observations (or batch means) are correlated, the batches span too few autocorrelation
    times, or the sample is too skewed for the normal approximation at its size."""
    return iv.correlation.flagged or iv.short or iv.skew_n is not None


def _mean_message(result: StochasticResult, iv: _Interval, confidence: float) -> str:
    head = (f"mean {iv.estimate:.6g} +- {iv.half:.3g} ({confidence:.4g} interval; {{context}}"
            + (f"; {result.batches} batch means, effective sample size {iv.ess:.0f}" if result.batches else "") + ")")
    band = f"the band {result.expected:g} +- {result.tol:g}"
    if result.batches and (iv.correlation.flagged or iv.short):
        why = (f"the batch means are correlated ({iv.correlation.words()})" if iv.correlation.flagged
               else f"a batch of {result.n // result.batches} spans fewer than {BATCH_TIMES} "
               f"autocorrelation times (about {result.n / max(iv.ess, 1e-300):.3g} each)")
        return f"{head}: {why}, so the interval cannot be trusted; use longer batches (a larger n or fewer batches)"
    if iv.correlation.flagged:
        return (f"{head}: the observations are correlated ({iv.correlation.words()}), "
                "so the interval cannot be trusted; pass batches= (20 or more) or thin the chain")
    if iv.skew_n is not None:
        return (f"{head}: the observations are too skewed for the normal approximation of the interval at this n "
                f"(sample skewness {iv.skewness:.3g}; it holds at this alpha from about n = {iv.skew_n}), so the "
                "interval cannot be trusted; give a larger n, or, for a heavy tail (a variance that may be infinite, "
                "as exponential averaging of a free-energy perturbation has), an estimator with a lighter one")
    if result.status == PASS:
        return f"{head} lies inside {band}"
    if result.status == FAIL:
        return (f"{head} lies outside {band}: the mean differs from the expected value by "
                f"{iv.estimate - float(result.expected or 0):.3g}, more than tol and the sampling error allow")
    return (f"{head} reaches across an edge of {band}: "
            + _needed(result.n, iv.half, iv.estimate - float(result.expected or 0), float(result.tol or 0)))


# --- the distribution ------------------------------------------------------------------------
def distribution_study(sample: Callable[[int, Any], Any], cdf: Callable[[Any], Any] | None = None, *,
                       pmf: Mapping[Hashable, float] | Callable[[Any], Any] | None = None, tol: float, n: Sizes,
                       alpha: float = 1e-3, seed: int = 0, key_sampler: bool = False) -> StochasticResult:
    """Whether ``sample`` draws from ``cdf`` (continuous) or ``pmf`` (discrete) to within a distance ``tol``.

    Continuous: the Kolmogorov distance D to ``cdf`` with the Dvoretzky-Kiefer-Wolfowitz band
    eps = sqrt(ln(2 / alpha) / (2 n)) at Massart's constant (Ann. Probab. 18 (1990) 1269): PASS
    when D + eps <= tol, FAIL when D - eps > tol. Discrete: ``pmf`` maps values (integers or labels)
    to probabilities, or is a callable on integers; the total-variation distance with the bound of
    ``physverify._distances.total_variation``; a value outside a mapping's keys has probability 0 and counts against
    the code. Assumes independent observations: thin a chain (keep every k-th state, k several
    autocorrelation times) or run independent replicas; a lag-1 correlation or a failed blocking
    test of numeric observations, or of their indicators below each quartile, makes the check
    INCONCLUSIVE. ``cdf`` may have jumps (a Poisson cdf): the distance takes its left limits.
    ``key_sampler=True``: ``sample(m, key)`` takes a JAX key, as in ``mean_study``.
    """
    _check_rate(alpha, tol, seed)
    if (cdf is None) == (pmf is None):
        raise ValueError("give exactly one of cdf (a continuous distribution) and pmf (a discrete one)")
    sizes, budget = _sizes(n)
    partition = None if pmf is None else cells(pmf, tol / 10)
    if isinstance(partition, str):
        raise ValueError(partition)
    rng = generator(seed)
    parts: list[Any] = []
    source = _Source(rng)
    given, name = _randomness(rng, key_sampler)

    def draw(m: int) -> str | None:
        who, before = f"sample({m}, {name})", source.before()
        got = _draw_numbers(lambda: sample(m, given()), m, who) if partition is None else \
            draw_labels(lambda: sample(m, given()), m, who)
        if isinstance(got, str):
            return got
        source.after(before, got, who)
        parts.append(got)
        return None

    def judge(size: int, level: float) -> StochasticResult:
        if partition is None:
            assert cdf is not None
            distance = kolmogorov(np.concatenate(parts), cdf)
            if isinstance(distance, str):
                return StochasticResult(ERROR, distance + " ({context})", n=size, alpha=alpha, seed=int(seed))
            eps, rest, kind = math.sqrt(math.log(2 / level) / (2 * size)), 0.0, "kolmogorov"
        else:
            distance, eps = total_variation([v for part in parts for v in part], partition, level)
            rest, kind = float(partition.probabilities[-1]), "total variation"
        low, high = max(0.0, distance - eps), distance + eps + rest
        status = PASS if high <= tol else FAIL if distance - eps > tol else INCONCLUSIVE
        result = StochasticResult(status, "", kind=kind, estimate=distance, low=low, high=high, expected=0.0, tol=tol,
                                  n=size, alpha=alpha, seed=int(seed))
        return _independence(result, parts, eps, rest)

    return _grow(sizes, budget, draw, judge, alpha, seed, source, _generator_name(key_sampler))


def _independence(result: StochasticResult, parts: list[Any], eps: float, rest: float) -> StochasticResult:
    """The distance's message, INCONCLUSIVE when numeric observations are correlated (a chain not thinned)."""
    values = [v for part in parts for v in (part.tolist() if isinstance(part, np.ndarray) else part)]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    correlation = _distribution_correlation(np.asarray(values, dtype=float)) if numeric else None
    head = (f"{result.kind} distance {result.estimate:.4g} +- {eps:.3g}"
            + (f" (+ {rest:.2g} for the improbable values)" if rest else "") + f" ({1 - float(result.alpha or 0):.4g} "
            "bound; {context})")
    if correlation is not None and correlation.flagged:
        return replace(result, status=INCONCLUSIVE, message=(
            f"{head}: the observations are correlated ({correlation.words()}), so the "
            "bound does not hold; thin the chain (keep every k-th state) or draw independent replicas"))
    if result.status == PASS:
        return replace(result, message=f"{head} is within tol = {result.tol:g}")
    if result.status == FAIL:
        return replace(result, message=f"{head} exceeds tol = {result.tol:g}: the sample is not from the expected "
                                       "distribution")
    return replace(result, message=f"{head} reaches across tol = {result.tol:g}: "
                   + _needed_distance(result.n, eps, float(result.estimate or 0), rest, float(result.tol or 0)))


def _distribution_correlation(x: np.ndarray) -> _Correlation:
    """The independence tests of the values and of their indicators below each quartile.

    The distance is a supremum over thresholds, so what must be independent is each indicator
    1{x <= q}, not only x: the position of a weakly damped oscillator sampled every quarter period
    alternates in sign (its mean looks anti-correlated) while its size repeats.
    """
    quartiles = np.quantile(x, [0.25, 0.5, 0.75])
    return _correlation([x, *((x <= q).astype(float) for q in quartiles)])


def _needed_distance(n: int, eps: float, distance: float, rest: float, tol: float) -> str:
    """The sample size at which the bound (shrinking like 1/sqrt(n)) would clear tol on either side."""
    if distance + rest < tol:
        margin = tol - distance - rest
    elif distance > tol:
        margin = distance - tol
    else:
        return (f"the distance sits at tol (with {rest:.2g} of improbable mass), so no sample size decides; "
                "tol does")
    return f"about n = {math.ceil(n * (eps / margin) ** 2)} would decide"


# --- the weak order of an SDE integrator -------------------------------------------------------
class _Biases(NamedTuple):
    dts: list[float]
    biases: list[float]
    halves: list[float]
    spreads: list[float]
    skewed: list[tuple[float, float, int]]  # (dt, skewness, n it needs) of the samples too skewed for their interval


def _biases(samples: list[list[np.ndarray]], dts: list[float], expected_value: float, level: float) -> _Biases:
    """Each dt's bias E_n[f] - expected_value with its t half-width at ``level`` (split over the dts)."""
    from scipy.stats import t as student

    biases, halves, spreads, skewed = [], [], [], []
    for dt, parts in zip(dts, samples, strict=True):
        x = np.concatenate(parts)
        spread = float(np.std(x, ddof=1))
        biases.append(float(x.mean()) - expected_value)
        halves.append(float(student.ppf(1 - level / (2 * len(dts)), x.size - 1)) * spread / math.sqrt(x.size))
        spreads.append(spread)
        skewness = _skewness(x)
        needed = _skew_needed(skewness, x.size, level / len(dts))
        if needed is not None:
            skewed.append((dt, skewness, needed))
    return _Biases(dts, biases, halves, spreads, skewed)


def _order_interval(b: _Biases, coarse: int, fine: int) -> tuple[float, float, float]:
    """The order from the biases at two step sizes, with the range their intervals allow.

    |bias| = C dt**p gives p = ln(|b_c| / |b_f|) / ln(dt_c / dt_f); when every interval covers
    its bias (probability >= 1 - level, Bonferroni over the dts), p lies between the values at
    the intervals' ends.
    """
    ratio = math.log(b.dts[coarse] / b.dts[fine])
    bc, bf, hc, hf = abs(b.biases[coarse]), abs(b.biases[fine]), b.halves[coarse], b.halves[fine]
    return (math.log(bc / bf) / ratio, math.log((bc - hc) / (bf + hf)) / ratio, math.log((bc + hc) / (bf - hf)) / ratio)


def weak_order_study(sample_at: Callable[[float, int, Any], Any], expected_value: float,
                     dts: Sequence[float], expected_order: float, *, n: Sizes, tol: float = 0.3, alpha: float = 1e-3,
                     seed: int = 0, key_sampler: bool = False) -> StochasticResult:
    """The weak order of an SDE integrator: how the bias of E[f(X_T)] falls with the step dt, beyond Monte Carlo error.

    ``sample_at(dt, m, rng)`` returns m independent samples of f(X_T) computed with step dt;
    ``expected_value`` is the exact E[f(X_T)]; ``n`` samples per dt (an int or a plan). The bias
    at each dt gets a t interval (Bonferroni over the dts and the looks); the order is measured
    between the coarsest and the finest dt whose interval excludes 0, with the range the two
    intervals allow. PASS when that range lies in expected_order +- tol, FAIL when it lies
    entirely below, INCONCLUSIVE otherwise (above: a problem too easy, or dts not asymptotic)
    with the n that would resolve the bias. Assumes every dt is in the asymptotic range, where
    the bias is C dt**p (Kloeden and Platen, Numerical Solution of SDEs, ch. 14: Euler-Maruyama
    has weak order 1). ``key_sampler=True``: ``sample_at(dt, m, key)`` takes a JAX key, as in ``mean_study``.
    """
    _check_rate(alpha, tol, seed)
    steps = sorted((float(dt) for dt in dts), reverse=True)
    if len(steps) < 2 or any(not math.isfinite(dt) or dt <= 0 for dt in steps) or len(set(steps)) < len(steps):
        raise ValueError(f"dts must be two or more different positive step sizes, got {list(dts)!r}")
    sizes, budget = _sizes(n)
    rng = generator(seed)
    samples: list[list[np.ndarray]] = [[] for _ in steps]
    source = _Source(rng)
    given, name = _randomness(rng, key_sampler)

    def draw(m: int) -> str | None:
        for dt, parts in zip(steps, samples, strict=True):
            who, before = f"sample_at({dt:g}, {m}, {name})", source.before()
            got = _draw_numbers(lambda dt=dt: sample_at(dt, m, given()), m, who)  # type: ignore[misc]
            if isinstance(got, str):
                return got
            source.after(before, got, who)
            parts.append(got)
        return None

    def judge(size: int, level: float) -> StochasticResult:
        b = _biases(samples, steps, expected_value, level)
        base = StochasticResult(INCONCLUSIVE, "", kind="weak order", expected=float(expected_order), tol=tol, n=size,
                                alpha=alpha, seed=int(seed), dts=tuple(steps), biases=tuple(b.biases),
                                half_widths=tuple(b.halves))
        return _judge_order(base, b)

    return _grow(sizes, budget, draw, judge, alpha, seed, source, _generator_name(key_sampler))


def _judge_order(base: StochasticResult, b: _Biases) -> StochasticResult:
    resolved = [i for i, (bias, half) in enumerate(zip(b.biases, b.halves, strict=True)) if abs(bias) > half]
    head = "weak order"
    if len(resolved) < 2:
        return replace(base, message=f"{head}: the Monte Carlo error hides the bias at {len(b.dts) - len(resolved)} of "
                       f"{len(b.dts)} step sizes (samples per dt: {{context}}); " + _resolve(base, b, resolved))
    if len({math.copysign(1.0, b.biases[i]) for i in resolved}) > 1:
        return replace(base, message=f"{head}: the bias changes sign between dt = {b.dts[resolved[0]]:g} and "
                       f"{b.dts[resolved[-1]]:g} (samples per dt: {{context}}), so the step sizes are not in the asymptotic "
                       "range; use smaller dts")
    if b.skewed:  # checked only where the intervals would decide: unresolved biases say what to add first
        # f(X_T) of a geometric Brownian motion with a large volatility is lognormal: its mean's t interval
        # misses low far more often than the level says, which would bias every order it gives
        dt, skewness, needed = max(b.skewed, key=lambda entry: entry[2])
        return replace(base, message=f"{head}: the samples at dt = {dt:g} are too skewed for the normal approximation of "
                       f"their interval (sample skewness {skewness:.3g}; it holds at this alpha from about n = {needed} "
                       "per dt; samples per dt: {context}), so the biases cannot be trusted; give a larger n, or a test "
                       "function f with a lighter tail")
    order, low, high = _order_interval(b, resolved[0], resolved[-1])
    expected, tol = float(base.expected or 0), float(base.tol or 0)
    status = PASS if expected - tol <= low and high <= expected + tol else FAIL if high < expected - tol else INCONCLUSIVE
    text = (f"observed weak order {order:.2f} (expected {expected:g}; {low:.2f} to {high:.2f} at {1 - float(base.alpha or 0):.4g} "
            f"from dt = {b.dts[resolved[0]]:g} to {b.dts[resolved[-1]]:g}; samples per dt: {{context}})")
    if status == INCONCLUSIVE:
        text += (": above the expected range, so the test function or the dts make the problem too easy"
                 if low > expected + tol else ": the range reaches across an edge of expected +- tol; "
                 + _resolve(base, b, resolved))
    return replace(base, status=status, estimate=order, low=low, high=high, message=text)


def _resolve(base: StochasticResult, b: _Biases, resolved: list[int]) -> str:
    """The samples per dt that would resolve the finest bias to a quarter of its size, at the expected order."""
    # Without a resolved bias the coarsest one's point estimate stands in: an estimate, said as one.
    coarse, finest = (resolved[0] if resolved else 0), len(b.dts) - 1
    predicted = abs(b.biases[coarse]) * (b.dts[finest] / b.dts[coarse]) ** float(base.expected or 0)
    factor = (4 * b.halves[finest] / predicted) ** 2 if predicted > 0 else math.inf
    if not math.isfinite(factor):
        return "use coarser step sizes or a larger n"
    return (f"about n = {math.ceil(base.n * max(factor, 2.0))} per dt would resolve the bias at dt = {b.dts[finest]:g} "
            "to a quarter of its size" + ("" if resolved else " (from the unresolved bias at the coarsest dt; coarser dts "
                                          "show the bias sooner)"))
