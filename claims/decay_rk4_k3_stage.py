"""Claim: the k3 stage of RK4 in docs/examples/confirm/decay.py uses the wrong slope.

The reference: the classical Runge-Kutta tableau (c = 0, 1/2, 1/2, 1; k3 from
n + h/2 k2) is fourth order (Butcher, Numerical Methods for Ordinary Differential
Equations, sec. 23; Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1). The test is a
manufactured solution: a source term makes u(t) the exact solution of
dN/dt = -lambda N + s(t) (Roache, Verification and Validation in Computational Science
and Engineering, 1998, ch. 3), so every stage sees a time-dependent slope.
"""

import math

import numpy as np

from docs.examples.confirm import decay  # the code under test
from physverify import Check, ManufacturedODE, mms_order_study

CLAIM = {
    "text": "the k3 stage is evaluated with the wrong slope, so the method is not fourth order",
    "source": "an AI code review (the docs example's claim, with a corrected reference)",
    "file": "docs/examples/confirm/decay.py",
    "line": 22,
    "reference": "Butcher, Numerical Methods for ODEs, sec. 23: the classical RK4 tableau is fourth order",
    "impact": "used",
}

HALF_LIFE = 2.0
RATE = math.log(2.0) / HALF_LIFE  # Krane, Introductory Nuclear Physics, sec. 6.1
T_END = 2.0
NS = (8, 16, 32, 64)


def decay_rhs(t, y):
    """dN/dt = -lambda N, written from the physics."""
    return -RATE * y


def integrate_with(half_life):
    def integrate(source, y0, t_end, n_steps):  # the integrate contract of physverify.mms
        return np.array([decay.decay(float(y0[0]), half_life, t_end, n_steps, source=lambda t: float(source(t)[0]))])

    return integrate


def control():
    # A constant manufactured solution with an infinite half-life: every stage has the same
    # zero slope, so whichever slope k3 uses, RK4 must be exact.
    still = ManufacturedODE(lambda t: np.array([1.0 + 0.0 * t]), lambda t, y: 0.0 * y)
    return Check("mms", "a constant solution with no decay is reproduced exactly",
                 lambda: mms_order_study(integrate_with(math.inf), still, T_END, NS, expected_order=4))


def checks():
    wavy = ManufacturedODE(lambda t: np.array([2.0 + np.sin(3.0 * t) * np.exp(-0.5 * t)]), decay_rhs)
    return [Check("mms", "RK4 is fourth order on a manufactured solution with a time-dependent source",
                  lambda: mms_order_study(integrate_with(HALF_LIFE), wavy, T_END, NS, expected_order=4))]
