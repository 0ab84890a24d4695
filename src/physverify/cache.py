"""A cache of static readings of claim files, keyed by their content (issue 19, item 3).

A replay of 10,000 claims must not parse 10,000 files when none of them changed. What
claim.py takes from one parse (``StaticReading``: whether the file binds CLAIM, the CLAIM
values, the imports, rule 1's notes) depends on the file's bytes alone, so it is kept here
between runs, one small JSON file per content, in the user's cache folder (platformdirs;
``$PHYSVERIFY_CACHE_DIR`` overrides it, ``off`` disables it). Verdicts are never kept:
a verdict depends on running the code, and the gate re-runs what changed.

The key is git's object id of the bytes (the SHA-1 ``git hash-object`` gives), so that in
a git checkout the ids come from ONE read of the index (``repo.Checkout.blob_id``) and a
file untouched since ``git add`` is not even opened. A file that differs from its index
entry, or is outside git, is read and hashed here; its entry is then used only when the
SHA-256 it stores is the one just computed. An entry holds its own key, the physverify
version and the format, and is checked field by field: an entry planted under another
content's name, written by another version, or cut short by a crash is never used, only
replaced. Writes go to a temporary file renamed into place, so a concurrent run reads the
old entry or the new one, never half of one. The folder is bounded (``MAX_ENTRIES``,
``MAX_BYTES``; the oldest entries go first). A cache that cannot be read or written is
ignored with one warning line (``problems``): the run reads every file itself.

Limit: an entry found through the index is trusted as git trusts its object ids; the
folder is the user's own, and inside the sandbox there is none (a repository under test
must not write what the host reads later).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from typing import Any
from pathlib import Path

from physverify import __version__, claim, repo, settings
from physverify.claim import ClaimReading, StaticReading

FORMAT = 1  # bump when StaticReading or what claim.py puts in it changes meaning
PACK_FORMAT = 2  # the form of a checkout's file of readings (2: entries as lists)
MAX_ENTRIES = 50_000  # five repositories of 10,000 claims
MAX_BYTES = 64 << 20
MAX_ENTRY_BYTES = 256 << 10  # a reading larger than this (thousands of imports) is read each time instead
OFF = "off"


def default_folder() -> Path:
    """The user's cache folder for physverify (platformdirs: ~/.cache/physverify on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("physverify", appauthor=False)) / "readings"


def open_cache(setting: str | None = None, *, env: Mapping[str, str] | None = None) -> Cache | None:
    """The cache a run uses: ``setting`` (else $PHYSVERIFY_CACHE_DIR) as a folder, None when ``off`` or in the sandbox."""
    given = setting if setting is not None else settings.cache_setting(env)
    if given is not None and given.strip().lower() == OFF:
        return None
    if given is None and settings.sandbox_repo(env) is not None:
        return None  # inside the sandbox: nothing the repository under test did may reach the host's cache
    return Cache(Path(given) if given is not None else default_folder())


