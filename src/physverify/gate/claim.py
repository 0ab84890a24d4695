"""Static reading of a claim file (spec section 1) and the ``confirm init`` template (section 6).

A claim file is read with ``ast`` and never run or imported here: the parent process
must be able to refuse a bad claim before any code under test runs (rule 0, section 2),
and a long-running process must never import claim or solver code (STYLE.md, section 4).
Every problem with the file, whatever its bytes, is a ClaimLoadError with one line
"<path>: <problem>"; nothing else escapes ``read_claim`` (tests/gate/test_claim.py fuzzes it).

A claim file is parsed once per content: one parse gives what discovery, the load check,
the reference scan (specscan.py) and the import closure (affected.py) need, and only
that small summary is kept, keyed by the file's SHA-256. A syntax tree costs about 500
times its source in memory, so trees are never kept, and a claim file may hold at most
MAX_CLAIM_BYTES (issue 13, item 26: a 50 MB list literal, parsed five times, took 98 s
and 6.2 GB).
"""

from __future__ import annotations

import ast
import hashlib
import io
import mmap
import os
import re
import threading
import tokenize
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Protocol

from physverify.gate import specscan, variant
from physverify import files
from physverify.errors import PhysverifyError
from physverify.text import clip

REQUIRED_KEYS = ("text", "source", "file", "line", "reference", "impact")
OPTIONAL_KEYS = (
    "repo",  # section 3: a claim kept outside the repository names it
    *variant.KEYS,  # the claimed mistake and what it should be, both or neither (issue 17)
)
IMPACTS = ("used", "latent", "unknown")
FILL_IN = "FILL IN"
MAX_CLAIM_BYTES = 1 << 20  # 1 MiB: a claim file is a few kilobytes; data belongs in a file it reads

# A file that cannot be parsed but starts a line with a CLAIM binding still counts as a
# claim for discovery, so replay reports its load error instead of skipping it as a helper.
_CLAIM_LINE = re.compile(rb"^CLAIM\s*[:=]", re.MULTILINE)


# CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, so two
# threads running ast.parse at once can raise SystemError (python/cpython#106905). replay
# reads claims from a thread pool, so the static readers here and in specscan.py parse
# through this one lock; a parse takes milliseconds, the claim's child seconds.
_PARSE_LOCK = threading.Lock()


def parse_module(source: str | bytes, filename: str) -> ast.Module:
    """Return ``ast.parse(source)``, one thread at a time; RecursionError past MAX_NESTING levels."""
    with _PARSE_LOCK:
        return _parse_bounded(source, filename)


# How deep ast.parse may nest depends on sys.getrecursionlimit(), which any imported library
# may raise for the whole process (jedi, which IPython imports, sets 3000): an attribute chain
# of 5,000 links is "nested too deeply" in one process and a claim in another, and the cache
# of readings would keep whichever came first. Past this depth a file is refused whatever the
# limit. At the default limit ast.parse itself takes about 2,980 levels from a shallow stack
# (fewer the deeper its caller's stack is), so for any caller less than about 300 frames deep
# this bound, not the limit, decides.
MAX_NESTING = 2000
# A tree has at most a few levels more than its source has characters: below the module and
# a statement, each level of an expression or a pattern takes at least one character of its
# own (an operator, a bracket, a dot, a comma, a keyword), and a block at least a line. The
# deepest per character is a chain of unary operators, `---x`: one level each, 3 more for
# the module, the statement and the name's ctx (tests/gate/test_claim_depth.py checks the
# constructs at this bound). So a text shorter than this cannot pass MAX_NESTING, and its
# tree is not walked: the walk was an eighth of a worker's parse (issue 19).
SHALLOW_BELOW = MAX_NESTING - 16


def _parse_bounded(source: str | bytes, filename: str) -> ast.Module:
    """``ast.parse(source)``; RecursionError past MAX_NESTING levels.

    The depth is counted one level at a time (``specscan.deeper_than``: no recursion, and
    it stops once the bound is passed); ``ast.iter_child_nodes`` made that walk cost more
    than the parse itself, and a walk over every field a third of it (issue 19). A text of
    fewer than SHALLOW_BELOW characters is not walked (bytes always are: a coding line
    decides how many characters they are).
    """
    tree = ast.parse(source, filename=filename)
    if not (isinstance(source, str) and len(source) < SHALLOW_BELOW) and specscan.deeper_than(tree, MAX_NESTING):
        raise RecursionError(f"more than {MAX_NESTING:,} levels of nesting")
    return tree


