"""The result protocol between a claim's child and the parent: a marker, a tag, one JSON object, a size cap.

The child writes ``MARKER``, the result's tag, a newline, and its result as one JSON line on
its result stream (``encode_result``). The tag is an HMAC-SHA256 of that line under a key of
this claim's run (``new_key``) that only the parent and the claim's own process hold: the
parent sends it through the request (fork mode) or the supervisor's socket (fresh mode),
never through the environment or the command line, which any process of the same user can
read (/proc/PID/environ, /proc/PID/cmdline). A result another process wrote into the stream
carries no valid tag and is never used (issue 21, item 4); the streams are sockets, which
/proc/PID/fd cannot open, so that takes more than finding the claim's process.

The parent drains the child's two streams while it waits for it (``Streams``), keeps at most
``STDOUT_CAP`` of the result stream and the last ``STDERR_KEEP`` bytes of stderr, and reads
the first result whose tag holds (``parse_payload``). ``ChildOutcome`` is what one child run
gave, in either isolation mode; ``collect`` waits for a supervised child (procgroup.supervise).
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import select
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from physverify.isolation.procgroup import END_GRACE_S, end_supervised, signal_name, status_in, tracked
from physverify.text import clean

MARKER = "\x1ephysverify-result-v1\x1e"
# Before the result, the child sends each control and check as it finishes, tagged as the
# result is, so ``confirm`` can show it at once; the result alone decides the verdict.
PROGRESS_MARKER = "\x1ephysverify-progress-v1\x1e"
PROGRESS_MESSAGE_CHARS = 4096  # a progress line is for the eye: the whole message is in the result
STDERR_TAIL_CHARS = 2000
# The most a child may report (issue 13, item 14). The child checks its own result against
# it and says so; the parent keeps a little more than that of stdout, in case the code under
# test writes to the result descriptor itself, and says so when even that overflows.
RESULT_LIMIT = 32 * 1024 * 1024
STDOUT_CAP = RESULT_LIMIT + 1024 * 1024
STDERR_KEEP = 64 * 1024
# After the child exits or is killed, how long the readers may take to drain the pipes, both
# together (issue 13, item 23). A process that left the group on purpose (setsid) can hold
# them open; we stop waiting.
DRAIN_S = 5.0
_LONGEST_SELECT_S = 3600.0


@dataclass(frozen=True)
class ChildOutcome:
    """What one child run gave: exit status, the parsed result (or None), the stderr tail."""

    returncode: int | None
    payload: dict[str, Any] | None
    stderr_tail: str
    timed_out: bool
    seconds: float
    overflowed: bool = False  # the child wrote more than STDOUT_CAP to its result stream
    tampered: bool = False  # a result without this run's tag reached the result stream
    note: str = ""  # what happened before this run (fork mode: the server died, this is the fresh re-run)

    def failure(self) -> str | None:
        """A sentence on why there is no result (died, killed, no marker, tampering), or None when there is one."""
        if self.payload is not None or self.timed_out:
            return None
        reason = self._reason()
        return f"{self.note}, and the re-run in a fresh child failed too: {reason}" if self.note else reason

    def _reason(self) -> str:
        if self.tampered:
            return ("a result without this claim's key reached its result stream: another process wrote it "
                    "(tampering), so it was not used, and the claim's own result did not arrive")
        if self.overflowed:
            return (f"the claim's process wrote more than {STDOUT_CAP // 2**20} MiB to its result stream, "
                    "over the limit, so no result was read; report fewer checks or shorter messages")
        code = self.returncode
        if code is not None and code < 0:
            return f"the claim's process was killed by {signal_name(-code)} before it reported a result"
        if code:
            return f"the claim's process exited with code {code} before it reported a result"
        return "the claim's process ended without reporting a result"


def new_key() -> bytes:
    """A fresh key for one claim's run: what its result's tag is made with."""
    return secrets.token_bytes(32)


def encode_result(payload: dict[str, Any], key: bytes) -> bytes:
    """The marker, the tag and the payload as one JSON line; cut to the cap, or a load error naming it."""
    try:
        text = json.dumps(payload)
    except (TypeError, ValueError, RecursionError) as exc:  # recorded: the result says why it could not be sent
        text = json.dumps({"load_error": f"its result could not be written as JSON ({exc})"})
    if len(text) > RESULT_LIMIT:  # ASCII (json.dumps escapes the rest), so characters are bytes
        text = _cut_to_fit(payload, len(text))
    line = text.encode("ascii")
    return MARKER.encode() + _tag(key, line) + b"\n" + line + b"\n"


def encode_progress(role: str, outcome: dict[str, Any], key: bytes) -> bytes:
    """One finished control or check as a tagged line: its role, label, family, status and (cut) message."""
    shown = {name: outcome.get(name) for name in ("label", "family", "status")}
    message = outcome.get("message")
    shown["message"] = message[:PROGRESS_MESSAGE_CHARS] if isinstance(message, str) else None
    line = json.dumps({"role": role, "outcome": shown}).encode("ascii")
    return PROGRESS_MARKER.encode() + _tag(key, line) + b"\n" + line + b"\n"


def _tag(key: bytes, line: bytes) -> bytes:
    return hmac.digest(key, line, "sha256").hex().encode()  # one-shot: the same tag, no HMAC object


_CUT_NOTE = " [cut: the claim's result was over the {cap} MiB a claim may report; the status is the check's own]"


def _cut_to_fit(payload: dict[str, Any], size: int) -> str:
    """The result with messages shortened and numbers dropped until it fits (issue 21, item 14).

    Every check keeps its label, family and status, so the verdict rules see what the checks
    gave; each cut message says so. When even that does not fit (millions of checks), the
    result is a load error naming the cap: no verdict from a part of the checks.
    """
    cap = RESULT_LIMIT // 2**20
    for keep, label_keep in ((4096, None), (256, None), (0, 256)):
        cut = dict(payload)
        if isinstance(cut.get("control"), dict):
            cut["control"] = _cut_outcome(cut["control"], keep, label_keep, cap)
        if isinstance(cut.get("checks"), list):
            cut["checks"] = [_cut_outcome(o, keep, label_keep, cap) if isinstance(o, dict) else o for o in cut["checks"]]
        text = json.dumps(cut)
        if len(text) <= RESULT_LIMIT:
            return text
    return json.dumps({"load_error": (
        f"its result is {size / 2**20:.0f} MiB of JSON, over the {cap} MiB a claim may report even with every "
        "message cut; report fewer checks"
    )})


def _cut_outcome(outcome: dict[str, Any], keep: int, label_keep: int | None, cap: int) -> dict[str, Any]:
    cut = {k: v for k, v in outcome.items() if k != "data"}
    message = cut.get("message")
    if isinstance(message, str) and (len(message) > keep or "data" in outcome):
        cut["message"] = message[:keep] + _CUT_NOTE.format(cap=cap)
    for field in ("label", "family"):
        value = cut.get(field)
        if label_keep is not None and isinstance(value, str) and len(value) > label_keep:
            cut[field] = value[:label_keep] + "..."
    return cut


def parse_payload(stdout: bytes, key: bytes) -> tuple[dict[str, Any] | None, bool]:
    """The first result after a marker whose tag holds under ``key``, and whether a whole one did not.

    Only that line is read, so whatever the code under test writes to the real stdout after
    it (an atexit handler, a C library flushing at exit) is ignored. A complete result line
    with a wrong tag is another process's (tampering); one cut short is a child that died.
    """
    marker = MARKER.encode()
    tampered = False
    where = stdout.find(marker)
    while where >= 0:
        head_end = stdout.find(b"\n", where)
        line_end = stdout.find(b"\n", head_end + 1) if head_end >= 0 else -1
        if line_end < 0:
            break
        tag, line = stdout[where + len(marker) : head_end], stdout[head_end + 1 : line_end]
        if hmac.compare_digest(tag, _tag(key, line)):
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            if isinstance(value, dict):
                return clean(value), tampered  # no lone surrogate enters the parent (issue 13)
        tampered = True
        where = stdout.find(marker, where + 1)
    return None, tampered


Progress = Callable[[dict[str, Any]], None]


class _ProgressReader:
    """Finds the tagged progress lines in the result stream as it arrives, and gives each to ``tell`` once.

    A line whose tag does not hold is another process's and is skipped, as a forged result is.
    """

    def __init__(self, tell: Progress, key: bytes) -> None:
        self._tell, self._key, self._at = tell, key, 0
        self._marker = PROGRESS_MARKER.encode()

    def scan(self, kept: bytearray) -> None:
        while True:
            where = kept.find(self._marker, self._at)
            if where < 0:  # no marker starts before the last few bytes: a marker cut in two is found next time
                self._at = max(self._at, len(kept) - len(self._marker))
                return
            head_end = kept.find(b"\n", where)
            line_end = kept.find(b"\n", head_end + 1) if head_end >= 0 else -1
            if line_end < 0:
                self._at = where
                return
            tag, line = bytes(kept[where + len(self._marker) : head_end]), bytes(kept[head_end + 1 : line_end])
            self._at = line_end + 1
            if hmac.compare_digest(tag, _tag(self._key, line)):
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    self._tell(clean(value))


class Streams:
    """The child's result stream and stderr, drained by the thread that waits for the child.

    No thread of their own: ``wait_for_status`` reads them while it waits for the
    supervisor's word, ``outcome`` reads what is left. Two reader threads per claim cost the
    parent a thread start and join each, and their switching, for every claim of a replay.
    """

    def __init__(self, out: socket.socket, err: socket.socket, progress: Progress | None = None,
                 key: bytes = b"") -> None:
        """The parent's ends of the two stream sockets, closed once drained (or given up on); ``progress`` is told
        each control and check the child reports finished (``encode_progress``, tagged with ``key``)."""
        self._out = _Kept(STDOUT_CAP, keep_head=True)
        self._progress = _ProgressReader(progress, key) if progress is not None else None
        self._err = _Kept(STDERR_KEEP, keep_head=False)
        self._open: dict[socket.socket, _Kept] = {out: self._out, err: self._err}
        for sock in self._open:
            sock.setblocking(False)

    def wait_for_status(self, watch: socket.socket, seconds: float, key: bytes,
                        pidfd: int | None = None) -> tuple[bool, int | None]:
        """Drain the streams until the tagged status arrives on ``watch``, it ends, or ``seconds`` pass.

        (True, status) once told; (False, None) at the watch's end (the supervisor or server
        died, or ``end_supervised`` shut it from another thread) or at the time limit. With
        ``pidfd`` (fork mode: the claim's own process), its end shortens the wait to the status
        to END_GRACE_S, which a stopped server never sends.
        """
        deadline = time.monotonic() + seconds
        data = b""
        poller = self._poller({watch.fileno(): watch, **({} if pidfd is None else {pidfd: None})})
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False, None
            for fd, what in self._select(poller, left):
                if what is None:  # the claim's process ended: its status follows at once, or never
                    poller.unregister(fd)
                    deadline = min(deadline, time.monotonic() + END_GRACE_S)
                elif what is not watch:
                    self._read(what, poller)
                else:
                    try:
                        chunk = watch.recv(4096)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        return False, None
                    told, status, data = status_in(data + chunk, key)
                    if told:
                        return True, status

    def wait_for_end(self, pidfd: int, seconds: float) -> bool:
        """Drain the streams until the process of ``pidfd`` ends (True) or ``seconds`` pass (False)."""
        deadline = time.monotonic() + seconds
        poller = self._poller({pidfd: None})
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for _, what in self._select(poller, left):
                if what is None:
                    return True
                self._read(what, poller)

    def outcome(self, returncode: int | None, timed_out: bool, start: float, key: bytes) -> ChildOutcome:
        """Wait (at most DRAIN_S for both streams together) for the rest of the output and parse it."""
        deadline = time.monotonic() + DRAIN_S
        poller = self._poller({})
        while self._open:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for _, what in self._select(poller, left):
                self._read(what, poller)
        self.close()  # what is still open was held past DRAIN_S by a process that left the group: not waited for
        seconds = time.monotonic() - start
        payload, tampered = (None, False) if timed_out else parse_payload(self._out.data(), key)
        tail = self._err.data().decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
        return ChildOutcome(returncode, payload, tail, timed_out, seconds, self._out.overflowed, tampered)

    def close(self) -> None:
        """Close the streams not yet at their end."""
        for sock in list(self._open):
            self._close(sock, None)

    def _poller(self, others: dict[int, Any]) -> _Poller:
        """A poll set over ``others`` (descriptor -> what it stands for) and the streams still open.

        poll(2), not an epoll selector: a poll set costs no descriptor and no system call to
        make, and the parent makes two for every claim.
        """
        return _Poller({**others, **{sock.fileno(): sock for sock in self._open}})

    def _select(self, poller: _Poller, seconds: float) -> list[tuple[int, Any]]:
        # a --timeout of 1e10 is too long for poll: wait in parts
        ready = poller.poll.poll(min(seconds, _LONGEST_SELECT_S) * 1000)
        return [(fd, poller.table[fd]) for fd, _ in ready if fd in poller.table]

    def _read(self, sock: socket.socket, poller: _Poller) -> None:
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:  # woken with nothing to read after all
            return
        except OSError:
            chunk = b""
        if chunk:
            kept = self._open[sock]
            kept.take(chunk)
            if self._progress is not None and kept is self._out:
                self._progress.scan(kept.buffer)
        else:
            self._close(sock, poller)

    def _close(self, sock: socket.socket, poller: _Poller | None) -> None:
        if poller is not None:
            poller.unregister(sock.fileno())
        del self._open[sock]
        sock.close()


class _Poller:
    """A poll(2) set and what each of its descriptors stands for (a socket, or None for a pidfd)."""

    def __init__(self, table: dict[int, Any]) -> None:
        self.table = table
        self.poll = select.poll()
        for fd in table:
            self.poll.register(fd, select.POLLIN)

    def unregister(self, fd: int) -> None:
        self.poll.unregister(fd)
        del self.table[fd]


class _Kept:
    """What is kept of one stream: its head (the result) or its tail (stderr), at most ``keep`` bytes."""

    def __init__(self, keep: int, *, keep_head: bool) -> None:
        self._buffer = bytearray()
        self._keep = keep
        self._keep_head = keep_head
        self.overflowed = False

    def take(self, chunk: bytes) -> None:
        if self._keep_head:
            room = self._keep - len(self._buffer)
            self.overflowed = self.overflowed or len(chunk) > room
            self._buffer += chunk[: max(room, 0)]
        else:
            self._buffer += chunk
            del self._buffer[: max(len(self._buffer) - self._keep, 0)]

    def data(self) -> bytes:
        """What was kept so far."""
        return bytes(self._buffer)

    @property
    def buffer(self) -> bytearray:
        """What was kept so far, not copied: read it, never change it."""
        return self._buffer


def stream_pairs() -> tuple[tuple[socket.socket, socket.socket], tuple[socket.socket, socket.socket]]:
    """(parent, child) socket pairs for the result stream and stderr: sockets, which /proc/PID/fd cannot open."""
    return socket.socketpair(), socket.socketpair()


def collect(
    pid: int,
    watch: socket.socket,
    streams: Streams,
    key: bytes,
    *,
    timeout_s: float,
    start: float,
    exit_code: Callable[[], int | None],
) -> ChildOutcome:
    """Wait for the supervised child ``pid`` (procgroup.supervise) and read its result.

    The supervisor tells the claim's wait status on ``watch`` once it has ended everything
    the claim left. At ``timeout_s``, or when the supervisor dies without a word, its end of
    ``watch`` is closed and what is left of its session killed. ``exit_code`` gives the
    supervisor's own exit code when it said nothing (fresh mode; fork mode has none).
    """
    ended: list[bool] = []

    def end() -> None:  # Ctrl-C's way out (procgroup.stopping), or the timeout
        ended.append(True)
        end_supervised(pid, watch)

    try:
        with watch, tracked(pid, end=end):
            told, status = streams.wait_for_status(watch, timeout_s - (time.monotonic() - start), key)
            timed_out = not told and time.monotonic() - start >= timeout_s
            if timed_out:
                end()
            elif not told:  # the supervisor is gone without a word (killed): end what it may have left
                end_supervised(pid, watch)
    except BaseException:  # Ctrl-C in the waiting thread (tracked ended the claim): no stream is left open
        streams.close()
        raise
    if told and status is not None:
        code: int | None = os.waitstatus_to_exitcode(status)
    else:
        code = -signal.SIGKILL if ended else exit_code()  # killed here, or the supervisor's own end
    return streams.outcome(code, timed_out, start, key)
