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
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Union

from physverify.text import clip

_REFERENCE_NAME = re.compile(r"^_*(reference|ref_|exact|analytic|expected)|_ref$", re.IGNORECASE)

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Import = tuple[int, str, tuple[str, ...]]  # (level, module, names); level > 0 is a relative import


def scan(tree: ast.Module, file: object, walked: list[ast.AST] | None = None) -> tuple[list[Import], list[str]]:
    """The file's imports and rule 1's notes for a claim whose CLAIM["file"] is ``file``, from one pass over ``tree``.

    Only the reference functions (and the helpers they call) are walked again, each once:
    walking the whole tree once per question cost 2.5 million nodes for 1,000 claims.
    ``walked`` is ``nodes(tree)`` when the caller has it already (claim.py's depth check walks
    the tree once and hands the walk on).
    """
    found = _Module(tree, walked)
    return found.imports, found.notes(file)


def imports_in(tree: ast.AST, walked: list[ast.AST] | None = None) -> list[Import]:
    """Every import statement in ``tree``, also inside functions and blocks, as (level, module, names)."""
    return _imports(nodes(tree) if walked is None else walked)


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` in ``ast.walk``'s order (breadth first: one level after the other).

    ``ast.walk`` goes through two generators per node, which cost more than parsing the file
    (issue 19: 10,000 claims read with an empty cache); ``below`` reads the fields directly.
    """
    found = walk(tree, None)
    assert found is not None  # no limit: the walk is never cut
    return found


def walk(tree: ast.AST, limit: int | None) -> list[ast.AST] | None:
    """``nodes(tree)``, or None as soon as the tree has more than ``limit`` levels (the module being 1).

    The depth check of a parse and the scan share this one walk (issue 19: with an empty cache
    the two walks of 10,000 claims cost as much as their parses).
    """
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
    """One pass over a module: its import statements and its functions, in ast.walk order."""

    def __init__(self, tree: ast.Module, walked: list[ast.AST] | None = None) -> None:
        self.import_nodes: list[ast.Import | ast.ImportFrom] = []
        self.functions: list[tuple[str, FunctionNode]] = []
        for node in nodes(tree) if walked is None else walked:
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
    parts = [p for p in PurePosixPath(file.replace("\\", "/")).parts if p not in ("", ".", "..", "/")]
    if parts:
        parts[-1] = parts[-1].split(".")[0]  # "solver.py" -> "solver"
    if parts and parts[-1] == "__init__":  # a package's __init__.py is imported as the package
        parts.pop()
    return {".".join(parts[i:]) for i in range(len(parts)) if all(parts[i:])}


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


@dataclass(frozen=True)
class _Body:
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
