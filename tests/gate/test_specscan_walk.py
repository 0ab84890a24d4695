"""specscan's fast walks (issue 19) give what the walk over every node gives, on every tree.

``deeper_than`` decides a verdict (a claim nested deeper than claim.MAX_NESTING levels is a
load error), and ``statements`` decides the imports and rule 1's notes, so each is compared
with the plain walk (``specscan.walk``, which ``ast.walk``'s order is tested against in
test_specscan.py) on real files, on hostile trees right at the bound, and on generated sources.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.nesting import UNBRACKETED

import physverify
from physverify.gate import claim, specscan

_HOLDERS = (ast.mod, ast.stmt, ast.excepthandler, ast.match_case)


def depth_of(tree: ast.AST) -> int:
    """The number of levels of ``tree``, by the plain walk."""
    level, depth = [tree], 0
    while level:
        depth += 1
        level = specscan.below(level)
    return depth


def assert_walks_agree(tree: ast.AST) -> None:
    """Every fast answer about ``tree`` is the plain walk's."""
    depth = depth_of(tree)
    for limit in range(max(1, depth - 2), depth + 3):
        assert specscan.deeper_than(tree, limit) == (specscan.walk(tree, limit) is None), (limit, depth)
    walked = specscan.nodes(tree)
    assert specscan.statements(tree) == [node for node in walked if isinstance(node, _HOLDERS)]
    found = specscan._Module(tree)  # type: ignore[arg-type]
    assert found.import_nodes == [node for node in walked if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert found.functions == [pair for node in walked if not isinstance(node, (ast.Import, ast.ImportFrom))
                               for pair in specscan._named(node)]
    assert specscan.imports_in(tree) == specscan._imports(walked)


def test_every_node_class_of_this_python_declares_its_fields_readably() -> None:
    """Else that class is walked the slow way (still right): a new Python's declarations must still be read."""
    classes = [kind for kind in vars(ast).values() if isinstance(kind, type) and issubclass(kind, ast.AST)]
    deprecated = {"Num", "Str", "Bytes", "NameConstant", "Ellipsis", "Index", "ExtSlice", "Suite", "Param",
                  "AugLoad", "AugStore", "slice"}  # never made by ast.parse
    unreadable = [kind.__name__ for kind in classes
                  if kind.__name__ not in deprecated and specscan.declared_fields(kind) is None]
    assert unreadable == []
    assert specscan.declared_fields(ast.BinOp) == [("left", "expr", ""), ("op", "operator", ""), ("right", "expr", "")]
    assert specscan._plan(ast.Name).leaves == ("ctx",) and specscan._plan(ast.Compare).leaves == ("ops",)


def test_a_class_whose_declaration_cannot_be_read_is_walked_field_by_field() -> None:
    class Odd(ast.AST):
        _fields = ("inner", "items")
        __doc__ = "not a declaration"

    leaf = ast.Name("x", ast.Load())
    deep = ast.Module([ast.Expr(Odd(inner=ast.Constant(1), items=[leaf, "text", None]))], [])  # type: ignore[call-arg]
    assert specscan.declared_fields(Odd) is None
    assert depth_of(deep) == 5 and specscan.deeper_than(deep, 4) and not specscan.deeper_than(deep, 5)
    inner = ast.Import([ast.alias("os")])
    holding = ast.Module([Odd(inner=ast.If(ast.Name("c", ast.Load()), [inner], []), items=[])], [])  # type: ignore[call-arg]
    assert specscan.imports_in(holding) == [(0, "os", ())]  # reached through the class's every field
    assert specscan._Module(holding).import_nodes == [inner]


def test_physverify_its_tests_and_the_standard_library_read_the_same() -> None:
    folders = [Path(physverify.__file__).parent, Path(__file__).parents[1], Path(ast.__file__).parent]
    files = [file for folder in folders[:2] for file in sorted(folder.rglob("*.py"))]
    files += sorted(folders[2].glob("*.py"))[::4]  # a quarter of the top-level standard library: big, varied files
    checked = 0
    for file in files:
        try:
            tree = ast.parse(file.read_bytes())
        except (SyntaxError, ValueError):  # test data of the standard library
            continue
        assert_walks_agree(tree)
        checked += 1
    assert checked > 150


# Constructs that nest without brackets (support/nesting.py), each ending in a different
# deepest level: a ctx leaf (names, attributes), a constant, an operator, a lambda's argument
# whose annotation is None (a level of Nones alone), a dict display's missing key.
CHAINS: dict[str, Callable[[int], str]] = {
    **UNBRACKETED,
    "lambdas ending in keyword-only arguments": lambda n: "lambda: " * n + "(lambda *, k: 0)",
    "lambdas ending in a dict with **": lambda n: "lambda: " * n + "{**d, 1: 2}",
    "f-string at the end": lambda n: "a" + ".b" * n + " + f'{x!r:>{w}}'",
}


def claim_text(expression: str) -> str:
    values = {"text": "t", "source": "s", "file": "m.py", "line": 1, "reference": "r", "impact": "used"}
    return (f"import m\nCLAIM = {values!r}\n\n\ndef control():\n    return None\n\n\ndef checks():\n    return []\n\n\n"
            f"async def reference_x():\n    return {expression}\n")


def source_of_depth(chain: Callable[[int], str], depth: int) -> str:
    """A claim whose tree has exactly ``depth`` levels, its deepest part made by ``chain``."""
    n = depth
    for _ in range(6):
        source = claim_text(chain(n))
        found = depth_of(ast.parse(source))
        if found == depth:
            return source
        n += depth - found
    raise AssertionError("no source of that depth")


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_a_claim_exactly_at_the_bound_loads_and_one_level_more_does_not(tmp_path: Path, name: str) -> None:
    for depth in (claim.MAX_NESTING - 1, claim.MAX_NESTING, claim.MAX_NESTING + 1):
        source = source_of_depth(CHAINS[name], depth)
        tree = ast.parse(source)
        assert_walks_agree(tree)
        path = tmp_path / f"claim_{depth}.py"
        path.write_text(source, encoding="utf-8")
        reading = claim.read(path)
        assert reading.binds
        if depth <= claim.MAX_NESTING:
            assert reading.problem is None, reading.problem
            assert reading.imports == ((0, "m", ()),)
        else:
            assert reading.problem == f"{path}: is nested too deeply to be read (more than 2,000 levels of nesting)"


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_shallow_chains_agree(name: str, n: int) -> None:
    assert_walks_agree(ast.parse(claim_text(CHAINS[name](n))))


def test_a_tree_far_deeper_than_the_parser_makes_is_answered_exactly() -> None:
    """A tree built by hand, 100,000 levels deep: no recursion, and the exact answer on either side of its depth."""
    node: ast.expr = ast.Constant(1)
    for _ in range(100_000):
        node = ast.UnaryOp(ast.USub(), node)
    tree = ast.Module([ast.Expr(node)], [])  # type: ignore[call-arg]
    depth = 100_000 + 3  # the module, the statement, the operations, the constant
    assert depth_of(tree) == depth
    assert specscan.deeper_than(tree, claim.MAX_NESTING)
    assert specscan.deeper_than(tree, depth - 1) and not specscan.deeper_than(tree, depth)


# --- generated sources ---------------------------------------------------------------------
_ATOMS = ["x", "1", "'s'", "None", "...", "f'{x}'", "f'{x!r:>{w}}'", "b'b'", "2.5j", "[]", "{}", "()"]
_COMBINE = [
    "({0}).attr", "{0} + {1}", "-{0}", "not {0}", "{0}({1}, k={2}, *{1}, **{2})", "{0}[{1}:{2}:]", "{0}[{1}, ::{2}]",
    "(lambda *, q, r=1: {0})", "(lambda q=None, /, *args, **kw: {0})", "{{**{0}, {1}: {2}}}", "{{{0}, *{1}}}",
    "[{0} for v in {1} if {2}]", "{{v: {0} for v in {1}}}", "({0} for v in {1} for w in {2})", "({0} if {1} else {2})",
    "{0} < {1} <= {2}", "{0} and {1} or {2}", "(v := {0})", "[{0}, *{1}]", "({0},)", "f'{{{0}}}'",
]
expressions = st.recursive(
    st.sampled_from(_ATOMS),
    lambda inner: st.builds(lambda form, a, b, c: form.format(a, b, c), st.sampled_from(_COMBINE), inner, inner, inner),
    max_leaves=12,
)
_SIMPLE = [
    "import os.path as p", "from . import x", "from .m import (a as b, c)", "from m import *", "y = lambda q: {0}",
    "z: int = lambda: {0}", "w: int", "u = v = {0}", "del x", "global g", "assert {0}, {0}", "raise E from {0}",
    "a, *b = {0}", "x += {0}", "pass", "{0}", "import oscillator", "ref_x = lambda: oscillator.f({0})",
]
_COMPOUND = [
    "if {0}:\n{1}\nelse:\n{2}", "for v in {0}:\n{1}\nelse:\n{2}", "while {0}:\n{1}", "with {0} as w, open(x):\n{1}",
    "try:\n{1}\nexcept E as err:\n{2}\nelse:\n{1}\nfinally:\n{2}", "try:\n{1}\nexcept* E:\n{2}",
    "match {0}:\n case [1, *rest] if {0}:\n{1}\n case {{'k': v, **kw}}:\n{2}\n case P(a=1) | None:\n{1}\n case _:\n{2}",
    "def reference_g(a, *, b={0}) -> {0}:\n{1}", "@dec({0})\nasync def h():\n{1}", "class C(B, metaclass=M):\n{1}",
    "def expected_h():\n    import oscillator\n{1}",
]


def _indented(block: str) -> str:
    return textwrap.indent(block, "    ")


statements = st.recursive(
    st.builds(lambda form, e: form.format(e), st.sampled_from(_SIMPLE), expressions),
    lambda inner: st.builds(lambda form, e, a, b: form.format(e, _indented(a), _indented(b)),
                            st.sampled_from(_COMPOUND), expressions, inner, inner)
    | st.builds(lambda a, b: a + "\n" + b, inner, inner),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(statements)
def test_generated_sources_read_the_same_by_every_walk(source: str) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        assume(False)
        raise
    assert_walks_agree(tree)
    assert specscan.scan(tree, "oscillator.py") == (specscan._imports(specscan.nodes(tree)),
                                                     specscan._Module(tree).notes("oscillator.py"))


def test_a_deep_tree_is_walked_without_recursion() -> None:
    """The bound is checked by loops: a low recursion limit changes nothing."""
    tree = ast.parse(source_of_depth(CHAINS["attribute chain"], claim.MAX_NESTING + 1))
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(100)
        deeper = specscan.deeper_than(tree, claim.MAX_NESTING)
        found = specscan.statements(tree)
    finally:
        sys.setrecursionlimit(before)
    assert deeper and len(found) == len([node for node in ast.walk(tree) if isinstance(node, _HOLDERS)])
