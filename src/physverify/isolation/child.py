"""The claim's child: its environment, and its main, the same in both isolation modes (spec section 4).

Whether started fresh (fresh.py) or forked from the warm server (forkserver.py), the child
runs ``child_main``: the claim's folder first on sys.path, the file loaded under its own
name, control() and checks() called and run through ``run_check``, and the result sent on
the saved copy of the original stdout (protocol.py). Before anything of the user's is
imported, file descriptor 1 points at stderr (``divert_stdout``), so whatever Python, C or
Fortran code prints cannot reach the result stream. Every error of the claim's own making
becomes a load error or the check's ERROR, never a lost result.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from physverify.checks import ERROR, Check, CheckOutcome, describe_exception, run_check
from physverify.isolation.procgroup import TOKEN_ENV
from physverify.isolation import privatetmp as _privatetmp
from physverify.isolation import variant_import as _variant_import
from physverify.isolation.protocol import encode_progress, encode_result
from physverify.isolation.variant_channel import VariantSource


def interpreter(module: str) -> list[str]:
    """The command line of every interpreter physverify starts for a claim or a server: ``python -s -B -m MODULE``.

    ``-s`` leaves the user's site-packages out, and with it the ``.pth`` files there, which
    Python runs at start: a ``~/.local/lib/python3.X/site-packages/zz.pth`` one claim wrote
    into a HOME the others share (the sandbox's, the user's own) ran inside every interpreter
    started after it, the victim's included. The paths a child gets are the ones the design
    names (the claim's folder, the root, src/, then PYTHONPATH and the interpreter's own
    site-packages). ``-B``: no .pyc is written. ``-P`` (Python 3.11 on): the working folder, the
    claim's own, is not put first on the path while physverify's child code is imported, so a
    ``physverify/`` or ``socket.py`` in a claims folder does not run as that code, before the
    claim's own namespace is made inside the sandbox (privatetmp.py).
    """
    return [sys.executable, "-s", "-B", *_SAFE_PATH, "-m", module]


_SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []


def startup_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for an interpreter physverify starts: no user site (as ``-s``), no start-up file of the user's."""
    started = dict(env)
    started["PYTHONNOUSERSITE"] = "1"  # for what the claim itself starts with sys.executable, too
    started.pop("PYTHONSTARTUP", None)
    return started


def child_environment(env: dict[str, str] | None) -> dict[str, str]:
    """The child's environment: the caller's (or ``env``) plus what spec section 4 fixes."""
    child_env = startup_environment(os.environ if env is None else env)
    child_env["PYTHONDONTWRITEBYTECODE"] = "1"  # an edit within one second is still seen; nothing added to the repo
    child_env["PYTHONUNBUFFERED"] = "1"  # the stderr tail is complete even when the child is killed
    child_env["PYTHONPATH"] = _package_parent(child_env.get("PYTHONPATH"))  # this physverify, wherever the cwd is
    child_env[TOKEN_ENV] = uuid.uuid4().hex
    return child_env


@functools.cache
def package_parent() -> str:
    """The folder holding this physverify package: first on every child's and the server's path (found once)."""
    return str(Path(__file__).resolve().parents[2])


def _package_parent(existing: str | None) -> str:
    here = package_parent()
    return here if not existing else os.pathsep.join([here, existing])


def child_main(mode: str, path: Path, extra: Sequence[str], result_fd: int, key: bytes,
               variant: VariantSource | None = None) -> None:
    """The child's work, the same in both modes: sys.path, load, run, send the result on ``result_fd``.

    ``key`` tags the result (protocol.py); it came from the parent, never from the environment.
    With ``variant`` (issue 17), CLAIM["file"] is imported from its source (variant_import.py),
    and the result says whether it was imported at all (``variant_served``).
    """
    sys.path[:] = [str(path.parent)] + list(extra) + [p for p in sys.path if p not in ("", str(path.parent))]
    finder = _variant_import.install(variant.target, variant.source) if variant is not None else None

    def finished(role: str, outcome: dict[str, Any]) -> None:  # shown by confirm as it comes (protocol.py)
        _write_all(result_fd, encode_progress(role, outcome, key))

    if mode == "list":
        payload = list_spec(path)
    else:
        payload = run_claim(path, finished) if mode == "claim" else run_spec(path, finished)
    if finder is not None:
        payload["variant_served"] = finder.served > 0
    sys.stdout.flush()
    _write_all(result_fd, encode_result(payload, key))
    os.close(result_fd)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def run_as_process(mode: str, path: Path, extra: Sequence[str], result_fd: int, key: bytes,
                   variant: VariantSource | None = None) -> int:
    """``child_main`` in a forked process (both modes), ended as the interpreter would end it: its exit code."""
    try:
        _privatetmp.enter()  # inside the sandbox: this claim's own /tmp and HOME, before any of its code runs
        child_main(mode, path, extra, result_fd, key, variant)
        code = 0
    except SystemExit as exc:  # as the interpreter would end a fresh child
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback on stderr, exit code 1
        traceback.print_exc()
        code = 1
    return _exit_like_interpreter(code)


