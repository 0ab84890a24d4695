"""Process groups and killing: what ends a claim's processes, in either isolation mode.

Every child that runs repository code leads its own process group (pgid == pid), so one
``killpg`` ends it with what it started. What leaves the group on purpose (``setsid``) is
found again by the token in its environment (``kill_leftovers``) or, where the parent is a
subreaper (Linux's ``PR_SET_CHILD_SUBREAPER``), as a child re-parented to it
(``children_of``). ``tracked`` and ``stopping`` are how Ctrl-C and SIGTERM reach every
running group at once (replay's way out).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Every child's environment carries a token of its own; after the run, any process still
# showing it is a leftover of that claim (a setsid escape) and is killed (fresh mode).
TOKEN_ENV = "PHYSVERIFY_CHILD_TOKEN"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


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


def children_of(parent: int) -> list[tuple[int, int]]:
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


def set_prctl(option: int, value: int) -> bool:
    """Linux's prctl(2) for this process (both kinds of child, and the fork server); False where there is none."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True


def die_with(parent: int) -> bool:
    """Have the kernel SIGKILL this process when ``parent`` dies (Linux); kill it now if it already has.

    False where there is no prctl: the parent's kill at the timeout still holds.
    """
    if not sys.platform.startswith("linux") or not set_prctl(PR_SET_PDEATHSIG, signal.SIGKILL):
        return False
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)
    return True
