"""The files a scan reads: each PATH, or every *.py under it, skipping what replay's discovery skips.

Folders are pruned by replay's own rule (``discovery.is_skipped_dir``: hidden folders and
installed or generated code, venv, build, site-packages ...), so a scan and a replay agree
on what belongs to the repository. Unlike claim discovery, a file whose name starts with
"_" is read: ``_integrators.py`` holds code, not a claim helper. Links to folders are not
followed (as os.walk does not), and only regular files are read: a FIFO named x.py would
block the read for ever.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from physverify.gate.discovery import is_skipped_dir


def _posix(path: str) -> str:
    """The path as printed: "./x.py" as "x.py", with POSIX separators."""
    path = os.path.normpath(path)
    return path.replace(os.sep, "/") if os.sep != "/" else path


def files_under(path: str, confine: Path | None = None) -> Iterator[str]:
    """Each regular *.py file at or under ``path`` (as found under it, POSIX separators), sorted per folder;
    with ``confine``, no file whose link leads outside that folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode):
        yield _posix(path)
        return
    todo = [path]
    while todo:
        folder = todo.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue  # a folder that cannot be listed holds nothing we can read
        folders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not is_skipped_dir(entry.name):
                        folders.append(entry.path)
                elif entry.name.endswith(".py") and _regular(entry) and _inside(entry, confine):
                    yield _posix(entry.path)
            except OSError:
                continue
        todo.extend(reversed(folders))


def _regular(entry: os.DirEntry[str]) -> bool:
    if entry.is_symlink():
        try:
            return stat.S_ISREG(os.stat(entry.path).st_mode)
        except OSError:
            return False
    return entry.is_file(follow_symlinks=False)


def _inside(entry: os.DirEntry[str], confine: Path | None) -> bool:
    if confine is None or not entry.is_symlink():
        return True  # not a link: inside the folder it was found in, which is inside
    target = Path(entry.path).resolve()
    return target == confine or confine in target.parents


def missing(paths: list[str]) -> list[str]:
    """The PATHs that name nothing (a usage error: a typo must not pass as a clean scan)."""
    return [p for p in paths if not os.path.lexists(p)]


def read_bytes(file: str, limit: int) -> bytes | str:
    """The file's bytes up to ``limit`` + 1 (so a larger file shows as larger), or why it cannot be read."""
    try:
        with Path(file).open("rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        return f"skipped: cannot be read ({exc.strerror or exc})"
