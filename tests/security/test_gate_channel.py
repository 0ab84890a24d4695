"""The Action's gate decides from what physverify itself wrote, never from what a claim could (issue 37, items 1 and 7).

The step's ``run`` line is run locally in bash as the runner would (tests/test_action.py:
``_run_locally``), on a checkout whose committed ledger says a claim is rejected and whose
last commit puts its defect back: a regression, so the gate must fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_action import _run_locally, make_workspace

from physverify.action import SHARD_RESULT


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    return make_workspace(tmp_path, monkeypatch)


# --- the merge job's input ------------------------------------------------------------------
def _huge(path: Path) -> None:
    with open(path, "wb") as handle:  # sparse: past the size limit without writing it
        handle.truncate(300 * 1024 * 1024)


SHARD_FILES = {
    "nested": lambda path: path.write_bytes(b"[" * 200_000),
    "nested object": lambda path: path.write_bytes(b'{"claims": ' + b"[" * 200_000),
    "not UTF-8": lambda path: path.write_bytes(b'{"shard": "1/1", "claims": [], "x": "\xff\xfe"}'),
    "huge": _huge,
    "not an object": lambda path: path.write_bytes(b"[1, 2, 3]"),
    "a field of the wrong kind": lambda path: path.write_bytes(
        b'{"shard": "1/1", "claims": [{"location": "x.py:\\u00b2", "transition": "new"}]}'),
}


@pytest.mark.parametrize("kind", sorted(SHARD_FILES))
def test_a_bad_shard_result_is_one_line_and_gate_error(workspace: tuple[Path, str], tmp_path: Path,
                                                       kind: str) -> None:
    root, recorded = workspace
    downloads = tmp_path / "downloads" / "shard-1"
    downloads.mkdir(parents=True)
    SHARD_FILES[kind](downloads / SHARD_RESULT)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"merge-shards": str(tmp_path / "downloads")})
    assert ran["code"] == 2, ran["stdout"] + ran["stderr"]
    assert ran["outputs"] == {"gate": "error", "exit-code": "2"}
    errors = [line for line in ran["stdout"].splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and SHARD_RESULT in errors[0], ran["stdout"]
    assert "Traceback" not in ran["stderr"] and "this is a bug" not in ran["stdout"] + ran["stderr"]
    assert os.path.getsize(downloads / SHARD_RESULT) > 0  # nothing of it was changed