class ClaimLoadError(PhysverifyError):
    """A claim file that cannot be loaded (rule 0); carries what could be read of it."""

    def __init__(self, message: str, *, claim: dict[str, Any] | None = None, sha256: str | None = None) -> None:
        super().__init__(message)
        self.claim = claim
        self.sha256 = sha256


class ClaimFile(NamedTuple):
    path: Path
    sha256: str
    claim: dict[str, Any]


# --- reading --------------------------------------------------------------------------
Import = specscan.Import  # (level, module, names); level > 0 is a relative import


class StaticReading(NamedTuple):
    """What the static readers need from one content of a file, taken from one parse.

    It depends on the bytes alone (never on the path, the repository or a run), so it is
    what cache.py may keep between runs, keyed by the content's hash.
    """

    binds: bool  # discovery: the top level binds CLAIM (or, unparsable, a line starts with a CLAIM binding)
    claim: dict[str, Any] | None  # the readable part of CLAIM, for the ledger
    problem: str | None  # why it is not a loadable claim (the message after "<path>: ")
    imports: tuple[Import, ...]
    notes: tuple[str, ...]  # specscan's reference notes for the file's own CLAIM["file"]


class ClaimReading(NamedTuple):
    """One claim file as discovery read it, once: every later step of a run uses this value.

    ``sha256`` is None when the file could not be read; ``problem`` is the whole load
    error ("<path>: ...") or None for a loadable claim.
    """

    path: Path
    sha256: str | None
    binds: bool
    claim: dict[str, Any] | None
    problem: str | None
    imports: tuple[Import, ...] = ()
    notes: tuple[str, ...] = ()
    blob: str | None = None  # git's object id for the same bytes, so cache.py can key by the index's ids

    @property
    def target(self) -> str | None:
        """CLAIM["file"], also from a claim that fails to load; None when it is not a string."""
        file = (self.claim or {}).get("file")
        return file if isinstance(file, str) else None

    def load(self) -> ClaimFile:
        """The validated claim; ClaimLoadError (carrying what could be read) when it does not load."""
        if self.problem is not None:
            raise ClaimLoadError(self.problem, claim=_copy(self.claim), sha256=self.sha256)
        return ClaimFile(self.path, str(self.sha256), dict(self.claim or {}))


def read_claim(path: Path) -> ClaimFile:
    """Return the validated CLAIM of ``path``, read statically; raise ClaimLoadError otherwise."""
    return read(path).load()


class Store(Protocol):
    """Where readings are kept between runs, by the content's git object id (cache.py's ``Cache``)."""

    def get(self, key: str) -> tuple[str, StaticReading] | None: ...

    def put(self, key: str, sha256: str, reading: StaticReading) -> None: ...


def read(path: Path, store: Store | None = None) -> ClaimReading:
    """Read ``path`` once: its hash, CLAIM, imports and reference notes; never raises for a bad file.

    A parse is kept in memory per content (``static_reading``) and, given a ``store``, on
    disk under the bytes' git object id: the file is always read and hashed here, only the
    parse is saved, and a kept reading counts only when it holds the SHA-256 just computed.
    """
    found = contents(path)
    if isinstance(found, ClaimReading):
        return found
    data, digest, blob = found.data, found.sha256, found.blob
    if store is None:
        return with_path(path, digest, static_reading(data, digest), blob)
    kept = store.get(blob)
    if kept is not None and kept[0] == digest and vouched(kept[1], data):  # another content's hash: never used
        return with_path(path, digest, kept[1], blob)
    static = static_reading(data, digest)  # parsed, or from memory when this process parsed it before
    store.put(blob, digest, static)
    return with_path(path, digest, static, blob)


def vouched(kept: StaticReading, data: bytes) -> bool:
    """Whether a reading kept on disk for ``data`` may stand in for parsing it.

    A kept reading that the file binds no CLAIM takes the claim out of the gate (not run, not
    counted, not reported as removed), and anyone able to write the cache folder can plant one
    for a file's id and hash. So it stands only when the bytes say so themselves: ASCII, no
    coding line (UTF-7 could spell the name), and no "CLAIM" anywhere. Else the file is parsed.
    """
    return kept.binds or (data.isascii() and b"CLAIM" not in data and b"coding" not in data)


