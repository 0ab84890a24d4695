"""The rk-order and rk-consistency rules: Runge-Kutta methods whose coefficients do not do what they say.

A method is found as a Butcher table (A, b, c and an embedded row, as lists, NumPy arrays
or Fractions, at module level, in a class or a function) or as stages written out in a
step function (stages.py). Its stated order comes from its name (rk4, RK45, classical,
midpoint, Heun, Ralston, Dormand-Prince ...), an ``order`` attribute or its docstring; its
order from the order conditions over rooted trees, exactly (trees.py). An embedded pair
passes when its rows reach the stated pair of orders in either order, so the lower row of
RK45 is no defect; implicit tables are judged by the same conditions.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from fractions import Fraction
from typing import Any

from physverify.scan import stages as stage_code
from physverify.scan.exact import Inexact, one_root
from physverify.scan.findings import BUTCHER, HAIRER, Finding
from physverify.scan.trees import MAX_ORDER, Method, condition_text, first_failing
from physverify.scan.values import UNREADABLE, Reader, Value

# Names that state an order, most specific first, matched on the name in lower case with its words
# joined by "_" (camelCase split), each at the start of a word.
_NAMED: tuple[tuple[str, tuple[int, ...]], ...] = (
    (r"dop_?853", (8,)), (r"dormand|dopri|rk_?dp|dp_?45|dp_?54", (5, 4)), (r"tsit", (5, 4)),
    (r"cash_?karp|rk_?ck", (5, 4)), (r"fehlberg|rkf_?45", (5, 4)), (r"bogacki|shampine|bs_?23|bs_?32|rk_?23", (3, 2)),
    (r"three_?eighths?|3_?8_?rule|rk_?38", (4,)), (r"(?:ssp|tvd)_?rk_?(\d)|(?:ssp|tvd)_?(\d)|shu_?osher", (3,)),
    (r"ralston_?(\d)?", (2,)), (r"heun_?(\d)?", (2,)), (r"kutta_?(\d)(?!\d)", (3,)), (r"midpoint", (2,)),
    (r"classic", (4,)), (r"euler", (1,)), (r"(?:rk|runge_?kutta)_?(\d)(\d)?(?!\d)", (0,)),
)
_NAMED_RE = tuple((re.compile(r"(?<![a-z])" + pattern), orders) for pattern, orders in _NAMED)
_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8}
_DOC_ORDER = re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|[1-8])(?:st|nd|rd|th)?[- ]order\b"
                        r"(?![- ](?:ode|equation|system|differential|pde|derivative|linear))"
                        r"|\border (?:of (?:accuracy )?)?([1-8])\b", re.IGNORECASE)


def stated_by_name(name: str, stages: int | None = None) -> tuple[int, ...] | None:
    """The order(s) a name states: rk4 -> (4,), RK45 -> (5, 4), gauss_legendre with s stages -> (2s,)."""
    key = re.sub(r"[\-\s/]", "_", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)).lower()
    if "gauss" in key and stages is not None and "gaussian" not in key:
        return (2 * stages,)
    for pattern, orders in _NAMED_RE:
        match = pattern.search(key)
        if match is None:
            continue
        digits = [int(d) for d in match.groups() if d]
        if not digits:
            return orders if orders != (0,) else None
        if len(digits) == 2:
            return tuple(sorted(digits, reverse=True))
        return (digits[0],) if 1 <= digits[0] <= MAX_ORDER else None
    return None


def stated_by_docstring(doc: str | None) -> tuple[int, ...] | None:
    if not doc:
        return None
    match = _DOC_ORDER.search(doc)
    if match is None:
        return None
    word = (match.group(1) or match.group(2)).lower()
    return (_WORDS.get(word) or int(word),)


@dataclass(frozen=True)
class Table:
    """A Butcher table found in the code, where and under which names."""

    a: list[list[Value]]
    b: list[Value]
    c: list[Value] | None
    embedded: list[Value] | None
    line: int
    name: str
    stated: tuple[int, ...] | None
    exact: bool
    stage_lines: tuple[int, ...] = ()


# The names a table's parts go by, after an optional prefix ending in "_" (RK4_A, butcher_b, ...).
_PART = re.compile(r"^(?P<prefix>[A-Za-z0-9_]*?_)?(?P<part>a|b|c|bhat|b_hat|bstar|b_star|btilde|b_tilde|b2|b_2|"
                   r"be|b_e|b_err|b_low|b_embedded|b_emb|weights|nodes|matrix|butcher_a|butcher_b|butcher_c)$",
                   re.IGNORECASE)
_EMBEDDED = frozenset({"bhat", "b_hat", "bstar", "b_star", "btilde", "b_tilde", "b2", "b_2", "be", "b_e", "b_err",
                       "b_low", "b_embedded", "b_emb"})


_DOCUMENTED = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _role(part: str) -> str:
    part = part.lower().removeprefix("butcher_")
    if part in ("a", "matrix"):
        return "a"
    if part in ("b", "weights"):
        return "b"
    if part in ("c", "nodes"):
        return "c"
    return "e"


def _assignments(body: Sequence[ast.stmt]) -> Iterator[tuple[str, ast.expr, int]]:
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            yield node.targets[0].id, node.value, node.lineno
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            yield node.target.id, node.value, node.lineno


def tables_in(body: Sequence[ast.stmt], owner: str, scope: ast.AST | None = None) -> list[Table]:
    """The tables assigned in one scope's body (module, class or function), grouped by name prefix."""
    groups: dict[str, dict[str, tuple[ast.expr, int]]] = {}
    scalars: list[tuple[str, ast.expr]] = []
    order_attr: int | None = None
    for name, value, line in _assignments(body):
        if name.lower() == "order" and isinstance(value, ast.Constant) and type(value.value) is int:
            order_attr = value.value
        match = _PART.match(name)
        if match is not None:
            groups.setdefault((match.group("prefix") or "").lower(), {})[_role(match.group("part"))] = (value, line)
        elif isinstance(value, (ast.Constant, ast.BinOp, ast.Call, ast.UnaryOp)):
            scalars.append((name, value))
    found = []
    for prefix, parts in groups.items():
        if "a" in parts and "b" in parts:
            doc = ast.get_docstring(scope) if isinstance(scope, _DOCUMENTED) else None  # only where a table is
            context = ast.get_docstring(scope) if isinstance(scope, ast.Module) else doc
            table = _table(parts, scalars, prefix.rstrip("_") or owner, doc, order_attr, context)
            if table is not None:
                found.append(table)
    return found


