"""cache.py: static readings kept by content; a cache that is stale, planted, broken or shared never changes a verdict.

Issue 19, item 3. Real git repositories in tmp_path and real replays; the cache folder is
each test's own (PHYSVERIFY_CACHE_DIR).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, clean_env, init_repo

from physverify.gate import cache, claim, repo
from physverify.gate.claim import StaticReading
from physverify.gate.replay import replay

LOADABLE = DECAY_CLAIM
BROKEN = DECAY_CLAIM.replace('"impact": "used"', '"impact": "uzed"')  # the same size: a load error
assert len(BROKEN) == len(LOADABLE)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A committed repository: decay.py and claims/decay_claim.py (rejected as it stands)."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    repository = init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "decay_claim.py").write_text(LOADABLE)
    for name in ("decay.py", "claims/decay_claim.py"):  # written a while before `git add`, as usual
        old = os.stat(root / name).st_mtime_ns - 10 * 10**9
        os.utime(root / name, ns=(old, old))
    repository.git.add("decay.py", "claims/decay_claim.py")  # git's own add: the index keeps each file's stat
    repository.index.commit("a claim")
    return root


def _read(path: Path, folder: Path) -> claim.ClaimReading:
    """One run's reading of ``path`` through a cache in ``folder`` (fresh checkouts, as a new run has), kept at its end."""
    readings = cache.Readings(cache.Cache(folder), repo.Checkouts())
    reading = readings.read(path)
    readings.close()
    return reading


def _entry_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def _shard_files(folder: Path) -> list[Path]:
    return sorted((folder / "shards").glob("*.json"))


def _verdicts(root: Path) -> dict[str, str | None]:
    result = replay([root / "claims"], trusted=True, dry_run=True, jobs=1)
    return {run.key: run.verdict for run in result.claims}


def test_a_reading_is_kept_by_content_and_found_through_the_index(project: Path, tmp_path: Path) -> None:
    path = project / "claims" / "decay_claim.py"
    first = _read(path, tmp_path / "c")
    assert first.problem is None and first.sha256 == claim.read(path).sha256
    (shard,) = _shard_files(tmp_path / "c")  # the content's entry, in the file of its key's first two digits
    assert list(json.loads(shard.read_text())["entries"]) == [first.blob]
    shutil.rmtree(tmp_path / "c" / "packs")  # found by its content alone, as another checkout of it would
    checkout = repo.Checkouts().for_folder(path.parent)
    assert checkout.blob_id(path) == first.blob  # git's id of the bytes, from the one index read
    again = _read(path, tmp_path / "c")
    assert again == first
    path.chmod(0o000)  # not opened at all now (root could still open it; the index decides first)
    try:
        assert _read(path, tmp_path / "c").sha256 == first.sha256
    finally:
        path.chmod(0o644)


def test_a_claim_edited_to_the_same_size_in_the_same_second_is_read_again(project: Path, tmp_path: Path) -> None:
    path = project / "claims" / "decay_claim.py"
    assert _read(path, tmp_path / "c").problem is None
    before = os.stat(path)
    with open(path, "r+", encoding="utf-8") as handle:  # in place: the same inode, the same size
        handle.write(BROKEN)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same modification time
    assert os.stat(path).st_size == before.st_size
    reading = _read(path, tmp_path / "c")
    assert reading.problem is not None and "uzed" in reading.problem
    assert reading.sha256 == claim.read(path).sha256 != claim.git_blob_id(LOADABLE.encode())


def test_a_racily_clean_index_entry_is_not_trusted(project: Path) -> None:
    path = project / "claims" / "decay_claim.py"
    checkout = repo.Checkouts().for_folder(path.parent)
    index = Path(checkout.repo.git_dir) / "index"
    seconds = os.stat(path).st_mtime_ns // 10**9
    os.utime(index, ns=(seconds * 10**9, seconds * 10**9))  # the index written in the file's own second
    assert checkout.blob_id(path) is None  # so the file is hashed itself


