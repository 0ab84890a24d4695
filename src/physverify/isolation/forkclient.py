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
from typing import Any, NamedTuple

from physverify.isolation.child import child_environment, interpreter, package_parent
from physverify.isolation.forkserver import MESSAGE_BYTES
from physverify.isolation.fresh import run_fresh
from physverify.isolation.preload import BASE_PRELOAD, Outside, preload_for
from physverify.isolation.procgroup import (
    END_GRACE_S,
    TOKEN_ENV,
    Stopped,
    disown,
    end_orphans,
    kill_group,
    own_start,
    refuse_if_stopping,
    set_subreaper,
    state_of,
    tracked,
)
from physverify.isolation.protocol import ChildOutcome, Progress, Streams, new_key, stream_pairs

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
        _become_subreaper()
        with own_start() as register:
            self._proc = subprocess.Popen(
                [*interpreter("physverify.isolation.forkserver"), str(theirs.fileno()), *sorted(preload)],
                cwd=package_parent(), env=env, pass_fds=(theirs.fileno(),), start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            register(self._proc.pid)
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
        """Have the server fork the claim's process for ``request`` and collect it (``_watch``).

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
        _await_pid()
        try:
            with self._send_lock:
                fds = [s.fileno() for s in (reply_child, out_child, err_child, watch_child)]
                socket.send_fds(self._sock, [message], fds + ([variant_fd] if variant_fd is not None else []))
        except OSError as exc:
            self.broken = True
            for sock in (out, err, watch, reply):
                sock.close()
            _settle(None)
            raise ForkUnavailable(f"the fork server is gone ({exc})", died=True) from exc
        finally:
            for sock in (reply_child, out_child, err_child, watch_child):
                sock.close()
        streams = Streams(out, err, progress, key)
        try:
            with reply:
                pid, threads, pidfd = self._forked_pid(reply, watch)
        except BaseException:  # nothing was forked (the caller may start a fresh child): its streams are not read
            streams.close()
            _settle(None)
            raise
        outcome = self._watch(_Forked(pid, pidfd, watch), streams, key, timeout_s, start)
        if outcome.timed_out and threads > 1:
            note = (f"the fork server held {threads} threads when it forked this claim (numpy's BLAS pool); "
                    "a fork copies no thread, so if the claim waits on one, run it with --isolation fresh")
            return dataclasses.replace(outcome, note=note)
        return outcome

    def _forked_pid(self, reply: socket.socket, watch: socket.socket) -> tuple[int, int, int]:
        """The claim's pid, the server's thread count then, and the claim's pidfd; ForkUnavailable when it died,
        stopped or refused."""
        deadline = time.monotonic() + _REPLY_S
        fds: list[int] = []
        while True:
            ready, _, _ = select.select([reply], [], [], 0.05)
            if ready:
                forked, fds = _recv_with_fds(reply)
                break
            why = self._unable()
            if why is not None and select.select([reply], [], [], 0)[0]:
                continue  # the claim sent its pid first, then stopped or killed the server: it was forked, read it
            if why is not None or time.monotonic() >= deadline:
                forked = None
                break
        if forked is None or "pid" not in forked or len(fds) != 1:
            watch.close()
            for fd in fds:
                os.close(fd)
        if forked is None or ("pid" in forked and len(fds) != 1):  # stopped (a claim can SIGSTOP it) or dead
            self.broken = True
            self._wake()
            why = self._unable()
            if self._proc.poll() is not None:  # it may have forked the claim before it died: that one came here
                _sweep_orphans()
            raise ForkUnavailable(why or "the fork server did not answer", died=True)
        if "pid" not in forked:  # it could not fork (a process limit), refused, or is unsafe: a fresh child
            raise ForkUnavailable(str(forked.get("error")), unsafe=forked.get("unsafe") is True)
        return int(forked["pid"]), int(forked.get("threads", 1)), fds[0]

    def _watch(self, claim: _Forked, streams: Streams, key: bytes, timeout_s: float, start: float) -> ChildOutcome:
        """Wait for the forked claim's end and read its result: the server's tagged status, or the claim reaped here.

        The server tells the status once it has reaped the claim and ended what it left. When
        the server dies under a running claim (the watch ends), the claim is this process's
        child (a subreaper): it runs to its end or its timeout, and is reaped here. When the
        claim ended and no status came (a stopped server), the server is killed so the claim
        becomes this process's child too (``_reap_orphan``). At the timeout, or Ctrl-C, the
        claim's group is killed here; what it left elsewhere comes to the server with its end.
        """
        pid, pidfd, watch = claim
        ended: list[bool] = []

        def end() -> None:  # the timeout, or Ctrl-C's way out (procgroup.stopping); by pid: another thread may call it
            ended.append(True)
            kill_group(pid)
            try:
                os.kill(pid, signal.SIGKILL)  # also when it left its group: unreaped until its status is sent
            except ProcessLookupError:
                pass

        def left() -> float:
            return timeout_s - (time.monotonic() - start)

        _settle(pid)
        try:
            with watch, tracked(pid, end=end):
                told, status = streams.wait_for_status(watch, left(), key, pidfd)
                timed_out = False
                if not told and not _ended(pidfd):  # the server died under the claim, or the time is up
                    timed_out = left() <= 0 or not streams.wait_for_end(pidfd, left())
                    if timed_out:
                        end()
                        told, status = streams.wait_for_status(watch, END_GRACE_S, key, pidfd)
                if told:
                    code = os.waitstatus_to_exitcode(status) if status is not None else None
                else:
                    reaped = self._reap_orphan(pidfd)
                    code = -signal.SIGKILL if ended else reaped
        except BaseException:  # Ctrl-C in the waiting thread (tracked ended the claim): no stream is left open
            streams.close()
            raise
        finally:
            os.close(pidfd)
            with _watched_lock:
                _watched.discard(pid)
        return streams.outcome(code, timed_out, start, key)

    def _reap_orphan(self, pidfd: int) -> int | None:
        """The exit code of a claim that ended (or was killed) without a status from its server; None when unknown.

        The server is dead, stopped (a claim can SIGSTOP it) or stuck: it is ended and reaped
        first, so that every claim it forked is this process's child by then and can be
        reaped through its pidfd. What those claims left came here with them and is ended
        (``procgroup.end_orphans``). A claim the server reaped before it died has no status left.
        """
        self.broken = True
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        try:
            done = os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
        except ChildProcessError:
            code = None
        else:
            code = None if done is None else (done.si_status if done.si_code == os.CLD_EXITED else -done.si_status)
        _sweep_orphans()
        return code

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
        disown(self._proc.pid)


class _Forked(NamedTuple):
    """A claim's process the server forked: its pid, its pidfd, the watch socket its status comes on."""

    pid: int
    pidfd: int
    watch: socket.socket


def _ended(pidfd: int) -> bool:
    return bool(select.select([pidfd], [], [], 0)[0])


# The claims watched now (``_watch``), in every thread: a claim whose server died is this
# process's child meanwhile, and no sweep of orphans (procgroup.end_orphans) may take it for one.
_watched_lock = threading.Lock()
_watched: set[int] = set()


# Requests sent whose claim's pid is not watched yet. The claim's process sends its pid
# before its code runs (forkserver._send_pid), but a thread of this process may read it late
# (a loaded machine): when the server dies meanwhile, the claim is this process's child
# already, and a sweep would kill it as a leftover. A sweep waits until no pid is awaited;
# the thread that settles the last one makes it (``_settle``).
_awaited = 0
_sweep_owed = False


def _is_watched(pid: int) -> bool:
    with _watched_lock:
        return pid in _watched


def _await_pid() -> None:
    global _awaited
    with _watched_lock:
        _awaited += 1


def _settle(pid: int | None) -> None:
    """An awaited pid arrived (watched from now on) or never will (None); the sweep put off meanwhile is made."""
    global _awaited, _sweep_owed
    with _watched_lock:
        if pid is not None:
            _watched.add(pid)
        _awaited -= 1
        owed = _sweep_owed and _awaited == 0
        if owed:
            _sweep_owed = False
    if owed:
        end_orphans(_is_watched)


def _sweep_orphans() -> None:
    """``procgroup.end_orphans`` of every child not watched, now, or once no claim's pid is awaited any more."""
    global _sweep_owed
    with _watched_lock:
        if _awaited:
            _sweep_owed = True
            return
    end_orphans(_is_watched)


_subreaper: list[bool] = []


def _become_subreaper() -> None:
    """Once, before the first server starts: the orphans of a server that dies come here (``_reap_orphan``)."""
    if not _subreaper:
        _subreaper.append(set_subreaper())


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
    if _subreaper and _subreaper[0]:
        _sweep_orphans()  # what came here from a server that died, and was not ended with its claim


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


def _recv_with_fds(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One JSON message and the descriptors it carried (readable now); (None, []) at EOF."""
    try:
        data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 1)
    except OSError:
        return None, []
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


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
