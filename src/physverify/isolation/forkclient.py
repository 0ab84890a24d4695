"""The fork server's client: one warm server per configuration, replaced when it no longer fits.

``run_forked`` is isolate.run_child's fork mode. It asks the server of the claim's
configuration (physverify.yaml's ``preload:``; forkserver.py) to fork a supervisor for the
claim and collects it as fresh.py collects its own: the same streams and key
(protocol.collect), the same timeout and kill. One server per configuration, so one folder's
``preload:`` never reaches another folder's claims (issue 21, item 5). A claim that needs a
module the running server did not preload (preload.py) has the server import it before it
forks (``ForkServer.grow``). A new server is started when a preloaded module's file changed on
disk, or when the running one cannot grow; when no server can be had, the claim gets a fresh
child. When the server died or was stopped before it forked the claim (another claim can
signal it), the claim is re-run in a fresh child, and when that fails too the reason says
the fork server died (issue 21, item 4).

Why our own small server and not multiprocessing's forkserver (docs/architecture.md says it
at length): its children re-import the parent's ``__main__`` and take the parent's cwd and
sys.path (spawn.prepare), the server is one per process with its preload list frozen at its
first use (stopping it needs a private method), and nothing kills a child's group when the
server or its parent dies. Forking costs the same (1.6 ms against 5 ms per child, measured).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import secrets
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from physverify.isolation.child import child_environment, interpreter, package_parent
from physverify.isolation.forkserver import MESSAGE_BYTES
from physverify.isolation.fresh import run_fresh
from physverify.isolation.preload import BASE_PRELOAD, Outside, preload_for
from physverify.isolation.procgroup import TOKEN_ENV, Stopped, refuse_if_stopping, state_of, tracked
from physverify.isolation.protocol import ChildOutcome, Progress, Streams, collect, new_key, stream_pairs

_START_S = 300.0  # importing scipy on a loaded machine can take a while; past this the server is broken
_REPLY_S = 30.0  # from a request to the forked child's pid
_STAMP_EVERY_S = 1.0  # how often a long-lived server checks its modules' files for edits


class ForkUnavailable(Exception):
    """The server could not be had or could not fork; the caller runs a fresh child instead.

    ``died``: the server died or was stopped under the request (another claim may have
    signalled it), which the fresh re-run's reason names when it fails too. ``unsafe``: the
    server held threads or a framework's backend (forkserver.fork_hazard), which the fresh
    run's ledger line notes.
    """

    def __init__(self, message: str, *, died: bool = False, unsafe: bool = False) -> None:
        super().__init__(message)
        self.died = died
        self.unsafe = unsafe


class ForkServer:
    """A running server process, the modules it preloaded and the files they came from."""

    def __init__(self, preload: frozenset[str], python_path: str | None = None) -> None:
        self.preload = preload
        self.broken = False
        self.retired = False
        self.users = 0
        self._send_lock = threading.Lock()
        self._environ: dict[str, str] = {}  # the server's own, as it reported it when ready
        self._secret = secrets.token_hex(32)  # every request carries it (issue 21, item 13)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = child_environment(None)
        env.pop(TOKEN_ENV)
        if python_path is not None:
            env["PYTHONPATH"] = python_path
        # The interpreter reads PYTHONPATH once, at start: a child forked from this server has
        # the sys.path it gave, whatever its own request says. _acquire compares the two.
        self.python_path = env.get("PYTHONPATH")
        self._proc = subprocess.Popen(
            [*interpreter("physverify.isolation.forkserver"), str(theirs.fileno()), *sorted(preload)],
            cwd=package_parent(), env=env, pass_fds=(theirs.fileno(),), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self._sock = mine
        with _starting_lock:
            _starting.add(self._proc)
        try:
            mine.send(json.dumps({"secret": self._secret}).encode())  # never on its command line or in its environment
            with tracked(self._proc.pid):  # Ctrl-C while numpy and scipy import: killed, nothing runs
                answer = _read_files(self._sock, lambda: None)  # its death ends the wait (EOF); no claim knows its pid
        finally:
            with _starting_lock:
                _starting.discard(self._proc)
        if answer is None:
            self.close()
            raise ForkUnavailable("the fork server did not start")
        files, self._environ = answer
        self._stamps = {file: _stamp(file) for file in files}
        self._checked = time.monotonic()

    @property
    def pid(self) -> int:
        """The server process's pid."""
        return self._proc.pid

    def grow(self, modules: frozenset[str]) -> None:
        """Have the running server import ``modules`` too, for a claim that needs them; ForkUnavailable when it cannot.

        Cheaper than a new server with the union: no second interpreter imports numpy and
        physverify again, and the server started while the claims were read is not thrown
        away. Its files are watched for edits like the rest (``stale``). The caller holds
        the registry lock, so no claim is sent to it meanwhile from this process.
        """
        reply, reply_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        message = json.dumps({"import": sorted(modules), "secret": self._secret}).encode()
        with reply:
            try:
                with self._send_lock:
                    socket.send_fds(self._sock, [message], [reply_child.fileno()])
            except OSError as exc:
                self.broken = True
                raise ForkUnavailable(f"the fork server is gone ({exc})", died=True) from exc
            finally:
                reply_child.close()
            with tracked(self._proc.pid):  # Ctrl-C while scipy imports: the server is killed, as at its start
                answer = _read_files(reply, self._unable)
        if answer is None:
            self.broken = True
            self._wake()
            raise ForkUnavailable(self._unable() or "the fork server did not import the modules asked for", died=True)
        for file in answer[0]:
            if file not in self._stamps:
                self._stamps[file] = _stamp(file)
        self.preload = self.preload | modules

    def stale(self) -> bool:
        """True when a file of a preloaded module (physverify's too) changed since the server started."""
        now = time.monotonic()
        if now - self._checked < _STAMP_EVERY_S:
            return False
        self._checked = now
        return any(_stamp(file) != stamp for file, stamp in self._stamps.items())

    def run(self, request: dict[str, Any], key: bytes, timeout_s: float, variant_fd: int | None = None,
            progress: Progress | None = None) -> ChildOutcome:
        """Have the server fork a supervisor for ``request`` and collect it as fresh.py collects its own.

        ``variant_fd`` (issue 17) travels as a fifth descriptor; the request says it is there.
        """
        (out, out_child), (err, err_child) = stream_pairs()
        watch, watch_child = socket.socketpair()
        reply, reply_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        start = time.monotonic()
        env = request["env"]  # only what differs from the server's own environment travels (forkserver._set_environment)
        changed = {name: value for name, value in env.items() if self._environ.get(name) != value}
        unset = [name for name in self._environ if name not in env]
        message = json.dumps({**request, "env": changed, "unset": unset, "key": key.hex(),
                              "secret": self._secret}).encode()
        try:
            with self._send_lock:
                fds = [s.fileno() for s in (reply_child, out_child, err_child, watch_child)]
                socket.send_fds(self._sock, [message], fds + ([variant_fd] if variant_fd is not None else []))
        except OSError as exc:
            self.broken = True
            for sock in (out, err, watch, reply):
                sock.close()
            raise ForkUnavailable(f"the fork server is gone ({exc})", died=True) from exc
        finally:
            for sock in (reply_child, out_child, err_child, watch_child):
                sock.close()
        streams = Streams(out, err, progress, key)
        try:
            with reply:
                pid, threads = self._forked_pid(reply, watch)
        except BaseException:  # nothing was forked (the caller may start a fresh child): its streams are not read
            streams.close()
            raise
        outcome = collect(pid, watch, streams, key, timeout_s=timeout_s, start=start, exit_code=lambda: None)
        if outcome.timed_out and threads > 1:
            note = (f"the fork server held {threads} threads when it forked this claim (numpy's BLAS pool); "
                    "a fork copies no thread, so if the claim waits on one, run it with --isolation fresh")
            return dataclasses.replace(outcome, note=note)
        return outcome

    def _forked_pid(self, reply: socket.socket, watch: socket.socket) -> tuple[int, int]:
        """The supervisor's pid and the server's thread count then; ForkUnavailable when it died, stopped or refused."""
        deadline = time.monotonic() + _REPLY_S
        while True:
            ready, _, _ = select.select([reply], [], [], 0.05)
            if ready:
                forked = _recv(reply, 1.0)
                break
            why = self._unable()
            if why is not None or time.monotonic() >= deadline:
                forked = None
                break
        if forked is None or "pid" not in forked:
            watch.close()
        if forked is None:  # stopped (a claim can SIGSTOP it) or dead: nothing ran; no claim goes to it
            self.broken = True
            self._wake()
            raise ForkUnavailable(self._unable() or "the fork server did not answer", died=True)
        if "pid" not in forked:  # it could not fork (a process limit), refused, or is unsafe: a fresh child
            raise ForkUnavailable(str(forked.get("error")), unsafe=forked.get("unsafe") is True)
        return int(forked["pid"]), int(forked.get("threads", 1))

    def _unable(self) -> str | None:
        """Why the server cannot answer now (dead, stopped), or None."""
        code = self._proc.poll()
        if code is not None:
            return f"the fork server died (exit status {code})"
        if state_of(self._proc.pid) in ("T", "t"):
            return "the fork server was stopped"
        return None

    def _wake(self) -> None:
        try:
            os.kill(self._proc.pid, signal.SIGCONT)  # so it can drain and exit once it is retired
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """End the server: on EOF it kills what is still running and exits."""
        self._sock.close()
        if not _ends_within(self._proc, 10.0):
            self._proc.kill()
        self._proc.wait()


