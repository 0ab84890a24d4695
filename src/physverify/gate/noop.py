"""A replay that ran nothing, remembered: the next identical one is answered by checking stats (issue 19).

The pre-commit hook and ``--changed-since`` mostly plan every claim and run none: nothing
the change touches reaches a claim. With 10,000 claims that planning (each claim's
reading, key and import closure, the committed ledger parsed) still costs seconds,
although nothing it looked at has changed. So when such a replay runs nothing, what its
planning found is kept in the cache folder (``Cache.write_file``): the claim keys in
order, each claim's inputs when they were needed, and the stat of everything planning
consulted: every claim file, every folder discovery listed, every module file the
closures read and every path a module lookup tried, the settings files.

The next replay with the same key material (physverify and Python versions, the claims
folders, checkouts and ledger resolved as this run resolves them, the committed ledger's
git object id, the baseline ref, the shard) checks those stats. When every one is as
kept, it judges its own change set against the kept inputs, and only when no claim can
be affected does it answer from the memo. Anything else is a miss: planning runs in full
(and a no-op keeps a new memo).

Why a stat is enough: a file's (mtime, ctime, size, inode, device) change when its bytes
do, and a folder's (mtime, ctime, inode, device) when an entry is added, removed or
renamed in it. A module lookup depends on the paths it tried alone, so those are kept
one by one: a file found by its stat, a folder found by its identity, a path where
nothing was found as a path where nothing may be (a new file next to them, in the
repository's root say, changes nothing kept). ctime cannot be set by a user's tools. The gap is an edit within the same
tick of the file system's clock as the stat planning saw, so a memo is not kept when any
stat it would hold is less than ``RACY_NS`` older than the run's start (git's "racily
clean" rule; two seconds covers file systems that keep whole seconds). A path that
resolves through a symbolic link inside the checkout is not kept (a link's target can
change without its folder changing), nor is a plan with a warning, a claim new to the
baseline, renamed or removed, or a claim whose checkout is not its folder's: those plan
in full every time.

The memo holds the key material it was written for and is used only for that material;
a memo planted for other material, malformed or cut short is a miss. It holds no
verdict: which claims exist, what they read, and that none of them needed to run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from physverify import __version__
from physverify.gate.cache import Cache

FORMAT = 2  # bump when what a memo holds or how it is checked changes meaning
RACY_NS = 2 * 10**9  # stats younger than this at the run's start are not kept
MAX_BYTES = 64 << 20  # a memo larger than this is not read (10,000 claims take about 1.5 MB)
FOLDER = "noop"  # inside the cache folder

FileStat = tuple[int, int, int, int, int]  # (mtime_ns, ctime_ns, size, inode, device) of a regular file
DirStat = tuple[int, int, int, int]  # (mtime_ns, ctime_ns, inode, device) of a folder


def material(parts: Sequence[object]) -> str:
    """The key material of a run: ``parts`` (strings, numbers, lists of them) with this format and these versions."""
    return json.dumps([FORMAT, __version__, list(sys.version_info[:2]), *parts], separators=(",", ":"),
                      ensure_ascii=True)


def _name(key_material: str) -> str:
    return f"{FOLDER}/{hashlib.sha256(key_material.encode('ascii')).hexdigest()}.json"


# --- recording ----------------------------------------------------------------------------
@dataclass
class Recorder:
    """What one replay's planning consulted, collected as it goes (``remember`` keeps it).

    ``start_ns`` is taken before anything is read: a stat younger than RACY_NS before it is
    not kept. Claims are recorded in planning order; ``inputs`` is None for a claim whose
    closure was not needed (nothing changed in its checkout).
    """

    start_ns: int = field(default_factory=time.time_ns)
    listed: list[str] = field(default_factory=list)  # real folders discovery listed
    refused: bool = False  # planning met what a stat cannot vouch for (a link, CLAIM["repo"]): nothing is kept
    keys: list[str] = field(default_factory=list)
    claims: list[tuple[str, str, frozenset[str] | None]] = field(default_factory=list)  # (real path, real root, inputs)
    paths: set[str] = field(default_factory=set)  # other paths planning looked up or resolved

    def claim(self, key: str, real: Path, root: Path, inputs: frozenset[str] | None) -> None:
        own = inputs - {key} if inputs is not None else None
        self.keys.append(key)
        self.claims.append((str(real), str(root), own))


def remember(cache: Cache, key_material: str, recorder: Recorder,
             probed: Mapping[Path, bool | None] | None = None) -> bool:
    """Keep ``recorder``'s plan as the memo of ``key_material``, when every stat it holds can be trusted.

    ``probed`` are the paths the import closures' module lookups looked at, with what each
    found (``affected.Closures.probed``). Returns whether the memo was written (a stat too
    young, a link, a path that changed while planning looked: not kept).
    """
    if recorder.refused:
        return False
    limit = recorder.start_ns - RACY_NS
    kept = _Kept()
    try:
        for folder in recorder.listed:
            kept.dirs[folder] = _dir_stat(folder, limit)
        for real, _, _ in recorder.claims:
            kept.files[real] = _file_stat(real, limit)
        for tried, found in (probed or {}).items():
            _looked_up(os.fspath(tried), found, limit, kept)
        for path in recorder.paths:
            _consulted(path, limit, kept)
    except _NotKept:
        return False
    roots = {root: i for i, root in enumerate(sorted({root for _, root, _ in recorder.claims}))}
    groups: dict[frozenset[str], int] = {}
    claims: list[int] = []  # flat: each claim's root and group (-1: its inputs were not needed)
    for _, root, inputs in recorder.claims:
        claims += (roots[root], -1 if inputs is None else groups.setdefault(inputs, len(groups)))
    memo = {
        "format": FORMAT, "physverify": __version__, "material": key_material, "keys": recorder.keys,
        "roots": list(roots), "claims": claims, "groups": [sorted(group) for group in groups],
        "files": [[path, *st] for path, st in kept.files.items()],
        "dirs": [[path, *st] for path, st in kept.dirs.items()],
        "folders": [[path, *st] for path, st in kept.folders.items()], "absent": sorted(kept.absent),
    }
    # strings and integers only; ensure_ascii writes a name's lone surrogate (os.fsdecode's) as its escape
    data = json.dumps(memo, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    if len(data) > MAX_BYTES:
        return False
    cache.write_file(_name(key_material), data)
    return True


@dataclass
class _Kept:
    """What a memo checks: regular files by stat, folders by listing, folders by identity, paths that must not exist."""

    files: dict[str, FileStat] = field(default_factory=dict)
    dirs: dict[str, DirStat] = field(default_factory=dict)  # their listing mattered (mtime, ctime)
    folders: dict[str, tuple[int, int]] = field(default_factory=dict)  # only that they are these folders (inode, device)
    absent: set[str] = field(default_factory=set)


class _NotKept(Exception):
    """A stat that cannot be trusted, or a path that resolves through a link: the plan is not kept."""


def _settled(path: str, limit: int, kind: Callable[[int], bool]) -> os.stat_result:
    """``path``'s own stat when it is of ``kind`` (no link) and both its times are before ``limit``."""
    try:
        st = os.lstat(path)
    except OSError:
        raise _NotKept from None
    if not kind(st.st_mode) or st.st_mtime_ns >= limit or st.st_ctime_ns >= limit:
        raise _NotKept
    return st


