"""The append-only JSONL ledger (spec section 3): writing, tolerant reading, the latest line per claim.

Its commands (``ledger log``, ``show``, ``merge``) are commands/ledger.py; the rows and
results they return live here, because report/ renders them and may not import a command.

One run adds one line; a line, once written, is never rewritten or removed. Several
physverify processes (replay --jobs, a CI matrix, a person running confirm beside a
pre-commit hook) may append to one ledger at the same time, so ``append_record`` locks
and writes each line in a single call. The reader keeps every good line and reports a
bad one by its line number instead of giving up, because a writer killed mid-line must
not make the history unreadable.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import posixpath
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any, NamedTuple

from physverify.gate import settings
from physverify.files import NO_WAIT, not_regular
from physverify.gate.claim import REQUIRED_KEYS as CLAIM_FIELDS
from physverify.text import json_safe, visible
from physverify.errors import PhysverifyError, UsageError
from physverify.verdict import EXIT_OK, VERDICTS

try:  # POSIX; on Windows the single O_APPEND write is the only guard
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LEDGER_VERSION = 1
DEFAULT_LEDGER = settings.DEFAULT_LEDGER  # spec section 3: confirm's --ledger default; replay's file name

# --- the line's schema (spec section 3) -------------------------------------------------
# The field order of spec section 3 (claim_key, for replay, follows claim_file), so a line
# reads top to bottom; every line has every field, null when unknown.
FIELDS = (
    "ledger_version", "date", "physverify", "claim_file", "claim_key", "claim_sha256",
    *CLAIM_FIELDS, "file_sha256", "repo_commit", "verdict", "reason", "control", "checks", "variant",
    "allow_dependent_reference", "timeout_s", "stderr_tail", "isolation_note",
)
# Only on the line of a claim that names its fix (issue 17): {held, line, control, checks},
# the variant run's outcomes in the line's own shape. Absent otherwise, so the lines of
# every other claim stay as they were and an old reader meets nothing new.
# Only when fork mode could not fork the claim safely (the fork server held threads or a
# framework's backend, so it ran in a fresh interpreter) or a forked claim timed out while
# the server held threads: the sentence saying so.
OPTIONAL_FIELDS = ("variant", "isolation_note")
# Fields a line always carries even when the claim could not be read (its CLAIM fields are
# then absent, spec section 3).
_ALWAYS = frozenset(FIELDS) - frozenset(CLAIM_FIELDS) - frozenset(OPTIONAL_FIELDS)


def new_record(claim_file: str, date: str, version: str, timeout_s: float) -> dict[str, Any]:
    """A ledger line with every field at its default, to be filled in by one run."""
    record: dict[str, Any] = dict.fromkeys(sorted(_ALWAYS))
    record.update(ledger_version=LEDGER_VERSION, date=date, physverify=version, claim_file=claim_file,
                  checks=[], timeout_s=timeout_s)
    return record


def ordered(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` in the schema's field order (fields outside the schema dropped)."""
    return {key: record[key] for key in FIELDS if key in record}


def check_writable(path: Path, what: str = "the ledger", *, regular: bool = True) -> None:
    """Raise PhysverifyError unless ``path`` can be created or appended to: found before anything runs.

    ``regular``: only a regular file will do, as for the ledger (the append refuses anything else,
    which after a run of minutes lost it); an output may be a pipe (``--json >(jq .)``).
    """
    if path.is_dir():
        raise UsageError(f"{path}: {what} is a folder, not a file")
    kind = _special_kind(path) if regular else None
    if kind is not None:
        raise UsageError(f"{path}: {what} is {kind}, not a regular file")
    if not path.parent.is_dir():
        raise UsageError(f"{path}: {what}'s folder does not exist")
    target = path if path.exists() else path.parent
    if not os.access(target, os.W_OK):
        raise UsageError(f"{path}: {what} is not writable")


