"""Claim: with gamma > 0, docs/examples/confirm/oscillator.py gains mechanical energy.

A damped oscillator loses energy: for x'' + gamma x' + omega**2 x = 0 the energy
E = (v**2 + omega**2 x**2) / 2 has dE/dt = -gamma v**2 <= 0 (Taylor, Classical
Mechanics, sec. 5.4: the damping force -b v always opposes the motion). The docs keep
the sign defect on purpose, so this claim must stay confirmed.
"""

import numpy as np

from docs.examples.confirm import oscillator  # the code under test
from physverify import FAIL, PASS, Check, Result

CLAIM = {
    "text": "with gamma > 0 the oscillator's energy grows instead of decaying",
    "source": "physverify maintainers (reading the worked example)",
    "file": "docs/examples/confirm/oscillator.py",
    "line": 10,
    "reference": "Taylor, Classical Mechanics, sec. 5.4: the damping force opposes the velocity, dE/dt = -b v^2 <= 0",
    "impact": "used",
}

OMEGA = 1.5
T_END = 4.0
N_STEPS = 4000


def energy(state):
    """E = (v**2 + OMEGA**2 x**2) / 2 per unit mass."""
    x, v = state
    return 0.5 * (v**2 + OMEGA**2 * x**2)


def energy_change(gamma, tolerance):
    """PASS when E(T_END) <= E(0) (1 + tolerance): energy must not grow under damping."""
    y0 = np.array([1.0, 0.0])
    e0, e1 = energy(y0), energy(oscillator.integrate(y0, T_END, N_STEPS, gamma=gamma, omega=OMEGA))
    ratio = e1 / e0
    status = PASS if ratio <= 1.0 + tolerance else FAIL
    return Result(status, f"E(t_end) / E(0) = {ratio:.6g} (must be at most {1.0 + tolerance:g})")


def control():
    # gamma = 0: no damping term at all; the midpoint rule keeps E to about h**2 over this run.
    return Check("invariant", "energy is kept without damping (gamma = 0)", lambda: energy_change(0.0, 1e-4))


def checks():
    return [Check("invariant", "energy does not grow with damping (gamma = 0.4)", lambda: energy_change(0.4, 1e-4))]
