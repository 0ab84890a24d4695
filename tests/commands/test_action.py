"""The GitHub Action: action.yml and the workflows against GitHub's schemas, and its run step run locally."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from support.fixtures import DECAY_CLAIM as CLAIM
from support.fixtures import DECAY_DEFECT as DEFECT
from support.fixtures import DECAY_SOLVER as SOLVER
from support.fixtures import init_repo
from support.linters import actionlint

from physverify.commands import action
from physverify.gate import replay
from physverify.report import json as report_json
from physverify.verdict import EXIT_FINDING, EXIT_OK

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))



def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_action_yml_is_valid_against_githubs_action_schema() -> None:
    done = _check_jsonschema("vendor.github-actions", ACTION)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflows_are_valid_against_githubs_workflow_schema() -> None:
    assert {p.name for p in WORKFLOWS} >= {"claims.yml", "ci.yml"}
    done = _check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


ACTIONLINT = actionlint()
needs_actionlint = pytest.mark.skipif(ACTIONLINT is None, reason="actionlint is not installed (.ci/install installs "
                                      "its WebAssembly build with npm into .ci/tools; it runs under Node)")


@needs_actionlint
def test_actionlint_finds_nothing_in_the_workflows() -> None:
    done = subprocess.run([*(ACTIONLINT or []), *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_this_repository_replays_its_claims_with_its_own_action() -> None:
    steps = yaml.safe_load((ROOT / ".github" / "workflows" / "claims.yml").read_text())["jobs"]["replay"]["steps"]
    assert any(step.get("uses") == "./" for step in steps)
    assert any(str(step.get("uses", "")).startswith("github/codeql-action/upload-sarif") for step in steps)


def test_ci_runs_the_test_suite_the_way_the_readme_says() -> None:
    steps = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())["jobs"]["tests"]["steps"]
    readme = (ROOT / "README.md").read_text()
    command = readme.split("The tests", 1)[1].split("```", 2)[1].strip()  # the block under "The tests"
    assert command in [str(step.get("run", "")).strip() for step in steps]


# --- the baseline a workflow event gives ------------------------------------------------
def test_a_pull_request_compares_with_its_base_commit() -> None:
    event = {"pull_request": {"base": {"sha": "a" * 40}}, "before": "b" * 40}
    assert action.default_baseline("pull_request", event) == "a" * 40


def test_a_push_compares_with_the_commit_before_it() -> None:
    assert action.default_baseline("push", {"before": "b" * 40}) == "b" * 40


def test_a_push_that_creates_a_branch_has_no_baseline() -> None:
    assert action.default_baseline("push", {"before": action.NULL_SHA}) is None


def test_other_events_have_no_baseline() -> None:
    assert action.default_baseline("workflow_dispatch", {}) is None


def test_an_unknown_fail_on_transition_is_refused() -> None:
    with pytest.raises(action.UsageError, match="fail-on: unknown transition 'fixd'"):
        action.read_inputs({"INPUT_FAIL_ON": "regressed, fixd"})


# --- the run step, run locally ----------------------------------------------------------
def _action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text())


def _run_step() -> dict[str, Any]:
    return next(step for step in _action()["runs"]["steps"] if step.get("id") == "replay")


def _replay_outputs() -> list[str]:
    """The action's outputs the replay step gives (scan-exit-code is the scan step's)."""
    return [name for name, spec in _action()["outputs"].items() if "steps.replay." in str(spec["value"])]


def _step_env(overrides: dict[str, str]) -> dict[str, str]:
    """The run step's env block with each ${{ inputs.x }} replaced by the input's value or default."""
    inputs = {name: str(spec.get("default", "")) for name, spec in _action()["inputs"].items()}
    inputs.update(overrides)
    pattern = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
    return {k: pattern.sub(lambda m: inputs[m.group(1)], str(v)) for k, v in _run_step()["env"].items()}


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    return make_workspace(tmp_path, monkeypatch)


def make_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A checkout whose committed ledger says the claim is rejected, with the defect then put back."""
    root = tmp_path / "workspace"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(SOLVER)
    (root / "claims" / "claim_decay.py").write_text(CLAIM)
    repo = init_repo(root)
    monkeypatch.chdir(root)
    replay.replay(["claims"], trusted=True, jobs=1)
    repo.index.add(["decay.py", "claims/claim_decay.py", "claims/confirm_ledger.jsonl"])
    recorded = repo.index.commit("the claim is rejected").hexsha
    (root / "decay.py").write_text(DEFECT)
    repo.index.add(["decay.py"])
    repo.index.commit("a change that brings the defect back")
    return root, recorded


