"""A Kepler orbit stepper from an orbit code (written for docs/real-code.md).

Like many real codes it is compiled with numba and takes the gravitational constant from
astropy, two packages the claim's machine may not have; claim_kepler_standins.py serves
stand-ins for both.
"""
import numpy as np
from astropy.constants import G, M_sun
from numba import njit

GM_SUN = G.value * M_sun.value  # m**3 / s**2


@njit
def acceleration(r):
    """Point-mass gravity of the Sun, -GM r / |r|**3."""
    return -GM_SUN * r / np.sqrt(r[0] ** 2 + r[1] ** 2) ** 3


@njit(cache=True)
def step(r, v, dt):
    """One kick-drift-kick leapfrog step; a negative dt steps back in time."""
    v = v + 0.5 * dt * acceleration(r)
    r = r + dt * v
    v = v + 0.5 * dt * acceleration(r)
    return r, v
