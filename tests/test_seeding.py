"""seeding.py: JAX keys from the study's generator, and the global generators seeded and put back."""

from __future__ import annotations

import random

import numpy as np
import pytest

from physverify import mean_study, seeded
from physverify.seeding import jax_key


class ConstructorSeeded:
    """A code that seeds NumPy's global generator in its constructor and draws from it afterwards."""

    def __init__(self, seed: int | None = None) -> None:
        np.random.seed(seed)

    def steps(self, m: int) -> np.ndarray:
        return np.random.standard_normal(m)


def _sample(m: int, rng: np.random.Generator) -> np.ndarray:
    with seeded(rng) as seed:
        return ConstructorSeeded(seed).steps(m)


def test_a_code_seeding_numpys_global_generator_in_its_constructor_is_judged_deterministically_through_seeded() -> None:
    np.random.seed(123)
    random.seed(7)
    numpy_before, python_before = np.random.get_state(), random.getstate()
    first, second = (mean_study(_sample, 0.0, tol=0.1, n=4000) for _ in range(2))
    assert first.status == "PASS" and first == second  # the same draw, message and numbers each time
    numpy_after = np.random.get_state()
    assert all(np.array_equal(a, b) for a, b in zip(numpy_before, numpy_after)) and random.getstate() == python_before


def test_seeded_restores_the_global_generators_when_the_block_raises() -> None:
    np.random.seed(9)
    state = np.random.get_state()[1].copy()
    with pytest.raises(ZeroDivisionError), seeded(np.random.default_rng(0)):
        np.random.random(5)
        raise ZeroDivisionError
    assert np.array_equal(np.random.get_state()[1], state)


@pytest.mark.parametrize("seed", [2**32, -1, True, 1.5])
def test_seeded_refuses_a_seed_numpys_global_generator_would_not_keep_whole(seed: object) -> None:
    with pytest.raises(ValueError, match="2\\*\\*32"), seeded(seed):  # type: ignore[arg-type]
        pass


def test_a_jax_key_is_the_generators_own_words_so_no_bit_of_the_draw_is_dropped() -> None:
    jax = pytest.importorskip("jax")
    words = np.random.default_rng(5).integers(0, 2**32, size=2, dtype=np.uint32)
    key = jax_key(np.random.default_rng(5))
    assert np.array_equal(np.asarray(jax.random.key_data(key)), words)


def test_a_key_sampler_gets_a_new_key_at_every_call_and_the_seed_chooses_them() -> None:
    jax = pytest.importorskip("jax")
    keys: list[np.ndarray] = []

    def sample(m: int, key: object) -> object:
        keys.append(np.asarray(jax.random.key_data(key)))
        return jax.random.normal(key, (m,))

    result = mean_study(sample, 0.0, tol=0.2, n=1000, key_sampler=True, seed=3)
    again = mean_study(sample, 0.0, tol=0.2, n=1000, key_sampler=True, seed=3)
    assert result == again and result.status == "PASS"
    assert "a JAX key of its words per call" in result.message
    other = mean_study(sample, 0.0, tol=0.2, n=1000, key_sampler=True, seed=4)
    assert other.estimate != result.estimate


def test_numbas_own_generator_is_reached_only_by_a_jitted_seeding_function_and_the_message_says_so() -> None:
    numba = pytest.importorskip("numba")

    @numba.njit
    def steps(m: int) -> np.ndarray:  # the code under test draws from Numba's own np.random
        return np.random.standard_normal(m)

    @numba.njit
    def seed_numba(seed: int) -> None:
        np.random.seed(seed)

    unseeded = mean_study(lambda m, rng: steps(m), 0.0, tol=0.1, n=4000)
    assert unseeded.status == "INCONCLUSIVE" and "Numba's jitted np.random" in unseeded.message

    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        seed_numba(int(rng.integers(2**32)))
        return steps(m)

    first, second = (mean_study(sample, 0.0, tol=0.1, n=4000) for _ in range(2))
    assert first.status == "PASS" and first == second
