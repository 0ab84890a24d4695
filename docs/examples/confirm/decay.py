"""Radioactive decay, dN/dt = -lambda N, integrated with the classical Runge-Kutta method (RK4).

The decay constant is lambda = ln 2 / T, T the half-life (Krane, Introductory Nuclear
Physics, sec. 6.1). Written for the physverify documentation (docs/examples/confirm).
"""
import math


def decay(n0, half_life, t_end, n_steps, source=None):
    """The amount N at t_end, from n0 at t = 0, in n_steps RK4 steps.

    half_life is the half-life T (in the unit of t_end), not a rate: the decay
    constant is lambda = ln 2 / T. source(t), optional, is a production rate added
    to dN/dt.
    """
    rate = math.log(2.0) / half_life
    h = t_end / n_steps
    t, n = 0.0, n0
    for _ in range(n_steps):
        k1 = dndt(t, n, rate, source)
        k2 = dndt(t + 0.5 * h, n + 0.5 * h * k1, rate, source)
        k3 = dndt(t + 0.5 * h, n + 0.5 * h * k2, rate, source)
        k4 = dndt(t + h, n + h * k3, rate, source)
        n = n + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t += h
    return n


def dndt(t, n, rate, source):
    """dN/dt = -lambda N, plus the production rate when given."""
    return -rate * n + (0.0 if source is None else source(t))
