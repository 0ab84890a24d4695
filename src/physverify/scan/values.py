"""Static values of expressions: numbers and arrays of numbers, and polynomials in names.

Nothing is imported or run: an expression is read from its syntax tree, and whatever is
not a literal, a known function of literals (``Fraction``, ``sqrt``, ``np.array``) or a
name bound to one is ``Unknown``. Numbers are exact (exact.py) unless ``exact=False``.
Recursion is bounded by ``MAX_DEPTH``: a hostile file cannot make the reader overflow.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Union

from physverify.scan.exact import Inexact, Num, Surd, as_surd, decimal

MAX_DEPTH = 60


class Unknown(Exception):
    """An expression whose value cannot be read statically."""


# What reading a hostile expression may raise besides Unknown: 1/0, 1e308**2, sqrt(-1), a list times a list.
# Every reader catches this one tuple, and the expression is then unread, never a traceback.
UNREADABLE = (Unknown, ArithmeticError, TypeError, ValueError)


Value = Union[Num, float, list["Value"]]

_ARRAY_MAKERS = frozenset({"array", "asarray", "asanyarray", "tuple", "list"})
_SCALAR_CASTS = frozenset({"float", "float64", "float32", "mpf", "longdouble", "float128", "Float"})
_FRACTIONS = frozenset({"Fraction", "F", "Rational", "mpq"})


def dotted(node: ast.AST) -> str | None:
    """``np.linalg.norm`` for an Attribute chain of Names, the name for a Name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def last_name(node: ast.AST) -> str | None:
    name = dotted(node)
    return None if name is None else name.rsplit(".", 1)[-1]


class Reader:
    """Reads numbers and nested lists of numbers; ``env`` maps names to values already read."""

    def __init__(self, env: Mapping[str, Value], exact: bool = True) -> None:
        self.env, self.exact = env, exact

    def value(self, node: ast.AST, depth: int = 0) -> Value:
        if depth > MAX_DEPTH:
            raise Unknown("nested too deeply")
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return self._literal(node.value)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(item, depth + 1) for item in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.value(node.operand, depth + 1)
            return _map(lambda x: -x, inner) if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.env[node.id]
        raise Unknown(type(node).__name__)

    def _literal(self, value: int | float) -> Value:
        if isinstance(value, int):
            return Fraction(value) if self.exact else float(value)
        if not math.isfinite(value):
            raise Unknown("not finite")
        return decimal(repr(value)) if self.exact else value

    def _binop(self, node: ast.BinOp, depth: int) -> Value:
        left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
        op = _OPS.get(type(node.op))
        if op is None:
            raise Unknown("operator")
        if isinstance(node.op, ast.Pow):
            if isinstance(right, list) or not _small_int(right):
                raise Inexact("a power that is not a small integer") if self.exact else Unknown("power")
        return _broadcast(op, left, right)

    def _call(self, node: ast.Call, depth: int) -> Value:
        name = last_name(node.func)
        args = [self.value(a, depth + 1) for a in node.args if not isinstance(a, ast.Starred)]
        if name in _ARRAY_MAKERS and len(args) == 1:
            return args[0]
        if name in _SCALAR_CASTS and len(args) == 1:
            return args[0]
        if name in _FRACTIONS and 1 <= len(args) <= 2 and not any(isinstance(a, list) for a in args):
            return args[0] / args[1] if len(args) == 2 else args[0]  # type: ignore[operator]
        if name in _FRACTIONS and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            return self._fraction_text(node.args[0].value)
        if name == "sqrt" and len(args) == 1 and not isinstance(args[0], list):
            return self._sqrt(args[0])
        raise Unknown(f"call of {name}")

    def _fraction_text(self, text: str) -> Value:
        try:
            value = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise Unknown("not a fraction") from None
        return value if self.exact else float(value)

    def _sqrt(self, x: Value) -> Value:
        if not self.exact:
            if float(x) < 0:  # type: ignore[arg-type]
                raise Unknown("sqrt of a negative number")
            return math.sqrt(float(x))  # type: ignore[arg-type]
        s = as_surd(x)  # type: ignore[arg-type]
        if not s.is_rational() or s.a < 0:
            raise Inexact("sqrt of an irrational or negative number")
        return Surd.sqrt(s.a)


def _small_int(value: Value) -> bool:
    try:
        return float(value) == int(float(value)) and abs(float(value)) <= 16  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False


def _pow(x: Any, y: Any) -> Any:
    n = int(float(y))
    if isinstance(x, float):
        return x ** n
    return as_surd(x) ** n if isinstance(x, Surd) or n < 0 else x ** n


_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
    ast.Div: lambda x, y: x / y, ast.Pow: _pow,
}


def _map(fn: Callable[[Any], Any], value: Value) -> Value:
    return [_map(fn, v) for v in value] if isinstance(value, list) else fn(value)


def _broadcast(op: Callable[[Any, Any], Any], left: Value, right: Value) -> Value:
    """Elementwise as NumPy does for an array and a scalar, or two arrays of one shape."""
    try:
        if isinstance(left, list) and isinstance(right, list):
            if len(left) != len(right):
                raise Unknown("shapes differ")
            return [_broadcast(op, x, y) for x, y in zip(left, right)]
        if isinstance(left, list):
            return [_broadcast(op, x, right) for x in left]
        if isinstance(right, list):
            return [_broadcast(op, left, y) for y in right]
        return op(left, right)
    except ZeroDivisionError:
        raise Unknown("division by zero") from None
    except OverflowError:
        raise Unknown("overflow") from None
