"""Physics codes written in JAX and Numba for the framework tests, and a claim on each.

Each ``CODES`` entry is the code under test with its defect (``defect`` -> ``fix`` restores the
book's line); each ``CLAIMS`` entry a claim file on it, run unchanged by ``physverify confirm``.
"""

from __future__ import annotations

from pathlib import Path

# Underdamped Langevin dynamics, dv = (F/m - gamma v) dt + sqrt(2 gamma kT / m) dW, one
# Euler-Maruyama step per call, all replicas at once. Defect: the force where force over mass
# belongs (as in jax-md's integrator before its fix).
LANGEVIN = '''\
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
'''
LANGEVIN_DEFECT, LANGEVIN_FIX = "accel = force(x)", "accel = force(x) / mass"

# Metropolis sampling of a density exp(-U), all chains at once. Defect: the acceptance test
# with +Exp(1) where -Exp(1) belongs (log u = -Exp(1) for u uniform), as in fab-jax before its fix.
METROPOLIS = '''\
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
'''
METROPOLIS_DEFECT, METROPOLIS_FIX = "threshold = jax.random.exponential(k_acc, x.shape)", \
    "threshold = -jax.random.exponential(k_acc, x.shape)"

# Classical RK4 compiled with Numba. Defect: k3 evaluated at t + h.
RK4_NJIT = '''\
from numba import njit


@njit
def rk4_step(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@njit
def decay(t, y):
    return -y
'''
RK4_DEFECT, RK4_FIX = "k3 = f(t + h, y + h / 2 * k2)", "k3 = f(t + h / 2, y + h / 2 * k2)"

# A periodic second-difference Laplacian in jax.numpy, float32 as JAX computes by default.
# Defect: divided by dx where dx**2 belongs.
LAPLACIAN = '''\
import jax.numpy as jnp


def laplacian(u, dx):
    u = jnp.asarray(u)
    return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx
'''
LAPLACIAN_DEFECT, LAPLACIAN_FIX = "return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx", \
    "return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx**2"

_CLAIM_KEYS = '''\
CLAIM = {{
    "text": {text!r},
    "source": "a test written from the physics",
    "file": {file!r},
    "line": 1,
    "reference": {reference!r},
    "impact": "used",
    "defect": {defect!r},
    "fix": {fix!r},
}}
'''

LANGEVIN_CLAIM = '''\
import jax.numpy as jnp
from physverify import Check, mean_study

import langevin

{claim}
KT, GAMMA, DT, STEPS = 1.0, 1.0, 0.01, 1500


def positions_squared(mass):
    """sample(m, key): x**2 of m independent replicas in the potential x**2 / 2, from rest at x = 1."""
    def sample(m, key):
        x, _ = langevin.langevin_run(key, jnp.ones(m), jnp.zeros(m), lambda x: -x, mass, GAMMA, KT, DT, STEPS)
        return x**2
    return sample


def study(mass):
    # equipartition in the potential k x**2 / 2 with k = 1: <x**2> = kT / k whatever the mass
    return mean_study(positions_squared(mass), KT, tol=0.1, n=20_000, seed=11, key_sampler=True)


def control():
    return Check("stochastic", "<x^2> = kT/k at mass 1, where force and force over mass agree", lambda: study(1.0))


def checks():
    return [Check("stochastic", "<x^2> = kT/k at mass 2", lambda: study(2.0))]
'''

METROPOLIS_CLAIM = '''\
import jax
import jax.numpy as jnp
from physverify import Check, mean_study

import metropolis

{claim}


def book_metropolis(key, x, log_density, step_size, steps):
    """Metropolis et al. (1953) written again: accept when log u < log p(x') - log p(x), u uniform."""
    def body(i, state):
        x, key = state
        key, k_prop, k_acc = jax.random.split(key, 3)
        proposal = x + step_size * jax.random.normal(k_prop, x.shape)
        accept = jnp.log(jax.random.uniform(k_acc, x.shape)) < log_density(proposal) - log_density(x)
        return jnp.where(accept, proposal, x), key
    return jax.lax.fori_loop(0, steps, body, (x, key))[0]


def gauss(x):
    return -0.5 * x**2


def second_moment(run):
    """sample(m, key): x**2 of m independent chains after 400 steps from x = 3 targeting the unit normal."""
    def sample(m, key):
        return run(key, jnp.full(m, 3.0), gauss, 1.0, 400) ** 2
    return sample


def study(run):
    return mean_study(second_moment(run), 1.0, tol=0.1, n=20_000, seed=5, key_sampler=True)


def control():
    return Check("stochastic", "the book's Metropolis samples the unit normal: <x^2> = 1",
                 lambda: study(book_metropolis))


def checks():
    return [Check("stochastic", "metropolis() samples the unit normal: <x^2> = 1",
                  lambda: study(metropolis.metropolis))]
'''

