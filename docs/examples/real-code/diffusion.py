"""The conservative diffusion operator (k u')' of a finite-volume code (written for docs/real-code.md).

u lives at the cell centres, with one ghost cell at each end; the flux k u' lives at the
faces. It carries one deliberate mistake: the conductivity is taken at the cell centre left
of each face instead of at the face (LeVeque, Finite Volume Methods for Hyperbolic Problems,
sec. 4.1, and Finite Difference Methods for ODEs and PDEs, sec. 2.15: the flux belongs at
the face x_{i-1/2}).
"""
import numpy as np


def diffusion(u, dx, k):
    """(k u')' at the nx cell centres from nx + 2 cell values (ghosts included); k(x) the conductivity."""
    nx = len(u) - 2
    faces = np.arange(nx + 1) * dx
    flux = k(faces - 0.5 * dx) * (u[1:] - u[:-1]) / dx
    return (flux[1:] - flux[:-1]) / dx
