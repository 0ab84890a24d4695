"""A cache of static readings of claim files, keyed by their content (issue 19, item 3).

A replay of 10,000 claims must not parse 10,000 files when none of them changed. What
claim.py takes from one parse (``StaticReading``: whether the file binds CLAIM, the CLAIM
values, the imports, rule 1's notes) depends on the file's bytes alone, so it is kept here
between runs in the user's cache folder (platformdirs; ``$PHYSVERIFY_CACHE_DIR`` overrides
it, ``off`` disables it). Verdicts are never kept: a verdict depends on running the code,
and the gate re-runs what changed.

Entries live in ``SHARDS`` files, an entry in the file named by the first two hex digits of
its key, so that any checkout or clone of the same content finds it with one file read per
shard and run. A run's new entries are written together when it ends (``flush``), one file per
shard they fall in, not one file per content: with an empty cache, writing 10,000 files cost a
third of a 10,000-claim no-op (issue 19). Each checkout also keeps one file of the readings its
last run used (``save_pack``), so a run with nothing new reads one file, not 256.

The key is git's object id of the bytes (the SHA-1 ``git hash-object`` gives), so that in
a git checkout the ids come from ONE read of the index (``repo.Checkout.blob_id``) and a
file untouched since ``git add`` is not even opened. A file that differs from its index
entry, or is outside git, is read and hashed here; its entry is then used only when the
SHA-256 it stores is the one just computed. An entry holds its own key, the physverify
version and the format, and is checked field by field: an entry planted under another
content's name, written by another version, or cut short by a crash is never used, only
replaced. Writes go to a temporary file renamed into place, so a concurrent run reads the
old file or the new one, never half of one; a run merges its entries into a shard's file as
it is on disk at that moment, under a lock file, so concurrent runs keep each other's
entries (without the lock, as on a file system that refuses it, a lost entry is one more
parse, never a wrong reading). The folder is bounded: a shard keeps at most its share of
``MAX_ENTRIES`` and ``MAX_BYTES`` (the oldest entries go first, by the time they were
written), and ``prune`` drops the oldest files while the folder holds more than
``MAX_BYTES``. A cache that cannot be read or written is ignored with one warning line
(``problems``): the run reads every file itself.

The folder is trusted only when it is the user's: a folder (or the one holding it) that
belongs to another user or that the group or others can write is refused with the warning
line, as git's safe.directory and ssh refuse theirs, since anyone writing it could make a
claim vanish. Even in the user's own folder, an entry saying a file binds no CLAIM is never
taken on the index's id alone: the bytes are read, and parsed unless they vouch for it
(``claim.vouched``). Every file is opened without following a link or waiting, read only as a
regular file and within its limit. Inside the sandbox there is no cache (a repository under
test must not write what the host reads later). ``$PHYSVERIFY_CACHE_DIR`` may name a folder
shared with other tools: physverify keeps to ``OWN_FOLDER`` inside it, and ``prune`` removes
only files named as it names them.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from pathlib import Path

from physverify import __version__
from physverify import files
from physverify.gate import claim, parsepool, repo, settings
from physverify.gate.claim import ClaimReading, StaticReading

if TYPE_CHECKING:
    from concurrent.futures import Future

FORMAT = 3  # bump when StaticReading or what claim.py puts in it changes meaning (2: a lone surrogate
# in CLAIM's file or repo is a load error; 3: text that is not UTF-8 names its line, a NUL byte no "line None")
PACK_FORMAT = 2  # the form of a checkout's file of readings (2: entries as lists)
SHARD_FORMAT = 1  # the form of a shard's file (entries as [written_ns, key, ...], by key)
SHARDS = 256  # an entry's file: the first two hex digits of its key
MAX_ENTRIES = 50_000  # five repositories of 10,000 claims
MAX_BYTES = 64 << 20
MAX_ENTRY_BYTES = 64 << 10  # a reading larger than this (thousands of imports) is read each time instead
LOCK_WAIT_S = 2.0  # how long a run waits for another's lock on the shards before writing without it
OFF = "off"
OWN_FOLDER = "physverify"  # physverify's own folder inside the one $PHYSVERIFY_CACHE_DIR names: all it writes and prunes


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
    # A folder the variable names may be shared (a project's cache folder, /tmp): physverify keeps to a folder of
    # its own inside it, so its pruning never reaches a file it did not write.
    return Cache(Path(given) / OWN_FOLDER if given is not None else default_folder())


class Cache:
    """The readings kept in one folder; every failure is a miss, the first one also a warning line."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []  # at most one line: what went wrong first
        self.written = 0
        self._lock = threading.Lock()
        self._broken = False  # after a write failed, no more writes are tried in this run
        self._folders: set[Path] = set()  # the entry folders this run made or found
        self._shards: dict[str, dict[str, Any]] = {}  # by shard: its file's entries as this run first read them
        self._pending: dict[str, tuple[int, list[Any], str, StaticReading, str | None]] = {}  # by key: (written_ns,
        # entry, sha256, reading, the entry's JSON or None) for ``flush``
        self._texts: dict[str, tuple[str, StaticReading, str]] = {}  # by key: '"key":[...]' as ``flush`` encoded it
        self._may_hold: bool | None = None  # found on first use (``may_hold``)
        self._refused = False
        unsafe = next((why for why in map(_unsafe_folder, self._guarded()) if why is not None), None)
        if unsafe is not None:  # another user could have planted readings there: neither read nor written
            self._refused = self._broken = True
            self._warn(f"is not safe to use: {unsafe}")

    # --- reading ------------------------------------------------------------------------
    def may_hold(self) -> bool:
        """Whether a reading may be found here: False when the folder had neither shards nor checkouts' files when
        first asked (a first run, a CI runner's empty cache), so a look-up by the index's id would find nothing.

        Asked once per cache object, so before this run's ``flush``; an entry another run writes
        meanwhile is not looked for (a miss costs a parse, never a reading).
        """
        if self._may_hold is None:
            self._may_hold = not self._refused and any(os.path.isdir(self.folder / sub) for sub in ("shards", "packs"))
        return self._may_hold

    def get(self, key: str) -> tuple[str, StaticReading] | None:
        """(SHA-256, reading) kept for the content whose git object id is ``key``; None when absent or not valid."""
        if not _is_hex(key, 40):
            return None
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None:
            return _valid_packed(pending[1], key)
        raw = self._shard(key[:2]).get(key)
        if raw is None:
            return None
        found = _valid_kept(raw, key)
        if found is None:
            self._warn(f"holds an entry that is not valid ({self._shard_path(key[:2]).name}); it is ignored and "
                       "replaced")
        return found

    def _shard(self, prefix: str) -> dict[str, Any]:
        """The entries of shard ``prefix`` as its file held them when this run first asked (one read per shard)."""
        with self._lock:
            found = self._shards.get(prefix)
        if found is None:  # read outside the lock (a warning takes it); two threads reading it at once agree
            found = self._read_shard(prefix)
            with self._lock:
                found = self._shards.setdefault(prefix, found)
        return found

    def _read_shard(self, prefix: str) -> dict[str, Any]:
        """The entries in shard ``prefix``'s file now, each still to be checked (``_valid_kept``); {} when none."""
        path = self._shard_path(prefix)
        data = self._read(path, _SHARD_READ_LIMIT)
        if data is None:
            return {}
        try:
            shard = json.loads(data) if len(data) <= _SHARD_READ_LIMIT else None
        except (ValueError, RecursionError):  # not JSON, cut short, or absurdly nested
            shard = None
        fits = isinstance(shard, dict) and (shard.get("format"), shard.get("shard"), shard.get("physverify"),
                                            shard.get("prefix")) == (FORMAT, SHARD_FORMAT, __version__, prefix)
        entries = shard.get("entries") if fits else None  # type: ignore[union-attr]
        if not isinstance(entries, dict):
            self._warn(f"holds a file that is not valid ({path.name}); it is ignored and replaced")
            return {}
        return entries

    # --- writing ------------------------------------------------------------------------
    def put(self, key: str, sha256: str, reading: StaticReading) -> None:
        """Keep ``reading`` for the content whose git object id is ``key`` (SHA-256 ``sha256``); never raises.

        Kept in memory (``get`` finds it at once) and written by ``flush``, with the run's other entries.
        """
        if self._broken or not _is_hex(key, 40):
            return
        entry = _packed_fields(key, sha256, reading)
        try:  # encoded now, while the parse workers are busy, not all at once in ``flush`` at the run's end
            text: str | None = _ENCODER.encode(entry)
        except (TypeError, ValueError, OverflowError):  # a value JSON cannot hold as it is: ``_bounded`` decides
            text = None
        with self._lock:
            self._pending[key] = (_clock(), entry, sha256, reading, text)

    def flush(self) -> None:
        """Write the entries ``put`` kept, one file per shard they fall in, merged with what it holds; never raises."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if self._broken or not pending:
            return
        by_shard: dict[str, dict[str, list[Any]]] = {}
        for key, (written, entry, _, _, _) in pending.items():
            by_shard.setdefault(key[:2], {})[key] = [written, *entry]
        encoded = {key: text for key, (_, _, _, _, text) in pending.items() if text is not None}
        folder = self.folder / "shards"
        if not self._made(folder):
            return
        with _locked(folder / ".lock"):  # the shards as they are now, merged: a concurrent run's entries stay
            for prefix, new in sorted(by_shard.items()):
                entries = {key: raw for key, raw in self._read_shard(prefix).items()
                           if _is_hex(key, 40) and key[:2] == prefix and _valid_kept(raw, key)}
                entries.update(new)
                kept = _bounded(entries, encoded)
                for key in new.keys() & kept.keys():  # save_pack writes these again: encoded once
                    _, _, sha256, reading, _ = pending[key]
                    self._texts[key] = (sha256, reading, f'"{key}":{kept[key][1]}')  # keys are hex: no escape
                data = _shard_bytes(prefix, {key: text for key, (text, _) in kept.items()})
                if data is not None:
                    self._store(self._shard_path(prefix), data)
                if self._broken:
                    return

    def _made(self, folder: Path) -> bool:
        """Whether ``folder`` (inside the cache) exists, made here if needed, and is safe to write; once per run.

        Folders are made by this user, mode 0700 at every level made (a umask of 002 would
        leave them writable by the group, and the next run would refuse them); one found
        belonging to another user or writable by others stops this run's writes, with the warning.
        """
        if folder in self._folders:  # one mkdir per folder and run, not per entry
            return True
        try:
            _make_folders(folder, stop=self.folder.parent)
        except OSError as exc:
            self._broken = True
            self._warn(f"cannot be written ({exc.strerror or exc})")
            return False
        unsafe = _unsafe_folder(folder)
        if unsafe is not None:
            self._broken = True
            self._warn(f"is not safe to use: {unsafe}")
            return False
        self._folders.add(folder)
        return True

    def _guarded(self) -> list[Path]:
        """The folders whose owner and mode decide whether the cache is used: its own, the one holding it (the
        folder $PHYSVERIFY_CACHE_DIR names), and each folder of files inside it."""
        return [self.folder.parent, self.folder, *(self.folder / sub for sub in _SUBFOLDERS)]

    def _store(self, path: Path, data: bytes) -> None:
        """Write one file of the cache atomically and count it; a failure stops this run's writes, with one warning."""
        if not self._made(path.parent):
            return
        try:
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
        path = self._pack_path(root)
        data = self._read(path, MAX_BYTES)
        if data is None:
            return {}
        try:
            pack = json.loads(data) if len(data) <= MAX_BYTES else None
        except (ValueError, RecursionError):
            pack = None
        if pack is None:
            self._warn(f"holds a file of readings that is not valid ({path.name}); it is ignored and replaced")
            return {}
        fits = isinstance(pack, dict) and (pack.get("format"), pack.get("pack"), pack.get("physverify"),
                                           pack.get("root")) == (FORMAT, PACK_FORMAT, __version__, str(root))
        entries = pack.get("entries") if fits else None
        return entries if isinstance(entries, dict) else {}

    def save_pack(self, root: Path, readings: Mapping[str, tuple[str, StaticReading]]) -> None:
        """Keep the readings this run used for the checkout at ``root``, for the next run; never raises."""
        if self._broken:
            return
        # The file is the JSON of {"format", "pack", "physverify", "root", "entries": {key: _packed_fields}};
        # an entry ``flush`` encoded for the same reading is not encoded again (10,000 with an empty cache).
        entries = []
        for key, (sha256, reading) in readings.items():
            done = self._texts.pop(key, None)  # taken: once in this file, a text is not needed again
            if done is not None and done[0] == sha256 and done[1] == reading:
                entries.append(done[2])
                continue
            try:
                text = _ENCODER.encode(_packed_fields(key, sha256, reading))
                name = f'"{key}"' if key.isascii() and key.isalnum() else _ENCODER.encode(key)
            except (TypeError, ValueError, OverflowError):  # a value JSON cannot hold: the entries stay one per file
                return
            entries.append(f"{name}:{text}")
        header = _ENCODER.encode({"format": FORMAT, "pack": PACK_FORMAT, "physverify": __version__, "root": str(root)})
        data = f'{header[:-1]},"entries":{{{",".join(entries)}}}}}'.encode("ascii")
        self._store(self._pack_path(root), data)

    # --- other files of the cache, by name (noop.py's memo) ---------------------------------
    def read_file(self, name: str, limit: int) -> bytes | None:
        """The bytes of the cache's file ``name`` (a path inside the folder); None when absent, unreadable or
        larger than ``limit`` bytes (those two also give the warning line)."""
        data = self._read(self.folder / name, limit)
        if data is None:
            return None
        if len(data) > limit:
            self._warn(f"holds a file larger than expected ({name}); it is ignored and replaced")
            return None
        return data

    def _read(self, path: Path, limit: int) -> bytes | None:
        """At most ``limit`` + 1 bytes of ``path`` (one more tells it is too large); None when absent, unreadable or
        not a regular file (those two also give the warning line).

        Opened without following a link and without waiting, and read only when it is a regular
        file: a FIFO in a shard's place would block every run for ever, and a link to /dev/zero
        would never end.
        """
        if self._refused:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | _NO_FOLLOW | files.NO_WAIT)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a symbolic link in the file's place
            self._warn(f"cannot be read ({path.name}: {exc.strerror or exc})")
            return None
        try:
            kind = files.not_regular(fd)
            if kind is not None:
                self._warn(f"holds {kind} where a file should be ({path.name}); it is ignored")
                return None
            return _read_fd(fd, limit + 1)
        except OSError as exc:
            self._warn(f"cannot be read ({path.name}: {exc.strerror or exc})")
            return None
        finally:
            os.close(fd)

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
        """Drop the oldest files (shards, checkouts' files) until at most MAX_ENTRIES files of MAX_BYTES in all are left.

        A shard bounds its own entries when it is written (``_bounded``); this bounds the folder,
        also files an earlier layout left (one file per entry). Only files physverify writes are
        counted or removed: named by a hash, in one of its subfolders (``_OURS_FOLDER``); anything
        else a shared folder holds stays, whatever its name.
        """
        if self._refused:
            return
        entries = []
        try:
            for sub in os.scandir(self.folder):
                if sub.is_dir(follow_symlinks=False) and _OURS_FOLDER.fullmatch(sub.name):
                    for entry in os.scandir(sub.path):
                        if _OURS_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
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

    def _shard_path(self, prefix: str) -> Path:
        # The name depends on the format and the version too, so another version's file is never opened.
        name = hashlib.sha256(f"{FORMAT}\0{SHARD_FORMAT}\0{__version__}\0shard\0{prefix}".encode()).hexdigest()
        return self.folder / "shards" / f"{name}.json"

    def _warn(self, what: str) -> None:
        with self._lock:
            if not self.problems:
                self.problems.append(f"the cache of claim readings {self.folder} {what}; claims are read without it "
                                     f"(set {settings.CACHE_ENV}=off to turn it off)")


