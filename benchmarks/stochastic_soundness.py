"""How often do the stochastic studies confirm a defect that is not there, or pass one that is? (issue 20)

Correct and defective versions of five samplers physicists write, each judged by the study a
claim would use, over many seeds at alpha = 0.01 (so that rates of about 1 % can be measured at all):

- single-spin-flip Metropolis on an Ising ring of 10 spins at beta = 0.5, mean energy per spin
  against the exact value by enumeration of its 1024 states (Metropolis et al., J. Chem. Phys. 21
  (1953) 1087; Newman and Barkema, Monte Carlo Methods in Statistical Physics, sec. 3.1); defects:
  the acceptance with exp(+beta dE), and dE missing its factor 2;
- a Langevin thermostat on the harmonic oscillator (k = m = gamma = kT = 1, dt = 0.05), <p**2> = kT
  by equipartition, as independent replicas and as one long overdamped chain judged on batch
  means (Flegal and Jones, Ann. Statist. 38 (2010) 1034); defects: the noise amplitude missing its
  factor 2, and dt in place of sqrt(dt);
- Gillespie's direct method for births at rate 10 and deaths at rate x (Gillespie, J. Phys. Chem.
  81 (1977) 2340), the copy number at t = 8 against Poisson(10) in total variation; defect: the
  waiting time drawn with the total rate as its mean;
- a Maxwell-Boltzmann velocity initialiser (kT / m = 1), the speed against the Maxwell law in
  Kolmogorov distance (Massart's DKW band); defects: the speed drawn as a half-normal, the
  scale sqrt(kT m) with m = 2, a temperature 1.5 times too high;
- a random walk of 25 Gaussian steps in 2-D, MSD = 2 d D t (Einstein; Berg, Random Walks in
  Biology, ch. 1); defects: the step missing its factor 2, dt in place of sqrt(dt).

A false alarm is FAIL on a correct sampler, a false pass PASS on a defective one whose effect (its
true distance from the expected value, in units of tol) exceeds tol; "right" is PASS on a correct
and FAIL on a defective sampler. Targets: false alarms <= 1.5 %, false passes <= 1 %, right
decisions >= 90 % of the runs of each kind.

    python benchmarks/stochastic_soundness.py [--seeds 200] [--quick] [--adversarial]

--adversarial runs the samplers written to break the stated rates instead (docs/soundness.md,
"Adversarial stochastic cases"): a chain whose correlation is not at lag 1, a discrete law given
as a cdf, an estimator of infinite variance, skewed small samples at the band's edge.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.signal import lfilter
from scipy.stats import halfnorm, maxwell, poisson

from physverify.checks import FAIL, PASS
from physverify.stochastic import StochasticResult, distribution_study, mean_study

ALPHA = 0.01
Study = Callable[[int], StochasticResult]  # seed -> result


@dataclass(frozen=True)
class Case:
    family: str
    variant: str
    correct: bool
    effect: float  # the true |deviation| in units of tol (0 for a correct sampler within its known bias)
    run: Study
    edge: bool = False  # true value 0.1 % inside or outside the band: the worst case for the rates


# --- Ising ring --------------------------------------------------------------------------------
SPINS, BETA, SWEEPS = 10, 0.5, 20


STATES = np.array(list(itertools.product((-1, 1), repeat=SPINS)))
ENERGIES = -(STATES * np.roll(STATES, -1, axis=1)).sum(axis=1)


def boltzmann(beta: float) -> np.ndarray:
    """The Boltzmann weights of all 2**N states of the ring (Newman and Barkema, sec. 1.2)."""
    w = np.exp(-beta * (ENERGIES - ENERGIES.min()))
    return w / w.sum()


def ising_exact(beta: float = BETA) -> float:
    """<E> / N on the periodic ring, by enumerating its 2**N states."""
    return float(boltzmann(beta) @ ENERGIES) / SPINS


def ising_sampler(sign: float, factor: float) -> Callable[[int, np.random.Generator], np.ndarray]:
    """m independent replicas started from the exact Boltzmann law, SWEEPS lazy checkerboard sweeps each.

    Starting from the exact law, a correct sampler stays in it at every sweep, so no burn-in bias
    enters the false-alarm rate; a defective one drifts to its own law. Sites of one parity do not
    interact on an even ring, so each half-sweep offers every such site a Metropolis flip at once,
    each offer made with probability 1/2. Without that laziness the chain is not ergodic
    (Metropolis flips a spin with dE <= 0 for certain, so a fixed checkerboard order is
    deterministic there): from a random start it settled 0.015 per spin off the Boltzmann energy
    when this benchmark measured it. Correct: sign = -1, factor = 2.
    """
    law = boltzmann(BETA)
    parities = np.arange(SPINS) % 2

    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        s = STATES[rng.choice(law.size, size=m, p=law)]
        for _ in range(SWEEPS):
            for parity in (0, 1):
                delta = factor * s * (np.roll(s, 1, axis=1) + np.roll(s, -1, axis=1))
                # min(1, exp(x)) as exp(min(x, 0)): no overflow for the defective sign
                accept = rng.random((m, SPINS)) < 0.5 * np.exp(np.minimum(sign * BETA * delta, 0.0))
                s = np.where(accept & (parities == parity), -s, s)
        return -(s * np.roll(s, -1, axis=1)).sum(axis=1) / SPINS
    return sample


def sampled_effect(sampler: Callable[[int, np.random.Generator], np.ndarray], expected: float, tol: float) -> float:
    """|E[x] - expected| / tol of a defective sampler, from 100 000 draws (a seed no case uses)."""
    return abs(float(sampler(100_000, np.random.default_rng(10**6)).mean()) - expected) / tol


def ising_cases(n: int) -> Iterator[Case]:
    exact, tol = ising_exact(), 0.02
    for name, sign, factor in [("correct", -1.0, 2.0), ("exp(+beta dE)", 1.0, 2.0), ("dE without factor 2", -1.0, 1.0)]:
        sampler = ising_sampler(sign, factor)
        effect = 0.0 if name == "correct" else sampled_effect(sampler, exact, tol)
        yield Case("Ising ring, Metropolis (mean)", name, name == "correct", effect,
                   lambda seed, f=sampler: mean_study(f, exact, tol=tol, n=n, alpha=ALPHA, seed=seed))


# --- Langevin thermostat -----------------------------------------------------------------------
DT, STEPS = 0.05, 300
P2_BIAS = 0.0263  # the scheme's own stationary <p**2> - kT at DT (discrete Lyapunov equation)


def langevin_sampler(noise: Callable[[float], float]) -> Callable[[int, np.random.Generator], np.ndarray]:
    """p**2 of m replicas after STEPS steps of p += -dt (q + p) + noise(dt) xi, q += dt p, from q = 1, p = 0."""
    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        q, p = np.ones(m), np.zeros(m)
        amplitude = noise(DT)
        for _ in range(STEPS):
            p = p - DT * (q + p) + amplitude * rng.standard_normal(m)
            q = q + DT * p
        return p**2
    return sample


def overdamped_chain(noise: Callable[[float], float]) -> Callable[[int, np.random.Generator], np.ndarray]:
    """x**2 along one Brownian-dynamics chain x += -dt x + noise(dt) xi (unit well), continuing between calls."""
    state = [1.0]

    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        x, _ = lfilter([noise(DT)], [1.0, -(1.0 - DT)], rng.standard_normal(m), zi=[(1.0 - DT) * state[0]])
        state[0] = float(x[-1])
        return x**2
    return sample


NOISES: list[tuple[str, Callable[[float], float]]] = [
    ("correct", lambda dt: math.sqrt(2 * dt)),
    ("noise missing factor 2", lambda dt: math.sqrt(dt)),
    ("dt for sqrt(dt)", lambda dt: math.sqrt(2) * dt),
]


def langevin_cases(n: int, n_chain: int) -> Iterator[Case]:
    tol = 0.1
    for name, noise in NOISES:
        scale = (noise(DT) / math.sqrt(2 * DT)) ** 2  # the stationary variance scales with the noise power
        effect = abs((1 + P2_BIAS) * scale - 1) / tol
        yield Case("Langevin oscillator, replicas (mean)", name, name == "correct", 0.0 if name == "correct" else effect,
                   lambda seed, f=noise: mean_study(langevin_sampler(f), 1.0, tol=tol, n=n, alpha=ALPHA, seed=seed))
        chain_effect = abs(scale / (1 - DT / 2) - 1) / tol  # Euler-Maruyama's stationary variance 1 / (1 - dt / 2)
        yield Case("Brownian dynamics, one chain (batch means)", name, name == "correct",
                   0.0 if name == "correct" else chain_effect,
                   lambda seed, f=noise: mean_study(overdamped_chain(f), 1.0, tol=tol, n=n_chain, alpha=ALPHA,
                                                    seed=seed, batches=20))


# --- Gillespie ----------------------------------------------------------------------------------
BIRTH, T_END = 10.0, 8.0


def gillespie_sampler(mean_wait: Callable[[np.ndarray], np.ndarray]) -> Callable[[int, np.random.Generator], np.ndarray]:
    """The copy numbers at T_END of m replicas of 0 -> X (rate BIRTH), X -> 0 (rate x), from x = 0."""
    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        x, t = np.zeros(m, dtype=np.int64), np.zeros(m)
        running = np.ones(m, dtype=bool)
        while running.any():
            t[running] += rng.exponential(mean_wait(BIRTH + x[running]))
            running[running] = t[running] <= T_END
            active = np.flatnonzero(running)
            born = rng.random(active.size) * (BIRTH + x[active]) < BIRTH
            x[active] += np.where(born, 1, -1)
        return x
    return sample


def gillespie_cases(n: int) -> Iterator[Case]:
    tol = 0.1
    pmf = lambda k: poisson.pmf(k, BIRTH)  # noqa: E731
    variants = [("correct", lambda a: 1.0 / a, 0.0), ("wait with mean a0", lambda a: a, 0.99 / tol)]
    for name, wait, effect in variants:
        yield Case("Gillespie birth-death (TV)", name, name == "correct", effect,
                   lambda seed, w=wait: distribution_study(gillespie_sampler(w), pmf=pmf, tol=tol, n=n, alpha=ALPHA,
                                                           seed=seed))


# --- Maxwell-Boltzmann ----------------------------------------------------------------------------
def speeds(kind: str) -> Callable[[int, np.random.Generator], np.ndarray]:
    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        if kind == "half-normal speed":
            return np.abs(rng.standard_normal(m)) * math.sqrt(3)  # the right <v**2>, the wrong law
        scale = {"correct": 1.0, "scale sqrt(kT m), m = 2": math.sqrt(2.0), "kT 1.5 times too high": math.sqrt(1.5)}[kind]
        return np.linalg.norm(rng.standard_normal((m, 3)) * scale, axis=1)
    return sample


def kolmogorov_effect(kind: str) -> float:
    """The true Kolmogorov distance of the defective speed law from Maxwell's, on a fine grid."""
    v = np.linspace(0, 10, 40001)
    if kind == "half-normal speed":
        cdf = halfnorm.cdf(v / math.sqrt(3))
    else:
        cdf = maxwell.cdf(v / {"scale sqrt(kT m), m = 2": math.sqrt(2.0), "kT 1.5 times too high": math.sqrt(1.5)}[kind])
    return float(np.max(np.abs(cdf - maxwell.cdf(v))))


