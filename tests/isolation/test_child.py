"""child.py: the claim's child, the same in both isolation modes: loading, the claim's own errors, its state."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.childsupport import write_spec

from physverify.isolation import isolate


def test_os_exit_gives_no_result_and_names_the_exit_code(tmp_path: Path, isolation: str) -> None:
    spec = write_spec(
        tmp_path,
        """
        import os, sys
        sys.stderr.write("about to leave\\n")
        def checks():
            os._exit(3)
        """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert outcome.payload is None and not outcome.timed_out
    assert outcome.failure() == "the claim's process exited with code 3 before it reported a result"
    assert "about to leave" in outcome.stderr_tail


def test_a_segfault_is_reported_as_the_signal(tmp_path: Path, isolation: str) -> None:
    spec = write_spec(
        tmp_path,
        """
        import ctypes, sys
        def checks():
            sys.stderr.write("about to crash\\n")
            ctypes.string_at(0)
        """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert outcome.payload is None
    assert "SIGSEGV" in (outcome.failure() or "")
    assert "about to crash" in outcome.stderr_tail


def test_an_exception_at_import_is_a_load_error_with_the_traceback_on_stderr(tmp_path: Path, isolation: str) -> None:
    spec = write_spec(tmp_path, "import solver_that_does_not_exist\n")
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
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
def test_checks_that_are_missing_or_not_checks_are_load_errors(
    tmp_path: Path, isolation: str, body: str, problem: str
) -> None:
    outcome = isolate.run_child("spec", write_spec(tmp_path, body), timeout_s=60, isolation=isolation)
    assert outcome.payload is not None and outcome.payload["load_error"] == problem


def test_the_child_runs_in_the_files_folder_with_that_folder_first_on_sys_path(tmp_path: Path, isolation: str) -> None:
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
    outcome = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert outcome.payload is not None, outcome.stderr_tail
    assert outcome.payload["checks"][0]["status"] == "PASS"
    assert not list(tmp_path.rglob("*.pyc")), "the child must not write bytecode next to the code"


def test_an_edit_to_the_solver_between_two_runs_is_seen(tmp_path: Path, isolation: str) -> None:
    solver = tmp_path / "solver_under_edit.py"
    solver.write_text("RATE = 1.0\n")
    spec = write_spec(
        tmp_path,
        """
        import solver_under_edit
        def checks():
            ok = solver_under_edit.RATE == 1.0
            return [Check("demo", "rate", lambda: Result(PASS if ok else FAIL, str(solver_under_edit.RATE)))]
    """,
    )
    first = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    solver.write_text("RATE = 2.0\n")
    second = isolate.run_child("spec", spec, timeout_s=60, isolation=isolation)
    assert first.payload is not None and second.payload is not None
    assert [first.payload["checks"][0]["status"], second.payload["checks"][0]["status"]] == ["PASS", "FAIL"]


def test_a_claim_that_changes_numpy_or_physverify_does_not_change_the_next_claim(
    tmp_path: Path, isolation: str
) -> None:
    polluter = write_spec(
        tmp_path,
        """
        import numpy as np
        import physverify.checks
        np.seterr(all="raise")
        np.pi = 3.0
        np.linalg.norm = lambda *args, **kwargs: 0.0
        physverify.checks.OVERRUN_FACTOR = 99.0
        np.random.seed(0)
        def checks():
            return [Check("demo", "pollutes", lambda: Result(PASS, repr(np.random.random())))]
    """,
        name="verify_polluter.py",
    )
    observer = write_spec(
        tmp_path,
        """
        import numpy as np
        import physverify.checks
        def checks():
            clean = (np.geterr()["divide"] == "warn" and np.pi != 3.0 and np.linalg.norm([3.0, 4.0]) == 5.0
                     and physverify.checks.OVERRUN_FACTOR == 2.0)
            return [Check("demo", "clean", lambda: Result(PASS if clean else FAIL, repr(np.random.random())))]
    """,
        name="verify_observer.py",
    )
    polluted = isolate.run_child("spec", polluter, timeout_s=60, isolation=isolation)
    observed = [isolate.run_child("spec", observer, timeout_s=60, isolation=isolation) for _ in range(2)]
    assert polluted.payload is not None and all(o.payload is not None for o in observed)
    assert [o.payload["checks"][0]["status"] for o in observed] == ["PASS", "PASS"]  # type: ignore[index]
    draws = {polluted.payload["checks"][0]["message"]} | {o.payload["checks"][0]["message"] for o in observed}  # type: ignore[index]
    assert len(draws) == 3, "each child's global numpy generator starts from fresh entropy"


@pytest.mark.parametrize(
    ("body", "load_error", "check_message"),
    [
        ("raise KeyboardInterrupt\n", "importing it raised KeyboardInterrupt (at verify_case.py:2 in <module>)", None),
        (
            "import sys\ndef checks():\n    sys.exit(0)\n",
            "checks() raised SystemExit: 0 (at verify_case.py:4 in checks)",
            None,
        ),
        (
            "def checks():\n    return [Check('x', 1.5, lambda: Result(PASS))]\n",
            "checks() returned a Check whose label is a float, not a string",
            None,
        ),
        (
            "import sys\ndef checks():\n    return [Check('x', 'y', lambda: sys.exit(4))]\n",
            None,
            "SystemExit: 4 (at verify_case.py:4 in <lambda>): a check must return a Result, not end the process",
        ),
        (
            "def checks():\n    return [Check('x', 'y', lambda: Result(PASS), budget_s='soon')]\n",
            None,
            "budget_s must be a positive number of seconds, not 'soon'; the check was not run",
        ),
        (
            "def checks():\n    return [Check('x', 'y', lambda: Result(PASS, object()))]\n",
            None,
            "the check's Result has a message that is a object, not a string",
        ),
    ],
)
def test_the_claims_own_exits_and_miswritten_checks_are_named(
    tmp_path: Path, isolation: str, body: str, load_error: str | None, check_message: str | None
) -> None:
    """Issue 13, item 22: these used to read 'exited with code N' or 'ended without reporting a result'."""
    outcome = isolate.run_child("spec", write_spec(tmp_path, body), timeout_s=60, isolation=isolation)
    assert outcome.payload is not None, outcome.failure()
    assert outcome.payload["load_error"] == load_error
    if check_message is not None:
        assert [(c["status"], c["message"]) for c in outcome.payload["checks"]] == [("ERROR", check_message)]


def test_a_missing_module_gives_the_same_load_error_in_both_modes(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "import solver_nobody_installed\n")
    errors = {
        mode: isolate.run_child("spec", spec, timeout_s=60, isolation=mode).payload for mode in isolate.ISOLATION_MODES
    }
    assert errors["fresh"] == errors["fork"]
    assert errors["fork"] == {
        "load_error": "importing it raised ModuleNotFoundError: No module named "
        f"'solver_nobody_installed' (at {spec.name}:2 in <module>)"
    }
