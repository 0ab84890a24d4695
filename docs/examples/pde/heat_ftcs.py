"""The 1-D heat equation u_t = u_xx on [0, 1] by FTCS (forward time, centred space).

Written for the physverify docs (docs/pde.md); it carries one deliberate mistake (see
claim_heat_ftcs_boundary.py).
"""
import numpy as np


def solve(nx, nt, t_end, u0, boundary="neumann"):
    """u at t_end on the grid x_j = j / nx (j = 0 ... nx), from u0(x), in nt steps.

    boundary is "dirichlet" (u = 0 at both ends) or "neumann" (zero flux, u_x = 0).
    Stable for dt / dx**2 <= 1/2 (Morton and Mayers, sec. 2.6).
    """
    x = np.linspace(0.0, 1.0, nx + 1)
    r = (t_end / nt) * nx**2
    u = np.array(u0(x), dtype=float)
    for _ in range(nt):
        new = u.copy()
        new[1:-1] = u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        if boundary == "dirichlet":
            new[0] = new[-1] = 0.0
        else:
            new[0], new[-1] = new[1], new[-2]
        u = new
    return u
