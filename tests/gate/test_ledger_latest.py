"""The latest line per claim, read fast (issue 19): the same baseline and warnings as the full reader.

``ledger.latest_of_chunks`` skips the JSON parse of a line physverify wrote when a later
line of the same claim supersedes it. These tests hold it to the line-by-line reader on
hostile and corrupt ledgers, show the one documented difference, and check the single
read of the working ledger that ``baseline.load_baseline`` makes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import git
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fixtures import init_repo

from physverify.gate import baseline, ledger, replay
from physverify.gate.ledger import latest_by_claim, latest_of_chunks, parse_ledger

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def written(key: str, verdict: str = "rejected", **fields: Any) -> bytes:
    """A line exactly as confirm and replay write it (schema order, every field), without its newline."""
    record = ledger.new_record(fields.pop("claim_file", key), "2026-01-01T00:00:00+00:00", "0.1.0", 60.0)
    record.update(claim_key=key, verdict=verdict, reason="the control passed and the check failed")
    record.update(fields)
    return ledger._serialise(ledger.ordered(record)).rstrip(b"\n")


def full(data: bytes) -> ledger.Latest:
    """What the line-by-line reader gives: every line parsed."""
    read = parse_ledger(data, "L")
    return ledger.Latest(latest_by_claim(read.records), read.problems)


def streamed(data: bytes, size: int = 1 << 20) -> ledger.Latest:
    return latest_of_chunks(lambda: [data[i:i + size] for i in range(0, len(data), size)], "L")


def test_a_line_as_physverify_writes_it_takes_the_fast_path() -> None:
    """The shortcut is real: the lines replay writes end with the closing field and give their key unparsed."""
    line = written("claims/a.py")
    assert line.endswith(ledger._CLOSING) and line.startswith(b'{"ledger_version": 1')
    hints = ledger._KeyHints()
    assert hints.plain(line) == hints(line) == "claims/a.py"
    assert hints(written("./claims/../claims/é.py")) == "claims/é.py"  # normalised as _record_key does


def test_superseded_lines_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\n".join(written(f"claims/c{i % 3}.py", verdict=("rejected", "confirmed")[i % 2]) for i in range(60)) + b"\n"
    parsed: list[int] = []
    real = ledger._parse_line

    def counting(number: int, raw: bytes, *, torn: bool) -> Any:
        parsed.append(number)
        return real(number, raw, torn=torn)

    monkeypatch.setattr(ledger, "_parse_line", counting)
    read = streamed(data)
    assert sorted(parsed) == [58, 59, 60]  # each claim's last line, nothing else
    monkeypatch.setattr(ledger, "_parse_line", real)
    assert read == full(data)


KEYS = ["claims/a.py", "claims/b.py", "./claims/a.py", "claims/é.py"]
HOSTILE = 'he wrote "claim_key": "claims/z.py" and {"claim_key": "claims/z.py"}'


def _torn(line: bytes, cut: int) -> bytes:
    return line[:max(1, cut % len(line))]


# Lines the fast reader must read exactly as the full reader does, warnings included.
exact_lines = st.one_of(
    st.builds(lambda k, v: written(k, v), st.sampled_from(KEYS), st.sampled_from(["confirmed", "rejected"])),
    # a JSON string value holding the claim_key text, before and after the real key
    st.builds(lambda k: written(k, claim_file=HOSTILE), st.sampled_from(KEYS)),
    st.builds(lambda k: written(k, text=HOSTILE, reason=HOSTILE), st.sampled_from(KEYS)),
    # a writer killed mid-line, then the next append's newline: the cut line sits mid-file
    st.builds(lambda k, cut: _torn(written(k), cut), st.sampled_from(KEYS), st.integers(0, 10_000)),
    st.builds(lambda k: written(k) + b"\r", st.sampled_from(KEYS)),  # CRLF
    st.builds(lambda k: written(k, text="bad").replace(b'"bad"', b'"b\xffd"'), st.sampled_from(KEYS)),  # not UTF-8
    st.builds(lambda k: written(k, stderr_tail="Traceback: \"boom\"\n"), st.sampled_from(KEYS)),
    st.builds(lambda k: written("", claim_file=k), st.sampled_from(KEYS)),  # an empty key: claim_file counts
    # the key spelled a second time with an escape: JSON's last one wins
    st.builds(lambda k: written(k).replace(ledger._CLOSING, b', "claim\\u005fkey": "claims/z.py"' + ledger._CLOSING),
              st.sampled_from(KEYS)),
    st.builds(lambda k: written(k).replace(b'"claim_key"', b'"claim_key" ', 1), st.sampled_from(KEYS)),
    st.sampled_from([b"not json", b"[1, 2]", b"{broken", b"", b"   ", b"\t", b"null", b'{"verdict": "x"}',
                     b'{"control": {"claim_key": "claims/y.py"}, "claim_file": "claims/d.py", "stderr_tail": null}']),
)


@FUZZ
@given(st.lists(exact_lines, max_size=14), st.integers(1, 80), st.booleans(), st.booleans())
def test_the_fast_reader_gives_the_full_readers_lines_and_warnings(lines: list[bytes], size: int, bom: bool,
                                                                   newline: bool) -> None:
    """Every line of a hostile ledger: the same latest line per key and the same warnings, line for line."""
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if newline else b"")
    assert streamed(data, size) == full(data)


def test_a_line_cut_off_mid_write_in_the_middle_still_warns_when_superseded() -> None:
    line = written("claims/a.py")
    for cut in range(1, len(line)):
        data = line[:cut] + b"\n" + written("claims/a.py", "confirmed") + b"\n"
        read = streamed(data)
        assert read == full(data)
        assert read.problems and read.problems[0].startswith("L:1: ")


def test_a_key_spelled_again_with_an_escape_is_the_lines_key_even_when_superseded() -> None:
    twice = written("claims/a.py").replace(ledger._CLOSING, b', "claim\\u005fkey": "claims/z.py"' + ledger._CLOSING)
    data = twice + b"\n" + written("claims/a.py", "confirmed") + b"\n"
    assert json.loads(twice)["claim_key"] == "claims/z.py"
    read = streamed(data)
    assert set(read.latest) == {"claims/a.py", "claims/z.py"} and read == full(data)


def test_a_huge_line_reads_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "confirm_ledger.jsonl"
    huge = written("claims/a.py", text="x" * (3 << 20))  # three blocks of 1 MiB
    path.write_bytes(written("claims/a.py") + b"\n" + huge + b"\n" + written("claims/b.py") + b"\n{torn")
    read = ledger.read_latest(path, "L")
    assert read.latest["claims/a.py"]["text"] == "x" * (3 << 20)
    assert (read.latest, read.problems) == (full(path.read_bytes()).latest, full(path.read_bytes()).problems)


def test_the_one_difference_a_hand_made_line_broken_in_between_and_superseded() -> None:
    """Documented in latest_of_chunks: it starts and ends as physverify's, so it is not parsed once superseded.

    The baseline is the same either way (the full reader skips the line too); only its warning is missing.
    """
    broken = written("claims/a.py").replace(b'"verdict": "rejected"', b'"verdict": rejected')
    superseded = broken + b"\n" + written("claims/a.py", "confirmed") + b"\n"
    assert streamed(superseded).latest == full(superseded).latest
    assert streamed(superseded).problems == [] and len(full(superseded).problems) == 1
    alone = broken + b"\n" + written("claims/b.py") + b"\n"  # the key's latest line: parsed, so it warns
    assert streamed(alone) == full(alone)


# --- the working ledger, read once ------------------------------------------------------
def hash_object(path: Path) -> str:
    return subprocess.run(["git", "hash-object", "--no-filters", str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_read_latest_gives_gits_blob_id_of_the_bytes_it_read(tmp_path: Path) -> None:
    path = tmp_path / "confirm_ledger.jsonl"
    path.write_bytes(written("claims/a.py") + b"\n" + b"{torn")
    assert ledger.read_latest(path, object_hash="sha1").object_id == hash_object(path)
    assert ledger.read_latest(path).object_id is None  # not asked for
    assert ledger.read_latest(tmp_path / "missing.jsonl", object_hash="sha1").object_id is None


def committed_repo(root: Path, lines: list[bytes]) -> tuple[git.Repo, Path]:
    repo = init_repo(root)
    (root / "claims").mkdir()
    path = root / "claims" / "confirm_ledger.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    repo.index.add(["claims/confirm_ledger.jsonl"])
    repo.index.commit("ledger")
    return repo, path


HOSTILE_LEDGER = [written("claims/a.py"), b"not json", written("claims/a.py", "confirmed")[:80],
                  written("claims/b.py", claim_file=HOSTILE) + b"\r", written("claims/a.py", "confirmed"),
                  written("claims/c.py", text="bad").replace(b'"bad"', b'"b\xffd"')]


def test_a_working_ledger_holding_the_committed_bytes_is_the_baseline_read_once(tmp_path: Path) -> None:
    repo, path = committed_repo(tmp_path, HOSTILE_LEDGER)
    base = baseline.load_baseline(path, None)
    committed = repo.git.show("HEAD:claims/confirm_ledger.jsonl", stdout_as_string=False)
    expected = parse_ledger(committed, f"{path}@HEAD")
    assert base.ref == "HEAD" and base.latest == latest_by_claim(expected.records)
    assert list(base.problems) == expected.problems and len(base.problems) == 3  # named as the committed copy
    assert base.working is base.latest and baseline.recorded_lines(path, base) is base.latest


@pytest.mark.parametrize("change", ["same size", "appended", "removed"])
def test_a_working_ledger_that_differs_never_stands_in_for_the_committed_one(tmp_path: Path, change: str) -> None:
    repo, path = committed_repo(tmp_path, HOSTILE_LEDGER)
    committed = path.read_bytes()
    if change == "same size":  # an edit that keeps the size and the line count: only the bytes tell
        path.write_bytes(committed.replace(b'"verdict": "confirmed"', b'"verdict": "confirmex"'))
    elif change == "appended":
        path.write_bytes(committed + written("claims/d.py") + b"\n")
    else:
        path.unlink()
    base = baseline.load_baseline(path, None)
    assert base.latest == latest_by_claim(parse_ledger(committed, "L").records)
    assert base.latest["claims/a.py"]["verdict"] == "confirmed"
    working = ledger.read_bytes(path) if path.exists() else b""
    assert baseline.recorded_lines(path, base) == latest_by_claim(parse_ledger(working, "L").records)


# --- the dirty flag where a line is written ---------------------------------------------
CLAIM = '''"""A tiny claim about solver.double."""
from physverify import FAIL, PASS, Check, Result
import solver

CLAIM = {"text": "double() is wrong for x != 0", "source": "a test", "file": "solver.py", "line": 2,
         "reference": "arithmetic: double(x) = 2 x", "impact": "used"}


def _doubles(x):
    return lambda: Result(PASS if solver.double(x) == 2 * x else FAIL, f"double({x}) = {solver.double(x)}")


def control():
    return Check("exact", "double(0) is 0", _doubles(0))


def checks():
    return [Check("exact", "double(2) is 4", _doubles(2))]
'''


def _committed_claim(root: Path) -> git.Repo:
    """A repository at ``root`` with solver.py (double is wrong) and claims/claim_a.py, committed."""
    repo = init_repo(root)
    (root / "solver.py").write_text("def double(x):\n    return 3 * x\n")
    (root / "claims").mkdir()
    (root / "claims" / "claim_a.py").write_text(CLAIM)
    repo.index.add(["solver.py", "claims/claim_a.py"])
    repo.index.commit("claim")
    return repo


def test_a_line_written_from_a_dirty_tree_records_dirty_after_a_no_op_run(tmp_path: Path) -> None:
    """The no-op run asks git nothing about dirt; the run that writes a line still records HEAD-dirty."""
    repo = _committed_claim(tmp_path)
    first = replay.replay([tmp_path / "claims"], trusted=True, timeout_s=60, jobs=1)
    assert [run.verdict for run in first.claims] == ["confirmed"]
    clean = repo.head.commit.hexsha  # the ledger itself is untracked yet, which is not dirt
    assert json.loads(ledger.read_bytes(tmp_path / "claims" / "confirm_ledger.jsonl"))["repo_commit"] == clean
    repo.index.add(["claims/confirm_ledger.jsonl"])
    repo.index.commit("ledger")
    head = repo.head.commit.hexsha
    assert replay.replay([tmp_path / "claims"], trusted=True, changed_since="HEAD").written == 0
    (tmp_path / "solver.py").write_text("def double(x):\n    return 2 * x\n")  # fixed, not committed
    fixed = replay.replay([tmp_path / "claims"], trusted=True, timeout_s=60, jobs=1)
    assert fixed.written == 1
    last = ledger.read_bytes(tmp_path / "claims" / "confirm_ledger.jsonl").splitlines()[-1]
    assert json.loads(last)["verdict"] == "rejected" and json.loads(last)["repo_commit"] == head + "-dirty"


@pytest.mark.parametrize("margin", ["git's racy rule", "none"])
def test_a_new_claim_from_a_clean_tree_records_head_without_dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  margin: str) -> None:
    """The ledger read as HEAD's is left out of git's look at the working tree; an untracked claim is no dirt."""
    from physverify.gate import repo as repository

    if margin == "none":  # the ledger was just written: without the margin the commit lookup trusts its stat
        monkeypatch.setattr(repository, "_RACY_NS", 0)
    repo = _committed_claim(tmp_path)
    replay.replay([tmp_path / "claims"], trusted=True, timeout_s=60, jobs=1)
    repo.index.add(["claims/confirm_ledger.jsonl"])  # GitPython's add: the index keeps no stat of the file
    repo.index.commit("ledger")
    head = repo.head.commit.hexsha
    (tmp_path / "claims" / "claim_b.py").write_text(CLAIM)  # untracked: not dirt
    assert replay.replay([tmp_path / "claims"], trusted=True, timeout_s=60, jobs=1).written == 1
    assert json.loads(ledger.read_bytes(tmp_path / "claims" / "confirm_ledger.jsonl").splitlines()[-1])[
        "repo_commit"] == head
    (tmp_path / "solver.py").write_text("def double(x):\n    return 2 * x\n")  # fixed, not committed: dirt
    assert replay.replay([tmp_path / "claims"], trusted=True, timeout_s=60, jobs=1).written == 2
    assert {json.loads(line)["repo_commit"] for line in ledger.read_bytes(
        tmp_path / "claims" / "confirm_ledger.jsonl").splitlines()[-2:]} == {head + "-dirty"}


def head_copy(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[git.Repo, Path, Any]:
    """A committed ledger, read by load_baseline, and the HeadCopy it gives (no racy margin: it was just written)."""
    from physverify.gate import repo as repository

    monkeypatch.setattr(repository, "_RACY_NS", 0)
    repo, path = committed_repo(root, [written("claims/a.py")])
    (root / "solver.py").write_text("x = 1\n")
    repo.index.add(["solver.py"])
    repo.index.commit("solver")
    base = baseline.load_baseline(path, None)
    assert base.head_copy is not None and base.head_copy.head == repo.head.commit.hexsha
    return repo, path, base.head_copy


def commit_with(root: Path, copy: Any) -> str | None:
    from physverify.gate import repo as repository

    return repository.Checkouts([copy]).for_folder(root).commit


def test_the_commit_lookup_leaves_out_only_a_ledger_still_as_read(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    repo, path, copy = head_copy(tmp_path, monkeypatch)
    head = repo.head.commit.hexsha
    assert copy.relative_if_unchanged(repo, head) == "claims/confirm_ledger.jsonl"
    assert commit_with(tmp_path, copy) == head
    (tmp_path / "solver.py").write_text("x = 2\n")  # another tracked file changed: dirty all the same
    assert commit_with(tmp_path, copy) == head + "-dirty"


@pytest.mark.parametrize("change", ["appended", "staged", "a link", "new commit", "racy"])
def test_a_ledger_changed_after_it_was_read_is_asked_of_git_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  change: str) -> None:
    from physverify.gate import repo as repository

    repo, path, copy = head_copy(tmp_path, monkeypatch)
    committed = path.read_bytes()
    if change == "appended":
        with path.open("ab") as handle:
            handle.write(written("claims/b.py") + b"\n")
    elif change == "staged":  # the index differs from HEAD, the file holds HEAD's bytes again
        path.write_bytes(committed + written("claims/b.py") + b"\n")
        repo.git.add("claims/confirm_ledger.jsonl")
        path.write_bytes(committed)
    elif change == "a link":  # the same bytes through a link: git sees a type change
        (tmp_path / "copy.jsonl").write_bytes(committed)
        path.unlink()
        path.symlink_to(tmp_path / "copy.jsonl")
    elif change == "new commit":
        (tmp_path / "solver.py").write_text("x = 3\n")
        repo.git.commit("-am", "moved on")
        (tmp_path / "solver.py").write_text("x = 4\n")
    else:  # the file's ctime within the clock's grain of the reading: not trusted
        monkeypatch.setattr(repository, "_RACY_NS", 10**12)
    head = repo.head.commit.hexsha
    if change != "racy" and change != "staged":
        assert copy.relative_if_unchanged(repo, head) is None
    expected = head if change == "racy" else head + "-dirty"
    assert commit_with(tmp_path, copy) == expected == repository.commit(tmp_path)


def test_a_staged_ledger_is_dirt_though_the_file_holds_heads_bytes(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut leaves the file out of the working tree's diff only: the index against HEAD still counts."""
    from physverify.gate import repo as repository

    monkeypatch.setattr(repository, "_RACY_NS", 0)
    repo, path = committed_repo(tmp_path, [written("claims/a.py")])
    committed = path.read_bytes()
    path.write_bytes(committed + written("claims/b.py") + b"\n")
    repo.git.add("claims/confirm_ledger.jsonl")
    path.write_bytes(committed)  # the working file is HEAD's again, the index is not
    base = baseline.load_baseline(path, None)
    assert base.head_copy is not None
    assert base.head_copy.relative_if_unchanged(repo, repo.head.commit.hexsha) == "claims/confirm_ledger.jsonl"
    assert commit_with(tmp_path, base.head_copy) == repo.head.commit.hexsha + "-dirty" == repository.commit(tmp_path)
