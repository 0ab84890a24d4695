"""Claim: the damping term of docs/examples/confirm/oscillator.py has the wrong sign.

The docs keep this defect on purpose (it is the "confirmed" worked example), so this
claim must stay confirmed; physverify.yaml pins it. The reference is the underdamped
oscillator x'' + gamma x' + omega**2 x = 0 and its exact solution from x0 = 1, v0 = 0:
x = exp(-gamma t / 2) (cos(w t) + gamma / (2 w) sin(w t)), w = sqrt(omega**2 - gamma**2 / 4)
(Taylor, Classical Mechanics, sec. 5.4, eq. 5.28 and the initial conditions after it).
"""

import numpy as np

from docs.examples.confirm import oscillator  # the code under test
from physverify import Check, check_order

CLAIM = {
    "text": "rhs() adds +gamma*v to the acceleration, so damping pumps energy in instead of removing it",
    "source": "physverify maintainers (reading the worked example)",
    "file": "docs/examples/confirm/oscillator.py",
    "line": 10,
    "reference": "Taylor, Classical Mechanics, sec. 5.4: x'' + 2 beta x' + omega0^2 x = 0, eq. 5.28 (underdamped solution)",
    "impact": "used",
}

OMEGA = 2.0
T_END = 2.0
NS = (40, 80, 160, 320)


def underdamped_solution(gamma, t):
    """(x, v) of x'' + gamma x' + OMEGA**2 x = 0 from x0 = 1, v0 = 0 (Taylor sec. 5.4)."""
    w = np.sqrt(OMEGA**2 - gamma**2 / 4.0)
    envelope = np.exp(-gamma * t / 2.0)
    x = envelope * (np.cos(w * t) + gamma / (2.0 * w) * np.sin(w * t))
    v = -envelope * (OMEGA**2 / w) * np.sin(w * t)  # d/dt of x, simplified with w**2 + gamma**2/4 = OMEGA**2
    return np.array([x, v])


def midpoint_order(gamma):
    """Observed order of oscillator.integrate against the exact solution; the midpoint rule is second order."""
    exact = underdamped_solution(gamma, T_END)
    hs = [T_END / n for n in NS]
    errors = [float(np.max(np.abs(oscillator.integrate([1.0, 0.0], T_END, n, gamma=gamma, omega=OMEGA) - exact)))
              for n in NS]
    return check_order(hs, errors, 2)


def control():
    # gamma = 0: the damping term is zero whatever its sign, so the claimed defect cannot show.
    return Check("convergence", "midpoint rule is second order without damping (gamma = 0)", lambda: midpoint_order(0.0))


def checks():
    return [Check("convergence", "midpoint rule is second order with damping (gamma = 0.6)", lambda: midpoint_order(0.6))]
