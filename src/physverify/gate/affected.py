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
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from physverify.gate import claim, repo
from physverify.gate.repo import changed_since, files_as_keys, relative_key  # noqa: F401 - their home is repo.py


def changed_files(roots: Iterable[Path], ref: str | None, files: Sequence[str],
                  checkouts: repo.Checkouts | None = None) -> frozenset[str]:
    """Keys of the changed files in each repository: changed since ``ref`` (when given) and ``files``."""
    changed: set[str] = set()
    for root in roots:
        if ref is not None:
            changed |= changed_since(root, ref, checkouts)
        changed |= files_as_keys(files, root, Path.cwd())
    return frozenset(changed)


def imported_names(source: str) -> list[claim.Import]:
    """Every import in ``source`` as (level, module, names); level > 0 is a relative import."""
    try:
        tree = claim.parse_module(source, "<imports>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # a broken or absurdly nested file imports nothing we can see; its own change re-runs it
        return []
    return claim.imports_in(tree)


def _module_files(base: Path, dotted: Sequence[str], probed: dict[Path, bool | None] | None = None) -> list[Path]:
    """The files Python runs to import ``dotted`` under ``base``: each package's __init__ and the module.

    Each path looked at is kept in ``probed`` when given, with what was found (noop.py).
    """
    files: list[Path] = []
    for depth in range(1, len(dotted) + 1):
        stem = base.joinpath(*dotted[:depth])
        last = depth == len(dotted)
        if _exists(stem / "__init__.py", Path.is_file, probed):
            files.append(stem / "__init__.py")
        elif last and _exists(stem.with_suffix(".py"), Path.is_file, probed):
            files.append(stem.with_suffix(".py"))
        elif last or not _exists(stem, Path.is_dir, probed):  # a folder without __init__.py is a namespace package
            break
    return files


def _exists(path: Path, kind: Callable[[Path], bool], probed: dict[Path, bool | None] | None = None) -> bool:
    """``kind(path)``, False for a name no file system allows (`import` of a 300-letter name, issue 13).

    ``probed`` keeps each path's answer; None when two answers in one run differed (the
    file system changed while planning looked: noop.py keeps nothing then).
    """
    try:
        found = kind(path)
    except (OSError, ValueError):
        found = False
    if probed is not None:
        probed[path] = found if probed.get(path, found) == found else None
    return found


def _resolve(module_file: Path, level: int, module: str, names: tuple[str, ...], roots: Sequence[Path],
             probed: dict[Path, bool | None] | None = None) -> list[Path]:
    parts = [p for p in module.split(".") if p]
    if level > 0:  # relative: from the importing file's package, one folder up per extra dot
        folders = [module_file.parent, *module_file.parent.parents]
        if level > len(folders):  # more dots than folders above the file: nothing to find (issue 13, item 8)
            return []
        bases = [folders[level - 1]]
    else:
        bases = list(roots)
    for base in bases:
        files = _module_files(base, parts, probed) if parts else []
        # "from pkg import mod" may name a submodule rather than an attribute
        subs = [f for name in names for f in _module_files(base, [*parts, name], probed)]
        if files or subs:
            return files + subs
    return []


def import_closure(claim_path: Path, repo_root: Path, imports: Sequence[claim.Import] | None = None) -> frozenset[Path]:
    """Every file inside the repository that importing ``claim_path`` can run, the claim included.

    ``imports`` are the claim's own (from its reading); read from the file when not given.
    """
    return Closures().closure(claim_path, repo_root, imports)


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


def outside_of(claim_path: Path, root: Path, imports: Sequence[claim.Import] | None = None
               ) -> list[tuple[str, tuple[str, ...]]]:
    """``outside_imports`` under the claim's own import roots: what isolate.run_child's fork mode preloads.

    With ``imports`` (the claim's reading) the answer is remembered for the claim's folder,
    root and imports: the claims of one folder mostly import alike, and the closure costs
    each claim milliseconds. An answer gone stale (a helper's imports edited meanwhile) costs
    the fork server's preload, never correctness: the claim's own process imports what the
    server lacks.
    """
    if imports is None:
        return outside_imports(claim_path, root, repo.import_roots(claim_path.parent, root))
    key = (str(claim_path.parent), str(root), tuple((i[0], i[1], tuple(i[2])) for i in imports))
    found = _outside_seen.get(key)
    if found is None:
        found = outside_imports(claim_path, root, repo.import_roots(claim_path.parent, root), imports)
        with _outside_lock:
            if len(_outside_seen) >= _OUTSIDE_MAX:
                _outside_seen.clear()
            _outside_seen[key] = found
    return found


_OUTSIDE_MAX = 4096
_outside_seen: dict[tuple[object, ...], list[tuple[str, tuple[str, ...]]]] = {}
_outside_lock = threading.Lock()


class Closures:
    """The import closures of one run's claims, each module lookup and each file's imports found once.

    1,000 claims importing the same model would otherwise look the same modules up on disk
    1,000 times (issue 19: the no-op pre-commit hook spent most of its time here). The file
    system is taken as it is when first asked, so an instance lives for one run; the MCP
    server, which outlives edits, makes one per call.
    """

    def __init__(self) -> None:
        self._roots: dict[tuple[Path, Path], tuple[Path, ...]] = {}
        self._edges: dict[tuple[Path, tuple[Path, ...]], tuple[Path, ...]] = {}
        self._modules: dict[tuple[object, int, str, tuple[str, ...]], list[Path]] = {}
        self._real: dict[Path, Path] = {}
        self._keys: dict[tuple[Path, Path], str | None] = {}
        self._inputs: dict[tuple[object, ...], frozenset[str]] = {}
        self.probed: dict[Path, bool | None] = {}  # every path a lookup looked at, and what it found (noop.py)

    def closure(self, claim_path: Path, repo_root: Path, imports: Sequence[claim.Import] | None = None, *,
                real_path: Path | None = None) -> frozenset[Path]:
        """``import_closure``; ``real_path`` is the claim's resolved path when the caller has it."""
        start = real_path if real_path is not None else self._resolved(claim_path)
        self._real[start] = start  # resolved already: its key needs no system call
        found = list(imports) if imports is not None else claim.static_imports(start)
        if not self._inside(repo_root)(start):
            return frozenset()  # a claim outside the repository: nothing in it is the claim's input
        return self._reached(claim_path.parent, start, repo_root, tuple(found)) | {start}

    def inputs(self, claim_path: Path, repo_root: Path, target: str | None, config_file: Path | None,
               imports: Sequence[claim.Import] | None = None, *, real_path: Path | None = None,
               own_key: str | None = None) -> frozenset[str]:
        """``claim_inputs``, with the lookups shared between the run's claims.

        Claims of one folder that import the same modules (the usual case) share everything
        but their own file, so that part is found once for all of them, under a key of
        strings (hashing new Path objects cost more than the rest). ``own_key`` is the
        claim's own key when the caller has it (replay's planning does).
        """
        start = real_path if real_path is not None else self._resolved(claim_path)
        self._real[start] = start
        found = tuple(imports) if imports is not None else tuple(claim.static_imports(start))
        shared_key = (os.path.dirname(claim_path), os.path.dirname(start), os.fspath(repo_root), found, target,
                      None if config_file is None else os.fspath(config_file))
        shared = self._inputs.get(shared_key)
        if shared is None:
            inside = self._inside(repo_root)(start)
            paths = set(self._reached(claim_path.parent, start, repo_root, found) if inside else ())
            if target:  # spec section 3: relative to the root, else next to the claim file
                paths.update((repo_root / target, claim_path.parent / target))
            if config_file is not None:
                paths.add(config_file)
            keys = (self._key(p, repo_root) for p in paths)
            shared = self._inputs[shared_key] = frozenset(k for k in keys if k is not None)
        own = own_key if own_key is not None else self._key(start, repo_root)
        return shared | {own} if own is not None and own not in shared else shared

    def _reached(self, folder: Path, start: Path, repo_root: Path, imports: tuple[claim.Import, ...]) -> frozenset[Path]:
        """The repository files that ``imports`` (those of the claim at ``start``, in ``folder``) reach."""
        roots = self._roots.get((folder, repo_root))
        if roots is None:
            _exists(repo_root / "src", Path.is_dir, self.probed)  # whether it is a folder decides the roots
            roots = self._roots[(folder, repo_root)] = repo.import_roots(folder, repo_root)
        inside = self._inside(repo_root)
        seen: set[Path] = set()
        todo = [f for level, module, names in imports for f in self._lookup(start, level, module, names, roots)]
        while todo:
            current = todo.pop()
            if current in seen or not inside(current):
                continue  # numpy, the standard library: outside the repository, never our change
            seen.add(current)
            todo.extend(self._imported(current, roots))
        return frozenset(seen)

    def _inside(self, repo_root: Path) -> Callable[[Path], bool]:
        """Whether a resolved path is in the repository: a string prefix, the root resolved once."""
        root = str(self._resolved(repo_root))
        prefix = root.rstrip(os.sep) + os.sep
        return lambda path: str(path).startswith(prefix) or str(path) == root

    def _imported(self, file: Path, roots: tuple[Path, ...]) -> tuple[Path, ...]:
        """The files ``file``'s own imports resolve to under ``roots`` (a module's imports are read once per run)."""
        found = self._edges.get((file, roots))
        if found is None:
            found = tuple(f for level, module, names in _imports_of(file)
                          for f in self._lookup(file, level, module, names, roots))
            self._edges[(file, roots)] = found
        return found

    def _lookup(self, file: Path, level: int, module: str, names: tuple[str, ...],
                roots: tuple[Path, ...]) -> list[Path]:
        """``_resolve``, once per run for each import: an absolute one depends on the roots only, a relative one
        on the importing file's folder."""
        where = roots if level == 0 else file.parent
        key = (where, level, module, names)
        found = self._modules.get(key)
        if found is None:
            found = self._modules[key] = _resolve(file, level, module, names, roots, self.probed)
        return found

    def _resolved(self, path: Path) -> Path:
        real = self._real.get(path)
        if real is None:
            real = self._real[path] = path.resolve()
        return real

    def _key(self, path: Path, repo_root: Path) -> str | None:
        """``relative_key``, each path and root resolved once per run."""
        found = self._keys.get((path, repo_root), ...)
        if found is ...:
            try:
                found = self._resolved(path).relative_to(self._resolved(repo_root)).as_posix()
            except ValueError:
                found = None
            self._keys[(path, repo_root)] = found
        return found


def _imports_of(path: Path) -> list[claim.Import]:
    """The imports of the file at ``path``, parsed once per version of the file."""
    try:
        stat = path.stat()
    except OSError:
        return []
    return _parsed_imports(path, (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino))


@functools.lru_cache(maxsize=4096)
def _parsed_imports(path: Path, version: tuple[int, int, int, int]) -> list[claim.Import]:
    # Keyed by the file's (mtime, ctime, size, inode) too, so a long-lived process (the MCP
    # server) sees edits, also one to the same size with its mtime set back; 40 claims
    # importing one package would otherwise parse its modules 40 times.
    try:
        return imported_names(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def claim_inputs(
    claim_path: Path, repo_root: Path, target: str | None, config_file: Path | None,
    imports: Sequence[claim.Import] | None = None,
) -> frozenset[str]:
    """The repository keys whose change re-runs the claim: closure, target file, physverify.yaml."""
    return Closures().inputs(claim_path, repo_root, target, config_file, imports)


def is_affected(inputs: frozenset[str], changed: frozenset[str]) -> bool:
    """True when any input of a claim is among the changed files."""
    return not inputs.isdisjoint(changed)