def test_an_entry_planted_for_another_content_is_never_used(project: Path, tmp_path: Path) -> None:
    path = project / "claims" / "decay_claim.py"
    folder = tmp_path / "c"
    store = cache.Cache(folder)
    # the loadable claim's entry, moved under the broken content's key in its shard: its own key gives it away
    _read(path, folder)
    (planted_from,) = _shard_files(folder)
    shard = json.loads(planted_from.read_text())
    (entry,) = shard["entries"].values()
    broken_blob = claim.git_blob_id(BROKEN.encode())
    target = store._shard_path(broken_blob[:2])
    target.write_text(json.dumps({**shard, "prefix": broken_blob[:2], "entries": {broken_blob: entry}}))
    assert store.get(broken_blob) is None
    # an entry that names the broken content but holds another file's hash and reading
    loadable = claim.read(path)
    forged = StaticReading(True, dict(loadable.claim or {}), None, loadable.imports, ())
    store.put(broken_blob, str(loadable.sha256), forged)
    path.write_text(BROKEN)  # modified against the index: read and hashed, so the hash must match
    reading = cache.Readings(store, repo.Checkouts()).read(path)
    assert reading.problem is not None and "uzed" in reading.problem
    forger = cache.Cache(folder)  # the same forged entry, written to its shard and read back by another run
    forger.put(broken_blob, str(loadable.sha256), forged)
    forger.flush()
    assert cache.Cache(folder).get(broken_blob) == (loadable.sha256, forged)
    reading = cache.Readings(cache.Cache(folder), repo.Checkouts()).read(path)
    assert reading.problem is not None and "uzed" in reading.problem


def test_an_entry_from_another_version_or_cut_short_is_ignored_and_replaced(project: Path, tmp_path: Path) -> None:
    path = project / "claims" / "decay_claim.py"
    folder = tmp_path / "c"
    _read(path, folder)
    shutil.rmtree(folder / "packs")  # only the shard to go on
    (shard_file,) = _shard_files(folder)
    data = json.loads(shard_file.read_text())
    ((key, entry),) = data["entries"].items()
    spoilt = [*entry[:4], {"line": True}, *entry[5:]]  # CLAIM holding a value it never can
    for bad in (json.dumps({**data, "physverify": "0.0.1"}), json.dumps({**data, "entries": {key: spoilt}}),
                json.dumps({**data, "entries": {key: entry[1:]}}), json.dumps({**data, "prefix": "zz"}),
                shard_file.read_text()[:40], "[]", '{"format": 1}'):
        shard_file.write_text(bad)
        store = cache.Cache(folder)
        assert store.get(key) is None
        assert len(store.problems) == 1 and "not valid" in store.problems[0]
    reading = _read(path, folder)
    assert reading == claim.read(path)
    again = json.loads(shard_file.read_text())
    assert again["entries"][key][1:] == entry[1:] and again == {**data, "entries": again["entries"]}  # a good one


def test_a_runs_entries_are_written_together_one_file_per_shard(tmp_path: Path) -> None:
    """10,000 claims read with an empty cache wrote 10,000 files (issue 19); now at most one per shard."""
    folder = tmp_path / "c"
    store = cache.Cache(folder)
    reading = StaticReading(True, {"file": "x.py", "line": 1}, None, ((0, "x", ()),), ("a note",))
    keys = [claim.git_blob_id(str(i).encode()) for i in range(600)]
    for key in keys:
        store.put(key, "1" * 64, reading)
        assert store.get(key) == ("1" * 64, reading)  # kept at once for this run
    assert not _entry_files(folder)  # nothing written before the run's end
    store.flush()
    assert len(_shard_files(folder)) == len({key[:2] for key in keys}) <= cache.SHARDS
    assert store.written == len(_shard_files(folder))
    other = cache.Cache(folder)
    assert all(other.get(key) == ("1" * 64, reading) for key in keys)
    assert not list(folder.rglob(".tmp-*"))


def test_the_cache_is_bounded_oldest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3 * cache.SHARDS)  # three entries a shard
    reading = StaticReading(True, None, "x", (), ())
    keys = [f"ab{i:038x}" for i in range(5)]  # one shard's
    for start, stop in ((0, 2), (2, 5)):  # two runs: the second merges with what the first wrote
        store = cache.Cache(tmp_path / "c")
        for i in range(start, stop):
            monkeypatch.setattr(cache, "_clock", lambda i=i: i * 10**9)
            store.put(keys[i], "0" * 64, reading)
        store.flush()
    store = cache.Cache(tmp_path / "c")
    assert [store.get(k) is not None for k in keys] == [False, False, True, True, True]


