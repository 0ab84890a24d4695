"""Process groups and killing: what ends a claim's processes, in either isolation mode.

Every child that runs repository code leads its own process group (pgid == pid), so one
``killpg`` ends it with what it started. What leaves the group on purpose (``setsid``) is
found again by the token in its environment (``kill_leftovers``) or, where the parent is a
subreaper (Linux's ``PR_SET_CHILD_SUBREAPER``), as a child re-parented to it
(``children_of``). ``tracked`` and ``stopping`` are how Ctrl-C and SIGTERM reach every
running group at once (replay's way out).
"""

from __future__ import annotations

import functools
import hmac
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

# Every child's environment carries a token of its own; after the run, any process still
# showing it is a leftover of that claim (a setsid escape) and is killed (fresh mode).
TOKEN_ENV = "PHYSVERIFY_CHILD_TOKEN"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
# How long the parent gives a supervisor to end its claim's processes itself, after closing its
# end of the watch socket, before it kills what is left of the session (a stopped supervisor).
END_GRACE_S = 2.0
_END_ROUNDS = 2000  # of end_descendants' scan-kill-reap loop: a fork bomb ends long before


class Stopped(Exception):
    """No child is started: the run is stopping (Ctrl-C or SIGTERM, see ``stopping``)."""


# The process group of every child running now, in either mode (each leads its own, pgid == pid),
# and whether new ones may start: what Ctrl-C and SIGTERM end on the way out.
_running_lock = threading.Lock()
_running: dict[int, Callable[[], None]] = {}  # pid -> how to end its processes
_stopping = 0  # how many ``stopping`` blocks are open


@contextmanager
def tracked(pid: int, end: Callable[[], None] | None = None) -> Iterator[None]:
    """Count ``pid``'s processes among the running ones while the caller waits; end them if the wait is cut short.

    ``end`` ends them (default: kill the group ``pid`` leads). Cut short: Ctrl-C or SIGTERM
    raised in the waiting thread itself (replay --jobs 1), or ``stopping`` in another thread.
    """
    stop = end if end is not None else (lambda: kill_group(pid))
    with _running_lock:
        _running[pid] = stop
        late = _stopping > 0
    try:
        if late:  # started just as the run began to stop
            stop()
        yield
    except BaseException:
        stop()
        raise
    finally:
        with _running_lock:
            _running.pop(pid, None)


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
        ends = list(_running.values())
    try:
        for end in ends:
            end()
        yield
    finally:
        with _running_lock:
            _stopping -= 1


def refuse_if_stopping() -> None:
    """Raise ``Stopped`` inside a ``stopping`` block: what every way of starting a child asks first."""
    if _stopping:
        raise Stopped("the run is stopping; no claim starts")


def signal_name(number: int) -> str:
    """``signal SIGSEGV (a segmentation fault)``: how a child's death by signal ``number`` is named."""
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number}"
    description = {signal.SIGSEGV: "a segmentation fault", signal.SIGKILL: "SIGKILL (often the out-of-memory killer)"}
    return f"signal {sig.name}" + (f" ({description[sig]})" if sig in description else "")


def new_group_kwargs() -> dict[str, Any]:
    """Popen's arguments that make the child lead a new process group (a new session on POSIX)."""
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
    _kill_in_rounds(lambda: [pid for pid in _own_pids() if needle in _environ_of(pid)])


def _kill_in_rounds(find: Callable[[], list[int]]) -> None:
    """SIGKILL every process ``find`` lists, and list again: three rounds, for processes started meanwhile."""
    for _ in range(3):
        found = find()
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


def children_of(parent: int) -> list[tuple[int, int]]:
    """(pid, pgid) of every process whose parent is ``parent``, from /proc/PID/stat.

    Linux lists a task's children in /proc/PID/task/TID/children: reading those is one file
    per thread of ``parent`` where the scan of /proc is one per process on the machine (2.5 ms
    of every claim's supervisor and again of the fork server, measured with 75 processes).
    The list is a snapshot, as the scan is; each child is checked against its own stat. Where
    the kernel has no such file, the scan.
    """
    listed = _listed_children(parent)
    if listed is not None:
        found = []
        for pid in listed:
            fields = _stat_fields(pid)
            if fields is not None and int(fields[1]) == parent:  # fields after the name: state, ppid, pgrp
                found.append((pid, int(fields[2])))
        return found
    return _scanned_children(parent)


