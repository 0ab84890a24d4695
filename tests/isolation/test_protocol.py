"""protocol.py: the marker, the JSON result and its size cap, the streams the parent drains."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from support import hostile
import pytest
from support.childsupport import write_spec
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT

from physverify.isolation import isolate, protocol
from physverify.isolation.procgroup import send_status


def test_only_the_first_json_value_after_the_marker_is_read() -> None:
    key = protocol.new_key()
    result = protocol.encode_result({"checks": [], "load_error": None}, key)
    late = protocol.encode_result({"checks": "late"}, key)
    assert protocol.parse_payload(result + late + b"tail written at exit", key) == ({"checks": [], "load_error": None}, False)
    assert protocol.parse_payload(b"no marker here", key) == (None, False)
    assert protocol.parse_payload(result[:-5], key) == (None, False)  # cut short: a child that died, no tampering


# A claim whose decisive check FAILs after a check whose message alone is over the cap: the
# verdict must be the checks' (confirmed), not a load error, and never "rejected".
HUGE_CLAIM = DECAY_CLAIM.replace(
    'return [Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]',
    'return [Check("demo", "a long report", lambda: Result(PASS, "x" * SIZE)),\n'
    '            Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]',
)


def test_a_result_over_the_cap_keeps_every_status_and_names_the_cap(tmp_path: Path, isolation: str) -> None:
    """Issue 21, item 14 (issue 13, item 14 made it a load error): record what fits, never another verdict."""
    from physverify.gate import evaluate

    (tmp_path / "decay.py").write_text(DECAY_DEFECT)
    claim_path = tmp_path / "claim_huge.py"
    claim_path.write_text(HUGE_CLAIM.replace("SIZE", str(protocol.RESULT_LIMIT + 10)))
    record = evaluate.evaluate(claim_path, timeout_s=120, isolation=isolation).record
    assert record["verdict"] == "confirmed", record["reason"]
    statuses = [check["status"] for check in record["checks"]]
    assert statuses == ["PASS", "FAIL"]
    assert record["checks"][0]["message"].endswith(
        "[cut: the claim's result was over the 32 MiB a claim may report; the status is the check's own]")
    assert len(record["checks"][0]["message"]) < 5000


def test_a_result_too_large_even_cut_is_a_load_error_naming_the_cap() -> None:
    """Statuses alone over the cap (a huge number of checks): no verdict from a part of them."""
    check = {"label": "y" * 400, "family": "f", "status": "PASS", "message": "m", "seconds": 0.0}
    payload = {"load_error": None, "checks": [check] * (protocol.RESULT_LIMIT // 300)}
    key = protocol.new_key()
    parsed, tampered = protocol.parse_payload(protocol.encode_result(payload, key), key)
    assert parsed is not None and not tampered
    assert "over the 32 MiB a claim may report even with every message cut" in parsed["load_error"]


def test_a_result_stream_that_overflows_the_parents_buffer_is_named() -> None:
    outcome = protocol.ChildOutcome(0, None, "", False, 1.0, overflowed=True)
    assert "wrote more than 33 MiB to its result stream" in (outcome.failure() or "")


def test_streams_held_open_by_a_detached_process_cost_one_bounded_wait_not_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13, item 23: the two streams used to wait DRAIN_S each, one after the other.

    The clock is the test's own: a select that finds nothing ready takes the whole time it
    was given, one that finds data takes none, so the time waited is counted exactly.
    """
    monkeypatch.setattr(protocol, "DRAIN_S", 0.3)
    clock = [1000.0]
    waited: list[float] = []
    select = protocol.Streams._select

    def counted_select(self: protocol.Streams, selector: object, seconds: float) -> object:
        ready = select(self, selector, 0)  # type: ignore[arg-type]
        if not ready:
            clock[0] += seconds
            waited.append(seconds)
        return ready

    monkeypatch.setattr(protocol.Streams, "_select", counted_select)
    monkeypatch.setattr(protocol, "time", type("Clock", (), {"monotonic": staticmethod(lambda: clock[0])}))
    (out, out_held), (err, err_held) = protocol.stream_pairs()  # both other ends stay open, as a detached process holds them
    try:
        out_held.sendall(b"partial output, never ended")
        outcome = protocol.Streams(out, err).outcome(0, False, clock[0], protocol.new_key())
    finally:
        out_held.close()
        err_held.close()
    assert outcome.payload is None and waited
    assert sum(waited) <= 0.3
    assert out.fileno() == -1 and err.fileno() == -1  # closed once given up on, not left to a thread


def test_the_status_and_both_streams_are_read_by_one_wait_in_any_order() -> None:
    """Streams.wait_for_status drains the streams while it waits, so a child that fills them is never blocked."""
    key = protocol.new_key()
    (out, out_child), (err, err_child) = protocol.stream_pairs()
    watch, watch_child = socket.socketpair()
    streams = protocol.Streams(out, err)
    result = protocol.encode_result({"load_error": None, "checks": []}, key)
    big = b"e" * (4 * 1024 * 1024)  # far more than a socket's buffer: written only if read meanwhile

    def child() -> None:
        err_child.sendall(big)
        out_child.sendall(result)
        watch_child.sendall(b"noise that is not the supervisor's\n")
        send_status(watch_child, 0, key)
        for sock in (out_child, err_child):
            sock.close()

    thread = threading.Thread(target=child)
    thread.start()
    assert streams.wait_for_status(watch, 60.0, key) == (True, 0)
    thread.join()
    outcome = streams.outcome(0, False, time.monotonic(), key)
    assert outcome.payload == {"load_error": None, "checks": []}
    assert outcome.stderr_tail == "e" * protocol.STDERR_TAIL_CHARS
    watch_child.close()
    assert streams.wait_for_status(watch, 60.0, key) == (False, None)  # the supervisor's end without a word
    watch.close()


