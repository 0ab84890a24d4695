"""The fresh child of spec section 4, with real processes: pollution, deaths, timeouts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from physverify import isolate, warm

SPEC_HEADER = "from physverify import Check, Result, PASS, FAIL\n"


@pytest.fixture(params=isolate.ISOLATION_MODES)
def isolation(request: pytest.FixtureRequest) -> str:
    """Every isolation property holds for the fresh child and for the forked one (issue 11)."""
    return str(request.param)


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


def test_only_the_first_json_value_after_the_marker_is_read() -> None:
    stdout = (isolate.MARKER + '\n{"checks": [], "load_error": null}\n{"checks": "late"}\n').encode()
    assert isolate.parse_payload(stdout) == {"checks": [], "load_error": None}
    assert isolate.parse_payload(b"no marker here") is None
    assert isolate.parse_payload((isolate.MARKER + "\n{truncated").encode()) is None


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


def test_fork_is_the_default_on_linux_and_fresh_can_be_asked_for() -> None:
    assert isolate.resolve_isolation(None) == (isolate.FORK if sys.platform.startswith("linux") else isolate.FRESH)
    assert isolate.resolve_isolation("fresh") == isolate.FRESH
    with pytest.raises(ValueError, match="isolation must be one of fresh, fork"):
        isolate.resolve_isolation("thread")


def test_importing_physverify_does_not_import_numpy() -> None:
    code = "import sys, physverify; assert physverify.__version__; print('numpy' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "False"


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


def test_a_result_over_the_limit_is_a_load_error_that_says_so(tmp_path: Path, isolation: str) -> None:
    """Issue 13, item 14: it used to read 'ended without reporting a result'."""
    spec = write_spec(
        tmp_path,
        f"""
        def checks():
            return [Check("demo", "huge", lambda: Result(PASS, "x" * {isolate.RESULT_LIMIT + 10}))]
    """,
    )
    outcome = isolate.run_child("spec", spec, timeout_s=120, isolation=isolation)
    assert outcome.payload is not None
    assert outcome.payload["load_error"].startswith("its result is 32 MiB of JSON, over the 32 MiB a claim may report")


def test_a_result_stream_that_overflows_the_parents_buffer_is_named() -> None:
    outcome = isolate.ChildOutcome(0, None, "", False, 1.0, overflowed=True)
    assert "wrote more than 33 MiB to its result stream" in (outcome.failure() or "")


def _sleeping_spec(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A spec that writes its pid, starts a sleeping grandchild (its pid in the second file) and sleeps itself."""
    pidfile = tmp_path / "claim.pid"
    grandfile = tmp_path / "grandchild.pid"
    spec = write_spec(
        tmp_path,
        start_sleeper(grandfile)
        + f"""
        import os
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        def checks():
            time.sleep(300)
            return []
    """,
    )
    return spec, pidfile, grandfile


def test_the_claim_dies_with_the_process_that_started_it(tmp_path: Path, isolation: str) -> None:
    """Issue 13, item 6: a killed confirm (CI cancel, OOM killer) leaves no claim running."""
    spec, pidfile, grandfile = _sleeping_spec(tmp_path)
    runner = f"from physverify import isolate; isolate.run_child('spec', {str(spec)!r}, timeout_s=600, isolation={isolation!r})"
    parent = subprocess.Popen([sys.executable, "-c", runner])
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and grandfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    parent.kill()
    parent.wait()
    assert_ends_soon(pidfile)
    assert_ends_soon(grandfile)


def test_a_preloaded_module_edited_on_disk_restarts_the_fork_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server keeps one fork server; an edit to what it preloaded must still be seen."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pv_preloaded_lib.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", str(lib))  # as a process started with it: the server and physverify see it
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.setattr(warm, "_STAMP_EVERY_S", 0.0)
    folder = tmp_path / "specs"
    folder.mkdir()
    spec = write_spec(
        folder,
        """
        import pv_preloaded_lib
        def checks():
            return [Check("demo", "value", lambda: Result(PASS, str(pv_preloaded_lib.VALUE)))]
    """,
    )
    warm.shutdown()
    try:
        first = isolate.run_child("spec", spec, timeout_s=60, isolation="fork", preload=["pv_preloaded_lib"])
        server = warm._current
        assert server is not None and "pv_preloaded_lib" in server.preload
        (lib / "pv_preloaded_lib.py").write_text("VALUE = 22\n")
        second = isolate.run_child("spec", spec, timeout_s=60, isolation="fork", preload=["pv_preloaded_lib"])
        assert warm._current is not server
    finally:
        warm.shutdown()
    assert [o.payload["checks"][0]["message"] for o in (first, second)] == ["1", "22"]  # type: ignore[index]


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