def _file_stat(path: str, limit: int) -> FileStat:
    st = _settled(path, limit, stat.S_ISREG)
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def _dir_stat(path: str, limit: int) -> DirStat:
    st = _settled(path, limit, stat.S_ISDIR)
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _gone(path: str) -> bool:
    """Whether nothing is at ``path`` (no entry, or a file where a folder on the way would be)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        raise _NotKept from None
    return False


def _looked_up(path: str, found: bool | None, limit: int, kept: _Kept) -> None:
    """Keep what a module lookup found at ``path``: the file by its stat, a folder by identity, nothing as absent.

    Only the path itself matters to the lookup, so a file added next to it changes nothing
    kept. A path whose answer changed while planning looked, or that resolves through a
    link (its key could change with the same stats), is not kept.
    """
    absolute = os.path.abspath(path)
    if found is None:
        raise _NotKept
    if not found:
        if not _gone(absolute):
            raise _NotKept  # something is there now (made during the run), or a folder where a file was looked for
        kept.absent.add(absolute)
        return
    if os.path.realpath(absolute) != absolute:
        raise _NotKept
    try:
        st = os.lstat(absolute)
    except OSError:
        raise _NotKept from None
    if stat.S_ISDIR(st.st_mode):
        if st.st_ctime_ns >= limit:
            raise _NotKept
        kept.folders[absolute] = (st.st_ino, st.st_dev)
    else:
        kept.files[absolute] = _file_stat(absolute, limit)  # a link, a FIFO: _file_stat refuses it


def _consulted(path: str, limit: int, kept: _Kept) -> None:
    """Keep what decides how ``path`` resolves: its own stat when it exists, else its nearest folder's listing.

    For paths whose key planning computed whether or not they exist (a claim's target, the
    settings, the ledger). Nothing is kept when the path resolves through a link.
    """
    absolute = os.path.abspath(path)
    try:
        st = os.lstat(absolute)
    except FileNotFoundError:
        st = None
    except OSError:  # a name too long, a folder that cannot be searched: not something a stat can vouch for
        raise _NotKept from None
    if st is not None:
        if os.path.realpath(absolute) != absolute:
            raise _NotKept
        if stat.S_ISDIR(st.st_mode):
            kept.dirs.setdefault(absolute, _dir_stat(absolute, limit))
        else:
            kept.files.setdefault(absolute, _file_stat(absolute, limit))  # a link, a FIFO: _file_stat refuses it
        return
    folder = os.path.dirname(absolute)
    while True:
        if folder in kept.dirs:
            return
        try:
            found = os.lstat(folder)
        except FileNotFoundError:
            parent = os.path.dirname(folder)
            if parent == folder:
                raise _NotKept from None
            folder = parent
            continue
        except OSError:
            raise _NotKept from None
        if not stat.S_ISDIR(found.st_mode) or os.path.realpath(folder) != folder:
            raise _NotKept  # a file where a folder would be, or a link
        kept.dirs[folder] = _dir_stat(folder, limit)
        return


# --- answering ----------------------------------------------------------------------------
class Memo(NamedTuple):
    """A kept plan whose every stat was found as kept: the claims, their checkouts and inputs.

    Claim i has key ``keys[i]``, checkout ``roots[claim_roots[i]]`` and the inputs
    ``groups[claim_groups[i]]`` besides its own file (-1: not found when the memo was kept).
    """

    keys: tuple[str, ...]
    roots: tuple[str, ...]
    claim_roots: tuple[int, ...]
    claim_groups: tuple[int, ...]
    groups: tuple[frozenset[str], ...]

    def skipped(self, changed: Mapping[str, frozenset[str]]) -> tuple[str, ...] | None:
        """The claim keys (all skipped) when no claim's inputs meet its checkout's changes; None when one may.

        ``changed``: each real root's changed keys, as this run found them. A claim whose
        inputs were not found when the memo was kept can only be skipped with no change.
        """
        for index, root in enumerate(self.roots):
            found = changed.get(root)
            if found is None:
                return None  # a checkout this run did not look at
            if not found:
                continue
            mine = [i for i, r in enumerate(self.claim_roots) if r == index] if len(self.roots) > 1 else None
            keys = self.keys if mine is None else [self.keys[i] for i in mine]
            used = set(self.claim_groups if mine is None else (self.claim_groups[i] for i in mine))
            reached = {g for g in used if g >= 0 and not self.groups[g].isdisjoint(found)}
            if -1 in used or reached or not found.isdisjoint(keys):
                return None
        return self.keys


INVALID = "holds a memo of a replay that is not valid; it is ignored and replaced"


def recall(cache: Cache, key_material: str) -> tuple[Memo | None, str | None]:
    """The memo kept for ``key_material`` when it is one and every stat in it is as kept, else None; and a problem.

    The problem (``INVALID``: a file there that is not a memo for this material) is for
    the caller to give as the cache's warning line once it has decided whether to keep a
    new memo: that warning must not stop the replacement from being kept.
    """
    data = cache.read_file(_name(key_material), MAX_BYTES)
    if data is None:
        return None, None
    try:
        decoded = json.loads(data)
    except (ValueError, RecursionError):
        decoded = None
    found = _valid(decoded, key_material)
    same = _unchanged(*found[1]) if found is not None else None
    if found is None or same is None:
        return None, INVALID
    return (found[0] if same else None), None


def _valid(memo: Any, key_material: str) -> tuple[Memo, list[list[Any]]] | None:
    """The memo in a decoded file when it is one for ``key_material`` (its stats are checked by ``_unchanged``)."""
    if not isinstance(memo, dict) or set(memo) != _FIELDS:
        return None
    if (memo["format"], memo["physverify"], memo["material"]) != (FORMAT, __version__, key_material):
        return None
    keys, roots, claims, groups, files, dirs, folders, absent = (
        memo[name] for name in ("keys", "roots", "claims", "groups", "files", "dirs", "folders", "absent"))
    if not (_strings(keys) and _strings(roots) and isinstance(groups, list) and all(_strings(g) for g in groups)
            and isinstance(claims, list) and len(claims) == 2 * len(keys) and set(map(type, claims)) <= {int}
            and isinstance(files, list) and isinstance(dirs, list) and isinstance(folders, list) and _strings(absent)):
        return None
    claim_roots, claim_groups = tuple(claims[0::2]), tuple(claims[1::2])
    if keys and not (0 <= min(claim_roots) and max(claim_roots) < len(roots)
                     and -1 <= min(claim_groups) and max(claim_groups) < len(groups)):
        return None
    memo_ = Memo(tuple(keys), tuple(roots), claim_roots, claim_groups, tuple(frozenset(g) for g in groups))
    return memo_, [files, dirs, folders, absent]


_FIELDS = frozenset({"format", "physverify", "material", "keys", "roots", "claims", "groups", "files", "dirs",
                     "folders", "absent"})


def _unchanged(files: list[Any], dirs: list[Any], folders: list[Any], absent: list[str]) -> bool | None:
    """Whether every kept file and folder still has its stat, and nothing is where nothing was; None: not a memo's."""
    lstat, is_reg, is_dir = os.lstat, stat.S_ISREG, stat.S_ISDIR
    try:
        for path, mtime, ctime, size, ino, dev in files:
            if type(path) is not str:
                return None
            st = lstat(path)
            if (st.st_mtime_ns != mtime or st.st_ctime_ns != ctime or st.st_size != size or st.st_ino != ino
                    or st.st_dev != dev or not is_reg(st.st_mode)):
                return False
        for path, mtime, ctime, ino, dev in dirs:
            if type(path) is not str:
                return None
            st = lstat(path)
            if (st.st_mtime_ns != mtime or st.st_ctime_ns != ctime or st.st_ino != ino or st.st_dev != dev
                    or not is_dir(st.st_mode)):
                return False
        for path, ino, dev in folders:
            if type(path) is not str:
                return None
            st = lstat(path)
            if st.st_ino != ino or st.st_dev != dev or not is_dir(st.st_mode):
                return False
        for path in absent:
            try:
                lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            return False
    except (TypeError, ValueError):  # not a list of stats, a NUL in a name: not a memo physverify wrote
        return None
    except OSError:  # gone, or no longer reachable: changed
        return False
    return True


def _strings(value: object) -> bool:
    return isinstance(value, list) and set(map(type, value)) <= {str}