def parse_github_output(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT read as the runner reads it: ``name=value`` lines and ``name<<DELIMITER`` blocks.

    The runner takes the heredoc form when ``<<`` comes before any ``=``, and ends the value
    at the first line equal to the delimiter; a later output of the same name wins.
    """
    outputs: dict[str, str] = {}
    lines = iter(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"))
    for line in lines:
        heredoc, equals = line.find("<<"), line.find("=")
        if heredoc >= 0 and (equals < 0 or heredoc < equals):
            name, delimiter = line[:heredoc], line[heredoc + 2:]
            value = []
            for body in lines:
                if body == delimiter:
                    break
                value.append(body)
            else:
                raise AssertionError(f"output {name}: no line ends its value ({delimiter!r})")
            outputs[name] = "\n".join(value)
        elif line:
            name, _, value = line.partition("=")
            outputs[name] = value
    return outputs


def _python_shim(tmp_path: Path) -> Path:
    """A folder whose `python` is the interpreter running the tests (issue 13, item 28).

    The step runs `python -I -m physverify.commands.action`, which on a runner is setup-python's. Here the
    `python` first on PATH may be any other interpreter, with another physverify or none; a
    script that execs sys.executable keeps its virtual environment, which a symlink would not.
    """
    folder = tmp_path / "python-shim"
    folder.mkdir(exist_ok=True)
    shim = folder / "python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    return folder


def _run_locally(root: Path, tmp_path: Path, event: dict[str, Any], inputs: dict[str, str]) -> dict[str, Any]:
    """Run the step's `run` line in bash, in the workspace as the runner does, with the runner's files pointing at temp files.

    $RUNNER_TEMP is a folder of tmp_path, outside the workspace, as on a runner; the runner's
    files of one run are new files, so a test may run the step several times. The working
    directory is the workspace because a step's is: what the repository holds there must not
    change which physverify runs (tests/security/test_action_entry.py).
    """
    files = {name: tmp_path / f"{name.lower()}.txt" for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT")}
    for path in files.values():
        path.unlink(missing_ok=True)
    (tmp_path / "event.json").write_text(json.dumps(event))
    (tmp_path / "runner-temp").mkdir(exist_ok=True)
    env = {**os.environ, **_step_env(inputs), **{k: str(v) for k, v in files.items()}}
    env.update(GITHUB_WORKSPACE=str(root), GITHUB_EVENT_PATH=str(tmp_path / "event.json"), GITHUB_EVENT_NAME="push",
               RUNNER_TEMP=str(tmp_path / "runner-temp"))
    env.pop("PHYSVERIFY_REPO", None)
    env["PATH"] = f"{_python_shim(tmp_path)}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", _run_step()["run"]], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    outputs = parse_github_output(files["GITHUB_OUTPUT"].read_text()) if files["GITHUB_OUTPUT"].exists() else {}
    summary = files["GITHUB_STEP_SUMMARY"].read_text() if files["GITHUB_STEP_SUMMARY"].exists() else ""
    return {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "outputs": outputs,
            "summary": summary}


def test_the_run_step_fails_on_a_regressed_claim_and_says_where(workspace: tuple[Path, str], tmp_path: Path) -> None:
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sarif": "physverify.sarif", "jobs": "1"})
    assert ran["code"] == EXIT_FINDING, ran["stderr"]
    assert re.search(r"^::error file=decay\.py,line=6,title=physverify%3A claim regressed::", ran["stdout"], re.M)
    assert "| confirmed | regressed | `claims/claim_decay.py` | `decay.py:6` | rejected |" in ran["summary"]
    assert ran["summary"].startswith("## physverify replay: gate failed")
    declared = set(_replay_outputs())
    assert declared <= set(ran["outputs"]), declared - set(ran["outputs"])
    assert ran["outputs"]["gate"] == "fail" and ran["outputs"]["regressed"] == "1"
    assert ran["outputs"]["confirmed"] == "1" and ran["outputs"]["rejected"] == "0"
    assert ran["outputs"]["ledger"] == "claims/confirm_ledger.jsonl"
    sarif = json.loads((root / "physverify.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"][0]["ruleId"] == "regressed"


def test_the_run_step_runs_the_interpreter_of_the_tests_not_the_first_python_on_path(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13, item 28: the suite assumed that `python` on PATH is the venv's interpreter."""
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "python").write_text("#!/bin/sh\necho 'not the interpreter under test' >&2\nexit 99\n")
    (decoy / "python").chmod(0o755)
    monkeypatch.setenv("PATH", f"{decoy}{os.pathsep}{os.environ.get('PATH', '')}")
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    assert ran["code"] == EXIT_FINDING and ran["outputs"]["gate"] == "fail", ran["stderr"]


