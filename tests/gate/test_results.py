"""results.py: the result types the reports render, and the one gate exit rule (issue 19)."""

from __future__ import annotations

import ast
from pathlib import Path

from physverify.gate import replay, results
from physverify.gate.results import ClaimRun, ReplayResult
from physverify.verdict import CONFIRMED, NOT_DECIDABLE, REJECTED, ExitCode


def _result(*runs: ClaimRun) -> ReplayResult:
    return ReplayResult(claims=runs, skipped=(), ledger=Path("l.jsonl"), written=0, fail_on=frozenset({"regressed"}),
                        exit_code=results.exit_code(runs))


def test_the_old_names_still_import_from_replay() -> None:
    assert replay.ClaimRun is ClaimRun and replay.ReplayResult is ReplayResult
    assert replay.gate_failures is results.gate_failures


def test_the_gate_exit_is_a_finding_when_a_claim_fails_it_or_the_hook_wrote() -> None:
    fine = ClaimRun("a.py", "unchanged", REJECTED, REJECTED, {"verdict": REJECTED}, {"verdict": REJECTED})
    failing = ClaimRun("b.py", "regressed", CONFIRMED, REJECTED, {"verdict": CONFIRMED}, {"verdict": REJECTED},
                       failures=("regressed",))
    assert results.exit_code([fine]) == ExitCode.OK
    assert results.exit_code([fine, failing]) == ExitCode.FINDING
    assert results.exit_code([fine], pre_commit=True, written=1) == ExitCode.FINDING


def test_judging_again_under_another_fail_on_changes_failures_and_exit() -> None:
    undecided = ClaimRun("c.py", "undecidable", NOT_DECIDABLE, REJECTED, {"verdict": NOT_DECIDABLE},
                         {"verdict": REJECTED})
    result = _result(undecided)
    assert result.exit_code == ExitCode.OK  # failures were not computed for it yet
    strict = results.with_fail_on(result, frozenset({"undecidable"}))
    assert strict.exit_code == ExitCode.FINDING and strict.claims[0].failures
    assert results.with_fail_on(strict, frozenset()).exit_code == ExitCode.OK


def test_no_report_format_imports_a_command() -> None:
    commands = {"physverify.gate.replay", "physverify.gate.evaluate", "physverify.commands.cli", "physverify.commands.action",
                "physverify.commands.mcp_server", "physverify.commands.run_specs", "physverify.commands.sandbox.run"}
    folder = Path(results.__file__).parent / "report"
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        names = {f"physverify.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and node.module == "physverify" for alias in node.names}
        assert not (imported | names) & commands, path.name
