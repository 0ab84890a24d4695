"""Claim: metropolis.py accepts a move when the log-ratio exceeds +Exp(1); log u = -Exp(1) belongs there.

Run it with:  physverify confirm docs/examples/frameworks/claim_metropolis.py --trusted

With +Exp(1) a downhill move is never accepted, so the chains climb to the mode and stay.
The control is the Metropolis rule written again from the paper (accept when log u < log p'/p).
"""

import jax
import jax.numpy as jnp
from physverify import Check, mean_study

import metropolis

CLAIM = {
    "text": "the acceptance threshold is +Exp(1) where log u = -Exp(1) belongs",
    "source": "a code review (example)",
    "file": "metropolis.py",
    "line": 12,
    "reference": "Metropolis et al., J. Chem. Phys. 21 (1953) 1087: accept with probability min(1, p'/p)",
    "impact": "used",
    "defect": "threshold = jax.random.exponential(k_acc, x.shape)",
    "fix": "threshold = -jax.random.exponential(k_acc, x.shape)",
}


def book_metropolis(key, x, log_density, step_size, steps):
    """Metropolis et al. (1953) written again: accept when log u < log p(x') - log p(x), u uniform."""
    def body(i, state):
        x, key = state
        key, k_prop, k_acc = jax.random.split(key, 3)
        proposal = x + step_size * jax.random.normal(k_prop, x.shape)
        accept = jnp.log(jax.random.uniform(k_acc, x.shape)) < log_density(proposal) - log_density(x)
        return jnp.where(accept, proposal, x), key
    return jax.lax.fori_loop(0, steps, body, (x, key))[0]


def gauss(x):
    return -0.5 * x**2


def second_moment(run):
    """sample(m, key): x**2 of m independent chains after 400 steps from x = 3 targeting the unit normal."""
    def sample(m, key):
        return run(key, jnp.full(m, 3.0), gauss, 1.0, 400) ** 2
    return sample


def study(run):
    return mean_study(second_moment(run), 1.0, tol=0.1, n=20_000, seed=5, key_sampler=True)


def control():
    return Check("stochastic", "the book's Metropolis samples the unit normal: <x^2> = 1",
                 lambda: study(book_metropolis))


def checks():
    return [Check("stochastic", "metropolis() samples the unit normal: <x^2> = 1",
                  lambda: study(metropolis.metropolis))]
