"""A one-step RK4 routine as ODE libraries write it (written for the physverify docs, docs/real-code.md).

It carries one deliberate mistake, a stage-time slip: k3 is evaluated at t + h instead of
t + h/2 (Butcher, Numerical Methods for Ordinary Differential Equations, sec. 23).
"""
import numpy as np


def rhs(t, y):
    """The harmonic oscillator x'' = -4 x as a first-order system in (x, v)."""
    return np.array([y[1], -4.0 * y[0]])


def rk4_step(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
    k3 = f(t + h, y + 0.5 * h * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
