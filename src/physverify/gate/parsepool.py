"""Claim files parsed on every core when a run has many to parse (issue 19, an empty cache).

With nothing cached, a run over 10,000 claims spends most of its time in ``ast.parse`` and
the reference scan, one file after another. ``Pool.parse`` spreads a batch of contents over
worker processes, one per core, and gives each content's reading in the JSON form the
cache keeps (``claim.static_fields``); cache.py checks every answer field by field, as it
checks an entry read from disk, and parses itself whatever a worker did not answer.

A worker is a fresh interpreter (``python -s -B -m physverify.gate.parsepool``) started with
subprocess, never a fork of this process (it has threads), in physverify's own folder, so
nothing of the repository under test is on its path. It only parses, as ``claim.read``
does: nothing of a claim runs there. It reads requests on stdin and ends at EOF, so it
ends with the run that started it, even when that run was killed.

Protocol, per batch: the parent writes the count (4 bytes, little endian), then per
content its SHA-256 (64 ASCII hex digits), its length (4 bytes) and its bytes; the worker
answers with a length (4 bytes) and a JSON array holding, per content, its
``static_fields`` list, or null when JSON cannot hold it.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from queue import SimpleQueue
from typing import IO, TYPE_CHECKING

from physverify.gate import claim

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

MIN_BATCH = 64  # fewer contents to parse than this: parsed in the caller's process (a worker start costs ~0.1 s)
MAX_WORKERS = 4
MAX_CONTENT = 64 << 10  # a larger file is parsed by the caller: its tree may take hundreds of MB
_COUNT = struct.Struct("<I")
_ENCODER = json.JSONEncoder(allow_nan=True, separators=(",", ":"))  # ensure_ascii, as the cache writes


def workers_wanted() -> int:
    """How many workers pay here: one per core this process may use, at most MAX_WORKERS; 0 on one core."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return 0 if cores < 2 else min(cores, MAX_WORKERS)


class _Worker:
    def __init__(self) -> None:
        from physverify.isolation.child import interpreter, startup_environment  # the parent's: no worker imports it

        folder = str(Path(__file__).resolve().parents[2])  # physverify's own folder: sys.path[0] under -m
        self.dead = False
        self.proc = subprocess.Popen(interpreter("physverify.gate.parsepool"), cwd=folder,
                                     env=startup_environment(os.environ), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def parse(self, items: Sequence[tuple[str, bytes]]) -> list[object]:
        """The worker's answers for ``items`` ((SHA-256, bytes) each); OSError or ValueError when it failed."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        parts = [_COUNT.pack(len(items))]
        for digest, data in items:
            parts += [digest.encode("ascii"), _COUNT.pack(len(data)), data]
        stdin.write(b"".join(parts))
        stdin.flush()
        answer = json.loads(_read_exactly(stdout, _COUNT.unpack(_read_exactly(stdout, 4))[0]))
        if not (isinstance(answer, list) and len(answer) == len(items)):
            raise ValueError("an answer of the wrong form")
        return answer

    def close(self) -> None:
        if self.proc.returncode is not None:
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()  # EOF: the worker ends
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("the worker ended")
    return data


class Pool:
    """Workers started on first use; every failure means "parse it yourself", never a wrong reading."""

    def __init__(self, workers: int | None = None) -> None:
        self.size = workers_wanted() if workers is None else workers
        self._idle: SimpleQueue[_Worker] = SimpleQueue()
        self._all: list[_Worker] = []
        self._threads: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._broken = False

    @property
    def usable(self) -> bool:
        return self.size > 0 and not self._broken

    def submit(self, items: Sequence[tuple[str, bytes]]) -> list[Future[list[object]]]:
        """Start parsing ``items`` ((SHA-256, bytes) each), split over the workers; one future per slice, in order.

        A slice whose worker failed answers None for each of its items.
        """
        if not self._start():
            return []
        size = -(-len(items) // self.size)
        assert self._threads is not None
        return [self._threads.submit(self._one, items[start:start + size]) for start in range(0, len(items), size)]

    def _start(self) -> bool:
        with self._lock:
            if self._threads is None and self.usable:
                try:
                    for _ in range(self.size):
                        worker = _Worker()
                        self._all.append(worker)
                        self._idle.put(worker)
                except OSError:  # no process could be started (a process limit): parse in the caller
                    self._broken = True
                    return False
                from concurrent.futures import ThreadPoolExecutor  # here: a worker process never needs it

                self._threads = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="physverify-parse")
            return self._threads is not None and not self._broken

    def _one(self, items: Sequence[tuple[str, bytes]]) -> list[object]:
        worker = self._idle.get()
        try:
            if worker.dead:
                return [None] * len(items)
            return worker.parse(items)
        except Exception:  # whatever went wrong (it died, answered nonsense): not used again, the caller parses
            worker.dead = True
            worker.close()
            return [None] * len(items)
        finally:
            self._idle.put(worker)  # back, dead or alive, so no slice ever waits for a worker that will not come

    def close(self) -> None:
        """End the workers (after the batches submitted)."""
        with self._lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=True)
        for worker in self._all:
            worker.close()
        self._all.clear()


# --- the worker --------------------------------------------------------------------------
def _answer(digest: str, data: bytes) -> str:
    try:
        return _ENCODER.encode(claim.static_fields(claim.static_reading(data, digest)))
    except (TypeError, ValueError, OverflowError, RecursionError):  # JSON cannot hold it: the parent parses it
        return "null"


def main() -> None:
    """The worker: answer each batch on stdin until EOF."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(4)
        if len(head) != 4:
            return
        answers = []
        for _ in range(_COUNT.unpack(head)[0]):
            digest = _read_exactly(stdin, 64).decode("ascii")
            data = _read_exactly(stdin, _COUNT.unpack(_read_exactly(stdin, 4))[0])
            answers.append(_answer(digest, data))
        body = ("[" + ",".join(answers) + "]").encode("ascii")
        stdout.write(_COUNT.pack(len(body)) + body)
        stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):  # the run ended or was stopped
        pass
