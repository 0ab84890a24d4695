"""parsepool.py: many claim files parsed in worker processes read exactly as parsed here (issue 19, an empty cache).

Real worker processes; the batch threshold is lowered so a few files go through them.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo

from physverify.gate import cache, claim, parsepool, repo
from physverify.gate.discovery import candidates
from physverify.gate.replay import replay

# Contents that read in every way claim.py knows: loadable, load errors, unparsable, undecodable,
# values JSON carries only with care (a lone surrogate, inf), too deep, a helper without CLAIM.
CONTENTS: dict[str, bytes] = {
    "good.py": DECAY_CLAIM.encode(),
    "impact.py": DECAY_CLAIM.replace('"impact": "used"', '"impact": "uzed"').encode(),
    "syntax.py": b"CLAIM = {\n",
    "latin.py": b"CLAIM = {'text': '\xe9'}\n",
    "coding.py": b"# -*- coding: latin-1 -*-\nCLAIM = {'text': '\xe9'}\n",
    "surrogate.py": DECAY_CLAIM.replace('"impact": "used"', '"impact": "used", "text": "\\ud800"').encode(),
    "infinite.py": DECAY_CLAIM.replace('"line": ', '"line": 1e999 or ').encode(),
    "deep.py": b"CLAIM = {}\nx = " + b"-" * 2500 + b"1\n",
    "helper.py": b"import math\n\ndef reference_value():\n    return math.pi\n",
    "nul.py": b"CLAIM = {}\x00\n",
    "large.py": DECAY_CLAIM.encode() + b"# padding\n" * 8000,  # over MAX_CONTENT: parsed here
    "too_large.py": DECAY_CLAIM.encode() + b"#" * claim.MAX_CLAIM_BYTES,  # over 1 MiB: never parsed
}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    where = tmp_path / "claims"
    where.mkdir()
    for i in range(3):  # more files than contents: the same content twice is read twice
        for name, data in CONTENTS.items():
            (where / f"{i}_{name}").write_bytes(data)
    return where


@pytest.fixture()
def every_file_to_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsepool, "MIN_BATCH", 1)
    monkeypatch.setattr(claim, "_READINGS", claim.OrderedDict())  # nothing parsed here before


def _each(folder: Path, pool: parsepool.Pool, store: cache.Cache | None = None) -> list[claim.ClaimReading]:
    readings = cache.Readings(store, repo.Checkouts(), pool)
    found = list(readings.read_each(candidates(folder, ())))
    readings.close()
    return found


@pytest.mark.usefixtures("every_file_to_the_workers")
def test_files_parsed_in_the_workers_read_as_claim_read_reads_them(folder: Path, tmp_path: Path) -> None:
    pool = parsepool.Pool(2)
    found = _each(folder, pool)
    assert pool._all == [] and pool._threads is None  # used, then ended by close()
    expected = [claim.read(path) for path, _ in candidates(folder, ())]
    assert found == expected
    assert {r.problem is None for r in found} == {True, False}
    through_cache = _each(folder, parsepool.Pool(2), cache.Cache(tmp_path / "c"))  # and kept as it read
    assert through_cache == expected
    assert _each(folder, parsepool.Pool(0), cache.Cache(tmp_path / "c")) == expected


@pytest.mark.usefixtures("every_file_to_the_workers")
def test_a_worker_that_dies_costs_a_parse_here_never_a_reading(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = parsepool.Pool(2)
    assert pool._start()
    for worker in pool._all:  # both gone before the first batch
        os.kill(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait()
    found = _each(folder, pool)
    assert found == [claim.read(path) for path, _ in candidates(folder, ())]
    assert all(worker.dead for worker in pool._all) or pool._all == []


@pytest.mark.usefixtures("every_file_to_the_workers")
def test_a_worker_answer_that_is_not_a_reading_is_parsed_here(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [["not", "a", "reading"], None, [True, {"line": True}, None, [], []], [True, None, None, [[0]], []], 7]

    def nonsense(self: parsepool._Worker, items: list[tuple[str, bytes]]) -> list[object]:
        return [bad[i % len(bad)] for i in range(len(items))]

    monkeypatch.setattr(parsepool._Worker, "parse", nonsense)
    assert _each(folder, parsepool.Pool(2)) == [claim.read(path) for path, _ in candidates(folder, ())]


@pytest.mark.usefixtures("every_file_to_the_workers")
def test_a_replay_through_the_workers_gives_the_verdicts_of_one_without(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    for name, data in CONTENTS.items():
        (root / "claims" / name).write_bytes(data)
    monkeypatch.setenv("PHYSVERIFY_CACHE_DIR", "off")
    with_workers = replay([root / "claims"], trusted=True, dry_run=True, jobs=2)
    monkeypatch.setattr(parsepool, "MIN_BATCH", 10**9)
    without = replay([root / "claims"], trusted=True, dry_run=True, jobs=2)

    def seen(result: object) -> object:
        return [(run.key, run.verdict, run.transition) for run in result.claims], result.warnings  # type: ignore[attr-defined]

    assert seen(with_workers) == seen(without)
    assert {run.verdict for run in without.claims} >= {"rejected", "not decidable"}