_TEMPORARY = itertools.count()
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SUBFOLDERS = ("shards", "packs", "noop")  # the folders of files physverify writes (noop.FOLDER: the memos)
# What prune may remove: a file named by a hash, in one of those folders or in one named by two hex digits (the
# layout of one file per entry that shards replaced); never another name, never a file in another folder.
_OURS_FOLDER = re.compile(r"shards|packs|noop|[0-9a-f]{2}")
_OURS_FILE = re.compile(r"[0-9a-f]{64}\.json")


def _unsafe_folder(folder: Path) -> str | None:
    """Why ``folder`` cannot hold readings this user trusts: another user's, or writable by group or others (the
    rule git's safe.directory and ssh's StrictModes apply); None when it is safe or does not exist yet.

    root's own folders count as safe (root can write anywhere already). A link is followed:
    what counts is the folder it leads to. Not asked where there are no owners (Windows).
    """
    if not hasattr(os, "geteuid"):
        return None
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{folder} cannot be looked at ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return None  # not a folder: reading and writing fail there, with their own warning
    if st.st_uid not in (os.geteuid(), 0):
        return f"{folder} belongs to another user (uid {st.st_uid}), who could plant readings there"
    if st.st_mode & 0o022:
        return (f"{folder} can be written by {'others' if st.st_mode & 0o002 else 'its group'} (mode "
                f"{stat.S_IMODE(st.st_mode):o}), who could plant readings there; chmod go-w it, or name another folder")
    return None


