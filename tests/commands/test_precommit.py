"""The pre-commit hook physverify-replay, run by the real pre-commit on real `git commit`s."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from support.fixtures import DECAY_CLAIM as CLAIM
from support.fixtures import DECAY_DEFECT as DEFECT
from support.fixtures import DECAY_SOLVER as SOLVER
from support.fixtures import init_repo

ROOT = Path(__file__).resolve().parents[2]


LEDGER = "claims/confirm_ledger.jsonl"


def _pre_commit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_hook_manifest_is_valid_for_pre_commit() -> None:
    done = _pre_commit("validate-manifest", ".pre-commit-hooks.yaml", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"physverify-replay", "physverify-scan"}
    hook = hooks["physverify-replay"]
    assert hook["entry"] == "physverify replay --pre-commit"
    assert hook["language"] == "python" and hook["require_serial"] is True and hook["pass_filenames"] is True
    scan = hooks["physverify-scan"]  # the changed Python files only: pre-commit passes the staged ones
    assert scan["entry"] == "physverify scan" and scan["types"] == ["python"] and scan["pass_filenames"] is True


def test_this_repository_runs_the_hook_on_its_own_claims() -> None:
    done = _pre_commit("validate-config", ".pre-commit-config.yaml", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    (repo,) = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
    (hook,) = repo["hooks"]
    assert repo["repo"] == "local" and hook["id"] == "physverify-replay"
    assert hook["entry"].startswith("physverify replay --pre-commit") and (ROOT / "claims").is_dir()


# --- end to end ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout's working tree as one commit (pre-commit clones `repo:` at `rev:`, so it sees commits only)."""
    snapshot = tmp_path_factory.mktemp("physverify-hook")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(ROOT / "src", snapshot / "src", ignore=ignore)
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, snapshot / name)
    repo = init_repo(snapshot)
    repo.git.add(A=True)
    return snapshot, repo.index.commit("snapshot of the physverify under test").hexsha


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module, so the hook's environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture()
def project(tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path) -> Iterator[git.Repo]:
    """A repository with a defective solver, a claim about it and the hook installed, nothing committed."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DEFECT)
    (root / "plot.py").write_text("# draws figures; imports nothing the claim uses\n")
    (root / "claims" / "claim_decay.py").write_text(CLAIM)
    yield _installed(root, hook_repo, pre_commit_home, {"id": "physverify-replay", "verbose": True})


def _installed(root: Path, hook_repo: tuple[Path, str], pre_commit_home: Path, hook: dict[str, Any]) -> git.Repo:
    """A new repository at ``root`` whose pre-commit config uses ``hook`` of the snapshot, installed."""
    path, sha = hook_repo
    config = {"repos": [{"repo": str(path), "rev": sha, "hooks": [hook]}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    repo = init_repo(root)
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    installed = _pre_commit("install", cwd=root, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    repo.git.update_environment(PRE_COMMIT_HOME=str(pre_commit_home))
    return repo


def _commit(repo: git.Repo, *paths: str, every: bool = False) -> tuple[bool, str]:
    """Stage ``paths`` and run a real `git commit` (its pre-commit hook included): (committed, output).

    ``every``: `git commit -am`, which also stages the ledger the hook wrote.
    """
    if paths:
        repo.git.add(*paths)
    try:
        done = repo.git.commit("-am" if every else "-m", f"change {', '.join(paths) or 'everything'}",
                               with_extended_output=True)
    except git.GitCommandError as exc:
        return False, f"{exc.stdout}\n{exc.stderr}"
    return True, f"{done[1]}\n{done[2]}"


def _verdicts(repo: git.Repo) -> list[str]:
    ledger = Path(repo.working_tree_dir or ".") / LEDGER
    return [json.loads(line)["verdict"] for line in ledger.read_text().splitlines()] if ledger.exists() else []


def _write(repo: git.Repo, name: str, text: str) -> None:
    (Path(repo.working_tree_dir or ".") / name).write_text(text)


def _start(repo: git.Repo, solver: str) -> None:
    """First commit of the solver and the claim: the new claim's line stops it once, staged it passes."""
    _write(repo, "decay.py", solver)
    committed, output = _commit(repo, ".pre-commit-config.yaml", "decay.py", "plot.py", "claims/claim_decay.py")
    assert not committed and re.search(r"(confirmed|rejected) +new +claims/claim_decay\.py +decay\.py:6", output), output
    assert "stage it with 'git add claims/confirm_ledger.jsonl'" in output
    assert LEDGER in repo.untracked_files
    committed, output = _commit(repo, LEDGER)
    assert committed, output


