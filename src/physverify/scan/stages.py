"""Runge-Kutta stages written out in code, read back as a Butcher table without running anything.

    k1 = f(t, y)
    k2 = f(t + h/2, y + h/2*k1)
    ...
    return y + h/6*(k1 + 2*k2 + 2*k3 + k4)

Each expression of the step function is read as a polynomial in its names (t, y, h, ...)
and the stage values K1, K2, ...: a call of the right-hand side is a new stage. A stage's
state argument must read y + h*sum(a_ij K_j) and its time argument t + c_i h, the update
y + h*sum(b_j K_j); anything else (a loop, a call the reader does not know) leaves the
function unread, never guessed at.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from physverify.scan.exact import Inexact, one_root
from physverify.gate.specscan import nodes  # the fast walk: ast.walk's generators cost more than the parse
from physverify.scan.values import UNREADABLE, MAX_DEPTH, Reader, Unknown, dotted

Monomial = tuple[str, ...]  # sorted symbol names, with repeats for powers
_STAGE = "\x00K"  # stage symbols: no Python name starts with NUL
# A stage is linear in the stages with a coefficient of h: a few terms of degree 2. The bounds
# keep a generated file of long polynomial products (order-condition code) from costing seconds.
MAX_TERMS = 64
MAX_DEGREE = 4
# A step function is short; a longer one is a driver or generated code, and reading it as
# stages would cost a walk of all of it for nothing.
MAX_STATEMENTS = 60
MAX_LINES = 200


class Poly:
    """A polynomial in symbols with exact (or float) coefficients."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, Any]) -> None:
        self.terms = {m: c for m, c in terms.items() if c != 0}
        if len(self.terms) > MAX_TERMS:
            raise Unknown("too many terms for a stage")  # products of long sums would grow without bound

    @classmethod
    def symbol(cls, name: str, one: Any) -> Poly:
        return cls({(name,): one})

    def __add__(self, other: Poly) -> Poly:
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms)

    def scale(self, factor: Any) -> Poly:
        return Poly({m: c * factor for m, c in self.terms.items()})

    def __mul__(self, other: Poly) -> Poly:
        terms: dict[Monomial, Any] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                if len(m) > MAX_DEGREE:
                    raise Unknown("a degree no stage has")
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms)

    def constant(self) -> Any | None:
        """The value when the polynomial is a number, else None."""
        if not self.terms:
            return 0
        return self.terms.get(()) if list(self.terms) == [()] else None

    def symbols(self) -> set[str]:
        return {s for m in self.terms for s in m}


@dataclass(frozen=True)
class Stages:
    """A Butcher table read from code, with the line of each stage's call."""

    a: list[list[Any]]
    b: list[Any]
    c: list[Any]
    lines: list[int]
    exact: bool


