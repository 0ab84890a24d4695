"""Rule 1 of spec section 2: does a reference in the claim file use the code under test?

A reference computed by the code it is meant to judge can only agree with it, so the
verdict would say nothing. ``scan`` reads a claim file's syntax tree (nothing runs; claim.py
parses the file and calls it, once per content) and reports each function whose name says it is a reference (reference*, *_ref,
ref_*, exact*, analytic*, expected*) and whose body calls or uses the module of
CLAIM["file"] or a name imported from it, directly or through a helper function defined
in the same file. It is a heuristic: no note does not prove the reference independent.

The file is hostile input: its syntax tree can be thousands of levels deep (a 1500-deep
attribute chain is valid Python), so every walk here is a loop, never a recursion
(issue 13, item 7).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePosixPath
from operator import attrgetter
from typing import Any, NamedTuple, Union

from physverify.text import clip

_REFERENCE_NAME = re.compile(r"^_*(reference|ref_|exact|analytic|expected)|_ref$", re.IGNORECASE)

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Import = tuple[int, str, tuple[str, ...]]  # (level, module, names); level > 0 is a relative import


def scan(tree: ast.Module, file: object) -> tuple[list[Import], list[str]]:
    """The file's imports and rule 1's notes for a claim whose CLAIM["file"] is ``file``, from one pass over ``tree``.

    The pass goes through the statements only (``statements``): imports and function
    definitions are statements, so the expressions need no visit. Only the reference
    functions (and the helpers they call) are walked again, each once: walking the whole
    tree once per question cost 2.5 million nodes for 1,000 claims.
    """
    found = _Module(tree)
    return found.imports, found.notes(file)


def imports_in(tree: ast.AST) -> list[Import]:
    """Every import statement in ``tree``, also inside functions and blocks, as (level, module, names)."""
    return _imports(statements(tree))


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` in ``ast.walk``'s order (breadth first: one level after the other).

    ``ast.walk`` goes through two generators per node, which cost more than parsing the file
    (issue 19: 10,000 claims read with an empty cache); ``below`` reads the fields directly.
    """
    found = walk(tree, None)
    assert found is not None  # no limit: the walk is never cut
    return found


def walk(tree: ast.AST, limit: int | None) -> list[ast.AST] | None:
    """``nodes(tree)``, or None as soon as the tree has more than ``limit`` levels (the module being 1)."""
    found: list[ast.AST] = []
    level: list[ast.AST] = [tree]
    depth = 0
    while level:
        depth += 1
        if limit is not None and depth > limit:
            return None
        found.extend(level)
        level = below(level)
    return found


def below(level: list[ast.AST]) -> list[ast.AST]:
    """The children of the nodes of ``level``, in order: the next level of a breadth-first walk."""
    children: list[ast.AST] = []
    append = children.append
    for node in level:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST):
                append(value)
    return children


# --- what each node class holds, from its declaration (issue 19) ------------------------
# With an empty cache the walk over every node of 10,000 claims (a getattr and two isinstance
# calls per field) cost a third of their parses. Each node class says what its fields hold:
# ``ast.BinOp.__doc__`` is "BinOp(expr left, operator op, expr right)", the grammar's own
# declaration. A field of a built-in type (a name, a number, a string, a constant) never holds
# a node; a field of a sum whose every constructor is fieldless (expr_context, operator, cmpop,
# ...) holds a leaf; ``expr*`` is a list (of nodes, with None for a missing key of a dict display
# or a keyword-only argument without default). A class whose declaration cannot be read this way
# is walked as ``below`` walks it: every field looked at, every node taken.
_BUILTIN_TYPES = frozenset({"identifier", "int", "string", "constant"})
_DECLARED = re.compile(r"(\w+)\((.*)\)", re.DOTALL)
_DECLARED_FIELD = re.compile(r"\s*(\w+)([*?]?)\s+(\w+)\s*")
_BLOCK_TYPES = frozenset({"stmt", "excepthandler", "match_case"})  # what holds statements, and nothing else does

Field = tuple[str, str, str]  # (name, type, "" or "*" or "?")


def declared_fields(kind: type) -> list[Field] | None:
    """The fields of node class ``kind`` as its declaration gives them, in ``_fields`` order; None when unreadable."""
    if not kind._fields:  # type: ignore[attr-defined]
        return []
    found = _DECLARED.fullmatch((kind.__doc__ or "").strip())
    if found is None or found.group(1) != kind.__name__:
        return None
    fields = []
    for part in found.group(2).split(","):
        field = _DECLARED_FIELD.fullmatch(part)
        if field is None:
            return None
        fields.append((field.group(3), field.group(1), field.group(2)))
    return fields if tuple(name for name, _, _ in fields) == kind._fields else None  # type: ignore[attr-defined]


