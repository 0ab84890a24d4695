"""Claim: rk4.py evaluates k3 at t + h instead of t + h/2, so the @njit RK4 is not fourth order.

Run it with:  physverify confirm docs/examples/frameworks/claim_rk4.py --trusted

rk4_step and decay are compiled with Numba's @njit; from_step hands the compiled step an f
compiled for it (decay called as compiled code, the manufactured forcing in an object-mode
block), so what runs is the compiled code. The control's u = exp(-t) needs no forcing: f does
not depend on t there, and no stage time can matter.
"""

import numpy as np
from physverify import Check, ManufacturedODE, from_step, mms_order_study

import rk4

CLAIM = {
    "text": "k3 is evaluated at t + h instead of t + h/2",
    "source": "a code review (example)",
    "file": "rk4.py",
    "line": 9,
    "reference": "Butcher, Numerical Methods for ODEs, sec. 23: the classical RK4 tableau is fourth order",
    "impact": "used",
    "defect": "k3 = f(t + h, y + h / 2 * k2)",
    "fix": "k3 = f(t + h / 2, y + h / 2 * k2)",
}


def study(u):
    mms = ManufacturedODE(u, lambda t, y: -y)
    return mms_order_study(from_step(rk4.rk4_step, rk4.decay), mms, 1.0, [8, 16, 32, 64], 4)


def control():
    # u = exp(-t) needs no forcing: f does not depend on t, so no stage time can matter
    return Check("mms", "RK4 is fourth order on u = exp(-t), where f does not depend on t",
                 lambda: study(lambda t: np.array([np.exp(-t)])))


def checks():
    return [Check("mms", "RK4 is fourth order on u = cos 3t + t^2",
                  lambda: study(lambda t: np.array([np.cos(3.0 * t) + t * t])))]
