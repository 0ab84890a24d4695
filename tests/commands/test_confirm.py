"""`physverify confirm` end to end: one test per verdict rule, the ledger line, safety, init.

The command runs in this process (the ``cli`` fixture; each claim still runs in its own child)
where a test reads its printed lines, exit code and ledger; as a real process (``run_process``)
where it is about a time limit ending a hang, the process's environment, or a refusal's
stdout against its stderr.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import Ran, init_repo, run_process

from physverify.commands import confirm
from physverify.gate import evaluate, settings
from physverify.errors import RefusedError, UsageError

CLAIM_DICT = {
    "text": "step() adds +gamma*v instead of -gamma*v",
    "source": "a test",
    "file": "solver.py",
    "line": 3,
    "reference": "Taylor, Classical Mechanics, sec. 5.4",
    "impact": "used",
}

SOLVER = "def decay(y, dt):\n    # forward Euler for y' = -y\n    return y - dt * y\n"


def write_claim(folder: Path, control: str, checks: str, *, claim: dict[str, Any] | None = None,
                header: str = "", name: str = "claim_case.py") -> Path:
    """A claim file whose control() and checks() return Checks built from the given Result expressions."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "solver.py").write_text(SOLVER, encoding="utf-8")
    body = f"""
from physverify import Check, Result, PASS, FAIL, EXACT, ERROR, INCONCLUSIVE, SKIP
import solver
{header}
CLAIM = {json.dumps(claim or CLAIM_DICT)}

def control():
    return Check("demo", "control case", lambda: {control})

def checks():
    return [{checks}]
"""
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


def check(expr: str, label: str = "the check") -> str:
    return f'Check("demo", {label!r}, lambda: {expr})'


