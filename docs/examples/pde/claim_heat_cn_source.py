"""Claim: heat_cn.py evaluates the heat source at the start of each step, so it is first order in time.

Run it with:  physverify confirm docs/examples/pde/claim_heat_cn_source.py --trusted

Crank-Nicolson is second order in time because it averages the right-hand side over the
old and the new time level; a source taken only at the old level adds an O(dt) error
per unit time (Morton and Mayers, Numerical Solution of Partial Differential Equations,
sec. 2.10; LeVeque, Finite Difference Methods for ODEs and PDEs, sec. 9.3). The check
refines only the time step at a fixed grid of 32 cells: the space error is then the same
at every level and cancels in the differences of consecutive levels, so
self_convergence_study sees the time order alone, and no exact solution is needed
(docs/pde.md explains why refining along dt/dx**2 = const would hide the defect).
"""

import numpy as np

import heat_cn  # the code under test
from physverify import Check, refine, self_convergence_study

CLAIM = {
    "text": "the source is evaluated at the start of the step, so the scheme is first order in time",
    "source": "a person reading the code (example)",
    "file": "heat_cn.py",
    "line": 26,
    "reference": "Morton and Mayers, Numerical Solution of PDEs, sec. 2.10: Crank-Nicolson is second order in dt",
    "impact": "used",
}

NX = 32  # a fixed grid: only the time step is refined
T_END = 0.1
STEPS = refine(4, max_n=512)  # nt = 4, 8, 16, ... until the verdict holds with one more level


def steady_source(x, t):
    """A source that does not change in time: where it is evaluated in the step cannot matter."""
    return np.pi**2 * np.sin(np.pi * x)


def pulsing_source(x, t):
    """A source that changes in time, f = sin(pi x) (4 cos 4t + pi**2 (1 + sin 4t))."""
    return np.sin(np.pi * x) * (4.0 * np.cos(4.0 * t) + np.pi**2 * (1.0 + np.sin(4.0 * t)))


def cold(x):
    """The rod starts at u = 0 everywhere."""
    return np.zeros_like(x)


def time_order(source):
    """The time order of heat_cn.solve at a fixed grid, from differences of consecutive step counts."""
    return self_convergence_study(lambda nt: heat_cn.solve(NX, nt, T_END, cold, source), STEPS, 2, refines="time")


def control():
    # The time at which a constant source is evaluated makes no difference: this must pass.
    return Check("self-convergence", "Crank-Nicolson is second order in time with a steady source",
                 lambda: time_order(steady_source))


def checks():
    return [Check("self-convergence", "Crank-Nicolson is second order in time with a pulsing source",
                  lambda: time_order(pulsing_source))]
