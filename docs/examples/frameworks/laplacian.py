"""A periodic centred second difference in jax.numpy, with a defect to find (written for physverify's docs).

Without jax_enable_x64, JAX computes it in float32 whatever the input.
"""
import jax.numpy as jnp


def laplacian(u, dx):
    u = jnp.asarray(u)
    return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx
