"""The ledger and the gate under failure and hostile ledgers (the ledger audit).

Each test commits a claim recorded as rejected, damages the ledger the way a hand edit, a
hostile commit or a killed writer can, brings the defect back, and checks that the gate
still fails (a committed line the reader drops makes its claim "new", and a new confirmed
claim passes), or that the ledger keeps every whole line and no partial one.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import git
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the shared fixtures module
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, DECAY_SOLVER, init_repo, run_process
from support.hostile import rejected_repository

from physverify.gate import replay, results
from physverify.gate.rules import REGRESSED
from physverify.gate.ledger import read_latest, read_ledger
from physverify.report import json as report_json
from physverify.verdict import EXIT_FINDING

LEDGER = "claims/confirm_ledger.jsonl"
KEY = "claims/claim_decay.py"


def _commit_ledger(repo: git.Repo, root: Path, data: bytes) -> None:
    (root / LEDGER).write_bytes(data)
    repo.index.add([LEDGER])
    repo.index.commit("an edited ledger")


def _regression_fails(root: Path) -> replay.ReplayResult:
    (root / "decay.py").write_text(DECAY_DEFECT)
    result = replay.replay(["claims"], trusted=True, jobs=1)
    assert [(run.key, run.transition, run.baseline_verdict) for run in result.claims] == [(KEY, REGRESSED, "rejected")]
    assert result.exit_code == EXIT_FINDING
    return result


# --- a committed line the reader must not drop ------------------------------------------
@pytest.mark.parametrize("character", [b"\x00", b"\x01", b"\x1b", b"\t"])
def test_a_committed_line_with_a_raw_control_character_in_a_string_still_holds_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, character: bytes
) -> None:
    """json.loads refuses a raw control character inside a string; the line was dropped and the claim was new."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    line = (root / LEDGER).read_bytes()
    assert line.count(b'"reason": "') == 1
    _commit_ledger(repo, root, line.replace(b'"reason": "', b'"reason": "' + character * 3))
    result = _regression_fails(root)
    assert any(":1: a control character (such as NUL) inside a string; read as it is" in w for w in result.warnings)


@pytest.mark.parametrize("verdict", [5, "Confirmed", None, ["rejected"], {"verdict": "rejected"}, "confirmed "])
def test_a_later_line_without_a_real_verdict_does_not_erase_the_claims_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: Any
) -> None:
    """A hand-edited latest line (wrong type or spelling) made the claim "new": its regression passed the gate."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    line = (root / LEDGER).read_bytes()
    forged = json.loads(line) | {"verdict": verdict}
    _commit_ledger(repo, root, line + json.dumps(forged).encode() + b"\n")
    result = _regression_fails(root)
    assert any(w.startswith(f"{LEDGER}@HEAD:2: its verdict ") and "is not the claim's verdict" in w
               for w in result.warnings), result.warnings
    # the line itself is kept and read, only not taken as the claim's verdict
    assert [r.get("verdict") for r in read_ledger(root / LEDGER).records][:2] == ["rejected", verdict]


def test_a_line_without_a_real_verdict_as_physverify_writes_lines_leaves_the_earlier_verdict(tmp_path: Path) -> None:
    """The streamed reader's shortcut keeps one line per claim: a forged last line sends it to the full reading."""
    good = {"ledger_version": 1, "claim_key": KEY, "verdict": "rejected", "stderr_tail": None}
    lines = [good, {**good, "claim_key": "claims/other.py"}, {**good, "verdict": "bogus"}]
    path = tmp_path / "l.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines))
    read = read_latest(path)
    assert {key: r["verdict"] for key, r in read.latest.items()} == {KEY: "rejected", "claims/other.py": "rejected"}
    assert len(read.problems) == 1 and read.problems[0].startswith(f"{path}:3: its verdict 'bogus' is not one of")


def test_the_command_line_fails_the_gate_over_a_forged_latest_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    line = (root / LEDGER).read_bytes()
    _commit_ledger(repo, root, line + json.dumps(json.loads(line) | {"verdict": 0}).encode() + b"\n")
    (root / "decay.py").write_text(DECAY_DEFECT)
    done = run_process("replay", "claims", "--trusted", "--jobs", "1", cwd=root)
    assert done.returncode == EXIT_FINDING, done.stdout + done.stderr
    assert "regressed" in done.stdout and "Traceback" not in done.stderr


