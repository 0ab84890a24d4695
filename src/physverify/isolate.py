"""The fresh child process that runs a claim's (or a spec's) checks: spec section 4.

This is the only place that starts code under test. The parent (``run_child``) starts
``python -B -m physverify.isolate MODE FILE`` in the file's folder, in a new session
(its own process group), and waits at most ``timeout_s`` for the whole run. The child
(``main``) points file descriptor 1 at stderr before anything of the user's is imported,
so whatever Python, C or Fortran code prints cannot reach the result stream; it sends
its result as a marker line and one JSON object on a saved copy of the original stdout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from physverify.checks import Check, describe_exception, run_check
from physverify.text import clean

MARKER = "\x1ephysverify-result-v1\x1e"
MODES = ("claim", "spec")
STDERR_TAIL_CHARS = 2000
# stdout carries only the marker and the result; cap what is kept in case the code under
# test writes to it anyway (through a descriptor it opened itself, for instance).
_STDOUT_CAP = 64 * 1024 * 1024
_STDERR_KEEP = 64 * 1024
# After the child exits or is killed, how long the readers may take to drain the pipes.
# A process that left the group on purpose (setsid) can hold them open; we stop waiting.
_DRAIN_S = 5.0


@dataclass(frozen=True)
class ChildOutcome:
    """What one child run gave: exit status, the parsed result (or None), the stderr tail."""

    returncode: int | None
    payload: dict[str, Any] | None
    stderr_tail: str
    timed_out: bool
    seconds: float

    def failure(self) -> str | None:
        """A sentence on why there is no result (died, killed, no marker), or None when there is one."""
        if self.payload is not None or self.timed_out:
            return None
        code = self.returncode
        if code is not None and code < 0:
            name = _signal_name(-code)
            return f"the claim's process was killed by {name} before it reported a result"
        if code:
            return f"the claim's process exited with code {code} before it reported a result"
        return "the claim's process ended without reporting a result"


def _signal_name(number: int) -> str:
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number}"
    description = {signal.SIGSEGV: "a segmentation fault", signal.SIGKILL: "SIGKILL (often the out-of-memory killer)"}
    return f"signal {sig.name}" + (f" ({description[sig]})" if sig in description else "")


# --- the parent -----------------------------------------------------------------------
def run_child(
    mode: str,
    path: Path,
    *,
    timeout_s: float,
    sys_path: Sequence[Path] = (),
    env: dict[str, str] | None = None,
) -> ChildOutcome:
    """Run ``path`` in a fresh interpreter (mode ``claim`` or ``spec``) and collect its result.

    ``sys_path`` entries go after the file's own folder on the child's sys.path. At
    ``timeout_s`` the child and every process in its group are killed.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    path = Path(path).resolve()
    command = [sys.executable, "-B", "-m", "physverify.isolate", mode, str(path)]
    for entry in sys_path:
        command += ["--sys-path", str(Path(entry).resolve())]
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONDONTWRITEBYTECODE"] = "1"  # an edit within one second is still seen; nothing added to the repo
    child_env["PYTHONUNBUFFERED"] = "1"  # the stderr tail is complete even when the child is killed
    child_env["PYTHONPATH"] = _package_parent()  # the child imports this physverify, wherever the cwd is
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=path.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env,
        **_new_group_kwargs(),
    )
    return _collect(proc, timeout_s, start)


def _package_parent() -> str:
    here = str(Path(__file__).resolve().parent.parent)
    existing = os.environ.get("PYTHONPATH")
    return here if not existing else os.pathsep.join([here, existing])


def _new_group_kwargs() -> dict[str, Any]:
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
    return {"start_new_session": True}


def _collect(proc: subprocess.Popen[bytes], timeout_s: float, start: float) -> ChildOutcome:
    assert proc.stdout is not None and proc.stderr is not None
    out = _Reader(proc.stdout, keep=_STDOUT_CAP, keep_head=True)
    err = _Reader(proc.stderr, keep=_STDERR_KEEP, keep_head=False)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Also after a normal exit: a grandchild left running would hold the pipes open
        # and keep burning CPU after the verdict.
        _kill_group(proc)
        proc.wait()
    out.join(_DRAIN_S)
    err.join(_DRAIN_S)
    seconds = time.monotonic() - start
    payload = None if timed_out else parse_payload(out.data())
    tail = err.data().decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
    return ChildOutcome(proc.returncode, payload, tail, timed_out, seconds)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if os.name == "nt":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True, check=False)
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own session, so pgid == pid
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


