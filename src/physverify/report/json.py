"""JSON output of a replay: every ledger object plus its transition and baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from physverify.text import dumps

if TYPE_CHECKING:
    from physverify.replay import ClaimRun, ReplayResult


def claim_object(run: ClaimRun) -> dict[str, Any]:
    """The ledger object of ``run`` (the claim key alone when removed) with the replay's fields added."""
    body: dict[str, Any] = dict(run.record) if run.record is not None else {"claim_key": run.key, "verdict": None}
    body.update(
        transition=run.transition,
        baseline_verdict=run.baseline_verdict,
        baseline_date=run.baseline.get("date") if run.baseline is not None else None,
        expected=run.expected,
        gate_failures=list(run.failures),
        location=run.location,
        recorded=run.recorded,
    )
    return body


def to_dict(result: ReplayResult) -> dict[str, Any]:
    """The whole replay as plain JSON values."""
    return {
        "exit_code": result.exit_code,
        "gate_failed": result.gate_failed,
        "fail_on": sorted(result.fail_on),
        "baseline_ref": result.baseline_ref,
        "shard": result.shard,
        "ledger": str(result.ledger),
        "written": result.written,
        "counts": result.counts(),
        "skipped_unaffected": len(result.skipped),
        "skipped": list(result.skipped),
        "warnings": list(result.warnings),
        "notes": list(result.notes),
        "claims": [claim_object(run) for run in result.claims],
    }


def render(result: ReplayResult) -> str:
    """The replay as one indented JSON document."""
    return dumps(to_dict(result), indent=2)
