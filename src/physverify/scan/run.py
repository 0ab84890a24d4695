"""``physverify scan PATH ...``: read Python files statically, run nothing, and list the suspects.

scan = the files under each PATH (walk.py) -> each read once and judged by every rule
(reading.py) -> silenced by a comment on the finding's line or by physverify.yaml's
``ignore`` (ignore.py) -> a ``ScanResult``. The command line, the Action, the pre-commit
hook and the MCP tool all call ``scan`` and render what it returns.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from physverify.gate.config import Config, load_config
from physverify.errors import UsageError
from physverify.scan import ignore, reading, walk
from physverify.scan.claims import write as write_claims
from physverify.scan.findings import Finding, Note, ScanResult

DEFAULT_CONFIG_DIR = "claims"


def scan(paths: Sequence[str], *, config_dir: str | None = None, claims: Path | None = None,
         confine: Path | None = None, jobs: int | None = 1) -> ScanResult:
    """The findings, notes and silenced findings of every Python file under ``paths``; with ``claims``, a claim
    template per finding (silenced ones and suggestions excepted) written into that folder. With ``confine`` (the MCP
    server's project root), a file whose link leads outside it is not read. ``jobs``: worker processes for a
    large tree (None: one per core, up to four), each reading its own files; the result is the same."""
    if not paths:
        raise UsageError("scan: name at least one file or folder to read")
    gone = walk.missing(list(paths))
    if gone:
        raise UsageError(f"scan: {gone[0]}: no such file or folder")
    config = _config(config_dir)
    root = _root(config)
    files = [file for path in paths for file in walk.files_under(path, confine)]
    findings: list[Finding] = []
    silenced: list[Finding] = []
    notes: list[Note] = []
    for found, file_notes in _read_all(files, config, root, jobs):
        notes += file_notes
        for finding in found:
            (silenced if finding.silenced is not None else findings).append(finding)
    count = len(files)
    written: list[str] = []
    if claims is not None:
        written, claim_notes = write_claims([f for f in findings if not f.informational], claims)
        notes += claim_notes
    return ScanResult(findings=tuple(findings), notes=tuple(notes), files=count, silenced=tuple(silenced),
                      claims_written=tuple(written))


_CHUNK = 250  # files per task: large enough that a task's round trip is a small part of its reading
MAX_JOBS = 4


def _read_all(files: list[str], config: Config | None, root: Path | None,
              jobs: int | None) -> Iterator[tuple[list[Finding], list[Note]]]:
    """Each file's findings and notes, in order: in this process, or for a large tree in forked workers.

    The workers are forks of this process, which holds no thread here (the command line's
    scan), so nothing is re-imported and no lock is copied held; each reads its own files.
    """
    workers = _workers(jobs, len(files))
    if workers <= 1:
        yield from (_one(file, config, root) for file in files)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunks = [files[i:i + _CHUNK] for i in range(0, len(files), _CHUNK)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for results in pool.map(_read_chunk, chunks, [config] * len(chunks), [root] * len(chunks)):
            yield from results


def _workers(jobs: int | None, count: int) -> int:
    if jobs is not None:
        return jobs
    if count < 2 * _CHUNK:
        return 1  # a worker's start costs more than reading a few hundred files
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_JOBS)


def _read_chunk(files: list[str], config: Config | None, root: Path | None) -> list[tuple[list[Finding], list[Note]]]:
    return [_one(file, config, root) for file in files]


def _config(config_dir: str | None) -> Config | None:
    folder = Path(config_dir if config_dir is not None else DEFAULT_CONFIG_DIR)
    return load_config(folder) if folder.is_dir() else None


def _root(config: Config | None) -> Path | None:
    if config is None or not config.ignore:
        return None
    from physverify.gate.repo import root_for

    return root_for(config.folder).resolve()


def _one(file: str, config: Config | None, root: Path | None) -> tuple[list[Finding], list[Note]]:
    data = walk.read_bytes(file, reading.MAX_BYTES)
    if isinstance(data, str):
        return [], [Note(file, data)]
    found, notes = reading.read(data, file)
    lines = data.splitlines() if found else []  # split once, and only for a file with findings
    result = []
    for finding in found:
        finding, note = ignore.by_comment(finding, lines)
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
