"""Claim: velocity Verlet in verlet.py is only first order (a physverify worked example, docs/confirm.md).

Run it with:  physverify confirm docs/examples/confirm/claim_verlet.py --trusted

An AI code review said that line 13 updates the velocity with the old acceleration.
If it did, the method would be first order. The reference: the Stormer-Verlet method
is second order (Hairer, Lubich and Wanner, Geometric Numerical Integration,
sec. I.1.4), and the harmonic oscillator x'' = -omega**2 x has the exact solution
x(t) = x0 cos(omega t) + (v0 / omega) sin(omega t) (Taylor, Classical Mechanics, sec. 5.2).
"""

import numpy as np

import verlet  # the code under test
from physverify import Check, ManufacturedODE, mms_order_study

CLAIM = {
    "text": "line 13 uses the old acceleration in the velocity update, so the method is only first order",
    "source": "an AI code review (example)",
    "file": "verlet.py",
    "line": 13,
    "reference": "Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. I.1.4: Stormer-Verlet is second order",
    "impact": "used",
}

T_END = 1.5
NS = (50, 100, 200, 400)


def reference_rhs(omega):
    """x'' = -omega**2 x as a first-order system in (x, v), written from the physics."""
    return lambda t, y: np.array([y[1], -omega**2 * y[0]])


def exact_free_particle(t):
    """Straight-line motion x = x0 + v0 t with x0 = 0.25, v0 = 0.5 (Newton's first law)."""
    return np.array([0.25 + 0.5 * t, 0.5 + 0.0 * t])


def exact_oscillation(t):
    """x = cos(2 t), v = -2 sin(2 t): the harmonic oscillator with omega = 2 from x0 = 1, v0 = 0 (Taylor sec. 5.2)."""
    return np.array([np.cos(2.0 * t), -2.0 * np.sin(2.0 * t)])


def verlet_study(omega, solution):
    """The observed order of verlet.integrate against an exact solution; Verlet is second order."""

    def integrate(source, y0, t_end, n_steps):  # the integrate contract of physverify.mms
        # The solution is (x, x'), so the source's first component is zero to round-off;
        # its second is a force per unit mass, which verlet.integrate accepts.
        x, v = verlet.integrate(y0[0], y0[1], t_end, n_steps, omega, force=lambda t: source(t)[1])
        return np.array([x, v])

    return mms_order_study(integrate, ManufacturedODE(solution, reference_rhs(omega)), T_END, NS, expected_order=2)


def control():
    # Without a force the acceleration is zero, old or new, so the claimed mistake would
    # make no difference: Verlet must reproduce straight-line motion to round-off.
    return Check(
        "mms", "free particle (omega = 0): straight-line motion", lambda: verlet_study(0.0, exact_free_particle)
    )


def checks():
    return [
        Check(
            "mms",
            "velocity Verlet is second order on the harmonic oscillator (omega = 2)",
            lambda: verlet_study(2.0, exact_oscillation),
        )
    ]
