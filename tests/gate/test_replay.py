"""physverify replay, the claims gate (issue 4; DESIGN.md "Replay: the gate").

The claims here are tiny (an exact check on a one-line solver), so each child process
costs only the interpreter start; the repositories are real git repositories.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import git
import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo, run_process
from hypothesis import given
from hypothesis import strategies as st

from physverify.isolation import forkclient
from physverify.gate import rules as gate, ledger, replay, settings
from physverify.gate import repo as repo_module
from physverify.commands import ledger as ledger_commands
from physverify.gate.rules import (
    DECIDED,
    FIXED,
    NEW,
    REGRESSED,
    REMOVED,
    UNCHANGED,
    UNDECIDABLE,
)
from physverify.errors import ConfigError, RefusedError, UsageError
from physverify.verdict import (
    CONFIRMED,
    EXIT_ERROR,
    EXIT_FINDING,
    EXIT_OK,
    NOT_DECIDABLE,
    REJECTED,
)

GOOD = "def double(x):\n    return 2 * x\n"
DEFECT = "def double(x):\n    return 3 * x\n"  # double(0) is still 0, so the control passes
CRASH = "def double(x):\n    if x:\n        raise RuntimeError('boom')\n    return 0\n"

CLAIM_TEMPLATE = '''"""A tiny claim about solver.double."""
from physverify import FAIL, PASS, Check, Result
import {module}

CLAIM = {{
    "text": "double() returns the wrong value for x != 0",
    "source": "a test",
    "file": "{module}.py",
    "line": 2,
    "reference": "arithmetic: double(x) = 2 x",
    "impact": "used",
}}


def _doubles(x):
    return lambda: Result(PASS if {module}.double(x) == 2 * x else FAIL, f"double({{x}}) = {{{module}.double(x)}}")


def control():
    return Check("exact", "double(0) is 0, where the factor does not matter", _doubles(0))


def checks():
    return [Check("exact", "double({arg}) is {twice}", _doubles({arg}))]
'''


def claim_text(module: str = "solver", arg: int = 2) -> str:
    return CLAIM_TEMPLATE.format(module=module, arg=arg, twice=2 * arg)


def make_repo(root: Path, solver: str = DEFECT, claims: int = 1) -> git.Repo:
    """A git repository with solver.py and ``claims`` claim files about it, committed."""
    repo = init_repo(root)
    (root / "solver.py").write_text(solver)
    (root / "claims").mkdir()
    for i in range(claims):
        (root / "claims" / f"claim_{i:02d}.py").write_text(claim_text(arg=i + 1))
    repo.index.add(["solver.py", *[f"claims/claim_{i:02d}.py" for i in range(claims)]])
    repo.index.commit("claims and solver")
    return repo


def run(root: Path, **kwargs: object) -> replay.ReplayResult:
    kwargs.setdefault("trusted", True)
    kwargs.setdefault("timeout_s", 60)
    kwargs.setdefault("jobs", 2)
    return replay.replay([root / "claims"], **kwargs)  # type: ignore[arg-type]


def ledger_bytes(root: Path) -> bytes:
    path = root / "claims" / "confirm_ledger.jsonl"
    return path.read_bytes() if path.exists() else b""


def only(result: replay.ReplayResult) -> replay.ClaimRun:
    assert len(result.claims) == 1, result.claims
    return result.claims[0]


# --- pure parts ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, CONFIRMED, NEW),
        ("maybe", REJECTED, NEW),  # a hand-edited line with an unknown verdict compares with nothing
        (REJECTED, REJECTED, UNCHANGED),
        (CONFIRMED, REJECTED, FIXED),
        (REJECTED, CONFIRMED, REGRESSED),
        (CONFIRMED, NOT_DECIDABLE, UNDECIDABLE),
        (REJECTED, NOT_DECIDABLE, UNDECIDABLE),
        (NOT_DECIDABLE, CONFIRMED, DECIDED),
        (NOT_DECIDABLE, REJECTED, DECIDED),
        (NOT_DECIDABLE, NOT_DECIDABLE, UNCHANGED),
    ],
)
def test_transition_names_how_the_verdict_moved(before: str | None, after: str, expected: str) -> None:
    assert gate.transition(before, after) == expected


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "a/b", "3", "1/3/5", "-1/3", ""])
def test_a_bad_shard_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--shard must be K/N"):
        settings.parse_shard(text)


@given(keys=st.sets(st.text(min_size=1, max_size=30), max_size=40), n=st.integers(min_value=1, max_value=12))
def test_shards_split_any_claims_into_disjoint_parts_that_cover_them_all(keys: set[str], n: int) -> None:
    parts = [{key for key in keys if replay.in_shard(key, k, n)} for k in range(1, n + 1)]
    assert set().union(*parts) == keys
    assert sum(len(part) for part in parts) == len(keys)


def test_the_shard_of_a_claim_is_fixed_by_its_key_alone() -> None:
    # sha256 of the key: the same on every machine and in every Python process (no hash seed)
    code = "from physverify.gate.replay import in_shard; print([in_shard(f'claims/c{i}.py', 2, 3) for i in range(20)])"
    here = [replay.in_shard(f"claims/c{i}.py", 2, 3) for i in range(20)]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == str(here)


# --- the gate on a real repository -------------------------------------------------------
@pytest.mark.slow
def test_a_claim_walks_new_unchanged_fixed_unchanged_regressed_undecidable(tmp_path: Path) -> None:
    make_repo(tmp_path, DEFECT)
    steps = [
        (None, NEW, CONFIRMED, EXIT_OK, True),
        (None, UNCHANGED, CONFIRMED, EXIT_OK, False),
        (GOOD, FIXED, REJECTED, EXIT_OK, True),  # good news passes; its line is written
        (None, UNCHANGED, REJECTED, EXIT_OK, False),
        (DEFECT, REGRESSED, CONFIRMED, EXIT_FINDING, True),
        (CRASH, UNDECIDABLE, NOT_DECIDABLE, EXIT_FINDING, True),
    ]
    for solver, expected_transition, verdict, exit_code, writes in steps:
        if solver is not None:
            (tmp_path / "solver.py").write_text(solver)
        before = ledger_bytes(tmp_path)
        result = run(tmp_path)
        claim_run = only(result)
        assert (claim_run.transition, claim_run.verdict, result.exit_code) == (expected_transition, verdict, exit_code)
        after = ledger_bytes(tmp_path)
        assert after.startswith(before)  # appended, never rewritten
        if writes:
            added = after[len(before):].decode().splitlines()
            assert len(added) == 1 and json.loads(added[0])["verdict"] == verdict
        else:
            assert after == before  # an unchanged repository leaves the ledger byte for byte as it was


@pytest.mark.slow
def test_baseline_ref_compares_with_the_ledger_committed_at_an_older_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, DEFECT)
    assert only(run(tmp_path)).verdict == CONFIRMED
    repo.index.add(["claims/confirm_ledger.jsonl"])
    old = repo.index.commit("ledger: confirmed").hexsha
    (tmp_path / "solver.py").write_text(GOOD)
    assert only(run(tmp_path)).transition == FIXED
    repo.index.add(["solver.py", "claims/confirm_ledger.jsonl"])
    repo.index.commit("fix double")
    assert only(run(tmp_path)).transition == UNCHANGED  # against the ledger as it is now
    against_old = run(tmp_path, baseline=old)
    assert (only(against_old).transition, only(against_old).baseline_verdict) == (FIXED, CONFIRMED)
    assert only(run(tmp_path, baseline="HEAD~2")).transition == NEW  # no ledger at the first commit


def test_an_unknown_baseline_ref_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD, claims=0)
    with pytest.raises(UsageError, match="no-such-branch"):
        run(tmp_path, baseline="no-such-branch")


@pytest.mark.slow
def test_expect_fails_the_gate_when_a_claim_differs_from_it(tmp_path: Path) -> None:
    make_repo(tmp_path, DEFECT)
    (tmp_path / "claims" / "physverify.yaml").write_text("expect:\n  claim_00.py: rejected\n")
    result = run(tmp_path)
    assert only(result).transition == NEW and result.exit_code == EXIT_FINDING
    assert only(result).failures == ("expected rejected (physverify.yaml), got confirmed",)
    (tmp_path / "solver.py").write_text(GOOD)
    # the fix meets the expectation, and the expectation alone decides (fail_on: [fixed] notwithstanding)
    (tmp_path / "claims" / "physverify.yaml").write_text("expect:\n  claims/claim_00.py: rejected\nfail_on: [fixed]\n")
    result = run(tmp_path)
    assert (only(result).transition, result.exit_code) == (FIXED, EXIT_OK)


def test_a_bad_config_stops_the_replay_before_anything_runs(tmp_path: Path) -> None:
    make_repo(tmp_path, DEFECT)
    (tmp_path / "claims" / "physverify.yaml").write_text("timout: 5\n")
    with pytest.raises(ConfigError, match="unknown key 'timout'"):
        run(tmp_path)
    assert ledger_bytes(tmp_path) == b""


def test_replay_refuses_untrusted_code_and_writes_nothing(tmp_path: Path) -> None:
    make_repo(tmp_path, DEFECT)
    with pytest.raises(RefusedError):
        run(tmp_path, trusted=False)
    assert ledger_bytes(tmp_path) == b""


@pytest.mark.slow
def test_twenty_claims_a_helper_and_a_broken_claim_with_two_jobs_lose_nothing(tmp_path: Path) -> None:
    make_repo(tmp_path, DEFECT, claims=20)
    (tmp_path / "claims" / "shared.py").write_text("FACTOR = 2\n")  # a helper module: no CLAIM
    (tmp_path / "claims" / "broken.py").write_text('CLAIM = {"text": "FILL IN"}\n')
    progress: list[tuple[str, int, int]] = []
    result = run(tmp_path, jobs=2, progress=lambda r, done, total: progress.append((r.key, done, total)))
    assert sorted(done for _, done, _ in progress) == list(range(1, 22)) and {t for *_, t in progress} == {21}
    assert sorted(key for key, *_ in progress) == sorted(r.key for r in result.claims)
    verdicts = [r.verdict for r in result.claims]
    assert len(result.claims) == 21 and verdicts.count(CONFIRMED) == 20 and verdicts.count(NOT_DECIDABLE) == 1
    broken = next(r for r in result.claims if r.key == "claims/broken.py")
    assert broken.transition == NEW and broken.reason
    records = ledger.read_ledger(tmp_path / "claims" / "confirm_ledger.jsonl").records
    assert sorted(r["claim_key"] for r in records) == sorted(r.key for r in result.claims)


@pytest.mark.slow
def test_shards_one_two_three_of_three_run_every_claim_exactly_once(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD, claims=6)
    seen: list[str] = []
    for k in (1, 2, 3):
        result = run(tmp_path, shard=f"{k}/3", ledger=tmp_path / f"shard{k}.jsonl")
        seen += [r.key for r in result.claims]
    assert sorted(seen) == [f"claims/claim_{i:02d}.py" for i in range(6)]


@pytest.mark.slow
def test_a_torn_last_line_is_reported_and_new_lines_go_after_it(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD)
    first = run(tmp_path)
    path = tmp_path / "claims" / "confirm_ledger.jsonl"
    torn = path.read_bytes() + b'{"ledger_version": 1, "claim_key": "claims/other.py", "verd'
    path.write_bytes(torn)
    (tmp_path / "solver.py").write_text(DEFECT)
    result = run(tmp_path)
    assert any(":2:" in w and "cut off" in w for w in result.warnings), result.warnings
    assert only(result).transition == REGRESSED and only(first).transition == NEW
    data = path.read_bytes()  # the cut-off line is gone, the whole lines are kept and the new one follows them
    assert data.startswith(torn[:torn.index(b'{"ledger_version": 1, "claim_key": "claims/other.py"')])
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    read = ledger.read_ledger(path)
    assert [r["verdict"] for r in read.records] == [REJECTED, CONFIRMED] and read.problems == []


@pytest.mark.slow
def test_a_deleted_claim_file_or_one_without_claim_is_reported_as_removed(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD, claims=3)
    run(tmp_path)
    (tmp_path / "claims" / "claim_01.py").unlink()
    (tmp_path / "claims" / "claim_02.py").write_text("def control():\n    pass\n")  # now a helper
    before = ledger_bytes(tmp_path)
    result = run(tmp_path)
    assert [(r.key, r.transition) for r in result.claims] == [
        ("claims/claim_00.py", UNCHANGED), ("claims/claim_01.py", REMOVED), ("claims/claim_02.py", REMOVED)]
    assert result.exit_code == EXIT_OK and ledger_bytes(tmp_path) == before


@pytest.mark.slow
def test_changed_since_reruns_only_affected_claims_and_counts_the_rest(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, GOOD, claims=2)
    (tmp_path / "other.py").write_text(GOOD)
    (tmp_path / "claims" / "claim_01.py").write_text(claim_text(module="other"))
    run(tmp_path)
    repo.index.add(["other.py", "claims/claim_01.py", "claims/confirm_ledger.jsonl"])
    repo.index.commit("second solver")
    quiet = run(tmp_path, changed_since="HEAD")
    assert quiet.claims == () and len(quiet.skipped) == 2
    (tmp_path / "other.py").write_text(DEFECT)
    result = run(tmp_path, changed_since="HEAD")
    assert [(r.key, r.transition) for r in result.claims] == [("claims/claim_01.py", REGRESSED)]
    assert result.skipped == ("claims/claim_00.py",)


def _carrying(tag: str) -> list[int]:
    """The processes whose environment holds PHYSVERIFY_TEST_TAG=``tag``: a run a test started and what it started."""
    marker = f"PHYSVERIFY_TEST_TAG={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return found


@pytest.mark.slow
def test_a_changed_module_starts_the_fork_server_and_a_run_that_needs_none_leaves_none(tmp_path: Path) -> None:
    """A changed .py file starts the server before the plan is made (a guess for speed); when no claim runs
    after all, the result is that of a plan without it, and no process of the run outlives it."""
    repo = make_repo(tmp_path, GOOD)
    run(tmp_path)
    repo.index.add(["claims/confirm_ledger.jsonl"])
    repo.index.commit("ledger")
    forkclient.shutdown()  # the server the full run started
    assert not forkclient.servers()
    (tmp_path / "tool.py").write_text("print('a script no claim imports')\n")
    result = run(tmp_path, changed_since="HEAD", jobs=1)
    assert result.claims == () and result.skipped == ("claims/claim_00.py",)
    for thread in threading.enumerate():
        if thread.name == "physverify-warm-up":
            thread.join(120)
    try:
        assert forkclient.servers(), "the changed module did not start the server"
    finally:
        forkclient.shutdown()
    tag = uuid.uuid4().hex
    out = run_process("replay", "claims", "--trusted", "--changed-since", "HEAD", cwd=tmp_path,
                      env={"PHYSVERIFY_TEST_TAG": tag})
    assert out.returncode == EXIT_OK, out.stderr
    assert "1 skipped as unaffected" in out.stdout
    deadline = time.monotonic() + 120  # a server still importing numpy ends once it finds the run gone
    while _carrying(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _carrying(tag) == []


@pytest.mark.slow
def test_a_run_with_nothing_to_run_kills_the_server_it_started_while_that_server_still_imports(tmp_path: Path) -> None:
    """--changed-since starts the server before git has said what changed; when nothing runs, the run kills it
    at exit (SIGKILL, then waits for it) rather than leave it importing or wait for its imports."""
    repo = make_repo(tmp_path, GOOD)
    run(tmp_path)
    repo.index.add(["claims/confirm_ledger.jsonl"])
    repo.index.commit("ledger")
    forkclient.shutdown()
    slow = tmp_path / "slow-server"
    slow.mkdir()
    started = tmp_path / "server-started"
    (slow / "sitecustomize.py").write_text(  # only the fork server's interpreter: its start takes 60 s
        "import sys, time, pathlib\n"
        "if 'physverify.isolation.forkserver' in sys.orig_argv:\n"
        f"    pathlib.Path({str(started)!r}).write_text('yes')\n"
        "    time.sleep(60)\n"
    )
    tag = uuid.uuid4().hex
    env = {"PHYSVERIFY_TEST_TAG": tag, "PYTHONPATH": os.pathsep.join([str(slow), os.environ.get("PYTHONPATH", "")])}
    out = run_process("replay", "claims", "--trusted", "--changed-since", "HEAD", cwd=tmp_path, env=env, timeout=50)
    assert out.returncode == EXIT_OK, out.stderr
    assert "1 skipped as unaffected" in out.stdout
    assert started.exists(), "the run did not start the server"
    assert _carrying(tag) == [], "the server outlived the run"


def _join_warm_up() -> None:
    for thread in threading.enumerate():
        if thread.name == "physverify-warm-up":
            thread.join(120)


@pytest.mark.slow
def test_pre_commit_mode_fails_whenever_it_wrote_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_repo(tmp_path, GOOD)
    monkeypatch.chdir(tmp_path)
    first = replay.replay(["claims"], pre_commit=True, files=["solver.py"], timeout_s=60, jobs=1)
    assert first.exit_code == EXIT_FINDING and first.written == 1  # a new claim: the ledger must be staged
    assert "git diff claims/confirm_ledger.jsonl" in first.notes[0]
    again = replay.replay(["claims"], pre_commit=True, files=["solver.py"], timeout_s=60, jobs=1)
    assert again.exit_code == EXIT_OK and again.written == 0 and len(again.claims) == 1
    unrelated = replay.replay(["claims"], pre_commit=True, files=["README.md"], timeout_s=60, jobs=1)
    assert unrelated.claims == () and unrelated.skipped == ("claims/claim_00.py",)


def test_the_command_line_exits_two_for_a_missing_claims_folder(tmp_path: Path, physverify: Any) -> None:
    out = physverify("replay", str(tmp_path / "nope"), "--trusted", cwd=tmp_path)
    assert out.returncode == EXIT_ERROR
    assert "no such claims folder" in out.stderr and out.stdout == ""


def test_a_claim_file_given_as_the_folder_names_the_command_for_one_claim(tmp_path: Path, physverify: Any) -> None:
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "claim_a.py").write_text("CLAIM = {}\n")
    (tmp_path / "notes.txt").write_text("")
    out = physverify("replay", "claims/claim_a.py", "--trusted", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (EXIT_ERROR, "")
    assert out.stderr == ("physverify: claims/claim_a.py: a file; replay takes claims folders (physverify replay "
                          "claims), and one claim runs with 'physverify confirm claims/claim_a.py'\n")
    out = physverify("replay", "notes.txt", "--trusted", cwd=tmp_path)
    assert (out.returncode, out.stderr) == (EXIT_ERROR, "physverify: notes.txt: not a folder\n")


def test_replay_refused_without_trust_names_replay_in_the_sandbox_command(tmp_path: Path, physverify: Any) -> None:
    (tmp_path / "claims").mkdir()
    out = physverify("replay", "claims", cwd=tmp_path)
    assert out.returncode == EXIT_ERROR and "('physverify sandbox -- replay ...', see sandbox/README.md)" in out.stderr


@pytest.mark.slow
def test_the_command_line_prints_one_line_per_claim_and_the_gate(tmp_path: Path, cli: Any) -> None:
    make_repo(tmp_path, DEFECT)
    out = cli("replay", "claims", "--trusted", "--jobs", "1", cwd=tmp_path)
    assert out.returncode == EXIT_OK, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["confirmed", "new", "claims/claim_00.py", "solver.py:2"]
    assert lines[-1] == "gate passed"


@pytest.mark.slow
def test_record_all_appends_a_line_for_every_claim_even_when_nothing_changed(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD)
    run(tmp_path)
    before = ledger_bytes(tmp_path)
    result = run(tmp_path, record_all=True)
    assert (only(result).transition, only(result).recorded, result.written) == (UNCHANGED, True, 1)
    assert ledger_bytes(tmp_path).startswith(before) and ledger_bytes(tmp_path).count(b"\n") == 2


@pytest.mark.parametrize(("option", "value", "message"), [
    ("jobs", "0", "--jobs must be a whole number of at least 1"),
    ("jobs", "two", "--jobs must be a whole number"),
    ("timeout_s", "-1", "--timeout must be a positive"),
    ("shard", "4/3", "--shard must be K/N"),
])
def test_bad_options_are_usage_errors_before_anything_runs(tmp_path: Path, option: str, value: str, message: str) -> None:
    make_repo(tmp_path, GOOD)
    with pytest.raises(UsageError, match=message):
        run(tmp_path, **{option: value})
    assert ledger_bytes(tmp_path) == b""


def test_an_empty_claims_folder_passes_with_a_warning_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "helpers.py").write_text("X = 1\n")  # a helper, not a claim
    monkeypatch.chdir(tmp_path)
    result = replay.replay(["claims"], trusted=True)
    assert result.exit_code == EXIT_OK and result.claims == ()
    assert result.warnings == ("claims: no claim files here (no *.py whose top level binds CLAIM)",)


def test_a_ledger_in_a_missing_folder_is_refused_before_any_claim_runs(tmp_path: Path) -> None:
    make_repo(tmp_path)
    with pytest.raises(UsageError, match="the ledger's folder does not exist"):
        replay.replay([tmp_path / "claims"], ledger=tmp_path / "nodir" / "l.jsonl", trusted=True)


# --- the gate never clears itself (issue 10) ----------------------------------------------
LEDGER = "claims/confirm_ledger.jsonl"


def commit_ledger(repo: git.Repo, message: str = "ledger") -> None:
    repo.index.add([LEDGER])
    repo.index.commit(message)


def verdicts(root: Path) -> list[str]:
    return [r["verdict"] for r in ledger.read_ledger(root / LEDGER).records]


@pytest.mark.slow
def test_a_regression_fails_on_every_rerun_and_its_line_is_written_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, GOOD)
    assert only(run(tmp_path)).transition == NEW
    commit_ledger(repo)
    (tmp_path / "solver.py").write_text(DEFECT)
    for _ in range(3):  # the first run writes "confirmed"; the baseline stays the committed "rejected"
        result = run(tmp_path)
        assert (only(result).transition, result.exit_code) == (REGRESSED, EXIT_FINDING)
    assert verdicts(tmp_path) == [REJECTED, CONFIRMED]
    commit_ledger(repo, "the regressed line, committed with --no-verify")
    assert run(tmp_path, baseline="HEAD~1").exit_code == EXIT_FINDING  # the Action's base still catches it


@pytest.mark.slow
def test_baseline_head_three_times_adds_no_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, DEFECT)
    run(tmp_path)
    commit_ledger(repo)
    before = ledger_bytes(tmp_path)
    for _ in range(3):
        result = run(tmp_path, baseline="HEAD")
        assert (only(result).transition, result.written, result.baseline_ref) == (UNCHANGED, 0, "HEAD")
    assert ledger_bytes(tmp_path) == before


@pytest.mark.slow
def test_a_fix_passes_and_its_line_is_written_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, DEFECT)
    run(tmp_path)
    commit_ledger(repo)
    (tmp_path / "solver.py").write_text(GOOD)
    first, second = run(tmp_path), run(tmp_path)
    assert [(only(r).transition, r.exit_code, r.written) for r in (first, second)] == [
        (FIXED, EXIT_OK, 1), (FIXED, EXIT_OK, 0)]
    assert only(first).evidence == "check PASS double(1) is 2: double(1) = 2"
    assert verdicts(tmp_path) == [CONFIRMED, REJECTED]


@pytest.mark.slow
def test_dry_run_judges_but_writes_nothing(tmp_path: Path) -> None:
    make_repo(tmp_path, DEFECT)
    result = run(tmp_path, dry_run=True)
    assert (only(result).transition, only(result).recorded, result.written) == (NEW, False, 0)
    assert not (tmp_path / LEDGER).exists()


@pytest.mark.slow
def test_a_new_claim_that_cannot_load_fails_the_gate(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD, claims=0)
    (tmp_path / "claims" / "broken.py").write_text('CLAIM = {"text": "FILL IN"}\n')
    result = run(tmp_path)
    assert (only(result).transition, only(result).verdict, result.exit_code) == (NEW, NOT_DECIDABLE, EXIT_FINDING)
    assert only(result).failures == ("new: not decidable (a new claim must give a verdict before the gate takes it in)",)


@pytest.mark.slow
def test_a_claim_importing_from_src_runs(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD, claims=0)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "srcsolver.py").write_text(DEFECT)
    (tmp_path / "claims" / "claim_src.py").write_text(claim_text(module="srcsolver"))
    assert only(run(tmp_path)).verdict == CONFIRMED


@pytest.mark.slow
def test_ledger_log_after_a_replay_shows_the_claims_lines(tmp_path: Path, cli: Any) -> None:
    make_repo(tmp_path, DEFECT)
    run(tmp_path)
    shown = cli("ledger", "log", cwd=tmp_path)
    assert shown.returncode == EXIT_OK and shown.stdout.splitlines()[1].split()[1] == CONFIRMED
    assert "claims/claim_00.py" in shown.stdout


@pytest.mark.slow
def test_claim_repo_gives_the_same_ledger_fields_through_confirm_and_replay(tmp_path: Path) -> None:
    from physverify.commands import confirm

    repo = make_repo(tmp_path / "project", DEFECT, claims=0)
    adapters = tmp_path / "adapters" / "claims"
    adapters.mkdir(parents=True)
    text = claim_text().replace('"impact": "used",', '"impact": "used",\n    "repo": "../../project",')
    (adapters / "c.py").write_text(text)
    direct = confirm.confirm(adapters / "c.py", ledger=tmp_path / "confirm.jsonl", timeout_s=60, trusted=True).record
    replayed = only(replay.replay([adapters], ledger=tmp_path / "replay.jsonl", trusted=True, timeout_s=60)).record
    assert replayed is not None and direct["verdict"] == CONFIRMED
    fields = ("claim_key", "claim_sha256", "file_sha256", "repo_commit", "verdict", "reason")
    assert {f: replayed[f] for f in fields} == {f: direct[f] for f in fields}

    def untimed(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:  # each check's run time is its own run's
        return [{k: v for k, v in check.items() if k != "seconds"} for check in checks]

    assert untimed(replayed["checks"]) == untimed(direct["checks"]) and replayed["checks"]
    assert direct["repo_commit"] == repo.head.commit.hexsha and direct["file_sha256"] is not None


@pytest.mark.slow
def test_a_removed_claim_is_one_that_existed_at_the_baseline_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, GOOD, claims=2)
    run(tmp_path)
    commit_ledger(repo)
    repo.index.remove(["claims/claim_01.py"], working_tree=True)
    result = run(tmp_path)
    assert [(r.key, r.transition) for r in result.claims] == [
        ("claims/claim_00.py", UNCHANGED), ("claims/claim_01.py", REMOVED)]
    (tmp_path / "claims" / "physverify.yaml").write_text("fail_on: [removed]\n")
    assert run(tmp_path).exit_code == EXIT_FINDING


def test_a_folder_named_twice_or_inside_another_runs_its_claims_once(tmp_path: Path) -> None:
    make_repo(tmp_path, GOOD, claims=2)
    (tmp_path / "claims" / "sub").mkdir()
    (tmp_path / "claims" / "sub" / "claim_x.py").write_text(claim_text())
    claims = tmp_path / "claims"
    result = replay.replay([claims, claims, claims / "sub", Path(f"{claims}/./")], trusted=True, timeout_s=60,
                           dry_run=True)
    assert sorted(r.key for r in result.claims) == ["claims/claim_00.py", "claims/claim_01.py", "claims/sub/claim_x.py"]


def test_an_expect_key_may_be_relative_to_the_config_folder_or_the_repository(tmp_path: Path) -> None:
    from physverify.gate.config import load_config

    make_repo(tmp_path, GOOD)
    for key in ("claim_00.py", "claims/claim_00.py"):
        (tmp_path / "claims" / "physverify.yaml").write_text(f"expect:\n  {key}: rejected\n")
        expect = load_config(tmp_path / "claims").expect
        assert expect == {(tmp_path / "claims" / "claim_00.py").resolve(): REJECTED}


# --- a fixed claim kept in claims/ (issue 17) -------------------------------------------------
DECAY_FIXED_CLAIM = DECAY_CLAIM.replace('    "impact": "used",\n', '    "impact": "used",\n'
                                        '    "defect": "return y0 * math.exp(-rate * t / 2)",\n'
                                        '    "fix": "return y0 * math.exp(-rate * t)",\n')
# A refactor: amount() no longer runs the fixed line, which stays behind in an unused helper,
# so putting the defect back changes nothing the checks see.
DECAY_REFACTORED = '''\
"""Exponential decay, the code under test, after a refactor."""
import math


def amount_by_exp(y0, rate, t):
    return y0 * math.exp(-rate * t)


def amount(y0, rate, t):
    return y0 * 0.5 ** (rate * t / math.log(2.0))
'''


def test_a_fixed_claim_replays_and_fails_the_gate_once_its_checks_stop_seeing_the_defect(
        tmp_path: Path, cli: Any) -> None:
    repo = init_repo(tmp_path)
    (tmp_path / "claims").mkdir()
    (tmp_path / "decay.py").write_text(DECAY_SOLVER)
    (tmp_path / "claims" / "claim_decay.py").write_text(DECAY_FIXED_CLAIM)
    repo.index.add(["decay.py", "claims/claim_decay.py"])
    repo.index.commit("a fixed defect, kept as a claim")
    out = cli("replay", "claims", "--trusted", cwd=tmp_path)
    assert out.returncode == EXIT_OK and out.stdout.splitlines()[-1] == "gate passed", out.stdout + out.stderr
    assert out.stdout.split()[:2] == ["rejected", "new"]
    assert "check PASS on the code, FAIL with the defect put back: at t = 1 the amount follows exp(-rate t)" in out.stdout
    commit_ledger(repo)
    out = cli("replay", "claims", "--trusted", cwd=tmp_path)
    assert (out.returncode, out.stdout.split()[:2]) == (EXIT_OK, ["rejected", "unchanged"]), out.stdout
    (tmp_path / "decay.py").write_text(DECAY_REFACTORED)
    out = cli("replay", "claims", "--trusted", cwd=tmp_path)
    assert out.returncode == EXIT_FINDING, out.stdout + out.stderr
    assert out.stdout.split()[:2] == ["not", "decidable"] and "undecidable" in out.stdout.split()[2]
    assert "the checks cannot tell the code from the variant" in out.stdout
    assert "gate: undecidable: rejected -> not decidable" in out.stdout
    assert verdicts(tmp_path) == [REJECTED, NOT_DECIDABLE]


# --- one reading per claim, a pipeline (issue 19) -------------------------------------------
def test_a_replay_reads_each_claim_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from physverify.gate import claim

    make_repo(tmp_path, claims=3)
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", "off")
    reads: list[str] = []
    real = claim.contents  # the read of a file's bytes, by claim.read or by a batch (cache.Readings.read_each)

    def counted(path: Path, *args: Any, **kwargs: Any) -> claim.ClaimReading | claim.Contents:
        reads.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(claim, "contents", counted)
    result = run(tmp_path, jobs=1, dry_run=True)
    assert [c.verdict for c in result.claims] == [CONFIRMED] * 3
    assert sorted(reads) == ["claim_00.py", "claim_01.py", "claim_02.py"]  # discovery's one read, used by every step


def test_the_fork_server_starts_before_git_is_asked_unless_the_files_given_reach_no_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In fork mode the server starts first, so its start overlaps GitPython's import and the plan; files given
    alone (the hook's staged files) start it once the no-op memo has not answered, and only when one is a Python
    file; fresh mode never starts it."""
    from physverify.isolation import forkclient, isolate

    make_repo(tmp_path, claims=1)
    starts: list[str] = []
    monkeypatch.setattr(forkclient, "start", lambda: starts.append("start"))
    monkeypatch.setattr(isolate, "fork_supported", lambda: True)

    def started(**options: object) -> int:
        before = len(starts)
        run(tmp_path, jobs=1, dry_run=True, **options)  # type: ignore[arg-type]
        _join_warm_up()
        return len(starts) - before

    assert started(isolation="fresh") == 0
    assert started(isolation="fresh", changed_since="HEAD") == 0
    assert started(isolation="fork") == 1
    assert started(isolation="fork", changed_since="HEAD") == 1  # git's change set is not known yet
    assert started(isolation="fork", files=["notes.txt", "data/table.csv"]) == 0
    assert started(isolation="fork", files=["notes.txt", "model.py"]) == 1