def test_the_folder_is_bounded_oldest_file_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)  # files here
    store = cache.Cache(tmp_path / "c")
    reading = StaticReading(True, None, "x", (), ())
    keys = [f"{i:02x}{i:038x}" for i in range(5)]  # one shard each
    for key in keys:
        store.put(key, "0" * 64, reading)
    store.flush()
    for i, key in enumerate(keys):
        os.utime(store._shard_path(key[:2]), ns=(i * 10**9, i * 10**9))
    store.prune()
    store = cache.Cache(tmp_path / "c")
    assert [store.get(k) is not None for k in keys] == [False, False, True, True, True]


def test_off_and_the_sandbox_use_no_cache(tmp_path: Path) -> None:
    assert cache.open_cache(env={"PHYSVERIFY_CACHE_DIR": "off"}) is None
    assert cache.open_cache(env={"PHYSVERIFY_REPO": "/repo"}) is None
    given = cache.open_cache(env={"PHYSVERIFY_CACHE_DIR": str(tmp_path)})
    assert given is not None and given.folder == tmp_path / cache.OWN_FOLDER  # its own folder in a shared one
    default = cache.open_cache(env={})
    assert default is not None and default.folder == cache.default_folder()


@pytest.mark.parametrize("kind", ["unwritable", "corrupt"])
def test_a_broken_cache_gives_the_verdicts_of_none_with_one_warning(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    (project / "claims" / "other.py").write_text(BROKEN)  # two claims: a rejected one and a load error
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", "off")
    expected = _verdicts(project)
    assert set(expected.values()) == {"rejected", "not decidable"}
    folder = tmp_path / "broken"
    if kind == "unwritable":
        folder.write_text("a file where the folder should be")
    else:
        monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(folder))
        _verdicts(project)  # fill it, then spoil every entry
        for entry in _entry_files(folder):
            entry.write_bytes(b"\x00garbage")
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", str(folder))
    result = replay([project / "claims"], trusted=True, dry_run=True, jobs=1)
    assert {run.key: run.verdict for run in result.claims} == expected
    warned = [w for w in result.warnings if "cache of claim readings" in w]
    assert len(warned) == 1


