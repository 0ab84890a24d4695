"""Claim: symplectic.py's symplectic_euler is explicit Euler, so the energy drifts instead of staying bounded.

Run it with:  physverify confirm docs/examples/pde/claim_symplectic_drift.py --trusted

A symplectic method keeps the energy error of a Hamiltonian system bounded, O(h), over
exponentially long times; explicit Euler multiplies the oscillator's energy by 1 + h**2
every step (Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. I.1 and
IX.8). The claim is about that long-time property, so the check is a drift_study of the
energy, not an order study at one end time (docs/ai-review.md: every check must test the
claim's own property). The control runs the same study on symplectic Euler written here
from the book, to show the study passes a method that has the property.
"""

import symplectic  # the code under test
from physverify import Check, drift_study

CLAIM = {
    "text": "symplectic_euler updates q with the old p, which is explicit Euler: the energy is not kept bounded",
    "source": "an AI code review (example)",
    "file": "symplectic.py",
    "line": 16,
    "reference": "Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. I.1.2 and IX.8",
    "impact": "used",
}

H = 0.05
T_ENDS = (10.0, 20.0, 40.0, 80.0)  # many periods of the oscillator (period 2 pi)


def spring(q):
    """The force of the harmonic oscillator H = p**2 / 2 + q**2 / 2."""
    return -q


def book_symplectic_euler(q, p, h, n_steps, force):
    """Symplectic Euler as Hairer, Lubich and Wanner sec. I.1.2 write it: p first, then q with the new p."""
    for _ in range(n_steps):
        p = p + h * force(q)
        q = q + h * p
    return q, p


def energy_drift(step):
    """deviation_at(T): the largest |H - H0| over the run to T at step H, one step at a time."""
    def deviation_at(t_end):
        q, p, worst = 1.0, 0.0, 0.0
        for _ in range(round(t_end / H)):
            q, p = step(q, p, H, 1, spring)
            worst = max(worst, abs(0.5 * p * p + 0.5 * q * q - 0.5))
        return worst
    return deviation_at


def control():
    return Check("drift", "the book's symplectic Euler keeps the energy bounded",
                 lambda: drift_study(energy_drift(book_symplectic_euler), T_ENDS, expect="bounded"))


def checks():
    return [Check("drift", "symplectic_euler keeps the energy bounded",
                  lambda: drift_study(energy_drift(symplectic.symplectic_euler), T_ENDS, expect="bounded"))]
