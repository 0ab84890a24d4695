"""The gate's memory against a change that controls paths (issue 21, items 9 and 11).

The committed ledger at the baseline commit is what a claim is judged against. Each test
commits a claim recorded as rejected, then makes a change that brings its defect back AND
tries to make the gate forget: renaming the claim, moving the ledger in physverify.yaml, a
committed line with a byte that is not UTF-8, the ledger committed as a gitlink or a link.
The regression must still fail the gate (or the run must refuse, exit 2), never pass as new.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import git
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the shared fixtures module
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, run_process
from support.hostile import rejected_repository

from physverify.gate import replay
from physverify.errors import PhysverifyError
from physverify.gate.rules import REGRESSED
from physverify.gate.ledger import parse_ledger
from physverify.verdict import EXIT_ERROR, EXIT_FINDING

LEDGER = "claims/confirm_ledger.jsonl"


def _bring_back_the_defect(repo: git.Repo, root: Path) -> None:
    (root / "decay.py").write_text(DECAY_DEFECT)
    repo.index.add(["decay.py"])


def _only(result: replay.ReplayResult) -> replay.ClaimRun:
    assert len(result.claims) == 1, [(run.key, run.transition) for run in result.claims]
    return result.claims[0]


# --- renames --------------------------------------------------------------------------------
def test_a_claim_renamed_with_git_mv_is_judged_against_its_old_line(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, base = rejected_repository(tmp_path, monkeypatch)
    _bring_back_the_defect(repo, root)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM.replace("half the rate", "half the rate (moved)"))
    repo.index.add(["claims/claim_decay.py"])
    (root / "claims" / "moved").mkdir()
    repo.git.mv("claims/claim_decay.py", "claims/moved/claim_decay_renamed.py")  # renamed and edited: git sees it
    repo.index.commit("rename the claim and bring the defect back")
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    run = _only(result)  # the old key is followed, not reported as removed
    assert (run.key, run.transition, run.baseline_verdict) == ("claims/moved/claim_decay_renamed.py", REGRESSED, "rejected")
    assert result.exit_code == EXIT_FINDING
    assert any("renamed from claims/claim_decay.py" in w for w in result.warnings)


def test_a_claim_moved_without_git_is_found_by_its_content_hash(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, base = rejected_repository(tmp_path, monkeypatch)
    _bring_back_the_defect(repo, root)
    os.rename(root / "claims" / "claim_decay.py", root / "claims" / "claim_other_name.py")  # untracked: git sees no rename
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    run = _only(result)
    assert (run.key, run.transition) == ("claims/claim_other_name.py", REGRESSED)
    assert result.exit_code == EXIT_FINDING


def test_a_copied_claim_is_new_and_its_original_keeps_its_line(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Following renames must not give a copy the original's history: the original is still there."""
    repo, root, base = rejected_repository(tmp_path, monkeypatch)
    (root / "claims" / "claim_copy.py").write_text(DECAY_CLAIM)
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    assert {run.key: run.transition for run in result.claims} == {"claims/claim_copy.py": "new",
                                                                 "claims/claim_decay.py": "unchanged"}