# --- a writer killed mid-write ----------------------------------------------------------
# A child that appends 24 lines of 1 MiB in one write (as replay appends its lines) and says
# "go" on stdout the moment that write starts, so the parent's SIGKILL lands inside it: the
# kernel stops a write between two pages and leaves part of a line with no newline.
_BIG_WRITER = r"""
import os, sys
from pathlib import Path
from physverify.gate.ledger import append_records
records = [{"claim_key": f"claims/c{i}.py", "verdict": "rejected", "pad": "x" * (1 << 20)} for i in range(24)]
real = os.write
def announced(fd, data):
    if len(data) > 1 << 20:
        real(1, b"go\n")
    return real(fd, data)
os.write = announced
append_records(Path(sys.argv[1]), records)
"""


@pytest.mark.slow
def test_a_writer_killed_inside_its_write_leaves_no_partial_line_after_the_next_append(tmp_path: Path) -> None:
    import os

    from physverify.gate.ledger import append_record

    path = tmp_path / "confirm_ledger.jsonl"
    append_record(path, {"claim_key": KEY, "verdict": "rejected"})
    torn = 0
    for attempt in range(5):
        writer = subprocess.Popen([sys.executable, "-c", _BIG_WRITER, str(path)], stdout=subprocess.PIPE)
        assert writer.stdout is not None and writer.stdout.readline() == b"go\n"
        time.sleep(random.uniform(0, 0.004))
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=60)
        writer.stdout.close()
        torn += not path.read_bytes().endswith(b"\n")
        append_record(path, {"claim_key": "claims/after.py", "verdict": "confirmed", "attempt": attempt})
        read = read_ledger(path)
        assert read.problems == [], read.problems[:3]  # every line whole, none partial
        assert path.read_bytes().endswith(b"\n")
        assert [r["attempt"] for r in read.records if "attempt" in r] == list(range(attempt + 1))  # none lost
    assert torn, "no kill landed inside a write: the test did not test what it is for"
    assert read_latest(path).latest[KEY]["verdict"] == "rejected"


# --- ledger show over a hand-made line ----------------------------------------------------
@pytest.mark.parametrize("line", [
    {"verdict": "rejected"},  # no reason, no control, no checks
    {"verdict": "\x1b[2Jgate passed\n::warning::x", "reason": "\x1b]0;title\x07"},
    {"verdict": "rejected", "reason": "r", "control": "oops", "checks": [1, "two", None]},
    {"verdict": "rejected", "reason": "r", "checks": "oops", "allow_dependent_reference": "yes"},
    {"verdict": "rejected", "reason": "r", "allow_dependent_reference": {"notes": []}},
])
def test_ledger_show_prints_a_hand_made_line_without_crashing_or_a_raw_control(tmp_path: Path,
                                                                               line: dict[str, Any]) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps({"claim_key": KEY, **line}) + "\n")
    done = run_process("ledger", "show", KEY, "--ledger", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert not any(row.startswith(("gate passed", "::")) for row in done.stdout.splitlines())


# --- ledger merge keeps each ledger's history ------------------------------------------------
def _line(verdict: str, date: str, key: str = KEY) -> dict[str, Any]:
    return {"claim_key": key, "date": date, "verdict": verdict}


def test_merge_keeps_a_later_run_with_an_earlier_date_after_the_run_above_it(tmp_path: Path) -> None:
    """A machine whose clock was behind: sorted by date, the merged ledger gave the claim another latest verdict."""
    from physverify.commands.ledger import merge

    path = tmp_path / "shard1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [_line("rejected", "2026-01-02T10:00:00+00:00"),
                                                          _line("confirmed", "2026-01-02T09:00:00+00:00")]))
    done = run_process("ledger", "merge", str(path), "-o", str(tmp_path / "out.jsonl"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_latest(path).latest[KEY]["verdict"] == "confirmed"
    assert read_latest(tmp_path / "out.jsonl").latest[KEY]["verdict"] == "confirmed"
    # two shards that share the committed lines (with the clock step) and each add their own
    shared = [_line("rejected", "2026-01-02T10:00:00+00:00"), _line("confirmed", "2026-01-02T09:00:00+00:00")]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in [*shared, _line("rejected", "2026-01-03T00:00:00Z", "claims/x.py")]))
    b.write_text("".join(json.dumps(r) + "\n" for r in [*shared, _line("rejected", "2026-01-01T00:00:00Z", "claims/y.py")]))
    for n, order in enumerate(([a, b], [b, a])):
        out = tmp_path / f"both{n}.jsonl"
        result = merge(order, out)
        assert (result.lines_out, result.duplicates) == (4, 2)
        assert {k: r["verdict"] for k, r in read_latest(out).latest.items()} == {
            KEY: "confirmed", "claims/x.py": "rejected", "claims/y.py": "rejected"}
    assert (tmp_path / "both0.jsonl").read_bytes() == (tmp_path / "both1.jsonl").read_bytes()


