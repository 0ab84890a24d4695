"""procgroup.py: process groups and killing: timeouts, grandchildren, setsid escapes, Ctrl-C's stop."""

from __future__ import annotations

import time
from pathlib import Path

from support import hostile
import pytest
from support.childsupport import assert_ends_soon, sleeping_spec, start_sleeper, write_spec

from physverify.isolation import isolate


def test_a_timeout_kills_the_child_and_the_grandchild_it_started(tmp_path: Path, isolation: str) -> None:
    pidfile = tmp_path / "grandchild.pid"
    spec = write_spec(
        tmp_path,
        start_sleeper(pidfile)
        + """
        def checks():
            time.sleep(300)
            return []
    """,
    )
    started = time.monotonic()
    outcome = isolate.run_child("spec", spec, timeout_s=2, isolation=isolation)
    assert outcome.timed_out and outcome.payload is None
    assert time.monotonic() - started < 30
    assert_ends_soon(pidfile)


def test_a_grandchild_left_running_after_a_normal_exit_is_ended_too(tmp_path: Path, isolation: str) -> None:
    pidfile = tmp_path / "daemon.pid"
    spec = write_spec(
        tmp_path,
        start_sleeper(pidfile)
        + """
        def checks():
            return [Check("demo", "passes", lambda: Result(PASS, "fine"))]
    """,
    )
    started = time.monotonic()
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert outcome.payload is not None and time.monotonic() - started < 30
    assert_ends_soon(pidfile)


@pytest.mark.parametrize("times_out", [False, True], ids=["after-a-normal-exit", "after-a-timeout"])
def test_a_process_that_leaves_the_group_with_setsid_is_ended_too(
    tmp_path: Path, isolation: str, times_out: bool
) -> None:
    pidfile = tmp_path / "escaped.pid"
    spec = write_spec(
        tmp_path,
        f"""
        import subprocess, sys, time
        escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
        open({str(pidfile)!r}, "w").write(str(escaped.pid))
        def checks():
            if {times_out}:
                time.sleep(300)
            return [Check("demo", "passes", lambda: Result(PASS, "fine"))]
    """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=3 if times_out else 60, isolation=isolation)
    assert outcome.timed_out == times_out and (outcome.payload is not None) != times_out, outcome.stderr_tail
    assert_ends_soon(pidfile)


def test_stopping_kills_a_running_child_with_its_grandchild_and_starts_no_new_one(
    tmp_path: Path, isolation: str
) -> None:
    """replay's way out after Ctrl-C: a claim waited for on another thread ends, and nothing new starts."""
    import threading

    spec, pidfile, grandfile = sleeping_spec(tmp_path)
    outcomes: list[isolate.ChildOutcome] = []
    waiter = threading.Thread(
        target=lambda: outcomes.append(isolate.run_child("spec", spec, timeout_s=600, isolation=isolation))
    )
    waiter.start()
    while not (pidfile.exists() and grandfile.exists() and pidfile.read_text() and grandfile.read_text()):
        assert waiter.is_alive()
        time.sleep(0.05)
    with isolate.stopping():
        waiter.join()
        with pytest.raises(isolate.Stopped):
            isolate.run_child("spec", spec, timeout_s=600, isolation=isolation)
    assert outcomes[0].returncode == -9 and not outcomes[0].timed_out
    assert_ends_soon(pidfile)
    assert_ends_soon(grandfile)
    after = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'passes', lambda: Result(PASS, ''))]\n", "after.py")
    assert isolate.run_child("spec", after, timeout_s=60, isolation=isolation).payload is not None  # the block is over


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_a_setsid_grandchild_does_not_outlive_a_killed_or_interrupted_physverify(
    tmp_path: Path, isolation: str, how: str
) -> None:
    """Issue 21, item 6: the caller's death (or Ctrl-C) ends the heartbeat the claim left, in both modes."""
    import signal
    import subprocess
    import sys

    from support.fixtures import clean_env

    beat = tmp_path / "beat"
    claims = hostile.claims_repo(tmp_path, {"claim_beats.py": hostile.beating_claim(str(beat), "time.sleep(300)")})
    proc = subprocess.Popen(
        [sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--isolation", isolation],
        cwd=claims.parent, env=clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        pid = hostile.beating_pid(beat)
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert hostile.stops_beating(beat, pid)


def test_a_setsid_grandchild_of_a_claim_that_kills_the_fork_server_is_ended(tmp_path: Path, isolation: str) -> None:
    """Issue 21, item 6: the server's death no longer frees what its claims started (there is none when fresh)."""
    from physverify.isolation import forkclient
    from physverify.gate import replay

    beat = tmp_path / "beat"
    kill = "server = _server()\nif server is not None:\n    os.kill(server, signal.SIGKILL)\n"
    claims = hostile.claims_repo(tmp_path, {"claim_beats.py": hostile.beating_claim(str(beat), kill)})
    forkclient.shutdown()
    try:
        result = replay.replay([claims], ledger=tmp_path / "ledger.jsonl", trusted=True, isolation=isolation)
    finally:
        forkclient.shutdown()
    assert result.claims[0].record is not None and result.claims[0].record["checks"][0]["message"] == "beating"
    assert hostile.stops_beating(beat, hostile.beating_pid(beat))


def test_children_of_lists_this_process_children_with_their_groups_from_the_task_files_and_from_the_scan() -> None:
    """The children file of /proc/PID/task (issue 19's fast path) and the scan of /proc give the same answer."""
    import os
    import subprocess

    from physverify.isolation import procgroup

    own = subprocess.Popen(["sleep", "30"])
    leader = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        listed = procgroup._listed_children(os.getpid())
        if listed is None:
            pytest.skip("this kernel has no /proc/PID/task/TID/children")
        expected = {(own.pid, os.getpgrp()), (leader.pid, leader.pid)}
        assert expected <= set(procgroup.children_of(os.getpid()))
        assert expected <= set(procgroup._scanned_children(os.getpid()))
        assert not {pid for pid, _ in procgroup.children_of(own.pid)}  # sleep has no children
    finally:
        for proc in (own, leader):
            proc.kill()
            proc.wait()
    assert own.pid not in {pid for pid, _ in procgroup.children_of(os.getpid())}
