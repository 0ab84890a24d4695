"""Which claims a change can affect: the static import closure of a claim in its repository.

A claim is re-run when any of its inputs changed (DESIGN.md, "Replay: the gate"): its own
file, its target ``file``, the physverify.yaml of its folder, and every module of the
repository that its static import closure reaches. Imports are read with ``ast``, nothing
is run. They are resolved the way the claim's child resolves them (spec section 4): the
claim's folder first, then the repository root, then ``src/`` for a src-layout project
(an editable install puts it on sys.path). Every import statement in a file counts,
also those inside functions and ``if`` blocks, so the closure errs towards re-running.
Imports by string (``importlib.import_module(name)``) and files opened by path are not seen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from physverify import claim, repo
from physverify.repo import changed_since, files_as_keys, relative_key  # noqa: F401 - their home is repo.py


def changed_files(roots: Iterable[Path], ref: str | None, files: Sequence[str]) -> frozenset[str]:
    """Keys of the changed files in each repository: changed since ``ref`` (when given) and ``files``."""
    changed: set[str] = set()
    for root in roots:
        if ref is not None:
            changed |= changed_since(root, ref)
        changed |= files_as_keys(files, root, Path.cwd())
    return frozenset(changed)


def claim_values(claim_path: Path) -> Mapping[str, Any] | None:
    """CLAIM read statically, also from a claim that fails to load; None when not even that could be read."""
    return claim.read(claim_path).claim


def target_of(claim_path: Path) -> str | None:
    """The claim's target ``file`` read statically (also from a claim that fails to load), or None."""
    return claim.read(claim_path).target


def imported_names(source: str) -> list[claim.Import]:
    """Every import in ``source`` as (level, module, names); level > 0 is a relative import."""
    try:
        tree = claim.parse_module(source, "<imports>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # a broken or absurdly nested file imports nothing we can see; its own change re-runs it
        return []
    return claim.imports_in(tree)


def _module_files(base: Path, dotted: Sequence[str]) -> list[Path]:
    """The files Python runs to import ``dotted`` under ``base``: each package's __init__ and the module."""
    files: list[Path] = []
    for depth in range(1, len(dotted) + 1):
        stem = base.joinpath(*dotted[:depth])
        last = depth == len(dotted)
        if _exists(stem / "__init__.py", Path.is_file):
            files.append(stem / "__init__.py")
        elif last and _exists(stem.with_suffix(".py"), Path.is_file):
            files.append(stem.with_suffix(".py"))
        elif last or not _exists(stem, Path.is_dir):  # a folder without __init__.py is a namespace package (PEP 420)
            break
    return files


def _exists(path: Path, kind: Callable[[Path], bool]) -> bool:
    """``kind(path)``, False for a name no file system allows (`import` of a 300-letter name, issue 13)."""
    try:
        return kind(path)
    except (OSError, ValueError):
        return False


def _resolve(module_file: Path, level: int, module: str, names: tuple[str, ...], roots: Sequence[Path]) -> list[Path]:
    parts = [p for p in module.split(".") if p]
    if level > 0:  # relative: from the importing file's package, one folder up per extra dot
        folders = [module_file.parent, *module_file.parent.parents]
        if level > len(folders):  # more dots than folders above the file: nothing to find (issue 13, item 8)
            return []
        bases = [folders[level - 1]]
    else:
        bases = list(roots)
    for base in bases:
        files = _module_files(base, parts) if parts else []
        # "from pkg import mod" may name a submodule rather than an attribute
        subs = [f for name in names for f in _module_files(base, [*parts, name])]
        if files or subs:
            return files + subs
    return []


def import_closure(claim_path: Path, repo_root: Path, imports: Sequence[claim.Import] | None = None) -> frozenset[Path]:
    """Every file inside the repository that importing ``claim_path`` can run, the claim included.

    ``imports`` are the claim's own (from its reading); read from the file when not given.
    """
    roots = repo.import_roots(claim_path.parent, repo_root)
    root = repo_root.resolve()
    start = claim_path.resolve()
    seen: set[Path] = set()
    todo = [start]
    while todo:
        current = todo.pop()
        if current in seen or not current.is_relative_to(root):
            continue  # numpy, the standard library: outside the repository, never our change
        seen.add(current)
        # the claim's imports come from its reading (claim.py's one parse), which also bounds its size
        if current == start:
            found = list(imports) if imports is not None else claim.static_imports(current)
        else:
            found = _imports_of(current)
        for level, module, names in found:
            todo.extend(_resolve(current, level, module, names, roots))
    return frozenset(seen)


def outside_imports(claim_path: Path, repo_root: Path, roots: Sequence[Path],
                    imports: Sequence[claim.Import] | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) of every absolute import in the claim's closure that no file under ``roots`` provides.

    What the fork server may preload for the claim: numpy, scipy, an installed library.
    ``imports`` are the claim's own (its reading); read from the file when not given.
    """
    found: list[tuple[str, tuple[str, ...]]] = []
    start = claim_path.resolve()
    for file in import_closure(claim_path, repo_root, imports):
        own = imports if imports is not None and file == start else None
        for level, module, names in own if own is not None else _imports_of(file):
            if level == 0 and module and not _resolve(file, 0, module, names, roots):
                found.append((module, names))
    return found


def _imports_of(path: Path) -> list[claim.Import]:
    """The imports of the file at ``path``, parsed once per version of the file."""
    try:
        stat = path.stat()
    except OSError:
        return []
    return _parsed_imports(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _parsed_imports(path: Path, mtime_ns: int, size: int) -> list[claim.Import]:
    # Keyed by mtime and size too, so a long-lived process (the MCP server) sees edits;
    # 40 claims importing one package would otherwise parse its modules 40 times.
    try:
        return imported_names(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def claim_inputs(
    claim_path: Path, repo_root: Path, target: str | None, config_file: Path | None,
    imports: Sequence[claim.Import] | None = None,
) -> frozenset[str]:
    """The repository keys whose change re-runs the claim: closure, target file, physverify.yaml."""
    paths = set(import_closure(claim_path, repo_root, imports))
    if target:  # spec section 3: relative to the root, else next to the claim file
        paths.update((repo_root / target, claim_path.parent / target))
    if config_file is not None:
        paths.add(config_file)
    keys = (relative_key(p, repo_root) for p in paths)
    return frozenset(k for k in keys if k is not None)


def is_affected(inputs: frozenset[str], changed: frozenset[str]) -> bool:
    """True when any input of a claim is among the changed files."""
    return not inputs.isdisjoint(changed)