# --- real physverify processes at once, and killed at random moments --------------------------
def _physverify(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    from support.fixtures import clean_env

    return subprocess.Popen([sys.executable, "-m", "physverify", *args], cwd=cwd, env=clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _claims(root: Path, folder: str, count: int, body: str = DECAY_CLAIM) -> None:
    (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):  # each file its own claim text, so its own hash
        (root / folder / f"claim_{i}.py").write_text(body.replace("half the rate", f"half the rate ({folder} {i})"))


@pytest.mark.slow
def test_two_replays_and_a_confirm_appending_to_one_ledger_at_once_keep_every_line(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "decay.py").write_text(DECAY_SOLVER)
    _claims(root, "a", 10)
    _claims(root, "b", 10)
    init_repo(root)
    shared = root / "shared.jsonl"
    common = ("--trusted", "--record-all", "--ledger", str(shared), "--jobs", "2")
    running = [_physverify("replay", "a", *common, cwd=root), _physverify("replay", "b", *common, cwd=root)]
    confirms = 0
    while any(p.poll() is None for p in running) or confirms < 3:  # confirm runs while both replays write
        done = run_process("confirm", "a/claim_0.py", "--trusted", "--ledger", str(shared), cwd=root)
        assert done.returncode == 0, done.stderr
        confirms += 1
    assert [p.wait(timeout=300) for p in running] == [0, 0], [p.stderr.read() for p in running if p.stderr]
    read = read_ledger(shared)
    assert read.problems == []
    assert shared.read_bytes().count(b"\n") == len(read.records) == 20 + confirms
    keys = sorted(r["claim_key"] for r in read.records)
    assert keys == sorted([f"a/claim_{i}.py" for i in range(10)] + [f"b/claim_{i}.py" for i in range(10)]
                          + ["a/claim_0.py"] * confirms)
    assert {r["verdict"] for r in read.records} == {"rejected"}


_SLEEPY = DECAY_CLAIM.replace("def control():", "import time\n\n\ndef control():\n    time.sleep(0.15)")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_replays_killed_at_random_moments_leave_whole_lines_and_the_next_replay_judges_right(
    tmp_path: Path, sig: signal.Signals
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "decay.py").write_text(DECAY_SOLVER)
    _claims(root, "claims", 6, _SLEEPY)
    repo = init_repo(root)
    assert run_process("replay", "claims", "--trusted", "--jobs", "2", cwd=root).returncode == 0
    repo.index.add(["decay.py", "claims", LEDGER])
    repo.index.commit("every claim rejected")
    committed = (root / LEDGER).read_bytes()
    (root / "decay.py").write_text(DECAY_DEFECT)  # every run below finds six regressions to write
    rng = random.Random(1)
    for _ in range(4):
        proc = _physverify("replay", "claims", "--trusted", "--jobs", "2", "--record-all", cwd=root)
        time.sleep(rng.uniform(0.2, 1.5))
        proc.send_signal(sig)
        code = proc.wait(timeout=120)
        assert code in (-sig, 143, 1), (code, proc.stderr.read() if proc.stderr else b"")
        if proc.stderr:
            assert b"Traceback" not in proc.stderr.read()
            proc.stderr.close()
        data = (root / LEDGER).read_bytes()
        assert data.startswith(committed)
        read = read_ledger(root / LEDGER)
        assert read.problems == [] and data.endswith(b"\n")  # whole lines only, and each a record
        assert len(read.records) == data.count(b"\n") and (len(read.records) - 6) % 6 == 0  # a run's lines, all or none
    done = run_process("replay", "claims", "--trusted", "--jobs", "2", cwd=root)
    assert done.returncode == EXIT_FINDING, done.stdout + done.stderr
    assert sum(line.split()[:2] == ["confirmed", "regressed"] for line in done.stdout.splitlines()) == 6


# --- a change that edits the gate's memory itself -------------------------------------------
def _forged(root: Path) -> bytes:
    """The ledger with one more line: the claim's own line, its verdict forged to confirmed."""
    data = (root / LEDGER).read_bytes()
    line = next(json.loads(raw) for raw in data.splitlines() if json.loads(raw)["claim_key"] == KEY)
    return data + json.dumps(line | {"verdict": "confirmed", "reason": "forged"}).encode() + b"\n"


@pytest.mark.parametrize("edit", ["a forged confirmed line", "the ledger emptied", "the ledger deleted"])
@pytest.mark.parametrize("where", ["a pull request against its base", "a commit being made (pre-commit)"])
def test_a_change_that_edits_the_ledger_with_the_regression_still_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str, where: str
) -> None:
    """The committed ledger at the baseline is the gate's memory: the change under test cannot rewrite it."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    base = repo.head.commit.hexsha
    ledger = root / LEDGER
    if edit == "a forged confirmed line":
        ledger.write_bytes(_forged(root))
    elif edit == "the ledger emptied":
        ledger.write_bytes(b"")
    else:
        ledger.unlink()
    (root / "decay.py").write_text(DECAY_DEFECT)
    repo.git.add("-A")  # the edit and the regression staged together (git commit -a)
    if where == "a pull request against its base":
        repo.index.commit("bring the defect back and make the ledger forget")
        result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    else:
        result = replay.replay(["claims"], pre_commit=True, jobs=1, files=["decay.py", LEDGER])
    assert [(run.transition, run.baseline_verdict, run.verdict) for run in result.claims] == [
        (REGRESSED, "rejected", "confirmed")]
    assert result.exit_code == EXIT_FINDING


def test_a_change_that_only_forges_the_ledger_fails_so_it_cannot_become_the_next_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two steps: a change adds a forged confirmed line (its code unchanged, so it was judged "unchanged" and
    passed); merged, that line was the next change's baseline, and the regression there passed as "unchanged"."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    base = repo.head.commit.hexsha
    _commit_ledger(repo, root, _forged(root))  # step one: only the ledger changes
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True)
    [run] = result.claims
    assert (run.transition, run.verdict) == ("unchanged", "rejected")
    assert result.exit_code == EXIT_FINDING
    assert run.failures == ("the ledger this change commits says confirmed (its baseline says rejected), but this run "
                            "gives rejected: as the next baseline, that line would let a later run pass that fails now; "
                            "commit the line this run writes instead",)
    done = run_process("replay", "claims", "--trusted", "--jobs", "1", "--baseline", base, "--dry-run", cwd=root)
    assert done.returncode == EXIT_FINDING and "the ledger this change commits says confirmed" in done.stdout, done.stdout
    # step two, had step one been merged: judged against the forged line, the regression is "unchanged"
    (root / "decay.py").write_text(DECAY_DEFECT)
    second = replay.replay(["claims"], trusted=True, jobs=1, dry_run=True)
    assert [(r.transition, r.failures) for r in second.claims] == [("unchanged", ())]


@pytest.mark.parametrize("edit", ["the ledger deleted", "the ledger emptied", "the claim's lines dropped"])
@pytest.mark.parametrize("only_affected", [False, True])
def test_a_change_that_only_drops_the_ledgers_lines_fails_so_the_next_regression_cannot_pass_as_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str, only_affected: bool
) -> None:
    """Two steps: a change drops the claim's lines (its code unchanged: "unchanged", it passed); merged, the
    claim had no baseline line, so the next change's regression was "new: confirmed" and passed."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    (root / "claims" / "claim_other.py").write_text(DECAY_CLAIM.replace("half the rate", "half the rate (other)"))
    replay.replay(["claims"], trusted=True, jobs=1)
    repo.git.add("-A")
    base = repo.index.commit("a second claim").hexsha
    ledger = root / LEDGER
    if edit == "the ledger deleted":
        repo.index.remove([LEDGER], working_tree=True)
    else:
        kept = b"" if edit == "the ledger emptied" else b"".join(
            raw + b"\n" for raw in ledger.read_bytes().splitlines() if json.loads(raw)["claim_key"] != KEY)
        ledger.write_bytes(kept)
        repo.index.add([LEDGER])
    repo.index.commit("the ledger forgets")
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True,
                           changed_since=base if only_affected else None)
    failing = {run.key: run.failures for run in result.claims if run.failures}
    assert result.exit_code == EXIT_FINDING and KEY in failing, [(r.key, r.transition, r.failures) for r in result.claims]
    assert failing[KEY] == ("the ledger this change commits has no line for it (its baseline says rejected): as the "
                            "next baseline, that would let a later run pass that fails now; commit the ledger's lines "
                            "with the change",)
    if edit == "the claim's lines dropped":
        assert list(failing) == [KEY]  # the other claim keeps its line


