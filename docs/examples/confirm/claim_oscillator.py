"""Claim: the damping term of oscillator.py has the wrong sign (a physverify worked example, docs/confirm.md).

Run it with:  physverify confirm docs/examples/confirm/claim_oscillator.py --trusted

The reference is the damped oscillator of Taylor, Classical Mechanics, sec. 5.4:
m x'' + b x' + k x = 0, that is x'' = -omega**2 x - gamma x' with gamma = b/m and
omega**2 = k/m. Its underdamped solution from x(0) = 1, x'(0) = 0 is
    x(t) = exp(-gamma t / 2) (cos(w t) + gamma / (2 w) sin(w t)),  w = sqrt(omega**2 - gamma**2 / 4),
and it is the manufactured solution here: with the correct equation the forcing
u' - f(t, u) vanishes, so the study compares the solver with the textbook solution.
"""

import numpy as np

import oscillator  # the code under test
from physverify import Check, ManufacturedODE, mms_order_study

CLAIM = {
    "text": "rhs() adds +gamma*v, so the damping pumps energy in instead of removing it",
    "source": "a person reading the code (example)",
    "file": "oscillator.py",
    "line": 10,
    "reference": "Taylor, Classical Mechanics, sec. 5.4: m x'' + b x' + k x = 0, friction opposes the velocity",
    "impact": "used",
}

OMEGA = 2.0  # natural angular frequency
T_END = 1.5
NS = (50, 100, 200, 400)  # steps; the midpoint rule's error falls 4x per halving of h


def reference_rhs(t, y, gamma):
    """x'' = -omega**2 x - gamma x' as a first-order system (Taylor sec. 5.4), written from the physics."""
    x, v = y
    return np.array([v, -OMEGA**2 * x - gamma * v])


def exact_motion(gamma):
    """The underdamped solution from x(0) = 1, x'(0) = 0 (Taylor sec. 5.4); v comes from the complex step."""
    w = np.sqrt(OMEGA**2 - gamma**2 / 4.0)

    def x(t):
        return np.exp(-gamma * t / 2.0) * (np.cos(w * t) + gamma / (2.0 * w) * np.sin(w * t))

    def state(t):
        return np.array([x(t), -(OMEGA**2 / w) * np.exp(-gamma * t / 2.0) * np.sin(w * t)])

    return ManufacturedODE(state, lambda t, y: reference_rhs(t, y, gamma))


def midpoint_study(gamma):
    """The observed order of oscillator.integrate at damping gamma; the midpoint rule is second order."""

    def integrate(source, y0, t_end, n_steps):  # the integrate contract of physverify.mms
        return oscillator.integrate(y0, t_end, n_steps, gamma=gamma, omega=OMEGA, source=source)

    return mms_order_study(integrate, exact_motion(gamma), T_END, NS, expected_order=2)


def control():
    # With gamma = 0 the damping term is zero whatever its sign, so this must pass:
    # it shows the reference and the study are right.
    return Check("mms", "midpoint rule is second order with gamma = 0 (no damping)", lambda: midpoint_study(0.0))


def checks():
    # With damping on, a wrong sign makes the solver solve a different equation, and
    # its error stops shrinking with the step.
    return [Check("mms", "midpoint rule is second order with gamma = 0.5 (damping on)", lambda: midpoint_study(0.5))]