@pytest.mark.slow
def test_a_regression_stops_every_commit_until_it_is_pinned(project: git.Repo) -> None:
    """Issue 10: neither staging the ledger nor `git commit -am` twice lets a regression through."""
    repo = project
    _start(repo, SOLVER)
    assert _verdicts(repo) == ["rejected"]
    _write(repo, "decay.py", DEFECT)  # the defect comes back
    committed, output = _commit(repo, "decay.py")
    assert not committed and re.search(r"confirmed +regressed +claims/claim_decay\.py", output), output
    assert "gate: regressed: rejected -> confirmed" in output
    assert "check FAIL at t = 1 the amount follows exp(-rate t)" in output  # the evidence
    assert "records the verdicts, and the commit stops until the gate's failures above are dealt with" in output
    assert "and commit again" not in output  # staging the line does not clear a regression
    assert _verdicts(repo) == ["rejected", "confirmed"]
    committed, output = _commit(repo, "decay.py", LEDGER)  # staging the line the hook wrote
    assert not committed and "gate: regressed: rejected -> confirmed" in output, output
    for _ in range(2):
        committed, output = _commit(repo, every=True)
        assert not committed and "gate: regressed: rejected -> confirmed" in output, output
    assert _verdicts(repo) == ["rejected", "confirmed"]  # written once
    _write(repo, "claims/physverify.yaml", "expect:\n  claim_decay.py: confirmed  # kept on purpose\n")
    committed, output = _commit(repo, "claims/physverify.yaml", "decay.py", LEDGER)
    assert committed, output


@pytest.mark.slow
def test_a_fix_stops_the_commit_once_and_then_passes(project: git.Repo) -> None:
    repo = project
    _start(repo, DEFECT)
    assert _verdicts(repo) == ["confirmed"]
    _write(repo, "decay.py", SOLVER)  # the fix
    committed, output = _commit(repo, "decay.py")
    assert not committed and re.search(r"rejected +fixed +claims/claim_decay\.py", output), output
    assert "gate passed" not in output and "the ledger changed" in output
    committed, output = _commit(repo, "decay.py", LEDGER)
    assert committed, output
    assert _verdicts(repo) == ["confirmed", "rejected"]


@pytest.mark.slow
def test_a_commit_touching_nothing_the_claim_imports_does_not_run_it(project: git.Repo) -> None:
    repo = project
    _start(repo, DEFECT)
    _write(repo, "decay.py", SOLVER)  # would be `fixed` if the claim ran
    _write(repo, "plot.py", "# draws figures, now in colour\n")
    committed, output = _commit(repo, "plot.py")
    assert committed, output
    assert "0 claims" in output and "1 skipped as unaffected" in output, output
    assert _verdicts(repo) == ["confirmed"]


@pytest.mark.slow
def test_a_second_unrelated_commit_is_answered_from_the_memo_and_a_fix_still_stops_the_commit(
        project: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: the hook's no-op is remembered (noop.py); a change the claim reaches is never answered by it."""
    repo = project
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(tmp_path / "cache"))  # the hook inherits it through git
    _start(repo, DEFECT)
    time.sleep(2.1)  # a memo keeps only stats older than two seconds (noop.RACY_NS)
    _write(repo, "plot.py", "# draws figures, now in colour\n")
    committed, output = _commit(repo, "plot.py")
    assert committed and "1 skipped as unaffected" in output, output
    (memo,) = (tmp_path / "cache" / "physverify" / "noop").glob("*.json")  # its own folder in the one named
    kept = os.stat(memo).st_ino
    _write(repo, "plot.py", "# draws figures, in black and white again\n")
    committed, output = _commit(repo, "plot.py")
    assert committed and "1 skipped as unaffected" in output, output
    assert os.stat(memo).st_ino == kept  # answered from it: a planned no-op would have written it anew
    _write(repo, "decay.py", SOLVER)  # the fix, which the claim imports
    committed, output = _commit(repo, "decay.py")
    assert not committed and re.search(r"rejected +fixed +claims/claim_decay\.py", output), output


