"""Claim: langevin.py adds the force where force over mass belongs, so a heavy particle runs cold.

Run it with:  physverify confirm docs/examples/frameworks/claim_langevin.py --trusted

The code is JAX: the sampler takes a JAX key (key_sampler=True), made from the study's seed, and
passes it to the code as its own users do. Equipartition in the potential k x**2 / 2 gives
<x**2> = kT / k whatever the mass (Gardiner, Stochastic Methods, sec. 5.3); with F in place of
F / m the stationary law is that of temperature kT / m, so <x**2> = 0.5 at m = 2. At m = 1 the
two agree: that is the control. Each observation is one replica after 15 time units (about 7
relaxation times), so the observations are independent.
"""

import jax.numpy as jnp
from physverify import Check, mean_study

import langevin

CLAIM = {
    "text": "the step adds the force where force over mass belongs",
    "source": "a code review (example)",
    "file": "langevin.py",
    "line": 16,
    "reference": "Gardiner, Stochastic Methods, sec. 5.3: the Ornstein-Uhlenbeck process; equipartition <x^2> = kT/k",
    "impact": "used",
    "defect": "accel = force(x)",
    "fix": "accel = force(x) / mass",
}

KT, GAMMA, DT, STEPS = 1.0, 1.0, 0.01, 1500


def positions_squared(mass):
    """sample(m, key): x**2 of m independent replicas in the potential x**2 / 2, from rest at x = 1."""
    def sample(m, key):
        x, _ = langevin.langevin_run(key, jnp.ones(m), jnp.zeros(m), lambda x: -x, mass, GAMMA, KT, DT, STEPS)
        return x**2
    return sample


def study(mass):
    # equipartition in the potential k x**2 / 2 with k = 1: <x**2> = kT / k whatever the mass
    return mean_study(positions_squared(mass), KT, tol=0.1, n=20_000, seed=11, key_sampler=True)


def control():
    return Check("stochastic", "<x^2> = kT/k at mass 1, where force and force over mass agree", lambda: study(1.0))


def checks():
    return [Check("stochastic", "<x^2> = kT/k at mass 2", lambda: study(2.0))]