def maxwell_cases(n: int) -> Iterator[Case]:
    tol = 0.05
    for kind in ("correct", "half-normal speed", "scale sqrt(kT m), m = 2", "kT 1.5 times too high"):
        effect = 0.0 if kind == "correct" else kolmogorov_effect(kind) / tol
        yield Case("Maxwell-Boltzmann speeds (KS)", kind, kind == "correct", effect,
                   lambda seed, k=kind: distribution_study(speeds(k), maxwell.cdf, tol=tol, n=n, alpha=ALPHA, seed=seed))


# --- random walk ---------------------------------------------------------------------------------
WALK_STEPS, WALK_DT, DIFFUSION = 25, 0.04, 1.0


def walk(step: Callable[[float], float]) -> Callable[[int, np.random.Generator], np.ndarray]:
    """|r(t)|**2 after WALK_STEPS Gaussian steps of size step(dt) per component in 2-D, for m walkers."""
    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        r = (step(WALK_DT) * rng.standard_normal((m, WALK_STEPS, 2))).sum(axis=1)
        return (r**2).sum(axis=1)
    return sample


def walk_cases(n: int) -> Iterator[Case]:
    expected = 2 * 2 * DIFFUSION * WALK_STEPS * WALK_DT  # MSD = 2 d D t
    tol = 0.05 * expected
    variants = [("correct", lambda dt: math.sqrt(2 * DIFFUSION * dt)), ("step missing factor 2",
                lambda dt: math.sqrt(DIFFUSION * dt)), ("dt for sqrt(dt)", lambda dt: math.sqrt(2 * DIFFUSION) * dt)]
    for name, step in variants:
        effect = abs(2 * WALK_STEPS * step(WALK_DT) ** 2 - expected) / tol
        yield Case("random walk, MSD = 2 d D t (mean)", name, name == "correct", 0.0 if name == "correct" else effect,
                   lambda seed, s=step: mean_study(walk(s), expected, tol=tol, n=n, alpha=ALPHA, seed=seed))


