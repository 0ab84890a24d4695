"""What the two claims about burgers.py share: CLAIM's values, the initial wave and the control."""

import numpy as np

import burgers  # the code under test
from physverify import EXACT, FAIL, PASS, Check, Result

T_END = 0.2  # well before the wave steepens into a shock (at t = 1 / (0.4 pi), about 0.8)


def wave(x):
    return 1.0 + 0.2 * np.sin(2.0 * np.pi * x)


def copies_agree(u0, n):
    """u(0) and u(1) are one periodic point, so the two copies must agree to round-off."""
    u = burgers.solve(u0, n, T_END)
    gap = abs(u[0] - u[-1])
    if gap <= 1e-13:
        return Result(EXACT if gap == 0.0 else PASS, f"u(0) and u(1) agree to {gap:.1e}")
    return Result(FAIL, f"u(0) and u(1) differ by {gap:.3g}, though they are one periodic point")


def control():
    # A constant state does not move, so the end point's neighbour cannot matter.
    return Check("identity", "the periodic copies agree for a constant state",
                 lambda: copies_agree(lambda x: np.ones_like(x), 64))