def _listed_children(parent: int) -> list[int] | None:
    """The pids in /proc/PARENT/task/*/children, or None where the kernel does not provide them."""
    try:
        tasks = os.listdir(f"/proc/{parent}/task")
    except OSError:
        return None
    pids: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{parent}/task/{task}/children", "rb") as handle:
                pids.extend(int(word) for word in handle.read().split())
        except FileNotFoundError:
            if task == str(parent):  # the main thread's file is missing: no CONFIG_PROC_CHILDREN
                return None
        except OSError:
            continue  # the thread ended meanwhile
    return pids


def _scanned_children(parent: int) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    try:
        entries = list(os.scandir("/proc"))
    except OSError:  # no /proc: the group kills still hold
        return found
    for entry in entries:
        fields = _stat_fields(entry.name) if entry.name.isdigit() else None
        if fields is not None and int(fields[1]) == parent:  # fields after the name: state, ppid, pgrp
            found.append((int(entry.name), int(fields[2])))
    return found


def set_prctl(option: int, value: int) -> bool:
    """Linux's prctl(2) for this process (both kinds of child, and the fork server); False where there is none."""
    try:
        _libc().prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True


@functools.cache
def _libc() -> Any:
    """This process's C library, opened once: the fork server opens it before it forks, so no claim does."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def die_with(parent: int) -> bool:
    """Have the kernel SIGKILL this process when ``parent`` dies (Linux); kill it now if it already has.

    False where there is no prctl: the parent's kill at the timeout still holds.
    """
    if not sys.platform.startswith("linux") or not set_prctl(PR_SET_PDEATHSIG, signal.SIGKILL):
        return False
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name: state, ppid, pgrp, session, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def state_of(pid: int) -> str | None:
    """The process's state letter (``R``, ``S``, ``T`` stopped, ``Z`` zombie), or None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[0].decode()


def wait_exit(pid: int, seconds: float) -> bool:
    """Wait at most ``seconds`` for ``pid`` to end (a zombie counts: nothing is reaped here); True when it did."""
    deadline = time.monotonic() + seconds
    while state_of(pid) not in (None, "Z", "X"):
        if not os.path.isdir("/proc") or time.monotonic() >= deadline:
            return state_of(pid) in (None, "Z", "X")
        time.sleep(0.01)
    return True


def kill_session(sid: int) -> None:
    """SIGKILL every process of the session ``sid`` leads: a supervisor and everything its claim left in it."""
    kill_group(sid)
    if not os.path.isdir("/proc"):
        return
    me = os.getpid()
    _kill_in_rounds(lambda: [int(e.name) for e in os.scandir("/proc")
                             if e.name.isdigit() and int(e.name) != me and _session_of(e.name) == sid])


# Processes this one started in a session of their own (fork servers, fresh supervisors): never
# taken for a leftover by ``end_orphans``. Registered under the lock the sweep holds, so one
# started while the sweep lists this process's children is already known when it is seen.
_own_lock = threading.Lock()
_own: set[int] = set()


@contextmanager
def own_start() -> Iterator[Callable[[int], None]]:
    """Hold the sweep off while a child is started; the caller registers its pid with the function it is given."""
    with _own_lock:
        yield _own.add


def disown(pid: int) -> None:
    """``pid`` ended (it was reaped): its number may be any process's now."""
    with _own_lock:
        _own.discard(pid)


def set_subreaper() -> bool:
    """Make this process a subreaper (Linux 3.4): an orphan below it comes to it, not to init; False where it cannot."""
    return sys.platform.startswith("linux") and set_prctl(PR_SET_CHILD_SUBREAPER, 1)


def end_orphans(keep: Callable[[int], bool]) -> None:
    """SIGKILL and reap the children of this process that came to it as orphans, except those ``keep`` names.

    In fork mode this process is a subreaper (forkclient.py): when a fork server dies, its
    claims and what they left come here. A child in this process's own session is one it
    started (git, a tool), never a claim's, which runs in the server's session or one of its
    own; a child it started in a session of its own is registered (``own_start``). The rest
    are leftovers: killed, their groups too, and reaped, until none is left.
    """
    session = os.getsid(0)
    end_children(lambda pid: pid not in _own and not keep(pid) and _session_of(pid) not in (session, None))


def end_children(leftover: Callable[[int], bool]) -> None:
    """SIGKILL and reap every child of this process that ``leftover`` names, its group too, until none is left.

    What a killed child had started comes here in its turn (this process is a subreaper), so
    the loop lists the children again after each round. The list is made and killed under the
    lock ``own_start`` holds, so a child being started meanwhile is registered before it is seen.
    """
    me, own = os.getpid(), os.getpgrp()
    for _ in range(_END_ROUNDS):
        with _own_lock:
            left = [(pid, pgid) for pid, pgid in children_of(me) if leftover(pid)]
            for pid, pgid in left:
                _kill_child(pid, pgid, (me, own))
        if not left:
            return
        for pid, _ in left:
            try:
                os.waitpid(pid, 0)  # SIGKILLed: it ends at once, and what it started comes here for the next round
            except ChildProcessError:
                pass