# --- the same verdicts in both modes ---------------------------------------------------
REPO = Path(__file__).resolve().parent.parent


def _without_timings(record: dict[str, object]) -> dict[str, object]:
    """A ledger line minus its date and every check's seconds: what must not differ between modes."""
    kept = {k: v for k, v in record.items() if k != "date"}
    for key in ("control", "checks"):
        value = kept.get(key)
        if isinstance(value, dict):
            kept[key] = {k: v for k, v in value.items() if k != "seconds"}
        elif isinstance(value, list):
            kept[key] = [{k: v for k, v in item.items() if k != "seconds"} for item in value]
    return kept


@pytest.mark.parametrize(
    "claim_path",
    sorted((REPO / "claims").glob("*.py")) + sorted((REPO / "docs" / "examples" / "confirm").glob("claim_*.py")),
    ids=lambda p: p.name,
)
def test_this_projects_claims_and_the_worked_examples_get_the_same_verdict_in_both_modes(claim_path: Path) -> None:
    from physverify import confirm

    records = {
        mode: confirm.evaluate(claim_path, timeout_s=300, isolation=mode).record for mode in isolate.ISOLATION_MODES
    }
    assert records["fresh"]["verdict"] is not None
    assert _without_timings(records["fresh"]) == _without_timings(records["fork"])


def test_a_40_claim_replay_writes_the_same_lines_and_exit_code_in_both_modes(tmp_path: Path) -> None:
    import json

    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo

    from physverify import replay

    repo_root = tmp_path / "repo"
    (repo_root / "claims").mkdir(parents=True)
    (repo_root / "decay.py").write_text(DECAY_SOLVER)
    for i in range(40):
        text = DECAY_CLAIM.replace("_compare(1.0)", f"_compare({1.0 + i / 10})")
        if i % 10 == 3:  # some not decidable: a control that fails
            text = text.replace("_compare(0.0)", "Result(FAIL, 'control fails on purpose')")
        if i % 10 == 7:  # and some that cannot load
            text = text.replace("import decay\n", "import decay\nimport module_nobody_installed\n")
        (repo_root / "claims" / f"claim_{i:02d}.py").write_text(text)
    repo = init_repo(repo_root)
    repo.index.add(["decay.py", *[f"claims/claim_{i:02d}.py" for i in range(40)]])
    repo.index.commit("claims")
    results = {}
    for mode in isolate.ISOLATION_MODES:
        ledger_path = tmp_path / f"{mode}.jsonl"
        result = replay.replay([repo_root / "claims"], ledger=ledger_path, trusted=True, jobs=2, isolation=mode)
        lines = [_without_timings(json.loads(line)) for line in ledger_path.read_text().splitlines()]
        results[mode] = (result.exit_code, [run.verdict for run in result.claims], lines)
    assert results["fresh"] == results["fork"]
    assert len(results["fork"][2]) == 40 and {"rejected", "not decidable"} <= set(results["fork"][1])