def _special_kind(path: Path) -> str | None:
    """"a FIFO" or "a device or socket" for what ``path`` leads to, None for a regular file or nothing there."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"


# --- writing --------------------------------------------------------------------------
def append_record(path: Path, record: Mapping[str, Any]) -> None:
    """Append ``record`` as one JSON line to the ledger at ``path``, creating the file if needed."""
    append_records(path, [record])


def append_records(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Append each of ``records`` as one JSON line to the ledger at ``path``, in order, in one write.

    One open, lock and fsync for all of them: a replay of 10,000 new claims wrote its lines
    one fsync at a time. Every line is serialised before the file is touched, so a record
    that cannot be written leaves the ledger as it was.
    """
    if not records:
        return
    line = b"".join(_serialise(record) for record in records)
    try:
        # O_APPEND: every write lands at the end of the file as it is at that moment, so no
        # writer can overwrite another's line through a stale offset. O_CREAT without
        # O_TRUNC or O_EXCL: two first writers racing to create the ledger share one file
        # and neither empties it. O_RDWR only so the last byte can be read below.
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | NO_WAIT, 0o644)
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot open the ledger for appending: {exc.strerror or exc}") from None
    try:
        _require_regular(path, fd, "append to")
        _locked_append(path, fd, line)
    finally:
        os.close(fd)  # closing also releases the lock if anything above failed


def _locked_append(path: Path, fd: int, line: bytes) -> None:
    if fcntl is not None:
        # An exclusive lock held from the last-byte check to fsync: no other physverify
        # writer can append in between, so the check below stays true, lines never
        # interleave, and a reader with the lock (none needs one) would see whole lines.
        fcntl.flock(fd, fcntl.LOCK_EX)
    size = -1
    fragment = b""
    try:
        size = os.fstat(fd).st_size
        if fcntl is not None:
            # A writer killed mid-write (SIGKILL, a power cut) leaves part of its line with no
            # newline: the kernel stops a write between two pages. Kept, it sat in the middle
            # of the ledger for good once the next line went after it, reported on every read.
            # It is not a line (it never got its newline, and no verdict was reported from it):
            # holding the lock, no live writer's line can be there, so it is cut off here.
            fragment = _unfinished_tail(fd, size)
            if fragment:
                size -= len(fragment)
                os.ftruncate(fd, size)
        # A complete last line without its newline (a hand edit) is kept: the new line must
        # not be glued onto it. The fix-up newline goes into the SAME write as the line, so a
        # crash cannot separate them.
        data = (b"\n" if _ends_torn(fd, size) else b"") + line
        _write_all(path, fd, data)
        os.fsync(fd)  # the line is on disk before the verdict is reported
    except OSError as exc:
        problem = f"{path}: cannot append to the ledger: {exc.strerror or exc}"
        raise PhysverifyError(problem + _restore(fd, size, fragment)) from None
    except PhysverifyError as exc:
        raise PhysverifyError(str(exc) + _restore(fd, size, fragment)) from None
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _ends_torn(fd: int, size: int) -> bool:
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


_BACK = 1 << 16  # how far back each read looks for the last newline


def _unfinished_tail(fd: int, size: int) -> bytes:
    """The bytes after the ledger's last newline when they are not complete JSON (a cut-off write), else b""."""
    if not _ends_torn(fd, size):
        return b""
    parts: list[bytes] = []
    end = size
    while end > 0:
        start = max(0, end - _BACK)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut != -1:
            parts.append(block[cut + 1:])
            break
        parts.append(block)
        end = start
    tail = b"".join(reversed(parts))
    head = tail.removeprefix(codecs.BOM_UTF8) if len(tail) == size else tail  # the mark only at the very start
    return tail if _parse_line(0, head, torn=True).problem == _TORN else b""


def _restore(fd: int, size: int, fragment: bytes = b"") -> str:
    """Cut the file back to ``size`` (and put back ``fragment``) after a failed append; return what to add to the message.

    A full disk (or a file size limit) takes part of the line and refuses the rest; left
    there, the part would sit in the middle of the ledger for good once the next append
    succeeds (issue 13, item 13). We still hold the lock, so no other writer's line lies
    beyond ``size``. ``fragment``, the cut-off tail this append removed first, goes back
    into the room it freed, so a failed append leaves the ledger exactly as it was.
    """
    if size < 0:  # the size could not be read: nothing was written
        return ""
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        return f"; the part written could not be removed ({exc.strerror or exc}), so the ledger ends in a torn line"
    try:
        if fragment:
            _write_all(Path(), fd, fragment)
    except (OSError, PhysverifyError):
        return "; the cut-off last line a killed run had left is removed, the ledger is otherwise as it was"
    return "; the ledger is as it was"


