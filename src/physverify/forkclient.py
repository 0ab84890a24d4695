"""The fork server's client: one warm server per process, replaced when it no longer fits.

``run_forked`` is isolate.run_child's fork mode. It asks the current server (forkserver.py)
to fork a child for the claim and collects that child as fresh.py collects its own: the
same streams (protocol.Streams), the same timeout and group kill. A new server is started
when the claim needs a module the running one did not preload (preload.py) or a preloaded
module's file changed on disk; when no server can be had, the claim gets a fresh child.

Why our own small server and not multiprocessing's forkserver (docs/architecture.md says it
at length): its children re-import the parent's ``__main__`` and take the parent's cwd and
sys.path (spawn.prepare), the server is one per process with its preload list frozen at its
first use (stopping it needs a private method), and nothing kills a child's group when the
server or its parent dies. Forking costs the same (1.6 ms against 5 ms per child, measured).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from physverify.child import child_environment, package_parent
from physverify.forkserver import MESSAGE_BYTES
from physverify.fresh import run_fresh
from physverify.preload import preload_for
from physverify.procgroup import TOKEN_ENV, kill_group, refuse_if_stopping, tracked
from physverify.protocol import DRAIN_S, ChildOutcome, Streams

_START_S = 300.0  # importing scipy on a loaded machine can take a while; past this the server is broken
_REPLY_S = 30.0  # from a request to the forked child's pid
_STAMP_EVERY_S = 1.0  # how often a long-lived server checks its modules' files for edits


class ForkUnavailable(Exception):
    """The server could not be started or stopped answering; the caller runs a fresh child instead."""


class ForkServer:
    """A running server process, the modules it preloaded and the files they came from."""

    def __init__(self, preload: frozenset[str]) -> None:
        self.preload = preload
        self.broken = False
        self.retired = False
        self.users = 0
        self._send_lock = threading.Lock()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = child_environment(None)
        env.pop(TOKEN_ENV)
        self._proc = subprocess.Popen(
            [sys.executable, "-B", "-m", "physverify.forkserver", str(theirs.fileno()), *sorted(preload)],
            cwd=package_parent(), env=env, pass_fds=(theirs.fileno(),), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self._sock = mine
        with tracked(self._proc.pid):  # Ctrl-C while numpy and scipy import: killed, nothing runs
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

    def run(self, request: dict[str, Any], timeout_s: float) -> ChildOutcome:
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
        streams = Streams(os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))
        with mine:
            return self._wait(mine, streams, start, timeout_s)

    def _wait(
        self, reply: socket.socket, streams: Streams, start: float, timeout_s: float
    ) -> ChildOutcome:
        forked = _recv(reply, _REPLY_S)
        if forked is None:  # stopped (a claim can SIGSTOP its parent) or dead: nothing ran; no claim goes to it
            self.broken = True
            self._wake()
            raise ForkUnavailable("the fork server did not answer")
        if "pid" not in forked:  # the server could not fork (a process limit); the caller tries a fresh child
            raise ForkUnavailable(str(forked.get("error")))
        pid = int(forked["pid"])
        with tracked(pid):
            done = _recv(reply, max(timeout_s - (time.monotonic() - start), 0.0))
        timed_out = done is None and time.monotonic() - start >= timeout_s  # not when the server died
        if done is None:
            kill_group(pid)
            done = _recv(reply, DRAIN_S)  # the server reaps it and reports
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
            refuse_if_stopping()  # a thread that waited here for another's start while the run stopped
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


def run_forked(
    mode: str, path: Path, extra: Sequence[str], env: dict[str, str], *, timeout_s: float, preload: Sequence[str]
) -> ChildOutcome:
    """isolate.run_child's fork mode; a fresh child when the server cannot be had."""
    request = {"mode": mode, "path": str(path), "extra": list(extra), "env": env}
    try:
        server = _acquire(preload_for(path, extra, preload))
    except ForkUnavailable:
        return run_fresh(mode, path, extra, env, timeout_s)
    try:
        return server.run(request, timeout_s)
    except ForkUnavailable:
        return run_fresh(mode, path, extra, env, timeout_s)
    finally:
        _release(server)


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
