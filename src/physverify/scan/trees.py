"""The order of a Runge-Kutta method from its coefficients: the order conditions over rooted trees.

A method (A, b, c) has order p when, for every rooted tree t with at most p vertices, its
elementary weight equals the exact solution's, Phi(t) = 1/gamma(t) (Butcher, Numerical
Methods for ODEs, sec. 31x: order conditions; Hairer, Norsett, Wanner, Solving ODEs I,
sec. II.2, Theorem 2.13). A tree is the sorted tuple of its subtrees (the single vertex is
``()``), so each tree has one spelling and the trees of an order are generated once.

The textbook conditions take c = A*1. A stepper that evaluates a stage at a time that is
not the sum of its increments (k3 at t + h where the increments sum to h/2) is a
partitioned method: t advances with nodes c, y with A. Its conditions are the same trees
with each leaf taking either A*1 (a y-leaf) or c (a t-leaf, since dt/dt = 1 has no
further derivatives), so ``order(..., nonautonomous=True)`` asks every such colouring.
The number of trees up to order 8 is 200; every sum here is over at most s stages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import product
from typing import Any

Tree = tuple[Any, ...]  # a sorted tuple of trees
MAX_ORDER = 8


def _key(tree: Tree) -> tuple[int, str]:
    return size(tree), repr(tree)


@lru_cache(maxsize=None)
def size(tree: Tree) -> int:
    return 1 + sum(size(child) for child in tree)


@lru_cache(maxsize=None)
def gamma(tree: Tree) -> int:
    """The density gamma(t): |t| times the densities of its subtrees (Butcher sec. 30x)."""
    result = size(tree)
    for child in tree:
        result *= gamma(child)
    return result


@lru_cache(maxsize=None)
def trees(order: int) -> tuple[Tree, ...]:
    """Every rooted tree with ``order`` vertices, each once (1, 1, 2, 4, 9, 20, 48, 115 for orders 1 to 8)."""
    if order == 1:
        return ((),)
    found: set[Tree] = set()
    for parts in _partitions(order - 1):
        for choice in product(*(trees(p) for p in parts)):
            found.add(tuple(sorted(choice, key=_key)))
    return tuple(sorted(found, key=_key))


def _partitions(n: int, largest: int | None = None) -> Iterator[tuple[int, ...]]:
    """Partitions of n into non-increasing parts."""
    largest = n if largest is None else largest
    if n == 0:
        yield ()
        return
    for first in range(min(n, largest), 0, -1):
        for rest in _partitions(n - first, first):
            yield (first,) + rest


class Method:
    """A Butcher table over any number type with +, * and a test of equality (exact or within a tolerance)."""

    def __init__(self, a: Sequence[Sequence[Any]], b: Sequence[Any], c: Sequence[Any],
                 equal: Callable[[Any, Any], bool], one: Any) -> None:
        self.a, self.b, self.c, self.equal, self.one = a, b, c, equal, one
        self.s = len(b)
        self.row_sums = [sum(row, one * 0) for row in a]

    def _times_a(self, v: Sequence[Any]) -> list[Any]:
        return [sum((self.a[i][j] * v[j] for j in range(self.s)), self.one * 0) for i in range(self.s)]

    def _weights(self, tree: Tree, leaf: Sequence[Any], memo: dict[Tree, list[Any]]) -> list[Any]:
        """The stage vector of ``tree``: the product over its children of A times theirs, leaves as ``leaf``."""
        if tree in memo:
            return memo[tree]
        vector = [self.one] * self.s
        for child in tree:
            factor = leaf if child == () else self._times_a(self._weights(child, leaf, memo))
            vector = [x * y for x, y in zip(vector, factor)]
        memo[tree] = vector
        return vector

    def holds(self, tree: Tree, nonautonomous: bool = False) -> bool:
        """Whether b . Phi(tree) == 1/gamma(tree), for every colouring of the leaves when ``nonautonomous``."""
        target = self.one / gamma(tree)
        if not nonautonomous or all(self.equal(x, y) for x, y in zip(self.c, self.row_sums)):
            return self._holds_with(tree, None, target)
        return all(self._holds_with(tree, colours, target) for colours in _colourings(tree))

    def _holds_with(self, tree: Tree, colours: tuple[bool, ...] | None, target: Any) -> bool:
        vector = self._coloured(tree, iter(colours) if colours is not None else None)
        return self.equal(sum((bi * v for bi, v in zip(self.b, vector)), self.one * 0), target)

    def _coloured(self, tree: Tree, colours: Iterator[bool] | None) -> list[Any]:
        """The stage vector with each leaf, in order, taking c (True) or A*1 (False)."""
        if colours is None:
            return self._weights(tree, self.row_sums, {})
        vector = [self.one] * self.s
        for child in tree:
            if child == ():
                factor = self.c if next(colours) else self.row_sums
            else:
                factor = self._times_a(self._coloured(child, colours))
            vector = [x * y for x, y in zip(vector, factor)]
        return vector

    def order(self, up_to: int = MAX_ORDER, nonautonomous: bool = False) -> int:
        """The largest p <= up_to with every condition of order <= p holding (0: the weights do not sum to 1)."""
        for p in range(1, up_to + 1):
            if not all(self.holds(tree, nonautonomous) for tree in trees(p)):
                return p - 1
        return up_to


def _leaves(tree: Tree) -> int:
    return sum(1 if child == () else _leaves(child) for child in tree)


def _colourings(tree: Tree) -> Iterator[tuple[bool, ...]]:
    """Each leaf below the root a y-leaf (False) or a t-leaf (True)."""
    return product((False, True), repeat=_leaves(tree))


def first_failing(method: Method, order: int, nonautonomous: bool = False) -> Tree | None:
    """The first tree of ``order`` whose condition fails, or None."""
    return next((t for t in trees(order) if not method.holds(t, nonautonomous)), None)


def condition_text(tree: Tree) -> str:
    """A condition in Butcher's words: "order 3: sum b_i c_i^2 = 1/3" for the bushy trees, else the tree and gamma."""
    n = size(tree)
    if all(child == () for child in tree):
        k = len(tree)
        power = "" if k == 0 else " c_i" if k == 1 else f" c_i^{k}"
        return f"sum b_i{power} = {'1' if gamma(tree) == 1 else f'1/{gamma(tree)}'}"
    return f"the order-{n} condition of the tree {_spell(tree)} (gamma = {gamma(tree)})"


def _spell(tree: Tree) -> str:
    return "[" + ",".join("." if child == () else _spell(child) for child in tree) + "]" if tree else "."


