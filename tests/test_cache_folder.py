"""cache.py: the folder itself is hostile ground (issue 37, items 4 to 6).

A planted entry saying a claim file "binds no CLAIM" took the claim out of the gate; a cache
folder another user could write was used without a word; pruning a folder that
PHYSVERIFY_CACHE_DIR named deleted the user's own files; a FIFO or /dev/zero in the folder hung
or flooded every replay. Real git repositories, real replays, the entries as physverify wrote
them, then edited as an attacker would: each test finds the files wherever the cache put them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, DECAY_SOLVER, clean_env, init_repo

from physverify.gate import claim
from physverify.gate.rules import REGRESSED
from physverify.gate.replay import replay
from physverify.verdict import EXIT_FINDING


@pytest.fixture()
def regressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository whose claim was rejected at HEAD (its line committed) and whose solver now has the defect, and
    the folder PHYSVERIFY_CACHE_DIR names, filled by the run that wrote that line."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    repository = init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "decay_claim.py").write_text(DECAY_CLAIM)
    (root / "claims" / "helper.py").write_text("RATE = 0.7\n")  # binds no CLAIM, truly
    for name in ("decay.py", "claims/decay_claim.py", "claims/helper.py"):  # older than the index: ids from it
        old = os.stat(root / name).st_mtime_ns - 10 * 10**9
        os.utime(root / name, ns=(old, old))
    repository.git.add("decay.py", "claims/decay_claim.py", "claims/helper.py")
    repository.index.commit("a claim")
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(folder))
    first = replay([root / "claims"], trusted=True, jobs=1, timeout_s=60)
    assert [r.verdict for r in first.claims] == ["rejected"]
    assert not [w for w in first.warnings if "cache of claim readings" in w]
    repository.git.add("claims/confirm_ledger.jsonl")
    repository.index.commit("its line")
    (root / "decay.py").write_text(DECAY_DEFECT)  # the defect is back: the gate must fail
    return root, folder


def _plant_no_claim(folder: Path, blob: str) -> int:
    """Make every entry kept for ``blob`` say the file binds no CLAIM; how many were changed."""
    changed = 0
    for path in folder.rglob("*.json"):
        data = json.loads(path.read_bytes())
        entries = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(entries, dict) or blob not in entries:
            continue
        entry = entries[blob]
        binds = entry.index(blob) + 2  # [written_ns,] key, sha256, binds, ...
        entry[binds], entry[binds + 1], entry[binds + 4] = False, None, []
        path.write_text(json.dumps(data))
        changed += 1
    return changed


def _blob(root: Path) -> str:
    return claim.git_blob_id((root / "claims" / "decay_claim.py").read_bytes())


@pytest.mark.parametrize("mode", [0o1777, 0o777, 0o770])
def test_a_folder_others_can_write_is_refused_with_one_warning_and_a_planted_entry_hides_no_claim(
    regressed: tuple[Path, Path], mode: int
) -> None:
    root, folder = regressed
    assert _plant_no_claim(folder, _blob(root)) >= 1
    os.chmod(folder, mode)  # as a shared /tmp folder is: anyone may have planted those entries
    result = replay([root / "claims"], trusted=True, jobs=1, timeout_s=60, dry_run=True)
    assert [(r.key, r.transition) for r in result.claims] == [("claims/decay_claim.py", REGRESSED)]
    assert result.exit_code == EXIT_FINDING
    warned = [w for w in result.warnings if "cache of claim readings" in w]
    assert len(warned) == 1 and f"{folder} can be written by" in warned[0] and "not safe" in warned[0], warned


def test_a_folder_of_another_user_is_refused(regressed: tuple[Path, Path]) -> None:
    root, folder = regressed
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    assert _plant_no_claim(folder, _blob(root)) >= 1
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)  # nobody's, mode 0700 kept: only its owner writes
    result = replay([root / "claims"], trusted=True, jobs=1, timeout_s=60, dry_run=True)
    assert [r.transition for r in result.claims] == [REGRESSED] and result.exit_code == EXIT_FINDING
    warned = [w for w in result.warnings if "cache of claim readings" in w]
    assert len(warned) == 1 and "belongs to another user (uid 65534)" in warned[0], warned


def test_an_entry_found_by_the_index_saying_no_claim_is_checked_against_the_bytes(regressed: tuple[Path, Path]) -> None:
    """In a folder that is the user's own (planted by a tool gone wrong, a restored backup): the file is read."""
    root, folder = regressed
    assert _plant_no_claim(folder, _blob(root)) >= 1
    result = replay([root / "claims"], trusted=True, jobs=1, timeout_s=60, dry_run=True)
    assert [(r.key, r.transition) for r in result.claims] == [("claims/decay_claim.py", REGRESSED)]
    assert result.exit_code == EXIT_FINDING and not result.warnings


