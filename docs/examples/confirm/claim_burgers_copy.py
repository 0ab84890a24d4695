"""Claim: burgers.py copies the wrong neighbour into the periodic end point (docs/confirm.md).

Run it with:  physverify confirm docs/examples/confirm/claim_burgers_copy.py --trusted

On a periodic grid that stores both end points, u(1) is u(0) again (LeVeque, Finite Volume
Methods for Hyperbolic Problems, sec. 2.12: periodic boundary conditions), so after every
step the two must agree exactly. The claim names its fix, so physverify also runs the
check on burgers.py with the fix swapped in, and the verdict needs both runs to agree
with the claim.
"""

from _burgers_shared import control, copies_agree, wave  # noqa: F401

from physverify import Check

CLAIM = {
    "text": "step() copies u[n-1] into the periodic end point, where u[0] belongs",
    "source": "a person reading the code (example)",
    "file": "burgers.py",
    "line": 19,
    "reference": "LeVeque, Finite Volume Methods for Hyperbolic Problems, sec. 2.12: u(1) is u(0) on a periodic grid",
    "impact": "used",
    "defect": "new[-1] = new[-2]",
    "fix": "new[-1] = new[0]",
}


def checks():
    return [Check("identity", "the periodic copies agree for a sine wave", lambda: copies_agree(wave, 64))]