def test_fail_on_decides_which_transitions_fail_the_step(workspace: tuple[Path, str], tmp_path: Path) -> None:
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"fail-on": "undecidable", "jobs": "1"})
    assert ran["code"] == EXIT_OK, ran["stdout"] + ran["stderr"]
    assert ran["outputs"]["gate"] == "pass" and ran["outputs"]["regressed"] == "1"
    assert not (root / "physverify.sarif").exists()


@pytest.mark.parametrize("fail_on", ["", "regressed,undecidable"])
def test_a_push_that_forges_the_ledger_fails_the_step_with_or_without_a_fail_on_input(
    workspace: tuple[Path, str], tmp_path: Path, fail_on: str
) -> None:
    """The fail-on input judges the result again: the forged line's failure must survive it (it did not)."""
    root, _ = workspace
    repo = init_repo(root)
    (root / "decay.py").write_text(SOLVER)  # the code as the base had it: rejected
    repo.index.add(["decay.py"])
    base = repo.index.commit("the defect undone").hexsha
    ledger = root / "claims" / "confirm_ledger.jsonl"
    line = json.loads(ledger.read_text().splitlines()[-1])
    with ledger.open("a") as out:
        out.write(json.dumps(line | {"verdict": "confirmed", "reason": "forged"}) + "\n")
    repo.index.add(["claims/confirm_ledger.jsonl"])
    repo.index.commit("only the ledger changes")
    inputs = {"jobs": "1", **({"fail-on": fail_on} if fail_on else {})}
    ran = _run_locally(root, tmp_path, {"before": base}, inputs)
    assert ran["code"] == EXIT_FINDING and ran["outputs"]["gate"] == "fail", ran["stdout"] + ran["stderr"]
    assert "::error" in ran["stdout"] and "the ledger this change commits says confirmed" in ran["stdout"]


def test_a_baseline_the_checkout_lacks_falls_back_to_the_ledger_with_a_warning(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    root, _ = workspace
    ran = _run_locally(root, tmp_path, {"before": "c" * 40}, {"jobs": "1"})
    assert f"::warning::baseline {'c' * 40}: not in the checkout" in ran["stdout"]
    assert ran["outputs"]["regressed"] == "1"  # the ledger in the checkout still says rejected


def test_a_bad_input_fails_the_step_with_one_error_line(workspace: tuple[Path, str], tmp_path: Path) -> None:
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "maybe"})
    assert ran["code"] == 2
    assert ran["stdout"].strip() == "::error::physverify: sandbox: must be true or false, not 'maybe'"
    assert ran["outputs"]["gate"] == "error"


def test_a_result_read_back_from_json_renders_as_the_original(workspace: tuple[Path, str]) -> None:
    """The sandbox mode reads the replay's JSON report back; every format must come out the same."""
    from physverify import report

    root, recorded = workspace
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=recorded)
    again = report_json.from_dict(json.loads(report.render("json", result)), ledger=result.ledger)
    for fmt in ("github", "markdown", "sarif", "text", "json"):
        assert report.render(fmt, again) == report.render(fmt, result), fmt
    assert action.outputs(again) == action.outputs(result)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the sandbox backend bubblewrap is not installed")
