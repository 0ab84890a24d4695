"""Which files under a claims folder are claims, each read once (DESIGN.md, "Replay: the gate").

Discovery walks a claims folder without entering hidden folders or installed code, takes the
regular ``*.py`` files that are not private or excluded, and keeps those whose top level binds
CLAIM, read statically. Nothing here runs a file. The claims folders a run is given are
checked here too (``claims_folders``), and ``gone`` says whether a path is still a claim file.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path

from physverify.errors import UsageError
from physverify.gate import claim, noop

DEFAULT_CLAIMS_DIR = "claims"
# Folders that hold installed or generated code, never claims (one set, used only here).
SKIP_DIRS = frozenset({"venv", ".venv", "env", "site-packages", "build", "dist", "node_modules", "__pycache__"})


def is_skipped_dir(name: str) -> bool:
    """True for hidden folders and folders of installed or generated code (venv, build, ...)."""
    return name.startswith(".") or name in SKIP_DIRS


def _excluded(relative: str, globs: Sequence[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(relative, g) or fnmatch.fnmatchcase(name, g) for g in globs)


def regular(path: Path | str) -> bool:
    # Only regular files are read: a FIFO (or a device) named x.py would block the read forever.
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def discover(folder: Path, exclude: Sequence[str] = ()) -> list[Path]:
    """Claim files under ``folder``: regular *.py files binding CLAIM at top level (read statically), sorted."""
    return [reading.path for reading in read_claims(folder, exclude)]


def read_claims(folder: Path, exclude: Sequence[str] = (),
                read: Callable[[Path], claim.ClaimReading] = claim.read) -> Iterator[claim.ClaimReading]:
    """The reading of each claim file under ``folder`` (``read`` reads each candidate once), sorted by path.

    A generator, so the first claims can start while later ones are still being read.
    """
    for reading, _ in claim_readings(folder, exclude, lambda candidates: (read(path) for path, _ in candidates)):
        yield reading


# (path, its resolved path) of each candidate -> their readings, in order (cache.Readings.read_each)
Reader = Callable[[Sequence[tuple[Path, Path]]], Iterable[claim.ClaimReading]]


def claim_readings(folder: Path, exclude: Sequence[str], read: Reader,
                 recorder: noop.Recorder | None = None,
                 only: Collection[Path] | None = None) -> Iterator[tuple[claim.ClaimReading, Path]]:
    """``read_claims``, each reading with the file's resolved path (found without resolving it part by part);
    with ``only`` (resolved paths), those claims alone are read."""
    found = candidates(folder, exclude, recorder)
    if only is not None:
        found = [(path, real) for path, real in found if real in only]
    for (_, real), reading in zip(found, read(found)):
        if reading.binds:  # files without CLAIM are helpers
            yield reading, real


def candidates(folder: Path, exclude: Sequence[str], recorder: noop.Recorder | None = None) -> list[tuple[Path, Path]]:
    """Regular *.py files under ``folder`` that may hold a claim (not _private, not excluded), sorted; each resolved.

    Linked folders are not entered (as os.walk does not), so a file that is no link
    resolves to its folder's real path and its name: one resolve per folder, not per
    claim. The folder listing gives each entry's type, so a file costs no system call
    of its own unless it is a link; names are strings until a file is a candidate.
    ``recorder`` is told each folder listed (resolved) and whether a link was met.
    """
    found: list[tuple[str, Path, Path]] = []
    todo: list[tuple[str, str, Path | None]] = [(os.fspath(folder), "", None)]
    while todo:
        where, prefix, real_dir = todo.pop()
        try:
            entries = list(os.scandir(where))
        except OSError:
            if recorder is not None:
                recorder.refused = True  # a folder that cannot be listed: nothing a stat could vouch for
            continue  # a folder that cannot be listed holds no claim we can read
        if recorder is not None:
            if real_dir is None:
                real_dir = Path(where).resolve()
            recorder.listed.append(str(real_dir))
        for entry in entries:
            name = entry.name
            try:
                if recorder is not None and entry.is_symlink():
                    recorder.refused = True  # its target can change without this folder changing
                if entry.is_dir(follow_symlinks=False):
                    if not is_skipped_dir(name):  # pruned, so a trap in .venv is never read
                        # not a link, so its real path is this folder's and its name
                        todo.append((entry.path, prefix + name + "/", None if real_dir is None else real_dir / name))
                    continue
                if not name.endswith(".py") or name.startswith(("_", ".")) or _excluded(prefix + name, exclude):
                    continue
                link = entry.is_symlink()
                if not (stat.S_ISREG(os.stat(entry.path).st_mode) if link else entry.is_file(follow_symlinks=False)):
                    continue  # a FIFO, a device, a folder behind a link: no claim file
            except OSError:
                continue
            path = Path(entry.path)
            if link:
                real = path.resolve()
            else:
                if real_dir is None:
                    real_dir = Path(where).resolve()
                real = real_dir / name
            found.append((prefix + name, path, real))
    found.sort(key=lambda item: item[0])
    return [(path, real) for _, path, real in found]


def not_a_folder(folder: Path) -> str:
    """Why ``folder`` cannot be replayed, and for a claim file the command that runs one claim."""
    if folder.is_file() and folder.suffix == ".py":
        return (f"{folder}: a file; replay takes claims folders (physverify replay {folder.parent.as_posix()}), "
                f"and one claim runs with 'physverify confirm {folder.as_posix()}'")
    return f"{folder}: {'not a folder' if os.path.lexists(folder) else 'no such claims folder'}"


def claims_folders(claims_dirs: Sequence[Path | str]) -> list[Path]:
    """The claims folders, each once: a folder named twice, or inside another named one, is dropped."""
    folders = [Path(d) for d in (claims_dirs or [DEFAULT_CLAIMS_DIR])]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(not_a_folder(folder))
    kept: list[Path] = []
    for folder in sorted(folders, key=lambda f: len(f.resolve().parts)):
        if not any(folder.resolve().is_relative_to(k.resolve()) for k in kept):
            kept.append(folder)
    return sorted(kept, key=folders.index)  # the order given: the first folder's settings count



def gone(path: Path | str) -> bool:
    return not regular(path) or not claim.binds_claim(Path(path))