def edge_cases(n: int, n_chain: int) -> Iterator[Case]:
    """Samplers whose true value lies 0.1 % of tol inside or outside the band's edge.

    No n decides them, so they count towards the false alarms and false passes but not towards
    the right decisions. The rates here are close to their bounds (alpha / 2 for a mean, at most
    alpha for a distance), which the far cases above cannot show.
    """
    chain_mean = 1 / (1 - DT / 2)  # Euler-Maruyama's stationary variance in the unit well
    distance = kolmogorov_effect("kT 1.5 times too high")
    for inside in (True, False):
        factor = 1.001 if inside else 0.999
        name = "0.1 % inside the band" if inside else "0.1 % outside the band"
        chain_tol, ks_tol = (chain_mean - 1) * factor, distance * factor
        yield Case("Brownian dynamics, one chain (batch means)", name, inside, 1 / factor,
                   lambda seed, t=chain_tol: mean_study(overdamped_chain(NOISES[0][1]), 1.0, tol=t, n=n_chain,
                                                        alpha=ALPHA, seed=seed, batches=20), edge=True)
        yield Case("Maxwell-Boltzmann speeds (KS), kT 1.5 times too high", name, inside, 1 / factor,
                   lambda seed, t=ks_tol: distribution_study(speeds("kT 1.5 times too high"), maxwell.cdf, tol=t, n=n,
                                                             alpha=ALPHA, seed=seed), edge=True)