RK4_CLAIM = '''\
import numpy as np
from physverify import Check, ManufacturedODE, from_step, mms_order_study

import rk4

{claim}


def study(u):
    mms = ManufacturedODE(u, lambda t, y: -y)
    return mms_order_study(from_step(rk4.rk4_step, rk4.decay), mms, 1.0, [8, 16, 32, 64], 4)


def control():
    # u = exp(-t) needs no forcing: f does not depend on t, so no stage time can matter
    return Check("mms", "RK4 is fourth order on u = exp(-t), where f does not depend on t",
                 lambda: study(lambda t: np.array([np.exp(-t)])))


def checks():
    return [Check("mms", "RK4 is fourth order on u = cos 3t + t^2",
                  lambda: study(lambda t: np.array([np.cos(3.0 * t) + t * t])))]
'''

LAPLACIAN_CLAIM = '''\
import numpy as np
from physverify import Check, operator_study

import laplacian

{claim}


K = 2.0 * np.pi


def book_laplacian(u, dx):
    """The centred second difference written again, in NumPy's float64."""
    return (np.roll(u, -1) - 2.0 * u + np.roll(u, 1)) / dx**2


def study(apply):
    return operator_study(apply, lambda x: np.sin(K * x), lambda x: -K * K * np.sin(K * x), [8, 16, 32, 64], 2)


def control():
    return Check("operator", "the book's Laplacian of sin 2 pi x is second order", lambda: study(book_laplacian))


def checks():
    return [Check("operator", "laplacian() of sin 2 pi x is second order", lambda: study(laplacian.laplacian))]
'''

# name -> (code file, code, claim body, text, reference, defect, fix)
CASES = {
    "langevin": ("langevin.py", LANGEVIN, LANGEVIN_CLAIM, "the step adds the force where force over mass belongs",
                 "Gardiner, Stochastic Methods, sec. 5.3: the Ornstein-Uhlenbeck process; equipartition <x^2> = kT/k",
                 LANGEVIN_DEFECT, LANGEVIN_FIX),
    "metropolis": ("metropolis.py", METROPOLIS, METROPOLIS_CLAIM,
                   "the acceptance threshold is +Exp(1) where log u = -Exp(1) belongs",
                   "Metropolis et al., J. Chem. Phys. 21 (1953) 1087: accept with probability min(1, p'/p)",
                   METROPOLIS_DEFECT, METROPOLIS_FIX),
    "rk4": ("rk4.py", RK4_NJIT, RK4_CLAIM, "k3 is evaluated at t + h instead of t + h/2",
            "Butcher, Numerical Methods for ODEs, sec. 23: the classical RK4 tableau is fourth order",
            RK4_DEFECT, RK4_FIX),
    "laplacian": ("laplacian.py", LAPLACIAN, LAPLACIAN_CLAIM, "the Laplacian divides by dx instead of dx**2",
                  "LeVeque, Finite Difference Methods for ODEs and PDEs, sec. 1.5: the centred second difference",
                  LAPLACIAN_DEFECT, LAPLACIAN_FIX),
}


def write_case(folder: Path, name: str, *, fixed: bool = False) -> Path:
    """The code of ``name`` (its defect, or its fix when ``fixed``) and its claim in ``folder``: the claim's path."""
    file, code, body, text, reference, defect, fix = CASES[name]
    (folder / file).write_text(code.replace(defect, fix) if fixed else code)
    claim = _CLAIM_KEYS.format(text=text, file=file, reference=reference, defect=defect, fix=fix)
    path = folder / f"claim_{name}.py"
    path.write_text(body.format(claim=claim))
    return path
