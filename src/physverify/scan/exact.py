"""Exact numbers for Butcher coefficients: rationals, and rationals plus a multiple of one square root.

Order conditions are equalities; a float table that misses one by 1e-17 and a table that
misses it by a wrong coefficient look alike in floating point. So coefficients written as
integers, fractions and short decimals are read as ``Fraction``, and the Gauss-Legendre
nodes (1/2 +- sqrt(3)/6, sqrt(15)/10) as ``a + b*sqrt(d)`` with rational a and b
(Hairer, Norsett, Wanner, Solving ODEs I, sec. II.7: the collocation methods). A table that
mixes two different square roots, or holds long decimals, is judged in floats instead
(``Inexact`` says so, and the caller switches).
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections.abc import Iterable
from typing import Union


class Inexact(Exception):
    """A value that this exact arithmetic cannot hold (two different square roots, a long decimal)."""


def _squarefree(n: int) -> tuple[int, int]:
    """(k, d) with n == k*k*d and d free of squares, for 0 < n < 10**6."""
    if n <= 0 or n >= 10**6:
        raise Inexact(f"sqrt({n})")
    k, d, p = 1, n, 2
    while p * p <= d:
        while d % (p * p) == 0:
            d //= p * p
            k *= p
        p += 1
    return k, d


class Surd:
    """a + b*sqrt(d): a, b rational, d a square-free integer > 1, or d == 1 with b == 0 (a rational)."""

    __slots__ = ("a", "b", "d")

    def __init__(self, a: Fraction | int, b: Fraction | int = 0, d: int = 1) -> None:
        self.a, self.b, self.d = Fraction(a), Fraction(b), d if b else 1

    @classmethod
    def sqrt(cls, n: Fraction) -> Surd:
        """The square root of a non-negative rational n."""
        num, den = n.numerator, n.denominator
        k, d = _squarefree(num * den)  # sqrt(num/den) = sqrt(num*den)/den
        return cls(Fraction(k, den), 0, 1) if d == 1 else cls(0, Fraction(k, den), d)

    def _common(self, other: Surd) -> int:
        if self.d != 1 and other.d != 1 and self.d != other.d:
            raise Inexact("two different square roots")
        return max(self.d, other.d)

    def __add__(self, other: Num) -> Surd:
        o = as_surd(other)
        return Surd(self.a + o.a, self.b + o.b, self._common(o))

    __radd__ = __add__

    def __neg__(self) -> Surd:
        return Surd(-self.a, -self.b, self.d)

    def __sub__(self, other: Num) -> Surd:
        return self + (-as_surd(other))

    def __rsub__(self, other: Num) -> Surd:
        return as_surd(other) - self

    def __mul__(self, other: Num) -> Surd:
        o = as_surd(other)
        d = self._common(o)
        return Surd(self.a * o.a + self.b * o.b * d, self.a * o.b + self.b * o.a, d)

    __rmul__ = __mul__

    def inverse(self) -> Surd:
        norm = self.a * self.a - self.b * self.b * self.d  # (a + b r)(a - b r); never 0 for irrational r unless both 0
        if norm == 0:
            raise ZeroDivisionError("division by zero")
        return Surd(self.a / norm, -self.b / norm, self.d)

    def __truediv__(self, other: Num) -> Surd:
        return self * as_surd(other).inverse()

    def __rtruediv__(self, other: Num) -> Surd:
        return as_surd(other) * self.inverse()

    def __pow__(self, n: int) -> Surd:
        result, base = Surd(1), self if n >= 0 else self.inverse()
        for _ in range(abs(n)):
            result = result * base
        return result

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, Fraction, Surd)):
            o = as_surd(other)
            return (self.a, self.b) == (o.a, o.b) and (self.b == 0 or self.d == o.d)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.a, self.b, self.d))

    def __float__(self) -> float:
        return float(self.a) + float(self.b) * math.sqrt(self.d)

    def is_rational(self) -> bool:
        return self.b == 0

    def __repr__(self) -> str:
        return str(self.a) if self.b == 0 else f"{self.a} + {self.b}*sqrt({self.d})"


Num = Union[int, Fraction, Surd]


def as_surd(value: Num) -> Surd:
    return value if isinstance(value, Surd) else Surd(Fraction(value))


def decimal(text: str) -> Fraction:
    """A float literal's exact decimal value when it is short (up to 8 digits after the point), else Inexact.

    0.5 and 0.125 are the coefficients their authors meant; 0.3333333333 is a rounded 1/3 and
    holds no order condition exactly, so such a table is judged in floats.
    """
    mantissa = text.lower().replace("_", "").split("e")[0]
    digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
    if digits > 8:
        raise Inexact(text)
    return Fraction(text.replace("_", ""))


def one_root(values: Iterable[object]) -> None:
    """Inexact unless every surd among ``values`` is a multiple of one and the same square root."""
    roots = {v.d for v in values if isinstance(v, Surd) and v.d != 1}
    if len(roots) > 1:
        raise Inexact("two different square roots")