def test_runs_writing_one_cache_at_once_give_the_verdicts_of_none(project: Path, tmp_path: Path) -> None:
    for i in range(12):
        (project / "claims" / f"c{i:02d}.py").write_text(LOADABLE if i % 2 else BROKEN)
    env = clean_env({"PHYSVERIFY_CACHE_DIR": str(tmp_path / "shared")})
    command = [sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--dry-run", "--format", "json"]
    runs = [subprocess.Popen([*command, "--jobs", "2"], cwd=project, env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(3)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    off = subprocess.run(command, cwd=project, env={**env, "PHYSVERIFY_CACHE_DIR": "off"}, stdout=subprocess.PIPE,
                         text=True, timeout=300)

    def verdicts(text: str) -> dict[str, str]:
        return {c["claim_key"]: c["verdict"] for c in json.loads(text)["claims"]}

    assert all(verdicts(out) == verdicts(off.stdout) for out in outputs)
    assert not list((tmp_path / "shared").rglob(".tmp-*"))  # no temporary file left behind


def test_an_entry_of_the_checkouts_file_under_another_key_is_never_used(project: Path, tmp_path: Path) -> None:
    root = project
    (root / "claims" / "other.py").write_text(BROKEN)
    old = os.stat(root / "claims" / "other.py").st_mtime_ns - 10 * 10**9
    os.utime(root / "claims" / "other.py", ns=(old, old))
    git_repo = repo.Checkouts().for_folder(root).repo
    git_repo.git.add("claims/other.py")
    folder = tmp_path / "c"
    readings = cache.Readings(cache.Cache(folder), repo.Checkouts())
    good, bad = readings.read(root / "claims" / "decay_claim.py"), readings.read(root / "claims" / "other.py")
    readings.close()
    (pack_file,) = (folder / "packs").glob("*.json")
    pack = json.loads(pack_file.read_text())
    entries = pack["entries"]
    entries[bad.blob], entries[good.blob] = entries[good.blob], entries[bad.blob]  # each under the other's id
    pack_file.write_text(json.dumps(pack))
    for entry in _entry_files(folder):
        if entry.parent.name != "packs":
            entry.unlink()  # nothing but the swapped file to go on
    again = cache.Readings(cache.Cache(folder), repo.Checkouts())
    assert again.read(root / "claims" / "other.py") == bad
    assert again.read(root / "claims" / "decay_claim.py") == good


def test_the_index_listed_by_git_matches_gitpythons_reading_also_for_hostile_names(tmp_path: Path) -> None:
    """The index is read from `git ls-files --debug` (fast); every entry must equal GitPython's reading of it."""
    root = tmp_path / "project"
    root.mkdir()
    repository = init_repo(root)
    names = ["plain.py", "with space.py", "new\nline.py", "tab\there.py", "ünï cödé.py", "back\\slash.py",
             "  ctime: 1:2\n.py", "sub/deeper/x.py"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name!r}\n")
        old = os.stat(root / name).st_mtime_ns - 10 * 10**9  # older than the index: not racily clean
        os.utime(root / name, ns=(old, old))
    os.symlink("plain.py", root / "link.py")
    repository.git.add("--", *names, "link.py")
    repository.index.commit("odd names")
    opened = repo.open_repo(root)
    listed = repo._listed_entries(opened)
    assert listed is not None  # the listing was understood, not given up
    assert sorted(listed) == sorted(repo._gitpython_entries(opened))
    assert {name for name, *_ in listed} == {*names, "link.py"}
    checkout = repo.Checkouts().for_folder(root)
    assert checkout.blob_id(root / "new\nline.py") == claim.git_blob_id((root / "new\nline.py").read_bytes())
    assert checkout.blob_id(root / "link.py") is None  # a link's entry holds the link, not a file


def test_a_listing_of_the_index_in_a_form_not_expected_is_given_up(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    repository = init_repo(root)
    (root / "a.py").write_text("x = 1\n")
    repository.git.add("a.py")
    out = subprocess.run(["git", "ls-files", "--stage", "--debug", "-z"], cwd=root, capture_output=True,
                         check=True).stdout
    assert repo._LISTED.fullmatch(out)
    for changed in (out.replace(b"  size:", b"  bytes:"), out + b"extra", out[:-1]):
        assert not repo._LISTED.fullmatch(changed)  # so _listed_entries returns None and GitPython reads it


def test_a_cold_read_asks_the_cache_once_per_claim_and_reads_as_a_cache_less_read(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: the index's id is the bytes' own id here, so the miss is not asked again after the file is read;
    a cache folder holding nothing yet is not asked at all (nor is git's index read for it)."""
    path = project / "claims" / "decay_claim.py"
    asked: list[str] = []
    indexed: list[Path] = []
    real_get, real_blob_id = cache.Cache.get, repo.Checkout.blob_id

    def counted(self: cache.Cache, key: str) -> object:
        asked.append(key)
        return real_get(self, key)

    def looked_up(self: repo.Checkout, file: Path, key: str | None = None) -> str | None:
        indexed.append(file)
        return real_blob_id(self, file, key)

    monkeypatch.setattr(cache.Cache, "get", counted)
    monkeypatch.setattr(repo.Checkout, "blob_id", looked_up)
    (tmp_path / "empty").mkdir()
    (tmp_path / "c" / "shards").mkdir(parents=True)  # holds a shard folder (another content's entries, say)
    for folder, expected in ((tmp_path / "empty", []), (tmp_path / "c", [claim.git_blob_id(path.read_bytes())])):
        asked.clear()
        indexed.clear()
        readings = cache.Readings(cache.Cache(folder), repo.Checkouts())
        [reading] = list(readings.read_each([(path, path.resolve())]))
        readings.close()
        assert asked == expected and indexed == ([path] if expected else [])
        assert reading == claim.read(path) and reading.problem is None


def test_once_the_cache_holds_a_reading_it_is_found_through_the_index_without_opening_the_file(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The empty cache's shortcut (no index look-up) is taken only while the folder holds nothing."""
    path = project / "claims" / "decay_claim.py"
    folder = tmp_path / "c"
    readings = cache.Readings(cache.Cache(folder), repo.Checkouts())
    [first] = list(readings.read_each([(path, path.resolve())]))
    readings.close()
    shutil.rmtree(folder / "packs")  # only the shard holds it: found by the index's id
    opened: list[Path] = []
    real_contents = claim.contents

    def contents(file: Path) -> object:
        opened.append(file)
        return real_contents(file)

    monkeypatch.setattr(claim, "contents", contents)
    readings = cache.Readings(cache.Cache(folder), repo.Checkouts())
    [again] = list(readings.read_each([(path, path.resolve())]))
    readings.close()
    assert opened == [] and again == first