# --- the adversarial suite (--adversarial): samplers built to break the stated rates ---------------
def baoab_chain(observable: str, gamma: float = 0.01, dt: float = 0.1, every: int = 16) -> Callable[[int, np.random.Generator], list[float]]:
    """One BAOAB chain of the weakly damped oscillator H = (p**2 + x**2) / 2, kT = 1, sampled every ``every`` steps.

    BAOAB (Leimkuhler and Matthews, Appl. Math. Res. Express 2013, 34) samples the positions of a
    harmonic oscillator exactly, so <x**2> = 1 and x ~ N(0, 1) with no step-size bias; the chain
    starts from that law. 16 steps of 0.1 are about a quarter period: x**2 then has a lag-1
    autocorrelation near 0 and one near 1 at lag 2, and its energy forgets itself only over
    1 / gamma = 100 time units (about 60 samples).
    """
    c, h = math.exp(-gamma * dt), dt / 2
    kick = math.sqrt(1 - c * c)
    state: list[float] = []

    def sample(m: int, rng: np.random.Generator) -> list[float]:
        if not state:
            state.extend(rng.standard_normal(2).tolist())
        x, p = state
        noise, k, out = rng.standard_normal(m * every).tolist(), 0, []
        for _ in range(m):
            for _ in range(every):
                p -= h * x
                x += h * p
                p, k = c * p + kick * noise[k], k + 1
                x += h * p
                p -= h * x
            out.append(x * x if observable == "x**2" else x)
        state[:] = [x, p]
        return out
    return sample