def _make_folders(folder: Path, stop: Path) -> None:
    """Make ``folder`` and the folders missing on the way to it, each mode 0700 (``os.makedirs`` gives the ones
    on the way the umask's mode); ``stop``'s own parents are made as makedirs makes them."""
    missing = []
    walk = folder
    while not walk.is_dir():
        missing.append(walk)
        if walk == stop or walk.parent == walk:
            break
        walk = walk.parent
    for made in reversed(missing):
        if made == stop:
            made.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:
            if not made.is_dir():
                raise


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


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (made if missing) for the block, when it can be had within LOCK_WAIT_S.

    Without it (no fcntl, a file system that refuses locks, a run holding it too long) the
    block runs anyway: every write is still atomic, and a lost update only costs a parse.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.01)
            except OSError:  # locks not supported here
                break
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


_clock = time.time_ns  # when an entry is written: its age for ``_bounded``


def _read_fd(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of the open file ``fd``, from where it is to its end."""
    blocks: list[bytes] = []
    total = 0
    while total < limit:
        block = os.read(fd, min(limit - total, 1 << 20))
        if not block:
            break
        blocks.append(block)
        total += len(block)
    return b"".join(blocks)


_SHARD_READ_LIMIT = 4 * MAX_BYTES // SHARDS + MAX_ENTRY_BYTES  # a shard's file larger than this was not written here
_ENCODER = json.JSONEncoder(allow_nan=True, separators=(",", ":"))  # ensure_ascii: a lone surrogate travels escaped


def _bounded(entries: dict[str, list[Any]], encoded: Mapping[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """The newest entries of a shard within its share of MAX_ENTRIES and MAX_BYTES, by key, each encoded twice:
    as the shard holds it ([written_ns, key, ...]) and as a checkout's file does ([key, ...], ``_packed_fields``).

    The oldest go first (by the time they were written; the key breaks a tie). An entry JSON
    cannot hold, or larger than MAX_ENTRY_BYTES, is left out: its file is read each time instead.
    The second form is the first without its leading number: one encoding gives both.
    ``encoded`` holds that second form for entries encoded already (``put``: this run's).
    """
    most, room = max(1, math.ceil(MAX_ENTRIES / SHARDS)), max(MAX_BYTES // SHARDS, MAX_ENTRY_BYTES)
    kept: dict[str, tuple[str, str]] = {}
    for key, raw in sorted(entries.items(), key=lambda item: (-item[1][0], item[0])):
        if len(kept) >= most:
            break
        try:
            packed = encoded.get(key) if encoded is not None else None
            if packed is None:
                packed = _ENCODER.encode(raw[1:])
            text = f"[{int.__repr__(raw[0])},{packed[1:]}"  # as JSON writes the integer
        except (TypeError, ValueError, OverflowError):  # a value JSON cannot hold as it is
            continue
        if len(text) > MAX_ENTRY_BYTES or len(text) + len(key) + 4 > room:
            continue
        kept[key] = (text, packed)
        room -= len(text) + len(key) + 4
    return kept


def _shard_bytes(prefix: str, entries: Mapping[str, str]) -> bytes | None:
    """A shard's file: its header (format, version, prefix) and its encoded entries; None when there are none."""
    if not entries:
        return None
    header = _ENCODER.encode({"format": FORMAT, "shard": SHARD_FORMAT, "physverify": __version__, "prefix": prefix})
    body = ",".join(f'"{key}":{text}' for key, text in entries.items())  # keys are hex: nothing to escape
    return f'{header[:-1]},"entries":{{{body}}}}}'.encode("ascii")


def _valid_kept(raw: object, key: str) -> tuple[str, StaticReading] | None:
    """``_valid_packed`` for an entry of a shard: [written_ns, key, sha256, ...]."""
    if not (isinstance(raw, list) and len(raw) == 8 and isinstance(raw[0], int) and not isinstance(raw[0], bool)):
        return None
    return _valid_packed(raw[1:], key)


def _packed_fields(key: str, sha256: str, reading: StaticReading) -> list[Any]:
    """An entry of a checkout's file of readings: a list, its own key first (the file's header holds the version)."""
    return [key, sha256, *claim.static_fields(reading)]


def _valid_packed(entry: object, key: str) -> tuple[str, StaticReading] | None:
    """``_valid`` for an entry of a checkout's file of readings (``_packed_fields``).

    Every worker answer and every entry read from disk comes through here (10,000 with an
    empty cache), so the checks are loops with early exits rather than ``all`` over
    generators; they accept exactly what the helpers below accept.
    """
    if not (isinstance(entry, list) and len(entry) == 7 and entry[0] == key):
        return None
    _, sha256, binds, values, problem, listed, notes = entry
    if not (_is_hex(sha256, 64) and isinstance(binds, bool) and (problem is None or isinstance(problem, str))):
        return None
    if values is not None:
        if not isinstance(values, dict):
            return None
        for name, value in values.items():
            if not (isinstance(name, str) and isinstance(value, (str, int, float)) and not isinstance(value, bool)):
                return None
    if not isinstance(notes, list):
        return None
    for note in notes:
        if not isinstance(note, str):
            return None
    imports = _imports(listed)
    if imports is None:
        return None
    return sha256, StaticReading(binds, values, problem, imports, tuple(notes))


_HEX_DIGITS = "0123456789abcdef"


def _is_hex(value: object, length: int) -> bool:
    # strip() removes every leading and trailing hex digit: nothing is left only when all are (four
    # calls per claim read with an empty cache; a regular expression's fullmatch cost more)
    return isinstance(value, str) and len(value) == length and not value.strip(_HEX_DIGITS)


def _imports(value: object) -> tuple[claim.Import, ...] | None:
    if not isinstance(value, list):
        return None
    found = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3):
            return None
        level, module, names = item
        if not (isinstance(level, int) and not isinstance(level, bool) and level >= 0 and isinstance(module, str)
                and isinstance(names, list)):
            return None
        for name in names:
            if not isinstance(name, str):
                return None
        found.append((level, module, tuple(names)))
    return tuple(found)


# --- one run's reader --------------------------------------------------------------------
class Readings:
    """How one run reads its claim files: through the index's object ids and the cache when there is one."""

    def __init__(self, cache: Cache | None, checkouts: repo.Checkouts, pool: parsepool.Pool | None = None) -> None:
        self.cache = cache
        self.checkouts = checkouts
        self.pool = parsepool.Pool() if pool is None else pool  # its workers start only for many files to parse
        self._lock = threading.Lock()
        self._packs: dict[Path, dict[str, object]] = {}  # by checkout root: what its last run used
        self._used: dict[Path, dict[str, tuple[str, StaticReading]]] = {}  # by checkout root: what this run used
        self._missed: set[Path] = set()  # roots where a reading did not come from the last run's pack

    def read(self, path: Path, real: Path | None = None) -> ClaimReading:
        """The reading of ``path`` (resolved: ``real``): from the cache by the index's id (the file unopened), else claim.read."""
        if self.cache is None:
            return claim.read(path)
        root, kept, _ = self._kept(path, real)
        reading = kept if kept is not None else claim.read(path, self.cache)
        return self._noted(root, reading)

    def read_each(self, candidates: Sequence[tuple[Path, Path]]) -> Iterator[ClaimReading]:
        """``read(path, real)`` of each candidate, in order, a window at a time.

        A generator, so the first claims can start while later ones are still being read.
        When a window has at least ``parsepool.MIN_BATCH`` files that neither the cache nor
        this process's memory holds, they are parsed in the pool's workers, the next window
        being read meanwhile; the readings are those ``read`` gives (each answer is checked
        as a cache entry is, and a file a worker did not answer is parsed here).
        """
        waiting: _Window | None = None
        start, size = 0, _FIRST_WINDOW
        while start < len(candidates):
            window = self._begin(candidates[start:start + size])
            start, size = start + size, min(2 * size, _WINDOW)
            if waiting is not None:
                yield from self._end(waiting)
            waiting = window
        if waiting is not None:
            yield from self._end(waiting)

    def _kept(self, path: Path, real: Path | None) -> tuple[Path | None, ClaimReading | None, str | None]:
        """The checkout's root, the reading kept for ``path``'s index id (the file unopened) when there is one, and
        the id the cache was asked for in vain (None when it was not asked)."""
        if self.cache is None:
            return None, None, None
        checkout = self.checkouts.for_claim(path, None, real)
        root = checkout.real_root
        if not self.cache.may_hold():  # an empty cache: the index (read with a git process) would find nothing
            with self._lock:
                self._missed.add(root)
            return root, None, None
        blob = checkout.blob_id(path, checkout.relative_real(real) if real is not None else None)
        kept = self._packed(root, blob) if blob is not None else None
        if kept is None:
            with self._lock:
                self._missed.add(root)
            kept = self.cache.get(blob) if blob is not None else None
        if kept is None:
            return root, None, blob
        if not kept[1].binds:  # "no CLAIM" is never taken unread: the bytes are read, and parsed unless they vouch
            return root, None, None
        return root, claim.with_path(path, kept[0], kept[1], blob), None

    def _noted(self, root: Path | None, reading: ClaimReading) -> ClaimReading:
        if root is not None and reading.blob is not None and reading.sha256 is not None:  # read from its bytes
            self._note(root, reading)
        return reading

    def _begin(self, window: Sequence[tuple[Path, Path]]) -> _Window:
        """Read what the window can give without a parse, and start the parses (in the pool when they are many)."""
        done: list[ClaimReading | None] = []
        roots: list[Path | None] = []
        parse: list[tuple[int, Path, claim.Contents]] = []
        for i, (path, real) in enumerate(window):
            root, reading, asked = self._kept(path, real)
            if reading is None:
                found = claim.contents(path)
                if isinstance(found, claim.Contents):
                    reading = self._known(path, found, asked)
                    if reading is None:
                        parse.append((i, path, found))
                else:
                    reading = found
            done.append(reading)
            roots.append(root)
        small = [(i, path, found) for i, path, found in parse if len(found.data) <= parsepool.MAX_CONTENT]
        if len(small) < parsepool.MIN_BATCH or not self.pool.usable:
            small = []  # all parsed here, in ``_end``: too few to pay for the workers
        futures = self.pool.submit([(found.sha256, found.data) for _, _, found in small]) if small else []
        sent = {i for i, _, _ in small}
        return _Window(done, roots, small + [item for item in parse if item[0] not in sent], futures)

    def _known(self, path: Path, found: claim.Contents, asked: str | None = None) -> ClaimReading | None:
        """The reading of ``found`` from the cache by its own id, or from this process's memory; None: to parse.

        ``asked`` is an id the cache just had no entry for: when it is the bytes' own (the file as the index saw
        it, the common case), the cache is not asked again (a miss costs a parse, never a reading).
        """
        store = self.cache
        kept = store.get(found.blob) if store is not None and found.blob != asked and store.may_hold() else None
        if kept is not None and kept[0] == found.sha256 and claim.vouched(kept[1], found.data):  # never another's hash
            return claim.with_path(path, found.sha256, kept[1], found.blob)
        static = claim.remembered(found.sha256)
        if static is None:
            return None
        if self.cache is not None:
            self.cache.put(found.blob, found.sha256, static)
        return claim.with_path(path, found.sha256, static, found.blob)

    def _end(self, window: _Window) -> Iterator[ClaimReading]:
        answers: list[object] = [answer for future in window.futures for answer in future.result()]
        for j, (i, path, found) in enumerate(window.parse):
            static = None
            if j < len(answers) and isinstance(answers[j], list):
                checked = _valid_packed([found.blob, found.sha256, *answers[j]], found.blob)  # type: ignore[misc]
                static = checked[1] if checked is not None else None
            if static is None:
                static = claim.static_reading(found.data, found.sha256)  # not answered: parsed here
            else:
                claim.keep(found.sha256, static)
            if self.cache is not None:
                self.cache.put(found.blob, found.sha256, static)
            window.done[i] = claim.with_path(path, found.sha256, static, found.blob)
        for root, reading in zip(window.roots, window.done):
            assert reading is not None
            yield self._noted(root, reading)

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
        """End the pool's workers; keep each checkout's readings for its next run (when they changed), bound the cache."""
        self.pool.close()
        if self.cache is None:
            return
        self.cache.flush()
        for root, used in self._used.items():
            if root in self._missed or set(used) != set(self._packs.get(root, {})):
                self.cache.save_pack(root, used)
        if self.cache.written:
            self.cache.prune()


# Candidates read together: the first window is small, so the first claims start soon (it is parsed
# here, below parsepool.MIN_BATCH), and each next one twice as large, up to _WINDOW.
_FIRST_WINDOW = 32
_WINDOW = 256


@dataclass
class _Window:
    """A window of candidates being read: the readings so far, and the parses under way."""

    done: list[ClaimReading | None]
    roots: list[Path | None]
    parse: list[tuple[int, Path, claim.Contents]]  # (index in the window, path, contents) to parse: the workers' first
    futures: list[Future[list[object]]]  # the workers' answers for the first items of ``parse``, in order


def _own_problem(reading: ClaimReading) -> str | None:
    """The problem as the content gives it, without the "<path>: " the reading put in front."""
    prefix = f"{reading.path}: "
    if reading.problem is None or not reading.problem.startswith(prefix):
        return reading.problem
    return reading.problem[len(prefix):]
