"""A damped harmonic oscillator, integrated with the explicit midpoint rule.

Written for the physverify docs; it carries one deliberate mistake (see claim_oscillator.py).
"""
import numpy as np


def rhs(t, y, gamma, omega):
    x, v = y
    return np.array([v, -omega**2 * x + gamma * v])


def integrate(y0, t_end, n_steps, gamma=0.0, omega=1.0, source=None):
    """The state (x, v) at t_end, from y0 = (x0, v0) at t = 0, in n_steps midpoint steps.

    Solves x'' + gamma x' + omega**2 x = 0 (unit mass): gamma is the damping rate and
    omega the natural angular frequency. source(t), optional, returns an array added to
    the right-hand side (an external drive on x' and v').
    """
    h = t_end / n_steps
    t, y = 0.0, np.array(y0, dtype=float)

    def f(s, state):
        extra = 0.0 if source is None else source(s)
        return rhs(s, state, gamma, omega) + extra

    for _ in range(n_steps):
        y_half = y + 0.5 * h * f(t, y)
        y = y + h * f(t + 0.5 * h, y_half)
        t += h
    return y