# --- keys outside git -------------------------------------------------------------------------
def _same_named_outside_git(tmp_path: Path) -> Path:
    """claims/before/claim_x.py about a defect, claims/after/claim_x.py about the fix, each beside its solver.py."""
    claims = tmp_path / "claims"
    for folder, solver in (("before", DEFECT), ("after", GOOD)):
        (claims / folder).mkdir(parents=True)
        (claims / folder / "solver.py").write_text(solver)
        (claims / folder / "claim_x.py").write_text(claim_text())
    return claims


@pytest.mark.parametrize("given", [["claims"], ["claims/before", "claims/after"]])
def test_two_claims_of_one_name_in_two_folders_outside_git_keep_their_own_histories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: list[str]
) -> None:
    """Outside git the key was the bare file name, so the two read and wrote one history: the second replay said
    one side was "fixed (was confirmed)". Keyed from the folder the run was given, each keeps its own."""
    _same_named_outside_git(tmp_path)
    monkeypatch.chdir(tmp_path)
    ledger_path = tmp_path / "ledger.jsonl"
    expected = {"before/claim_x.py": CONFIRMED, "after/claim_x.py": REJECTED}
    first = replay.replay(given, trusted=True, jobs=1, timeout_s=60, ledger=ledger_path)
    assert {r.key: (r.transition, r.verdict) for r in first.claims} == {k: (NEW, v) for k, v in expected.items()}
    for _ in range(2):
        again = replay.replay(given, trusted=True, jobs=1, timeout_s=60, ledger=ledger_path)
        assert {r.key: (r.transition, r.verdict) for r in again.claims} == {k: (UNCHANGED, v) for k, v in expected.items()}
        assert again.exit_code == EXIT_OK and again.written == 0
    lines = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    assert {line["claim_key"]: line["verdict"] for line in lines} == expected and len(lines) == 2
    rows = ledger_commands.log(ledger_path, "claims/before/claim_x.py", Path("claims")).rows  # `ledger log --claim` finds it
    assert [(row.claim, row.verdict) for row in rows] == [("before/claim_x.py", CONFIRMED)]


