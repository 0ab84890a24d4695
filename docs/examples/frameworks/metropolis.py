"""Random-walk Metropolis in JAX, all chains at once, with a defect to find (written for physverify's docs)."""
import jax
import jax.numpy as jnp


def metropolis(key, x, log_density, step_size, steps):
    """The chains' states after ``steps`` random-walk Metropolis steps targeting exp(log_density)."""
    def body(i, state):
        x, key = state
        key, k_prop, k_acc = jax.random.split(key, 3)
        proposal = x + step_size * jax.random.normal(k_prop, x.shape)
        threshold = jax.random.exponential(k_acc, x.shape)
        accept = log_density(proposal) - log_density(x) > threshold
        return jnp.where(accept, proposal, x), key
    x, _ = jax.lax.fori_loop(0, steps, body, (x, key))
    return x