class Cache:
    """The readings kept in one folder; every failure is a miss, the first one also a warning line."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []  # at most one line: what went wrong first
        self.written = 0
        self._lock = threading.Lock()
        self._broken = False  # after a write failed, no more writes are tried in this run
        self._folders: set[Path] = set()  # the entry folders this run made or found

    # --- reading ------------------------------------------------------------------------
    def get(self, key: str) -> tuple[str, StaticReading] | None:
        """(SHA-256, reading) kept for the content whose git object id is ``key``; None when absent or not valid."""
        if not _is_hex(key, 40):
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_ENTRY_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(f"cannot be read ({exc.strerror or exc})")
            return None
        found = _entry(data, key)
        if found is None:
            self._warn(f"holds an entry that is not valid ({path.name}); it is ignored and replaced")
        return found

    # --- writing ------------------------------------------------------------------------
    def put(self, key: str, sha256: str, reading: StaticReading) -> None:
        """Keep ``reading`` for the content whose git object id is ``key`` (SHA-256 ``sha256``); never raises."""
        if self._broken or not _is_hex(key, 40):
            return
        try:
            data = _encode(key, sha256, reading)
        except (TypeError, ValueError, OverflowError):  # a value JSON cannot hold as it is: read it each time
            return
        if len(data) > MAX_ENTRY_BYTES:
            return
        self._store(self._path(key), data)

    def _store(self, path: Path, data: bytes) -> None:
        """Write one file of the cache atomically and count it; a failure stops this run's writes, with one warning."""
        try:
            if path.parent not in self._folders:  # one mkdir per folder and run, not per entry
                path.parent.mkdir(parents=True, exist_ok=True)
                self._folders.add(path.parent)
            _write_atomically(path, data)
        except OSError as exc:
            self._broken = True
            self._warn(f"cannot be written ({exc.strerror or exc})")
            return
        with self._lock:
            self.written += 1

    # --- one file per checkout: the readings its last run used ----------------------------
    def load_pack(self, root: Path) -> dict[str, object]:
        """The entries the last run over the checkout at ``root`` used, by key, each still to be checked (``_valid``).

        One file read instead of one per claim: 10,000 claims would otherwise mean 10,000 opens.
        """
        try:
            with open(self._pack_path(root), "rb") as handle:
                pack = json.loads(handle.read())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError):
            self._warn("holds a file of readings that cannot be read; it is ignored and replaced")
            return {}
        fits = isinstance(pack, dict) and (pack.get("format"), pack.get("pack"), pack.get("physverify"),
                                           pack.get("root")) == (FORMAT, PACK_FORMAT, __version__, str(root))
        entries = pack.get("entries") if fits else None
        return entries if isinstance(entries, dict) else {}

    def save_pack(self, root: Path, readings: Mapping[str, tuple[str, StaticReading]]) -> None:
        """Keep the readings this run used for the checkout at ``root``, for the next run; never raises."""
        if self._broken:
            return
        pack = {"format": FORMAT, "pack": PACK_FORMAT, "physverify": __version__, "root": str(root),
                "entries": {key: _packed_fields(key, sha256, reading) for key, (sha256, reading) in readings.items()}}
        try:
            data = json.dumps(pack, allow_nan=True, separators=(",", ":")).encode("ascii")
        except (TypeError, ValueError, OverflowError):  # a value JSON cannot hold: the entries stay one per file
            return
        self._store(self._pack_path(root), data)

    # --- other files of the cache, by name (noop.py's memo) ---------------------------------
    def read_file(self, name: str, limit: int) -> bytes | None:
        """The bytes of the cache's file ``name`` (a path inside the folder); None when absent, unreadable or
        larger than ``limit`` bytes (those two also give the warning line)."""
        try:
            with open(self.folder / name, "rb") as handle:
                data = handle.read(limit + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(f"cannot be read ({exc.strerror or exc})")
            return None
        if len(data) > limit:
            self._warn(f"holds a file larger than expected ({name}); it is ignored and replaced")
            return None
        return data

    def write_file(self, name: str, data: bytes) -> None:
        """Write the cache's file ``name`` atomically; never raises (a failure is the one warning line)."""
        if not self._broken:
            self._store(self.folder / name, data)

    def warn(self, what: str) -> None:
        """Note that something in the cache folder ``what`` (the one warning line of a run)."""
        self._warn(what)

    def _pack_path(self, root: Path) -> Path:
        name = hashlib.sha256(f"{FORMAT}\0{__version__}\0pack\0{root}".encode("utf-8", "surrogateescape")).hexdigest()
        return self.folder / "packs" / f"{name}.json"

    def prune(self) -> None:
        """Drop the oldest entries until at most MAX_ENTRIES of at most MAX_BYTES in all are left."""
        entries = []
        try:
            for sub in os.scandir(self.folder):
                if sub.is_dir(follow_symlinks=False):
                    for entry in os.scandir(sub.path):
                        if entry.name.endswith(".json"):
                            st = entry.stat(follow_symlinks=False)
                            entries.append((st.st_mtime_ns, st.st_size, entry.path))
        except OSError:
            return  # a folder that cannot be listed was already reported when it could not be used
        entries.sort()
        count, total = len(entries), sum(size for _, size, _ in entries)
        for _, size, name in entries:
            if count <= MAX_ENTRIES and total <= MAX_BYTES:
                break
            try:
                os.unlink(name)
            except OSError:
                continue  # another run pruned it first
            count, total = count - 1, total - size

    def _path(self, key: str) -> Path:
        # The name depends on the format and the version too, so another version's entry is never opened.
        name = hashlib.sha256(f"{FORMAT}\0{__version__}\0{key}".encode()).hexdigest()
        return self.folder / name[:2] / f"{name}.json"

    def _warn(self, what: str) -> None:
        with self._lock:
            if not self.problems:
                self.problems.append(f"the cache of claim readings {self.folder} {what}; claims are read without it "
                                     f"(set {settings.CACHE_ENV}=off to turn it off)")


_TEMPORARY = itertools.count()


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    The temporary name holds the process, the thread and a counter, and is created with
    O_EXCL: unique among concurrent runs without mkstemp's random tries (10,000 entries).
    """
    temporary = os.path.join(path.parent, f".tmp-{os.getpid()}-{threading.get_ident()}-{next(_TEMPORARY)}.json")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # left by a crashed process of the same number: a random name instead
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        try:
            view = memoryview(data)
            while view:  # a plain write loop: a file object per entry cost more than the write
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:  # clean up the temporary file, then re-raise
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _encode(key: str, sha256: str, reading: StaticReading) -> bytes:
    return json.dumps(_fields(key, sha256, reading), allow_nan=True, separators=(",", ":")).encode("ascii")


def _fields(key: str, sha256: str, reading: StaticReading) -> dict[str, Any]:
    return {
        "format": FORMAT, "physverify": __version__, "key": key, "sha256": sha256,
        "binds": reading.binds, "claim": reading.claim, "problem": reading.problem,
        "imports": [[level, module, list(names)] for level, module, names in reading.imports],
        "notes": list(reading.notes),
    }  # written with ensure_ascii: a lone surrogate in a CLAIM value travels as its \u escape


def _entry(data: bytes, key: str) -> tuple[str, StaticReading] | None:
    """The entry in ``data`` when it is one, for ``key``, from this version and format; else None."""
    try:
        entry = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, cut short, or absurdly nested
        return None
    return _valid(entry, key)


def _valid(entry: object, key: str) -> tuple[str, StaticReading] | None:
    """(SHA-256, reading) of a decoded entry when it is one, for ``key``, from this version and format; else None."""
    if not isinstance(entry, dict) or set(entry) != _FIELDS:
        return None
    if (entry["format"], entry["physverify"], entry["key"]) != (FORMAT, __version__, key):
        return None
    if not (_is_hex(entry["sha256"], 64) and isinstance(entry["binds"], bool) and _optional_str(entry["problem"])
            and _claim_values(entry["claim"]) and _strings(entry["notes"])):
        return None
    imports = _imports(entry["imports"])
    if imports is None:
        return None
    reading = StaticReading(entry["binds"], entry["claim"], entry["problem"], imports, tuple(entry["notes"]))
    return entry["sha256"], reading


_FIELDS = frozenset({"format", "physverify", "key", "sha256", "binds", "claim", "problem", "imports", "notes"})


def _packed_fields(key: str, sha256: str, reading: StaticReading) -> list[Any]:
    """An entry of a checkout's file of readings: a list, its own key first (the file's header holds the version)."""
    return [key, sha256, reading.binds, reading.claim, reading.problem,
            [[level, module, list(names)] for level, module, names in reading.imports], list(reading.notes)]


def _valid_packed(entry: object, key: str) -> tuple[str, StaticReading] | None:
    """``_valid`` for an entry of a checkout's file of readings (``_packed_fields``)."""
    if not (isinstance(entry, list) and len(entry) == 7 and entry[0] == key):
        return None
    _, sha256, binds, values, problem, listed, notes = entry
    if not (_is_hex(sha256, 64) and isinstance(binds, bool) and _optional_str(problem) and _claim_values(values)
            and _strings(notes)):
        return None
    imports = _imports(listed)
    if imports is None:
        return None
    return sha256, StaticReading(binds, values, problem, imports, tuple(notes))


