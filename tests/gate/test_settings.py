"""settings.py: one run's settings, flag over physverify.yaml over default; the values of issue 21, item 10."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from physverify.gate import settings
from physverify.gate.config import load_config
from physverify.errors import UsageError


def _folder(tmp_path: Path, yaml: str | None) -> Path:
    folder = tmp_path / "claims"
    folder.mkdir()
    if yaml is not None:
        (folder / "physverify.yaml").write_text(yaml)
    return folder


def test_a_flag_wins_over_the_file_and_the_file_over_the_default(tmp_path: Path) -> None:
    config = load_config(_folder(tmp_path, "timeout: 12\njobs: 3\nisolation: fresh\nledger: l.jsonl\n"))
    from_file = settings.resolve({}, config)
    assert (from_file.timeout_s, from_file.jobs, from_file.isolation) == (12.0, 3, "fresh")
    assert from_file.ledger == config.folder / "l.jsonl"
    assert from_file.sources["timeout_s"] == str(config.path)
    flagged = settings.resolve({"timeout_s": "7", "jobs": "1", "isolation": "fork", "ledger": "x.jsonl"}, config)
    assert (flagged.timeout_s, flagged.jobs, flagged.isolation, flagged.ledger) == (7.0, 1, "fork", Path("x.jsonl"))
    assert set(flagged.sources.values()) == {"flag", "default"}  # shard: not given anywhere


def test_without_a_file_each_option_has_its_default(tmp_path: Path) -> None:
    config = load_config(_folder(tmp_path, None))
    run = settings.resolve({}, config)
    assert run.timeout_s == settings.DEFAULT_TIMEOUT_S and run.jobs == (os.cpu_count() or 1)
    assert run.isolation is None and run.shard is None
    assert run.ledger == config.folder / "confirm_ledger.jsonl"


def test_isolation_for_a_folder_is_the_flag_or_that_folders_own(tmp_path: Path) -> None:
    first = load_config(_folder(tmp_path, "isolation: fresh\n"))
    other = load_config(tmp_path)  # no physverify.yaml: isolate.py's default
    assert settings.resolve({}, first).isolation_for(other) is None
    assert settings.resolve({"isolation": "fork"}, first).isolation_for(other) == "fork"


@pytest.mark.parametrize("value", ["1e10", 1e10, 10**12, "3e15"])
def test_a_large_timeout_is_accepted_and_every_wait_is_capped(value: object) -> None:
    seconds = settings.parse_timeout(value)
    assert seconds >= 1e10
    assert settings.wait_limit(seconds) == settings.MAX_WAIT_S < seconds


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon", "1e400", "1" + "0" * 400, 10**400, None])
def test_a_timeout_that_is_no_time_is_a_usage_error(value: object) -> None:
    with pytest.raises(UsageError, match="--timeout must be"):
        settings.parse_timeout(value)


@pytest.mark.parametrize("text", ["²/³", "1/" + "9" * 5000, "9" * 5000 + "/1", "1/1000000000", "0/3", "4/3", "a/b",
                                  "3", "/", "1/2/3", "١/٢"])
def test_a_shard_that_is_not_k_of_n_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--shard must be K/N"):
        settings.parse_shard(text)


def test_a_shard_k_of_n_is_read(tmp_path: Path) -> None:
    assert settings.parse_shard(" 2 / 3 ") == (2, 3)
    assert settings.parse_shard("999999999/999999999") == (999999999, 999999999)


@pytest.mark.parametrize("value", ["0", "-2", "two", "9" * 5000])
def test_jobs_must_be_a_whole_number_of_at_least_one(value: str) -> None:
    with pytest.raises(UsageError, match="--jobs must be"):
        settings.parse_jobs(value)


def test_the_sandbox_variables_are_read_in_one_place() -> None:
    assert settings.sandbox_repo({"PHYSVERIFY_REPO": "/repo"}) == Path("/repo")
    assert settings.sandbox_repo({"PHYSVERIFY_REPO": ""}) is None
    assert settings.sandbox_commit({"PHYSVERIFY_REPO_COMMIT": "abc"}) == "abc"
    source = Path(settings.__file__).parent
    readers = [p.name for p in source.rglob("*.py") if '"PHYSVERIFY_REPO"' in p.read_text(encoding="utf-8")]
    assert readers == ["settings.py"]
