"""Claim: decay() in docs/examples/confirm/decay.py uses its half_life argument as the decay rate.

The reference: N(t) = N0 exp(-lambda t) with lambda = ln 2 / T, T the half-life
(Krane, Introductory Nuclear Physics, sec. 6.1). Reading T as lambda is the mistake the
docs' "not decidable" example made in its reference; here the reference is right and
the claim is about the code.
"""

import math

import numpy as np

from docs.examples.confirm import decay  # the code under test
from physverify import Check, check_order

CLAIM = {
    "text": "decay() uses half_life as the decay constant lambda instead of ln 2 / half_life",
    "source": "physverify maintainers (the misreading of the docs example, turned on the code)",
    "file": "docs/examples/confirm/decay.py",
    "line": 17,
    "reference": "Krane, Introductory Nuclear Physics, sec. 6.1: N = N0 exp(-lambda t), lambda = ln 2 / T",
    "impact": "used",
}

NS = (4, 8, 16, 32)
T_END = 3.0


def rk4_order(half_life):
    """Observed order of decay() against N0 exp(-ln 2 t / T); classical RK4 is fourth order."""
    exact = 5.0 * math.exp(-math.log(2.0) * T_END / half_life)
    hs = [T_END / n for n in NS]
    errors = [abs(decay.decay(5.0, half_life, T_END, n) - exact) for n in NS]
    return check_order(hs, errors, 4, scale=5.0)


def control():
    # T = sqrt(ln 2): there ln 2 / T equals T, so reading T as the rate changes nothing.
    return Check("convergence", "RK4 is fourth order where rate and half-life coincide (T = sqrt(ln 2))",
                 lambda: rk4_order(float(np.sqrt(np.log(2.0)))))


def checks():
    return [Check("convergence", "RK4 converges at fourth order to N0 2^(-t/T) with T = 2", lambda: rk4_order(2.0))]
