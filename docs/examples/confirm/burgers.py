"""The inviscid Burgers equation u_t + (u**2 / 2)_x = 0 on a periodic interval, first-order upwind.

Written for the physverify docs; it carries one deliberate mistake (see claim_burgers_copy.py).
The grid holds both end points of [0, 1]: u[0] and u[n] are the same periodic point.
"""
import numpy as np


def grid(n):
    return np.linspace(0.0, 1.0, n + 1)


def step(u, dt, dx):
    """One upwind step for u > 0; the last value is the periodic copy of the first."""
    inner = u[:-1]
    flux = 0.5 * inner**2
    new = np.empty_like(u)
    new[:-1] = inner - dt / dx * (flux - np.roll(flux, 1))
    new[-1] = new[-2]
    return new


def solve(u0, n, t_end):
    """u on grid(n) at t_end, from u0(x) > 0, at a Courant number of at most 0.5."""
    x = grid(n)
    u = u0(x)
    dx = 1.0 / n
    steps = int(np.ceil(t_end / (0.5 * dx / np.max(u))))
    for _ in range(steps):
        u = step(u, t_end / steps, dx)
    return u