def zwanzig(k1: float) -> Callable[[int, np.random.Generator], np.ndarray]:
    """Exponential averaging (Zwanzig, J. Chem. Phys. 22 (1954) 1420; Frenkel and Smit, sec. 7.2) from spring 1 to k1.

    w = exp(-beta dU) over x from the reference oscillator (beta = 1): E[w] = Z1 / Z0 = sqrt(1 / k1).
    The variance of w is infinite when k1 < 1 / 2 (Lu and Kofke, J. Chem. Phys. 114 (2001) 7303).
    """
    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        x = rng.standard_normal(m)
        return np.exp(-0.5 * (k1 - 1.0) * x * x)
    return sample


def waiting_times(mean: float) -> Callable[[int, np.random.Generator], np.ndarray]:
    """The time to the first of Gillespie's reactions at total rate 1 / mean (exponential, Gillespie 1977 eq. 21a)."""
    return lambda m, rng: rng.exponential(mean, m)


def normal_scale_at(distance: float) -> float:
    """The s > 1 at which the Kolmogorov distance between N(0, 1) and N(0, s**2) is ``distance`` (on a fine grid)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    grid = np.linspace(-8, 8, 160_001)
    return float(brentq(lambda s: float(np.max(np.abs(norm.cdf(grid) - norm.cdf(grid / s)))) - distance, 1.0001, 2.0))


def adversarial_cases() -> Iterator[Case]:
    from scipy.stats import norm

    yield Case("BAOAB oscillator, x**2 every quarter period (mean, no batches)", "correct", True, 0.0,
               lambda seed: mean_study(baoab_chain("x**2"), 1.0, tol=0.05, n=5000, alpha=ALPHA, seed=seed))
    yield Case("BAOAB oscillator, x every quarter period (KS)", "correct", True, 0.0,
               lambda seed: distribution_study(baoab_chain("x"), norm.cdf, tol=0.05, n=5000, alpha=ALPHA, seed=seed))
    for inside in (True, False):
        # against N(0, s**2) with s chosen so that the true distance is 0.1 % of tol inside or outside it
        scale = normal_scale_at(0.05 * (0.999 if inside else 1.001))
        yield Case("BAOAB oscillator, x every quarter period (KS)",
                   "N(0, s**2), 0.1 % inside tol" if inside else "N(0, s**2), 0.1 % outside tol", inside, 1.0,
                   lambda seed, c=scale: distribution_study(baoab_chain("x"), lambda x: norm.cdf(np.asarray(x) / c),
                                                            tol=0.05, n=5000, alpha=ALPHA, seed=seed))
    counts = lambda mean: (lambda m, rng: rng.poisson(mean, m))  # noqa: E731
    yield Case("photon counts against a Poisson(10) cdf (KS)", "correct", True, 0.0,
               lambda seed: distribution_study(counts(10.0), poisson(10.0).cdf, tol=0.05, n=5000, alpha=ALPHA, seed=seed))
    distance = float(np.max(np.abs(poisson.cdf(np.arange(80), 12.0) - poisson.cdf(np.arange(80), 10.0))))
    yield Case("photon counts against a Poisson(10) cdf (KS)", "rate 12 for 10", False, distance / 0.05,
               lambda seed: distribution_study(counts(12.0), poisson(10.0).cdf, tol=0.05, n=5000, alpha=ALPHA, seed=seed))
    yield Case("Zwanzig averaging, k 1 -> 1/4, infinite variance (mean)", "correct", True, 0.0,
               lambda seed: mean_study(zwanzig(0.25), 2.0, tol=0.02, n=10_000, alpha=ALPHA, seed=seed))
    yield Case("Zwanzig averaging, k 1 -> 0.6, finite variance (mean)", "correct", True, 0.0,
               lambda seed: mean_study(zwanzig(0.6), math.sqrt(1 / 0.6), tol=0.0, n=1000, alpha=ALPHA, seed=seed))
    for n in (20, 200):
        # the true mean 1 sits 0.1 % of tol inside the band's lower edge: the side a right-skewed sample errs on
        yield Case(f"waiting times, n = {n}, mean at the band's lower edge (mean)", "correct", True, 0.0,
                   lambda seed, n=n: mean_study(waiting_times(1.0), 1.0 + 0.0999, tol=0.1, n=n, alpha=ALPHA,
                                                seed=seed))
    rare = lambda m, rng: (rng.random(m) < 0.002).astype(float)  # noqa: E731  (an acceptance of probability 0.002)
    yield Case("rare event counted, p = 0.002, n = 2000 (mean)", "correct", True, 0.0,
               lambda seed: mean_study(rare, 0.002, tol=0.001, n=2000, alpha=ALPHA, seed=seed))
    yield Case("waiting times, n = 200 (mean)", "mean a0 for 1 / a0 (a0 = 2)", False, 1.5 / 0.1,
               lambda seed: mean_study(waiting_times(2.0), 0.5, tol=0.1, n=200, alpha=ALPHA, seed=seed))


def suite() -> list[Case]:
    """Every case at the benchmark's default n."""
    return [*ising_cases(5000), *langevin_cases(10_000, 200_000), *gillespie_cases(5000), *maxwell_cases(5000),
            *walk_cases(10_000), *edge_cases(5000, 200_000)]