_registry_lock = threading.Lock()
_servers: dict[frozenset[str], ForkServer] = {}  # one per configuration: physverify.yaml's preload list
_starting_lock = threading.Lock()
_starting: set[subprocess.Popen[bytes]] = set()  # servers importing their preload, before any claim can use them
_exit_hook: list[object] = []


def servers() -> dict[frozenset[str], ForkServer]:
    """The running servers by configuration (a copy; for the MCP server's tests and the benchmarks)."""
    with _registry_lock:
        return dict(_servers)


def _acquire(configuration: frozenset[str], preload: frozenset[str], python_path: str | None = None) -> ForkServer:
    """The configuration's server, grown to ``preload`` where it lacks some; a new one when it changed or cannot grow.

    ``python_path`` is the PYTHONPATH the claim's own child would start with (None: this
    process's); a server started with another one would give the claim another sys.path.
    """
    with _registry_lock:
        server = _servers.get(configuration)
        if server is not None and not (server.broken or server.stale()
                                       or (python_path is not None and server.python_path != python_path)):
            if not preload <= server.preload:
                try:
                    server.grow(preload - server.preload)
                except ForkUnavailable:
                    pass  # broken now: a new server with the union, below
            if not server.broken:
                server.users += 1
                return server
        keep = server.preload if server is not None and not server.broken else frozenset()
        if server is not None:
            _retire(server)
        _servers.pop(configuration, None)
        refuse_if_stopping()  # a thread that waited here for another's start while the run stopped
        if not _exit_hook:  # before the start: a run that ends while the server imports kills it (shutdown)
            _exit_hook.append(atexit.register(shutdown))  # the server ends with us, and we wait for it
        server = ForkServer(preload | keep, python_path)  # the union within one configuration: its claims rarely differ much
        _servers[configuration] = server
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
    """Stop every server (at exit, the MCP server, tests).

    A server still importing its preload has run nothing and is killed rather than waited
    for: a run that ends without a claim to run (a no-op replay of changes, which starts the
    server on a guess) does not wait for a start it never needed.
    """
    with _starting_lock:
        for proc in _starting:
            proc.kill()  # its start ends (EOF): ForkServer raises ForkUnavailable, start() passes
    with _registry_lock:
        for server in _servers.values():
            _retire(server)
        _servers.clear()


