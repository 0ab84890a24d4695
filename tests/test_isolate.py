"""The fresh child of spec section 4, with real processes: pollution, deaths, timeouts."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from physverify import isolate

SPEC_HEADER = "from physverify import Check, Result, PASS, FAIL\n"


def write_spec(folder: Path, body: str, name: str = "verify_case.py") -> Path:
    path = folder / name
    path.write_text(SPEC_HEADER + textwrap.dedent(body), encoding="utf-8")
    return path


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it has no state "Z" once reaped by init
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_sleeper(pidfile: Path) -> str:
    """Claim-file lines that start a grandchild sleeping for 300 s and note its pid in ``pidfile``."""
    return f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
    """


def assert_ends_soon(pidfile: Path) -> None:
    """The process whose pid is in ``pidfile`` is gone within 5 s."""
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid)


def test_output_from_print_fd1_and_atexit_cannot_corrupt_the_result(tmp_path: Path) -> None:
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
    outcome = isolate.run_child("spec", spec, timeout_s=60)
    assert outcome.payload is not None
    assert [c["status"] for c in outcome.payload["checks"]] == ["PASS"]
    assert "{not json from print" in outcome.stderr_tail
    assert "{raw bytes on fd 1" in outcome.stderr_tail


def test_only_the_first_json_value_after_the_marker_is_read() -> None:
    stdout = (isolate.MARKER + '\n{"checks": [], "load_error": null}\n{"checks": "late"}\n').encode()
    assert isolate.parse_payload(stdout) == {"checks": [], "load_error": None}
    assert isolate.parse_payload(b"no marker here") is None
    assert isolate.parse_payload((isolate.MARKER + "\n{truncated").encode()) is None


def test_a_timeout_kills_the_child_and_the_grandchild_it_started(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    spec = write_spec(tmp_path, start_sleeper(pidfile) + """
        def checks():
            time.sleep(300)
            return []
    """)
    started = time.monotonic()
    outcome = isolate.run_child("spec", spec, timeout_s=2)
    assert outcome.timed_out and outcome.payload is None
    assert time.monotonic() - started < 30
    assert_ends_soon(pidfile)


def test_a_grandchild_left_running_after_a_normal_exit_is_ended_too(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    spec = write_spec(tmp_path, start_sleeper(pidfile) + """
        def checks():
            return [Check("demo", "passes", lambda: Result(PASS, "fine"))]
    """)
    started = time.monotonic()
    outcome = isolate.run_child("spec", spec, timeout_s=60)
    assert outcome.payload is not None and time.monotonic() - started < 30
    assert_ends_soon(pidfile)


def test_os_exit_gives_no_result_and_names_the_exit_code(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path,
        """
        import os, sys
        sys.stderr.write("about to leave\\n")
        def checks():
            os._exit(3)
        """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=60)
    assert outcome.payload is None and not outcome.timed_out
    assert outcome.failure() == "the claim's process exited with code 3 before it reported a result"
    assert "about to leave" in outcome.stderr_tail


def test_a_segfault_is_reported_as_the_signal(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path,
        """
        import ctypes
        def checks():
            ctypes.string_at(0)
        """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=60)
    assert outcome.payload is None
    assert "SIGSEGV" in (outcome.failure() or "")
    assert "Fatal Python error" in outcome.stderr_tail or outcome.stderr_tail == "" or "Segmentation" in outcome.stderr_tail


def test_an_exception_at_import_is_a_load_error_with_the_traceback_on_stderr(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "import solver_that_does_not_exist\n")
    outcome = isolate.run_child("spec", spec, timeout_s=60)
    assert outcome.payload is not None
    assert outcome.payload["load_error"] == (
        "importing it raised ModuleNotFoundError: No module named 'solver_that_does_not_exist'"
        f" (at {spec.name}:2 in <module>)"
    )
    assert "Traceback" in outcome.stderr_tail


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("x = 1\n", "checks() is not defined"),
        ("def checks():\n    return []\n", "checks() returned an empty list, not a non-empty list of physverify Check"),
        ("def checks():\n    return [42]\n", "checks() returned a int, not a physverify Check"),
        ("def checks():\n    return None\n", "checks() returned None, not a non-empty list of physverify Check"),
    ],
)
def test_checks_that_are_missing_or_not_checks_are_load_errors(tmp_path: Path, body: str, problem: str) -> None:
    outcome = isolate.run_child("spec", write_spec(tmp_path, body), timeout_s=60)
    assert outcome.payload is not None and outcome.payload["load_error"] == problem


def test_the_child_runs_in_the_files_folder_with_that_folder_first_on_sys_path(tmp_path: Path) -> None:
    (tmp_path / "local_solver.py").write_text("SHADOW = True\n")
    spec = write_spec(
        tmp_path,
        """
        import os, sys
        import local_solver
        def checks():
            ok = local_solver.SHADOW and os.getcwd() == sys.path[0]
            return [Check("demo", "folder first", lambda: Result(PASS if ok else FAIL, sys.path[0]))]
        """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=60)
    assert outcome.payload is not None, outcome.stderr_tail
    assert outcome.payload["checks"][0]["status"] == "PASS"
    assert not list(tmp_path.rglob("*.pyc")), "the child must not write bytecode next to the code"
