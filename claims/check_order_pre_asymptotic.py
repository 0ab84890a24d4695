"""Claim: physverify's check_order calls pre-asymptotic data a defect.

This is a claim about physverify's own numerics (issue 9); it must come out rejected
(physverify.yaml pins it). A FAIL from check_order becomes a confirmed defect, so a FAIL
must rest on errors in the asymptotic range, where the error of a method of order p is
C h**p (1 + O(h)) and the pairwise orders have settled (Roache, Verification and Validation
in Computational Science and Engineering, 1998, sec. 5.3; Hairer, Norsett and Wanner,
Solving ODEs I, sec. II.3, Thm. 3.6). At steps too coarse for the problem the leading term
does not dominate yet, and the pairwise orders are still moving: nothing can be concluded.

The data are a correct fourth-order method at steps far too coarse for a fast drive (the
reproduction of issue 9: pairwise orders -0.01, 1.59, 8.63), and errors written here from
e = C h**4 (1 + a h**q) with a pre-asymptotic term that dominates at the coarse levels.
"""

from physverify import FAIL, PASS, Check, Result
from physverify.order import check_order  # the code under test

CLAIM = {
    "text": "check_order returns FAIL for a correct fourth-order method when the steps are still pre-asymptotic, "
            "so a correct Runge-Kutta code is confirmed as defective",
    "source": "physverify maintainers (issue 9: a new user's run on a correct RK4)",
    "file": "src/physverify/order.py",
    "line": 203,
    "reference": "Roache, Verification and Validation in Computational Science and Engineering, sec. 5.3: "
                 "the observed order is meaningful only in the asymptotic range",
    "impact": "used",
}

HS = (0.4, 0.2, 0.1, 0.05)


def judged(errors, wanted):
    """PASS when check_order(expected=4) on ``errors`` at HS gives a status in ``wanted``."""
    verdict = check_order(HS, errors, 4)
    status = PASS if verdict.status in wanted else FAIL
    return Result(status, f"check_order said {verdict.status} (wanted {' or '.join(wanted)}): {verdict.message}")


def pre_asymptotic(a, q):
    """|e| = |h**4 (1 + a h**q)|: fourth order, with a correction that dominates while |a| h**q >> 1."""
    return [abs(h**4 * (1.0 + a * h**q)) for h in HS]


def control():
    # The same steps, the same expected order, clean fourth-order errors: it must PASS, or the
    # test proves nothing about the pre-asymptotic cases.
    return Check("order", "check_order accepts clean fourth-order errors at h = 0.4 ... 0.05",
                 lambda: judged([3.0 * h**4 for h in HS], ("PASS",)))


def checks():
    return [
        Check("order", "check_order does not call issue 9's pre-asymptotic RK4 errors a defect",
              lambda: judged([0.36178, 0.36485, 0.12130, 0.00030602], ("INCONCLUSIVE", "PASS"))),
        Check("order", "check_order does not call a dominating correction 1e3 h**2 a defect",
              lambda: judged(pre_asymptotic(1e3, 2.0), ("INCONCLUSIVE", "PASS"))),
        Check("order", "check_order does not call a dominating correction -50 h a defect",
              lambda: judged(pre_asymptotic(-50.0, 1.0), ("INCONCLUSIVE", "PASS"))),
        Check("order", "check_order does not call an error through zero (correction -8 h, zero at h = 0.125) a defect",
              lambda: judged(pre_asymptotic(-8.0, 1.0), ("INCONCLUSIVE", "PASS"))),
    ]