def _is_leaf_sum(name: str) -> bool:
    """Whether every node of grammar type ``name`` (``expr_context``, ``cmpop``, ...) has no field at all."""
    base = getattr(ast, name, None)
    if not (isinstance(base, type) and issubclass(base, ast.AST)):
        return False
    constructors = base.__subclasses__()
    return bool(constructors) and all(not kind._fields and not kind.__subclasses__() for kind in constructors)


class _Plan:
    """How the walks below read one node class: its node-holding fields, as getters that give a tuple each.

    A plain class, not a dataclass: making one costs a millisecond at import, in every command.
    """

    __slots__ = ("singles", "lists", "leaves", "blocks")

    def __init__(self, singles: Callable[[ast.AST], tuple[object, ...]] | None,
                 lists: Callable[[ast.AST], tuple[list[ast.AST | None], ...]] | None, leaves: tuple[str, ...],
                 blocks: Callable[[ast.AST], tuple[list[ast.AST], ...]] | None) -> None:
        self.singles = singles  # the fields holding one node or None
        self.lists = lists  # the fields holding a list
        self.leaves = leaves  # the fields holding only fieldless nodes (a ctx, an operator): one level more
        self.blocks = blocks  # the fields holding statements (``statements``)


def _getter(names: Sequence[str]) -> Callable[[ast.AST], tuple[Any, ...]] | None:
    """A function giving the tuple of ``names``' values of a node; None for no names."""
    if not names:
        return None
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda node: (one(node),)
    return attrgetter(*names)


def _plan_of(kind: type) -> _Plan:
    fields = declared_fields(kind) if issubclass(kind, ast.AST) else []
    if fields is None:  # not readable: every field is looked at
        return _Plan(_fallback, None, (), _fallback_blocks)
    nodes_of = [(name, of, mark) for name, of, mark in fields if of not in _BUILTIN_TYPES]
    leaves = tuple(name for name, of, _ in nodes_of if _is_leaf_sum(of))
    inner = [(name, of, mark) for name, of, mark in nodes_of if name not in leaves]
    return _Plan(_getter([name for name, _, mark in inner if mark != "*"]),
                 _getter([name for name, _, mark in inner if mark == "*"]),
                 leaves,
                 _getter([name for name, of, mark in inner if of in _BLOCK_TYPES and mark == "*"]))


def _fallback(node: ast.AST) -> tuple[object, ...]:
    """The node children of a node whose class declares its fields in a form not read here (``below``'s way)."""
    return tuple(below([node]))


def _fallback_blocks(node: ast.AST) -> tuple[list[ast.AST], ...]:
    """``_fallback`` for ``statements``: every child may hold a statement (the walk keeps its order all the same)."""
    return (below([node]),)


_PLANS: dict[type, _Plan] = {type(None): _Plan(None, None, (), None)}
# deeper_than's part of each plan, as a plain tuple: unpacked in one step (two attribute
# lookups per node cost a quarter of the walk; a NamedTuple unpacks the slow way)
_Getters = tuple[Callable[[ast.AST], tuple[object, ...]] | None, Callable[[ast.AST], tuple[list[Any], ...]] | None]
_GETTERS: dict[type, _Getters] = {type(None): (None, None)}


def _plan(kind: type) -> _Plan:
    found = _PLANS.get(kind)
    if found is None:
        found = _PLANS[kind] = _plan_of(kind)  # a race here computes the same plan twice
    return found


def _getters(kind: type) -> _Getters:
    plan = _plan(kind)
    found = _GETTERS[kind] = (plan.singles, plan.lists)
    return found


def deeper_than(tree: ast.AST, limit: int) -> bool:
    """Whether ``tree`` has more than ``limit`` levels (the module being 1): ``walk(tree, limit) is None``, faster.

    A level is read through each class's plan: a ctx or an operator (a leaf by declaration)
    is not put in the next level, only remembered to make one more level when nothing else
    does; a None taken from a field is a level's member without children, so a level of
    Nones alone is no level (it can only be the last). Work stops once ``limit`` levels are
    passed, so a hostile tree costs at most ``limit`` levels of work.
    """
    getters = _GETTERS
    level: list[Any] = [tree]
    previous: list[Any] = []
    depth = 1
    while True:
        following: list[Any] = []
        extend = following.extend
        for node in level:
            try:
                singles, lists = getters[type(node)]
            except KeyError:  # a class met for the first time
                singles, lists = _getters(type(node))
            if singles is not None:
                extend(singles(node))
            if lists is not None:
                for items in lists(node):
                    extend(items)
        if not following:
            break
        if depth > limit:  # ``level`` has children, so it holds a node: a level past the limit
            return True
        depth += 1
        previous, level = level, following
    last = [node for node in level if node is not None]
    if not last:  # Nones alone: the level before was the last
        depth -= 1
        last = [node for node in previous if node is not None]
    leaf = any(getattr(node, name, None) for node in last for name in _plan(type(node)).leaves)
    return depth + leaf > limit