def test_a_ledger_with_the_old_bare_name_keys_outside_git_still_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line under the bare file name is the history of the claim whose file it names (``claim_file``); the other
    claim of that name starts as new, never from its neighbour's verdict; the next line has the new key."""
    claims = _same_named_outside_git(tmp_path)
    monkeypatch.chdir(tmp_path)
    ledger_path = tmp_path / "ledger.jsonl"
    digest = hashlib.sha256((claims / "after" / "claim_x.py").read_bytes()).hexdigest()  # both files' content
    old = {"ledger_version": 1, "date": "2026-01-01T00:00:00+00:00", "claim_file": "claims/before/claim_x.py",
           "claim_key": "claim_x.py", "claim_sha256": digest, "verdict": REJECTED}  # before the defect came
    ledger_path.write_text(json.dumps(old) + "\n")
    result = replay.replay(["claims"], trusted=True, jobs=1, timeout_s=60, ledger=ledger_path)
    runs = {r.key: (r.transition, r.verdict) for r in result.claims}
    assert runs == {"before/claim_x.py": (REGRESSED, CONFIRMED), "after/claim_x.py": (NEW, REJECTED)}
    assert result.exit_code == EXIT_FINDING
    assert any(w.startswith("before/claim_x.py: its history is under the key claim_x.py") for w in result.warnings)
    assert sorted(json.loads(line)["claim_key"] for line in ledger_path.read_text().splitlines()[1:]) == [
        "after/claim_x.py", "before/claim_x.py"]
    (claims / "before" / "solver.py").write_text(GOOD)
    fixed = replay.replay(["claims"], trusted=True, jobs=1, timeout_s=60, ledger=ledger_path)
    assert {r.key: r.transition for r in fixed.claims} == {"before/claim_x.py": FIXED, "after/claim_x.py": UNCHANGED}
    assert not any("its history is under" in w for w in fixed.warnings)