def _exit_like_interpreter(code: int) -> int:
    """What Py_Finalize does that os._exit skips: wait for threads, run atexit, flush."""
    import atexit
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - recorded as the exit code, as the interpreter would
        return code or 1
    return code


def divert_stdout() -> int:
    """Save the real stdout for the result; point fd 1 (and sys.stdout) at stderr."""
    sys.stdout.flush()
    saved = os.dup(1)  # not inherited by the code's own subprocesses (PEP 446)
    os.dup2(2, 1)
    return saved


def _load(path: Path) -> ModuleType:
    name = path.stem if path.stem.isidentifier() else "physverify_claim"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a helper that imports the claim by name gets this module
    spec.loader.exec_module(module)
    return module


def _call_for_checks(module: ModuleType, name: str, *, single: bool) -> list[Check]:
    """Call ``name()`` and return its Check(s); raise _LoadProblem when it is missing or wrong."""
    function = getattr(module, name, None)
    if not callable(function):
        raise _LoadProblem(f"{name}() is not defined")
    try:
        value = function()
    except BaseException as exc:  # recorded: also SystemExit and KeyboardInterrupt, the claim's own (issue 13, item 22)
        traceback.print_exc()
        raise _LoadProblem(f"{name}() raised {describe_exception(exc)}") from exc
    items = [value] if single else value
    if not single and (not isinstance(value, (list, tuple)) or not value):
        raise _LoadProblem(f"{name}() returned {_what(value)}, not a non-empty list of physverify Check")
    for item in items:
        if not isinstance(item, Check):
            raise _LoadProblem(f"{name}() returned {_what(item)}, not a physverify Check")
        for field_name in ("family", "label"):
            if not isinstance(getattr(item, field_name), str):  # it goes into the JSON result and the reports
                raise _LoadProblem(
                    f"{name}() returned a Check whose {field_name} is {_what(getattr(item, field_name))}, not a string"
                )
    return list(items)


def _what(value: object) -> str:
    if isinstance(value, (list, tuple)) and not value:
        return "an empty list"
    return "None" if value is None else f"a {type(value).__name__}"


class _LoadProblem(Exception):
    pass


def _run(check: Check) -> dict[str, Any]:
    """``run_check`` plus what only the child must guard: a check that tries to end the process."""
    start = time.monotonic()
    try:
        outcome = run_check(check)
    except ValueError as exc:  # run_check refuses a bad budget_s before running: that check is miswritten
        outcome = CheckOutcome(check.label, check.family, ERROR, f"{exc}; the check was not run", 0.0)
    except (SystemExit, KeyboardInterrupt) as exc:  # recorded as the check's ERROR (issue 13, item 22)
        traceback.print_exc()
        message = f"{describe_exception(exc)}: a check must return a Result, not end the process"
        outcome = CheckOutcome(check.label, check.family, ERROR, message, time.monotonic() - start)
    if not isinstance(outcome.message, str):  # Result(PASS, 42): the ledger holds text
        message = f"the check's Result has a message that is {_what(outcome.message)}, not a string"
        outcome = CheckOutcome(check.label, check.family, ERROR, message, outcome.seconds)
    return outcome.to_dict()


def _guarded(path: Path, body: Callable[[ModuleType], dict[str, Any]]) -> dict[str, Any]:
    try:
        module = _load(path)
    except BaseException as exc:  # noqa: BLE001 - recorded: an import that fails (or exits) is a load error
        traceback.print_exc()
        return {"load_error": f"importing it raised {describe_exception(exc)}"}
    try:
        return body(module)
    except _LoadProblem as exc:
        return {"load_error": str(exc)}


Finished = Callable[[str, dict[str, Any]], None]  # told each outcome as it is made: its role, the outcome


def _told(role: str, check: Check, finished: Finished | None) -> dict[str, Any]:
    outcome = _run(check)
    if finished is not None:
        finished(role, outcome)
    return outcome


def run_claim(path: Path, finished: Finished | None = None) -> dict[str, Any]:
    """The child's work for a claim: build and run the control and every check, each told to ``finished``."""

    def body(module: ModuleType) -> dict[str, Any]:
        control = _call_for_checks(module, "control", single=True)[0]
        checks = _call_for_checks(module, "checks", single=False)
        first = _told("control", control, finished)
        return {"load_error": None, "control": first, "checks": [_told("check", check, finished) for check in checks]}

    return _guarded(path, body)


def list_spec(path: Path) -> dict[str, Any]:
    """A spec file's checks, each named by its family and label, in order; none is run."""

    def body(module: ModuleType) -> dict[str, Any]:
        checks = _call_for_checks(module, "checks", single=False)
        return {"load_error": None, "checks": [{"family": check.family, "label": check.label} for check in checks]}

    return _guarded(path, body)


def run_spec(path: Path, finished: Finished | None = None) -> dict[str, Any]:
    """The child's work for a spec file (``physverify run``): run every check of checks(), each told to ``finished``."""

    def body(module: ModuleType) -> dict[str, Any]:
        checks = _call_for_checks(module, "checks", single=False)
        return {"load_error": None, "checks": [_told("check", check, finished) for check in checks]}

    return _guarded(path, body)