def start() -> None:
    """Start the server with BASE_PRELOAD now, unless one runs (replay calls it while discovery reads the claims).

    A claim that needs more modules starts a server with the union, as always; a server
    that cannot start leaves the claims to fall back to fresh children, as always.
    """
    try:
        _release(_acquire(frozenset(), frozenset(BASE_PRELOAD)))  # the configuration of a folder without preload
    except (ForkUnavailable, Stopped):
        return


def run_forked(
    mode: str, path: Path, extra: Sequence[str], env: dict[str, str], *, timeout_s: float, preload: Sequence[str],
    variant_fd: int | None = None,
    outside: Callable[[], Outside] | None = None,
    progress: Progress | None = None,
) -> ChildOutcome:
    """isolate.run_child's fork mode; a fresh child when the server cannot be had.

    ``outside`` gives the claim's imports from outside its repository (preload.Outside), asked here only.
    """
    request = {"mode": mode, "path": str(path), "extra": list(extra), "env": env, "variant": variant_fd is not None}
    try:
        server = _acquire(frozenset(preload), preload_for(path, extra, preload, outside() if outside is not None else ()), env.get("PYTHONPATH"))
    except ForkUnavailable:
        return run_fresh(mode, path, extra, env, timeout_s, variant_fd, progress)
    try:
        return server.run(request, new_key(), timeout_s, variant_fd, progress)
    except ForkUnavailable as exc:
        outcome = run_fresh(mode, path, extra, env, timeout_s, variant_fd, progress)
        if exc.unsafe:
            return dataclasses.replace(outcome, note=f"{exc}, so the claim ran in a fresh interpreter")
        if exc.died and outcome.payload is None and not outcome.timed_out:
            return dataclasses.replace(outcome, note=f"the fork server died under the claim ({exc})")
        return outcome
    finally:
        _release(server)


