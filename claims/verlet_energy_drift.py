"""Claim: velocity Verlet in docs/examples/confirm/verlet.py drifts in energy over long runs.

The reference: Stormer-Verlet is symplectic, so on the harmonic oscillator its energy
error stays bounded (it oscillates with amplitude O(h**2)) over exponentially long times
instead of growing with t (Hairer, Lubich and Wanner, Geometric Numerical Integration,
sec. I.1.4 and Theorem IX.8.1). Energy of x'' = -omega**2 x per unit mass:
E = (v**2 + omega**2 x**2) / 2 (Taylor, Classical Mechanics, sec. 5.2).
"""

import numpy as np

from docs.examples.confirm import verlet  # the code under test
from physverify import FAIL, PASS, Check, Result

CLAIM = {
    "text": "velocity Verlet is not symplectic here: the energy error grows linearly with the length of the run",
    "source": "physverify maintainers (a typical review claim, tested on the worked example)",
    "file": "docs/examples/confirm/verlet.py",
    "line": 4,
    "reference": "Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. I.1.4 and Thm. IX.8.1: bounded energy error",
    "impact": "used",
}

H = 0.1


def energy_error(omega, t_end):
    """|E(t_end) - E(0)| / E(0) from x0 = 1, v0 = 1 with step H."""
    e0 = 0.5 * (1.0 + omega**2)
    x, v = verlet.integrate(1.0, 1.0, t_end, int(round(t_end / H)), omega)
    return abs(0.5 * (v**2 + omega**2 * x**2) - e0) / e0


def bounded(omega):
    """PASS when the energy error over a long run stays within twice its largest value over the first periods."""
    early = max(energy_error(omega, t) for t in np.arange(0.5, 12.5, 0.5))
    late = max(energy_error(omega, t) for t in (400.0, 700.0, 1000.0))
    status = PASS if late <= 2.0 * early + 1e-12 else FAIL
    return Result(status, f"relative energy error {early:.3g} over the first periods, {late:.3g} at t up to 1000")


def control():
    # omega = 0: a free particle, whose energy v**2/2 Verlet keeps exactly; there is nothing to drift.
    return Check("invariant", "no energy drift for a free particle (omega = 0)", lambda: bounded(0.0))


def checks():
    return [Check("invariant", "no energy drift on the harmonic oscillator (omega = 1, h = 0.1)", lambda: bounded(1.0))]
