"""Claim: docs/examples/confirm/burgers.py copies the wrong neighbour into the periodic end point.

The docs keep this defect on purpose (the worked example of "Claims that name their fix"),
so physverify.yaml pins the claim confirmed. It names its fix, so every replay runs the
check twice: on the code as it is (the copies differ) and with the fix served in its place
(they agree). A refactor that made the check blind to the slip would turn the verdict into
"not decidable" and fail the gate.

Reference: on a periodic grid that stores both end points, u(1) is u(0) (LeVeque, Finite
Volume Methods for Hyperbolic Problems, sec. 2.12), so after every step the two agree exactly.
"""

import numpy as np

from docs.examples.confirm import burgers  # the code under test
from physverify import Check, identity_check

CLAIM = {
    "text": "step() copies u[n-1] into the periodic end point, where u[0] belongs",
    "source": "physverify maintainers (reading the worked example)",
    "file": "docs/examples/confirm/burgers.py",
    "line": 19,
    "reference": "LeVeque, Finite Volume Methods for Hyperbolic Problems, sec. 2.12: u(1) is u(0) on a periodic grid",
    "impact": "used",
    "defect": "new[-1] = new[-2]",
    "fix": "new[-1] = new[0]",
}

T_END = 0.2  # well before the wave steepens into a shock (near t = 0.8)


def periodic_gap(u0):
    """u(1) - u(0) after the run: zero for a code that keeps the periodic copy."""
    u = burgers.solve(u0, 64, T_END)
    return u[-1] - u[0]


def control():
    # A constant state does not move, so which neighbour is copied cannot matter.
    return Check("identity", "the periodic copies agree for a constant state",
                 lambda: identity_check(periodic_gap(np.ones_like)))


def checks():
    return [Check("identity", "the periodic copies agree for a sine wave",
                  lambda: identity_check(periodic_gap(lambda x: 1.0 + 0.2 * np.sin(2.0 * np.pi * x))))]
