"""Claim: ising.py's Metropolis step accepts with exp(+beta dE), so it does not sample the Boltzmann distribution.

Run it with:  physverify confirm docs/examples/stochastic/claim_ising_metropolis.py --trusted

Metropolis et al. (J. Chem. Phys. 21 (1953) 1087) accept a move that raises the energy by dE
with probability exp(-beta dE); with that rule the chain's stationary law is the Boltzmann
distribution (Newman and Barkema, Monte Carlo Methods in Statistical Physics, sec. 3.1). A ring
of 8 spins has 256 states, so the exact mean energy comes from enumerating them. The chain's
energies are correlated from one sweep to the next, so the mean is judged on 20 batch means
(docs/stochastic.md). The control runs the same study on the Metropolis step written here from
the book, to show the study passes a correct sampler at this n and seed.
"""

import itertools
import math

import ising  # the code under test
from physverify import Check, mean_study

CLAIM = {
    "text": "metropolis_sweep accepts an uphill move with exp(+beta dE) instead of exp(-beta dE)",
    "source": "a code review (example)",
    "file": "ising.py",
    "line": 12,
    "reference": "Metropolis et al., J. Chem. Phys. 21 (1953) 1087; Newman and Barkema, Monte Carlo Methods in "
                 "Statistical Physics, sec. 3.1",
    "impact": "used",
}

SPINS, BETA = 8, 0.5
SWEEPS = 20_000  # one observation per sweep
TOL = 0.02  # energy per spin; the chain has no bias, so tol only has to exceed what the study cannot resolve


def ring_energy(spins):
    """E = -J sum_i s_i s_(i+1) with J = 1 on the periodic ring (written here: the reference is independent of the code)."""
    return -sum(s * t for s, t in zip(spins, spins[1:] + spins[:1]))


def exact_energy_per_spin():
    """<E> / N by enumerating all 2**N states of the ring."""
    weights = energies = 0.0
    for state in itertools.product((-1, 1), repeat=SPINS):
        e = ring_energy(list(state))
        w = math.exp(-BETA * e)
        weights, energies = weights + w, energies + w * e
    return energies / weights / SPINS


def book_sweep(spins, beta, rng):
    """Metropolis et al. (1953): accept with probability min(1, exp(-beta dE))."""
    n = len(spins)
    for i, u in zip(rng.integers(0, n, n).tolist(), rng.random(n).tolist()):
        delta = 2.0 * spins[i] * (spins[i - 1] + spins[(i + 1) % n])
        if delta <= 0 or u < math.exp(-beta * delta):
            spins[i] = -spins[i]
    return spins


def energies(sweep):
    """sample(m, rng) for mean_study: the energy per spin after each of m more sweeps of one chain."""
    spins = [1] * SPINS

    def sample(m, rng):
        values = []
        for _ in range(m):
            sweep(spins, BETA, rng)
            values.append(ring_energy(spins) / SPINS)
        return values
    return sample


def study(sweep):
    return mean_study(energies(sweep), exact_energy_per_spin(), tol=TOL, n=SWEEPS, batches=20, seed=1)


def control():
    return Check("stochastic", "the book's Metropolis step samples the ring's mean energy", lambda: study(book_sweep))


def checks():
    return [Check("stochastic", "metropolis_sweep samples the ring's mean energy", lambda: study(ising.metropolis_sweep))]
