"""The child process that runs a claim's (or a spec's) checks: spec section 4.

This is the only place that starts code under test. Two ways to start the child, one child:

- ``fresh``: ``python -B -m physverify.isolate MODE FILE`` in the file's folder, in a new
  session (its own process group); every child pays the interpreter start and its imports.
- ``fork`` (the default on Linux): the child is forked from a warm server that has already
  imported numpy, physverify and the third-party modules the claims import (warm.py).

Either way the child (``child_main``) points file descriptor 1 at stderr before anything of
the user's is imported, so whatever Python, C or Fortran code prints cannot reach the
result stream; it sends its result as a marker line and one JSON object on a saved copy of
the original stdout. The parent waits at most ``timeout_s`` and kills the whole group.
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
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from physverify.checks import ERROR, Check, CheckOutcome, describe_exception, run_check
from physverify.text import clean

MARKER = "\x1ephysverify-result-v1\x1e"
MODES = ("claim", "spec")
FRESH = "fresh"
FORK = "fork"
ISOLATION_MODES = (FRESH, FORK)
STDERR_TAIL_CHARS = 2000
# The most a child may report (issue 13, item 14). The child checks its own result against
# it and says so; the parent keeps a little more than that of stdout, in case the code under
# test writes to the result descriptor itself, and says so when even that overflows.
RESULT_LIMIT = 32 * 1024 * 1024
_STDOUT_CAP = RESULT_LIMIT + 1024 * 1024
_STDERR_KEEP = 64 * 1024
# After the child exits or is killed, how long the readers may take to drain the pipes, both
# together (issue 13, item 23). A process that left the group on purpose (setsid) can hold
# them open; we stop waiting.
_DRAIN_S = 5.0
# Every child's environment carries a token of its own; after the run, any process still
# showing it is a leftover of that claim (a setsid escape) and is killed (fresh mode).
TOKEN_ENV = "PHYSVERIFY_CHILD_TOKEN"
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ChildOutcome:
    """What one child run gave: exit status, the parsed result (or None), the stderr tail."""

    returncode: int | None
    payload: dict[str, Any] | None
    stderr_tail: str
    timed_out: bool
    seconds: float
    overflowed: bool = False  # the child wrote more than _STDOUT_CAP to its result stream

    def failure(self) -> str | None:
        """A sentence on why there is no result (died, killed, no marker), or None when there is one."""
        if self.payload is not None or self.timed_out:
            return None
        if self.overflowed:
            return (f"the claim's process wrote more than {_STDOUT_CAP // 2**20} MiB to its result stream, "
                    "over the limit, so no result was read; report fewer checks or shorter messages")
        code = self.returncode
        if code is not None and code < 0:
            name = _signal_name(-code)
            return f"the claim's process was killed by {name} before it reported a result"
        if code:
            return f"the claim's process exited with code {code} before it reported a result"
        return "the claim's process ended without reporting a result"


class Stopped(Exception):
    """No child is started: the run is stopping (Ctrl-C or SIGTERM, see ``stopping``)."""


# The process group of every child running now, in either mode (each leads its own, pgid == pid),
# and whether new ones may start: what Ctrl-C and SIGTERM end on the way out.
_running_lock = threading.Lock()
_running: set[int] = set()
_stopping = 0  # how many ``stopping`` blocks are open


@contextmanager
def tracked(pid: int) -> Iterator[None]:
    """Count the group ``pid`` leads among the running ones while the caller waits; kill it if the wait is cut short.

    Cut short: Ctrl-C or SIGTERM raised in the waiting thread itself (replay --jobs 1).
    """
    with _running_lock:
        _running.add(pid)
        late = _stopping > 0
    try:
        if late:  # started just as the run began to stop
            kill_group(pid)
        yield
    except BaseException:
        kill_group(pid)
        raise
    finally:
        with _running_lock:
            _running.discard(pid)


@contextmanager
def stopping() -> Iterator[None]:
    """Kill every running child's group now, and any started inside the block; start none (``Stopped``).

    For the caller's way out after Ctrl-C or SIGTERM (replay): whatever waits for a child
    returns once it is killed, and a thread about to start one gets ``Stopped`` instead,
    also where fork mode would fall back to a fresh child.
    """
    global _stopping
    with _running_lock:
        _stopping += 1
        groups = list(_running)
    try:
        for pid in groups:
            kill_group(pid)
        yield
    finally:
        with _running_lock:
            _stopping -= 1


def refuse_if_stopping() -> None:
    """Raise ``Stopped`` inside a ``stopping`` block: what every way of starting a child asks first."""
    if _stopping:
        raise Stopped("the run is stopping; no claim starts")


def _signal_name(number: int) -> str:
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number}"
    description = {signal.SIGSEGV: "a segmentation fault", signal.SIGKILL: "SIGKILL (often the out-of-memory killer)"}
    return f"signal {sig.name}" + (f" ({description[sig]})" if sig in description else "")


# --- choosing the way to start the child ----------------------------------------------
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


# --- the parent -----------------------------------------------------------------------
def run_child(
    mode: str,
    path: Path,
    *,
    timeout_s: float,
    sys_path: Sequence[Path] = (),
    env: dict[str, str] | None = None,
    isolation: str | None = None,
    preload: Sequence[str] = (),
    imports: Sequence[tuple[int, str, tuple[str, ...]]] | None = None,
) -> ChildOutcome:
    """Run ``path`` in a child (mode ``claim`` or ``spec``) and collect its result.

    ``sys_path`` entries go after the file's own folder on the child's sys.path. At
    ``timeout_s`` the child and every process in its group are killed. ``isolation`` is
    ``fresh`` or ``fork`` (None: the default, see ``resolve_isolation``); ``preload`` names
    modules the fork server imports besides the ones it finds in the claim's imports;
    ``imports`` are the file's own, from its reading (read again when not given).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    refuse_if_stopping()
    path = Path(path).resolve()
    extra = [str(Path(entry).resolve()) for entry in sys_path]
    child_env = child_environment(env)
    if resolve_isolation(isolation) == FORK:
        from physverify import warm  # not imported for a fresh run, nor by `physverify --version`

        return warm.run_forked(mode, path, extra, child_env, timeout_s=timeout_s, preload=preload, imports=imports)
    return _run_fresh(mode, path, extra, child_env, timeout_s)


