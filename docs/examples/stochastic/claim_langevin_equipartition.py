"""Claim: langevin.py's thermostat draws its noise with sqrt(gamma m kT dt), a factor 2 short, so it runs cold.

Run it with:  physverify confirm docs/examples/stochastic/claim_langevin_equipartition.py --trusted

The Langevin equation dp = -k q dt - gamma p dt + sqrt(2 gamma m kT) dW has the Boltzmann
distribution as its stationary law (fluctuation-dissipation: Kubo, Rep. Prog. Phys. 29 (1966)
255), so equipartition gives <p**2 / m> = kT. The step is first order in dt, and its own
stationary <p**2> is off by a known amount: the discrete Lyapunov equation of the linear scheme
gives 1.026 kT at dt = 0.05, gamma = k = m = 1 (docs/stochastic.md), so tol = 0.05 kT allows it.
Each observation is one replica run from rest for 15 time units (300 steps, 15 relaxation times
of the energy), so the observations are independent. The control runs the same study on the
step written here from the equation.
"""

import numpy as np

import langevin  # the code under test
from physverify import Check, mean_study

CLAIM = {
    "text": "thermostat_step's noise amplitude is sqrt(gamma m kT dt) instead of sqrt(2 gamma m kT dt)",
    "source": "a code review (example)",
    "file": "langevin.py",
    "line": 7,
    "reference": "Kubo, Rep. Prog. Phys. 29 (1966) 255 (fluctuation-dissipation); equipartition <p^2/m> = kT",
    "impact": "used",
}

DT, STEPS, TEMPERATURE = 0.05, 300, 1.0
TOL = 0.05  # the scheme's own bias at DT is 0.026 kT


def book_step(q, p, dt, rng):
    """The same splitting with the fluctuation-dissipation amplitude sqrt(2 gamma m kT dt)."""
    p = p - dt * (q + p) + np.sqrt(2.0 * TEMPERATURE * dt) * rng.standard_normal(p.shape)
    return q + dt * p, p


def kinetic_temperatures(step):
    """sample(m, rng): p**2 / m of m independent replicas after STEPS steps from q = 1, p = 0."""
    def sample(m, rng):
        q, p = np.ones(m), np.zeros(m)
        for _ in range(STEPS):
            q, p = step(q, p, DT, rng)
        return p**2
    return sample


def study(step):
    return mean_study(kinetic_temperatures(step), TEMPERATURE, tol=TOL, n=100_000, seed=7)


def control():
    return Check("stochastic", "the equation's own step gives equipartition, <p^2/m> = kT",
                 lambda: study(book_step))


def checks():
    return [Check("stochastic", "thermostat_step gives equipartition, <p^2/m> = kT",
                  lambda: study(langevin.thermostat_step))]
