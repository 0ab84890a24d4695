"""Claim: laplacian.py divides by dx where dx**2 belongs, so it is not a second derivative (JAX with x64 on).

Run it with:  physverify confirm docs/examples/frameworks/claim_laplacian_x64.py --trusted

The same claim as claim_laplacian.py, with jax_enable_x64 turned on before the code
runs: JAX computes in float64 now, the study judges it against float64 round-off, and
finer grids are usable (a float32 second difference meets its round-off near nx = 128).
"""

import jax
import numpy as np
from physverify import Check, operator_study

import laplacian

jax.config.update("jax_enable_x64", True)  # before the code under test runs: JAX reads it at every computation

CLAIM = {
    "text": "the Laplacian divides by dx instead of dx**2",
    "source": "a code review (example)",
    "file": "laplacian.py",
    "line": 10,
    "reference": "LeVeque, Finite Difference Methods for ODEs and PDEs, sec. 1.5: the centred second difference",
    "impact": "used",
    "defect": "return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx",
    "fix": "return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx**2",
}


def book_laplacian(u, dx):
    """The centred second difference written again, in NumPy's float64."""
    return (np.roll(u, -1) - 2.0 * u + np.roll(u, 1)) / dx**2


def study(apply):
    # one period of sin x on [0, 2 pi]: u'' = -u
    return operator_study(apply, np.sin, lambda x: -np.sin(x), [8, 16, 32, 64, 128], 2, domain=(0.0, 2 * np.pi))


def control():
    return Check("operator", "the book's Laplacian of sin x is second order", lambda: study(book_laplacian))


def checks():
    return [Check("operator", "laplacian() of sin x is second order", lambda: study(laplacian.laplacian))]