_HEX = re.compile(r"[0-9a-f]*")


def _is_hex(value: object, length: int) -> bool:
    return isinstance(value, str) and len(value) == length and _HEX.fullmatch(value) is not None


def _optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _claim_values(value: object) -> bool:
    """None, or a dict of string keys and string or number values: what claim.py reads from CLAIM."""
    if value is None:
        return True
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool) for k, v in value.items())


def _imports(value: object) -> tuple[claim.Import, ...] | None:
    if not isinstance(value, list):
        return None
    found = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3):
            return None
        level, module, names = item
        if not (isinstance(level, int) and not isinstance(level, bool) and level >= 0 and isinstance(module, str)
                and _strings(names)):
            return None
        found.append((level, module, tuple(names)))
    return tuple(found)


# --- one run's reader --------------------------------------------------------------------
class Readings:
    """How one run reads its claim files: through the index's object ids and the cache when there is one."""

    def __init__(self, cache: Cache | None, checkouts: repo.Checkouts) -> None:
        self.cache = cache
        self.checkouts = checkouts
        self._lock = threading.Lock()
        self._packs: dict[Path, dict[str, object]] = {}  # by checkout root: what its last run used
        self._used: dict[Path, dict[str, tuple[str, StaticReading]]] = {}  # by checkout root: what this run used
        self._missed: set[Path] = set()  # roots where a reading did not come from the last run's pack

    def read(self, path: Path, real: Path | None = None) -> ClaimReading:
        """The reading of ``path`` (resolved: ``real``): from the cache by the index's id (the file unopened), else claim.read."""
        if self.cache is None:
            return claim.read(path)
        checkout = self.checkouts.for_claim(path, None, real)
        root = checkout.real_root
        blob = checkout.blob_id(path, checkout.relative_real(real) if real is not None else None)
        kept = self._packed(root, blob) if blob is not None else None
        if kept is None:
            with self._lock:
                self._missed.add(root)
            kept = self.cache.get(blob) if blob is not None else None
        reading = claim.with_path(path, kept[0], kept[1], blob) if kept is not None else claim.read(path, self.cache)
        if reading.blob is not None and reading.sha256 is not None:  # read from its bytes (not too large, not unreadable)
            self._note(root, reading)
        return reading

    def _packed(self, root: Path, blob: str) -> tuple[str, StaticReading] | None:
        assert self.cache is not None
        with self._lock:
            if root not in self._packs:
                self._packs[root] = self.cache.load_pack(root)
            raw = self._packs[root].get(blob)
        return _valid_packed(raw, blob) if raw is not None else None

    def _note(self, root: Path, reading: ClaimReading) -> None:
        static = claim.StaticReading(reading.binds, reading.claim, _own_problem(reading), reading.imports, reading.notes)
        with self._lock:
            self._used.setdefault(root, {})[str(reading.blob)] = (str(reading.sha256), static)

    @property
    def problems(self) -> list[str]:
        return [] if self.cache is None else list(self.cache.problems)

    def close(self) -> None:
        """Keep each checkout's readings for its next run (when they changed), and bound the cache's size."""
        if self.cache is None:
            return
        for root, used in self._used.items():
            if root in self._missed or set(used) != set(self._packs.get(root, {})):
                self.cache.save_pack(root, used)
        if self.cache.written:
            self.cache.prune()


def _own_problem(reading: ClaimReading) -> str | None:
    """The problem as the content gives it, without the "<path>: " the reading put in front."""
    prefix = f"{reading.path}: "
    if reading.problem is None or not reading.problem.startswith(prefix):
        return reading.problem
    return reading.problem[len(prefix):]
