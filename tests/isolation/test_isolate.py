"""isolate.py, the public door: choosing the mode, and both modes giving the same verdicts end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from physverify.isolation import isolate


def test_fork_is_the_default_on_linux_and_fresh_can_be_asked_for() -> None:
    assert isolate.resolve_isolation(None) == (isolate.FORK if sys.platform.startswith("linux") else isolate.FRESH)
    assert isolate.resolve_isolation("fresh") == isolate.FRESH
    with pytest.raises(ValueError, match="isolation must be one of fresh, fork"):
        isolate.resolve_isolation("thread")


def test_importing_physverify_does_not_import_numpy() -> None:
    code = "import sys, physverify; assert physverify.__version__; print('numpy' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "False"


REPO = Path(__file__).resolve().parents[2]


def _without_timings(record: dict[str, object]) -> dict[str, object]:
    """A ledger line minus its date and every check's seconds (the variant's too): what must not differ between modes."""
    kept = {k: v for k, v in record.items() if k != "date"}
    if isinstance(kept.get("variant"), dict):  # a claim that names its fix (issue 17)
        kept["variant"] = _without_timings(kept["variant"])  # type: ignore[arg-type]
    for key in ("control", "checks"):
        value = kept.get(key)
        if isinstance(value, dict):
            kept[key] = {k: v for k, v in value.items() if k != "seconds"}
        elif isinstance(value, list):
            kept[key] = [{k: v for k, v in item.items() if k != "seconds"} for item in value]
    return kept


@pytest.mark.parametrize(
    "claim_path",
    sorted((REPO / "claims").glob("*.py")) + sorted((REPO / "docs" / "examples" / "confirm").glob("claim_*.py")),
    ids=lambda p: p.name,
)
def test_this_projects_claims_and_the_worked_examples_get_the_same_verdict_in_both_modes(claim_path: Path) -> None:
    from physverify.gate import evaluate

    records = {
        mode: evaluate.evaluate(claim_path, timeout_s=300, isolation=mode).record for mode in isolate.ISOLATION_MODES
    }
    assert records["fresh"]["verdict"] is not None
    assert _without_timings(records["fresh"]) == _without_timings(records["fork"])


def test_a_40_claim_replay_writes_the_same_lines_and_exit_code_in_both_modes(tmp_path: Path) -> None:
    import json

    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo

    from physverify.gate import replay

    repo_root = tmp_path / "repo"
    (repo_root / "claims").mkdir(parents=True)
    (repo_root / "decay.py").write_text(DECAY_SOLVER)
    for i in range(40):
        text = DECAY_CLAIM.replace("_compare(1.0)", f"_compare({1.0 + i / 10})")
        if i % 10 == 3:  # some not decidable: a control that fails
            text = text.replace("_compare(0.0)", "Result(FAIL, 'control fails on purpose')")
        if i % 10 == 7:  # and some that cannot load
            text = text.replace("import decay\n", "import decay\nimport module_nobody_installed\n")
        (repo_root / "claims" / f"claim_{i:02d}.py").write_text(text)
    repo = init_repo(repo_root)
    repo.index.add(["decay.py", *[f"claims/claim_{i:02d}.py" for i in range(40)]])
    repo.index.commit("claims")
    results = {}
    for mode in isolate.ISOLATION_MODES:
        ledger_path = tmp_path / f"{mode}.jsonl"
        result = replay.replay([repo_root / "claims"], ledger=ledger_path, trusted=True, jobs=2, isolation=mode)
        lines = [_without_timings(json.loads(line)) for line in ledger_path.read_text().splitlines()]
        results[mode] = (result.exit_code, [run.verdict for run in result.claims], lines)
    assert results["fresh"] == results["fork"]
    assert len(results["fork"][2]) == 40 and {"rejected", "not decidable"} <= set(results["fork"][1])


def test_physverify_yaml_chooses_the_mode_and_the_flag_overrides_it(tmp_path: Path) -> None:
    import json

    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER

    from physverify.gate import replay

    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "decay.py").write_text(DECAY_SOLVER)
    # the check's message names the program that started the child: the fork server, or physverify itself
    (claims / "claim_parent.py").write_text(
        DECAY_CLAIM.replace(
            'f"{got:.6g} against {want:.6g}"', 'open(f"/proc/{os.getppid()}/cmdline").read().replace("\\\\0", " ")'
        ).replace("import math\n", "import math\nimport os\n", 1)
    )
    (claims / "physverify.yaml").write_text("isolation: fresh\n")
    parents = {}
    for flag in (None, "fork"):
        ledger_path = tmp_path / f"{flag}.jsonl"
        replay.replay([claims], ledger=ledger_path, trusted=True, isolation=flag)
        parents[flag] = json.loads(ledger_path.read_text())["checks"][0]["message"]
    assert "physverify.isolation.forkserver" not in parents[None] and "physverify.isolation.forkserver" in parents["fork"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("isolation: thread\n", "isolation must be fresh or fork, not 'thread'"),
        ("preload: scipy\n", "preload must be a list"),
    ],
)
def test_a_bad_isolation_or_preload_in_physverify_yaml_is_a_config_error(
    tmp_path: Path, text: str, message: str
) -> None:
    from physverify.gate.config import load_config
    from physverify.errors import ConfigError

    (tmp_path / "physverify.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path)
