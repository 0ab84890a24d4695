"""What the studies need to know about JAX, Numba and PyTorch code, asked without importing any of them.

A leaf of the numerics: each question looks at the object it is given and at ``sys.modules``
(a framework the code under test uses is imported already), so a claim that uses none of
them pays nothing, and physverify never imports a framework the claim does not.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, TypeVar

import numpy as np

from physverify.arrays import epsilon, precision_of
from physverify.checks import Result

__all__ = ["is_jax_jitted", "is_numba_dispatcher", "jax_x64_note", "with_note"]


def is_numba_dispatcher(function: Any) -> bool:
    """Whether ``function`` is compiled by Numba (``@njit``/``@jit``): it cannot call a Python closure."""
    return "numba" in sys.modules and type(function).__module__.startswith("numba") and hasattr(function, "py_func")


def is_jax_jitted(function: Any) -> bool:
    """Whether ``function`` is wrapped by ``jax.jit``: its arguments are traced, so a Python function must be static."""
    return "jax" in sys.modules and hasattr(function, "lower") and hasattr(function, "__wrapped__")


def jax_x64_note(value: Any) -> str:
    """The note for a result a JAX code computed in float32 because ``jax_enable_x64`` is off; "" otherwise.

    JAX computes in float32 unless x64 is enabled, whatever precision its input had: its
    round-off is near 1e-7, and a study that expects float64's would misread it.
    """
    if not type(value).__module__.startswith(("jax", "jaxlib")) or "jax" not in sys.modules:
        return ""
    dtype = precision_of(value)
    if dtype != np.float32:  # float16 or bfloat16 is the code's own choice, which x64 does not change
        return ""
    jax = sys.modules["jax"]
    if bool(getattr(getattr(jax, "config", None), "jax_enable_x64", False)):
        return ""  # float32 asked for on purpose, with x64 on
    return (f"jax_enable_x64 is off: the code computes in {dtype.name}, so its round-off is near "
            f"{epsilon(dtype):.1e}; call jax.config.update(\"jax_enable_x64\", True) "
            "before the code runs to judge it in float64")


def numba_first_order(rhs: Any, kick: Any, like: np.ndarray) -> Any:
    """``f(t, y) = rhs(t, y) + kick(t)`` compiled with Numba, for an ``@njit`` step that calls the f it is given.

    A compiled step can call only compiled functions: the code's own ``rhs`` is called as
    compiled code when it is (so what runs is the code under test, compiled), and the
    manufactured forcing, a Python function, in an object-mode block.
    """
    import numba

    kind = numba.typeof(np.ascontiguousarray(like))

    def kick_at(t: float) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(kick(t), like.shape), dtype=like.dtype)

    if is_numba_dispatcher(rhs):
        def forced(t: float, y: Any) -> Any:
            with numba.objmode(s=kind):
                s = kick_at(t)
            return rhs(t, y) + s
    else:
        def rhs_at(t: float, y: Any) -> np.ndarray:
            return np.ascontiguousarray(np.broadcast_to(rhs(t, y), like.shape), dtype=like.dtype)

        def forced(t: float, y: Any) -> Any:
            with numba.objmode(s=kind):
                s = rhs_at(t, y) + kick_at(t)
            return s
    return numba.njit(forced)


def numba_second_order(accel: Any, kick: Any, like: np.ndarray) -> Any:
    """``a(x, v, t) = accel(x, v, t) + kick(x, v, t)`` compiled with Numba, as ``numba_first_order`` for f."""
    import numba

    kind = numba.typeof(np.ascontiguousarray(like))

    def kick_at(x: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(kick(x, v, t), like.shape), dtype=like.dtype)

    if is_numba_dispatcher(accel):
        def forced(x: Any, v: Any, t: float) -> Any:
            with numba.objmode(s=kind):
                s = kick_at(x, v, t)
            return accel(x, v, t) + s
    else:
        def accel_at(x: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
            return np.ascontiguousarray(np.broadcast_to(accel(x, v, t), like.shape), dtype=like.dtype)

        def forced(x: Any, v: Any, t: float) -> Any:
            with numba.objmode(s=kind):
                s = accel_at(x, v, t) + kick_at(x, v, t)
            return s
    return numba.njit(forced)


def jax_traceable(code: Any, kick: Any) -> Any:
    """``code(*args) + kick(*args)`` that a ``jax.jit`` step can trace: the forcing runs as a host callback.

    ``code`` is the code's own right-hand side or acceleration, traced with the step; the
    callback gets the same arguments as NumPy values and returns the forcing in the dtype of
    what ``code`` gave (float32 when x64 is off: the code's own precision).
    """
    import jax

    def forced(*args: Any) -> Any:
        value = code(*args)
        shape = jax.ShapeDtypeStruct(np.shape(value), value.dtype)

        def host(*host_args: Any) -> np.ndarray:
            return np.asarray(np.broadcast_to(kick(*host_args), shape.shape), dtype=shape.dtype)

        return value + jax.pure_callback(host, shape, *args)

    return forced


JAX_STATIC_HINT = ("a jax.jit step takes f as a traced argument, and a function cannot be traced: compile it with "
                   "the function static (jax.jit(step, static_argnums=0), as for jax.lax loops), or pass the step "
                   "without jax.jit")


ResultT = TypeVar("ResultT", bound=Result)


def with_note(result: ResultT, note: str) -> ResultT:
    """``result`` with ``note`` added to its message (the status is kept); unchanged when there is no note."""
    if not note:
        return result
    return dataclasses.replace(result, message=f"{result.message}; {note}" if result.message else note)
