"""repo.py: root, claim key, commit and dirty state, files at a ref, git's hook variables (issue 10)."""

from __future__ import annotations

import os
from pathlib import Path

import git
import pytest
from support.fixtures import init_repo

from physverify.errors import UsageError
from physverify.gate import repo as repository


def file_at(path: Path, ref: str) -> bytes | None:
    """The bytes of ``path`` as committed at ``ref`` (None when absent), read through ``repo.blob_at``."""
    found = repository.blob_at(path, ref)
    return None if found is None else b"".join(found.chunks())


def committed_at_head(path: Path) -> bytes | None:
    """``path`` as committed at HEAD, read through ``repo.blob_at_head``."""
    found = repository.blob_at_head(path)
    return None if found is None else b"".join(found.chunks())


def test_the_repository_root_is_the_working_tree_holding_the_folder(small_repo: git.Repo, tmp_path: Path) -> None:
    root = Path(small_repo.working_tree_dir or "")
    assert repository.root_for(root / "claims") == root
    outside = tmp_path / "adapters"
    outside.mkdir()
    assert repository.root_for(outside) == outside.resolve()


def test_the_dirty_flag_follows_tracked_files_only(small_repo: git.Repo) -> None:
    root = Path(small_repo.working_tree_dir or "")
    sha = small_repo.head.commit.hexsha
    assert repository.commit(root) == sha
    (root / "scratch.py").write_text("untracked\n")
    assert repository.commit(root) == sha  # an untracked file does not make the checkout dirty
    (root / "solver.py").write_text("def rhs(t, y):\n    return y\n")
    assert repository.commit(root / "claims") == sha + "-dirty"
    small_repo.index.checkout(["solver.py"], force=True)
    assert repository.commit(root) == sha
    small_repo.index.add(["scratch.py"])  # staged but not committed: the index differs from HEAD
    assert repository.commit(root) == sha + "-dirty"


def test_no_commit_outside_git_or_before_the_first_commit(tmp_path: Path) -> None:
    assert repository.commit(tmp_path) is None
    git.Repo.init(tmp_path / "empty")
    assert repository.commit(tmp_path / "empty") is None