# --- the ledger's place ---------------------------------------------------------------------
def test_moving_the_ledger_in_physverify_yaml_does_not_move_the_baseline(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, base = rejected_repository(tmp_path, monkeypatch, settings="ledger: kept.jsonl\n", ledger="claims/kept.jsonl")
    _bring_back_the_defect(repo, root)
    (root / "claims" / "physverify.yaml").write_text("ledger: fresh.jsonl\n")  # an empty place: every claim "new"
    repo.index.add(["claims/physverify.yaml"])
    repo.index.commit("move the ledger and bring the defect back")
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    run = _only(result)
    assert (run.transition, run.baseline_verdict) == (REGRESSED, "rejected") and result.exit_code == EXIT_FINDING
    assert result.ledger == Path("claims/fresh.jsonl")  # the run writes where the working settings say
    assert json.loads((root / "claims" / "fresh.jsonl").read_text())["verdict"] == "confirmed"
    assert any("in claims/kept.jsonl, where that commit's physverify.yaml or pyproject.toml keeps it" in w for w in result.warnings)


def test_adding_a_physverify_yaml_that_moves_the_ledger_keeps_the_default_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, root, base = rejected_repository(tmp_path, monkeypatch)
    _bring_back_the_defect(repo, root)
    (root / "claims" / "physverify.yaml").write_text("ledger: elsewhere.jsonl\n")
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    assert _only(result).transition == REGRESSED


# --- the committed bytes ----------------------------------------------------------------------
def test_a_committed_line_with_a_byte_that_is_not_utf8_still_holds_the_verdict(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    ledger = root / LEDGER
    line = ledger.read_bytes()
    assert line.count(b'"reason": "') == 1
    ledger.write_bytes(line.replace(b'"reason": "', b'"reason": "\xff'))  # one byte that is not UTF-8
    repo.index.add([LEDGER])
    base = repo.index.commit("a ledger line with a stray byte").hexsha
    _bring_back_the_defect(repo, root)
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    run = _only(result)
    assert (run.transition, run.baseline_verdict) == (REGRESSED, "rejected")
    assert any("not UTF-8 text; read with each bad byte as U+FFFD" in w for w in result.warnings)


def _commit_ledger_as(repo: git.Repo, mode: str, sha: str) -> None:
    """Commit the ledger's path as a tree entry of ``mode`` pointing at ``sha``; the working file stays."""
    repo.git.rm("--cached", "--quiet", LEDGER)
    repo.git.update_index("--add", "--cacheinfo", f"{mode},{sha},{LEDGER}")
    repo.git.commit("--quiet", "--no-verify", "-m", f"the ledger as mode {mode}")


@pytest.mark.parametrize(("mode", "kind"), [("160000", "a gitlink"), ("120000", "a symbolic link")])
def test_a_ledger_committed_as_a_gitlink_or_a_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              mode: str, kind: str) -> None:
    repo, root, base = rejected_repository(tmp_path, monkeypatch)
    _bring_back_the_defect(repo, root)
    target = base  # a gitlink names a commit (here one of this repository's own)
    if mode == "120000":  # a link's blob holds its target path: read as a ledger, it has no line
        (tmp_path / "link-target").write_text("../elsewhere.jsonl")
        target = repo.git.hash_object("-w", str(tmp_path / "link-target"))
    _commit_ledger_as(repo, mode, target)
    with pytest.raises(PhysverifyError, match=f"claims/confirm_ledger.jsonl@HEAD: is {kind} in that commit, not a file"):
        replay.replay(["claims"], trusted=True, jobs=1)
    done = run_process("replay", "claims", "--trusted", "--jobs", "1", cwd=root)
    assert done.returncode == EXIT_ERROR and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"physverify: claims/confirm_ledger.jsonl@HEAD: is {kind}")


# --- a large committed ledger (item 11) -----------------------------------------------------
def test_a_200000_line_committed_ledger_gives_the_latest_verdict_and_one_new_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not timed (benchmarks/scale_bench.py measures it): the streamed reading must give the same answer."""
    repo, root, _ = rejected_repository(tmp_path, monkeypatch)
    ledger = root / LEDGER
    real = ledger.read_bytes()
    record = json.loads(real)
    earlier = []
    for i in range(200_000 - 1):  # older runs, the claim confirmed then, and runs of other claims
        key = "claims/claim_decay.py" if i % 2 else f"claims/gone_{i % 1000}.py"
        earlier.append(json.dumps({"ledger_version": 1, "date": f"2020-01-01T00:00:{i % 60:02d}+00:00",
                                   "claim_file": key, "claim_key": key, "verdict": "confirmed"}).encode())
    earlier[1000] = earlier[1000][:-1] + b', "note": broken}'  # a bad line, superseded by later ones
    real = real.rstrip(b"\n")[:-1] + b', "note": "\xff"}\n'  # and a stray byte in the line that counts
    ledger.write_bytes(b"\n".join(earlier) + b"\n" + real)
    committed = ledger.read_bytes()
    repo.index.add([LEDGER])
    base = repo.index.commit("200,000 lines").hexsha
    _bring_back_the_defect(repo, root)
    result = replay.replay(["claims"], trusted=True, jobs=1, baseline=base)
    run = _only(result)  # the gone_* claims never existed at the base commit: not reported as removed
    assert (run.transition, run.baseline_verdict, run.baseline["date"]) == (REGRESSED, "rejected", record["date"])
    # the full reader's warnings, the superseded bad line's too (issue 19: it no longer goes unreported)
    assert result.warnings == tuple(parse_ledger(committed, f"claims/confirm_ledger.jsonl@{base}").problems)
    assert [warning.split(": ", 1)[0].rsplit(":", 1)[1] for warning in result.warnings] == ["1001", "200000"]
    assert len(ledger.read_bytes().splitlines()) == 200_001  # one line added, none lost
    assert json.loads(ledger.read_bytes().splitlines()[-1])["verdict"] == "confirmed"
