"""arrays: what the code returned as a numpy array of its own dtype, and the precision it computed in."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from physverify.arrays import as_array, epsilon, precision_of


class _ArrayOnly:
    """An array of some other library that speaks numpy's __array__ protocol only."""

    def __init__(self, values: np.ndarray[Any, Any]) -> None:
        self._values = values
        self.conversions = 0

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
        self.conversions += 1
        return self._values if dtype is None else self._values.astype(dtype)


class _DLPackOnly:
    """An array that shares its memory through DLPack only (as a GPU-capable library's CPU tensor)."""

    def __init__(self, values: np.ndarray[Any, Any]) -> None:
        self._values = values

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._values.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._values.__dlpack_device__()


class _RefusesArray(_DLPackOnly):
    """A tensor whose __array__ refuses (it requires grad, say) but whose DLPack export works."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad")


def test_a_numpy_array_is_returned_as_it_is() -> None:
    values = np.arange(4, dtype=np.float32)
    assert as_array(values) is values


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble, np.complex64])
def test_numpy_scalars_and_arrays_keep_their_dtype(dtype: Any) -> None:
    assert as_array(dtype(1.5)).dtype == np.dtype(dtype)
    assert as_array(np.ones(3, dtype=dtype)).dtype == np.dtype(dtype)


def test_an_array_protocol_object_is_converted_once_with_its_dtype() -> None:
    other = _ArrayOnly(np.linspace(0.0, 1.0, 5, dtype=np.float32))
    converted = as_array(other)
    assert converted.dtype == np.float32 and other.conversions == 1
    assert np.array_equal(converted, np.linspace(0.0, 1.0, 5, dtype=np.float32))


def test_a_dlpack_only_object_is_read_through_dlpack() -> None:
    converted = as_array(_DLPackOnly(np.array([1.0, 2.0], dtype=np.float16)))
    assert converted.dtype == np.float16 and converted.tolist() == [1.0, 2.0]


def test_an_array_that_refuses_numpy_falls_back_to_dlpack() -> None:
    assert as_array(_RefusesArray(np.array([3.0], dtype=np.float32))).dtype == np.float32


def test_an_object_that_is_no_array_raises_the_numpy_error() -> None:
    class Refuses:
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
            raise TypeError("no")

    with pytest.raises(TypeError, match="no"):
        as_array(Refuses())


@pytest.mark.parametrize(("value", "expected"), [
    (np.float16(1.0), np.float16), (np.ones(2, np.float32), np.float32), (np.ones(2), np.float64),
    (np.ones(2, np.longdouble), np.longdouble), (1.0, np.float64), ([1.0, 2.0], np.float64),
    (np.ones(2, np.complex64), np.float32), (np.ones(2, np.complex128), np.float64), (2j, np.float64),
])
def test_precision_is_the_floating_dtype_and_complex_maps_to_its_real_part(value: Any, expected: Any) -> None:
    assert precision_of(value) == np.dtype(expected)


@pytest.mark.parametrize("value", [np.arange(3), 3, True, "text", None, [], np.array(["a"]), [1, 2]])
def test_precision_of_something_holding_no_float_is_none(value: Any) -> None:
    assert precision_of(value) is None


def test_precision_of_parts_is_that_of_the_least_precise_part() -> None:
    assert precision_of((np.ones(2), np.ones(2, np.float32))) == np.float32
    assert precision_of({"x": np.ones(1, np.float16), "v": np.ones(1)}) == np.float16
    assert precision_of([np.arange(2), np.ones(2)]) == np.float64


def test_precision_of_a_protocol_object_is_its_dtype() -> None:
    assert precision_of(_ArrayOnly(np.ones(2, np.float32))) == np.float32
    assert precision_of(_DLPackOnly(np.ones(2, np.float16))) == np.float16


def test_epsilon_of_numpy_and_extension_types() -> None:
    assert epsilon(np.float32) == float(np.finfo(np.float32).eps)
    assert epsilon("float64") == float(np.finfo(np.float64).eps)
    assert epsilon(np.complex64) == float(np.finfo(np.float32).eps)
    with pytest.raises(TypeError, match="floating dtype"):
        epsilon(np.int32)


def test_jax_arrays_keep_their_precision_without_physverify_importing_jax() -> None:
    jnp = pytest.importorskip("jax.numpy")
    single = jnp.linspace(0.0, 1.0, 4, dtype=jnp.float32)
    assert as_array(single).dtype == np.float32
    assert precision_of(single) == np.float32
    half = jnp.ones(3, dtype=jnp.bfloat16)
    assert precision_of(half) is not None and epsilon(precision_of(half)) == 2.0**-7  # type: ignore[arg-type]


def test_importing_arrays_imports_no_framework() -> None:
    import subprocess

    code = "import sys, physverify.arrays; print(sorted(m for m in ('jax', 'torch', 'cupy', 'numba') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