def _ends_within(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether ``proc`` exits within ``seconds``, told by the kernel where it can (a pidfd, Linux 5.3).

    ``Popen.wait(timeout)`` polls with growing sleeps, so a server that exits in 5 ms is seen
    late; the end of every run waits for it.
    """
    if proc.returncode is not None:  # reaped: its pid may be another process's by now
        return True
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, an older kernel
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], seconds)
    finally:
        os.close(pidfd)
    return bool(ready)


def _read_files(sock: socket.socket, unable: Callable[[], str | None]) -> tuple[list[str], dict[str, str]] | None:
    """The files of the server's modules and its environment, as it sends them once ready; None when it did not.

    ``unable`` says why the server cannot answer (dead, stopped: a claim can SIGSTOP it); it is
    asked while the server imports, so a stopped server is not waited for until _START_S.
    """
    files: list[str] = []
    deadline = time.monotonic() + _START_S
    while True:
        while not select.select([sock], [], [], 0.05)[0]:
            if unable() is not None or time.monotonic() >= deadline:
                return None
        message = _recv(sock, _START_S)  # readable now; the long timeout stays the socket's, as before
        if message is None or "error" in message:
            return None
        if "ready" in message:
            environ = message.get("environ")
            return files, (environ if isinstance(environ, dict) else {})
        files.extend(message["files"])


def _recv(sock: socket.socket, seconds: float) -> dict[str, Any] | None:
    """One JSON message, or None at EOF or after ``seconds``."""
    sock.settimeout(max(seconds, 0.001))
    try:
        data = sock.recv(MESSAGE_BYTES)
    except (TimeoutError, OSError):
        return None
    return json.loads(data) if data else None


def _stamp(file: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
