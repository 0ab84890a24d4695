"""``physverify scan PATH ...``: read Python files statically, run nothing, and list the suspects.

scan = the files under each PATH (walk.py) -> each read once and judged by every rule
(reading.py) -> silenced by a comment on the finding's line or by physverify.yaml's
``ignore`` (ignore.py) -> a ``ScanResult``. The command line, the Action, the pre-commit
hook and the MCP tool all call ``scan`` and render what it returns.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from physverify.config import Config, load_config
from physverify.errors import UsageError
from physverify.scan import ignore, reading, walk
from physverify.scan.claims import write as write_claims
from physverify.scan.findings import Finding, Note, ScanResult

DEFAULT_CONFIG_DIR = "claims"


def scan(paths: Sequence[str], *, config_dir: str | None = None, claims: Path | None = None,
         confine: Path | None = None) -> ScanResult:
    """The findings, notes and silenced findings of every Python file under ``paths``; with ``claims``, a claim
    template per finding (silenced ones and suggestions excepted) written into that folder. With ``confine`` (the MCP
    server's project root), a file whose link leads outside it is not read."""
    if not paths:
        raise UsageError("scan: name at least one file or folder to read")
    gone = walk.missing(list(paths))
    if gone:
        raise UsageError(f"scan: {gone[0]}: no such file or folder")
    config = _config(config_dir)
    root = _root(config)
    findings: list[Finding] = []
    silenced: list[Finding] = []
    notes: list[Note] = []
    count = 0
    for path in paths:
        for file in walk.files_under(path, confine):
            count += 1
            found, file_notes = _one(file, config, root)
            notes += file_notes
            for finding in found:
                (silenced if finding.silenced is not None else findings).append(finding)
    written: list[str] = []
    if claims is not None:
        written, claim_notes = write_claims([f for f in findings if not f.informational], claims)
        notes += claim_notes
    return ScanResult(findings=tuple(findings), notes=tuple(notes), files=count, silenced=tuple(silenced),
                      claims_written=tuple(written))


def _config(config_dir: str | None) -> Config | None:
    folder = Path(config_dir if config_dir is not None else DEFAULT_CONFIG_DIR)
    return load_config(folder) if folder.is_dir() else None


def _root(config: Config | None) -> Path | None:
    if config is None or not config.ignore:
        return None
    from physverify.repo import root_for

    return root_for(config.folder).resolve()


def _one(file: str, config: Config | None, root: Path | None) -> tuple[list[Finding], list[Note]]:
    data = walk.read_bytes(file, reading.MAX_BYTES)
    if isinstance(data, str):
        return [], [Note(file, data)]
    found, notes = reading.read(data, file)
    result = []
    for finding in found:
        finding, note = ignore.by_comment(finding, data)
        if note is not None:
            notes.append(note)
        if finding.silenced is None and config is not None and config.ignore:
            finding = ignore.by_config(finding, config.ignore, _relative(file, root))
        result.append(finding)
    return result, notes


def _relative(file: str, root: Path | None) -> str | None:
    if root is None:
        return None
    try:
        return Path(os.path.abspath(file)).relative_to(root).as_posix()
    except ValueError:
        return None