def test_the_sandbox_variables_override_git(small_repo: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHYSVERIFY_REPO", str(tmp_path / "mounted"))
    monkeypatch.setenv("PHYSVERIFY_REPO_COMMIT", "abc123-dirty")
    assert repository.root_for(Path(small_repo.working_tree_dir or "") / "claims") == tmp_path / "mounted"
    assert repository.commit(tmp_path) == "abc123-dirty"


def test_the_claim_key_is_relative_to_the_root_with_posix_separators(
    small_repo: git.Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(small_repo.working_tree_dir or "")
    monkeypatch.chdir(root / "claims")
    assert repository.claim_key(Path("a.py"), root) == "claims/a.py"
    assert repository.claim_key(Path("../claims/./a.py"), Path("..")) == "claims/a.py"


def test_claim_repo_names_the_root_relative_to_the_claim_file(small_repo: git.Repo, tmp_path: Path) -> None:
    adapter = tmp_path / "adapters" / "c.py"
    adapter.parent.mkdir()
    assert repository.claim_root(adapter, {"repo": "../project"}) == Path(small_repo.working_tree_dir or "")
    assert repository.claim_root(adapter, {}) == adapter.parent.resolve()


def test_the_import_roots_are_the_claim_folder_the_root_and_src_when_present(tmp_path: Path) -> None:
    (tmp_path / "claims").mkdir()
    assert repository.import_roots(tmp_path / "claims", tmp_path) == ((tmp_path / "claims").resolve(), tmp_path.resolve())
    (tmp_path / "src").mkdir()
    assert repository.import_roots(tmp_path / "claims", tmp_path)[-1] == (tmp_path / "src").resolve()


def test_a_file_at_a_ref_is_its_committed_bytes_and_none_where_it_was_absent(small_repo: git.Repo) -> None:
    root = Path(small_repo.working_tree_dir or "")
    (root / "solver.py").write_text("changed, not committed\n")
    assert file_at(root / "solver.py", "HEAD") == b"def rhs(t, y):\n    return -y\n"
    assert file_at(root / "missing.txt", "HEAD") is None
    assert committed_at_head(root / "solver.py") == b"def rhs(t, y):\n    return -y\n"
    assert repository.paths_at(root, "HEAD", ["claims/a.py", "claims/b.py"]) == {"claims/a.py"}


def test_the_files_at_a_ref_are_found_for_many_keys_in_one_listing_from_any_folder(small_repo: git.Repo) -> None:
    """The removed-claim lookup (one ``git ls-tree`` per run): nested folders, a root below the working tree,
    more folders than are named on the command line, and keys that are folders, links or lead outside."""
    root = Path(small_repo.working_tree_dir or "")
    names = [f"claims/deep/d{i}/c.py" for i in range(70)] + ["claims/sub/x.py", "top.py"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("CLAIM = {}\n")
    os.symlink("top.py", root / "link.py")
    small_repo.index.add([*names, "link.py"])
    small_repo.index.commit("nested claims")
    asked = [*names, "claims/sub", "claims/sub/gone.py", "link.py", "../outside.py", "/etc/passwd", "claims/../top.py"]
    assert repository.paths_at(root, "HEAD", asked) == {*names, "link.py", "claims/../top.py"}
    assert repository.paths_at(root, "HEAD", names[:3] + ["claims/sub/x.py"]) == {*names[:3], "claims/sub/x.py"}
    below = root / "claims"
    assert repository.paths_at(below, "HEAD", ["sub/x.py", "deep/d1/c.py", "../top.py", "gone.py", "../../x.py"]) == {
        "sub/x.py", "deep/d1/c.py", "../top.py"}
    assert repository.paths_at(root, "HEAD~1", ["claims/sub/x.py", "claims/a.py"]) == {"claims/a.py"}


@pytest.mark.parametrize("ref", ["HEAD@{999}", "no-such-branch", "HEAD~5", "--output=x"])
def test_a_ref_that_names_no_commit_is_a_one_line_usage_error(small_repo: git.Repo, ref: str) -> None:
    root = Path(small_repo.working_tree_dir or "")
    with pytest.raises(UsageError) as caught:
        file_at(root / "solver.py", ref)
    assert str(caught.value) == f"--baseline: {ref!r} is not a commit in {root}"
    with pytest.raises(UsageError, match="--changed-since"):
        repository.changed_since(root, ref)


def test_a_shallow_clone_says_why_an_older_commit_is_missing(small_repo: git.Repo, tmp_path: Path) -> None:
    root = Path(small_repo.working_tree_dir or "")
    (root / "solver.py").write_text("second\n")
    small_repo.index.add(["solver.py"])
    small_repo.index.commit("second")
    shallow = git.Repo.clone_from(f"file://{root}", tmp_path / "shallow", depth=1)
    with pytest.raises(UsageError, match=r"'HEAD~1' is not a commit in .*shallow: fetch more history"):
        file_at(Path(shallow.working_tree_dir or "") / "solver.py", "HEAD~1")


def test_outside_git_a_ref_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not in a git repository"):
        file_at(tmp_path / "l.jsonl", "HEAD")


def test_git_hook_variables_reach_neither_lookups_nor_the_child(
    small_repo: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook for a partial commit sees GIT_INDEX_FILE (and in submodules GIT_DIR): another repository's files."""
    other = init_repo(tmp_path / "other")
    (tmp_path / "other" / "x.py").write_text("x\n")
    other.index.add(["x.py"])
    other.index.commit("other")
    root = Path(small_repo.working_tree_dir or "")
    monkeypatch.setenv("GIT_DIR", str(Path(other.git_dir)))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "other"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(Path(other.git_dir) / "index"))
    assert repository.root_for(root / "claims") == root
    assert repository.commit(root) == small_repo.head.commit.hexsha  # clean: not compared with the other index
    assert file_at(root / "solver.py", "HEAD") == b"def rhs(t, y):\n    return -y\n"
    env = repository.child_env()
    assert not {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} & set(env) and env["PATH"] == os.environ["PATH"]


def test_head_is_read_from_the_refs_as_git_reads_it(small_repo: git.Repo, tmp_path: Path) -> None:
    """HEAD's commit without the object database: on a branch, packed, detached; none on an unborn branch."""
    root = Path(small_repo.working_tree_dir or "")
    first = small_repo.head.commit.hexsha
    (root / "solver.py").write_text("def rhs(t, y):\n    return 2 * y\n")
    small_repo.index.add(["solver.py"])
    second = small_repo.index.commit("second").hexsha

    def head() -> str | None:
        found = repository.head_commit(repository.open_repo(root))
        return None if found is None else str(found.hexsha)

    assert head() == second == small_repo.git.rev_parse("HEAD")
    small_repo.git.pack_refs("--all")  # the branch now lives in packed-refs only
    assert not (Path(small_repo.git_dir) / "refs" / "heads" / small_repo.active_branch.name).exists()
    assert head() == second
    small_repo.git.checkout(first)  # detached: HEAD holds the sha itself
    assert head() == first
    assert repository.commit(root) == first
    assert repository.changed_since(root, "HEAD") == frozenset()
    small_repo.git.checkout("--orphan", "fresh")  # an unborn branch: no commit yet
    assert head() is None
    assert repository.commit(root) is None
    assert committed_at_head(root / "solver.py") is None
    with pytest.raises(UsageError, match="'HEAD' is not a commit"):
        repository.changed_since(root, "HEAD")


def test_renames_keep_every_file_name_as_it_is(tmp_path: Path) -> None:
    """Staged and committed renames since a ref, with names git's line-based output would quote or split."""
    repo = init_repo(tmp_path)
    body = "".join(f"value_{i} = {i}\n" for i in range(40))  # enough lines for git's rename detection
    old = ["old name.py", "plain.py", "ü.py", "edited.py", "kept.py"]
    for i, name in enumerate(old):
        (tmp_path / name).write_text(body + f"# {i}\n")
    repo.index.add(old)
    repo.index.commit("start")
    repo.git.mv("old name.py", "new\nline.py")
    repo.git.mv("plain.py", "tab\there.py")
    (tmp_path / "sub").mkdir()
    repo.git.mv("ü.py", "sub/ä.py")
    repo.index.commit("renames")  # committed since HEAD~1
    repo.git.mv("kept.py", "moved back\\slash.py")  # staged only
    (tmp_path / "edited.py").write_text("changed\n")  # modified, not renamed
    assert repository.renamed_since(tmp_path, "HEAD~1") == {
        "new\nline.py": "old name.py", "tab\there.py": "plain.py", "sub/ä.py": "ü.py", "moved back\\slash.py": "kept.py"}
    assert repository.renamed_since(tmp_path, "HEAD") == {"moved back\\slash.py": "kept.py"}
    assert repository.renamed_since(tmp_path / "sub", "HEAD~1") == {}  # keys relative to sub/: ü.py was outside


def test_the_staged_copy_is_read_from_the_index_git_gives_the_hook_and_only_from_this_repositorys_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    repo = init_repo(root)
    (root / "ledger.jsonl").write_text("one\n")
    repo.index.add(["ledger.jsonl"])
    repo.index.commit("one")
    opened = repository.open_repo(root)
    staged = repository.blob_staged(opened, "ledger.jsonl")
    assert staged is not None and b"".join(staged.chunks()) == b"one\n"
    # `git commit -a` stages into a second index and names it in $GIT_INDEX_FILE for the hook
    (root / "ledger.jsonl").write_text("two\n")
    hook_index = Path(repo.git_dir) / "index.hook"
    repo.git.add("ledger.jsonl", env={"GIT_INDEX_FILE": str(hook_index)})  # .git/index keeps "one"
    monkeypatch.setenv("GIT_INDEX_FILE", str(hook_index))
    staged = repository.blob_staged(opened, "ledger.jsonl")
    assert staged is not None and b"".join(staged.chunks()) == b"two\n"
    monkeypatch.setenv("GIT_INDEX_FILE", "index.hook")  # relative names start at the top of the working tree
    assert b"".join(repository.blob_staged(opened, "ledger.jsonl").chunks()) == b"one\n"  # type: ignore[union-attr]
    # an index outside this repository's git folder (another repository's, or a file planted anywhere) is not read
    other = tmp_path / "other"
    other.mkdir()
    init_repo(other)
    (other / "ledger.jsonl").write_text("forged\n")
    git.Repo(other).index.add(["ledger.jsonl"])
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    assert b"".join(repository.blob_staged(opened, "ledger.jsonl").chunks()) == b"one\n"  # type: ignore[union-attr]
    (root / "notes").mkdir()
    (root / "notes" / "index").write_bytes((other / ".git" / "index").read_bytes())
    monkeypatch.setenv("GIT_INDEX_FILE", "notes/index")  # inside the working tree, not the git folder
    assert b"".join(repository.blob_staged(opened, "ledger.jsonl").chunks()) == b"one\n"  # type: ignore[union-attr]


def test_nothing_is_staged_for_a_path_the_index_lacks_or_holds_as_a_link(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    repo = init_repo(root)
    (root / "real").write_text("x\n")
    os.symlink("real", root / "ledger.jsonl")
    repo.index.add(["real", "ledger.jsonl"])
    opened = repository.open_repo(root)
    assert repository.blob_staged(opened, "ledger.jsonl") is None
    assert repository.blob_staged(opened, "absent.jsonl") is None
