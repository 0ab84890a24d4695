"""The fork server's side: one warm process per run that forks the child of every claim (DESIGN.md, "Warm start").

Started by forkclient.py as ``python -B -m physverify.forkserver FD MODULE...`` in its own
session: it imports the modules it is given (numpy, physverify, the third-party modules
the claims import statically), sends the client the files they came from, and then forks
one child per request. The forked child becomes what a fresh child is (child.child_main):
its own session and process group, fd 1 pointed at stderr, the claim's folder as cwd, its
sys.path and environment, the result after the marker. Repository code is only ever
imported in a forked child, never in the server, so an edit between two runs is always seen
and no claim sees another's state.

The protocol, over a Unix SOCK_SEQPACKET socket pair (one message per send):
client -> server: a JSON request and three descriptors (a reply socket, the child's stdout
and stderr pipes); server -> reply socket: ``{"pid": N}`` once forked, ``{"status": S}``
(os.waitpid's status) once reaped. The server is a subreaper: whatever a claim started and
left behind is re-parented to it and killed when that claim's child is reaped.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from physverify.child import child_main
from physverify.procgroup import PR_SET_CHILD_SUBREAPER, children_of, die_with, kill_group, set_prctl

_FRESH_MAIN = str(Path(__file__).with_name("fresh.py"))
MESSAGE_BYTES = 1 << 20  # the largest message either side sends (a request carries the claim's environment)


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
    set_prctl(PR_SET_CHILD_SUBREAPER, 1)  # without prctl the timeout's group kill still holds
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
            message, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 3)
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
        kill_group(pid)
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
            kill_group(info.si_pid)  # the zombie still holds its group id, so this is its group
        _, status = os.waitpid(info.si_pid, 0)
        reply = children.pop(info.si_pid, None)
        if reply is not None:
            _kill_orphans(set(children))
            _send(reply, {"status": status})
            reply.close()


def _kill_orphans(live: set[int]) -> None:
    """SIGKILL the server's children that are no claim's child: re-parented leftovers of ended claims."""
    me = os.getpid()
    for pid, pgid in children_of(me):
        if pid in live or pgid in live:
            continue  # a running claim's own process, or in its group: its end kills it
        if pgid not in (me, os.getpgrp()):
            kill_group(pgid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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
    """In the forked child: become what a fresh child is, then run the claim (child_main)."""
    server = os.getppid()
    os.setsid()
    die_with(server)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    result_fd = _child_descriptors(fds, server_fds)
    path = Path(request["path"])
    os.chdir(path.parent)
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [_FRESH_MAIN, request["mode"], str(path)]  # as the fresh child has it
    _fresh_state()
    try:
        child_main(request["mode"], path, request["extra"], result_fd)
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
