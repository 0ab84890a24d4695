"""Symplectic Euler for a separable Hamiltonian H = p**2 / 2 + V(q).

Written for the physverify docs (docs/ai-review.md); it carries one deliberate mistake
(see claim_symplectic_drift.py).
"""


def symplectic_euler(q, p, h, n_steps, force):
    """(q, p) after n_steps steps of size h; force(q) = -V'(q).

    Symplectic Euler updates the momentum with the force at the old position, then the
    position with the NEW momentum (Hairer, Lubich and Wanner, Geometric Numerical
    Integration, sec. I.1.2), and keeps the energy error bounded over long times.
    """
    for _ in range(n_steps):
        q, p = q + h * p, p + h * force(q)
    return q, p