def _write_all(path: Path, fd: int, data: bytes) -> None:
    # One os.write normally takes the whole line. A short write happens only when the disk
    # fills up or a signal interrupts; we still hold the lock, so finishing the rest cannot
    # interleave with another writer.
    written = os.write(fd, data)
    while written < len(data):
        more = os.write(fd, data[written:])
        if more == 0:
            raise PhysverifyError(f"{path}: the disk took none of the ledger line")
        written += more


def _serialise(record: Mapping[str, Any]) -> bytes:
    """Return ``record`` as one line of UTF-8 JSON ending in a newline.

    inf and nan become null: JSON has no spelling for them, and jq or a browser refuses
    the NaN token Python would write. A string holding a lone surrogate (undecodable
    command-line bytes) is written with \\u escapes, which read back to the same string.
    So are C1 controls, U+2028/U+2029, bidi marks and the runner's ``##[`` (text.json_safe):
    a claim's text holding one would otherwise end the line for a reader that splits as
    str.splitlines does, or reorder the line where a reviewer reads the committed ledger.
    """
    finite = _finite(dict(record))
    text = json_safe(json.dumps(finite, ensure_ascii=False, allow_nan=False, default=_json_default))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json_safe(json.dumps(finite, ensure_ascii=True, allow_nan=False, default=_json_default)).encode("ascii")
    return data + b"\n"  # json.dumps escapes "\n" inside strings, so this is the only one


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _json_default(value: object) -> object:
    if isinstance(value, PurePath):  # claim_file may arrive as a Path
        return str(value)
    raise TypeError(f"a ledger record cannot hold {type(value).__name__}: {value!r}")


# --- reading --------------------------------------------------------------------------
class LedgerRead(NamedTuple):
    records: list[dict[str, Any]]
    problems: list[str]


class Line(NamedTuple):
    number: int
    raw: bytes
    record: dict[str, Any] | None
    problem: str | None


def read_ledger(path: Path) -> LedgerRead:
    """Return the ledger's good records in file order and one problem per bad line."""
    return parse_ledger(_read_bytes(path), str(path))


def parse_ledger(data: bytes, name: str) -> LedgerRead:
    """``read_ledger`` for ledger bytes from elsewhere (a commit); ``name`` starts each problem."""
    lines = split_lines(data)
    return LedgerRead(
        [line.record for line in lines if line.record is not None],
        [f"{name}:{line.number}: {line.problem}" for line in lines if line.problem is not None],
    )


def read_bytes(path: Path) -> bytes:
    """The ledger file's bytes as they are (a missing ledger is empty); only a regular file is read."""
    return _read_bytes(path)


def _read_bytes(path: Path) -> bytes:
    """The ledger file's bytes; a missing ledger is empty."""
    try:
        fd = os.open(path, os.O_RDONLY | NO_WAIT)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot read the ledger: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte, or a name the file system cannot encode (a lone surrogate)
        raise PhysverifyError(f"{visible(str(path))}: cannot read the ledger: {exc}") from None
    return read_open(path, fd, "read")


def read_open(path: Path, fd: int, purpose: str) -> bytes:
    """The bytes of the ledger open as ``fd``, after checking it is a regular file; ``fd`` is closed either way."""
    try:
        _require_regular(path, fd, purpose)
    except BaseException:  # close, then re-raise
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read()
        except OSError as exc:
            raise PhysverifyError(f"{path}: cannot read the ledger: {exc.strerror or exc}") from None


