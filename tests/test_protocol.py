"""protocol.py: the marker, the JSON result and its size cap, the streams the parent drains."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from childsupport import write_spec

from physverify import isolate, protocol


def test_only_the_first_json_value_after_the_marker_is_read() -> None:
    stdout = (protocol.MARKER + '\n{"checks": [], "load_error": null}\n{"checks": "late"}\n').encode()
    assert protocol.parse_payload(stdout) == {"checks": [], "load_error": None}
    assert protocol.parse_payload(b"no marker here") is None
    assert protocol.parse_payload((protocol.MARKER + "\n{truncated").encode()) is None


def test_a_result_over_the_limit_is_a_load_error_that_says_so(tmp_path: Path, isolation: str) -> None:
    """Issue 13, item 14: it used to read 'ended without reporting a result'."""
    spec = write_spec(
        tmp_path,
        f"""
        def checks():
            return [Check("demo", "huge", lambda: Result(PASS, "x" * {protocol.RESULT_LIMIT + 10}))]
    """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=120, isolation=isolation)
    assert outcome.payload is not None
    assert outcome.payload["load_error"].startswith("its result is 32 MiB of JSON, over the 32 MiB a claim may report")


def test_a_result_stream_that_overflows_the_parents_buffer_is_named() -> None:
    outcome = protocol.ChildOutcome(0, None, "", False, 1.0, overflowed=True)
    assert "wrote more than 33 MiB to its result stream" in (outcome.failure() or "")


def test_pipes_held_open_by_a_detached_process_cost_one_bounded_wait_not_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13, item 23: the two readers used to wait DRAIN_S each, one after the other."""
    monkeypatch.setattr(protocol, "DRAIN_S", 0.3)
    waits: list[float] = []
    join = protocol.Reader.join

    def recording_join(self: protocol.Reader, timeout: float) -> None:
        waits.append(timeout)
        join(self, timeout)

    monkeypatch.setattr(protocol.Reader, "join", recording_join)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()  # both write ends stay open, as a process that left the group would hold them
    try:
        outcome = protocol.Streams(os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb")).outcome(0, False, time.monotonic())
    finally:
        os.close(out_w)
        os.close(err_w)
    assert outcome.payload is None and len(waits) == 2
    assert sum(waits) <= 0.3


def test_output_from_print_fd1_and_atexit_cannot_corrupt_the_result(tmp_path: Path, isolation: str) -> None:
    spec = write_spec(
        tmp_path,
        """
        import atexit, os, sys
        print("{not json from print")
        os.write(1, b"{raw bytes on fd 1\\n")
        atexit.register(lambda: os.write(1, b"{written at exit\\n"))
        def checks():
            print("printing during checks()")
            return [Check("demo", "passes", lambda: Result(PASS, "fine"))]
        """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert outcome.payload is not None
    assert [c["status"] for c in outcome.payload["checks"]] == ["PASS"]
    assert "{not json from print" in outcome.stderr_tail
    assert "{raw bytes on fd 1" in outcome.stderr_tail