# --- running and tallying --------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    case: Case
    statuses: tuple[str, ...]
    seconds: float

    def share(self, status: str) -> float:
        return self.statuses.count(status) / len(self.statuses)


EDGE_SEEDS = 5  # the edge cases are cheap and their rates small: five times the seeds


def measure(cases: list[Case], seeds: int) -> list[Row]:
    rows = []
    for case in cases:
        start, runs = time.process_time(), seeds * (EDGE_SEEDS if case.edge else 1)
        rows.append(Row(case, tuple(case.run(seed).status for seed in range(runs)), time.process_time() - start))
    return rows


def totals(rows: list[Row]) -> dict[str, Any]:
    """The rates over all rows; the right decisions over the rows a default n can decide (not the edge ones)."""
    def pooled(keep: Callable[[Row], bool]) -> list[str]:
        return [s for r in rows if keep(r) for s in r.statuses]

    correct, defective = pooled(lambda r: r.case.correct), pooled(lambda r: not r.case.correct and r.case.effect > 1)
    far = [r for r in rows if not r.case.edge]
    edge_in, edge_out = pooled(lambda r: r.case.edge and r.case.correct), pooled(lambda r: r.case.edge and not r.case.correct)
    far_correct = [s for r in far if r.case.correct for s in r.statuses]
    far_defective = [s for r in far if not r.case.correct for s in r.statuses]
    return {
        "false alarms": correct.count(FAIL) / len(correct), "correct runs": len(correct),
        "false passes": defective.count(PASS) / len(defective), "defective runs": len(defective),
        "edge false alarms": edge_in.count(FAIL) / max(len(edge_in), 1), "edge inside runs": len(edge_in),
        "edge false passes": edge_out.count(PASS) / max(len(edge_out), 1), "edge outside runs": len(edge_out),
        "right, correct": far_correct.count(PASS) / len(far_correct),
        "right, defective": far_defective.count(FAIL) / len(far_defective),
        "worst right, correct": min(r.share(PASS) for r in far if r.case.correct),
        "worst right, defective": min(r.share(FAIL) for r in far if not r.case.correct),
    }