def child_environment(env: dict[str, str] | None) -> dict[str, str]:
    """The child's environment: the caller's (or ``env``) plus what spec section 4 fixes."""
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONDONTWRITEBYTECODE"] = "1"  # an edit within one second is still seen; nothing added to the repo
    child_env["PYTHONUNBUFFERED"] = "1"  # the stderr tail is complete even when the child is killed
    child_env["PYTHONPATH"] = _package_parent(child_env.get("PYTHONPATH"))  # this physverify, wherever the cwd is
    child_env[TOKEN_ENV] = uuid.uuid4().hex
    return child_env


def _package_parent(existing: str | None) -> str:
    here = str(Path(__file__).resolve().parent.parent)
    return here if not existing else os.pathsep.join([here, existing])


def _run_fresh(
    mode: str, path: Path, extra: Sequence[str], child_env: dict[str, str], timeout_s: float
) -> ChildOutcome:
    refuse_if_stopping()  # also fork mode's fallback
    command = [sys.executable, "-B", "-m", "physverify.isolate", mode, str(path), "--parent", str(os.getpid())]
    for entry in extra:
        command += ["--sys-path", entry]
    # The child's watchdog waits for EOF on this pipe: only this process holds the write end,
    # so EOF means it died, and the watchdog kills the child's whole group (issue 13, item 6).
    watch_r, watch_w = os.pipe() if os.name == "posix" else (-1, -1)
    if watch_r >= 0:
        command += ["--watch", str(watch_r)]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            cwd=path.parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            pass_fds=(watch_r,) if watch_r >= 0 else (),
            **_new_group_kwargs(),
        )
    finally:
        if watch_r >= 0:
            os.close(watch_r)
    try:
        with tracked(proc.pid):
            return _collect_fresh(proc, timeout_s, start, child_env[TOKEN_ENV])
    finally:
        if watch_w >= 0:
            os.close(watch_w)


def _collect_fresh(proc: subprocess.Popen[bytes], timeout_s: float, start: float, token: str) -> ChildOutcome:
    assert proc.stdout is not None and proc.stderr is not None
    streams = Streams(proc.stdout, proc.stderr)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Also after a normal exit: a grandchild left running would hold the pipes open
        # and keep burning CPU after the verdict.
        kill_group(proc.pid)
        proc.wait()
    kill_leftovers(token)
    return streams.outcome(proc.returncode, timed_out, start)