class Contents(NamedTuple):
    """The bytes of a claim file that is read to be parsed, with their SHA-256 and git object id."""

    data: bytes
    sha256: str
    blob: str


def contents(path: Path) -> ClaimReading | Contents:
    """The first half of ``read``: the file's bytes and hashes, or its whole reading when it has none to parse.

    A file that is not *.py, not a regular file, unreadable or larger than MAX_CLAIM_BYTES
    is read to its end here (the reading says why it does not load); any other gives its
    bytes, for ``static_reading`` here or in a worker (parsepool.py).
    """
    if path.suffix != ".py":
        return ClaimReading(path, sha256_or_none(path), False, None, f"{path}: a claim file must end in .py")
    try:
        # open_regular's checks on a plain descriptor: a file object per claim cost a third of
        # reading it (issue 19, 10,000 claims); one is made only for a file too large to hold
        fd = os.open(path, os.O_RDONLY | files.NO_WAIT)
        try:
            size = files.regular_size(fd)
            data = _read_at_most(fd, MAX_CLAIM_BYTES + 1, size)
            if len(data) > MAX_CLAIM_BYTES:  # hash the whole file for the ledger, a block at a time
                handle, fd = os.fdopen(fd, "rb"), -1
                with handle:
                    return _too_large(path, handle)
        finally:
            if fd != -1:
                os.close(fd)
    except files.NotRegularFile as exc:  # a FIFO or a device named *.py is no claim file; discovery skips it
        return ClaimReading(path, None, False, None, f"{path}: cannot be read: {exc.strerror or exc}")
    except OSError as exc:  # unreadable: a claim to report, not a helper to skip
        return ClaimReading(path, None, True, None, f"{path}: cannot be read: {exc.strerror or exc}")
    return Contents(data, hashlib.sha256(data).hexdigest(), git_blob_id(data))


def _read_at_most(fd: int, limit: int, size: int) -> bytes:
    """The first ``limit`` bytes of ``fd`` (fewer at its end), as a file object's ``read(limit)`` gives them.

    The stat's size (and one byte more, to see a file that grew) is asked for first, so a
    small file is one read, not a buffer of ``limit`` bytes.
    """
    blocks: list[bytes] = []
    total = 0
    want = min(limit, size + 1)
    while total < limit:
        block = os.read(fd, max(want - total, min(limit - total, 1 << 16)))
        if not block:
            break
        blocks.append(block)
        total += len(block)
    return blocks[0] if len(blocks) == 1 else b"".join(blocks)


def static_fields(reading: StaticReading) -> list[Any]:
    """``reading`` as a JSON-ready list, [binds, claim, problem, imports, notes]: how cache.py and parsepool.py carry it."""
    return [reading.binds, reading.claim, reading.problem,
            [[level, module, list(names)] for level, module, names in reading.imports], list(reading.notes)]


def git_blob_id(data: bytes) -> str:
    """The object id git gives these bytes as a file (``git hash-object``): SHA-1 of "blob <size>\\0" and the bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def with_path(path: Path, sha256: str, static: StaticReading, blob: str | None = None) -> ClaimReading:
    """The ClaimReading of ``path`` whose content (of hash ``sha256``) reads as ``static``."""
    problem = None if static.problem is None else f"{path}: {static.problem}"
    return ClaimReading(path, sha256, static.binds, _copy(static.claim), problem, static.imports, static.notes, blob)


def _too_large(path: Path, handle: BinaryIO) -> ClaimReading:
    handle.seek(0)
    digest = _sha256_of(handle)
    size = handle.tell()
    problem = (f"{path}: is {size:,} bytes; a claim file may hold at most {MAX_CLAIM_BYTES:,} bytes (1 MiB), "
               "so keep large data in a file the claim reads")
    return ClaimReading(path, digest, _has_claim_line(path), None, problem)


def binds_claim(path: Path) -> bool:
    """Return whether the file's top level binds CLAIM (discovery, DESIGN "Replay").

    A file that cannot be read, decoded or parsed counts as a claim when a line starts
    with ``CLAIM =`` or ``CLAIM:`` (an unreadable file always does), so its load error is
    reported rather than the file being skipped as a helper. A FIFO or a device is not a
    file at all and never counts: reading it would wait or never end.
    """
    return read(path).binds


def static_imports(path: Path) -> list[Import]:
    """Every import in the file, from its one parse; none when it cannot be read, is too large or does not parse."""
    return list(read(path).imports)


def own_reference_notes(path: Path, file: object) -> list[str] | None:
    """Return specscan's notes from the one parse when the file loads and its CLAIM names ``file``; else None."""
    reading = read(path)
    if reading.problem is not None or reading.claim is None or reading.claim.get("file") != file:
        return None
    return list(reading.notes)


