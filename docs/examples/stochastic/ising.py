"""Single-spin-flip Metropolis for the Ising ring, the code under test (it carries one defect)."""
import math


def metropolis_sweep(spins, beta, rng, coupling=1.0):
    """One sweep (as many proposals as spins) at inverse temperature beta; spins is a list of +1/-1, changed in place."""
    n = len(spins)
    sites = rng.integers(0, n, n).tolist()
    uniforms = rng.random(n).tolist()
    for i, u in zip(sites, uniforms):
        delta = 2.0 * coupling * spins[i] * (spins[i - 1] + spins[(i + 1) % n])  # energy change of flipping spin i
        if delta <= 0 or u < math.exp(beta * delta):
            spins[i] = -spins[i]
    return spins


def energy(spins, coupling=1.0):
    """E = -J sum_i s_i s_(i+1) on the periodic ring."""
    return -coupling * sum(s * t for s, t in zip(spins, spins[1:] + spins[:1]))
