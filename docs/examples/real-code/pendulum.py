"""A pendulum stepped with velocity Verlet, the acceleration passed in as MD codes do (for docs/real-code.md)."""
import numpy as np


def acceleration(theta, g_over_l):
    """The angular acceleration -(g / L) sin(theta) of a simple pendulum."""
    return -g_over_l * np.sin(theta)


def verlet_step(x, v, t, h, accel):
    """One velocity Verlet step of x'' = accel(x, v, t)."""
    v_half = v + 0.5 * h * accel(x, v, t)
    x_new = x + h * v_half
    return x_new, v_half + 0.5 * h * accel(x_new, v_half, t + h)