def _require_regular(path: Path, fd: int, doing: str) -> None:
    # A ledger named by a repository may be a FIFO (opening it would wait for a writer for
    # ever) or a symlink to /dev/zero (reading it never ends): it is opened without waiting
    # (files.NO_WAIT), then anything but a regular file is refused (issue 13).
    what = not_regular(fd)
    if what is not None:
        raise PhysverifyError(f"{path}: cannot {doing} the ledger: it is {what}, not a regular file")


def split_lines(data: bytes) -> list[Line]:
    # An editor may save the file with a UTF-8 byte order mark; json.loads refuses it, which
    # dropped the first line and so the first claim's baseline (issue 13, item 12).
    data = data.removeprefix(codecs.BOM_UTF8)
    # Split on b"\n" only: str.splitlines would also split on U+2028 and friends, which
    # ensure_ascii=False leaves raw inside JSON strings.
    chunks = data.split(b"\n")
    last = len(chunks) - 1  # chunks[last] is b"" when the file ends with a newline
    return [_parse_line(i + 1, raw, torn=i == last) for i, raw in enumerate(chunks) if raw.strip()]


def _parse_line(number: int, raw: bytes, *, torn: bool) -> Line:
    # A byte that is not UTF-8 is read as U+FFFD instead of dropping the line: a dropped
    # committed line made its claim "new", so a regression passed the gate (issue 21, item 9).
    # JSON's structure is ASCII, so the replacement never changes where a string ends.
    notes = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        notes.append("not UTF-8 text; read with each bad byte as U+FFFD")
    if text.startswith("\ufeff"):  # the file's own mark is gone already: this line began another file
        text = text[1:]
        notes.append("a byte order mark in front of the line (two files joined?); read without it")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        value = _loose(text)
        if value is _BROKEN:
            # A last line without its newline that is not valid JSON was cut off mid-write; a
            # complete object without the newline (a hand edit) is kept.
            if torn:
                return Line(number, raw, None, _TORN)
            return Line(number, raw, None, f"not valid JSON ({exc}); line skipped")
        notes.append("a control character (such as NUL) inside a string; read as it is")
    if not isinstance(value, dict):
        return Line(number, raw, None, f"not a JSON object (found {type(value).__name__}); line skipped")
    if not _holds_verdict(value) and record_key(value) is not None:
        notes.append(f"its verdict {visible(repr(value.get('verdict')))[:60]} is not one of "
                     f"{', '.join(VERDICTS)}, so the line is not the claim's verdict")
    return Line(number, raw, value, "; ".join(notes) or None)


# Where appends lock (POSIX), the next append removes such a line (``_unfinished_tail``).
_TORN = ("the last line was cut off mid-write (no newline, not complete JSON); line skipped"
         + (", and the next append removes it" if fcntl is not None else ""))
_BROKEN = object()


def _loose(text: str) -> object:
    """``text`` parsed as JSON that allows raw control characters inside strings, else _BROKEN.

    physverify escapes every control character it writes, so only a hand edit (or a tool
    writing NUL padding into a string) puts one there. json.loads refuses the line, and a
    refused committed line made its claim "new", so a regression passed the gate (the same
    hole as a byte that is not UTF-8, issue 21, item 9). The characters are kept as they are.
    """
    try:
        return json.loads(text, strict=False)
    except (ValueError, RecursionError):
        return _BROKEN


