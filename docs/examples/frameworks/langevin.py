"""Underdamped Langevin dynamics in JAX, with a defect to find (written for physverify's docs).

dv = (F/m - gamma v) dt + sqrt(2 gamma kT / m) dW, one Euler-Maruyama step per iteration, all
replicas at once.
"""
import jax
import jax.numpy as jnp


def langevin_run(key, x, v, force, mass, gamma, kT, dt, steps):
    """x and v of every replica after ``steps`` Euler-Maruyama steps of underdamped Langevin dynamics."""
    def body(i, state):
        x, v, key = state
        key, sub = jax.random.split(key)
        noise = jax.random.normal(sub, v.shape)
        accel = force(x)
        v = v + dt * (accel - gamma * v) + jnp.sqrt(2.0 * gamma * kT * dt / mass) * noise
        return x + dt * v, v, key
    x, v, _ = jax.lax.fori_loop(0, steps, body, (x, v, key))
    return x, v