def _table(parts: dict[str, tuple[ast.expr, int]], scalars: list[tuple[str, ast.expr]], name: str,
           doc: str | None, order_attr: int | None, context: str | None = None) -> Table | None:
    """The table the parts spell; None unless it states an order or its names or docstring say Runge-Kutta."""
    for exact in (True, False):
        try:
            env = _scalars(scalars, exact)
            read = {role: Reader(env, exact).value(node) for role, (node, _) in parts.items()}
        except Inexact:
            continue
        except UNREADABLE:
            return None
        a, b = _square(read["a"], read["b"]), read["b"]
        if exact:
            try:
                one_root(_flat(list(read.values())))
            except Inexact:
                continue  # sqrt(2) and sqrt(3) in one table: its conditions are judged in floats
        if a is None or not isinstance(b, list) or any(isinstance(x, list) for x in b):
            return None
        c, e = read.get("c"), read.get("e")
        if (c is not None and not _vector(c, len(b))) or (e is not None and not _vector(e, len(b))):
            return None
        stated = (order_attr,) if order_attr else stated_by_name(name, len(b)) or stated_by_docstring(doc)
        if stated is None and not _says_runge_kutta(name, context):
            return None  # A, b and c are also a linear system and a cost vector (A x = b, linprog's c)
        return Table(a=a, b=b, c=c, embedded=e, line=parts["a"][1], name=name,  # type: ignore[arg-type]
                     stated=stated, exact=exact)
    return None


