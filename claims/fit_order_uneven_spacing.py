"""Claim: physverify's fit_order misreports the order when the step sizes are not evenly spaced in log h.

The reference: the observed order is the slope p of log e = log C + p log h, and for
errors that are exactly C h**p the least-squares line through the points is that line,
whatever the spacing of the h (Roache, Verification and Validation in Computational
Science and Engineering, 1998, sec. 5.3; any least-squares text: exact data lie on the
fitted line). A claim about physverify's own numerics; it must come out rejected.
"""

from physverify import FAIL, PASS, Check, Result
from physverify.order import fit_order  # the code under test

CLAIM = {
    "text": "fit_order misreports the order when the step sizes are not evenly spaced in log h",
    "source": "physverify maintainers",
    "file": "src/physverify/order.py",
    "line": 89,
    "reference": "Roache, Verification and Validation in Computational Science and Engineering (1998), sec. 5.3: observed order",
    "impact": "latent",
}

C, P = 2.5, 3.0


def recovers_order(hs):
    """PASS when fit_order returns P (to 1e-9) for errors exactly C h**P at the step sizes ``hs``."""
    fitted = fit_order(hs, [C * h**P for h in hs])
    status = PASS if abs(fitted - P) < 1e-9 else FAIL
    return Result(status, f"fitted order {fitted:.12g} (exact data of order {P:g})")


def control():
    # Halving steps: evenly spaced in log h, where the claimed effect cannot appear.
    return Check("order", "fit_order recovers the order from halved steps", lambda: recovers_order([0.1, 0.05, 0.025, 0.0125]))


def checks():
    return [Check("order", "fit_order recovers the order from unevenly spaced steps",
                  lambda: recovers_order([0.3, 0.11, 0.04, 0.037, 0.005]))]
