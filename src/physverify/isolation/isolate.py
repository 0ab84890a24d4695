"""The child process that runs a claim's (or a spec's) checks: spec section 4. The public door.

This is the only place that starts code under test; confirm, replay, run_specs and the MCP
server call ``run_child``. Two ways to start the child, one child (child.py):

- ``fresh``: a new interpreter per claim, in a new session (fresh.py); every child pays the
  interpreter start and its imports.
- ``fork`` (the default on Linux): the child is forked from a warm server that has already
  imported numpy, physverify and the third-party modules the claims import (forkclient.py,
  forkserver.py, preload.py).

The rooms behind this door: procgroup.py (process groups, signals, killing), protocol.py
(the marker, the JSON result, the size cap), child.py (the child's environment and main).
"""

from __future__ import annotations

import functools
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from physverify.checks import RUN_DEADLINE_ENV
from physverify.isolation.child import child_environment
from physverify.isolation import guard
from physverify.isolation.fresh import run_fresh
from physverify.isolation.modes import FORK, FRESH, ISOLATION_MODES
from physverify.isolation.procgroup import Stopped, refuse_if_stopping, stopping
from physverify.isolation.protocol import ChildOutcome, Progress
from physverify.isolation.variant_channel import VariantSource, descriptor

if TYPE_CHECKING:
    from physverify.isolation.preload import Outside  # the fork mode's module: not imported for a fresh run

__all__ = [
    "FORK", "FRESH", "ISOLATION_MODES", "MODES", "ChildOutcome", "Stopped", "VariantSource",
    "fork_supported", "refuse_if_stopping", "resolve_isolation", "run_child", "stopping",
]

MODES = ("claim", "spec", "list")  # list: a spec file's checks named, none run (the pytest plugin's collection)


def fork_supported() -> bool:
    """Forking a warm server is used on Linux only (macOS frameworks are not fork-safe)."""
    return sys.platform.startswith("linux")


def resolve_isolation(requested: str | None) -> str:
    """``fresh`` or ``fork``: the requested mode, ``fork`` by default, ``fresh`` where fork is not safe."""
    if requested is not None and requested not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_MODES)}, not {requested!r}")
    if requested == FRESH or not fork_supported():
        return FRESH
    return FORK


def run_child(
    mode: str,
    path: Path,
    *,
    timeout_s: float,
    sys_path: Sequence[Path] = (),
    env: dict[str, str] | None = None,
    isolation: str | None = None,
    preload: Sequence[str] = (),
    variant: VariantSource | None = None,
    outside_imports: Callable[[], Outside] | None = None,
    private_home: bool = False,
    progress: Progress | None = None,
) -> ChildOutcome:
    """Run ``path`` in a child (mode ``claim`` or ``spec``) and collect its result.

    ``sys_path`` entries go after the file's own folder on the child's sys.path. At
    ``timeout_s`` the child and every process in its group are killed. ``isolation`` is
    ``fresh`` or ``fork`` (None: the default, see ``resolve_isolation``); ``preload`` names
    modules the fork server imports besides ``outside_imports()``, the claim's imports from
    outside its repository (asked in fork mode only; none when not given).
    ``variant``: the child imports CLAIM["file"] from this source instead (issue 17).
    ``private_home``: the child gets a new empty HOME and TMPDIR of its own (inside the sandbox,
    where every claim of a run would otherwise share one writable HOME).
    ``progress`` is told each control and check as the child finishes it: ``{"role": ..., "outcome": ...}``
    (for display only; the result decides).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    refuse_if_stopping()
    path = Path(path).resolve()
    extra = [_resolved(str(entry)) for entry in sys_path]
    child_env = child_environment(env)
    # The child learns when the run will be killed, so a refinement plan stops in time and reports its levels.
    child_env[RUN_DEADLINE_ENV] = repr(time.time() + timeout_s)
    before = guard.snapshot()
    guard.check(before, now=before)  # changed since the run began: no claim starts under limits a claim chose
    try:
        with descriptor(variant) as variant_fd, _own_home(child_env, private_home):
            if resolve_isolation(isolation) != FORK:
                outcome = run_fresh(mode, path, extra, child_env, timeout_s, variant_fd, progress)
            else:
                from physverify.isolation import forkclient  # not imported for a fresh run, nor by `physverify --version`

                outcome = forkclient.run_forked(mode, path, extra, child_env, timeout_s=timeout_s, preload=preload,
                                                outside=outside_imports, variant_fd=variant_fd, progress=progress)
    except BaseException:  # re-raised, as the limits' own error when a claim lowered them (an EMFILE, say)
        guard.check(before)
        raise
    guard.check(before)  # this claim, or one beside it, changed physverify's limits: no verdict from this run
    return outcome


@functools.lru_cache(maxsize=256)
def _resolved(entry: str) -> str:
    """``entry`` resolved, remembered: every claim of a folder passes the same root and src/ (a dozen lstat calls each)."""
    return str(Path(entry).resolve())


@contextmanager
def _own_home(child_env: dict[str, str], private: bool) -> Iterator[None]:
    """With ``private``: HOME and TMPDIR of ``child_env`` become new empty folders for this child alone, removed after.

    What one claim leaves in its HOME (a ``.pth`` file, a matplotlibrc, a numpy config) is
    then never read by the next claim's process, which looks in a HOME of its own.
    """
    if not private:
        yield
        return
    folder = Path(tempfile.mkdtemp(prefix="physverify-claim-"))
    try:
        for name, variable in (("home", "HOME"), ("tmp", "TMPDIR")):
            (folder / name).mkdir(mode=0o700)
            child_env[variable] = str(folder / name)
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)