def _kill_child(pid: int, pgid: int, spared_groups: tuple[int, int]) -> None:
    """SIGKILL a child and its group, unless the group is one of ``spared_groups`` (this process's own)."""
    if pgid not in spared_groups:
        kill_group(pgid)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _session_of(pid: int | str) -> int | None:
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[3])


def end_descendants(first: int | None) -> None:
    """SIGKILL ``first``'s group (when given) and every child of this one, and reap them all (issue 21, item 6).

    This process is a subreaper (``supervise``): whatever a claim started and left, ``setsid``
    escapes included, becomes its child when its own parent dies, before that parent can be
    reaped. So the loop (kill every child, reap what ended) ends only when none is left.
    """
    if first is not None:
        kill_group(first)
    me, own = os.getpid(), os.getpgrp()
    for _ in range(_END_ROUNDS):
        for pid, pgid in children_of(me):
            _kill_child(pid, pgid, (me, own))
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.005)


def supervise(watch: socket.socket, run: Callable[[], int], release: Sequence[int] = ()) -> int | None:
    """Run ``run`` in a forked child of this process and supervise it; return its wait status.

    This process (the supervisor, in either isolation mode) becomes a subreaper, forks the
    claim's process into a group of its own (which dies with its supervisor), closes the
    descriptors in ``release`` (the result stream: its end tells the parent the claim is
    done) and waits for whichever comes first: the claim's end, or the end of ``watch``
    (the parent died, or asks to stop: the status is then None). Either way it then ends
    everything the claim left (``end_descendants``) before it returns.
    """
    set_prctl(PR_SET_CHILD_SUBREAPER, 1)  # without prctl the group kill and the token scan still hold
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w, watch.detach()):
                os.close(fd)
            die_with(me)
            code = run()
        except BaseException:  # noqa: BLE001 - recorded as exit code 70: the claim's process could not be set up
            traceback.print_exc()
        os._exit(code)
    try:
        os.setpgid(pid, pid)  # also here: a kill before the child's own setpgid still reaches its group
    except OSError:
        pass  # it did it first, or already ended
    for fd in release:
        os.close(fd)
    status = _wait_for(pid, watch, wake_r)
    end_descendants(pid)
    return status


def _wait_for(pid: int, watch: socket.socket, wake_r: int) -> int | None:
    while True:
        ready, _, _ = select.select([watch.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if done:
                return status
        if watch.fileno() in ready:
            try:
                data = watch.recv(4096)
            except OSError:
                data = b""
            if not data:  # the parent is gone, or ends the claim (timeout, Ctrl-C)
                return None


def _status_line(status: int | None, key: bytes) -> bytes:
    body = json.dumps({"status": status})
    tag = hmac.digest(key, body.encode(), "sha256").hex()  # one-shot: no HMAC object in the supervisor
    return json.dumps({"status": status, "tag": tag}).encode() + b"\n"


def send_status(watch: socket.socket, status: int | None, key: bytes) -> None:
    """The supervisor's last word to the parent: the claim's wait status, tagged with the run's key.

    None: the claim was ended from outside. The tag keeps another process that got hold of
    the socket (ptrace-level access) from ending the wait early with a status of its own.
    """
    try:
        watch.sendall(_status_line(status, key))
    except OSError:
        pass  # the parent is gone: nobody to tell


def status_in(data: bytes, key: bytes) -> tuple[bool, int | None, bytes]:
    """The supervisor's tagged status in what ``watch`` gave so far: (True, status, rest), or (False, None, the unread rest).

    A line that is not the supervisor's (no valid tag under ``key``) is skipped; an unfinished
    line is kept for the next read.
    """
    while b"\n" in data:
        line, data = data.split(b"\n", 1)
        try:
            status = json.loads(line)["status"]
        except (ValueError, KeyError, TypeError):
            continue  # not the supervisor's: ignored
        if (status is None or isinstance(status, int)) and hmac.compare_digest(line + b"\n", _status_line(status, key)):
            return True, status, data
    return False, None, data


def end_supervised(pid: int, watch: socket.socket) -> None:
    """End a supervised claim from the parent: ask its supervisor (EOF on ``watch``), then kill what is left.

    A supervisor that cannot answer (stopped by its own claim, killed) is given END_GRACE_S,
    then its whole session is killed.
    """
    try:
        watch.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already shut or closed
    wait_exit(pid, END_GRACE_S)
    kill_session(pid)
