"""The fresh start: ``python -s -B -m physverify.isolation.fresh MODE FILE`` per claim, as the claim's supervisor.

The process physverify starts runs in the file's folder, in a new session, and pays the
interpreter start and its imports. It is the claim's supervisor (procgroup.supervise): a
subreaper that forks the claim's own process, and when that ends, or when physverify's end
of the watch socket closes (physverify died, or ends the claim at its timeout or at Ctrl-C),
kills everything the claim left, ``setsid`` escapes included, and tells physverify the
claim's exit status (issue 21, item 6). The result's key arrives on the watch socket, never
on the command line or in the environment (protocol.py).

The parent waits at most ``timeout_s``; after the run it kills any process still carrying
the claim's environment token (``procgroup.kill_leftovers``), for a supervisor that was
itself killed.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from physverify.isolation import variant_channel
from physverify.isolation.child import divert_stdout, interpreter, run_as_process
from physverify.isolation.procgroup import (
    PR_SET_DUMPABLE,
    TOKEN_ENV,
    disown,
    kill_leftovers,
    new_group_kwargs,
    own_start,
    refuse_if_stopping,
    send_status,
    set_prctl,
    supervise,
)
from physverify.isolation.protocol import ChildOutcome, Progress, Streams, collect, new_key, stream_pairs

KEY_BYTES = 32


# --- the parent -----------------------------------------------------------------------
def run_fresh(mode: str, path: Path, extra: Sequence[str], child_env: dict[str, str], timeout_s: float,
              variant_fd: int | None = None, progress: Progress | None = None) -> ChildOutcome:
    """Run ``path`` in a new interpreter (mode ``claim`` or ``spec``); also fork mode's fallback.

    ``variant_fd``: the variant's source (variant_channel.py), inherited by the new process.
    ``progress`` is told each control and check as the child finishes it (protocol.Streams).
    """
    refuse_if_stopping()
    command = [*interpreter("physverify.isolation.fresh"), mode, str(path)]
    for entry in extra:
        command += ["--sys-path", entry]
    if variant_fd is not None:
        command += ["--variant", str(variant_fd)]
    (out, out_child), (err, err_child) = stream_pairs()
    # Only this process holds the other end: its EOF means physverify died or ends the claim.
    watch, watch_child = socket.socketpair()
    command += ["--watch", str(watch_child.fileno())]
    key = new_key()
    start = time.monotonic()
    try:
        with own_start() as register:  # a session of its own: never taken for an orphan (procgroup.end_orphans)
            proc = subprocess.Popen(
                command,
                cwd=path.parent,
                stdin=subprocess.DEVNULL,
                stdout=out_child.fileno(),
                stderr=err_child.fileno(),
                env=child_env,
                pass_fds=(watch_child.fileno(),) + ((variant_fd,) if variant_fd is not None else ()),
                **new_group_kwargs(),
            )
            register(proc.pid)
    except BaseException:
        for sock in (out, err, watch):
            sock.close()
        raise
    finally:
        for sock in (out_child, err_child, watch_child):
            sock.close()
    streams = Streams(out, err, progress, key)
    try:
        watch.sendall(key)
    except OSError:
        pass  # it died at once: collected below as such
    try:
        return collect(proc.pid, watch, streams, key, timeout_s=timeout_s, start=start, exit_code=proc.wait)
    finally:
        proc.wait()
        disown(proc.pid)
        kill_leftovers(child_env[TOKEN_ENV])


# --- the supervisor (the process physverify started) ----------------------------------
def main(argv: Sequence[str]) -> int:
    """Entry of the fresh start: read the key, supervise the claim's process, report its status."""
    mode, path, extra, watch_fd, variant_fd = _parse_child_args(argv)
    if watch_fd is None:
        print("physverify.isolation.fresh is started by physverify (isolate.run_child), with --watch", file=sys.stderr)
        return 2
    set_prctl(PR_SET_DUMPABLE, 0)  # nor the claim's process, which inherits it: as the fork server's (forkserver.serve)
    watch = socket.socket(fileno=watch_fd)
    key = _read_key(watch)
    if key is None:  # physverify died before it could send it
        return 70
    variant = variant_channel.read(variant_fd) if variant_fd is not None else None
    result_fd = divert_stdout()
    status = supervise(watch, lambda: run_as_process(mode, path, extra, result_fd, key, variant), release=(result_fd,))
    send_status(watch, status, key)
    return 0


def _read_key(watch: socket.socket) -> bytes | None:
    key = b""
    while len(key) < KEY_BYTES:
        chunk = watch.recv(KEY_BYTES - len(key))
        if not chunk:
            return None
        key += chunk
    return key


def _parse_child_args(argv: Sequence[str]) -> tuple[str, Path, list[str], int | None, int | None]:
    mode, path, rest = argv[0], Path(argv[1]), list(argv[2:])
    pairs = [(rest[i], rest[i + 1]) for i in range(0, len(rest) - 1, 2)]
    extra = [value for flag, value in pairs if flag == "--sys-path"]
    numbers = {flag: int(value) for flag, value in pairs if flag in ("--watch", "--variant")}
    return mode, path, extra, numbers.get("--watch"), numbers.get("--variant")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