# --- each step of replay(): settings -> plan -> baseline -> run and judge -> write -> conclude -----------
def _request(root: Path, **options: Any) -> replay.Request:
    options.setdefault("trusted", True)
    options.setdefault("timeout_s", 60)
    options.setdefault("jobs", 1)
    return replay.read_settings([root / "claims"], **options)


def test_read_settings_takes_a_flag_over_the_folders_file_and_checks_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "physverify.yaml").write_text("timeout: 7\njobs: 3\n")
    request = replay.read_settings([tmp_path / "claims"], trusted=True, jobs=2, files=["a.py"])
    assert (request.run.jobs, request.run.timeout_s) == (2, 7.0)
    assert request.target == tmp_path / "claims" / "confirm_ledger.jsonl" and not request.explicit_ledger
    assert request.has_change_set and request.files_alone and request.files == ("a.py",)
    assert not replay.read_settings([tmp_path / "claims"], trusted=True).has_change_set
    with pytest.raises(RefusedError):
        replay.read_settings([tmp_path / "claims"])
    with pytest.raises(UsageError, match="missing"):
        replay.read_settings([tmp_path / "claims"], trusted=True, ledger=tmp_path / "missing" / "l.jsonl")
    assert replay.read_settings([tmp_path / "claims"], trusted=True, dry_run=True,
                                ledger=tmp_path / "missing" / "l.jsonl").explicit_ledger