def table(rows: list[Row], seeds: int) -> str:
    lines = ["| sampler (study) | version | effect / tol | runs | PASS | FAIL | INCONCLUSIVE | cpu s per run |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        effect = "-" if r.case.correct and not r.case.edge else f"{r.case.effect:.3g}"
        lines.append(f"| {r.case.family} | {r.case.variant} | {effect} | {len(r.statuses)} | {r.share(PASS):.1%} "
                     f"| {r.share(FAIL):.1%} | {1 - r.share(PASS) - r.share(FAIL):.1%} | "
                     f"{r.seconds / len(r.statuses):.3f} |")
    t = totals(rows)
    lines += ["", f"{seeds} seeds per row ({EDGE_SEEDS * seeds} for the edge rows), alpha = {ALPHA}.", "",
              "| | measured | target |", "|---|---:|---:|",
              f"| false alarms (FAIL of {t['correct runs']} correct runs) | {t['false alarms']:.2%} | <= 1.5 % |",
              f"| false passes (PASS of {t['defective runs']} defective runs, effect > tol) | {t['false passes']:.2%} "
              "| <= 1 % |",
              f"| of which at the edge: FAIL of {t['edge inside runs']} runs 0.1 % inside | {t['edge false alarms']:.2%} "
              "| <= 1 % |",
              f"| of which at the edge: PASS of {t['edge outside runs']} runs 0.1 % outside | "
              f"{t['edge false passes']:.2%} | <= 1 % |",
              f"| right decisions, correct runs (worst row) | {t['right, correct']:.1%} ({t['worst right, correct']:.1%}) "
              "| >= 90 % |",
              f"| right decisions, defective runs (worst row) | {t['right, defective']:.1%} "
              f"({t['worst right, defective']:.1%}) | >= 90 % |"]
    return "\n".join(lines)


def clopper_pearson(count: int, runs: int, level: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 1 - level interval of a binomial rate."""
    from scipy.stats import beta

    low = 0.0 if count == 0 else float(beta.ppf(level / 2, count, runs - count + 1))
    high = 1.0 if count == runs else float(beta.ppf(1 - level / 2, count + 1, runs - count))
    return low, high


def adversarial_table(rows: list[Row], seeds: int) -> str:
    """Each row's wrong decisions (FAIL of a correct, PASS of a defective sampler) with its 95 % interval."""
    lines = ["| sampler (study) | version | runs | PASS | FAIL | INCONCLUSIVE | wrong (95 % interval) | stated |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        wrong = r.statuses.count(FAIL if r.case.correct else PASS)
        low, high = clopper_pearson(wrong, len(r.statuses))
        lines.append(f"| {r.case.family} | {r.case.variant} | {len(r.statuses)} | {r.share(PASS):.1%} "
                     f"| {r.share(FAIL):.1%} | {1 - r.share(PASS) - r.share(FAIL):.1%} | "
                     f"{wrong / len(r.statuses):.1%} ({low:.1%} to {high:.1%}) | <= {ALPHA:.0%} |")
    return "\n".join(lines + ["", f"{seeds} seeds per row, alpha = {ALPHA}."])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="runs per case (default 200, or 20 with --quick)")
    parser.add_argument("--quick", action="store_true", help="20 seeds per case (for the tests)")
    parser.add_argument("--adversarial", action="store_true", help="the samplers built to break the stated rates")
    args = parser.parse_args(argv)
    seeds = args.seeds or (20 if args.quick else 200)
    start = time.monotonic()
    rows = measure(list(adversarial_cases()) if args.adversarial else suite(), seeds)
    text = adversarial_table(rows, seeds) if args.adversarial else table(rows, seeds)
    sys.stdout.write(text + f"\n\nwall time {time.monotonic() - start:.0f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
