"""One file's static reading: its bytes parsed once, every rule run over its scopes, or one note why not.

Nothing is imported or run. A file too large, binary, not Python or nested beyond what the
parser or the readers take is one ``Note`` naming the file and the reason, never a
traceback; the readers bound their own recursion (values.MAX_DEPTH) and walk the tree
with ``ast.walk``, which keeps no stack.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from typing import Union

from physverify.scan import constants, grid, pairs, rk
from physverify.scan.findings import Finding, Note

MAX_BYTES = 1 << 20  # 1 MiB: larger "Python" files are generated code or data, not steppers
Scope = Union[ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef]


def parse(data: bytes, file: str) -> ast.Module | Note:
    """The module's tree, or a note saying why there is none."""
    if len(data) > MAX_BYTES:
        return Note(file, f"skipped: larger than {MAX_BYTES >> 20} MiB (generated code or data, not a stepper)")
    if b"\x00" in data[:8192]:
        return Note(file, "skipped: a binary file (it holds NUL bytes)")
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: the file's business, not ours
            warnings.simplefilter("ignore")
            return ast.parse(data, filename=file)
    except SyntaxError as exc:  # includes the parser's "too many nested parentheses"
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return Note(file, f"skipped: not valid Python{where}: {exc.msg}")
    except (ValueError, UnicodeDecodeError) as exc:  # NUL bytes further in, an undecodable file
        return Note(file, f"skipped: cannot be read as Python source: {exc}")
    except (RecursionError, MemoryError):
        return Note(file, "skipped: nested too deeply to parse")


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _scopes(tree: ast.Module) -> Iterator[tuple[Scope, str | None]]:
    """The module, every class and every function (each with the class it is defined in, if any).

    Only statements are visited (a class or function is a statement), not expressions:
    a file's expressions are most of its nodes and hold no scope these rules read.
    """
    yield tree, None
    todo: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while todo:
        node, owner = todo.pop()
        inner = node.name if isinstance(node, ast.ClassDef) else None
        for field in _BODIES:
            for child in getattr(node, field, ()) or ():
                if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield child, inner
                if isinstance(child, (ast.stmt, ast.excepthandler)) or type(child).__name__ == "match_case":
                    todo.append((child, inner))


def findings_in(tree: ast.Module, file: str) -> list[Finding]:
    """Every rule over every scope of one parsed module, in line order."""
    found: list[Finding] = []
    for scope, owner in _scopes(tree):
        body = scope.body
        name = "" if isinstance(scope, ast.Module) else scope.name
        tables = rk.tables_in(body, name or _stem(file), scope)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and not tables:
            written = rk.from_stages(scope, owner)
            tables = [written] if written is not None else []
        found += [f for t in tables if (f := rk.judge(t, file)) is not None]
        found += grid.check(body, file)
        found += constants.check(body, file)
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += pairs.check(body, file, name)
    found.sort(key=lambda f: (f.line, f.rule))
    return found


def _stem(file: str) -> str:
    """A module's name for its module-level tables: the file's name without its folder and ".py"."""
    return file.rsplit("/", 1)[-1].removesuffix(".py")


def read(data: bytes, file: str) -> tuple[list[Finding], list[Note]]:
    """The findings of one file's bytes, or the note that says why it was not read."""
    tree = parse(data, file)
    if isinstance(tree, Note):
        return [], [tree]
    try:
        return findings_in(tree, file), []
    except RecursionError:  # a reader that met a shape deeper than its bound allows for
        return [], [Note(file, "skipped: nested too deeply to read")]