def reference_notes(path: Path, values: Mapping[str, Any]) -> list[str]:
    """Rule 1's notes for the claim file ``path`` whose CLAIM is ``values`` (specscan.py's heuristic).

    When the file's own CLAIM names the same target, the notes come from its one parse;
    otherwise (a caller asking about another target) the file is parsed for the question.
    """
    file = values.get("file")
    if not specscan.module_names(file):
        return []
    own = own_reference_notes(path, file)
    if own is not None:
        return own
    tree = _tree_or_none(path)
    return [] if tree is None else specscan.notes_in(tree, file)  # read_claim reports an unreadable file


def _tree_or_none(path: Path) -> ast.Module | None:
    try:
        with files.open_regular(path) as handle:
            data = handle.read(MAX_CLAIM_BYTES + 1)
        if len(data) > MAX_CLAIM_BYTES:  # read_claim refuses it, naming the size
            return None
        return parse_module(data, str(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):  # read_claim reports these
        return None


def _copy(claim: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if claim is None else dict(claim)


def sha256_or_none(path: Path) -> str | None:
    """The SHA-256 of a regular file, read a block at a time; None for anything that is not one."""
    try:
        with files.open_regular(path) as handle:
            return _sha256_of(handle)
    except (OSError, ValueError):  # missing, a FIFO or device, a NUL byte or an unencodable name
        return None


def _sha256_of(handle: BinaryIO) -> str:
    """Return the SHA-256 of the rest of ``handle``, read a block at a time (hashlib.file_digest is 3.11+)."""
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 16), b""):
        digest.update(block)
    return digest.hexdigest()


def _has_claim_line(path: Path) -> bool:
    """Return whether a line of the file starts with a CLAIM binding, without loading it whole."""
    try:
        with files.open_regular(path) as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return _CLAIM_LINE.search(view) is not None
    except files.NotRegularFile:  # a FIFO or a device named *.py is no claim file; discovery skips it
        return False
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses 0 bytes): a claim to report
        return True


# Readings by SHA-256; each is a few hundred bytes (the CLAIM values, the imports, the notes).
# 10,000 claims of one repository fit, so a long-lived process (the MCP server) parses each once.
_READINGS: OrderedDict[str, StaticReading] = OrderedDict()
_READINGS_KEPT = 16384


def static_reading(data: bytes, digest: str) -> StaticReading:
    """Return the reading of ``data`` (whose SHA-256 is ``digest``), parsed only the first time this content is seen."""
    with _PARSE_LOCK:  # one parse per content even when several threads ask at once
        reading = _READINGS.get(digest)
        if reading is None:
            reading = _read_source(data)
            remember(digest, reading)
        _READINGS.move_to_end(digest)
        return reading


def remember(digest: str, reading: StaticReading) -> None:
    """Keep ``reading`` in memory for the content of SHA-256 ``digest`` (call with _PARSE_LOCK held)."""
    _READINGS[digest] = reading
    while len(_READINGS) > _READINGS_KEPT:
        _READINGS.popitem(last=False)


def keep(digest: str, reading: StaticReading) -> None:
    """``remember``, taking the lock itself: for a reading parsed elsewhere (a worker of parsepool.py)."""
    with _PARSE_LOCK:
        remember(digest, reading)


def remembered(digest: str) -> StaticReading | None:
    """The reading kept in memory for the content of SHA-256 ``digest``, if any."""
    with _PARSE_LOCK:
        found = _READINGS.get(digest)
        if found is not None:
            _READINGS.move_to_end(digest)
        return found


