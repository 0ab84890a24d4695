"""procgroup.py: process groups and killing: timeouts, grandchildren, setsid escapes, Ctrl-C's stop."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from childsupport import assert_ends_soon, sleeping_spec, start_sleeper, write_spec

from physverify import isolate


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
