"""The fork server: one warm process per run forks the child of every claim (DESIGN.md, "Warm start").

A fresh interpreter per claim spends most of its time importing numpy and scipy (issue 11).
Here one server process, started with a fresh interpreter, imports numpy, physverify and the
third-party modules the claims import statically, and then forks one child per claim. The
forked child does what the fresh child does (isolate.child_main): its own session and process
group, fd 1 pointed at stderr, the claim's folder as cwd, its sys.path and environment, the
result after the marker. Repository code is only ever imported in a forked child, never in
the server, so an edit between two runs is always seen and no claim sees another's state.

Why our own small server and not multiprocessing's forkserver (docs/architecture.md says it
at length): its children re-import the parent's ``__main__`` and take the parent's cwd and
sys.path (spawn.prepare), the server is one per process with its preload list frozen at its
first use (stopping it needs a private method), and nothing kills a child's group when the
server or its parent dies. Forking costs the same (1.6 ms against 5 ms per child, measured).

The protocol, over a Unix SOCK_SEQPACKET socket pair (one message per send):
client -> server: a JSON request and three descriptors (a reply socket, the child's stdout
and stderr pipes); server -> reply socket: ``{"pid": N}`` once forked, ``{"status": S}``
(os.waitpid's status) once reaped. The server is a subreaper: whatever a claim started and
left behind is re-parented to it and killed when that claim's child is reaped.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from physverify import isolate

# Always in the server: what every claim imports (numpy through physverify's studies).
BASE_PRELOAD = ("numpy", "physverify", "physverify.checks", "physverify.isolate", "physverify.mms",
                "physverify.order", "physverify.studies", "ctypes")
# Never preloaded unless physverify.yaml's ``preload:`` names them: they start threads, an MPI
# runtime or a GPU context at import, which a fork does not carry over (issue 11, item 2).
NEVER_PRELOAD = frozenset({
    "cupy", "dask", "distributed", "jax", "jaxlib", "matplotlib", "mpi4py", "multiprocessing", "numba",
    "petsc4py", "pycuda", "pyopencl", "ray", "slepc4py", "taichi", "tensorflow", "tkinter", "torch", "warp",
})
# physverify names whose work imports a module lazily (so `physverify --version` stays fast).
_LAZY_NEEDS = {"reference_study": "scipy.integrate"}
_PR_SET_CHILD_SUBREAPER = 36
_START_S = 300.0  # importing scipy on a loaded machine can take a while; past this the server is broken
_REPLY_S = 30.0  # from a request to the forked child's pid
_STAMP_EVERY_S = 1.0  # how often a long-lived server checks its modules' files for edits
_MESSAGE = 1 << 20


class ForkUnavailable(Exception):
    """The server could not be started or stopped answering; the caller runs a fresh child instead."""


# --- which modules to preload ---------------------------------------------------------
def preload_for(path: Path, extra: Sequence[str], explicit: Iterable[str] = (),
                imports: Sequence[tuple[int, str, tuple[str, ...]]] | None = None) -> frozenset[str]:
    """BASE_PRELOAD, the modules ``path``'s static import closure takes from outside the repository, ``explicit``.

    ``imports`` are the file's own (its reading), so the claim file is not read again.
    """
    from physverify import affected, repo

    root = Path(extra[0]) if extra else path.parent
    roots = repo.import_roots(path.parent, root)
    found: set[str] = set()
    for file in affected.import_closure(path, root, imports):
        own = list(imports) if imports is not None and file == path.resolve() else None
        for level, module, names in own if own is not None else affected._imports_of(file):
            if level == 0 and module and not affected._resolve(file, 0, module, names, roots):
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


# --- the client: one server per process, replaced when it no longer fits ----------------
class ForkServer:
    """A running server process, the modules it preloaded and the files they came from."""

    def __init__(self, preload: frozenset[str]) -> None:
        self.preload = preload
        self.broken = False
        self.retired = False
        self.users = 0
        self._send_lock = threading.Lock()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = isolate.child_environment(None)
        env.pop(isolate.TOKEN_ENV)
        here = str(Path(isolate.__file__).resolve().parent.parent)
        self._proc = subprocess.Popen(
            [sys.executable, "-B", "-m", "physverify.warm", str(theirs.fileno()), *sorted(preload)],
            cwd=here, env=env, pass_fds=(theirs.fileno(),), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self._sock = mine
        with isolate.tracked(self._proc.pid):  # Ctrl-C while numpy and scipy import: killed, nothing runs
            files = self._read_files()
        self._stamps = {file: _stamp(file) for file in files}
        self._checked = time.monotonic()

    def _read_files(self) -> list[str]:
        files: list[str] = []
        while True:
            message = _recv(self._sock, _START_S)
            if message is None:
                self.close()
                raise ForkUnavailable("the fork server did not start")
            if "ready" in message:
                return files
            files.extend(message["files"])

    def stale(self) -> bool:
        """True when a file of a preloaded module (physverify's too) changed since the server started."""
        now = time.monotonic()
        if now - self._checked < _STAMP_EVERY_S:
            return False
        self._checked = now
        return any(_stamp(file) != stamp for file, stamp in self._stamps.items())

    def run(self, request: dict[str, Any], timeout_s: float) -> isolate.ChildOutcome:
        """Fork one child for ``request`` and collect it as isolate does for a fresh child."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        start = time.monotonic()
        try:
            with self._send_lock:
                socket.send_fds(self._sock, [json.dumps(request).encode()], [theirs.fileno(), out_w, err_w])
        except OSError as exc:
            self.broken = True
            for fd in (out_r, err_r):
                os.close(fd)
            raise ForkUnavailable(f"the fork server is gone ({exc})") from exc
        finally:
            theirs.close()
            os.close(out_w)
            os.close(err_w)
        streams = isolate.Streams(os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))
        with mine:
            return self._wait(mine, streams, start, timeout_s)

    def _wait(
        self, reply: socket.socket, streams: isolate.Streams, start: float, timeout_s: float
    ) -> isolate.ChildOutcome:
        forked = _recv(reply, _REPLY_S)
        if forked is None:  # stopped (a claim can SIGSTOP its parent) or dead: nothing ran; no claim goes to it
            self.broken = True
            self._wake()
            raise ForkUnavailable("the fork server did not answer")
        if "pid" not in forked:  # the server could not fork (a process limit); the caller tries a fresh child
            raise ForkUnavailable(str(forked.get("error")))
        pid = int(forked["pid"])
        with isolate.tracked(pid):
            done = _recv(reply, max(timeout_s - (time.monotonic() - start), 0.0))
        timed_out = done is None and time.monotonic() - start >= timeout_s  # not when the server died
        if done is None:
            isolate.kill_group(pid)
            done = _recv(reply, isolate._DRAIN_S)  # the server reaps it and reports
            if done is None:
                self.broken = True
                self._wake()
        code = None if done is None else os.waitstatus_to_exitcode(int(done["status"]))
        return streams.outcome(code, timed_out, start)

    def _wake(self) -> None:
        try:
            os.kill(self._proc.pid, signal.SIGCONT)  # so it can drain and exit once it is retired
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """End the server: on EOF it kills what is still running and exits."""
        self._sock.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


_registry_lock = threading.Lock()
_current: ForkServer | None = None
_exit_hook: list[object] = []


def _acquire(preload: frozenset[str]) -> ForkServer:
    """The running server when it preloaded ``preload`` and nothing changed, else a new one."""
    global _current
    with _registry_lock:
        server = _current
        if server is None or server.broken or not preload <= server.preload or server.stale():
            keep = server.preload if server is not None and not server.broken else frozenset()
            if server is not None:
                _retire(server)
            _current = None
            isolate.refuse_if_stopping()  # a thread that waited here for another's start while the run stopped
            server = ForkServer(preload | keep)  # the union: a run's claims rarely differ much
            if not _exit_hook:
                _exit_hook.append(atexit.register(shutdown))  # the server ends with us, and we wait for it
            _current = server
        server.users += 1
        return server


def _release(server: ForkServer) -> None:
    with _registry_lock:
        server.users -= 1
        if server.retired and server.users == 0:
            server.close()


def _retire(server: ForkServer) -> None:
    server.retired = True
    if server.users == 0:
        server.close()


def shutdown() -> None:
    """Stop the current server (the MCP server and tests; a CLI run just exits)."""
    global _current
    with _registry_lock:
        if _current is not None:
            _retire(_current)
        _current = None


def start() -> None:
    """Start the server with BASE_PRELOAD now, unless one runs (replay calls it while discovery reads the claims).

    A claim that needs more modules starts a server with the union, as always; a server
    that cannot start leaves the claims to fall back to fresh children, as always.
    """
    try:
        _release(_acquire(frozenset(BASE_PRELOAD)))
    except (ForkUnavailable, isolate.Stopped):
        return


def run_forked(
    mode: str, path: Path, extra: Sequence[str], env: dict[str, str], *, timeout_s: float, preload: Sequence[str],
    imports: Sequence[tuple[int, str, tuple[str, ...]]] | None = None,
) -> isolate.ChildOutcome:
    """isolate.run_child's fork mode; a fresh child when the server cannot be had."""
    request = {"mode": mode, "path": str(path), "extra": list(extra), "env": env}
    try:
        server = _acquire(preload_for(path, extra, preload, imports))
    except ForkUnavailable:
        return isolate._run_fresh(mode, path, extra, env, timeout_s)
    try:
        return server.run(request, timeout_s)
    except ForkUnavailable:
        return isolate._run_fresh(mode, path, extra, env, timeout_s)
    finally:
        _release(server)


def _recv(sock: socket.socket, seconds: float) -> dict[str, Any] | None:
    """One JSON message, or None at EOF or after ``seconds``."""
    sock.settimeout(max(seconds, 0.001))
    try:
        data = sock.recv(_MESSAGE)
    except (TimeoutError, OSError):
        return None
    return json.loads(data) if data else None


def _stamp(file: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


# --- the server process ----------------------------------------------------------------
def serve(sock: socket.socket, preload: Sequence[str]) -> None:
    """Preload, report the modules' files, then fork a child per request until the client closes."""
    import importlib

    del sys.path[0]  # the server's cwd (physverify's folder), which no child has on its path
    for name in preload:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001, S112 - recorded by its absence: the child meets the same error itself
            continue
    _send_files(sock)
    isolate.set_prctl(_PR_SET_CHILD_SUBREAPER, 1)  # without prctl the timeout's group kill still holds
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    children: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _reap(children)
        if sock.fileno() in ready:
            message, fds, _, _ = socket.recv_fds(sock, _MESSAGE, 3)
            if not message:
                break
            reply = socket.socket(fileno=fds[0])
            try:
                pid = _fork_child(json.loads(message), fds, (sock.fileno(), wake_r, wake_w))
            except OSError as exc:  # EAGAIN at a process limit: this claim gets a fresh child, the server lives on
                _send(reply, {"error": str(exc)})
                reply.close()
                for fd in fds[1:]:
                    os.close(fd)
                continue
            _send(reply, {"pid": pid})
            children[pid] = reply
    for pid in children:  # the client is gone: so is everything it started (issue 13, item 6)
        isolate.kill_group(pid)
    _kill_orphans(set())


def _send_files(sock: socket.socket) -> None:
    files = sorted({f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)})
    for i in range(0, len(files), 200):  # each message well under the socket's buffer
        sock.send(json.dumps({"files": files[i : i + 200]}).encode())
    sock.send(json.dumps({"ready": True}).encode())


def _send(reply: socket.socket, message: dict[str, Any]) -> None:
    try:
        reply.send(json.dumps(message).encode())
    except OSError:
        pass  # the client stopped waiting (its thread gave up): nothing to tell


def _reap(children: dict[int, socket.socket]) -> None:
    """Report every ended child; first kill what it left in its group, and any orphan (a setsid escape)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None:
            return
        if info.si_pid in children:
            isolate.kill_group(info.si_pid)  # the zombie still holds its group id, so this is its group
        _, status = os.waitpid(info.si_pid, 0)
        reply = children.pop(info.si_pid, None)
        if reply is not None:
            _kill_orphans(set(children))
            _send(reply, {"status": status})
            reply.close()


def _kill_orphans(live: set[int]) -> None:
    """SIGKILL the server's children that are no claim's child: re-parented leftovers of ended claims."""
    me = os.getpid()
    for pid, pgid in _children_of(me):
        if pid in live or pgid in live:
            continue  # a running claim's own process, or in its group: its end kills it
        if pgid not in (me, os.getpgrp()):
            isolate.kill_group(pgid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _children_of(parent: int) -> list[tuple[int, int]]:
    """(pid, pgid) of every process whose parent is ``parent``, from /proc/PID/stat."""
    found: list[tuple[int, int]] = []
    try:
        entries = list(os.scandir("/proc"))
    except OSError:  # no /proc: the group kills still hold
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:  # fields after the name: state, ppid, pgrp
            found.append((int(entry.name), int(fields[2])))
    return found


def _fork_child(request: dict[str, Any], fds: list[int], server_fds: tuple[int, ...]) -> int:
    pid = os.fork()
    if pid:
        os.close(fds[1])
        os.close(fds[2])
        return pid
    try:
        code = _child(request, fds, server_fds)
    except BaseException:  # noqa: BLE001 - reported as exit code 70: the child could not be set up
        code = 70
    os._exit(code)


def _child(request: dict[str, Any], fds: list[int], server_fds: tuple[int, ...]) -> int:
    """In the forked child: become what a fresh child is, then run the claim (isolate.child_main)."""
    server = os.getppid()
    os.setsid()
    isolate.set_prctl(isolate._PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server:
        return 70
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    result_fd = _child_descriptors(fds, server_fds)
    path = Path(request["path"])
    os.chdir(path.parent)
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [isolate.__file__, request["mode"], str(path)]
    _fresh_state()
    try:
        isolate.child_main(request["mode"], path, request["extra"], result_fd)
        code = 0
    except SystemExit as exc:  # as the interpreter would end a fresh child
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback on stderr, exit code 1
        import traceback

        traceback.print_exc()
        code = 1
    return _exit_like_interpreter(code)


def _child_descriptors(fds: list[int], server_fds: tuple[int, ...]) -> int:
    """stdin from /dev/null, fds 1 and 2 the stderr pipe, the stdout pipe kept for the result only."""
    reply, out_fd, err_fd = fds
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(err_fd, 2)
    os.dup2(err_fd, 1)
    result_fd = os.dup(out_fd)  # not inheritable (PEP 446), as the fresh child's saved stdout
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every descriptor number up to the limit
        open_fds = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in open_fds:  # the server's socket and other children's pipes
        if fd not in (0, 1, 2, result_fd):
            try:
                os.close(fd)
            except OSError:
                pass
    del reply, server_fds  # closed with the rest
    return result_fd


def _fresh_state() -> None:
    """What differs after a fork and not after an interpreter start: caches and random seeds."""
    import importlib

    importlib.invalidate_caches()  # a file added since the server started is found
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # the global generator, from fresh entropy as a fresh child's (Python's reseeds itself)


def _exit_like_interpreter(code: int) -> int:
    """What Py_Finalize does that os._exit skips: wait for threads, run atexit, flush."""
    import atexit

    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - recorded as the exit code, as the interpreter would
        return code or 1
    return code


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), sys.argv[2:])