def _holds_verdict(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` holds a verdict: only such a line can be a claim's latest (the gate's baseline).

    A hand-edited or wrong-typed verdict (``5``, ``"Confirmed"``, ``null``) as a claim's latest
    line made the gate compare with nothing: the claim was "new", and its regression passed.
    Such a line is kept and reported, and the claim's latest verdict stays its last real one.
    """
    verdict = record.get("verdict")
    return isinstance(verdict, str) and verdict in VERDICTS


def _verdict_key(record: Mapping[str, Any]) -> str | None:
    """The claim key of ``record`` when it can be its claim's latest line (it holds a verdict), else None."""
    return record_key(record) if _holds_verdict(record) else None


# --- the latest line per claim, streamed (issue 21, item 11) ----------------------------
class Latest(NamedTuple):
    """The latest record of each claim key in a ledger, and one problem per bad line."""

    latest: dict[str, dict[str, Any]]
    problems: list[str]
    object_id: str | None = None  # git's blob id of the bytes read, when asked for (``read_latest``)
    # With object_id: (mtime_ns, ctime_ns, size, inode, device) of the file read, and the clock just before
    # the reading began (repo.HeadCopy); None when the path was not the regular file itself (a link).
    file_stat: tuple[int, int, int, int, int] | None = None
    read_ns: int = 0


def latest_of_chunks(chunks: Callable[[], Iterable[bytes]], name: str) -> Latest:
    """``latest_by_claim`` of the ledger whose bytes ``chunks()`` gives, holding one line per key, never the file.

    A committed ledger of a million lines costs its keys' memory, not its own. Most lines
    are older runs of a claim that a later line supersedes, so a line as physverify writes
    it (``_KeyHints``: its top-level ``claim_key`` readable without parsing, and its last
    field ``"stderr_tail": null`` closing the object) is kept raw, and only each key's last
    such line is parsed. If that parse disagrees with the hint (a hand-made or hostile
    line), the whole ledger is read again line by line, so the latest line per key is
    always the full reader's. Every other line is parsed, so a line cut off mid-write
    anywhere in the file (it cannot end with the closing field), a line that is not JSON,
    one that is not UTF-8 and a CRLF line give the full reader's warning. The one
    difference: a hand-made line that starts and ends as physverify's and is broken in
    between gives no warning when a later line of its key supersedes it (parsing every
    line to find those would cost more than the rest of a large replay, issue 19).
    """
    deferred: dict[str, tuple[int, bytes]] = {}  # key -> (line number, raw) of its last hinted line
    parsed: dict[str, tuple[int, dict[str, Any]]] = {}  # key -> (line number, record) of its last other line
    order: dict[str, None] = {}  # each key once, in the order of its first line (callers look keys up, never by order)
    problems: list[str] = []
    hints = _KeyHints()
    for first, block, plain, torn in _line_blocks(chunks()):
        hint_of = hints.plain if plain else hints
        for number, raw in enumerate(block, first):
            if not raw or raw.isspace():  # a blank line (raw.strip() is empty), as split_lines skips it
                continue
            hint = None if torn else hint_of(raw)
            if hint is not None:
                deferred[hint] = (number, raw)
                if hint not in order:
                    order[hint] = None
                continue
            line = _parse_line(number, raw, torn=torn)
            if line.problem is not None:
                problems.append(f"{name}:{number}: {line.problem}")
            if line.record is not None and (key := _verdict_key(line.record)) is not None:
                parsed[key] = (number, line.record)
                order.setdefault(key)
    names: dict[tuple[str, ...], tuple[str, ...]] = {}
    while deferred:  # each raw line let go as it is parsed: a ledger of many keys is not held twice at its peak
        key, (number, raw) = deferred.popitem()
        if key in parsed and parsed[key][0] > number:
            continue  # a later line that needed parsing is the latest
        line = _parse_line(number, raw, torn=False)
        if line.record is None or _verdict_key(line.record) != key:
            # the hint was wrong, or the line holds no verdict (an earlier one of its key is the latest,
            # and the shortcut kept none): no shortcut for this ledger
            return _latest_line_by_line(chunks(), name)
        if line.problem is not None:
            problems.append(f"{name}:{number}: {line.problem}")
        parsed[key] = (number, _shared(line.record, names))
    problems.sort(key=lambda problem: int(problem[len(name) + 1:].split(":", 1)[0]))
    return Latest({key: parsed[key][1] for key in order if key in parsed}, problems)


def _shared(record: dict[str, Any], names: dict[tuple[str, ...], tuple[str, ...]]) -> dict[str, Any]:
    """``record`` with the field names of it and of the objects it holds one level down (control, checks) taken
    from ``names``, the lists of names seen before, so records of one schema share them.

    Each line is parsed on its own, and JSON's decoder shares names only within one call:
    200,000 claims' latest lines held every name 200,000 times, a third of their memory.
    """
    for field, value in record.items():
        if isinstance(value, dict):
            record[field] = _named(value, names)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            record[field] = [_named(item, names) if isinstance(item, dict) else item for item in value]
    return _named(record, names)


def _named(value: dict[str, Any], names: dict[tuple[str, ...], tuple[str, ...]]) -> dict[str, Any]:
    found = tuple(value)
    return dict(zip(names.setdefault(found, found), value.values()))


# A line as _serialise writes it: a top-level "claim_key" whose value has no escape. Inside a
# JSON string every quote is escaped, so an unescaped `"claim_key": "` with no `{` before it
# and no backslash in front is the top-level key, unless the name occurs twice (JSON's last
# one wins): spelled plainly, which finding it once rules out, or with a \u escape
# (`claim\u005fkey`), which the absence of any `\u` rules out (no other escape gives a
# letter). Anything else is parsed like any line.
_KEY_AT = b'"claim_key": "'
_KEY_NAME = b'"claim_key"'
_PLAIN_VALUE = re.compile(rb'[^"\\\x00-\x1f]+')  # a string's content without an escape or a control character
# The end of every line _serialise writes for a run with no stderr: the schema's last field,
# then the object's close. A line cut off mid-write cannot end so: a prefix of a physverify
# line ends with this text only at the line's own end (inside a string its quote would be
# escaped, and no nested object of the schema has the field, unless a claim's author makes a
# CLAIM value a dict holding it). Lines ending otherwise (a stderr tail, CRLF, a cut) are
# parsed, so they get their own warnings.
_CLOSING = b', "stderr_tail": null}'


class _KeyHints:
    """The claim key of each line physverify wrote, read without parsing it; each distinct key normalised once."""

    def __init__(self) -> None:
        self._normal: dict[bytes, str] = {}

    def __call__(self, raw: bytes) -> str | None:
        """The line's top-level claim key; None when unsure (the line is then parsed)."""
        if not raw.endswith(_CLOSING) or raw[:1] != b"{":
            return None
        start = raw.find(_KEY_AT)
        if start == -1 or raw.find(b"{", 1, start) != -1 or raw.find(_KEY_NAME, 0, start + 1) != -1:
            return None  # no plain claim_key, one inside a nested object, or the name before it
        value_at = start + len(_KEY_AT)
        end = raw.find(b'"', value_at)
        if end == -1 or raw.find(_KEY_NAME, end) != -1 or _PLAIN_VALUE.fullmatch(raw, value_at, end) is None:
            return None  # the name twice, or a value with an escape or a control character
        if b"\\" in raw and (raw[start - 1] == 0x5C or b"\\u" in raw):
            return None  # an escaped quote in front (the text is inside a string), or a \u escape anywhere
        if not raw.isascii():
            try:  # a line with a byte that is not UTF-8 is parsed: the full reader's note names it
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return self._key(raw[value_at:end])

    def plain(self, raw: bytes) -> str | None:
        """``self(raw)`` for a line known to be ASCII with no backslash (``_plain``).

        A control character in the key's value is not looked for: it makes the line invalid
        JSON, and an invalid line's hint never changes the answer (parsed as a key's latest,
        it fails and the ledger is read line by line; superseded, it was skipped anyway).
        """
        if not raw.endswith(_CLOSING) or raw[:1] != b"{":
            return None
        start = raw.find(_KEY_AT)
        if start == -1 or raw.find(b"{", 1, start) != -1 or raw.count(_KEY_NAME) != 1:
            return None
        value_at = start + len(_KEY_AT)
        end = raw.find(b'"', value_at)
        return None if end <= value_at else self._key(raw[value_at:end])  # an empty key: claim_file counts

    def _key(self, value: bytes) -> str:
        key = self._normal.get(value)
        if key is None:  # a ledger has few keys and many lines: normpath once per key
            key = self._normal[value] = _normal(value.decode("utf-8"))
        return key


def _latest_line_by_line(chunks: Iterable[bytes], name: str) -> Latest:
    latest: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for number, raw, torn in _raw_lines(chunks):
        line = _parse_line(number, raw, torn=torn)
        if line.problem is not None:
            problems.append(f"{name}:{number}: {line.problem}")
        if line.record is not None and (key := _verdict_key(line.record)) is not None:
            latest[key] = line.record  # the order of first appearance, as latest_by_claim
    return Latest(latest, problems)


def read_latest(path: Path, name: str | None = None, *, object_hash: str | None = None) -> Latest:
    """``latest_of_chunks`` of the ledger file at ``path`` (missing: empty); only a regular file is read.

    ``name`` starts each problem (default: the path). ``object_hash`` ("sha1" or "sha256"):
    the result's ``object_id`` is git's blob id of the bytes this reading parsed, computed in
    the same pass, so a caller can tell whether they are a commit's blob without reading the
    file again (issue 19); None when the file changed size while it was read.
    """
    read_ns = time.time_ns()
    try:
        fd = os.open(path, os.O_RDONLY | NO_WAIT)
    except FileNotFoundError:
        return Latest({}, [])
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise PhysverifyError(f"{visible(str(path))}: cannot read the ledger: {reason}") from None
    try:
        _require_regular(path, fd, "read")
    except BaseException:  # close, then re-raise
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        size = st.st_size
        file_stat = _own_stat(path, st)
        ids: list[str | None] = []  # one per pass over the file

        def chunks() -> Iterator[bytes]:  # from the start each time: a second pass reads the same file
            handle.seek(0)
            digest = hashlib.new(object_hash, b"blob %d\0" % size) if object_hash is not None else None
            seen = 0
            while block := handle.read(1 << 20):
                seen += len(block)
                if digest is not None:
                    digest.update(block)
                yield block
            ids.append(digest.hexdigest() if digest is not None and seen == size else None)

        try:
            read = latest_of_chunks(chunks, str(path) if name is None else name)
        except OSError as exc:
            raise PhysverifyError(f"{path}: cannot read the ledger: {exc.strerror or exc}") from None
    if ids and ids[0] is not None and all(found == ids[0] for found in ids):  # every pass read the same bytes
        return read._replace(object_id=ids[0], file_stat=file_stat, read_ns=read_ns)
    return read


def _own_stat(path: Path, st: os.stat_result) -> tuple[int, int, int, int, int] | None:
    """The stat of the file open as ``st`` when ``path`` itself is that file (not a link to it); else None."""
    try:
        own = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(own.st_mode) or (own.st_ino, own.st_dev) != (st.st_ino, st.st_dev):
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def _plain(data: bytes) -> bool:
    """Whether ``data`` is ASCII with no backslash (one pass each, in C): no line of it needs those checks."""
    return b"\\" not in data and data.isascii()


def _line_blocks(chunks: Iterable[bytes]) -> Iterator[tuple[int, list[bytes], bool, bool]]:
    """The lines of ``chunks`` cut as split_lines cuts them (blank ones included), a block at a time.

    Each block is (number of its first line, its lines, ``_plain`` of its bytes, whether it is
    the unterminated last line alone). Whole blocks, so the checks that hold for every line
    of one are made once for all of them. Each chunk is split where it lies, and the parts
    of a line longer than a chunk are joined once, so no byte is copied twice.
    """
    parts: list[bytes] = []  # the line in progress: what came after the last newline
    number = 0
    head: bytes | None = b""  # the first bytes, until three are in: the byte order mark can only be there
    for chunk in chunks:
        if head is not None:
            head += chunk
            if len(head) < len(codecs.BOM_UTF8):
                continue
            chunk, head = head.removeprefix(codecs.BOM_UTF8), None
        if b"\n" not in chunk:
            parts.append(chunk)
            continue
        block = chunk.split(b"\n")
        start = b"".join(parts) if parts else b""
        plain = _plain(start) and _plain(chunk)
        block[0] = start + block[0]
        parts = [block.pop()]
        yield number + 1, block, plain, False
        number += len(block)
    if head is not None:  # fewer than three bytes in all
        block = head.removeprefix(codecs.BOM_UTF8).split(b"\n")
        parts = [block.pop()]
        if block:
            yield number + 1, block, False, False
            number += len(block)
    rest = b"".join(parts)
    if rest.strip():
        yield number + 1, [rest], False, True


def _raw_lines(chunks: Iterable[bytes]) -> Iterable[tuple[int, bytes, bool]]:
    """(number, bytes, is the unterminated last line) of each non-blank line in ``chunks``, as split_lines cuts them."""
    pending = b""
    number = 0
    bom_checked = False
    for chunk in chunks:
        pending += chunk
        if not bom_checked:  # the mark can only be at the very start, once three bytes are in
            if len(pending) < len(codecs.BOM_UTF8):
                continue
            pending, bom_checked = pending.removeprefix(codecs.BOM_UTF8), True
        *whole, pending = pending.split(b"\n")
        for raw in whole:
            number += 1
            if raw.strip():
                yield number, raw, False
    if not bom_checked:  # fewer than three bytes in all: cut them here
        *whole, pending = pending.removeprefix(codecs.BOM_UTF8).split(b"\n")
        for raw in whole:
            number += 1
            if raw.strip():
                yield number, raw, False
    if pending.strip():
        yield number + 1, pending, True


# --- keys ---------------------------------------------------------------------------
def record_key(record: Mapping[str, Any]) -> str | None:
    """Return a record's claim key: "claim_key" when written by confirm/replay, else "claim_file"."""
    key = record.get("claim_key") or record.get("claim_file")
    return _normal(key) if isinstance(key, str) and key else None


def _normal(path: str) -> str:
    """Return ``path`` with POSIX separators and no "./" or "a/../" parts."""
    return posixpath.normpath(path.replace("\\", "/"))


def latest_by_claim(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return the last record of each claim key that holds a verdict (``_verdict_key``), in file order.

    File order, not the "date" field: the ledger is append-only, so a later line is a
    later run even when clocks disagree; a merged ledger keeps each input's order.
    """
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        key = _verdict_key(record)
        if key is not None:
            latest[key] = dict(record)
    return latest


# --- what ledger log and show return (commands/ledger.py) ----------------------------------
class LogRow(NamedTuple):
    date: str
    verdict: str
    repo_commit: str
    claim: str
    reason: str


class LogResult(NamedTuple):
    rows: list[LogRow]
    problems: list[str]
    claim: str | None
    exit_code: int = EXIT_OK


def claim_keys(claim: str | None, folder: Path | None = None) -> set[str] | None:
    """Return the keys a --claim PATH may be recorded under: as given, relative to its repository, and (outside
    git, where replay keys a claim from the folder it was given) relative to the claims ``folder``."""
    if claim is None:
        return None
    keys = {_normal(claim)}
    path = Path(claim)
    if path.exists():
        from physverify.gate import repo

        keys.add(repo.claim_key(path, repo.root_for(path.parent)))
        if folder is not None and folder.is_dir():
            inside = repo.relative_key(path, folder)
            if inside is not None and repo.open_repo(folder) is None:
                keys.add(inside)
    return keys


def log_rows(records: Iterable[Mapping[str, Any]], claim: str | set[str] | None) -> list[LogRow]:
    """Return one row per record, in ledger order, keeping only ``claim`` (a key or keys) when given."""
    wanted = {_normal(claim)} if isinstance(claim, str) else claim
    return [_row(r) for r in records if wanted is None or record_key(r) in wanted]


def _row(record: Mapping[str, Any]) -> LogRow:
    def text(field: str) -> str:
        value = record.get(field)
        return "" if value is None else str(value)

    return LogRow(text("date"), text("verdict"), text("repo_commit"), record_key(record) or "", text("reason"))


class ShowResult(NamedTuple):
    record: dict[str, Any]
    problems: list[str]
    exit_code: int = EXIT_OK


# --- ledger merge ---------------------------------------------------------------------
class MergeResult(NamedTuple):
    output: Path
    inputs: int
    lines_in: int
    lines_out: int
    duplicates: int
    problems: list[str]
    exit_code: int = EXIT_OK