def _flat(value: Value) -> list[Value]:
    return [x for item in value for x in _flat(item)] if isinstance(value, list) else [value]


_RUNGE_KUTTA = re.compile(r"(?<![a-z])(?:rk|runge|kutta|butcher|tableau|tableaux|dirk|sdirk|erk|irk)(?![a-z])|"
                          r"runge-kutta|butcher", re.IGNORECASE)


def _says_runge_kutta(name: str, doc: str | None) -> bool:
    """Whether the table's name (its prefix, class, function or file) or docstring says it is a Runge-Kutta method."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower().replace("_", " ")
    return bool(_RUNGE_KUTTA.search(re.sub(r"\d+", " ", words)) or (doc and _RUNGE_KUTTA.search(doc)))


def _scalars(scalars: list[tuple[str, ast.expr]], exact: bool) -> dict[str, Value]:
    env: dict[str, Value] = {}
    for name, node in scalars:
        try:
            value = Reader(env, exact).value(node)
        except UNREADABLE:
            continue
        if not isinstance(value, list):
            env[name] = value
    return env


def _vector(value: Value, n: int) -> bool:
    return isinstance(value, list) and len(value) == n and not any(isinstance(x, list) for x in value)


def _square(a: Value, b: Value) -> list[list[Value]] | None:
    """A as s rows of s numbers (ragged lower-triangular rows padded with zeros), or None."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b) or not a:
        return None
    s, rows, zero = len(b), [], _zero(b[0])
    for row in a:
        if not isinstance(row, list) or len(row) > s or any(isinstance(x, list) for x in row):
            return None
        rows.append(list(row) + [zero] * (s - len(row)))
    return rows


def _zero(value: Value) -> Value:
    return 0.0 if isinstance(value, float) else Fraction(0)


def from_stages(function: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None) -> Table | None:
    """The table a step function spells in code, named by the function (or its class)."""
    found = stage_code.read(function)
    if found is None:
        return None
    s = len(found.b)
    stated = (stated_by_name(function.name, s) or (stated_by_name(owner, s) if owner else None)
              or stated_by_docstring(ast.get_docstring(function)))
    return Table(a=found.a, b=found.b, c=found.c, embedded=None, line=function.lineno, name=function.name,
                 stated=stated, exact=found.exact, stage_lines=tuple(found.lines))


# --- judging ------------------------------------------------------------------------------
def _equal(exact: bool) -> Any:
    if exact:
        return lambda x, y: x == y
    return lambda x, y: abs(float(x) - float(y)) <= 1e-9 * max(1.0, abs(float(y)))


def _method(table: Table, b: list[Value]) -> Method:
    one: Any = Fraction(1) if table.exact else 1.0
    c = table.c if table.c is not None else [sum(row, 0 * one) for row in table.a]
    return Method(table.a, b, c, _equal(table.exact), one)


def orders(table: Table, up_to: int = MAX_ORDER) -> tuple[int, ...]:
    """The order of the table's row b, then of its embedded row if it has one (f may depend on t), each at most
    ``up_to``: a method is judged against the order it states, so no tree beyond that order is ever asked."""
    rows = [table.b] + ([table.embedded] if table.embedded is not None else [])
    return tuple(_row_order(_frozen(table.a), tuple(row), _frozen_row(table.c), table.exact, up_to) for row in rows)


def _autonomous_order(table: Table, up_to: int) -> int:
    """The order of row b when f does not depend on t (the nodes c play no part)."""
    return _row_order(_frozen(table.a), tuple(table.b), _frozen_row(table.c), table.exact, up_to, False)


def _frozen(a: list[list[Value]]) -> tuple[tuple[Value, ...], ...]:
    return tuple(tuple(row) for row in a)


def _frozen_row(c: list[Value] | None) -> tuple[Value, ...] | None:
    return None if c is None else tuple(c)


