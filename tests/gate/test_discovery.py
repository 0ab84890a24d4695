"""gate/discovery.py: which files under a claims folder are claims, and which folders a run is given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from physverify.errors import UsageError
from physverify.gate import claim, discovery

CLAIM = 'CLAIM = {"text": "a claim"}\n'


def test_discovery_skips_helpers_private_files_and_installed_code(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    for folder in ("sub", ".venv", "venv", "build", "__pycache__", "node_modules", ".hidden", "lib/site-packages"):
        (claims / folder).mkdir(parents=True)
    (claims / "a.py").write_text(CLAIM)
    (claims / "sub" / "b.py").write_text(CLAIM)
    (claims / "helpers.py").write_text("def control():\n    pass\n")  # no CLAIM: a helper
    (claims / "_private.py").write_text(CLAIM)
    (claims / "annotated.py").write_text("CLAIM: dict = {}\n")
    for trap in (".venv", "venv", "build", "__pycache__", "node_modules", ".hidden", "lib/site-packages"):
        (claims / trap / "x.py").write_text(CLAIM)
    found = [p.relative_to(claims).as_posix() for p in discovery.discover(claims)]
    assert found == ["a.py", "annotated.py", "sub/b.py"]
    assert [p.name for p in discovery.discover(claims, exclude=["sub/*", "annot*"])] == ["a.py"]


def test_a_fifo_named_like_a_claim_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "claim_00.py").write_text(CLAIM)
    os.mkfifo(tmp_path / "trap.py")
    assert [p.name for p in discovery.discover(tmp_path)] == ["claim_00.py"]


def test_read_claims_gives_each_claims_reading_in_path_order(tmp_path: Path) -> None:
    for name in ("b.py", "a.py", "helper.py"):
        (tmp_path / name).write_text(CLAIM if name != "helper.py" else "x = 1\n")
    readings = list(discovery.read_claims(tmp_path))
    assert [r.path.name for r in readings] == ["a.py", "b.py"]
    assert readings == [claim.read(tmp_path / "a.py"), claim.read(tmp_path / "b.py")]


def test_candidates_resolve_each_file_and_follow_a_link_to_its_target(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "target.py").write_text(CLAIM)
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "own.py").write_text(CLAIM)
    (folder / "linked.py").symlink_to(real / "target.py")
    found = discovery.candidates(folder, ())
    assert found == [(folder / "linked.py", (real / "target.py").resolve()), (folder / "own.py", (folder / "own.py").resolve())]


def test_only_the_named_claims_are_read(tmp_path: Path) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(CLAIM)
    read = discovery.claim_readings(tmp_path, (), lambda pairs: (claim.read(path) for path, _ in pairs),
                                    only={(tmp_path / "b.py").resolve()})
    assert [reading.path.name for reading, _ in read] == ["b.py"]


def test_a_folder_named_twice_or_inside_another_is_kept_once_in_the_order_given(tmp_path: Path) -> None:
    (tmp_path / "claims" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    claims = tmp_path / "claims"
    kept = discovery.claims_folders([tmp_path / "other", claims / "sub", claims, claims, Path(f"{claims}/./")])
    assert kept == [tmp_path / "other", claims]


def test_a_missing_folder_and_a_claim_file_are_usage_errors_naming_them(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such claims folder"):
        discovery.claims_folders([tmp_path / "missing"])
    (tmp_path / "claim.py").write_text(CLAIM)
    with pytest.raises(UsageError, match="physverify confirm"):
        discovery.claims_folders([tmp_path / "claim.py"])


def test_a_file_is_gone_when_missing_not_regular_or_no_longer_binding_claim(tmp_path: Path) -> None:
    (tmp_path / "kept.py").write_text(CLAIM)
    (tmp_path / "helper.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "fifo.py")
    assert not discovery.gone(tmp_path / "kept.py")
    assert all(discovery.gone(tmp_path / name) for name in ("helper.py", "fifo.py", "missing.py"))
    assert discovery.is_skipped_dir(".git") and discovery.is_skipped_dir("site-packages")
    assert not discovery.is_skipped_dir("claims")
