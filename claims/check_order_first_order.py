"""Claim: physverify's check_order passes a first-order method as second order.

This is a claim about physverify's own numerics; it must come out rejected (physverify.yaml
pins it). The reference: a method of order p has global error C h**p + O(h**(p+1)), so on
y' = -y forward Euler's error at t = 1 halves with h (order 1) and the explicit midpoint
rule's falls by four (order 2) (Hairer, Norsett and Wanner, Solving ODEs I, sec. II.3,
Theorem 3.6; Roache, Verification and Validation in Computational Science and
Engineering, 1998, sec. 5.3 on the observed order). Both solvers and the exact solution
exp(-t) are written here, independently of physverify.
"""

import math

from physverify import FAIL, PASS, Check, Result
from physverify.order import check_order  # the code under test

CLAIM = {
    "text": "check_order passes a first-order method as second order",
    "source": "physverify maintainers",
    "file": "src/physverify/order.py",
    "line": 203,
    "reference": "Hairer, Norsett and Wanner, Solving ODEs I, sec. II.3, Thm. 3.6: global error C h^p for a method of order p",
    "impact": "used",
}

NS = (10, 20, 40, 80)


def euler(n):
    """Forward Euler on y' = -y, y(0) = 1, to t = 1 in n steps."""
    y = 1.0
    for _ in range(n):
        y += (1.0 / n) * (-y)
    return y


def midpoint(n):
    """The explicit midpoint rule on y' = -y, y(0) = 1, to t = 1 in n steps."""
    h, y = 1.0 / n, 1.0
    for _ in range(n):
        y += h * (-(y + 0.5 * h * (-y)))
    return y


def judged_as_second_order(method, wanted):
    """PASS when check_order(expected=2) gives the status ``wanted`` for ``method``'s errors."""
    errors = [abs(method(n) - math.exp(-1.0)) for n in NS]
    verdict = check_order([1.0 / n for n in NS], errors, 2)
    status = PASS if verdict.status == wanted else FAIL
    return Result(status, f"check_order said {verdict.status} (wanted {wanted}): {verdict.message}")


def control():
    # A genuinely second-order method: check_order must accept it, or the test proves nothing.
    return Check("order", "check_order accepts the explicit midpoint rule as second order",
                 lambda: judged_as_second_order(midpoint, "PASS"))


def checks():
    return [Check("order", "check_order refuses forward Euler as second order",
                  lambda: judged_as_second_order(euler, "FAIL"))]