def test_a_claim_renamed_with_its_old_line_kept_is_not_taken_for_a_dropped_line(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    base = repo.head.commit.hexsha
    repo.git.mv("claims/claim_decay.py", "claims/claim_decay_rate.py")
    (root / LEDGER).write_bytes((root / LEDGER).read_bytes() + b"\n")  # the ledger differs, its lines are all there
    repo.index.add([LEDGER])
    repo.index.commit("a clearer name")
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True)
    assert [(r.key, r.transition, r.failures) for r in result.claims] == [
        ("claims/claim_decay_rate.py", "unchanged", ())]


@pytest.mark.parametrize("edit", ["the ledger deleted", "the claim's line dropped"])
def test_the_hook_stops_a_commit_that_drops_the_ledgers_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            edit: str) -> None:
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    if edit == "the ledger deleted":
        repo.index.remove([LEDGER], working_tree=True)
    else:
        (root / LEDGER).write_bytes(b"")
        repo.index.add([LEDGER])
    result = replay.replay(["claims"], pre_commit=True, jobs=1, files=[LEDGER])
    [run] = result.claims
    assert run.failures == ("the staged ledger has no line for it (HEAD's says rejected): committed, that would let "
                            "a later run pass that fails now; stage the ledger's lines with the change",)
    assert result.exit_code == EXIT_FINDING


