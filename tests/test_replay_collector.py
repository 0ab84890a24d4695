"""replay keeps planning's long-lived objects out of the collector's full passes, and gives them back (issue 19)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo

from physverify import replay as replay_module
from physverify.replay import replay


def test_planning_freezes_as_it_goes_and_the_run_unfreezes_at_its_end(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    repository = init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    for name in ("a", "b", "c"):
        (root / "claims" / f"{name}_claim.py").write_text(DECAY_CLAIM)
    repository.git.add(".")
    repository.index.commit("claims")
    frozen: list[int] = []
    real_freeze = gc.freeze

    def freeze() -> None:
        frozen.append(len(frozen))
        real_freeze()

    monkeypatch.setattr(replay_module, "FREEZE_EVERY", 1)
    monkeypatch.setattr(gc, "freeze", freeze)
    assert gc.get_freeze_count() == 0
    result = replay([root / "claims"], trusted=True, dry_run=True, jobs=1)
    assert [run.key for run in result.claims] == ["claims/a_claim.py", "claims/b_claim.py", "claims/c_claim.py"]
    assert len(frozen) == 1 + 3  # before the baseline is read, then once per claim planned
    assert gc.get_freeze_count() == 0  # nothing stays out of the collector's sight after the run
    assert gc.isenabled()
