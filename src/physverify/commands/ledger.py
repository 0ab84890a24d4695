"""``physverify ledger log | show | merge``: the ledger's commands over its storage (gate/ledger.py).

log and show read one ledger and return its rows or a claim's latest line; merge joins the
ledgers of several runs (a CI matrix's shards) into a new file. What they return is defined
with the storage, so the formats in report/ render it without importing a command.
"""

from __future__ import annotations

import heapq
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from physverify.errors import PhysverifyError
from physverify.files import NO_WAIT
from physverify.gate import ledger
from physverify.text import visible


def log(path: Path, claim: str | None = None, folder: Path | None = None) -> ledger.LogResult:
    """Return the ledger's rows (one per line), only the given claim's when ``claim`` is set (``claim_keys``)."""
    read = ledger.read_ledger(path)
    return ledger.LogResult(ledger.log_rows(read.records, ledger.claim_keys(claim, folder)), read.problems, claim)


def show(path: Path, claim: str, folder: Path | None = None) -> ledger.ShowResult:
    """The latest line for ``claim`` (as given or relative to its repository, ``claim_keys``); PhysverifyError when none."""
    read = ledger.read_ledger(path)
    keys = ledger.claim_keys(claim, folder) or set()
    found = [r for r in read.records if ledger.record_key(r) in keys]
    if not found:
        raise PhysverifyError(f"{path}: no line for the claim {claim}")
    return ledger.ShowResult(found[-1], read.problems)


def merge(inputs: Sequence[Path], output: Path, *, now: datetime | None = None) -> ledger.MergeResult:
    """Join ledgers into ``output``: date order, exact duplicates once, bad lines kept at the end.

    The order does not depend on the order of ``inputs`` (a CI matrix finishes in any
    order): lines interleave by date, then by their bytes, and each input's own lines keep
    their order (``_interleave``), so every claim's latest line is the one its ledger gave.
    A line that is not a valid record is reported and copied after the good ones,
    so no line is lost. ``output`` must not exist yet: overwriting it would drop its lines.

    A shard's ledger comes from a job that ran code under test (issue 21, item 8): an input
    that is a link or not a regular file, or that holds no ledger record at all (``/etc/shadow``
    under a shard's name), is refused before anything is written. A line dated after the
    merge time (``now``, default the clock) is reported and sorted with the undated lines,
    first, so a line dated 9999 never becomes a claim's latest verdict over a real run.
    """
    _check_merge_paths(inputs, output)
    moment = now if now is not None else datetime.now(timezone.utc)
    lines = [(path, _merge_input(path)) for path in inputs]  # a list: the same input twice counts twice
    future: list[str] = []
    sequences: list[list[tuple[Any, ...]]] = []  # each input's good lines, in its own order: (date..., bytes)
    for path, path_lines in lines:
        sequence = []
        for line in path_lines:
            if line.record is not None:
                date = _date_key(line.record.get("date"))
                if date[0] and date[1] > moment:
                    future.append(f"{path}:{line.number}: dated {visible(str(line.record.get('date')))[:40]}, after "
                                  f"the merge time {moment.isoformat(timespec='seconds')}; sorted first, with the "
                                  "undated lines, so it never outranks a real run")
                    date = _date_key(None)
                sequence.append((*date, line.raw))
        sequences.append(sequence)
    bad = sorted({line.raw for _, path_lines in lines for line in path_lines if line.record is None})
    body = _interleave(sequences) + bad
    _write_atomically(output, b"".join(raw + b"\n" for raw in body))
    problems = [
        f"{path}:{line.number}: {line.problem}" + (f" (copied to the end of {output})" if line.record is None else "")
        for path, path_lines in lines
        for line in path_lines
        if line.problem is not None
    ] + future
    lines_in = sum(len(path_lines) for _, path_lines in lines)
    return ledger.MergeResult(output, len(inputs), lines_in, len(body), lines_in - len(body), problems)


def _interleave(sequences: Sequence[Sequence[tuple[Any, ...]]]) -> list[bytes]:
    """The lines of every sequence, each distinct line once (at its first place), by date, in each sequence's order.

    A ledger's own order is its history (``latest_by_claim`` reads file order): a run on a
    machine whose clock was behind still came after the line above it. Sorting every line
    by date put such a line before the earlier run, so the merged ledger gave the claim
    another latest verdict than the shard's own. Here the next line is the earliest among
    the sequences' next lines (date, then bytes), and every sequence whose next line is that
    same line moves on together, so the result does not depend on the order of the inputs.
    """
    heads = [(sequence[0], i) for i, sequence in enumerate(sequences) if sequence]
    heapq.heapify(heads)
    places = [0] * len(sequences)
    seen: set[bytes] = set()
    body: list[bytes] = []
    while heads:
        key, i = heapq.heappop(heads)
        same = [i]
        while heads and heads[0][0] == key:  # the same line at the head of other inputs: all move on
            same.append(heapq.heappop(heads)[1])
        raw = key[-1]  # a line's key ends with its bytes
        if raw not in seen:
            seen.add(raw)
            body.append(raw)
        for j in same:
            places[j] += 1
            if places[j] < len(sequences[j]):
                heapq.heappush(heads, (sequences[j][places[j]], j))
    return body


def _merge_input(path: Path) -> list[ledger.Line]:
    """The lines of one ledger to merge: a regular file reached without a link, holding at least one record."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise PhysverifyError(f"{path}: a symbolic link; ledger merge reads only regular files, never through a link")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | NO_WAIT)
    except FileNotFoundError:
        raise PhysverifyError(f"{path}: no such ledger file") from None
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot read the ledger: {exc.strerror or exc}") from None
    lines = ledger.split_lines(ledger.read_open(path, fd, "merge"))
    if not any(line.record is not None and _is_ledger_record(line.record) for line in lines):
        raise PhysverifyError(f"{path}: no ledger record in it (no JSON line naming a claim and its verdict); "
                              "nothing merged")
    return lines


def _is_ledger_record(record: Mapping[str, Any]) -> bool:
    return ledger.record_key(record) is not None and "verdict" in record


def _check_merge_paths(inputs: Sequence[Path], output: Path) -> None:
    if not inputs:
        raise PhysverifyError("ledger merge: name at least one ledger to merge")
    if output.exists() or output.is_symlink():
        named = any(output.resolve() == path.resolve() for path in inputs)
        why = "it is one of the inputs" if named else "its lines would be lost; name it as an input instead"
        raise PhysverifyError(f"{output}: already exists and merge never overwrites it ({why}); write to a new file")


def _date_key(value: object) -> tuple[int, datetime]:
    """Return a sort key for a record's date; a missing or unreadable date sorts first."""
    earliest = datetime.min.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        return (0, earliest)
    try:
        moment = datetime.fromisoformat(value)
        # section 3: dates are UTC; one time zone for all keys also keeps comparisons in range
        moment = moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        return (0, earliest)
    return (1, moment)


def _write_atomically(output: Path, data: bytes) -> None:
    """Write ``output`` through a temporary file in its folder and os.replace, so it is never half written."""
    try:
        handle = tempfile.NamedTemporaryFile(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp", delete=False)
    except OSError as exc:
        raise PhysverifyError(f"{output}: cannot be written: {exc.strerror or exc}") from None
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, 0o644)  # mkstemp makes it 0600; a ledger is shared like any file
        os.replace(handle.name, output)
    except BaseException:  # clean up the temporary file, then re-raise
        Path(handle.name).unlink(missing_ok=True)
        raise
