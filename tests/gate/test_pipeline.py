"""gate/pipeline.py, replay's planning (issue 19): discovery read ahead in a thread of its own; long-lived objects out of the collector's
full passes, and given back."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo

from physverify.gate import pipeline, replay as replay_module
from physverify.gate.replay import replay


def _committed(tmp_path: Path, *names: str) -> Path:
    """A committed repository with decay.py and one decay claim per name in claims/; returns its root."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    repository = init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    for name in names:
        (root / "claims" / f"{name}_claim.py").write_text(DECAY_CLAIM)
    repository.git.add(".")
    repository.index.commit("claims")
    return root


def test_planning_freezes_as_it_goes_and_the_run_unfreezes_at_its_end(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = _committed(tmp_path, "a", "b", "c")
    frozen: list[int] = []
    real_freeze = gc.freeze

    def freeze() -> None:
        frozen.append(len(frozen))
        real_freeze()

    monkeypatch.setattr(pipeline, "FREEZE_EVERY", 1)
    monkeypatch.setattr(gc, "freeze", freeze)
    assert gc.get_freeze_count() == 0
    result = replay([root / "claims"], trusted=True, dry_run=True, jobs=1)
    assert [run.key for run in result.claims] == ["claims/a_claim.py", "claims/b_claim.py", "claims/c_claim.py"]
    assert len(frozen) == 1 + 3  # before the baseline is read, then once per claim planned
    assert gc.get_freeze_count() == 0  # nothing stays out of the collector's sight after the run
    assert gc.isenabled()


def test_a_run_that_ends_with_an_error_gives_back_what_it_froze(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _committed(tmp_path, "a")

    def interrupted(*_: object) -> None:  # Ctrl-C as the run ends
        raise KeyboardInterrupt

    monkeypatch.setattr(replay_module, "write_lines", interrupted)
    assert gc.get_freeze_count() == 0
    with pytest.raises(KeyboardInterrupt):
        replay([root / "claims"], trusted=True, jobs=1)
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_its_own_objects_keeps_them_frozen(tmp_path: Path) -> None:
    """gc.freeze acts on the whole process: a program that froze its objects (a server before it forks) is left
    as it was, and the run freezes nothing of its own."""
    root = _committed(tmp_path, "a")
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        assert before > 0
        replay([root / "claims"], trusted=True, dry_run=True, jobs=1)
        # an object freed meanwhile leaves the frozen ones; a freeze of the run's own would add its objects,
        # an unfreeze would leave none
        assert 0 < gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()


def test_discovery_read_ahead_keeps_the_order_and_raises_its_error_in_the_consumer() -> None:
    def items() -> Iterator[int]:
        yield from range(500)
        raise OSError("discovery failed")

    ahead = pipeline.Ahead(items())  # type: ignore[arg-type]
    got = []
    try:
        for item in ahead:
            got.append(item)
    except OSError as exc:
        assert str(exc) == "discovery failed"
    else:
        raise AssertionError("the error was lost")
    assert got == list(range(500))


def test_discovery_read_ahead_stops_once_its_consumer_is_closed() -> None:
    produced: list[int] = []
    first = threading.Event()
    release = threading.Event()

    def items() -> Iterator[int]:
        for n in range(1000):
            produced.append(n)
            yield n
            if n == 0:
                first.set()
                release.wait(10)

    ahead = pipeline.Ahead(items())  # type: ignore[arg-type]
    assert first.wait(10)
    assert next(ahead) == 0
    ahead.close()  # the consumer is done: the thread stops at its next claim
    release.set()
    for thread in threading.enumerate():
        if thread.name == "physverify-discovery":
            thread.join(10)
    assert len(produced) <= 2


@pytest.mark.parametrize("where", ["load_baseline", "write_lines"])
def test_a_run_that_ends_with_an_error_stops_its_read_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            where: str) -> None:
    """Whether the baseline cannot be read or the run is interrupted later, discovery reads no further."""
    root = _committed(tmp_path, "a")
    closed: list[bool] = []

    class Watched(pipeline.Ahead):
        def close(self) -> None:
            closed.append(True)
            super().close()

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "Ahead", Watched)
    monkeypatch.setattr(replay_module, where, interrupted)
    with pytest.raises(KeyboardInterrupt):
        replay([root / "claims"], trusted=True, jobs=1)
    assert closed == [True]


def test_claims_start_running_while_later_ones_are_still_being_read() -> None:
    started = threading.Event()
    pulled_after_start: list[bool] = []

    def planned() -> Any:
        yield "first"
        pulled_after_start.append(started.wait(timeout=60))  # the first claim runs while this one is read
        yield "second"

    def run_one(item: Any) -> Any:
        if item == "first":
            started.set()
        return item

    assert pipeline.run_all(run_one, planned(), jobs=2) == ["first", "second"]
    assert pulled_after_start == [True]