def _new_group_kwargs() -> dict[str, Any]:
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
    return {"start_new_session": True}


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (the child leads its own session, so pgid == pid)."""
    if os.name == "nt":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(pid)], capture_output=True, check=False)
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def kill_leftovers(token: str) -> None:
    """SIGKILL every process still carrying the child's ``token``: those that left its group (setsid).

    Read from /proc/PID/environ, the environment a process was started with, so a process
    that unsets the variable is still found; one started with a new environment is not
    (the sandbox's pid namespace ends those). A few rounds, for processes started meanwhile.
    """
    if not os.path.isdir("/proc"):
        return
    needle = f"{TOKEN_ENV}={token}\0".encode()
    for _ in range(3):
        found = [pid for pid in _own_pids() if needle in _environ_of(pid)]
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _own_pids() -> list[int]:
    uid, me = os.getuid(), os.getpid()
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != me:
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                continue  # it ended meanwhile
    return pids


def _environ_of(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


class Streams:
    """The child's stdout (the result) and stderr, each drained on its own thread."""

    def __init__(self, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self._out = _Reader(stdout, keep=_STDOUT_CAP, keep_head=True)
        self._err = _Reader(stderr, keep=_STDERR_KEEP, keep_head=False)

    def outcome(self, returncode: int | None, timed_out: bool, start: float) -> ChildOutcome:
        """Wait (at most _DRAIN_S for both pipes together) for the rest of the output and parse it."""
        deadline = time.monotonic() + _DRAIN_S
        for reader in (self._out, self._err):
            reader.join(max(0.0, deadline - time.monotonic()))
        seconds = time.monotonic() - start
        payload = None if timed_out else parse_payload(self._out.data())
        tail = self._err.data().decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
        return ChildOutcome(returncode, payload, tail, timed_out, seconds, self._out.overflowed)


class _Reader:
    """Drains one pipe on a daemon thread, keeping the head (stdout) or the tail (stderr)."""

    def __init__(self, stream: IO[bytes], *, keep: int, keep_head: bool) -> None:
        self._buffer = bytearray()
        self._keep = keep
        self._keep_head = keep_head
        self.overflowed = False
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
                if self._keep_head:
                    room = self._keep - len(self._buffer)
                    self.overflowed = self.overflowed or len(chunk) > room
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
    """Entry of the fresh child: die with the parent, redirect fd 1, run the file, send the result."""
    mode, path, extra, parent, watch = _parse_child_args(argv)
    die_with_parent(parent, watch)
    child_main(mode, path, extra, _divert_stdout())
    return 0


def child_main(mode: str, path: Path, extra: Sequence[str], result_fd: int) -> None:
    """The child's work, the same in both modes: sys.path, load, run, send the result on ``result_fd``."""
    sys.path[:] = [str(path.parent)] + list(extra) + [p for p in sys.path if p not in ("", str(path.parent))]
    payload = run_claim(path) if mode == "claim" else run_spec(path)
    sys.stdout.flush()
    data = encode_result(payload)
    while data:
        data = data[os.write(result_fd, data) :]
    os.close(result_fd)


def encode_result(payload: dict[str, Any]) -> bytes:
    """The marker line and the payload as JSON; a load error instead when it cannot be sent whole."""
    try:
        text = json.dumps(payload)
    except (TypeError, ValueError, RecursionError) as exc:  # recorded: the result says why it could not be sent
        text = json.dumps({"load_error": f"its result could not be written as JSON ({exc})"})
    if len(text) > RESULT_LIMIT:  # ASCII (json.dumps escapes the rest), so characters are bytes
        text = json.dumps({"load_error": (
            f"its result is {len(text) / 2**20:.0f} MiB of JSON, over the {RESULT_LIMIT // 2**20} MiB a claim "
            "may report; report fewer checks or shorter messages"
        )})
    return (MARKER + "\n" + text + "\n").encode("utf-8")


def die_with_parent(parent: int | None, watch: int | None) -> None:
    """End this process and its group when ``parent`` dies (issue 13, item 6).

    A watchdog process in the group waits for EOF on ``watch`` (the parent holds the only
    write end) and then kills the group, grandchildren included; on Linux the kernel also
    SIGKILLs this process itself at once (PR_SET_PDEATHSIG).
    """
    if watch is not None:
        _start_watchdog(watch)
    if parent is None or not sys.platform.startswith("linux"):
        return
    if not set_prctl(_PR_SET_PDEATHSIG, signal.SIGKILL):  # no prctl: the parent's kill at the timeout still holds
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def set_prctl(option: int, value: int) -> bool:
    """Linux's prctl(2) for this process (both kinds of child, and the fork server); False where there is none."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True


def _start_watchdog(watch: int) -> None:
    """Fork the watchdog before any code under test runs; it holds no pipe of the result or stderr."""
    if os.fork() == 0:
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            while os.read(watch, 1):
                pass
            os.killpg(0, signal.SIGKILL)  # the parent is gone: so is everything the claim started
        finally:
            os._exit(0)
    os.close(watch)


def _parse_child_args(argv: Sequence[str]) -> tuple[str, Path, list[str], int | None, int | None]:
    mode, path, rest = argv[0], Path(argv[1]), list(argv[2:])
    pairs = [(rest[i], rest[i + 1]) for i in range(0, len(rest) - 1, 2)]
    extra = [value for flag, value in pairs if flag == "--sys-path"]
    numbers = {flag: int(value) for flag, value in pairs if flag in ("--parent", "--watch")}
    return mode, path, extra, numbers.get("--parent"), numbers.get("--watch")


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


def run_claim(path: Path) -> dict[str, Any]:
    """The child's work for a claim: build and run the control and every check."""

    def body(module: ModuleType) -> dict[str, Any]:
        control = _call_for_checks(module, "control", single=True)[0]
        checks = _call_for_checks(module, "checks", single=False)
        return {"load_error": None, "control": _run(control), "checks": [_run(check) for check in checks]}

    return _guarded(path, body)


def run_spec(path: Path) -> dict[str, Any]:
    """The child's work for a spec file (``physverify run``): run every check of checks()."""

    def body(module: ModuleType) -> dict[str, Any]:
        checks = _call_for_checks(module, "checks", single=False)
        return {"load_error": None, "checks": [_run(check) for check in checks]}

    return _guarded(path, body)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
