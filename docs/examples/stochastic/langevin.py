"""A Langevin thermostat for particles in a harmonic well, the code under test (it carries one defect)."""
import numpy as np


def thermostat_step(q, p, dt, rng, friction=1.0, temperature=1.0, mass=1.0, stiffness=1.0):
    """One step of dp = (-k q - gamma p) dt + sqrt(2 gamma m kT) dW, then dq = p / m dt (arrays of replicas)."""
    noise = np.sqrt(friction * mass * temperature * dt) * rng.standard_normal(p.shape)
    p = p - dt * (stiffness * q + friction * p) + noise
    q = q + dt * p / mass
    return q, p