def test_the_configurations_in_the_docs_are_valid_for_pre_commit(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "pre-commit.md").read_text()
    blocks = [block.split("```", 1)[0] for block in doc.split("```yaml\n")[1:]]
    assert len(blocks) == 3
    for number, block in enumerate(blocks):
        (tmp_path / f"config{number}.yaml").write_text(block)
        done = _pre_commit("validate-config", f"config{number}.yaml", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_a_commit_that_brings_a_fixed_defect_back_is_stopped(project: git.Repo) -> None:
    """Issue 17: a fixed claim names its fix; the hook stops the commit that puts the defect back."""
    repo = project
    _write(repo, "claims/claim_decay.py", CLAIM.replace('    "impact": "used",\n', '    "impact": "used",\n'
                                                        '    "defect": "return y0 * math.exp(-rate * t / 2)",\n'
                                                        '    "fix": "return y0 * math.exp(-rate * t)",\n'))
    _start(repo, SOLVER)
    assert _verdicts(repo) == ["rejected"]
    _write(repo, "decay.py", DEFECT)
    committed, output = _commit(repo, "decay.py")
    assert not committed and re.search(r"confirmed +regressed +claims/claim_decay\.py", output), output
    assert "check FAIL on the code, PASS with the fix: at t = 1 the amount follows exp(-rate t)" in output
    committed, output = _commit(repo, "decay.py", LEDGER)
    assert not committed and "gate: regressed: rejected -> confirmed" in output, output


@pytest.mark.slow
def test_a_ledger_line_staged_without_its_code_cannot_carry_a_regression_past_the_gate(project: git.Repo) -> None:
    """A hook-stopped `git commit -am` leaves its line in the working ledger and the code unstaged; committing
    the ledger alone must not record `confirmed` for code that is still fixed, or the regression's own commit
    would then pass as `unchanged`."""
    repo = project
    _start(repo, SOLVER)
    _write(repo, "decay.py", DEFECT)
    committed, output = _commit(repo, every=True)
    assert not committed and "gate: regressed: rejected -> confirmed" in output, output
    assert _verdicts(repo) == ["rejected", "confirmed"]
    assert "decay.py" not in [d.a_path for d in repo.index.diff("HEAD")]  # the code is not staged
    committed, output = _commit(repo, LEDGER)  # the line, without the code it was written from
    assert not committed, output
    assert "the staged ledger says confirmed" in output and "decay.py" in output, output
    committed, output = _commit(repo, "decay.py", LEDGER)  # the code and its line together: still the regression
    assert not committed and "gate: regressed: rejected -> confirmed" in output, output
    repo.git.reset("-q")  # nothing staged in .git/index: `git commit -am` stages the line alone, in the index
    repo.git.checkout("HEAD", "--", "decay.py")  # of the commit git gives the hook (not .git/index); the change undone
    committed, output = _commit(repo, every=True)
    assert not committed and "the staged ledger says confirmed" in output, output
    assert repo.git.show(f"HEAD:{LEDGER}").count('"verdict": "confirmed"') == 0


@pytest.mark.slow
def test_the_scan_hook_stops_a_commit_that_adds_an_rk4_stepper_with_a_stage_at_the_wrong_time(
        tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path) -> None:
    root = tmp_path / "scanned"
    root.mkdir()
    repo = _installed(root, hook_repo, pre_commit_home, {"id": "physverify-scan"})
    committed, output = _commit(repo, ".pre-commit-config.yaml")  # no Python file staged: the hook is skipped
    assert committed, output
    stepper = (ROOT / "docs" / "examples" / "real-code" / "rk4_step.py").read_text()  # k3 at t + h
    _write(repo, "rk4_step.py", stepper)
    _write(repo, "plot.py", "import numpy as np\nx = np.linspace(0, 1, 11)\ndx = 1 / 10\n")
    committed, output = _commit(repo, "rk4_step.py", "plot.py")
    assert not committed, output
    assert "rk4_step.py:17: rk-order: rk4_step states order 4" in output and "plot.py:" not in output
    _write(repo, "rk4_step.py", stepper.replace("k3 = f(t + h,", "k3 = f(t + 0.5 * h,"))
    committed, output = _commit(repo, "rk4_step.py", "plot.py")
    assert committed, output
