"""What the code under test returned, as numpy sees it, and the precision it was computed in.

A leaf of the numerics: it imports numpy only, never a framework. An array of JAX, PyTorch,
CuPy, Warp or any other library arrives through the two protocols numpy itself reads
(``__array__`` and ``__dlpack__``), converted once, with its dtype kept: a float32 result
must stay float32 so the studies judge it against float32 round-off, not float64's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["as_array", "epsilon", "precision_of"]

# Machine epsilon of the 16- and 8-bit floating types that numpy does not know but ml_dtypes
# (JAX's dtypes) registers: numpy.finfo cannot describe them without importing ml_dtypes.
# bfloat16 keeps 7 fraction bits (eps 2**-7); the float8 formats keep 3 (e4m3) or 2 (e5m2).
_EXTENSION_EPS = {
    "bfloat16": 2.0**-7,
    "float8_e4m3fn": 2.0**-3,
    "float8_e4m3fnuz": 2.0**-3,
    "float8_e4m3b11fnuz": 2.0**-3,
    "float8_e4m3": 2.0**-3,
    "float8_e5m2": 2.0**-2,
    "float8_e5m2fnuz": 2.0**-2,
}

_REAL_OF_COMPLEX: dict[np.dtype[Any], np.dtype[Any]] = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64),
                    np.dtype(np.clongdouble): np.dtype(np.longdouble)}


def as_array(x: Any) -> np.ndarray[Any, Any]:
    """The value as a numpy array of its own dtype (a numpy array itself is returned unchanged)."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, np.generic) or not (hasattr(x, "__array__") or hasattr(x, "__dlpack__")):
        return np.asarray(x)
    if hasattr(x, "__array__"):
        try:
            return np.asarray(x)
        except (TypeError, RuntimeError, ValueError):
            # A tensor that refuses __array__ (one that requires grad, say) may still share
            # its memory through DLPack; if it cannot either, the DLPack error is the one to show.
            if not hasattr(x, "__dlpack__"):
                raise
    return np.from_dlpack(x)


def precision_of(x: Any) -> np.dtype[Any] | None:
    """The floating dtype the value was computed in (complex: its real part), or None if it holds no float.

    A tuple, list or mapping of results (a position and a velocity) has the precision of its
    least precise floating part, since that part's round-off is the one the error shows.
    """
    if isinstance(x, Mapping):
        return _least_precise(precision_of(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        if all(isinstance(v, (int, float, complex, bool)) for v in x):
            return precision_of(np.asarray(x)) if x else None
        return _least_precise(precision_of(v) for v in x)
    if isinstance(x, float):
        return np.dtype(np.float64)
    if isinstance(x, complex):
        return np.dtype(np.float64)
    dtype = _dtype_of(x)
    if dtype is None:
        return None
    if dtype in _REAL_OF_COMPLEX:
        return _REAL_OF_COMPLEX[dtype]
    if np.issubdtype(dtype, np.floating) or dtype.name in _EXTENSION_EPS:
        return dtype
    return None


def epsilon(dtype: np.dtype[Any] | type[Any] | str) -> float:
    """Machine epsilon of a floating dtype, numpy's own or one of ml_dtypes' (bfloat16, float8)."""
    resolved = np.dtype(dtype)
    if resolved.name in _EXTENSION_EPS:
        return _EXTENSION_EPS[resolved.name]
    if resolved in _REAL_OF_COMPLEX:
        resolved = _REAL_OF_COMPLEX[resolved]
    if not np.issubdtype(resolved, np.floating):
        raise TypeError(f"precision must be a floating dtype (float16, float32, float64, longdouble), not {resolved}")
    return float(np.finfo(resolved).eps)


def _dtype_of(x: Any) -> np.dtype[Any] | None:
    """The dtype of an array of any library, read without converting it when it says its numpy dtype."""
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    declared = getattr(x, "dtype", None)
    if isinstance(declared, np.dtype):
        return declared  # JAX, CuPy and numpy-like arrays carry a numpy dtype: no copy needed
    if hasattr(x, "__array__") or hasattr(x, "__dlpack__"):
        try:
            return as_array(x).dtype
        except (TypeError, RuntimeError, ValueError, BufferError):
            return None
    return None


def _least_precise(dtypes: Any) -> np.dtype[Any] | None:
    """The dtype with the largest epsilon among those given (None where none is floating)."""
    found = [d for d in dtypes if d is not None]
    if not found:
        return None
    return max(found, key=epsilon)
