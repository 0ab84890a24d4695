"""Solvers and claims written for the tests of claims that name their fix (issue 17).

Each solver is a source text with its fixed line; ``*_DEFECT`` seeds the defect by swapping
that one line, as a claim's ``defect`` and ``fix`` keys describe it.
"""

from __future__ import annotations

# Inviscid Burgers u_t + (u**2 / 2)_x = 0 on the periodic interval [0, 1), first-order
# upwind (LeVeque, Finite Volume Methods for Hyperbolic Problems, sec. 4.8 and 11.1;
# u > 0 throughout, so the upwind side is the left). The grid holds both end points: x[0]
# and x[n] are the same periodic point, and the last value must be a copy of the first.
# The defect copies the left neighbour instead: an O(dx) slip at one point, hidden behind
# the scheme's own first-order error.
BURGERS_FIX_LINE = "new[-1] = new[0]"
BURGERS_DEFECT_LINE = "new[-1] = new[-2]"
BURGERS = f'''\
"""Inviscid Burgers equation on a periodic grid, first-order upwind, written for the tests."""
import numpy as np


def grid(n):
    """n + 1 points on [0, 1]; x[0] and x[n] are the same periodic point."""
    return np.linspace(0.0, 1.0, n + 1)


def step(u, dt, dx):
    inner = u[:-1]
    flux = 0.5 * inner**2
    new = np.empty_like(u)
    new[:-1] = inner - dt / dx * (flux - np.roll(flux, 1))
    # the periodic copy
    {BURGERS_FIX_LINE}
    return new


def solve(u0, n, t_end):
    """u on grid(n) at t_end, from u0(x) > 0, at a CFL number of at most 0.5."""
    x = grid(n)
    u = u0(x)
    dx = 1.0 / n
    steps = int(np.ceil(t_end / (0.5 * dx / np.max(u))))
    for _ in range(steps):
        u = step(u, t_end / steps, dx)
    return u
'''
BURGERS_FIX_AT = 16  # the line of BURGERS_FIX_LINE
BURGERS_DEFECT = BURGERS.replace(BURGERS_FIX_LINE, BURGERS_DEFECT_LINE)

_BURGERS_HEAD = '''\
"""Claim: the periodic copy of burgers.py takes the wrong neighbour."""
import numpy as np

import burgers
from physverify import EXACT, FAIL, PASS, Check, Result, convergence_study

CLAIM = {{
    "text": "step() copies the left neighbour into the periodic end point instead of the first point",
    "source": "a test",
    "file": "burgers.py",
    "line": {line},
    "reference": "LeVeque, Finite Volume Methods for Hyperbolic Problems, sec. 4.8, 11.1: periodic upwind",
    "impact": "used",
    "defect": "{defect}",
    "fix": "{fix}",
}}
T_END = 0.2


def wave(x):
    return 1.0 + 0.2 * np.sin(2.0 * np.pi * x)


def copies_agree(u0, n):
    """The two copies of the periodic point must hold the same value: an identity, at round-off."""
    u = burgers.solve(u0, n, T_END)
    gap = abs(u[0] - u[-1])
    if gap <= 1e-13:
        return Result(EXACT if gap == 0.0 else PASS, f"u(0) and u(1) agree to {{gap:.1e}}")
    return Result(FAIL, f"u(0) and u(1) differ by {{gap:.3g}}, the two copies of one periodic point")


def control():
    # A constant state is steady whatever the end point does: the flux difference is zero.
    return Check("identity", "the copies agree for a constant state", lambda: copies_agree(lambda x: 0 * x + 1.0, 64))
'''


BURGERS_IDENTITY_CHECKS = '''

def checks():
    return [Check("identity", "the copies agree for a sine wave", lambda: copies_agree(wave, 64))]
'''

BURGERS_ORDER_CHECKS = '''

def exact(x, t):
    """u(x, t) = u0(x - u t) before the shock (characteristics; LeVeque sec. 11.1), by Newton's method."""
    xi = x.copy()
    for _ in range(50):
        g = xi + wave(xi) * t - x
        xi = xi - g / (1.0 + 0.4 * np.pi * np.cos(2.0 * np.pi * xi) * t)
    return wave(xi)


def l1_error(n):
    u = burgers.solve(wave, n, T_END)
    x = burgers.grid(n)
    return float(np.trapezoid(np.abs(u - exact(x, T_END)), x))


def checks():
    return [Check("order", "upwind is first order for a sine wave", lambda: convergence_study(l1_error, [50, 100, 200, 400], 1))]
'''