@lru_cache(maxsize=1024)
def _row_order(a: tuple[tuple[Value, ...], ...], b: tuple[Value, ...], c: tuple[Value, ...] | None, exact: bool,
               up_to: int, nonautonomous: bool = True) -> int:
    """One row's order, remembered by the coefficients: a repository's copies of one table cost one computation."""
    table = Table(a=[list(row) for row in a], b=list(b), c=None if c is None else list(c), embedded=None, line=0,
                  name="", stated=None, exact=exact)
    return _method(table, table.b).order(up_to, nonautonomous=nonautonomous)


def judge(table: Table, file: str) -> Finding | None:
    """One finding for a table: rk-order when it misses its stated order, else rk-consistency when it is inconsistent."""
    main = _method(table, table.b)
    stale = _stale_node(table, main)
    if table.stated:
        rows = orders(table, max(table.stated))
        missed = _missed(sorted(rows, reverse=True), sorted(table.stated, reverse=True))
        if missed is not None:
            autonomous = _autonomous_order(table, max(table.stated)) if stale is not None else rows[0]
            return _order_finding(table, file, main, rows[0], autonomous, stale, missed)
    if stale is not None or not main.equal(sum(table.b, 0 * main.one), main.one):
        return _consistency_finding(table, file, main, stale)
    return None


def _missed(rows: list[int], stated: list[int]) -> int | None:
    """The stated order the rows miss (both sorted, highest first), or None.

    A pair against a stated pair: row by row. One row against a stated pair (a step named
    RK45 without its error row): it may be either, so it needs the lower. A pair against one
    stated order: the higher row needs it.
    """
    if len(rows) == len(stated):
        return next((want for got, want in zip(rows, stated) if got < want), None)
    want = stated[-1] if len(stated) > len(rows) else stated[0]
    return want if rows[0] < want else None


def _stale_node(table: Table, method: Method) -> int | None:
    """The first stage whose node c_i is not the sum of its row of A, or None."""
    return next((i for i, (ci, ri) in enumerate(zip(method.c, method.row_sums)) if not method.equal(ci, ri)), None)


def _line(table: Table, stale: int | None) -> int:
    if stale is not None and table.stage_lines:
        return table.stage_lines[stale]
    return table.line


def _node_text(table: Table, method: Method, i: int) -> str:
    return (f"stage {i + 1} is evaluated at t + {_times_h(method.c[i])}, but its increments sum to "
            f"{_times_h(method.row_sums[i])} (c_{i + 1} should be {_show(method.row_sums[i])}, the row sum of A)")


def _times_h(value: Any) -> str:
    return "h" if value == 1 else f"{_show(value)}*h"


def _show(value: Any) -> str:
    return str(value) if not isinstance(value, float) else f"{value:.10g}"


def _order_finding(table: Table, file: str, method: Method, order: int, autonomous: int, stale: int | None,
                   wanted: int) -> Finding:
    why = f"the order conditions hold only up to order {order}"
    if stale is not None and autonomous > order:
        why += f" when f depends on t (order {autonomous} when it does not): " + _node_text(table, method, stale)
    else:
        failing = first_failing(method, order + 1, nonautonomous=True)
        if failing is not None:
            why += f"; {condition_text(failing)} fails"
    return Finding("rk-order", file, _line(table, stale),
                   f"{table.name} states order {wanted}, but {why}. Reference: {BUTCHER}; {HAIRER}",
                   name=table.name, expected_order=wanted, reference=f"{BUTCHER}; {HAIRER}")


def _consistency_finding(table: Table, file: str, method: Method, stale: int | None) -> Finding:
    if stale is not None:
        why = _node_text(table, method, stale)
    else:
        total = sum(table.b, 0 * method.one)
        why = f"its weights b sum to {_show(total)}, not 1 (the method is not even consistent)"
    return Finding("rk-consistency", file, _line(table, stale), f"{table.name}: {why}. Reference: {BUTCHER}",
                   name=table.name, reference=BUTCHER)
