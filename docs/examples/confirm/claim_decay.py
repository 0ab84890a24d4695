"""Claim: the k3 stage of decay.py's RK4 uses the wrong slope (a physverify worked example, docs/confirm.md).

Run it with:  physverify confirm docs/examples/confirm/claim_decay.py --trusted

This example shows a claim that cannot be judged. Its reference reads the half_life
argument of decay.py as a decay rate, so the reference is for a different equation
and the control fails: the verdict is "not decidable". decay.py documents the
convention: the decay constant is lambda = ln 2 / half_life (Krane, Introductory
Nuclear Physics, sec. 6.1). The fix is RATE = np.log(2.0) / HALF_LIFE below; with it
the control is EXACT, the check passes, and the claim is rejected.

Both studies manufacture a solution N(t): the source dN/dt + lambda N is added to the
solver's right-hand side as a production rate, so N(t) is exact and the error at each
step size is known (Roache, Verification and Validation in Computational Science and
Engineering, ch. 3). The control's N(t) is a straight line: there every stage of a
consistent Runge-Kutta method sees the same slope, so a wrong slope in k3 makes no
difference and RK4 must reproduce it to round-off (EXACT, a stronger pass than order
4). The check's N(t) oscillates, and there a wrong k3 would lower the order.
"""

import numpy as np

import decay  # the code under test
from physverify import Check, ManufacturedODE, mms_order_study

CLAIM = {
    "text": "the k3 stage is evaluated with the wrong slope, so the method is not fourth order",
    "source": "an AI code review (example)",
    "file": "decay.py",
    "line": 22,
    "reference": "Butcher, Numerical Methods for ODEs, sec. 23: the classical RK4 tableau is fourth order",
    "impact": "unknown",
}

HALF_LIFE = 2.0
RATE = HALF_LIFE  # the mistake this example is about: a half-life is not a rate
T_END = 4.0
NS = (8, 16, 32, 64)


def reference_rhs(t, n):
    """dN/dt = -lambda N, the decay law (Krane sec. 6.1)."""
    return -RATE * n


def slowly_varying(t):
    """A manufactured amount that falls slowly and steadily: N(t) = 1 - t / 20."""
    return 1.0 - t / 20.0


def oscillating(t):
    """A manufactured amount that oscillates around 1: N(t) = 1 + sin(3 t) / 2."""
    return 1.0 + 0.5 * np.sin(3.0 * t)


def rk4_study(solution):
    """The observed order of decay.decay on a manufactured N(t); RK4 is fourth order."""

    def integrate(source, y0, t_end, n_steps):  # the integrate contract of physverify.mms
        return decay.decay(float(y0), HALF_LIFE, t_end, n_steps, source=lambda t: float(source(t)))

    return mms_order_study(integrate, ManufacturedODE(solution, reference_rhs), T_END, NS, expected_order=4)


def control():
    return Check("mms", "RK4 is fourth order on a slowly varying solution", lambda: rk4_study(slowly_varying))


def checks():
    return [Check("mms", "RK4 is fourth order on an oscillating solution", lambda: rk4_study(oscillating))]