def burgers_claim(checks: str, *, line: int = BURGERS_FIX_AT, defect: str = BURGERS_DEFECT_LINE,
                  fix: str = BURGERS_FIX_LINE) -> str:
    """A claim about burgers.py's periodic copy with the given checks() (BURGERS_IDENTITY_CHECKS or _ORDER_)."""
    return _BURGERS_HEAD.format(line=line, defect=defect, fix=fix) + checks


# A damped oscillator x'' = -omega**2 x - gamma x' integrated with the leapfrog (kick-drift-
# kick), forward or backward in time. The fixed line takes the step's sign from t_end; the
# defect always steps forward. With a velocity-dependent force the explicit leapfrog is only
# first order (the second kick uses the half-step velocity; Hairer, Lubich and Wanner,
# Geometric Numerical Integration, sec. I.1.4 covers q'' = f(q) only), so a check that
# expects order 2 with friction fails on the fixed code too.
LEAPFROG_FIX_LINE = "h = t_end / n_steps"
LEAPFROG_DEFECT_LINE = "h = abs(t_end) / n_steps"
LEAPFROG = f'''\
"""The leapfrog for a damped oscillator, forward or backward in time, written for the tests."""


def accel(x, v, omega, gamma):
    return -omega**2 * x - gamma * v


def integrate(x, v, t_end, n_steps, omega=2.0, gamma=0.0):
    {LEAPFROG_FIX_LINE}
    for _ in range(n_steps):
        v_half = v + 0.5 * h * accel(x, v, omega, gamma)
        x = x + h * v_half
        v = v_half + 0.5 * h * accel(x, v_half, omega, gamma)
    return x, v
'''
LEAPFROG_FIX_AT = 9
LEAPFROG_DEFECT = LEAPFROG.replace(LEAPFROG_FIX_LINE, LEAPFROG_DEFECT_LINE)

LEAPFROG_CLAIM = f'''\
"""Claim: leapfrog.py integrates forward even when t_end is negative."""
import numpy as np

import leapfrog
from physverify import Check, convergence_study

CLAIM = {{
    "text": "integrate() takes abs(t_end), so a backward run goes forward",
    "source": "a test",
    "file": "leapfrog.py",
    "line": {LEAPFROG_FIX_AT},
    "reference": "Taylor, Classical Mechanics, sec. 5.4: the underdamped oscillator's solution",
    "impact": "used",
    "defect": "{LEAPFROG_DEFECT_LINE}",
    "fix": "{LEAPFROG_FIX_LINE}",
}}
OMEGA = 2.0


def exact_x(t, gamma):
    """x(t) from x(0) = 1, x'(0) = 0 (Taylor sec. 5.4), for t of either sign."""
    w = np.sqrt(OMEGA**2 - gamma**2 / 4.0)
    return np.exp(-gamma * t / 2.0) * (np.cos(w * t) + gamma / (2.0 * w) * np.sin(w * t))


def study(t_end, gamma):
    def error(n):
        x, _ = leapfrog.integrate(1.0, 0.0, t_end, n, omega=OMEGA, gamma=gamma)
        return abs(x - exact_x(t_end, gamma))

    return convergence_study(error, [40, 80, 160, 320], 2, h=lambda n: abs(t_end) / n)


def control():
    # forward and without friction: the sign of the step and the velocity-dependent force play no part
    return Check("order", "leapfrog is second order forward without friction", lambda: study(1.5, 0.0))


def checks():
    return [Check("order", "leapfrog is second order backward with friction", lambda: study(-1.5, 0.5))]
'''

# A wrong suspicion about the correct decay solver of fixtures.py: its suggested "fix" halves
# the rate, which breaks the code (Krane, Introductory Nuclear Physics, sec. 6.1).
DECAY_RIGHT_LINE = "return y0 * math.exp(-rate * t)"
DECAY_WRONG_FIX = "return y0 * math.exp(-rate * t / 2)"
