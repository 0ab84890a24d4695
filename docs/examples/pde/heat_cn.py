"""The 1-D heat equation u_t = u_xx + f(x, t) on [0, 1], u = 0 at both ends, by Crank-Nicolson.

Written for the physverify docs (docs/pde.md); it carries one deliberate mistake (see
claim_heat_cn_source.py).
"""
import numpy as np


def solve(nx, nt, t_end, u0, source):
    """u at t_end on the grid x_j = j / nx (j = 0 ... nx), from u0(x), in nt steps.

    source(x, t) is the heat source f. Crank-Nicolson averages the right-hand side over
    the old and the new time level (Morton and Mayers, Numerical Solution of Partial
    Differential Equations, sec. 2.10).
    """
    x = np.linspace(0.0, 1.0, nx + 1)
    dx, dt = 1.0 / nx, t_end / nt
    inner = nx - 1
    lap = (np.diag(-2.0 * np.ones(inner)) + np.diag(np.ones(inner - 1), 1) + np.diag(np.ones(inner - 1), -1)) / dx**2
    implicit = np.linalg.inv(np.eye(inner) - 0.5 * dt * lap)
    explicit = np.eye(inner) + 0.5 * dt * lap
    u = np.array(u0(x), dtype=float)[1:-1]
    xi = x[1:-1]
    for n in range(nt):
        t = n * dt
        u = implicit @ (explicit @ u + dt * source(xi, t))
    return np.concatenate([[0.0], u, [0.0]])