def ledger_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- the verdict rules, through the command -----------------------------------------
def test_rule_4_a_failing_check_with_a_passing_control_confirms(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "observed order 1.00 (expected 1)")',
                        check('Result(FAIL, "observed order 0.00 (expected 1)")', "damping on"))
    result = cli("confirm", str(claim), "--trusted", "--ledger", "ledger.jsonl", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()  # spec section 2: the verdict line, then the control and the checks
    assert lines[0] == "confirmed (impact: used): the control passed and 1 of 1 check failed: 'damping on' (FAIL)"
    assert lines[1].split()[:3] == ["control", "PASS", "control"] and lines[2].split()[:2] == ["check", "FAIL"]
    assert "check FAIL damping on: observed order 0.00 (expected 1)" in result.stdout
    assert "claim: step() adds +gamma*v instead of -gamma*v (solver.py:3, from a test)" in result.stdout
    assert "reference: Taylor, Classical Mechanics, sec. 5.4" in result.stdout
    [line] = ledger_lines(tmp_path / "ledger.jsonl")
    assert line["verdict"] == "confirmed" and line["checks"][0]["status"] == "FAIL"


def test_rule_6_every_check_passing_rejects(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(EXACT, "error below 1e-12")', check('Result(PASS, "ok")'))
    evaluation = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    assert (evaluation.verdict.verdict, evaluation.verdict.exit_code) == ("rejected", 0)


def test_rule_3_a_failing_control_is_not_decidable(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(FAIL, "wrong reference")', check('Result(FAIL, "x")'))
    evaluation = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    assert evaluation.verdict.verdict == "not decidable"
    assert "the control 'control case' is FAIL, not PASS" in evaluation.verdict.reason
    assert len(evaluation.record["checks"]) == 1, "the checks still run and are reported"


def test_rule_5_an_error_in_a_check_is_not_decidable_and_keeps_the_stderr_tail(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "ok")', check("solver.decay(1.0, None)", "crashes"),
                        header="import sys\nsys.stderr.write('adapter says hello\\n')\n")
    evaluation = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    assert evaluation.verdict.verdict == "not decidable"
    assert "'crashes' (ERROR)" in evaluation.verdict.reason
    assert evaluation.record["checks"][0]["message"].startswith("TypeError:")
    assert "adapter says hello" in evaluation.record["stderr_tail"]


def test_rule_2_a_timeout_is_not_decidable_and_kills_the_grandchild(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    header = textwrap.dedent(f"""
        import subprocess, sys, time
        _child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pidfile)!r}, "w").write(str(_child.pid))
    """)
    claim = write_claim(tmp_path, "time.sleep(300)", check('Result(PASS, "")'), header=header)
    result = run_process("confirm", str(claim), "--trusted", "--timeout", "2", "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout.startswith("not decidable (impact: used): timed out after 2 s")
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]
    [line] = ledger_lines(tmp_path / "l.jsonl")
    assert line["control"] is None and line["checks"] == [] and line["timeout_s"] == 2.0
    assert isinstance(line["stderr_tail"], str)  # a string after every error or timeout, never null (issue 10)


def test_rule_1_a_reference_that_calls_the_code_under_test_is_refused_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    header = textwrap.dedent(f"""
        open({str(marker)!r}, "w").write("the claim file ran")
        def reference_decay(y, dt):
            return solver.decay(y, dt)
    """)
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(FAIL, "")'), header=header)
    evaluation = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    assert evaluation.verdict.verdict == "not decidable"
    assert evaluation.verdict.reason.startswith("the reference is not independent: ")
    assert not marker.exists()


def test_allow_dependent_reference_runs_and_records_the_reason_and_the_notes(tmp_path: Path,
        cli: Callable[..., Ran]) -> None:
    header = "def reference_decay(y, dt):\n    return solver.decay(y, dt)\n"
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(FAIL, "")'), header=header)
    result = cli("confirm", str(claim), "--trusted", "--ledger", "l.jsonl",
                     "--allow-dependent-reference", "only the time grid is shared", cwd=tmp_path)
    assert result.returncode == 1
    [line] = ledger_lines(tmp_path / "l.jsonl")
    assert line["allow_dependent_reference"]["reason"] == "only the time grid is shared"
    assert line["allow_dependent_reference"]["notes"], "the overridden notes are kept"


# --- load errors ----------------------------------------------------------------------
def test_a_load_error_exits_2_with_one_line_naming_the_file_and_is_still_recorded(tmp_path: Path,
        cli: Callable[..., Ran]) -> None:
    incomplete = {k: v for k, v in CLAIM_DICT.items() if k != "reference"}
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(FAIL, "")'), claim=incomplete)
    result = cli("confirm", str(claim), "--trusted", "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    first = result.stdout.splitlines()[0]
    assert first.startswith("not decidable") and str(claim) in first and "reference" in first
    [line] = ledger_lines(tmp_path / "l.jsonl")
    assert line["verdict"] == "not decidable" and line["text"] == CLAIM_DICT["text"]
    assert line["control"] is None


def test_a_claim_file_that_cannot_be_read_is_recorded_without_claim_fields(tmp_path: Path,
        cli: Callable[..., Ran]) -> None:
    result = cli("confirm", "missing_claim.py", "--trusted", "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    [line] = ledger_lines(tmp_path / "l.jsonl")
    assert line["verdict"] == "not decidable" and "text" not in line and line["claim_sha256"] is None


def test_a_control_that_is_not_a_check_is_a_load_error(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(FAIL, "")'))
    claim.write_text(claim.read_text().replace('return Check("demo", "control case"', 'return ("demo", "control case"'))
    evaluation = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    assert evaluation.verdict.reason == f"{claim}: control() returned a tuple, not a physverify Check"


@pytest.mark.parametrize("how", ["os._exit(3)", "ctypes.string_at(0)"])
def test_a_child_that_dies_is_not_decidable_with_the_cause_and_the_stderr_tail(tmp_path: Path, how: str,
        cli: Callable[..., Ran]) -> None:
    header = "import ctypes, os, sys\nsys.stderr.write('solver starting\\n')\n"
    claim = write_claim(tmp_path, 'Result(PASS, "")', check(how), header=header)
    result = cli("confirm", str(claim), "--trusted", "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    [line] = ledger_lines(tmp_path / "l.jsonl")
    expected = "exited with code 3" if "exit" in how else "SIGSEGV"
    assert expected in line["reason"]
    assert "solver starting" in line["stderr_tail"]


# --- safety, arguments, output ------------------------------------------------------
def test_without_trusted_it_refuses_runs_nothing_and_writes_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(FAIL, "")'),
                        header=f"open({str(marker)!r}, 'w').write('ran')\n")
    result = run_process("confirm", str(claim), "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("physverify: refusing to run") and "sandbox/README.md" in result.stderr
    assert not marker.exists() and not (tmp_path / "l.jsonl").exists()


def test_inside_the_sandbox_phsyverify_repo_stands_for_trusted(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'))
    result = run_process("confirm", str(claim), "--ledger", "l.jsonl", cwd=tmp_path,
                     env={"PHYSVERIFY_REPO": str(tmp_path), "PHYSVERIFY_REPO_COMMIT": "abc123-dirty"})
    assert result.returncode == 0, result.stderr
    assert ledger_lines(tmp_path / "l.jsonl")[0]["repo_commit"] == "abc123-dirty"


@pytest.mark.parametrize("value", ["soon", "0", "-5", "inf", "nan"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(tmp_path: Path, value: str) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'))
    result = run_process("confirm", str(claim), "--trusted", f"--timeout={value}", "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("physverify: --timeout must be")
    assert not (tmp_path / "l.jsonl").exists()
    with pytest.raises(UsageError):
        settings.parse_timeout(value)


def test_require_trust_raises_outside_the_sandbox() -> None:
    with pytest.raises(RefusedError):
        settings.require_trust(False)


def test_json_dash_prints_the_ledger_object_and_json_file_writes_it(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'))
    result = cli("confirm", str(claim), "--trusted", "--json", "-", "--ledger", "l.jsonl", cwd=tmp_path)
    printed = json.loads(result.stdout)
    assert printed == ledger_lines(tmp_path / "l.jsonl")[0]
    fields = ["ledger_version", "date", "physverify", "claim_file", "claim_sha256", "text", "source", "file", "line",
              "reference", "impact", "file_sha256", "repo_commit", "verdict", "reason", "control", "checks",
              "allow_dependent_reference", "timeout_s", "stderr_tail"]
    assert set(fields) <= set(printed)
    assert printed["file_sha256"] is not None and printed["repo_commit"] is None  # found, but not in git
    to_file = cli("confirm", str(claim), "--trusted", "--json", "out.json", "--ledger", "l.jsonl", cwd=tmp_path)
    assert json.loads((tmp_path / "out.json").read_text())["verdict"] == "rejected"
    assert to_file.stdout.splitlines()[0].startswith("rejected (impact: used): ")  # spec section 7: only --json - replaces the text
    assert len(ledger_lines(tmp_path / "l.jsonl")) == 2, "a second run appends a second line"


def test_an_edit_to_the_solver_between_two_runs_is_seen(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")',
                        check('Result(PASS if solver.decay(1.0, 0.5) == 0.5 else FAIL, "")'))
    first = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    (tmp_path / "solver.py").write_text(SOLVER.replace("y - dt * y", "y + dt * y"))  # same size, same second
    second = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", trusted=True)
    assert (first.verdict.verdict, second.verdict.verdict) == ("rejected", "confirmed")


def test_repo_commit_carries_the_dirty_flag_of_a_real_git_checkout(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    claim = write_claim(tmp_path / "claims", 'Result(PASS, "")', check('Result(PASS, "")'),
                        claim={**CLAIM_DICT, "file": "claims/solver.py"})
    repo.index.add([str(claim), str(tmp_path / "claims" / "solver.py")])
    sha = repo.index.commit("claim").hexsha
    clean = evaluate.evaluate(claim)
    assert clean.record["repo_commit"] == sha and clean.record["claim_key"] == "claims/claim_case.py"
    (tmp_path / "claims" / "solver.py").write_text(SOLVER + "# edited\n")
    assert evaluate.evaluate(claim).record["repo_commit"] == sha + "-dirty"


def test_claim_repo_points_an_adapter_folder_at_the_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "physics.py").write_text("G = 1\n")
    claim = write_claim(tmp_path / "adapters", 'Result(PASS, "")', check('Result(PASS, "")'),
                        claim={**CLAIM_DICT, "file": "physics.py", "repo": "../project"})
    record = evaluate.evaluate(claim).record
    assert record["file_sha256"] is not None and record["claim_key"].endswith("claim_case.py")


# --- confirm init ---------------------------------------------------------------------
def test_init_writes_a_template_that_fails_the_load_until_filled_and_never_overwrites(tmp_path: Path,
        cli: Callable[..., Ran]) -> None:
    made = cli("confirm", "init", "claim_new.py", "--text", "k3 at t + h", "--file", "rk.py", "--line", "22",
                   cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "claim_new.py").read_text()
    assert "k3 at t + h" in text and "FILL IN" in text
    assert "MUST COME FROM THE PHYSICS" in text and "Never take it from the code under test" in text
    again = cli("confirm", "init", "claim_new.py", "--text", "x", "--file", "rk.py", "--line", "1", cwd=tmp_path)
    assert again.returncode == 2 and (tmp_path / "claim_new.py").read_text() == text
    result = cli("confirm", "claim_new.py", "--trusted", "--ledger", "l.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and "FILL IN" in result.stdout


def test_a_ledger_in_a_missing_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'),
                        header=f"open({str(marker)!r}, 'w').write('ran')\n")
    result = run_process("confirm", str(claim), "--trusted", "--ledger", "nodir/l.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "physverify: nodir/l.jsonl: the ledger's folder does not exist\n"
    assert not marker.exists()


def test_init_options_without_init_are_a_usage_error(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'))
    for flag in ("--text", "--defect"):
        result = run_process("confirm", str(claim), "--trusted", flag, "x", "--ledger", "l.jsonl", cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == ("physverify: --text, --file, --line, --defect and --fix belong to "
                                 "'confirm init CLAIM.py'; a claim file keeps them in CLAIM\n")
    assert not (tmp_path / "l.jsonl").exists()


def test_a_child_that_printed_nothing_before_failing_has_an_empty_stderr_tail(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check("1 / 0", "divides"))
    record = evaluate.evaluate(claim, timeout_s=60).record
    assert record["verdict"] == "not decidable" and record["stderr_tail"] == ""


def test_a_json_file_in_a_missing_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'))
    result = run_process("confirm", str(claim), "--trusted", "--json", "no/out.json", "--ledger", "l.jsonl",
                         cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, "physverify: no/out.json: the --json file's folder does not exist\n")
    assert not (tmp_path / "l.jsonl").exists()


# --- lines as the child finishes them (issue 38) --------------------------------------------
def _slow_claim(tmp_path: Path) -> Path:
    return write_claim(tmp_path, 'Result(PASS, "quick")', check('(time.sleep(3), Result(PASS, "slept"))[1]', "slow"),
                       header="import time")


def _confirm_command(claim: Path, isolation: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "physverify", "confirm", str(claim), "--trusted", "--isolation", isolation,
            "--ledger", "l.jsonl"]


@pytest.mark.parametrize("isolation", ["fresh", "fork"])
def test_at_a_terminal_the_control_line_reaches_stdout_while_a_slow_check_still_runs(tmp_path: Path,
                                                                                      isolation: str) -> None:
    """Arrival times of the lines a person sees at a terminal (a real pty): the control line comes before the 3 s
    check ends, then the spec's transcript, verdict first. An ordering and a gap, not a speed: the gap is the
    check's own sleep."""
    import os
    import pty
    import subprocess
    import time

    from support.fixtures import clean_env

    master, terminal = pty.openpty()
    process = subprocess.Popen(_confirm_command(_slow_claim(tmp_path), isolation), cwd=tmp_path, stdout=terminal,
                               stderr=subprocess.DEVNULL, env=clean_env())
    os.close(terminal)
    arrived: list[tuple[float, str]] = []
    pending = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            arrived.append((time.monotonic(), line.decode().rstrip("\r")))
    ended = time.monotonic() if process.wait() is not None else 0.0
    os.close(master)
    control = next(at for at, line in arrived if line.startswith("  control PASS control case: quick"))
    verdict = next(at for at, line in arrived if line.startswith("rejected (impact: used): "))
    assert [line.split()[0] for _, line in arrived][:5] == ["control", "check", "rejected", "control", "check"], arrived
    assert ended - control >= 2.0 and control < verdict, (control, verdict, ended)


def test_piped_stdout_holds_the_specs_transcript_and_stderr_shows_each_line_as_it_finishes(tmp_path: Path) -> None:
    """A CI log or a script: stdout's shape is the spec's (verdict first); the live lines go to stderr, early."""
    import subprocess
    import time

    from support.fixtures import clean_env

    process = subprocess.Popen(_confirm_command(_slow_claim(tmp_path), "fresh"), cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=clean_env())
    assert process.stderr is not None and process.stdout is not None
    control = next(time.monotonic() for line in process.stderr if line.startswith("  control PASS control case: quick"))
    out = process.stdout.read()
    ended = time.monotonic() if process.wait() is not None else 0.0
    assert out.splitlines()[0].startswith("rejected (impact: used): "), out
    assert [line.split()[0] for line in out.splitlines()[1:3]] == ["control", "check"], out
    assert ended - control >= 2.0, (control, ended)


def test_with_json_to_stdout_nothing_but_the_json_is_printed(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    claim = write_claim(tmp_path, 'Result(PASS, "")', check('Result(PASS, "")'))
    result = cli("confirm", str(claim), "--trusted", "--json", "-", "--ledger", "l.jsonl", cwd=tmp_path)
    assert json.loads(result.stdout)["verdict"] == "rejected"
