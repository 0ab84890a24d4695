"""The fresh start: ``python -B -m physverify.fresh MODE FILE`` per claim, with its watchdog.

The child runs in the file's folder, in a new session (its own process group), and pays the
interpreter start and its imports. The parent waits at most ``timeout_s`` and kills the
whole group, then any process that left it (``procgroup.kill_leftovers``). When the parent
dies first, a watchdog in the child's group ends the group (issue 13, item 6).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from physverify.child import child_main, divert_stdout
from physverify.procgroup import (
    TOKEN_ENV,
    die_with,
    kill_group,
    kill_leftovers,
    new_group_kwargs,
    refuse_if_stopping,
    tracked,
)
from physverify.protocol import ChildOutcome, Streams


# --- the parent -----------------------------------------------------------------------
def run_fresh(mode: str, path: Path, extra: Sequence[str], child_env: dict[str, str], timeout_s: float) -> ChildOutcome:
    """Run ``path`` in a new interpreter (mode ``claim`` or ``spec``); also fork mode's fallback."""
    refuse_if_stopping()
    command = [sys.executable, "-B", "-m", "physverify.fresh", mode, str(path), "--parent", str(os.getpid())]
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
            **new_group_kwargs(),
        )
    finally:
        if watch_r >= 0:
            os.close(watch_r)
    try:
        with tracked(proc.pid):
            return _collect(proc, timeout_s, start, child_env[TOKEN_ENV])
    finally:
        if watch_w >= 0:
            os.close(watch_w)


def _collect(proc: subprocess.Popen[bytes], timeout_s: float, start: float, token: str) -> ChildOutcome:
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


# --- the child ------------------------------------------------------------------------
def main(argv: Sequence[str]) -> int:
    """Entry of the fresh child: die with the parent, redirect fd 1, run the file, send the result."""
    mode, path, extra, parent, watch = _parse_child_args(argv)
    die_with_parent(parent, watch)
    child_main(mode, path, extra, divert_stdout())
    return 0


def die_with_parent(parent: int | None, watch: int | None) -> None:
    """End this process and its group when ``parent`` dies (issue 13, item 6).

    A watchdog process in the group waits for EOF on ``watch`` (the parent holds the only
    write end) and then kills the group, grandchildren included; on Linux the kernel also
    SIGKILLs this process itself at once (PR_SET_PDEATHSIG).
    """
    if watch is not None:
        _start_watchdog(watch)
    if parent is not None:
        die_with(parent)


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


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
