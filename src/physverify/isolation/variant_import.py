"""In the claim's child: serve the variant's source in place of CLAIM["file"] (issue 17, item 2).

A meta-path finder placed first on ``sys.meta_path`` asks the ordinary path finder where a
module would come from; when that file resolves to the claim's target, the module is
loaded from the variant's source instead, whatever name it is imported by (``solver``,
``pkg.solver``, or through a helper imported before the claim file). The module keeps the
real file's ``__file__`` (so paths relative to it still work), gets no ``__cached__``, and
no .pyc is written: the repository is never touched, which is what lets the sandbox mount
it read-only and keeps the file byte-identical whatever happens to the run.

Where the variant cannot reach: code that reads the file itself (``open(__file__)``,
``runpy.run_path``, ``importlib.util.spec_from_file_location``) sees the real file. The child
reports whether the variant was imported at all (``served``), so a claim that never
imports its target is not decidable instead of silently comparing the code with itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType


def _resolved(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # a NUL byte or an unencodable name: no file of ours
        return ""


class _VariantLoader(importlib.abc.Loader):
    """Executes the variant's source as the module at ``origin``."""

    def __init__(self, finder: VariantFinder, origin: str) -> None:
        self._finder = finder
        self._origin = origin

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        self._finder.served += 1
        # ModuleSpec.cached computes a .pyc path again when set to None; the variant has no
        # cached form, and nothing should go looking for one.
        module.__cached__ = None  # type: ignore[attr-defined]
        exec(self.get_code(module.__name__), module.__dict__)  # noqa: S102 - the code under test, as import runs it

    def get_code(self, fullname: str) -> CodeType:
        code: CodeType = compile(self._finder.source, self._origin, "exec", dont_inherit=True)
        return code

    def get_source(self, fullname: str) -> str:
        return self._finder.source


class VariantFinder(importlib.abc.MetaPathFinder):
    """Finds what the path finder finds, and loads the target file from the variant's source."""

    def __init__(self, target: str, source: str) -> None:
        self.target = _resolved(target)
        self.source = source
        self.served = 0

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.has_location or spec.origin is None or _resolved(spec.origin) != self.target:
            return None  # the import system goes on as without us
        spec.loader = _VariantLoader(self, spec.origin)
        # Tracebacks show the variant's lines, not the file's: linecache keeps an entry with
        # no modification time for good (checkcache skips it).
        linecache.cache[spec.origin] = (len(self.source), None, self.source.splitlines(True), spec.origin)
        return spec


def install(target: str, source: str) -> VariantFinder:
    """Put the finder first on ``sys.meta_path``; drop a module of the target already imported (fork mode)."""
    finder = VariantFinder(target, source)
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if isinstance(origin, str) and _resolved(origin) == finder.target:
            del sys.modules[name]  # preloaded by a fork server: imported again, now from the variant
    sys.meta_path.insert(0, finder)
    return finder