def test_plan_change_runs_every_claim_without_a_change_set_and_answers_from_the_memo_with_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from physverify.gate import baseline, cache, noop

    root = tmp_path / "project"  # the cache outside it: its files are no change of the project's
    project = make_repo(root, GOOD)
    run(root, jobs=1)
    project.index.add(["claims/confirm_ledger.jsonl"])
    project.index.commit("ledger")
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(noop, "RACY_NS", 0)  # files this new count as settled: a memo may be kept at once
    checkouts = repo_module.Checkouts()

    def planned(**options: Any) -> replay.ChangePlan:
        request = _request(root, **options)
        source = baseline.locate_ledger(request.first, request.target, False, None, checkouts)
        return replay.plan_change(request, source, checkouts, cache.open_cache(), noop.Recorder())

    assert planned() == replay.ChangePlan()  # every claim runs
    first = planned(changed_since="HEAD")
    assert first.changes is not None and first.kept is None and first.key_material is not None
    run(root, changed_since="HEAD")  # runs nothing, warns of nothing: its plan is kept
    assert planned(changed_since="HEAD").kept == ("claims/claim_00.py",)


def test_read_baseline_reads_the_committed_ledger_and_says_when_there_is_none_yet(tmp_path: Path) -> None:
    from physverify.gate import baseline

    make_repo(tmp_path, GOOD)
    run(tmp_path, jobs=1)  # a line written, never committed
    request = _request(tmp_path)
    checkouts = repo_module.Checkouts()
    source = baseline.locate_ledger(request.first, request.target, False, None, checkouts)
    judging = replay.read_baseline(request, source, replay.ChangePlan(), checkouts)
    assert judging.baseline.ref is None and list(judging.baseline.latest) == ["claims/claim_00.py"]
    assert judging.recorded == judging.baseline.latest and judging.memory is None and not judging.edited
    assert any("not committed yet" in line for line in judging.warnings)


