"""``physverify run``: spec files' checks() as a plain check suite, no verdict rules.

Each spec file runs in its own fresh child (isolate.py, mode ``spec``), the same child
confirm uses, so an edit to the solver between two runs is always seen. The MCP tool
run_checks calls ``run_specs`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from physverify.isolation import isolate
from physverify.gate import affected
from physverify.gate.results import RunOutcome, SpecOutcome  # their home is results.py, with replay's

__all__ = ["DEFAULT_TIMEOUT_S", "RunOutcome", "SpecOutcome", "list_checks", "run_specs"]

DEFAULT_TIMEOUT_S = 600.0
def run_specs(paths: Sequence[Path], *, timeout_s: float = DEFAULT_TIMEOUT_S, isolation: str | None = None) -> RunOutcome:
    """Run every spec file in its own child; a spec that is stopped at ``timeout_s`` is a load error."""
    from physverify.gate.settings import parse_timeout

    seconds = parse_timeout(timeout_s)
    return RunOutcome([_run_one(Path(path), seconds, isolation) for path in paths])


def list_checks(path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S, isolation: str | None = None) -> SpecOutcome:
    """The spec file's checks, each as {"family", "label"}, in the order ``run_specs`` runs them; none is run."""
    from physverify.gate.settings import parse_timeout

    return _run_one(Path(path), parse_timeout(timeout_s), isolation, mode="list")


def _run_one(path: Path, timeout_s: float, isolation: str | None, mode: str = "spec") -> SpecOutcome:
    if path.suffix != ".py":
        return SpecOutcome(str(path), f"{path}: a spec file must end in .py")
    if not path.is_file():
        return SpecOutcome(str(path), f"{path}: no such file")
    from physverify.gate.settings import wait_limit

    resolved = path.resolve()
    child = isolate.run_child(mode, path, timeout_s=wait_limit(timeout_s), isolation=isolation,
                              outside_imports=lambda: affected.outside_of(resolved, resolved.parent))
    if child.timed_out:
        return SpecOutcome(str(path), f"{path}: stopped after {timeout_s:g} s (timeout)", stderr_tail=child.stderr_tail)
    payload = child.payload or {}
    problem = payload.get("load_error") or child.failure()
    if problem is not None:
        return SpecOutcome(str(path), f"{path}: {problem}", stderr_tail=child.stderr_tail)
    return SpecOutcome(str(path), None, list(payload.get("checks") or []))