def test_physverify_yaml_chooses_the_mode_and_the_flag_overrides_it(tmp_path: Path) -> None:
    import json

    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER

    from physverify import replay

    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "decay.py").write_text(DECAY_SOLVER)
    # the check's message names the program that started the child: the fork server, or physverify itself
    (claims / "claim_parent.py").write_text(
        DECAY_CLAIM.replace(
            'f"{got:.6g} against {want:.6g}"', 'open(f"/proc/{os.getppid()}/cmdline").read().replace("\\\\0", " ")'
        ).replace("import math\n", "import math\nimport os\n", 1)
    )
    (claims / "physverify.yaml").write_text("isolation: fresh\n")
    parents = {}
    for flag in (None, "fork"):
        ledger_path = tmp_path / f"{flag}.jsonl"
        replay.replay([claims], ledger=ledger_path, trusted=True, isolation=flag)
        parents[flag] = json.loads(ledger_path.read_text())["checks"][0]["message"]
    assert "physverify.warm" not in parents[None] and "physverify.warm" in parents["fork"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("isolation: thread\n", "isolation must be fresh or fork, not 'thread'"),
        ("preload: scipy\n", "preload must be a list"),
    ],
)
def test_a_bad_isolation_or_preload_in_physverify_yaml_is_a_config_error(
    tmp_path: Path, text: str, message: str
) -> None:
    from physverify.config import load_config
    from physverify.errors import ConfigError

    (tmp_path / "physverify.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)


def test_the_mcp_server_keeps_one_fork_server_between_calls_and_it_ends_with_the_client(tmp_path: Path) -> None:
    """Issue 11, item 3, with the SDK's real client; the edit between the calls is still seen."""
    import re

    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    (tmp_path / "rate.py").write_text("RATE = 1\n")
    (tmp_path / "verify_parent.py").write_text(
        SPEC_HEADER
        + textwrap.dedent("""
        import os
        import rate
        def checks():
            return [Check("demo", "who forked me", lambda: Result(PASS, f"ppid={os.getppid()} rate={rate.RATE}"))]
    """)
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(tmp_path)])

    async def two_calls() -> list[str]:
        texts = []
        async with Client(params, read_timeout_seconds=120) as client:
            for rate in (1, 2):
                (tmp_path / "rate.py").write_text(f"RATE = {rate}\n")
                result = await client.call_tool("run_checks", {"specs": ["verify_parent.py"], "trusted": True})
                texts.append("".join(p.text for p in result.content if p.type == "text"))
        return texts

    texts = anyio.run(two_calls)
    seen = [re.search(r"ppid=(\d+) rate=(\d+)", text) for text in texts]
    assert all(seen), texts
    (first_parent, first_rate), (second_parent, second_rate) = [m.groups() for m in seen]  # type: ignore[union-attr]
    assert first_parent == second_parent and (first_rate, second_rate) == ("1", "2")
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(first_parent)
    assert_ends_soon(pidfile)


def test_the_fork_server_never_imports_repository_code_even_when_physverify_yaml_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER

    from physverify import replay

    claims = tmp_path / "claims"
    claims.mkdir()
    log = tmp_path / "imports.log"
    # decay.py notes every process that imports it; only the claim's own child may
    (claims / "decay.py").write_text(
        f"import os\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n')\n" + DECAY_SOLVER
    )
    (claims / "claim_decay.py").write_text(
        DECAY_CLAIM.replace('f"{got:.6g} against {want:.6g}"', "str(os.getpid())").replace(
            "import math\n", "import math\nimport os\n", 1
        )
    )
    (claims / "physverify.yaml").write_text("preload: [decay]\nisolation: fork\n")
    monkeypatch.setenv("PYTHONPATH", str(claims))  # so the server could import it, if it were asked to
    ledger_path = tmp_path / "ledger.jsonl"
    replay.replay([claims], ledger=ledger_path, trusted=True)
    child = json.loads(ledger_path.read_text())["checks"][0]["message"]
    assert log.read_text().split() == [child]


def test_pipes_held_open_by_a_detached_process_cost_one_bounded_wait_not_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13, item 23: the two readers used to wait _DRAIN_S each, one after the other."""
    monkeypatch.setattr(isolate, "_DRAIN_S", 0.3)
    waits: list[float] = []
    join = isolate._Reader.join

    def recording_join(self: isolate._Reader, timeout: float) -> None:
        waits.append(timeout)
        join(self, timeout)

    monkeypatch.setattr(isolate._Reader, "join", recording_join)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()  # both write ends stay open, as a process that left the group would hold them
    try:
        outcome = isolate.Streams(os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb")).outcome(0, False, time.monotonic())
    finally:
        os.close(out_w)
        os.close(err_w)
    assert outcome.payload is None and len(waits) == 2
    assert sum(waits) <= 0.3


def test_the_forked_child_has_the_fresh_childs_cwd_sys_path_environment_and_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11, item 1: the forked child does exactly what the fresh child does."""
    import json

    spec = write_spec(
        tmp_path,
        """
        import json, os, sys
        def seen():
            return json.dumps({
                "cwd": os.getcwd(), "path": sys.path, "repo": os.environ.get("PHYSVERIFY_REPO"),
                "stdin": os.read(0, 10).decode(), "fd1_is_fd2": os.path.samestat(os.fstat(1), os.fstat(2)),
                "leader": os.getsid(0) == os.getpid() == os.getpgid(0), "bytecode": sys.dont_write_bytecode,
                "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
            })
        def checks():
            return [Check("demo", "what the child sees", lambda: Result(PASS, seen()))]
    """,
    )
    monkeypatch.setenv("PHYSVERIFY_REPO", str(tmp_path))  # set after any fork server started: still seen
    extra = tmp_path / "root"
    extra.mkdir()
    seen = {
        mode: json.loads(
            isolate.run_child("spec", spec, timeout_s=60, sys_path=[extra], isolation=mode).payload["checks"][0][
                "message"
            ]
        )
        for mode in isolate.ISOLATION_MODES
    }  # type: ignore[index]
    assert seen["fresh"] == seen["fork"]
    assert seen["fork"]["path"][:2] == [str(tmp_path), str(extra)] and seen["fork"]["repo"] == str(tmp_path)
    assert seen["fork"]["stdin"] == "" and seen["fork"]["fd1_is_fd2"] and seen["fork"]["leader"]


