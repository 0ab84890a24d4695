"""Random numbers from a study's seed in the form a code takes them: JAX keys, and the global generators.

``jax_key(rng)`` turns draws of the study's NumPy generator into a JAX key, every bit kept;
``seeded(rng)`` seeds the global generators a code may draw from (NumPy's legacy ``np.random``,
Python's ``random``, torch's and CuPy's where the code imported them) and puts them back
afterwards. A leaf of the numerics: no framework is imported that the code did not import.

Numba's jitted ``np.random`` keeps a state of its own, which no Python call reaches: seed it
from inside compiled code (docs/real-code.md, "Codes in JAX, Numba and PyTorch")::

    @numba.njit
    def seed_numba(seed):
        np.random.seed(seed)

    seed_numba(int(rng.integers(2**32)))
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["jax_key", "seeded"]

# np.random.seed takes 32 bits; the one seed given to every global generator fits them all
_SEED_BOUND = 2**32


def jax_key(rng: np.random.Generator) -> Any:
    """A new JAX key made of 32-bit words drawn from ``rng``: as many as the key's implementation holds.

    ``jax.random.key(int)`` takes a 64-bit seed only with ``jax_enable_x64`` on; with it off,
    a seed above 2**32 keeps its low 32 bits without a word. The key's own words are drawn here
    and wrapped as they are (``jax.random.wrap_key_data``), so nothing is dropped in either mode.
    """
    import jax

    width = _key_words(jax)
    words = rng.integers(0, _SEED_BOUND, size=width, dtype=np.uint32)
    return jax.random.wrap_key_data(jax.numpy.asarray(words, dtype=np.uint32))


def _key_words(jax: Any) -> int:
    """How many 32-bit words the default key implementation holds (2 for threefry2x32, 4 for rbg)."""
    return int(np.prod(jax.random.key_data(jax.random.key(0)).shape))


@contextmanager
def seeded(rng: np.random.Generator | int) -> Iterator[int]:
    """Seed every global generator the code can reach from ``rng`` (or a seed); restore them all afterwards.

    For code that draws from global state (``np.random.randn``, ``np.random.seed`` in a
    constructor, ``random.random``, ``torch.randn``, ``cupy.random``): inside the block they
    draw what the study's seed chooses, so a replay draws the same sample; after it, each is
    as it was. Yields the 32-bit seed given to all of them (drawn from ``rng``, or ``rng``
    itself when it is an int below 2**32), for the claim to record.
    """
    seed = _seed_from(rng)
    saved = _states()
    try:
        np.random.seed(seed)
        random.seed(seed)
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.manual_seed(seed)
        cupy = sys.modules.get("cupy")
        if cupy is not None:  # a new generator for the block: cupy.random.seed would reseed the saved one in place
            cupy.random.set_random_state(cupy.random.RandomState(seed))
        yield seed
    finally:
        _restore(saved)


def _seed_from(rng: np.random.Generator | int) -> int:
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, _SEED_BOUND))
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and 0 <= rng < _SEED_BOUND:
        return int(rng)
    raise ValueError(f"seeded takes the study's rng or a seed from 0 to 2**32 - 1 (what np.random.seed keeps whole), "
                     f"not {rng!r}")


def _states() -> dict[str, Any]:
    """The state of every global generator ``seeded`` sets, to put back afterwards."""
    states: dict[str, Any] = {"numpy": np.random.get_state(), "random": random.getstate()}
    torch = sys.modules.get("torch")
    if torch is not None:
        states["torch"] = torch.random.get_rng_state()
        if torch.cuda.is_initialized():
            states["torch.cuda"] = torch.cuda.get_rng_state_all()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        states["cupy"] = cupy.random.get_random_state()
    return states


def _restore(states: dict[str, Any]) -> None:
    np.random.set_state(states["numpy"])
    random.setstate(states["random"])
    torch = sys.modules.get("torch")
    if "torch" in states and torch is not None:
        torch.random.set_rng_state(states["torch"])
        if "torch.cuda" in states:
            torch.cuda.set_rng_state_all(states["torch.cuda"])
    cupy = sys.modules.get("cupy")
    if "cupy" in states and cupy is not None:
        cupy.random.set_random_state(states["cupy"])  # untouched by the block, which drew from its own
