"""``physverify scan --claims DIR``: one claim template per finding, through ``confirm init --kind``'s templates.

An rk finding becomes an ``ode-order`` claim with the stepper's file, line and name, the
order it states and the reference filled; the other rules an ``identity`` claim (a value
against CODATA, a spacing against the grid, a round trip). The source is "physverify
scan". A scan finding is a suspicion: the person still writes the adapter and checks the
control, and ``physverify confirm`` gives the verdict. A file that is there is never
overwritten (the claim may be half filled in); it is named in a note instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from physverify.errors import PhysverifyError
from physverify.scan.findings import Finding, Note

SOURCE = "physverify scan"
_KIND = {"rk-order": "ode-order", "rk-consistency": "ode-order"}


def _name(finding: Finding) -> str:
    stem = Path(finding.file).stem
    what = finding.name or finding.rule
    return re.sub(r"[^A-Za-z0-9_]+", "_", f"scan_{stem}_{what}_{finding.line}").strip("_")[:100] + ".py"


def _repository_path(file: str, root: Path) -> str:
    """``file`` relative to the claims' repository root (POSIX), as CLAIM["file"] must be; as found if outside it."""
    try:
        return Path(os.path.abspath(file)).relative_to(root).as_posix()
    except ValueError:
        return file


def write(findings: Sequence[Finding], folder: Path) -> tuple[list[str], list[Note]]:
    """Write a template per finding into ``folder``; the paths written and a note for each one left alone."""
    from physverify.gate import templates
    from physverify.gate.repo import root_for

    if not findings:
        return [], []
    folder.mkdir(parents=True, exist_ok=True)
    root = root_for(folder.resolve()).resolve()
    written: list[str] = []
    notes: list[Note] = []
    for finding in findings:
        path = folder / _name(finding)
        filled: dict[str, str | int] = {"source": SOURCE, "reference": finding.reference or finding.rule}
        if finding.expected_order is not None:
            filled["expected_order"] = finding.expected_order
        try:
            templates.write_template(path, text=f"{finding.rule}: {finding.message}", file=_repository_path(finding.file, root),
                                     line=finding.line, kind=_KIND.get(finding.rule, "identity"), filled=filled)
        except PhysverifyError as exc:  # already there (never overwritten), or not writable: say so, go on
            notes.append(Note(path.as_posix(), str(exc)))
            continue
        written.append(path.as_posix())
    return written, notes
