"""`physverify run`: a plain check suite, exit codes 0/1/2, a mistyped path never passes.

The command runs in this process (the cli fixture); each spec file still runs in its own child.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

from support.fixtures import Ran

from physverify.commands.run_specs import run_specs

PASSING = """
from physverify import Check, Result, PASS, EXACT
def checks():
    return [Check("exact", "energy is conserved", lambda: Result(EXACT, "drift below 1e-12")),
            Check("mms", "Euler is first order", lambda: Result(PASS, "observed order 1.00 (expected 1)"))]
"""
FAILING = """
from physverify import Check, Result, FAIL
def checks():
    return [Check("mms", "RK4 is fourth order", lambda: Result(FAIL, "observed order 3.00 (expected 4)"))]
"""


def spec(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_passing_specs_exit_0_with_one_line_per_check(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    spec(tmp_path, "verify_ok.py", PASSING)
    result = cli("run", "verify_ok.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ["EXACT", "exact"] and lines[0].endswith("energy is conserved: drift below 1e-12")
    assert lines[1].split()[:2] == ["PASS", "mms"]
    assert lines[-1] == "1 PASS, 1 EXACT in 1 spec file"


def test_a_failing_check_exits_1(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    spec(tmp_path, "verify_ok.py", PASSING)
    spec(tmp_path, "verify_bad.py", FAILING)
    result = cli("run", "verify_ok.py", "verify_bad.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "observed order 3.00 (expected 4)" in result.stdout


def test_a_mistyped_path_or_a_spec_without_checks_exits_2(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    spec(tmp_path, "verify_ok.py", PASSING)
    spec(tmp_path, "verify_empty.py", "def checks():\n    return []\n")
    mistyped = cli("run", "verify_ok.py", "verfy_ok.py", cwd=tmp_path)
    assert mistyped.returncode == 2 and "LOAD-ERROR verfy_ok.py: no such file" in mistyped.stdout
    empty = cli("run", "verify_empty.py", cwd=tmp_path)
    assert empty.returncode == 2
    assert "LOAD-ERROR verify_empty.py: checks() returned an empty list" in empty.stdout


def test_json_output_carries_every_check_and_the_exit_code(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    spec(tmp_path, "verify_bad.py", FAILING)
    result = cli("run", "verify_bad.py", "--json", "-", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert data["exit_code"] == 1 == result.returncode
    assert data["specs"][0]["checks"][0]["status"] == "FAIL"
    cli("run", "verify_bad.py", "--json", "out.json", cwd=tmp_path)
    written = json.loads((tmp_path / "out.json").read_text())
    for run in (written, data):  # two runs: everything but the wall-clock seconds must agree
        run["specs"][0]["checks"][0].pop("seconds")
    assert written == data


def test_a_spec_stopped_at_its_timeout_is_a_load_error(tmp_path: Path) -> None:
    slow = spec(tmp_path, "verify_slow.py", "import time\ntime.sleep(60)\ndef checks():\n    return []\n")
    outcome = run_specs([slow], timeout_s=1)
    assert outcome.exit_code == 2
    assert outcome.specs[0].load_error == f"{slow}: stopped after 1 s (timeout)"
