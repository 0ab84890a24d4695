"""gate/baseline.py: the ledger a replay is judged against, and the change's own memory of verdicts.

Real git repositories in tmp_path; each function is called directly with what replay hands it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
import pytest
from support.fixtures import init_repo

from physverify.errors import UsageError
from physverify.gate import baseline, ledger, repo
from physverify.gate import rules as gate
from physverify.gate.config import load_config


def line(key: str, verdict: str) -> dict[str, Any]:
    record = ledger.new_record(key, "2026-01-01T00:00:00+00:00", "0.1.0", 60.0)
    record.update(claim_key=key, verdict=verdict, reason="a test")
    return record


def write(path: Path, *records: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    ledger.append_records(path, list(records))


def committed(root: Path, *records: dict[str, Any]) -> tuple[git.Repo, Path]:
    """A repository whose claims/confirm_ledger.jsonl holds ``records``, committed."""
    project = init_repo(root)
    path = root / "claims" / "confirm_ledger.jsonl"
    write(path, *records)
    project.index.add(["claims/confirm_ledger.jsonl"])
    project.index.commit("ledger")
    return project, path


def test_outside_git_the_baseline_is_the_working_ledger(tmp_path: Path) -> None:
    path = tmp_path / "claims" / "confirm_ledger.jsonl"
    write(path, line("a.py", "rejected"), line("a.py", "confirmed"))
    assert baseline.committed_blob(path, None) == (None, None)
    base = baseline.load_baseline(path, None)
    assert base.ref is None and base.latest["a.py"]["verdict"] == "confirmed"
    assert baseline.recorded_lines(path, base)["a.py"]["verdict"] == "confirmed"
    assert baseline.baseline_note(base, path) == []  # no repository: nothing to commit


def test_in_git_the_baseline_is_the_ledger_as_committed_not_as_edited(tmp_path: Path) -> None:
    _, path = committed(tmp_path, line("claims/a.py", "rejected"))
    write(path, line("claims/a.py", "confirmed"))
    blob = baseline.committed_blob(path, None)
    assert blob[1] == "HEAD" and blob[0] is not None
    base = baseline.load_baseline(path, None, blob=blob)
    assert base.ref == "HEAD" and base.latest["claims/a.py"]["verdict"] == "rejected"
    assert baseline.recorded_lines(path, base)["claims/a.py"]["verdict"] == "confirmed"


def test_a_ledger_never_committed_in_git_is_the_baseline_with_a_note_to_commit_it(tmp_path: Path) -> None:
    init_repo(tmp_path)
    path = tmp_path / "claims" / "confirm_ledger.jsonl"
    write(path, line("claims/a.py", "rejected"))
    base = baseline.load_baseline(path, None)
    assert base.ref is None and base.latest["claims/a.py"]["verdict"] == "rejected"
    (note,) = baseline.baseline_note(base, path)
    assert "not committed yet" in note


def test_a_baseline_ref_that_names_no_commit_is_a_usage_error(tmp_path: Path) -> None:
    _, path = committed(tmp_path, line("claims/a.py", "rejected"))
    with pytest.raises(UsageError, match="no-such-ref"):
        baseline.committed_blob(path, "no-such-ref")


def test_the_baseline_commits_own_setting_says_where_its_ledger_is(tmp_path: Path) -> None:
    project, _ = committed(tmp_path, line("claims/a.py", "rejected"))
    (tmp_path / "claims" / "physverify.yaml").write_text("ledger: kept.jsonl\n")
    project.index.add(["claims/physverify.yaml"])
    project.index.commit("the ledger moves")
    (tmp_path / "claims" / "physverify.yaml").write_text("ledger: moved.jsonl\n")  # the change moves it again
    first = load_config(tmp_path / "claims")
    target = tmp_path / "claims" / "moved.jsonl"
    at, warnings = baseline.committed_ledger(first, target, False, None)
    assert at.resolve() == (tmp_path / "claims" / "kept.jsonl").resolve() and warnings == []
    assert baseline.committed_ledger(first, target, True, None) == (target, [])  # --ledger: the caller's choice
    first_commit = project.commit("HEAD~1").hexsha
    default, _ = baseline.committed_ledger(first, target, False, first_commit)
    assert default == tmp_path / "claims" / ledger.DEFAULT_LEDGER


def test_the_changes_own_ledger_is_read_only_when_it_differs_from_the_baselines(tmp_path: Path) -> None:
    project, path = committed(tmp_path, line("claims/a.py", "rejected"))
    base_ref = project.head.commit.hexsha
    blob = baseline.committed_blob(path, base_ref)
    base = baseline.load_baseline(path, base_ref, blob=blob)
    assert baseline.change_memory(path, None, blob, base) is None  # no --baseline: no other commit
    assert baseline.change_memory(path, base_ref, blob, base) is None  # the same ledger
    write(path, line("claims/a.py", "confirmed"), line("claims/b.py", "rejected"))
    project.index.add(["claims/confirm_ledger.jsonl"])
    project.index.commit("the change edits the ledger")
    memory = baseline.change_memory(path, base_ref, blob, base)
    assert memory is not None and {k: v["verdict"] for k, v in memory.items()} == {
        "claims/a.py": "confirmed", "claims/b.py": "rejected"}
    project.index.remove(["claims/confirm_ledger.jsonl"], working_tree=True)
    project.index.commit("the change deletes the ledger")
    assert baseline.change_memory(path, base_ref, blob, base) == {}


def test_a_ledger_staged_with_other_content_than_heads_is_the_hooks_memory(tmp_path: Path) -> None:
    project, path = committed(tmp_path, line("claims/a.py", "rejected"))
    checkout = repo.Checkouts().for_folder(tmp_path / "claims")
    head = baseline.committed_blob(path, None)[0]
    assert head is not None
    key = "claims/confirm_ledger.jsonl"
    assert baseline.staged_ledger(path, checkout, frozenset(), head) == baseline.NOT_STAGED  # not in the change
    assert baseline.staged_ledger(path, checkout, {key}, head) == baseline.NOT_STAGED  # staged as HEAD has it
    write(path, line("claims/a.py", "confirmed"))
    project.index.add([key])
    staged, blob = baseline.staged_ledger(path, checkout, {key}, head)
    assert staged and blob is not None
    base = baseline.load_baseline(path, None)
    assert baseline.staged_memory(blob, base)["claims/a.py"]["verdict"] == "confirmed"
    assert baseline.staged_memory(None, base) == {}  # staged as deleted: every line dropped


def test_edited_claims_are_those_whose_verdict_the_change_moved_or_dropped() -> None:
    before = {"a": {"verdict": "rejected"}, "b": {"verdict": "confirmed"}, "c": {"verdict": "rejected"}}
    memory = {"a": {"verdict": "confirmed"}, "b": {"verdict": "confirmed"}, "new": {"verdict": "rejected"}}
    assert baseline.edited_claims(memory, before) == {"a", "c", "new"}
    assert baseline.edited_claims(None, before) == set()


def test_the_memorys_verdict_follows_a_rename_and_says_dropped_without_a_line() -> None:
    memory = {"old.py": {"verdict": "rejected"}, "odd.py": {"verdict": 3}}
    assert baseline.memory_verdict(memory, "new.py", {"new.py": "old.py"}) == "rejected"
    assert baseline.memory_verdict(memory, "other.py", {}) == gate.DROPPED
    assert baseline.memory_verdict(memory, "odd.py", {}) is None  # not a verdict
    assert baseline.memory_verdict(None, "old.py", {}) is None