class _Reader:
    """Drains one pipe on a daemon thread, keeping the head (stdout) or the tail (stderr)."""

    def __init__(self, stream: IO[bytes], *, keep: int, keep_head: bool) -> None:
        self._buffer = bytearray()
        self._keep = keep
        self._keep_head = keep_head
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
                if self._keep_head:
                    room = self._keep - len(self._buffer)
                    self._buffer += chunk[: max(room, 0)]
                else:
                    self._buffer += chunk
                    del self._buffer[: max(len(self._buffer) - self._keep, 0)]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def data(self) -> bytes:
        return bytes(self._buffer)


def parse_payload(stdout: bytes) -> dict[str, Any] | None:
    """The first JSON value after the marker line, or None when there is none.

    Only the first value is read, so whatever the code under test writes to the real
    stdout after it (an atexit handler, a C library flushing at exit) is ignored.
    """
    text = stdout.decode("utf-8", errors="replace")
    where = text.find(MARKER)
    if where < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[where + len(MARKER) :].lstrip())
    except json.JSONDecodeError:
        return None
    return clean(value) if isinstance(value, dict) else None  # no lone surrogate enters the parent (issue 13)


# --- the child ------------------------------------------------------------------------
def main(argv: Sequence[str]) -> int:
    """Entry of the child: redirect fd 1, load the file, run its checks, send the result."""
    mode, path, extra = _parse_child_args(argv)
    result_fd = _divert_stdout()
    sys.path[:] = [str(path.parent)] + list(extra) + [p for p in sys.path if p not in ("", str(path.parent))]
    payload = run_claim(path) if mode == "claim" else run_spec(path)
    sys.stdout.flush()
    os.write(result_fd, (MARKER + "\n" + json.dumps(payload) + "\n").encode("utf-8"))
    os.close(result_fd)
    return 0


def _parse_child_args(argv: Sequence[str]) -> tuple[str, Path, list[str]]:
    mode, path, rest = argv[0], Path(argv[1]), list(argv[2:])
    extra = [rest[i + 1] for i in range(0, len(rest), 2) if rest[i] == "--sys-path"]
    return mode, path, extra


def _divert_stdout() -> int:
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
    except Exception as exc:  # recorded: the load error names what the function raised
        traceback.print_exc()
        raise _LoadProblem(f"{name}() raised {describe_exception(exc)}") from exc
    items = [value] if single else value
    if not single and (not isinstance(value, (list, tuple)) or not value):
        raise _LoadProblem(f"{name}() returned {_what(value)}, not a non-empty list of physverify Check")
    for item in items:
        if not isinstance(item, Check):
            raise _LoadProblem(f"{name}() returned {_what(item)}, not a physverify Check")
    return list(items)


def _what(value: object) -> str:
    if isinstance(value, (list, tuple)) and not value:
        return "an empty list"
    return "None" if value is None else f"a {type(value).__name__}"


class _LoadProblem(Exception):
    pass


def _guarded(path: Path, body: Callable[[ModuleType], dict[str, Any]]) -> dict[str, Any]:
    try:
        module = _load(path)
    except BaseException as exc:  # recorded: an import that fails is a load error, with its traceback on stderr
        if isinstance(exc, KeyboardInterrupt):
            raise
        traceback.print_exc()
        return {"load_error": f"importing it raised {describe_exception(exc)}"}
    try:
        return body(module)
    except _LoadProblem as exc:
        return {"load_error": str(exc)}


def run_claim(path: Path) -> dict[str, Any]:
    """The child's work for a claim: build and run the control and every check."""

    def body(module: ModuleType) -> dict[str, Any]:
        control = _call_for_checks(module, "control", single=True)[0]
        checks = _call_for_checks(module, "checks", single=False)
        return {
            "load_error": None,
            "control": run_check(control).to_dict(),
            "checks": [run_check(check).to_dict() for check in checks],
        }

    return _guarded(path, body)


def run_spec(path: Path) -> dict[str, Any]:
    """The child's work for a spec file (``physverify run``): run every check of checks()."""

    def body(module: ModuleType) -> dict[str, Any]:
        checks = _call_for_checks(module, "checks", single=False)
        return {"load_error": None, "checks": [run_check(check).to_dict() for check in checks]}

    return _guarded(path, body)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