def statements(tree: ast.AST) -> list[ast.AST]:
    """The module, its statements, except handlers and match cases, at any depth, in ``ast.walk``'s order.

    ``nodes(tree)`` with everything else left out: a statement lies only in a block of a
    statement, a handler or a case (never in an expression), so every one is reached, level
    by level, in the same order, without visiting an expression.
    """
    found: list[ast.AST] = []
    level: list[ast.AST] = [tree]
    while level:
        found.extend(level)
        following: list[ast.AST] = []
        for node in level:
            blocks = _plan(type(node)).blocks
            if blocks is not None:
                for block in blocks(node):
                    following.extend(item for item in block if isinstance(item, ast.AST))
        level = following
    return found


def notes_in(tree: ast.Module, file: object) -> list[str]:
    """Return rule 1's notes for the syntax tree of a claim file whose CLAIM["file"] is ``file``."""
    return _Module(tree).notes(file)


def _imports(nodes: Iterable[ast.AST]) -> list[Import]:
    found: list[Import] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(alias.name for alias in node.names)))
    return found


class _Module:
    """One pass over a module's statements: its import statements and its functions, in ast.walk order."""

    def __init__(self, tree: ast.Module) -> None:
        self.import_nodes: list[ast.Import | ast.ImportFrom] = []
        self.functions: list[tuple[str, FunctionNode]] = []
        for node in statements(tree):
            kind = type(node)
            if kind in _PLAIN:  # most nodes: one set lookup instead of five isinstance calls
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.import_nodes.append(node)
            else:
                self.functions.extend(_named(node))
        self.imports = _imports(self.import_nodes)

    def notes(self, file: object) -> list[str]:
        modules = module_names(file)
        if not modules:
            return []
        targets = _imported_targets(self.import_nodes, modules)
        references = [(name, node) for name, node in self.functions if _REFERENCE_NAME.search(name)]
        if not targets or not references:  # nothing of the code under test is named, or no reference: no note
            return []
        helpers = dict(self.functions)
        bodies: dict[int, _Body] = {}
        notes: list[str] = []
        for name, node in references:
            for target, verb, via in _uses(node, targets, modules, helpers, {name}, bodies):
                through = f" (through {via}())" if via else ""
                notes.append(f"{name}() (line {node.lineno}) {verb} {clip(target, 120)}, the code under test{through}")
        return notes


# Node classes that are neither an import nor a binding ``_named`` looks at: a class is listed
# only when it is no class of interest, derives from none and none derives from it, so
# skipping a node of exactly that type skips nothing the isinstance checks would take.
_WANTED = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign)
_PLAIN = frozenset(
    kind for kind in vars(ast).values()
    if isinstance(kind, type) and issubclass(kind, ast.AST)
    and not any(issubclass(wanted, kind) or issubclass(kind, wanted) for wanted in _WANTED)
)