def test_the_fork_server_preloads_installed_libraries_the_claims_import_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "local_solver.py").write_text("import scipy.linalg\n")  # in the closure: its imports count too
    claim_path = tmp_path / "claim_x.py"
    claim_path.write_text(
        textwrap.dedent("""
        import json
        import numba
        import local_solver
        from scipy import integrate
        from physverify import reference_study
        def later():
            import torch
    """)
    )
    preload = warm.preload_for(claim_path, [str(tmp_path)], explicit=["json"])
    assert {"numpy", "physverify", "scipy.integrate", "scipy.linalg", "json"} <= preload
    assert not {"numba", "torch", "local_solver"} & preload  # a thread or GPU starter; repository code


def test_a_claim_that_stops_the_fork_server_times_out_and_the_next_claim_still_runs(tmp_path: Path) -> None:
    """A claim can SIGSTOP its parent; in fork mode that is the server, which is then replaced."""
    stopper = write_spec(
        tmp_path,
        """
        import os, signal
        def checks():
            os.kill(os.getppid(), signal.SIGSTOP)
            return [Check("demo", "stopped its parent", lambda: Result(PASS, "done"))]
    """,
        name="verify_stopper.py",
    )
    plain = write_spec(
        tmp_path,
        """
        def checks():
            return [Check("demo", "runs", lambda: Result(PASS, "fine"))]
    """,
        name="verify_plain.py",
    )
    stopped = isolate.run_child("spec", stopper, timeout_s=3, isolation="fork")
    after = isolate.run_child("spec", plain, timeout_s=60, isolation="fork")
    assert stopped.timed_out  # its status never came: the stopped server could not report it
    assert after.payload is not None and after.payload["checks"][0]["status"] == "PASS"


def test_a_claim_running_when_the_mcp_client_disconnects_is_ended(tmp_path: Path) -> None:
    """Issue 13, item 6: an MCP client that goes away leaves no claim running."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    pidfile = tmp_path / "claim.pid"
    grandfile = tmp_path / "grandchild.pid"
    write_spec(
        tmp_path,
        start_sleeper(grandfile)
        + f"""
        import os
        def checks():
            open({str(pidfile)!r}, "w").write(str(os.getpid()))
            time.sleep(300)
            return []
    """,
        name="verify_slow.py",
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(tmp_path)])

    async def leave_while_running() -> None:
        async with Client(params, read_timeout_seconds=120) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "run_checks", {"specs": ["verify_slow.py"], "trusted": True})
            with anyio.fail_after(60):
                while not (pidfile.exists() and pidfile.read_text()):
                    await anyio.sleep(0.05)
            group.cancel_scope.cancel()

    anyio.run(leave_while_running)
    assert_ends_soon(pidfile)
    assert_ends_soon(grandfile)


def test_stopping_kills_a_running_child_with_its_grandchild_and_starts_no_new_one(
    tmp_path: Path, isolation: str
) -> None:
    """replay's way out after Ctrl-C: a claim waited for on another thread ends, and nothing new starts."""
    import threading

    spec, pidfile, grandfile = _sleeping_spec(tmp_path)
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


def test_while_stopping_fork_mode_falls_back_to_no_fresh_child(tmp_path: Path) -> None:
    """On the way out no fork server starts, and the fresh child fork mode falls back to is refused too: Stopped."""
    spec = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'passes', lambda: Result(PASS, ''))]\n")
    warm.shutdown()  # so the next run has to start a server
    with isolate.stopping(), pytest.raises(isolate.Stopped):
        warm.run_forked("spec", spec, [], isolate.child_environment(None), timeout_s=60, preload=())
    with isolate.stopping(), pytest.raises(isolate.Stopped):
        isolate._run_fresh("spec", spec, [], isolate.child_environment(None), 60)
    assert isolate.run_child("spec", spec, timeout_s=60, isolation=isolate.FORK).payload is not None
