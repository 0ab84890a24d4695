"""``physverify run``: spec files' checks() as a plain check suite, no verdict rules.

Each spec file runs in its own fresh child (isolate.py, mode ``spec``), the same child
confirm uses, so an edit to the solver between two runs is always seen. The MCP tool
run_checks calls ``run_specs`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from physverify import isolate
from physverify.checks import ERROR, FAIL, INCONCLUSIVE, STATUSES
from physverify.verdict import EXIT_ERROR, EXIT_FINDING, EXIT_OK

DEFAULT_TIMEOUT_S = 600.0
_BAD = (FAIL, ERROR, INCONCLUSIVE)


@dataclass(frozen=True)
class SpecOutcome:
    """One spec file: its checks' ledger dicts, or why it could not be loaded."""

    path: str
    load_error: str | None
    checks: list[dict[str, Any]] = field(default_factory=list)
    stderr_tail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "load_error": self.load_error, "checks": self.checks, "stderr_tail": self.stderr_tail}


@dataclass(frozen=True)
class RunOutcome:
    specs: list[SpecOutcome]

    @property
    def exit_code(self) -> int:
        """2 when a spec could not load, 1 when a check is FAIL, ERROR or INCONCLUSIVE, else 0."""
        if any(spec.load_error is not None for spec in self.specs):
            return EXIT_ERROR
        if any(check["status"] in _BAD for spec in self.specs for check in spec.checks):
            return EXIT_FINDING
        return EXIT_OK

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for spec in self.specs:
            for check in spec.checks:
                counts[check["status"]] = counts.get(check["status"], 0) + 1
        counts["load errors"] = sum(spec.load_error is not None for spec in self.specs)
        return counts

    def summary(self) -> str:
        """``3 PASS, 1 FAIL, 1 load error in 2 spec files``: only the non-zero counts."""
        parts = [f"{n} {name}" if name != "load errors" or n != 1 else "1 load error" for name, n in self.counts().items() if n]
        files = f"{len(self.specs)} spec file" + ("" if len(self.specs) == 1 else "s")
        return f"{', '.join(parts) or 'no checks'} in {files}"

    def to_dict(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "counts": self.counts(), "specs": [s.to_dict() for s in self.specs]}


def run_specs(paths: Sequence[Path], *, timeout_s: float = DEFAULT_TIMEOUT_S, isolation: str | None = None) -> RunOutcome:
    """Run every spec file in its own child; a spec that is stopped at ``timeout_s`` is a load error."""
    from physverify.confirm import parse_timeout

    seconds = parse_timeout(timeout_s)
    return RunOutcome([_run_one(Path(path), seconds, isolation) for path in paths])


def _run_one(path: Path, timeout_s: float, isolation: str | None) -> SpecOutcome:
    if path.suffix != ".py":
        return SpecOutcome(str(path), f"{path}: a spec file must end in .py")
    if not path.is_file():
        return SpecOutcome(str(path), f"{path}: no such file")
    child = isolate.run_child("spec", path, timeout_s=timeout_s, isolation=isolation)
    if child.timed_out:
        return SpecOutcome(str(path), f"{path}: stopped after {timeout_s:g} s (timeout)", stderr_tail=child.stderr_tail)
    payload = child.payload or {}
    problem = payload.get("load_error") or child.failure()
    if problem is not None:
        return SpecOutcome(str(path), f"{path}: {problem}", stderr_tail=child.stderr_tail)
    return SpecOutcome(str(path), None, list(payload.get("checks") or []))