def test_run_claims_runs_and_judges_each_planned_claim_and_conclude_adds_the_removed_ones(tmp_path: Path) -> None:
    from physverify.gate import baseline, cache, pipeline

    project = make_repo(tmp_path, DEFECT, claims=2)
    run(tmp_path, jobs=1)
    project.index.add(["claims/confirm_ledger.jsonl"])
    project.index.commit("ledger")
    project.index.remove(["claims/claim_01.py"], working_tree=True)
    request = _request(tmp_path, dry_run=True)
    checkouts = repo_module.Checkouts()
    source = baseline.locate_ledger(request.first, request.target, False, None, checkouts)
    judging = replay.read_baseline(request, source, replay.ChangePlan(), checkouts)
    readings = cache.Readings(None, checkouts)
    with pipeline.Freezing() as freezing:
        discovered = pipeline.plan(request.configs, checkouts, readings.read_each)
        runs, seen = replay.run_claims(request, judging, replay.ChangePlan(), discovered, freezing, checkouts)
    assert [(r.key, r.transition, r.verdict) for r in runs] == [("claims/claim_00.py", UNCHANGED, CONFIRMED)]
    assert seen.keys == ["claims/claim_00.py"] and not runs[0].recorded  # the same verdict: no line to write
    result = replay.conclude(request, judging, replay.ChangePlan(), runs, seen, checkouts, None)
    assert [(r.key, r.transition) for r in result.claims] == [("claims/claim_00.py", UNCHANGED),
                                                              ("claims/claim_01.py", REMOVED)]
    assert result.written == 0 and result.baseline_ref == "HEAD" and result.exit_code == EXIT_OK