def test_the_forged_line_still_fails_when_the_action_judges_the_result_again_under_its_fail_on_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Action's `fail-on` input judges the result again (results.with_fail_on), in the sandbox from the JSON
    the run inside wrote: the failure of a forged line must come back from both, not only the transition's."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    base = repo.head.commit.hexsha
    _commit_ledger(repo, root, _forged(root))
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True)
    [failure] = result.claims[0].failures
    read_back = report_json.from_dict(report_json.to_dict(result), ledger=root / LEDGER)
    for judged in (result, read_back):
        again = results.with_fail_on(judged, frozenset({"regressed", "undecidable"}))
        assert again.exit_code == EXIT_FINDING and again.claims[0].failures == (failure,)
    assert results.with_fail_on(result, frozenset()).exit_code == 0  # a gate that fails nothing has nothing to mask


@pytest.mark.parametrize("staged", ["the regression's line", "the fix's line"])
def test_a_ledger_line_staged_without_its_code_stops_the_hook_and_is_left_as_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, staged: str
) -> None:
    """A hook-stopped `git commit -am` leaves its line in the working ledger and the code unstaged; the next
    commit of the ledger alone must not record a verdict the staged code does not give (the whole flow with
    the real pre-commit is in tests/commands/test_precommit.py)."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    if staged == "the fix's line":  # HEAD: the defect, confirmed; the fix is in the working tree only
        (root / "decay.py").write_text(DECAY_DEFECT)
        replay.replay(["claims"], trusted=True, jobs=1)
        repo.index.add(["decay.py", LEDGER])
        repo.index.commit("the defect is confirmed")
        fixed_or_not = DECAY_SOLVER
    else:
        fixed_or_not = DECAY_DEFECT
    (root / "decay.py").write_text(fixed_or_not)
    stopped = replay.replay(["claims"], pre_commit=True, jobs=1, files=["decay.py"])  # `git commit -am` stopped
    assert stopped.written == 1 and stopped.exit_code == EXIT_FINDING
    code = (root / "decay.py").read_bytes()
    repo.git.checkout("--", "decay.py")  # pre-commit runs the hook on what is staged: HEAD's code here
    repo.index.add([LEDGER])
    before = (root / LEDGER).read_bytes()
    result = replay.replay(["claims"], pre_commit=True, jobs=1, files=[LEDGER])
    [run] = result.claims
    wrote = "confirmed" if staged == "the regression's line" else "rejected"
    assert run.failures == (f"the staged ledger says {wrote} (HEAD's says {run.baseline_verdict}), but the staged code "
                            f"gives {run.verdict}: stage the code that line was written from, or take the line out "
                            "of the commit",)
    assert result.exit_code == EXIT_FINDING and not run.recorded and (root / LEDGER).read_bytes() == before
    (root / "decay.py").write_bytes(code)  # the code staged with its line: judged as the change it is
    repo.index.add(["decay.py"])
    result = replay.replay(["claims"], pre_commit=True, jobs=1, files=["decay.py", LEDGER])
    [run] = result.claims
    assert (run.transition, result.written) == ((REGRESSED, 0) if staged == "the regression's line" else ("fixed", 0))
    assert result.exit_code == (EXIT_FINDING if staged == "the regression's line" else 0)


def test_a_staged_ledger_that_holds_heads_lines_runs_nothing_more(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    (root / LEDGER).write_bytes((root / LEDGER).read_bytes() + b"\n")  # a blank line: the same latest lines
    repo.index.add([LEDGER])
    result = replay.replay(["claims"], pre_commit=True, jobs=1, files=[LEDGER])
    assert (result.claims, result.skipped, result.exit_code) == ((), (KEY,), 0)


@pytest.mark.parametrize("change", ["a fix with its line", "a fix without its line", "a line for a new claim",
                                    "nothing in the ledger"])
def test_honest_changes_to_the_ledger_pass_against_their_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              change: str) -> None:
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_DEFECT)  # confirmed at the base
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM)
    repo = init_repo(root)
    monkeypatch.chdir(root)
    assert [r.verdict for r in replay.replay(["claims"], trusted=True, jobs=1).claims] == ["confirmed"]
    repo.git.add("-A")
    base = repo.index.commit("the defect is confirmed").hexsha
    if change.startswith("a fix"):
        (root / "decay.py").write_text(DECAY_SOLVER)
        if change == "a fix with its line":
            replay.replay(["claims"], trusted=True, jobs=1)  # the pre-commit hook writes the fix's line
    elif change == "a line for a new claim":
        (root / "claims" / "claim_new.py").write_text(DECAY_CLAIM.replace("half the rate", "half the rate (new)"))
        replay.replay(["claims"], trusted=True, jobs=1)
    else:
        (root / "README").write_text("a change elsewhere\n")
    repo.git.add("-A")
    repo.index.commit(change)
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True)
    assert result.exit_code == 0, [(r.key, r.transition, r.failures) for r in result.claims]


# --- a read-only ledger, for root too -------------------------------------------------------
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
@pytest.mark.parametrize("command", ["replay", "confirm"])
def test_a_ledger_on_a_read_only_mount_is_refused_before_the_claim_runs(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        command: str) -> None:
    """chmod 444 does not stop root (tests/commands/test_cli.py skips there); a read-only bind of the file stops anyone."""
    from support.fixtures import clean_env

    _, root, _ = rejected_repository(tmp_path, monkeypatch)
    ledger = root / LEDGER
    before = ledger.read_bytes()
    marker = root / "ran"
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM.replace(
        "def control():", f"open({str(marker)!r}, 'w').close()\n\n\ndef control():"))
    args = ["replay", "claims", "--record-all"] if command == "replay" else ["confirm", "claims/claim_decay.py",
                                                                            "--ledger", LEDGER]
    done = subprocess.run(["bwrap", "--bind", "/", "/", "--ro-bind", str(ledger), str(ledger), "--dev", "/dev",
                           "--proc", "/proc", "--", sys.executable, "-m", "physverify", *args, "--trusted"],
                          cwd=root, env=clean_env(), capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 2 and done.stderr.startswith("bwrap:"):
        pytest.skip(f"bubblewrap cannot bind here: {done.stderr.strip()}")
    assert (done.returncode, done.stderr) == (2, f"physverify: {LEDGER}: the ledger is not writable\n")
    assert ledger.read_bytes() == before and not marker.exists()


def test_merge_counts_one_line_in_the_singular(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_line("rejected", "2026-01-02T10:00:00+00:00")) + "\n")
    done = run_process("ledger", "merge", "one.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "merged 1 ledger (1 line) into out.jsonl: 1 line, 0 exact duplicates dropped\n")


def test_a_forged_ledger_line_runs_its_claim_even_when_only_affected_claims_run(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A ledger edit touches no claim's inputs: with --changed-since the forged claim was skipped, and passed."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    base = repo.head.commit.hexsha
    (root / "claims" / "claim_other.py").write_text(DECAY_CLAIM.replace("half the rate", "half the rate (other)"))
    replay.replay(["claims"], trusted=True, jobs=1)
    repo.git.add("-A")
    base = repo.index.commit("a second claim").hexsha
    _commit_ledger(repo, root, _forged(root))
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, changed_since=base, dry_run=True)
    assert [(run.key, run.transition) for run in result.claims] == [(KEY, "unchanged")]  # the other one is skipped
    assert result.skipped == ("claims/claim_other.py",)
    assert result.exit_code == EXIT_FINDING and "the ledger this change commits says" in result.claims[0].failures[0]


# --- shards and renames ----------------------------------------------------------------------
def test_a_claim_renamed_into_another_shard_is_not_also_removed_from_its_old_one(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Each shard followed only its own claims' renames: the old key's shard reported it removed (and failed with
    fail_on: [removed]), so the merged shards disagreed with one unsharded run."""
    from physverify.gate.replay import in_shard

    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    (root / "claims" / "physverify.yaml").write_text("fail_on: [regressed, undecidable, removed]\n")
    repo.git.add("-A")
    base = repo.index.commit("removed claims fail too").hexsha
    new = next(f"claims/claim_moved_{i}.py" for i in range(100)
               if in_shard(f"claims/claim_moved_{i}.py", 1, 2) != in_shard(KEY, 1, 2))
    repo.git.mv(KEY, new)
    (root / "decay.py").write_text(DECAY_DEFECT)
    repo.git.add("-A")
    repo.index.commit("rename the claim, bring the defect back")
    whole = replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True)
    assert [(r.key, r.transition) for r in whole.claims] == [(new, REGRESSED)]
    shards = [replay.replay(["claims"], trusted=True, jobs=1, baseline=base, dry_run=True, shard=f"{k}/2") for k in (1, 2)]
    assert sorted((r.key, r.transition) for s in shards for r in s.claims) == [(new, REGRESSED)]
    assert sorted(s.exit_code for s in shards) == [0, EXIT_FINDING]


def test_a_byte_order_mark_in_the_middle_of_a_committed_ledger_keeps_its_line(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ledgers joined with cat, the second saved with a mark: json.loads refused that line, the claim was new."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    other = json.dumps({"claim_key": "claims/gone.py", "verdict": "rejected"}).encode() + b"\n"
    _commit_ledger(repo, root, other + b"\xef\xbb\xbf" + (root / LEDGER).read_bytes())
    result = _regression_fails(root)
    assert any(":2: a byte order mark in front of the line" in w for w in result.warnings), result.warnings