def test_the_run_step_in_the_sandbox_reports_what_the_direct_run_reports(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["code"] == EXIT_FINDING, ran["stdout"] + ran["stderr"]
    assert re.search(r"^::error file=decay\.py,line=6,title=physverify%3A claim regressed::", ran["stdout"], re.M)
    assert "| confirmed | regressed | `claims/claim_decay.py` | `decay.py:6` | rejected |" in ran["summary"]
    assert ran["outputs"]["ledger"] == "claims/confirm_ledger.jsonl" and ran["outputs"]["regressed"] == "1"
    lines = (root / "claims" / "confirm_ledger.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["verdict"] == "confirmed"  # written inside, landed on the host


TOKEN_HEADER = "http.https://github.com/.extraheader"  # where actions/checkout keeps the job's token


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the sandbox backend bubblewrap is not installed")
def test_the_sandboxed_step_warns_when_the_checkout_keeps_the_jobs_token_in_git_config(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """The sandbox shows the repository, .git included, to the code under test: a token actions/checkout left in
    .git/config (persist-credentials, its default) is readable there, so the step says so, naming the key only."""
    root, recorded = workspace
    git.Repo(root).git.config(TOKEN_HEADER, "AUTHORIZATION: basic c2VjcmV0LXRva2Vu")
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["code"] == EXIT_FINDING, ran["stdout"] + ran["stderr"]
    warnings = [line for line in ran["stdout"].splitlines() if line.startswith("::warning::sandbox: .git/config")]
    assert len(warnings) == 1 and TOKEN_HEADER in warnings[0] and "persist-credentials: false" in warnings[0]
    assert "c2VjcmV0" not in ran["stdout"] + ran["stderr"] + ran["summary"]


def test_the_direct_step_does_not_warn_of_a_token_its_own_process_holds_anyway(workspace: tuple[Path, str],
                                                                                  tmp_path: Path) -> None:
    root, recorded = workspace
    git.Repo(root).git.config(TOKEN_HEADER, "AUTHORIZATION: basic c2VjcmV0LXRva2Vu")
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    assert ran["code"] == EXIT_FINDING and ".git/config" not in ran["stdout"], ran["stdout"]


def test_the_workflow_in_the_docs_is_valid_and_uses_every_documented_input(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "github-action.md").read_text()
    workflow = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "claims.yml").write_text(workflow)
    done = _check_jsonschema("vendor.github-workflows", tmp_path / "claims.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    for name in _action()["inputs"]:
        assert f"| `{name}` |" in doc, name
    for name in _action()["outputs"]:
        assert f"`{name}`" in doc, name


def test_the_run_step_writes_the_html_report_and_the_summary_says_where(workspace: tuple[Path, str],
                                                                        tmp_path: Path) -> None:
    """Issue 12: the report input (default true) writes the page the upload step sends; issue 21, item 1: the
    page is in a folder the step made under $RUNNER_TEMP, never in the workspace."""
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    report = Path(ran["outputs"]["report"])
    assert report.name == "physverify-report.html" and report.parent.parent == tmp_path / "runner-temp"
    page = report.read_text(encoding="utf-8")
    assert "claims/claim_decay.py" in page and "regressed: rejected -&gt; confirmed" in page
    assert not (root / "physverify-report.html").exists()
    assert "`physverify-report.html`, in this job's artifact `physverify-report-" in ran["summary"]
    upload = next(step for step in _action()["runs"]["steps"] if step.get("name") == "Upload the report")
    assert upload["with"]["path"] == "${{ steps.replay.outputs.report }}"
    off = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1", "report": "false"})
    assert off["outputs"]["report"] == ""
    assert "physverify-report.html" not in off["summary"]


# --- shards in a CI matrix (issue 19, item 5) ----------------------------------------------
SHARDS = 3
VOLATILE = ("date", "repo_commit", "stderr_tail", "seconds")  # what differs between two runs of the same claim


def _many_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A checkout of seven claims recorded as rejected, then the defect back (all regress) and one claim deleted."""
    root = tmp_path / "checkout"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(SOLVER)
    names = [f"claims/claim_decay_{i}.py" for i in range(7)]
    for name in names:
        (root / name).write_text(CLAIM)
    repo = init_repo(root)
    monkeypatch.chdir(root)
    replay.replay(["claims"], trusted=True, jobs=1)
    repo.index.add(["decay.py", *names, "claims/confirm_ledger.jsonl"])
    recorded = repo.index.commit("the claims are rejected").hexsha
    (root / "decay.py").write_text(DEFECT)
    repo.index.remove([names[-1]], working_tree=True)  # a removed claim belongs to one shard too
    repo.index.add(["decay.py"])
    repo.index.commit("the defect is back and one claim is gone")
    monkeypatch.chdir(tmp_path)
    return root, recorded


def _checkout(root: Path, where: Path) -> Path:
    """A fresh copy of the checkout, as each job of a matrix has its own."""
    shutil.copytree(root, where, symlinks=True)
    return where


def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return sorted((json.loads(line) for line in lines), key=lambda r: json.dumps({k: r[k] for k in ("claim_key", "date")}))


def _steady(value: Any) -> Any:
    """``value`` without the fields that differ between two runs of the same claim (dates, durations)."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    return [_steady(v) for v in value] if isinstance(value, list) else value


def _comparable(records: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(_steady(r), sort_keys=True) for r in records)


def _lines(text: str, start: str) -> list[str]:
    """The lines starting with ``start``, sorted; the log's groups are not annotations and are left out."""
    return sorted(line for line in text.splitlines() if line.startswith(start)
                  and not line.startswith(("::group::", "::endgroup::")))


def _sarif_results(job: Path) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in json.loads((job / "out.sarif").read_text())["runs"][0]["results"])


def test_three_shards_and_the_merge_job_give_the_verdicts_and_ledger_of_one_unsharded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, recorded = _many_claims(tmp_path, monkeypatch)
    event = {"before": recorded}
    whole = _run_locally(_checkout(root, tmp_path / "job-whole"), tmp_path, event, {"jobs": "1", "sarif": "out.sarif"})
    assert whole["code"] == EXIT_FINDING and whole["outputs"]["regressed"] == "6", whole["stdout"] + whole["stderr"]
    assert whole["outputs"]["removed"] == "1"
    downloads = tmp_path / "downloads"
    sizes = []
    for k in range(1, SHARDS + 1):
        ran = _run_locally(_checkout(root, tmp_path / f"job-{k}"), tmp_path, event, {"jobs": "1", "shard": f"{k}/{SHARDS}"})
        assert ran["code"] in (EXIT_OK, EXIT_FINDING), ran["stdout"] + ran["stderr"]
        assert ran["summary"] == "" and ran["outputs"]["report"] == "" and "::error" not in ran["stdout"]
        assert ran["outputs"]["shard-name"] == f"{k}-of-{SHARDS}"
        sizes.append(sum(int(ran["outputs"][v]) for v in ("confirmed", "rejected", "not-decidable", "removed")))
        # what actions/download-artifact makes of the shard's artifact: one folder per artifact
        shutil.copytree(ran["outputs"]["shard-folder"], downloads / f"physverify-shard-replay-1-{k}-of-{SHARDS}")
    assert sum(sizes) == 7 and all(sizes), sizes  # every claim in exactly one shard, no shard empty
    merged = _run_locally(_checkout(root, tmp_path / "job-merge"), tmp_path, event,
                          {"merge-shards": str(downloads), "sarif": "out.sarif"})
    assert merged["code"] == whole["code"], merged["stdout"] + merged["stderr"]
    same = [name for name in _replay_outputs() if name not in ("ledger", "report", "shard-folder")]
    assert {n: merged["outputs"][n] for n in same} == {n: whole["outputs"][n] for n in same}
    assert _lines(merged["stdout"], "::") == _lines(whole["stdout"], "::")
    assert len(_lines(whole["stdout"], "::")) == 7  # 6 regressed, 1 removed
    assert _lines(merged["summary"], "| ") == _lines(whole["summary"], "| ")
    assert Path(merged["outputs"]["report"]).is_file()
    assert _sarif_results(tmp_path / "job-merge") == _sarif_results(tmp_path / "job-whole")
    merged_ledger = _records(Path(merged["outputs"]["ledger"]))
    whole_ledger = _records(tmp_path / "job-whole" / whole["outputs"]["ledger"])
    assert _comparable(merged_ledger) == _comparable(whole_ledger)
    assert len(merged_ledger) == 7 + 6  # the committed lines once each, and one new line per regressed claim


def test_the_merge_job_fails_when_a_shard_result_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, recorded = _many_claims(tmp_path, monkeypatch)
    downloads = tmp_path / "downloads"
    for k in (1, 3):
        ran = _run_locally(_checkout(root, tmp_path / f"job-{k}"), tmp_path, {"before": recorded},
                           {"jobs": "1", "shard": f"{k}/{SHARDS}"})
        shutil.copytree(ran["outputs"]["shard-folder"], downloads / f"shard-{k}")
    merged = _run_locally(_checkout(root, tmp_path / "job-merge"), tmp_path, {"before": recorded},
                          {"merge-shards": str(downloads)})
    assert merged["code"] == 2 and merged["outputs"]["gate"] == "error"
    assert "no result from shard 2/3" in merged["stdout"]


@pytest.mark.parametrize("value", ["0/3", "4/3", "²/³", "1/" + "9" * 5000, "1", "a/b"])
def test_a_shard_that_is_not_k_of_n_is_one_usage_error(value: str) -> None:
    with pytest.raises(action.UsageError, match="shard: must be K/N"):
        action.read_inputs({"INPUT_SHARD": value})


def _documented_workflows() -> list[str]:
    doc = (ROOT / "docs" / "github-action.md").read_text()
    return [block.split("```", 1)[0] for block in doc.split("```yaml\n")[1:] if block.startswith("name:")]


def test_the_matrix_workflow_in_the_docs_is_valid_and_its_names_fit_the_action(tmp_path: Path) -> None:
    matrix = next(w for w in _documented_workflows() if "merge-shards" in w)
    (tmp_path / "matrix.yml").write_text(matrix)
    done = _check_jsonschema("vendor.github-workflows", tmp_path / "matrix.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = yaml.safe_load(matrix)["jobs"]
    shards = jobs["replay"]["strategy"]["matrix"]["shard"]
    step = next(s for s in jobs["replay"]["steps"] if "shard" in s.get("with", {}))
    assert step["with"]["shard"] == f"${{{{ matrix.shard }}}}/{len(shards)}" and shards == list(range(1, len(shards) + 1))
    upload = next(s for s in _action()["runs"]["steps"] if s.get("name") == "Upload the shard's result")
    download = next(s for s in jobs["merge"]["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact"))
    # the artifact name the shard job uploads, with github.job = the matrix job's id, matches the pattern
    name = upload["with"]["name"].replace("${{ github.job }}", "replay").replace("${{ github.run_attempt }}", "1")
    pattern = download["with"]["pattern"].replace("${{ github.run_attempt }}", "1")
    import fnmatch

    assert fnmatch.fnmatchcase(name.replace("${{ steps.replay.outputs.shard-name }}", "2-of-3"), pattern)
    assert jobs["merge"]["needs"] == "replay" and "cancelled()" in jobs["merge"]["if"]
    assert jobs["replay"]["strategy"]["fail-fast"] is False


@needs_actionlint
def test_actionlint_finds_nothing_in_the_documented_workflows(tmp_path: Path) -> None:
    files = []
    for i, workflow in enumerate(_documented_workflows()):
        (tmp_path / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
        files.append(tmp_path / ".github" / "workflows" / f"doc{i}.yml")
        files[-1].write_text(workflow)
    assert len(files) == 2
    done = subprocess.run([*(ACTIONLINT or []), *map(str, files)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_actionlint
def test_actionlint_as_the_tests_run_it_finds_a_broken_matrix_workflow(tmp_path: Path) -> None:
    """The two tests above can fail: a merge job that needs a job of another name is a finding."""
    matrix = next(w for w in _documented_workflows() if "merge-shards" in w)
    assert "needs: replay\n" in matrix
    broken = tmp_path / "broken.yml"
    broken.write_text(matrix.replace("needs: replay\n", "needs: replays\n"))
    done = subprocess.run([*(ACTIONLINT or []), str(broken)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'job "merge" needs job "replays" which does not exist' in done.stdout


# --- the log's groups and GitHub's cap on annotations (issue 38) ------------------------------
def _groups(stdout: str) -> dict[str, list[str]]:
    """Each ::group:: of the log with its lines; AssertionError when groups nest or one is not closed."""
    groups: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        if line.startswith("::group::"):
            assert current is None, "a group inside a group"
            current = groups.setdefault(line.removeprefix("::group::"), [])
        elif line == "::endgroup::":
            assert current is not None, "an end without a group"
            current = None
        elif current is not None:
            current.append(line)
    assert current is None, "a group never closed"
    return groups


def test_the_log_folds_the_run_and_each_claim_into_groups_before_the_annotations(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    root, recorded = workspace
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    groups = _groups(ran["stdout"])
    assert ran["code"] == EXIT_FINDING and list(groups) == [action.RUN_GROUP, "physverify replay: each claim"], ran
    assert groups[action.RUN_GROUP][-1].startswith("[1/1] claims done ("), groups
    assert groups["physverify replay: each claim"][0].startswith("confirmed      regressed    claims/claim_decay.py")
    annotation = ran["stdout"].index("::error file=decay.py")
    assert annotation > ran["stdout"].rindex("::endgroup::"), "annotations come after the groups"
    assert "annotations of each kind" not in ran["summary"]  # one annotation: nothing hidden, nothing said


def test_the_summary_names_the_annotations_githubs_cap_hides_and_changed_claims_come_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eleven confirmed defects recorded, then a twelfth claim: GitHub shows ten warnings; the new one is among them."""
    root = tmp_path / "workspace"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DEFECT)
    for n in range(11):
        (root / "claims" / f"claim_{n:02}.py").write_text(CLAIM)
    repo = init_repo(root)
    monkeypatch.chdir(root)
    replay.replay(["claims"], trusted=True)
    repo.index.add(["decay.py", "claims", "claims/confirm_ledger.jsonl"])
    recorded = repo.index.commit("eleven confirmed defects, kept").hexsha
    (root / "claims" / "claim_zz.py").write_text(CLAIM)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"report": "false"})
    warnings = [line for line in ran["stdout"].splitlines() if line.startswith("::warning ")]
    assert ran["code"] == EXIT_OK and len(warnings) == 12, ran["stdout"] + ran["stderr"]
    assert "::new: confirmed (claims/claim_zz.py)" in warnings[0], warnings[0]  # path order would put it last
    assert "GitHub shows 10 annotations of each kind per step: 2 warnings of this run are not shown" in ran["summary"]
# --- the scan step ------------------------------------------------------------------------
def _scan_step() -> dict[str, Any]:
    return next(step for step in _action()["runs"]["steps"] if step.get("id") == "scan")


def test_the_scan_step_annotates_an_rk4_stepper_with_a_stage_at_the_wrong_time_and_fails_the_job(
        tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "examples" / "real-code" / "rk4_step.py", root / "src" / "rk4_step.py")
    step = _scan_step()
    assert step["if"] == "${{ inputs.scan == 'true' }}" and "sandbox" not in json.dumps(step["env"])
    inputs = {"scan-paths": "src", "scan-sarif": "scan.sarif"}
    env = {k: re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], str(v))
           for k, v in step["env"].items()}
    output = tmp_path / "github_output.txt"
    env = {**os.environ, **env, "GITHUB_OUTPUT": str(output),
           "PATH": f"{_python_shim(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", step["run"]], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr  # the replay still runs; the last step fails the job
    assert re.search(r"^::warning file=src/rk4_step\.py,line=17,title=physverify scan%3A rk-order::rk4_step states "
                     r"order 4", done.stdout, re.M), done.stdout
    assert parse_github_output(output.read_text()) == {"scan-exit-code": "1"}
    sarif = json.loads((root / "scan.sarif").read_text())
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["rk-order"]
    last = _action()["runs"]["steps"][-1]
    assert last["if"] == "${{ !cancelled() && steps.scan.outputs.scan-exit-code == '1' }}" and "exit 1" in last["run"]