def _read_source(data: bytes) -> StaticReading:
    """Parse ``data`` once and take from the tree what every static reader needs (call with _PARSE_LOCK held)."""
    try:
        tree = _parse(data)
    except _Problem as exc:
        return StaticReading(_CLAIM_LINE.search(data) is not None, None, str(exc), (), ())
    bindings = _top_level_bindings(tree)
    binds = "CLAIM" in bindings
    try:
        claim = _claim_literal(bindings)
    except _Problem as exc:
        return StaticReading(binds, exc.claim, str(exc), tuple(specscan.imports_in(tree)), ())
    problem = _claim_problem(claim) or _missing_function(bindings)
    try:
        imports, notes = specscan.scan(tree, claim.get("file") if problem is None else None)
    except (RecursionError, MemoryError) as exc:  # specscan walks without recursion; this is the last guard
        return StaticReading(binds, claim, f"cannot be scanned for its reference: {clip(str(exc))}", (), ())
    return StaticReading(binds, claim, problem, tuple(imports), tuple(notes))


class _Problem(Exception):
    """Why a file is not a loadable claim; ``claim`` is the part of CLAIM that could be read."""

    def __init__(self, message: str, claim: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.claim = claim


def _parse(data: bytes) -> ast.Module:
    """Return the module's syntax tree; decoding honours a PEP 263 coding line, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        source = data.decode(encoding)
    except SyntaxError as exc:  # a bad coding line, or no coding line and bytes in the first two lines that are not UTF-8
        raise _Problem(_not_utf8(data) or f"cannot be decoded: {exc}") from None
    except LookupError as exc:  # an unknown coding line
        raise _Problem(f"cannot be decoded: {exc}") from None
    except UnicodeDecodeError as exc:
        raise _Problem(_not_text(exc)) from None
    try:
        return _parse_bounded(source, "<claim>")  # the caller holds _PARSE_LOCK
    except SyntaxError as exc:  # a NUL byte is a SyntaxError without a line (3.12)
        where = f" (line {exc.lineno})" if exc.lineno is not None else ""
        raise _Problem(f"is not valid Python: {exc.msg}{where}") from None
    except ValueError as exc:  # null bytes
        raise _Problem(f"is not valid Python: {clip(str(exc))}") from None
    except (RecursionError, MemoryError) as exc:  # thousands of levels: the parser's stack ran out
        raise _Problem(f"is nested too deeply to be read ({clip(str(exc)) or type(exc).__name__})") from None


def _not_utf8(data: bytes) -> str | None:
    """The load error of bytes that are not UTF-8 (tokenize says only "invalid or missing encoding declaration")."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _not_text(exc)
    return None


def _not_text(exc: UnicodeDecodeError) -> str:
    line = exc.object.count(b"\n", 0, exc.start) + 1
    return (f"is not valid {exc.encoding} text (bytes {exc.object[exc.start:exc.end]!r} at offset {exc.start}, "
            f"line {line}); save it as UTF-8, or name its encoding in a coding line (PEP 263)")


imports_in = specscan.imports_in  # the import statements of a tree: one walk of its statements, in specscan.py


def _top_level_bindings(tree: ast.Module) -> dict[str, ast.stmt]:
    """Return each name bound by a statement of the module body, mapped to its last binder.

    Only the module body counts: a name bound inside if/try/def/class is not seen,
    because the file is read before it runs (section 1).
    """
    bound: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        for name in _names_bound(stmt):
            bound[name] = stmt
        if isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                for name in _target_names(target):
                    bound.pop(name, None)
    return bound


def _names_bound(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [name for target in stmt.targets for name in _target_names(target)]
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:  # `CLAIM: dict` alone binds nothing
        return _target_names(stmt.target)
    if isinstance(stmt, ast.AugAssign):
        return _target_names(stmt.target)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        # `import a.b` binds `a`; `from m import *` binds names we cannot see statically
        return [alias.asname or alias.name.split(".")[0] for alias in stmt.names if alias.name != "*"]
    return []


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _claim_literal(bindings: dict[str, ast.stmt]) -> dict[str, Any]:
    """Return CLAIM as a dict of string keys and string or number values, or raise _Problem."""
    stmt = bindings.get("CLAIM")
    if stmt is None:
        raise _Problem("CLAIM is not defined at the top level")
    value = _literal(stmt.value) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    if not isinstance(value, dict):
        raise _Problem(
            "CLAIM is not a literal dict (strings and numbers only, so it can be read without running the file)"
        )
    problems = {key: _item_problem(key, item) for key, item in value.items()}
    readable = {k: v for k, v in value.items() if problems[k] is None}
    problem = next((text for text in problems.values() if text is not None), None)
    if problem is not None:  # the readable part still goes to the ledger (section 3)
        raise _Problem(problem, claim=readable)
    return readable


def _item_problem(key: object, item: object) -> str | None:
    if not isinstance(key, str):
        return f"CLAIM keys must be strings; {clip(repr(key))} is not"
    if not _is_scalar(item):
        return f"CLAIM[{clip(repr(key))}] must be a string or a number, not {type(item).__name__}"
    if key in ("file", "repo") and isinstance(item, str):
        return _path_problem(key, item)
    return None


# File systems refuse a name over 255 bytes and a path over 4096 (Linux), with an error
# where the claim's file is looked up (issue 13, item 7); the root goes in front of it.
_MAX_NAME_BYTES = 255
_MAX_PATH_CHARS = 1024


def _path_problem(key: str, path: str) -> str | None:
    """Return why CLAIM's ``file`` or ``repo`` cannot name a file on any file system, or None."""
    if "\x00" in path:  # every file system call on it raises ValueError
        return f"CLAIM[{key!r}] holds a NUL character, so it cannot be a path"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # "\ud800": every file system call on it raises UnicodeEncodeError
        return f"CLAIM[{key!r}] holds a lone surrogate (a \\ud800-\\udfff escape), so it cannot be a path"
    if len(path) > _MAX_PATH_CHARS:
        return f"CLAIM[{key!r}] is {len(path):,} characters long; a path here has at most {_MAX_PATH_CHARS:,}"
    parts = path.replace("\\", "/").split("/")
    if any(len(part.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES for part in parts):
        return f"CLAIM[{key!r}] has a part longer than {_MAX_NAME_BYTES} bytes, which no file system allows"
    return None


def _literal(node: ast.expr | None) -> object:
    """Return the value of a literal expression, or None when it is not one."""
    if not isinstance(node, ast.Dict):  # only a dict display can be CLAIM; skip evaluating anything else
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # not a literal: record as None
        return None


def _is_scalar(value: object) -> bool:
    # bool is an int subclass, and complex is not what "numbers" means for a line or a label
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _claim_problem(claim: dict[str, Any]) -> str | None:
    """Return the first problem with a CLAIM dict of scalars (section 1), or None."""
    missing = [key for key in REQUIRED_KEYS if key not in claim]
    if missing:
        keys = " and ".join(repr(key) for key in missing)
        return f"CLAIM is missing the key{'s' if len(missing) > 1 else ''} {keys}"
    unknown = [key for key in claim if key not in REQUIRED_KEYS + OPTIONAL_KEYS]
    if unknown:
        return (
            f"CLAIM has unknown key{'s' if len(unknown) > 1 else ''} {clip(', '.join(repr(k) for k in unknown))} "
            f"(allowed: {', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)})"
        )
    unfilled = [key for key in REQUIRED_KEYS if isinstance(claim.get(key), str) and claim[key].strip() == FILL_IN]
    if len(unfilled) > 1:  # a fresh template has three: name them all, not one per run
        keys = ", ".join(f"CLAIM[{key!r}]" for key in unfilled[:-1]) + f" and CLAIM[{unfilled[-1]!r}]"
        return f"{keys} are still {FILL_IN!r}; fill them in"
    for key in claim:
        problem = _value_problem(key, claim[key])
        if problem is not None:
            return problem
    return variant.key_problem(claim)


def _value_problem(key: str, value: object) -> str | None:
    if key == "line":
        if not isinstance(value, int):
            return f"CLAIM['line'] must be an integer, not {clip(repr(value))}"
        return None if value >= 1 else f"CLAIM['line'] is {value}; line numbers start at 1"
    if not isinstance(value, str):
        return f"CLAIM[{key!r}] must be a string, not {clip(repr(value))}"
    if value.strip() == "":
        return f"CLAIM[{key!r}] is empty"
    if value.strip() == FILL_IN:
        return f"CLAIM[{key!r}] is still {FILL_IN!r}; fill it in"
    if key == "impact" and value not in IMPACTS:
        return f"CLAIM['impact'] is {clip(repr(value))}; it must be one of {', '.join(IMPACTS)}"
    return None


def _missing_function(bindings: dict[str, ast.stmt]) -> str | None:
    for name in ("control", "checks"):
        if name not in bindings:
            return f"{name}() is not defined at the top level"
    return None