class Evaluator:
    """Reads one function body in order; calls of ``rhs`` become stages."""

    def __init__(self, rhs: str, numbers: Reader) -> None:
        self.rhs, self.numbers, self.one = rhs, numbers, Fraction(1) if numbers.exact else 1.0
        self.env: dict[str, Poly] = {}
        self.calls: list[tuple[list[Poly], dict[str, Poly], int]] = []
        self.opaque = 0

    def expr(self, node: ast.AST, depth: int = 0) -> Poly:
        if depth > MAX_DEPTH:
            raise Unknown("nested too deeply")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return Poly({(): self.numbers.value(node)})
            # a string or None is no coefficient: a symbol of its own, the same wherever it is written
            return Poly.symbol(f"\x00={node.value!r}", self.one)
        if isinstance(node, ast.Name):
            return self.env.get(node.id) or Poly.symbol(node.id, self.one)
        if isinstance(node, ast.Attribute) and (name := dotted(node)) is not None:
            return self.env.get(name) or Poly.symbol(name, self.one)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.expr(node.operand, depth + 1)
            return inner.scale(-1) if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return self._opaque()

    def _opaque(self) -> Poly:
        self.opaque += 1
        return Poly.symbol(f"\x00?{self.opaque}", self.one)

    def _binop(self, node: ast.BinOp, depth: int) -> Poly:
        left, right = self.expr(node.left, depth + 1), self.expr(node.right, depth + 1)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left + right.scale(-1)
        if isinstance(node.op, ast.Mult):
            return left * right
        divisor = right.constant()
        if isinstance(node.op, ast.Div) and divisor is not None and divisor != 0:
            return left.scale(self.one / divisor)
        return self._opaque()

    def _call(self, node: ast.Call, depth: int) -> Poly:
        if dotted(node.func) == self.rhs:
            args = [self.expr(a, depth + 1) for a in node.args]
            keywords = {k.arg: self.expr(k.value, depth + 1) for k in node.keywords if k.arg is not None}
            self.calls.append((args, keywords, node.lineno))
            return Poly.symbol(f"{_STAGE}{len(self.calls):03d}", self.one)
        try:  # a number written as a call: Fraction(1, 6), np.sqrt(3)
            return Poly({(): self.numbers.value(node)})
        except UNREADABLE:
            return self._opaque()

    def statement(self, node: ast.stmt) -> Poly | None:
        """Bind an assignment's target; a return's value is returned."""
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            self._bind(node.targets[0], self.expr(node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            value = self.expr(ast.BinOp(left=_load(node.target), op=node.op, right=node.value))
            self._bind(node.target, value)
        elif isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            polys = [self.expr(v) for v in values]
            return next((p for p in polys if any(s.startswith(_STAGE) for s in p.symbols())), None)
        return None

    def _bind(self, target: ast.AST, value: Poly) -> None:
        name = dotted(target)
        if name is not None:
            self.env[name] = value


def _load(target: ast.AST) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.Name(id=target.id, ctx=ast.Load())
    return target  # type: ignore[return-value]  # an Attribute or Subscript reads the same


_NOT_RHS = frozenset({"len", "range", "abs", "float", "int", "min", "max", "print", "zip", "enumerate", "sum",
                      "isinstance", "super", "list", "tuple", "dict", "iter", "next", "Fraction", "sqrt", "exp",
                      "sin", "cos", "copy", "deepcopy", "append", "asarray", "array", "zeros", "zeros_like",
                      "empty", "empty_like", "ones", "dot", "norm", "concatenate", "stack", "reshape", "astype"})


_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)


def rhs_candidates(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Callees called in the function's own top-level assignments and return, most called first (at most three).

    Only those statements are looked at, as ``_read`` reads only them: a function without a
    top-level return of a value has no update to read, and is passed over without a walk.
    """
    simple = [node for node in function.body if isinstance(node, _SIMPLE)]
    if not any(isinstance(node, ast.Return) and node.value is not None for node in simple):
        return []
    counts: Counter[str] = Counter()
    for statement in simple:
        if statement.value is None:
            continue
        for node in nodes(statement.value):
            if isinstance(node, ast.Call) and (name := dotted(node.func)) is not None:
                if name.rsplit(".", 1)[-1] not in _NOT_RHS and not name.startswith(("np.", "numpy.", "math.", "jnp.")):
                    counts[name] += 1
    return [name for name, _ in counts.most_common(3)]


def read(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Stages | None:
    """The Butcher table a step function's stages spell, or None when they spell none."""
    if len(function.body) > MAX_STATEMENTS or (function.end_lineno or function.lineno) - function.lineno > MAX_LINES:
        return None
    for rhs in rhs_candidates(function):
        for exact in (True, False):
            try:
                found = _read(function, rhs, exact)
            except Inexact:
                continue  # long decimals or two square roots: read again in floats
            except UNREADABLE:
                found = None
            if found is not None:
                return found
            break
    return None


def _read(function: ast.FunctionDef | ast.AsyncFunctionDef, rhs: str, exact: bool) -> Stages | None:
    evaluator = Evaluator(rhs, Reader({}, exact))
    update: Poly | None = None
    for node in function.body:
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and _calls(node, rhs):
            return None  # stages in a loop: the table is elsewhere, or the loop is the method
        result = evaluator.statement(node)
        if result is not None:
            update = result
            break
    if update is None or not evaluator.calls:
        return None
    return _table(evaluator.calls, update, evaluator.one, exact)


def _calls(node: ast.AST, rhs: str) -> bool:
    return any(isinstance(n, ast.Call) and dotted(n.func) == rhs for n in nodes(node))


def _arguments(calls: Sequence[tuple[list[Poly], dict[str, Poly], int]]) -> Iterator[list[Poly]]:
    """Each argument's values across the stage calls, by position, then by keyword when every call names the same
    keywords; nothing when the calls differ in their number of positional arguments."""
    n = len(calls[0][0])
    if any(len(args) != n for args, _, _ in calls):
        return
    for i in range(n):
        yield [args[i] for args, _, _ in calls]
    names = set(calls[0][1])
    if all(set(kw) == names for _, kw, _ in calls):
        for name in sorted(names):
            yield [kw[name] for _, kw, _ in calls]


def _table(calls: Sequence[tuple[list[Poly], dict[str, Poly], int]], update: Poly, one: Any,
           exact: bool) -> Stages | None:
    s = len(calls)
    state_at = time_at = None
    for column in _arguments(calls):
        if s > 1 and all(p.terms == column[0].terms for p in column) and not _is_time(column[0]):
            continue  # the same argument in every call (a parameter passed through)
        if _single_symbol(column[0]) is None:
            return None
        if any(any(x.startswith(_STAGE) for x in p.symbols()) for p in column) or \
                (s == 1 and _single_symbol(column[0]) in update.symbols()):
            if state_at is not None:
                return None  # two states advanced by the stages: a partitioned method, not one table
            state_at = column
        else:
            if time_at is not None and s > 1:
                return None  # two arguments that move without the stages: which one is the time is a guess
            time_at = time_at or column  # one stage: every argument is its first stage's, at c_1 = 0
    if state_at is None:
        return None
    y = _single_symbol(state_at[0])
    h = _step_symbol(update, y)
    if y is None or h is None:
        return None
    a = [_increments(p, y, h, s) for p in state_at]
    b = _increments(update, y, h, s)
    if b is None or any(row is None for row in a):
        return None
    c = [_node(p, h) for p in time_at] if time_at is not None else [sum(row, 0 * one) for row in a]  # type: ignore[arg-type]
    if any(ci is None for ci in c):
        return None
    if exact:  # Inexact: read again in floats
        one_root([x for row in a for x in row or ()] + list(b) + list(c))
    return Stages(a=a, b=b, c=c, lines=[line for _, _, line in calls], exact=exact)  # type: ignore[arg-type]


# Names of the time argument: a time that is the same in every stage call is every stage at t_n, a defect, while
# any other argument the same in every call is a parameter passed through.
_TIME = re.compile(r"(?:self\.)?(?:t|time|tn|t_n|t0|t_0|tk|t_k|ti|t_i|t_old|t_now|t_cur|t_current|current_time)")


def _is_time(p: Poly) -> bool:
    name = _single_symbol(p)
    return name is not None and _TIME.fullmatch(name) is not None


def _single_symbol(p: Poly) -> str | None:
    if len(p.terms) == 1:
        (m, coefficient), = p.terms.items()
        if len(m) == 1 and coefficient == 1 and not m[0].startswith("\x00"):
            return m[0]
    return None


def _step_symbol(update: Poly, y: str | None) -> str | None:
    """The symbol multiplying every stage in the update: the step size."""
    found: set[str] = set()
    for m in update.terms:
        if any(x.startswith(_STAGE) for x in m):
            rest = [x for x in m if not x.startswith(_STAGE)]
            if len(rest) != 1:
                return None
            found.add(rest[0])
    return found.pop() if len(found) == 1 and y not in found else None


def _increments(p: Poly, y: str, h: str, s: int) -> list[Any] | None:
    """The a_ij (or b_j) of y + h*sum(a_ij K_j); None for any other form."""
    row: list[Any] = [0] * s
    for m, coefficient in p.terms.items():
        if m == (y,) and coefficient == 1:
            continue
        stages = [x for x in m if x.startswith(_STAGE)]
        if len(m) != 2 or len(stages) != 1 or h not in m:
            return None
        j = int(stages[0][len(_STAGE):]) - 1
        if j >= s:
            return None
        row[j] = coefficient
    if p.terms.get((y,)) != 1:
        return None
    return row


def _node(p: Poly, h: str) -> Any | None:
    """c_i of t + c_i h (the time argument); None for any other form."""
    c: Any = 0
    base = 0
    for m, coefficient in p.terms.items():
        if m == (h,):
            c = coefficient
        elif len(m) == 1 and coefficient == 1 and not m[0].startswith("\x00"):
            base += 1
        else:
            return None
    return c if base == 1 else None

