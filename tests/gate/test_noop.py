"""noop.py: a replay that ran nothing is remembered, and the memo never answers for a tree that changed.

Issue 19: the no-op pre-commit hook on 10,000 claims. Real git repositories in tmp_path,
real replays, a cache folder of each test's own. The margin for young stats
(``noop.RACY_NS``) is shortened in most tests so they need not wait two seconds; one test
keeps the real margin, and the end-to-end test runs the command line with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, clean_env, init_repo

from physverify.gate import noop, pipeline
from physverify.gate.cache import OWN_FOLDER
from physverify.errors import PhysverifyError
from physverify.gate.replay import replay
from physverify.gate.results import ReplayResult

SETTLE_NS = 300 * 10**6  # the shortened margin: files older than this count as settled


def _settle() -> None:
    time.sleep(SETTLE_NS / 1e9 + 0.05)


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository whose ledger is committed: decay.py, other.py, claims/decay_claim.py (rejected)."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    repository = init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "other.py").write_text('"""Another module of the project."""\n')
    (root / "claims" / "decay_claim.py").write_text(DECAY_CLAIM)
    repository.git.add("decay.py", "other.py", "claims/decay_claim.py")
    repository.index.commit("a claim")
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(root)
    first = replay(["claims"], trusted=True, jobs=1, timeout_s=60)
    assert [run.verdict for run in first.claims] == ["rejected"]
    repository.git.add("claims/confirm_ledger.jsonl")
    repository.index.commit("the ledger")
    monkeypatch.setattr(noop, "RACY_NS", SETTLE_NS)
    return root


def _hook(*files: str, **options: Any) -> ReplayResult:
    """What the pre-commit hook runs, with ``files`` staged (the ledger is never written: dry run)."""
    return replay(["claims"], pre_commit=True, files=list(files), jobs=1, timeout_s=60, dry_run=True, **options)


def _memos(cache: Path) -> list[Path]:
    """The memos in the folder $PHYSVERIFY_CACHE_DIR names (physverify keeps its files in a folder of its own there)."""
    return sorted((cache / OWN_FOLDER / noop.FOLDER).glob("*.json"))


def _outcome(result: ReplayResult) -> tuple[Any, ...]:
    return ([(run.key, run.transition, run.verdict) for run in result.claims], result.skipped, result.exit_code,
            result.warnings, result.written, result.baseline_ref)


def _no_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    def planned(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the claims were planned again")

    monkeypatch.setattr(pipeline, "plan", planned)


@pytest.mark.parametrize("options", [{"files": ("README.md",)}, {"changed_since": "HEAD"}],
                         ids=["hook, an unrelated file", "changed since HEAD, nothing changed"])
def test_a_second_identical_no_op_is_answered_from_the_memo_without_planning(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]) -> None:
    _settle()
    run = (lambda: _hook(*options["files"])) if "files" in options else (
        lambda: replay(["claims"], changed_since="HEAD", jobs=1, timeout_s=60, dry_run=True, trusted=True))
    first = run()
    assert first.claims == () and first.skipped == ("claims/decay_claim.py",) and first.warnings == ()
    assert len(_memos(tmp_path / "cache")) == 1
    _no_planning(monkeypatch)
    assert _outcome(run()) == _outcome(first)


# Each edit between the run that kept the memo and the next: with the memo wrongly used, the
# claim would be skipped; it must run. Files staged in the second run: "other.py" (unchanged).
def _new_claim(root: Path) -> None:
    (root / "claims" / "new_claim.py").write_text(DECAY_CLAIM)


def _claim_imports_other_same_size_same_mtime(root: Path) -> None:
    path = root / "claims" / "decay_claim.py"
    before = os.stat(path)
    text = path.read_text()
    edited = text.replace("\nimport decay\n", "\nimport other\n")
    assert len(edited) == len(text) and edited != text
    path.write_text(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # only its ctime tells


def _module_imports_other(root: Path) -> None:
    (root / "decay.py").write_text("import other\n" + DECAY_SOLVER)


def _module_shadowed_in_the_claims_folder(root: Path) -> None:
    (root / "claims" / "decay.py").write_text("import other\n" + DECAY_SOLVER)  # the claim's folder comes first


def _ledger_line_gone_from_the_commit(root: Path) -> None:
    repository = init_repo(root)
    (root / "claims" / "confirm_ledger.jsonl").write_text("")
    repository.git.add("claims/confirm_ledger.jsonl")
    repository.index.commit("the ledger emptied")


@pytest.mark.parametrize("edit", [_new_claim, _claim_imports_other_same_size_same_mtime, _module_imports_other,
                                  _module_shadowed_in_the_claims_folder, _ledger_line_gone_from_the_commit],
                         ids=lambda edit: edit.__name__.strip("_").replace("_", " "))
def test_the_memo_never_answers_for_a_tree_that_changed(project: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, edit: Any) -> None:
    _settle()
    first = _hook("other.py")
    assert first.claims == () and len(_memos(tmp_path / "cache")) == 1
    edit(project)
    after = _hook("other.py")
    assert after.claims, "a claim the edit reaches was skipped"
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", "off")
    assert _outcome(after) == _outcome(_hook("other.py"))


def test_a_working_ledger_that_a_full_plan_cannot_read_is_not_answered_for(project: Path, tmp_path: Path) -> None:
    _settle()
    assert _hook("README.md").claims == () and len(_memos(tmp_path / "cache")) == 1
    ledger = project / "claims" / "confirm_ledger.jsonl"
    ledger.unlink()
    os.mkfifo(ledger)  # planning in full refuses to read it (it would block), so the memo must not answer
    # (the folder's listing changed too; a ledger whose mode is changed in place is seen by its own ctime)
    with pytest.raises(PhysverifyError, match="confirm_ledger.jsonl"):
        _hook("README.md")


def test_a_plan_younger_than_the_margin_is_not_kept(project: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noop, "RACY_NS", 2 * 10**9)  # the real margin: the fixture's files are a moment old
    assert noop.RACY_NS >= 10**9  # at least the whole second some file systems keep
    result = _hook("other.py")
    assert result.claims == () and _memos(tmp_path / "cache") == []


def test_a_link_in_the_claims_folder_or_a_claim_of_another_checkout_keeps_no_memo(
        project: Path, tmp_path: Path) -> None:
    (project / "claims" / "notes.py").symlink_to(project / "other.py")  # a helper, but a link: its target may change
    _settle()
    assert _hook("README.md").claims == () and _memos(tmp_path / "cache") == []
    (project / "claims" / "notes.py").unlink()
    text = DECAY_CLAIM.replace('"impact": "used",', '"impact": "used",\n    "repo": "..",')
    (project / "claims" / "decay_claim.py").write_text(text)
    init_repo(project).git.add("claims/decay_claim.py")
    init_repo(project).index.commit("the claim names its checkout")
    replay(["claims"], trusted=True, jobs=1, timeout_s=60)  # its new line
    init_repo(project).git.add("claims/confirm_ledger.jsonl")
    init_repo(project).index.commit("the ledger")
    _settle()
    assert _hook("README.md").claims == () and _memos(tmp_path / "cache") == []


def test_a_memo_for_other_material_or_cut_short_is_never_used_and_is_replaced(
        project: Path, tmp_path: Path) -> None:
    _settle()
    expected = _outcome(_hook("README.md"))
    [memo] = _memos(tmp_path / "cache")
    kept = json.loads(memo.read_bytes())
    planted = dict(kept, material=kept["material"].replace("HEAD", "HEAD~1"), keys=[], claims=[], files=[])
    for spoiled in (json.dumps(planted).encode(), memo.read_bytes()[:100]):
        memo.write_bytes(spoiled)
        result = _hook("README.md")
        assert _outcome(result)[:3] == expected[:3]  # planned in full: the same claims, skipped, exit code
        assert len(result.warnings) == 1 and "memo of a replay that is not valid" in result.warnings[0]
        assert json.loads(memo.read_bytes()) == kept  # replaced by this run's own
        assert _outcome(_hook("README.md")) == expected  # and used, without a warning


def test_with_the_cache_off_no_memo_is_kept(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", "off")
    _settle()
    assert _hook("README.md").claims == ()
    assert not (tmp_path / "cache" / OWN_FOLDER / noop.FOLDER).exists()


def test_the_hook_on_the_command_line_answers_from_the_memo_with_the_real_margin(project: Path,
                                                                                  tmp_path: Path) -> None:
    env = clean_env({"PHYSVERIFY_CACHE_DIR": str(tmp_path / "cache")})
    time.sleep(2.1)  # the real margin (noop.RACY_NS in the child is its default)
    command = [sys.executable, "-m", "physverify", "replay", "--pre-commit", "README.md", "--format", "json"]
    first = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert len(_memos(tmp_path / "cache")) == 1
    second = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert (second.returncode, second.stdout, second.stderr) == (first.returncode, first.stdout, first.stderr)
    assert json.loads(second.stdout)["skipped"] == ["claims/decay_claim.py"]


def test_a_new_file_in_the_root_leaves_the_memo_in_use(project: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _settle()
    first = _hook("notes.txt")
    assert first.claims == () and len(_memos(tmp_path / "cache")) == 1
    (project / "notes.txt").write_text("a file no claim reads, next to the modules the claim imports\n")
    _no_planning(monkeypatch)  # each lookup is kept by its own path: the root's listing is no part of the memo
    assert _outcome(_hook("notes.txt")) == _outcome(first)


def test_a_module_appearing_where_a_lookup_found_nothing_is_seen(project: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repository = init_repo(project)
    text = DECAY_CLAIM + "\n\ndef _later():\n    import helper  # not there yet: the lookup finds nothing\n"
    (project / "claims" / "decay_claim.py").write_text(text)
    repository.git.add("claims/decay_claim.py")
    repository.index.commit("the claim imports a helper, some day")
    replay(["claims"], trusted=True, jobs=1, timeout_s=60)
    repository.git.add("claims/confirm_ledger.jsonl")
    repository.index.commit("its line")
    _settle()
    assert _hook("helper.py").claims == () and len(_memos(tmp_path / "cache")) == 1
    (project / "helper.py").write_text('"""Now there is one."""\n')
    after = _hook("helper.py")
    assert [run.key for run in after.claims] == ["claims/decay_claim.py"]  # its closure reaches the new module
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", "off")
    assert _outcome(after) == _outcome(_hook("helper.py"))


def test_a_tool_physverify_table_staged_after_the_memo_runs_the_claims_with_it(project: Path, tmp_path: Path) -> None:
    _settle()
    assert _hook("notes.txt").claims == () and len(_memos(tmp_path / "cache")) == 1
    # the claim pinned to a verdict it does not give: with the memo wrongly used, the hook would pass
    (project / "pyproject.toml").write_text('[tool.physverify]\nexpect = {"claims/decay_claim.py" = "confirmed"}\n')
    after = _hook("pyproject.toml")
    assert after.exit_code == 1 and [(run.key, run.expected) for run in after.claims] == [
        ("claims/decay_claim.py", "confirmed")]
