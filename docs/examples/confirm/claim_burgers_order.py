"""Claim: the same slip in burgers.py, tested with an order study that cannot see it (docs/confirm.md).

Run it with:  physverify confirm docs/examples/confirm/claim_burgers_order.py --trusted

The slip puts an error of size dx at one point, and the upwind scheme's own error is
already of that order, so the observed order is 1 with the defect and without it
(LeVeque, sec. 8.3: upwind is first order). Without `defect` and `fix` this claim would
be "rejected"; with them, the two runs cannot be told apart and the verdict says so.
"""

import numpy as np

import burgers  # the code under test
from _burgers_shared import T_END, control, wave  # noqa: F401
from physverify import Check, convergence_study

CLAIM = {
    "text": "step() copies u[n-1] into the periodic end point, where u[0] belongs",
    "source": "a person reading the code (example)",
    "file": "burgers.py",
    "line": 19,
    "reference": "LeVeque, Finite Volume Methods for Hyperbolic Problems, sec. 8.3 and 11.1: upwind is first order",
    "impact": "used",
    "defect": "new[-1] = new[-2]",
    "fix": "new[-1] = new[0]",
}


def exact(x, t):
    """u(x, t) = u0(x - u t) before the shock (characteristics, LeVeque sec. 11.1), by Newton's method."""
    xi = x.copy()
    for _ in range(50):
        xi = xi - (xi + wave(xi) * t - x) / (1.0 + 0.4 * np.pi * np.cos(2.0 * np.pi * xi) * t)
    return wave(xi)


def l1_error(n):
    x = burgers.grid(n)
    return float(np.trapezoid(np.abs(burgers.solve(wave, n, T_END) - exact(x, T_END)), x))


def checks():
    return [Check("order", "upwind is first order for a sine wave",
                  lambda: convergence_study(l1_error, [50, 100, 200, 400], 1))]
