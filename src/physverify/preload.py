"""Which modules the fork server preloads for a claim (DESIGN.md, "Warm start"; issue 11, item 2).

Numpy and physverify always; besides them, the installed (never the repository's) third-party
modules the claim's static import closure takes from outside the repository, and what
physverify.yaml's ``preload:`` names. Modules that start threads, an MPI runtime or a GPU
context at import are left out unless named: a fork does not carry those over.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

# Always in the server: what every claim imports (numpy through physverify's studies).
BASE_PRELOAD = ("numpy", "physverify", "physverify.checks", "physverify.child", "physverify.mms",
                "physverify.order", "physverify.studies", "ctypes")
# Never preloaded unless physverify.yaml's ``preload:`` names them: they start threads, an MPI
# runtime or a GPU context at import, which a fork does not carry over (issue 11, item 2).
NEVER_PRELOAD = frozenset({
    "cupy", "dask", "distributed", "jax", "jaxlib", "matplotlib", "mpi4py", "multiprocessing", "numba",
    "petsc4py", "pycuda", "pyopencl", "ray", "slepc4py", "taichi", "tensorflow", "tkinter", "torch", "warp",
})
# physverify names whose work imports a module lazily (so `physverify --version` stays fast).
_LAZY_NEEDS = {"reference_study": "scipy.integrate"}


def preload_for(path: Path, extra: Sequence[str], explicit: Iterable[str] = (),
                imports: Sequence[tuple[int, str, tuple[str, ...]]] | None = None) -> frozenset[str]:
    """BASE_PRELOAD, the modules ``path``'s static import closure takes from outside the repository, ``explicit``.

    ``imports`` are the file's own (its reading), so the claim file is not read again.
    """
    from physverify import affected, repo

    root = Path(extra[0]) if extra else path.parent
    roots = repo.import_roots(path.parent, root)
    found: set[str] = set()
    for module, names in affected.outside_imports(path, root, roots, imports):
        found.update(_candidates(module, names))
    # physverify.yaml is repository content too: what it names must also live outside the repository
    asked = {m for m in explicit if _preloadable(m, root, allow_any=True)}
    return frozenset(BASE_PRELOAD) | {m for m in found if _preloadable(m, root)} | asked


def _candidates(module: str, names: tuple[str, ...]) -> set[str]:
    """``from scipy import integrate`` may name a submodule: try both (a failed preload is skipped)."""
    found = {module} | {f"{module}.{name}" for name in names if name != "*"}
    if module.split(".")[0] == "physverify":
        found |= {_LAZY_NEEDS[name] for name in names if name in _LAZY_NEEDS}
    return found


def _preloadable(module: str, root: Path, *, allow_any: bool = False) -> bool:
    """Installed outside the repository, and (unless ``allow_any``) not the standard library nor NEVER_PRELOAD."""
    import importlib.util

    top = module.split(".")[0]
    if not allow_any and (top in NEVER_PRELOAD or top in sys.stdlib_module_names or top == "__future__"):
        return False
    if not all(part.isidentifier() for part in module.split(".")):
        return False
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [spec.origin or "", *(spec.submodule_search_locations or [])]
    repo = str(root.resolve())
    # an editable install of the repository's own package is repository code
    return not any(p and (p == repo or p.startswith(repo + os.sep)) for p in places)


def provided_top_levels(entries: Iterable[str]) -> set[str]:
    """The top-level module names the folders ``entries`` provide: ``name.py``, an extension, a package.

    A folder without ``__init__.py`` is left out: a namespace portion never stands in for an
    installed package of that name, so it shadows nothing.
    """
    import importlib.machinery

    suffixes = tuple(importlib.machinery.all_suffixes())
    names: set[str] = set()
    for entry in entries:
        try:
            children = list(os.scandir(entry))
        except OSError:
            continue
        for child in children:
            try:
                if child.is_dir():
                    if any(os.path.isfile(os.path.join(child.path, "__init__" + s)) for s in suffixes):
                        names.add(child.name)
                elif child.name.endswith(suffixes):
                    names.add(next(child.name[: -len(s)] for s in suffixes if child.name.endswith(s)).split(".")[0])
            except OSError:
                continue
    return {name for name in names if name.isidentifier()}