def test_write_lines_appends_only_the_lines_the_gate_said_to_write(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    new = replay.ClaimRun("a.py", NEW, REJECTED, None, {"claim_key": "a.py", "verdict": REJECTED}, None, recorded=True)
    same = replace(new, key="b.py", record={"claim_key": "b.py", "verdict": REJECTED}, recorded=False)
    assert [r.recorded for r in replay.write_lines([new, same], path, dry_run=True)] == [False, False]
    assert not path.exists()
    assert replay.write_lines([new, same], path, dry_run=False) == [new, same]
    assert [line["claim_key"] for line in ledger.read_ledger(path).records] == ["a.py"]


@pytest.fixture()
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The working tree of each repository GitPython opens from now on, through the real opener."""
    found: list[Path] = []
    real = repo_module.open_repo

    def counted(folder: Path) -> Any:
        repository = real(folder)
        found.append(Path(repository.working_tree_dir) if repository is not None else folder)
        return repository

    monkeypatch.setattr(repo_module, "open_repo", counted)
    return found


@pytest.mark.parametrize("options", [{}, {"changed_since": "HEAD"}, {"baseline": "HEAD~1"},
                                     {"pre_commit": True, "files": ["solver.py"]}],
                         ids=["full", "changed since", "older baseline", "hook"])
def test_a_run_opens_each_repository_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          options: dict[str, Any], opened: list[Path]) -> None:
    """Every git question of one run goes through its one Checkout per repository: the settings, the committed
    ledger, the change set, renames, removed claims and each claim's commit."""
    project = make_repo(tmp_path, GOOD, claims=2)
    (tmp_path / "pyproject.toml").write_text("[tool.physverify]\ntimeout = 60\n")
    run(tmp_path, jobs=1)
    project.index.add(["claims/confirm_ledger.jsonl", "pyproject.toml"])
    project.index.commit("ledger")
    (tmp_path / "solver.py").write_text(GOOD + "# touched\n")
    monkeypatch.chdir(tmp_path)
    opened.clear()  # what the setup's run opened
    result = run(tmp_path, jobs=1, dry_run=True, **options)
    assert len(result.claims) == 2
    assert opened == [tmp_path]


def test_a_claim_in_another_repository_opens_that_one_once_more(tmp_path: Path, opened: list[Path]) -> None:
    """Two checkouts, two repositories opened: the claims folder's and the one CLAIM["repo"] names."""
    make_repo(tmp_path / "project", DEFECT, claims=0)
    init_repo(tmp_path / "adapters")
    claims = tmp_path / "adapters" / "claims"
    claims.mkdir()
    for name in ("a.py", "b.py"):
        text = claim_text().replace('"impact": "used",', '"impact": "used",\n    "repo": "../../project",')
        (claims / name).write_text(text)
    result = replay.replay([claims], trusted=True, timeout_s=60, jobs=1, dry_run=True)
    assert [run.verdict for run in result.claims] == [CONFIRMED, CONFIRMED]
    assert sorted(opened) == sorted([tmp_path / "adapters", tmp_path / "project"])


def test_conclude_warns_of_an_empty_folder_unless_a_shard_or_chosen_claims_may_leave_it_out(tmp_path: Path) -> None:
    from physverify.gate import baseline, pipeline

    (tmp_path / "claims").mkdir()  # outside git, no claim

    def concluded(**options: Any) -> replay.ReplayResult:
        request = _request(tmp_path, dry_run=True, **options)
        checkouts = repo_module.Checkouts()
        source = baseline.locate_ledger(request.first, request.target, False, None, checkouts)
        judging = replay.read_baseline(request, source, replay.ChangePlan(), checkouts)
        return replay.conclude(request, judging, replay.ChangePlan(), [], pipeline.Seen(), checkouts, None, ["a read"])

    whole = concluded()
    assert whole.warnings == ("a read", f"{tmp_path / 'claims'}: no claim files here (no *.py whose top level binds "
                                        "CLAIM)")
    assert whole.claims == () and whole.exit_code == EXIT_OK and whole.baseline_ref is None
    assert concluded(shard="1/2").warnings == ("a read",)
