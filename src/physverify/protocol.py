"""The result protocol between a claim's child and the parent: a marker line, one JSON object, a size cap.

The child writes ``MARKER``, a newline and its result as one JSON object on its result
stream (``encode_result``); the parent drains the child's two streams on threads
(``Streams``), keeps at most ``STDOUT_CAP`` of the result stream and the last
``STDERR_KEEP`` bytes of stderr, and reads the first JSON value after the marker
(``parse_payload``). ``ChildOutcome`` is what one child run gave, in either isolation mode.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

from physverify.procgroup import signal_name
from physverify.text import clean

MARKER = "\x1ephysverify-result-v1\x1e"
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


@dataclass(frozen=True)
class ChildOutcome:
    """What one child run gave: exit status, the parsed result (or None), the stderr tail."""

    returncode: int | None
    payload: dict[str, Any] | None
    stderr_tail: str
    timed_out: bool
    seconds: float
    overflowed: bool = False  # the child wrote more than STDOUT_CAP to its result stream

    def failure(self) -> str | None:
        """A sentence on why there is no result (died, killed, no marker), or None when there is one."""
        if self.payload is not None or self.timed_out:
            return None
        if self.overflowed:
            return (f"the claim's process wrote more than {STDOUT_CAP // 2**20} MiB to its result stream, "
                    "over the limit, so no result was read; report fewer checks or shorter messages")
        code = self.returncode
        if code is not None and code < 0:
            return f"the claim's process was killed by {signal_name(-code)} before it reported a result"
        if code:
            return f"the claim's process exited with code {code} before it reported a result"
        return "the claim's process ended without reporting a result"


def encode_result(payload: dict[str, Any]) -> bytes:
    """The marker line and the payload as JSON; a load error instead when it cannot be sent whole."""
    try:
        text = json.dumps(payload)
    except (TypeError, ValueError, RecursionError) as exc:  # recorded: the result says why it could not be sent
        text = json.dumps({"load_error": f"its result could not be written as JSON ({exc})"})
    if len(text) > RESULT_LIMIT:  # ASCII (json.dumps escapes the rest), so characters are bytes
        text = json.dumps({"load_error": (
            f"its result is {len(text) / 2**20:.0f} MiB of JSON, over the {RESULT_LIMIT // 2**20} MiB a claim "
            "may report; report fewer checks or shorter messages"
        )})
    return (MARKER + "\n" + text + "\n").encode("utf-8")


def parse_payload(stdout: bytes) -> dict[str, Any] | None:
    """The first JSON value after the marker line, or None when there is none.

    Only the first value is read, so whatever the code under test writes to the real
    stdout after it (an atexit handler, a C library flushing at exit) is ignored.
    """
    text = stdout.decode("utf-8", errors="replace")
    where = text.find(MARKER)
    if where < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[where + len(MARKER) :].lstrip())
    except json.JSONDecodeError:
        return None
    return clean(value) if isinstance(value, dict) else None  # no lone surrogate enters the parent (issue 13)


class Streams:
    """The child's stdout (the result) and stderr, each drained on its own thread."""

    def __init__(self, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self._out = Reader(stdout, keep=STDOUT_CAP, keep_head=True)
        self._err = Reader(stderr, keep=STDERR_KEEP, keep_head=False)

    def outcome(self, returncode: int | None, timed_out: bool, start: float) -> ChildOutcome:
        """Wait (at most DRAIN_S for both pipes together) for the rest of the output and parse it."""
        deadline = time.monotonic() + DRAIN_S
        for reader in (self._out, self._err):
            reader.join(max(0.0, deadline - time.monotonic()))
        seconds = time.monotonic() - start
        payload = None if timed_out else parse_payload(self._out.data())
        tail = self._err.data().decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
        return ChildOutcome(returncode, payload, tail, timed_out, seconds, self._out.overflowed)


class Reader:
    """Drains one pipe on a daemon thread, keeping the head (stdout) or the tail (stderr)."""

    def __init__(self, stream: IO[bytes], *, keep: int, keep_head: bool) -> None:
        self._buffer = bytearray()
        self._keep = keep
        self._keep_head = keep_head
        self.overflowed = False
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
                if self._keep_head:
                    room = self._keep - len(self._buffer)
                    self.overflowed = self.overflowed or len(chunk) > room
                    self._buffer += chunk[: max(room, 0)]
                else:
                    self._buffer += chunk
                    del self._buffer[: max(len(self._buffer) - self._keep, 0)]

    def join(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for the pipe's end."""
        self._thread.join(timeout)

    def data(self) -> bytes:
        """What was kept so far."""
        return bytes(self._buffer)
