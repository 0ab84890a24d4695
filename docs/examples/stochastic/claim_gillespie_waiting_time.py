"""Claim: gillespie.py draws the waiting time with mean a0 (the total rate) instead of 1 / a0.

Run it with:  physverify confirm docs/examples/stochastic/claim_gillespie_waiting_time.py --trusted

In Gillespie's direct method (J. Phys. Chem. 81 (1977) 2340) the time to the next reaction is
exponential with rate a0, the sum of the propensities, so its mean is 1 / a0. For births at
rate b and deaths at rate d x started from x = 0, the copy number at time t is Poisson with mean
(b / d)(1 - exp(-d t)) (Gardiner, Handbook of Stochastic Methods, sec. 7.1), which at t = 8 / d
is the stationary Poisson(b / d) to within 0.004 in total variation (the mean is short by
(b / d) exp(-8) = 0.0034, and Poisson laws of means a and b differ by at most |a - b|). The replicas are
independent, so the distribution study applies as it is. The control runs the same study on
the direct method written here from the paper.
"""

import math

import numpy as np

import gillespie  # the code under test
from physverify import Check, distribution_study

CLAIM = {
    "text": "birth_death draws the waiting time with mean a0 instead of mean 1 / a0",
    "source": "a code review (example)",
    "file": "gillespie.py",
    "line": 12,
    "reference": "Gillespie, J. Phys. Chem. 81 (1977) 2340, eq. 21a-b; Gardiner, Handbook of Stochastic Methods, sec. 7.1",
    "impact": "used",
}

BIRTH, DEATH, T_END = 10.0, 1.0, 8.0


def poisson(k):
    """The stationary law Poisson(b / d) at integers k (0 below 0)."""
    mean = BIRTH / DEATH
    k = np.asarray(k)
    safe = np.maximum(k, 0)
    logs = safe * math.log(mean) - mean - np.array([math.lgamma(v + 1) for v in safe.ravel()]).reshape(safe.shape)
    return np.where(k >= 0, np.exp(logs), 0.0)


def book_birth_death(replicas, birth, death, t_end, rng):
    """Gillespie (1977): wait an exponential time of rate a0, then pick a reaction by its share of a0."""
    x, t = np.zeros(replicas, dtype=np.int64), np.zeros(replicas)
    running = np.ones(replicas, dtype=bool)
    while running.any():
        t[running] += rng.exponential(1.0 / (birth + death * x[running]))
        running[running] = t[running] <= t_end
        active = np.flatnonzero(running)
        born = rng.random(active.size) * (birth + death * x[active]) < birth
        x[active] += np.where(born, 1, -1)
    return x


def study(code):
    return distribution_study(lambda m, rng: code(m, BIRTH, DEATH, T_END, rng), pmf=poisson, tol=0.05, n=20_000,
                              seed=3)


def control():
    return Check("stochastic", "the paper's direct method samples Poisson(b / d)", lambda: study(book_birth_death))


def checks():
    return [Check("stochastic", "birth_death samples Poisson(b / d)", lambda: study(gillespie.birth_death))]
