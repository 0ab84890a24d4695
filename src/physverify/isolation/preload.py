"""Which modules the fork server preloads for a claim (DESIGN.md, "Warm start"; issue 11, item 2).

physverify's core always; numpy and physverify's numerics whenever the claim's static import
closure may use them (``_needs_numpy``: nearly every claim); besides them, the installed (never
the repository's) third-party modules that closure takes from outside the repository, and what
physverify.yaml's ``preload:`` names. Modules that start threads, an MPI runtime or a GPU
context at import are left out unless named: a fork does not carry those over.
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import pkgutil  # here, so the fork server has it: no claim's process imports it (provided_top_levels)
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# Always in the server: what every claim's process imports (the replay's server starts with these
# alone, while the claims are read, and imports NUMPY_PRELOAD when the first claim that needs it
# comes: forkclient.ForkServer.grow).
BASE_PRELOAD = ("physverify", "physverify.checks", "physverify.isolation.child", "ctypes")
# For every claim that may use numpy: numpy, and physverify's numerics, which import it.
NUMPY_PRELOAD = ("numpy", "physverify.mms", "physverify.order", "physverify.studies")
# What ``from physverify import ...`` may name without numpy being imported: the names the
# package takes from physverify.checks and physverify.refine (tests/isolation/test_preload.py holds this
# to physverify's own table), and those modules themselves.
_NUMPY_FREE_NAMES = frozenset({
    "ERROR", "EXACT", "FAIL", "INCONCLUSIVE", "PASS", "SKIP", "STATUSES", "Check", "CheckOutcome", "OrderResult",
    "Result", "SkipCheck", "requires", "run_check", "Refinement", "refine", "__version__", "checks",
})
_NUMPY_FREE_MODULES = frozenset({"physverify.checks", "physverify.refine"})
# Never preloaded unless physverify.yaml's ``preload:`` names them: they start threads, an MPI
# runtime or a GPU context at import, which a fork does not carry over (issue 11, item 2).
# jax and numba are not among them: importing them starts no thread and sets up no backend
# (XLA's client and Numba's threading layer start at the first computation), and preloading
# them spares each JAX claim the 1-2 s of JAX's import. A module that does compute at import
# is caught before each fork (forkserver.fork_hazard): its claims run in fresh interpreters.
NEVER_PRELOAD = frozenset({
    "cupy", "dask", "distributed", "matplotlib", "mpi4py", "multiprocessing",
    "petsc4py", "pycuda", "pyopencl", "ray", "slepc4py", "taichi", "tensorflow", "tkinter", "torch", "warp",
})
# Preloaded when the claims import them: they import without starting a thread (tests/isolation/test_preload.py
# holds this to the installed versions).
FORK_SAFE_FRAMEWORKS = ("jax", "numba")
_SUFFIXES = tuple(importlib.machinery.all_suffixes())  # what a FileFinder adds to a name (_listed)
# physverify names whose work imports a module lazily (so `physverify --version` stays fast).
_LAZY_NEEDS = {"reference_study": "scipy.integrate"}


# (module, names) of every import in a claim's static closure that its repository does not
# provide (gate.affected.outside_imports). The caller finds them: reading claims and their
# repository is the gate's job, and the child's layer imports nothing above it.
Outside = Sequence[tuple[str, tuple[str, ...]]]


def preload_for(path: Path, extra: Sequence[str], explicit: Iterable[str] = (),
                outside: Outside = ()) -> frozenset[str]:
    """BASE_PRELOAD, the modules of ``outside`` (the claim's imports from outside its repository), ``explicit``,
    and NUMPY_PRELOAD when those may use numpy.

    The answer is remembered for the claim's root and imports: the claims of one folder mostly
    import alike, and the module lookups cost each claim milliseconds. An answer gone stale
    (a module installed or removed meanwhile) costs speed, never correctness: a module the
    server lacks is imported by the claim's own process, and what a folder provides is dropped
    from every forked child whatever was preloaded (forkserver.drop_shadowed).
    """
    root = Path(extra[0]) if extra else path.parent
    return _preload_for(root, tuple(explicit), tuple((module, tuple(names)) for module, names in outside))


@functools.lru_cache(maxsize=4096)
def _preload_for(root: Path, explicit: tuple[str, ...], outside: tuple[tuple[str, tuple[str, ...]], ...]
                 ) -> frozenset[str]:
    found: set[str] = set()
    numpy = False
    for module, names in outside:
        found.update(_candidates(module, names))
        numpy = numpy or _needs_numpy(module, names)
    # physverify.yaml is repository content too: what it names must also live outside the repository
    asked = {m for m in explicit if _preloadable(m, root, allow_any=True)}
    chosen = frozenset(BASE_PRELOAD) | {m for m in found if _preloadable(m, root)} | asked
    return (chosen | frozenset(NUMPY_PRELOAD)) if numpy else chosen


def _needs_numpy(module: str, names: tuple[str, ...]) -> bool:
    """Whether an import of ``names`` from ``module`` (none: ``import module``) may import numpy in the claim.

    Only the standard library and physverify's numpy-free names are known not to; any other
    installed module is taken to (most that physics claims import do). A claim that imports
    numpy where no static import shows it (``importlib``) imports it in its own process.
    """
    top = module.split(".")[0]
    if top == "physverify":
        if module in _NUMPY_FREE_MODULES:
            return False
        return module != "physverify" or not names or not set(names) <= _NUMPY_FREE_NAMES
    return top not in sys.stdlib_module_names and top != "__future__"


def _candidates(module: str, names: tuple[str, ...]) -> set[str]:
    """``from scipy import integrate`` may name a submodule: try it when a file of that name is there.

    ``from physverify import PASS`` names an attribute: asking the server to preload
    ``physverify.PASS`` would fail there, and yet count as a module the running server lacks,
    so the first such claim replaced the server started while the claims were read.
    """
    found = {module} | {f"{module}.{name}" for name in names if name != "*" and _may_be_submodule(module, name)}
    if module.split(".")[0] == "physverify":
        found |= {_LAZY_NEEDS[name] for name in names if name in _LAZY_NEEDS}
    return found


def _may_be_submodule(package: str, name: str) -> bool:
    """False when ``package`` is found on disk and holds no module ``name``; True when it does or cannot be told.

    Looks at the folders only (importlib.util.find_spec of a dotted name would import the package).
    """
    import importlib.machinery
    import importlib.util

    parts = [*package.split("."), name]
    if not all(part.isidentifier() for part in parts):
        return False
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return True
    if spec is None or spec.submodule_search_locations is None:
        return spec is None  # not found here: let the server try; a plain module has no submodules
    suffixes = tuple(importlib.machinery.all_suffixes())
    folders = list(spec.submodule_search_locations)
    for depth, part in enumerate(parts[1:], start=2):
        last = depth == len(parts)
        deeper = [os.path.join(folder, part) for folder in folders if os.path.isdir(os.path.join(folder, part))]
        if deeper:
            folders = deeper
            continue
        if not last:
            return False
        return any(os.path.isfile(os.path.join(folder, part + suffix)) for folder in folders for suffix in suffixes)
    return True


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


def provided_top_levels(entries: Iterable[str], among: Iterable[str]) -> set[str]:
    """Those of the top-level module names ``among`` that the folders ``entries`` provide.

    Asked of the import system itself (each folder's finder, as ``sys.path`` would use it): a
    module or a package there counts; a folder without ``__init__`` does not, because a
    namespace portion never stands in for an installed package of that name. The finders
    stay in ``sys.path_importer_cache``, so in a claim's process (the fork server's
    ``drop_shadowed``, whose folders are the claim's sys.path) its own imports use the same
    listing of each folder: one listing per folder, which is what a fresh interpreter pays
    (examining every entry cost each claim of a 1,000-file claims folder a few milliseconds).
    """
    found: set[str] = set()
    names = list(among)
    for entry in entries:
        try:
            finder = pkgutil.get_importer(entry)
        except (OSError, ValueError):
            continue
        if finder is None or not names:
            continue
        if _provides(finder, names[0]):  # the first find_spec fills the folder's listing
            found.add(names[0])
        listing = _listing(finder)
        found.update(name for name in names[1:]
                     if (listing is None or _listed(name, listing)) and _provides(finder, name))
    return found


def _provides(finder: Any, name: str) -> bool:
    """Whether ``finder`` finds ``name`` as a module or package with a loader (a namespace portion has none)."""
    try:
        spec = finder.find_spec(name)
    except (ImportError, OSError, ValueError):
        return False
    return spec is not None and spec.loader is not None


def _listing(finder: object) -> set[str] | None:
    """The listing the folder's standard finder keeps of its folder, or None where it cannot answer for it.

    A FileFinder finds a module, package or extension X only through an entry X or X + one
    of the import suffixes in that listing (``_path_cache``, filled by its first
    ``find_spec``, which ``provided_top_levels`` always makes). Checking it first spares each
    other name the finder's own walk, a stat of the folder and a path per suffix: 1.2 ms of
    every claim's process. Any other finder, a listing not kept as a set (another Python), or
    a folder matched without regard to case (PYTHONCASEOK) gives None: every name is asked.
    """
    listing = getattr(finder, "_path_cache", None)
    if type(finder) is not importlib.machinery.FileFinder or not isinstance(listing, set) or "PYTHONCASEOK" in os.environ:
        return None
    return listing


def _listed(name: str, listing: set[str]) -> bool:
    return name in listing or any(name + suffix in listing for suffix in _SUFFIXES)