def test_a_status_with_the_wrong_tag_or_none_before_the_time_limit_is_not_told() -> None:
    key = protocol.new_key()
    (out, out_child), (err, err_child) = protocol.stream_pairs()
    watch, watch_child = socket.socketpair()
    streams = protocol.Streams(out, err)
    send_status(watch_child, 0, protocol.new_key())  # another key's status: another process's forgery
    assert streams.wait_for_status(watch, 0.2, key) == (False, None)
    for sock in (out_child, err_child, watch_child, watch):
        sock.close()
    streams.outcome(None, True, time.monotonic(), key)


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


def test_a_claim_that_forges_its_siblings_results_changes_no_verdict(tmp_path: Path, isolation: str) -> None:
    """Issue 21, item 4: A writes a forged PASS into every pipe and socket of B's and C's processes."""
    from physverify.gate import replay

    done = str(tmp_path / "attack.done")
    claims = hostile.claims_repo(tmp_path, {
        "claim_a_forger.py": hostile.forger(done, siblings=2),
        "claim_b_victim.py": hostile.victim(done),
        "claim_c_victim.py": hostile.victim(done),
    })
    result = replay.replay([claims], ledger=tmp_path / "ledger.jsonl", trusted=True, jobs=3, isolation=isolation,
                           timeout_s=180)
    runs = {run.key.rsplit("/", 1)[-1]: run for run in result.claims}
    attack = runs["claim_a_forger.py"].record["checks"][0]["message"]  # type: ignore[index]
    assert attack.startswith("siblings ") and not attack.startswith("siblings 0"), attack
    assert runs["claim_b_victim.py"].verdict == runs["claim_c_victim.py"].verdict == "confirmed", attack


def test_a_result_without_the_claims_key_is_rejected_as_tampering(tmp_path: Path, isolation: str) -> None:
    """Issue 21, item 4: what reaches the result stream without the key's tag is never read as the result."""
    spec = write_spec(tmp_path, """
        import json, os, sys
        from physverify.isolation.protocol import MARKER
        frame = sys._getframe()
        while "result_fd" not in frame.f_locals:
            frame = frame.f_back
        forged = {"load_error": None, "checks": [{"label": "x", "family": "f", "status": "PASS", "message": "",
                                                  "seconds": 0.0}]}
        os.write(frame.f_locals["result_fd"], (MARKER + "\\n" + json.dumps(forged) + "\\n").encode())
        os._exit(0)
    """)
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert outcome.payload is None and outcome.tampered
    assert "without this claim's key reached its result stream" in (outcome.failure() or "")
    assert "(tampering)" in (outcome.failure() or "")


def test_ctrl_c_while_waiting_for_a_claim_ends_it_and_leaves_no_stream_open() -> None:
    """replay --jobs 1 waits in the main thread: a KeyboardInterrupt there ends the claim and closes its streams."""
    import signal
    import subprocess

    key = protocol.new_key()
    (out, out_child), (err, err_child) = protocol.stream_pairs()
    watch, watch_child = socket.socketpair()
    streams = protocol.Streams(out, err)
    supervisor = subprocess.Popen(["sleep", "60"], start_new_session=True)  # stands for a supervisor that never answers

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(KeyboardInterrupt):
            protocol.collect(supervisor.pid, watch, streams, key, timeout_s=60.0, start=time.monotonic(),
                             exit_code=lambda: None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        for sock in (out_child, err_child, watch_child):
            sock.close()
    assert supervisor.wait(timeout=30) == -signal.SIGKILL  # ended by the interrupted wait, its whole session
    assert out.fileno() == -1 and err.fileno() == -1 and watch.fileno() == -1


def test_progress_lines_are_told_once_each_as_they_arrive_and_a_forged_one_never() -> None:
    """Issue 38: confirm shows each control and check as the child finishes it; a line cut across reads is told
    once it is whole, and a line without this run's tag (another process's) is dropped, as a forged result is."""
    import time

    from physverify.isolation.protocol import Streams, encode_progress, encode_result, new_key, stream_pairs

    key = new_key()
    (out, out_child), (err, err_child) = stream_pairs()
    told: list[dict[str, object]] = []
    streams = Streams(out, err, told.append, key)
    control = {"label": "quick", "family": "demo", "status": "PASS", "message": "m" * 5000, "data": [1.0] * 10}
    data = (encode_progress("control", control, new_key())  # forged: another key
            + encode_progress("control", control, key) + encode_progress("check", {"label": "x", "status": "FAIL"}, key)
            + encode_result({"load_error": None, "control": control, "checks": []}, key))

    def send() -> None:  # in pieces far smaller than a line, while the parent reads
        for start in range(0, len(data), 7):
            out_child.sendall(data[start:start + 7])
        out_child.close()

    sender = threading.Thread(target=send)
    sender.start()
    err_child.close()
    outcome = streams.outcome(0, False, time.monotonic(), key)
    sender.join()
    assert [line["role"] for line in told] == ["control", "check"]
    first = told[0]["outcome"]
    assert isinstance(first, dict) and first["label"] == "quick" and len(first["message"]) == 4096
    assert "data" not in first and outcome.payload is not None and outcome.payload["control"]["label"] == "quick"