def _named(node: ast.AST) -> list[tuple[str, FunctionNode]]:
    """The functions (and named lambdas) ``node`` defines, by name."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [(node.name, node)]
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
        return [(target.id, node.value) for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Lambda) and isinstance(node.target, ast.Name):
        return [(node.target.id, node.value)]
    return []


def module_names(file: object) -> set[str]:
    """Return the dotted names the claimed file can be imported as ("src/pkg/m.py": m, pkg.m, src.pkg.m)."""
    if not isinstance(file, str) or not file.strip():
        return set()
    return set(_module_names(file))


@functools.lru_cache(maxsize=1024)
def _module_names(file: str) -> frozenset[str]:
    # Remembered: a repository's claims name a few files, and pathlib's parse of the name cost a
    # tenth of a tiny claim's scan (issue 19); the answer depends on the string alone.
    parts = [p for p in PurePosixPath(file.replace("\\", "/")).parts if p not in ("", ".", "..", "/")]
    if parts:
        parts[-1] = parts[-1].split(".")[0]  # "solver.py" -> "solver"
    if parts and parts[-1] == "__init__":  # a package's __init__.py is imported as the package
        parts.pop()
    return frozenset(".".join(parts[i:]) for i in range(len(parts)) if all(parts[i:]))


def _imported_targets(nodes: list[ast.Import | ast.ImportFrom], modules: set[str]) -> dict[str, str]:
    """Return local name -> dotted name for every import of the code under test in the file."""
    targets: dict[str, str] = {}
    for node in nodes:  # imports inside functions count too: a heuristic, not scoping
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules or any(m.startswith(alias.name + ".") for m in modules):
                    # `import solver as s`: s stands for solver; `import pkg.solver`: pkg is pkg
                    targets[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else ""
        else:
            for alias in node.names:
                full = f"{node.module}.{alias.name}" if node.module else alias.name
                if full in modules:  # `from pkg import solver`: a module
                    targets[alias.asname or alias.name] = full
                elif node.module in modules and alias.name != "*":  # `from solver import rhs`
                    targets[alias.asname or alias.name] = full
    return targets


class _Body(NamedTuple):
    """What rule 1 needs from one function body, from one walk of it: its free loads, in order."""

    loads: tuple[tuple[str, bool], ...]  # (dotted name, whether it is called), outermost loads not bound inside


def _body(function: FunctionNode) -> _Body:
    walked = nodes(function)
    local = _parameters(function)
    called: set[int] = set()
    chains: dict[int, bool] = {}  # id(Attribute) -> whether it is a chain on a name, each node decided once
    inner: set[int] = set()
    for node in walked:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, ast.Call):
            called.add(id(node.func))
        elif isinstance(node, ast.Attribute) and _is_chain(node, chains):
            inner.add(id(node.value))
    loads = []
    for node in walked:
        if id(node) in inner:
            continue
        outermost = (isinstance(node, ast.Attribute) and _is_chain(node, chains) and isinstance(node.ctx, ast.Load)) \
            or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))
        if outermost:
            dotted = _dotted(node)  # type: ignore[arg-type]
            if dotted.split(".")[0] not in local:  # a parameter or local variable that shadows an import
                loads.append((dotted, id(node) in called))
    return _Body(tuple(loads))


def _uses(
    function: FunctionNode,
    targets: dict[str, str],
    modules: set[str],
    helpers: dict[str, FunctionNode],
    seen: set[str],
    bodies: dict[int, _Body],
) -> Iterator[tuple[str, str, str]]:
    """Yield (code-under-test name, "calls"/"uses", helper it goes through or "") once each."""
    reported: set[str] = set()
    for target, verb, via in _walk_uses(function, targets, modules, helpers, seen, bodies):
        if target not in reported:
            reported.add(target)
            yield target, verb, via


def _walk_uses(
    function: FunctionNode,
    targets: dict[str, str],
    modules: set[str],
    helpers: dict[str, FunctionNode],
    seen: set[str],
    bodies: dict[int, _Body],
) -> Iterator[tuple[str, str, str]]:
    # Depth first through the helpers the function calls, with a stack instead of recursion:
    # a chain of 1500 helpers calling each other is a valid claim file.
    def loads_of(node: FunctionNode) -> Iterator[tuple[str, bool]]:
        if id(node) not in bodies:  # each body is walked once, however many references reach it
            bodies[id(node)] = _body(node)
        return iter(bodies[id(node)].loads)

    stack: list[tuple[Iterator[tuple[str, bool]], str]] = [(loads_of(function), "")]
    while stack:
        loads, via = stack[-1]
        found = next(loads, None)
        if found is None:
            stack.pop()
            continue
        dotted, called = found
        root = dotted.split(".")[0]
        qualified = _qualified(dotted, targets[root]) if root in targets else ""
        if qualified and _under_test(qualified, modules):
            yield qualified, "calls" if called else "uses", via
        elif root == dotted and root in helpers and root not in seen and called:
            seen.add(root)  # follow a call into a helper defined in this file, once
            stack.append((loads_of(helpers[root]), root))  # a note names the helper that uses it


def _under_test(qualified: str, modules: set[str]) -> bool:
    """Return whether a dotted name lies in the code under test (`import pkg.solver` binds pkg)."""
    return any(qualified == m or qualified.startswith(m + ".") for m in modules)


def _qualified(dotted: str, module: str) -> str:
    """Return the name as the reader knows it: `s.rhs` with `import solver as s` is solver.rhs."""
    if not module:
        return dotted
    return ".".join([module, *dotted.split(".")[1:]])


def _is_chain(node: ast.Attribute, chains: dict[int, bool]) -> bool:
    """Return whether ``node`` is `name.a.b...`; remembers the answer for every attribute under it."""
    below: list[int] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute) and id(current) not in chains:
        below.append(id(current))
        current = current.value
    answer = chains[id(current)] if isinstance(current, ast.Attribute) else isinstance(current, ast.Name)
    chains.update(dict.fromkeys(below, answer))
    return answer


def _dotted(node: ast.expr) -> str:
    """Return "a.b.c" for a chain of attributes on a name, else ""."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _parameters(function: FunctionNode) -> set[str]:
    """Return the parameters of ``function``."""
    arguments = function.args
    params = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    return {a.arg for a in params} | {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