def test_only_bytes_that_cannot_spell_the_name_vouch_for_a_kept_no_claim(regressed: tuple[Path, Path]) -> None:
    """The bytes vouch for "no CLAIM" (ASCII, no coding line, no such name): such a helper is not parsed again."""
    root, folder = regressed
    helper = (root / "claims" / "helper.py").read_bytes()
    reading = claim.StaticReading(False, None, None, (), ())
    assert claim.vouched(reading, helper)
    assert not claim.vouched(reading, DECAY_CLAIM.encode())
    assert not claim.vouched(reading, b"# -*- coding: utf-7 -*-\n+AEM-LAIM = {}\n")  # UTF-7 spells the name
    assert not claim.vouched(reading, "ＣＬＡＩＭ = {}\n".encode())  # NFKC makes the name of these letters


def test_a_shared_folder_keeps_every_file_of_the_users_own(regressed: tuple[Path, Path]) -> None:
    """PHYSVERIFY_CACHE_DIR naming a folder that holds the user's results: one replay deleted 2 of 8 10-MB files."""
    root, folder = regressed
    results = folder / "results"
    results.mkdir()
    mine = []
    for i in range(8):  # 80 MB of the user's JSON, older than anything physverify wrote
        path = results / f"run_{i}.json"
        path.write_bytes(b"[" + b"0," * (5 << 20) + b"0]")
        os.utime(path, ns=(i * 10**9, i * 10**9))
        mine.append(path)
    for name in ("shards", "packs", "noop"):  # folders of the names physverify uses, but the user's
        (folder / name).mkdir(exist_ok=True)  # (before physverify kept to a folder of its own, they were its)
        (folder / name / ("0" * 64 + ".json")).write_bytes(b"{}" * (1 << 20))
        os.utime(folder / name / ("0" * 64 + ".json"), ns=(0, 0))
        mine.append(folder / name / ("0" * 64 + ".json"))
    (root / "claims" / "decay_claim.py").write_text(DECAY_CLAIM + "\n# edited: a new entry to write\n")
    result = replay([root / "claims"], trusted=True, jobs=1, timeout_s=60)
    assert result.claims and not result.warnings
    assert all(path.is_file() for path in mine), [path for path in mine if not path.exists()]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a reading without a limit fails, not the machine


@pytest.mark.parametrize("kind", ["fifo shard", "pack linked to /dev/zero", "shard linked to /dev/zero"])
def test_a_fifo_or_dev_zero_in_the_cache_gives_one_warning_and_the_run_finishes(
    regressed: tuple[Path, Path], kind: str
) -> None:
    root, folder = regressed
    blob = _blob(root)
    files = [path for path in folder.rglob("*.json") if blob.encode() in path.read_bytes()]
    target = next(path for path in files if (path.parent.name == "packs") == kind.startswith("pack"))
    target.unlink()
    if not kind.startswith("pack"):  # only the shard to go on: the checkout's file of readings would answer first
        for path in files:
            if path.parent.name == "packs":
                path.unlink()
    if kind.startswith("fifo"):
        os.mkfifo(target)
    else:
        os.symlink("/dev/zero", target)
    command = [sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "1", "--dry-run"]
    done = subprocess.run(command, cwd=root, env=clean_env({"PHYSVERIFY_CACHE_DIR": str(folder)}),
                          capture_output=True, text=True, timeout=120, preexec_fn=_limited)
    assert done.returncode == EXIT_FINDING, done.stderr[-2000:]
    assert "regressed" in done.stdout
    warned = [line for line in (done.stdout + done.stderr).splitlines() if "cache of claim readings" in line]
    assert len(warned) == 1 and target.name in warned[0], warned
