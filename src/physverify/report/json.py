"""JSON output of a replay (every ledger object plus its transition and baseline), and its reader.

``from_dict`` reads the document back into a ReplayResult: the Action runs replay
inside the sandbox and renders the result it reads back in every other format.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physverify.text import dumps

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult


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
        evidence=run.evidence,
        ledger_committed=run.committed,
        ledger_staged=run.staged,
        run_seconds=run.seconds,
    )
    if run.record is None and run.baseline is not None:  # removed: what the renderers say of it is its last line
        body["baseline_record"] = dict(run.baseline)
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


# The fields claim_object adds to each ledger object; the rest is the ledger object itself.
REPLAY_FIELDS = ("transition", "baseline_verdict", "baseline_date", "expected", "gate_failures", "location",
                 "recorded", "evidence", "baseline_record", "ledger_committed", "ledger_staged", "run_seconds")


def _baseline(obj: Mapping[str, object], before: str | None) -> Mapping[str, Any] | None:
    """The baseline line: a removed claim's whole last line (its text and evidence), else its verdict and date."""
    record = obj.get("baseline_record")
    if isinstance(record, Mapping):
        return dict(record)
    return None if before is None else {"verdict": before, "date": obj.get("baseline_date")}


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def from_dict(data: Mapping[str, object], *, ledger: Path) -> ReplayResult:
    """The ReplayResult that ``to_dict`` gave as ``data`` (its ledger path replaced by ``ledger``)."""
    from physverify.gate.results import ReplayResult

    claims = data.get("claims")
    return ReplayResult(
        claims=tuple(claim_run(c) for c in claims if isinstance(c, Mapping)) if isinstance(claims, list) else (),
        skipped=_strings(data.get("skipped")), ledger=ledger, written=_number(data.get("written")),
        fail_on=frozenset(_strings(data.get("fail_on"))), exit_code=_number(data.get("exit_code")),
        warnings=_strings(data.get("warnings")), notes=_strings(data.get("notes")),
        baseline_ref=_text(data.get("baseline_ref")), shard=_text(data.get("shard")),
    )


def claim_run(obj: Mapping[str, object]) -> ClaimRun:
    """The ClaimRun that ``claim_object`` gave as ``obj``."""
    from physverify.gate.rules import REMOVED
    from physverify.gate.results import ClaimRun

    place, _, line = str(obj.get("location") or "").rpartition(":")
    target, number = (place, int(line)) if place and line.isdigit() else (str(obj.get("location")), None)
    before = _text(obj.get("baseline_verdict"))
    transition = str(obj.get("transition"))
    return ClaimRun(
        key=str(obj.get("claim_key")), transition=transition, verdict=_text(obj.get("verdict")),
        baseline_verdict=before,
        record=None if transition == REMOVED else {k: v for k, v in obj.items() if k not in REPLAY_FIELDS},
        baseline=_baseline(obj, before),
        expected=_text(obj.get("expected")), failures=_strings(obj.get("gate_failures")),
        target=target, line=number, recorded=bool(obj.get("recorded")),
        committed=_text(obj.get("ledger_committed")), staged=_text(obj.get("ledger_staged")),
        seconds=_seconds(obj.get("run_seconds")),
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None
