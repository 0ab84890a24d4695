"""The grid-spacing rule: a spacing that does not match the grid it belongs to.

``np.linspace(a, b, N)`` holds N points with both ends, so its spacing is (b - a)/(N - 1);
with ``endpoint=False`` it holds N points of a periodic grid and the spacing is (b - a)/N.
``np.arange(a, b, dx)`` stops before b, so a spacing (b - a)/(len(x) - 1) treats it as if it
held its end point. Expressions are compared as polynomials in their names (stages.Poly),
so ``L/(N-1)``, ``(b - a)/(N - 1.0)`` and ``(x1 - x0) / (n - 1)`` are each read the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from physverify.scan.exact import Inexact
from physverify.scan.findings import Finding
from physverify.scan.stages import Poly, Evaluator
from physverify.scan.values import UNREADABLE, Reader, last_name

REFERENCE = "NumPy reference, numpy.linspace and numpy.arange (the end point and the step)"


@dataclass(frozen=True)
class _Grid:
    name: str
    start: Poly
    stop: Poly
    count: Poly  # linspace: N; arange: None
    endpoint: bool
    arange: bool
    line: int


def _poly(node: ast.AST) -> Poly | None:
    """The expression as a polynomial in its names: exactly, or in floats when it holds a long decimal."""
    for exact in (True, False):
        try:
            return Evaluator("\x00none", Reader({}, exact=exact)).expr(node)
        except Inexact:
            continue
        except UNREADABLE:
            return None
    return None


def _opaque(p: Poly) -> bool:
    return any(s.startswith("\x00") for s in p.symbols())


def _grid(name: str, call: ast.Call, line: int) -> _Grid | None:
    kind = last_name(call.func)
    if kind not in ("linspace", "arange") or len(call.args) < (3 if kind == "arange" else 2):
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    count_node = call.args[2] if len(call.args) > 2 else keywords.get("num")
    if count_node is None:
        return None  # linspace's default of 50 points is rarely paired with a spacing by hand
    endpoint = keywords.get("endpoint")
    ends = False if isinstance(endpoint, ast.Constant) and endpoint.value is False else True
    if endpoint is not None and not isinstance(endpoint, ast.Constant):
        return None  # decided at run time: nothing to say
    parts = [_poly(n) for n in (call.args[0], call.args[1], count_node)]
    if any(p is None or _opaque(p) for p in parts):
        return None
    return _Grid(name, parts[0], parts[1], parts[2], ends, kind == "arange", line)  # type: ignore[arg-type]


def _bindings(body: Sequence[ast.stmt]) -> Iterator[tuple[str, ast.expr, int]]:
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            yield node.targets[0].id, node.value, node.lineno


def _minus(p: Poly, q: Poly) -> Poly:
    return p + q.scale(-1)


def _same(p: Poly, q: Poly) -> bool:
    return _minus(p, q).terms == {}


def _len_of(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Call) and last_name(node.func) in ("len", "size") and len(node.args) == 1
            and isinstance(node.args[0], ast.Name) and node.args[0].id == name)


def check(body: Sequence[ast.stmt], file: str) -> list[Finding]:
    """Spacings in one scope's body that do not match a grid made in the same body."""
    grids: list[_Grid] = []
    found: list[Finding] = []
    for name, value, line in _bindings(body):
        if isinstance(value, ast.Call):
            grid = _grid(name, value, line)
            if grid is not None:
                grids.append(grid)
                continue
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
            try:
                finding = _spacing(name, value, line, grids, file)
            except Inexact:  # ends with two different square roots: not comparable exactly, so nothing to say
                continue
            except UNREADABLE:  # an exact number beyond a float's range met a float: nothing to say
                continue
            if finding is not None:
                found.append(finding)
    return found


def _spacing(name: str, value: ast.BinOp, line: int, grids: list[_Grid], file: str) -> Finding | None:
    length = _poly(value.left)
    if length is None or _opaque(length):
        return None
    for grid in grids:
        if not _same(length, _minus(grid.stop, grid.start)):
            continue
        if grid.arange:
            if _arange_as_closed(value.right, grid.name):
                return Finding("grid-spacing", file, line,
                               f"{name} divides by len({grid.name}) - 1, but np.arange (line {grid.line}) stops before "
                               f"its end point: {grid.name} does not hold it, and its spacing is the step given to "
                               f"arange. Reference: {REFERENCE}", name=name, reference=REFERENCE)
            continue
        divisor = _poly(value.right)
        if divisor is None or _opaque(divisor):
            continue
        if grid.endpoint and _same(divisor, grid.count):
            return _finding(name, grid, line, file, "(N - 1)", "includes both end points (endpoint=True)")
        one = Poly({(): Fraction(1)})
        if not grid.endpoint and _same(divisor, _minus(grid.count, one)):
            return _finding(name, grid, line, file, "N", "leaves out its end point (endpoint=False, periodic)")
    return None


def _arange_as_closed(node: ast.AST, grid: str) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _len_of(node.left, grid)
            and isinstance(node.right, ast.Constant) and node.right.value == 1)


def _finding(name: str, grid: _Grid, line: int, file: str, should: str, because: str) -> Finding:
    return Finding("grid-spacing", file, line,
                   f"{name} does not match the grid {grid.name} (line {grid.line}): np.linspace with N points "
                   f"{because}, so its spacing is (b - a)/{should}. Reference: {REFERENCE}",
                   name=name, reference=REFERENCE)
