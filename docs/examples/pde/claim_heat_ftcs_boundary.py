"""Claim: heat_ftcs.py imposes zero flux with a one-sided difference, so it is first order in space.

Run it with:  physverify confirm docs/examples/pde/claim_heat_ftcs_boundary.py --trusted

FTCS is first order in time and second order in space (Morton and Mayers, sec. 2.6); a
zero-flux boundary keeps the second order only with a centred difference (a mirror ghost
point u_{-1} = u_1), while copying u_0 = u_1 is the one-sided, first-order difference
(LeVeque, Finite Difference Methods for ODEs and PDEs, sec. 2.12). The study refines along
path_steps(space_order=2, time_order=1): dt ~ dx**2, the path on which FTCS is stable
and both error terms fall like dx**2, from nx = 8 on until the verdict holds (refine). The exact solutions cos(pi x) exp(-pi**2 t) (zero
flux) and sin(pi x) exp(-pi**2 t) (u = 0 at the ends) come from separation of variables.
"""

import numpy as np

import heat_ftcs  # the code under test
from physverify import Check, convergence_study, path_steps, refine

CLAIM = {
    "text": "the zero-flux boundary copies u[1] into u[0], a first-order difference",
    "source": "an AI code review (example)",
    "file": "heat_ftcs.py",
    "line": 24,
    "reference": "LeVeque, Finite Difference Methods for ODEs and PDEs, sec. 2.12: a one-sided Neumann condition is first order",
    "impact": "used",
}

T_END = 0.1
LEVELS = refine(8, max_n=512)


def steps(nx):
    # dt / dx**2 = 0.4 at every level (stable, < 1/2): nt = 16, 64, 256, ... for nx = 8, 16, 32, ...
    return path_steps(nx, space_order=2, time_order=1, nx0=8, nt0=16)


def space_error(nx, boundary):
    """The max-norm error at T_END against the exact separated solution for this boundary."""
    shape = np.cos if boundary == "neumann" else np.sin
    x = np.linspace(0.0, 1.0, nx + 1)
    exact = shape(np.pi * x) * np.exp(-np.pi**2 * T_END)
    u = heat_ftcs.solve(nx, steps(nx), T_END, lambda x: shape(np.pi * x), boundary)
    return float(np.max(np.abs(u - exact)))


def control():
    # With u = 0 at the ends the zero-flux code is not used: this must pass.
    return Check("mms", "FTCS is second order in dx along dt ~ dx**2 with u = 0 at the ends",
                 lambda: convergence_study(lambda nx: space_error(nx, "dirichlet"), LEVELS, 2, refines="path"))


def checks():
    return [Check("mms", "FTCS is second order in dx along dt ~ dx**2 with zero flux at the ends",
                  lambda: convergence_study(lambda nx: space_error(nx, "neumann"), LEVELS, 2, refines="path"))]
