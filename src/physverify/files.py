"""Files a repository names, opened without waiting and refused unless they are regular files.

A repository can hold a FIFO named like a claim or a ledger (opening it waits for a writer
for ever) or a symlink to /dev/zero (reading it never ends), so such a file is opened
without waiting (``NO_WAIT``) and refused unless it is a regular file. The claim reader,
physverify.yaml's reader, the ledger and the variant's target all open files this way.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

# Open flags for a file the repository names: never wait on a FIFO for a writer.
NO_WAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A folder, FIFO, device or socket where a file was expected."""


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading when it is a regular file; raise OSError (NotRegularFile) for anything else."""
    fd = os.open(path, os.O_RDONLY | NO_WAIT)
    try:
        regular_size(fd)
        return os.fdopen(fd, "rb")
    except BaseException:  # close the descriptor, then re-raise
        os.close(fd)
        raise


def regular_size(fd: int) -> int:
    """The size of the open file ``fd``; NotRegularFile when it is no regular file (``open_regular``'s rule)."""
    st = os.fstat(fd)
    what = _kind(st.st_mode)
    if what is not None:
        raise NotRegularFile(errno.EINVAL, f"it is {what}, not a regular file")
    return st.st_size


def not_regular(fd: int) -> str | None:
    """What the open file ``fd`` is ("a folder", "a FIFO", "a device or socket"), or None for a regular file."""
    return _kind(os.fstat(fd).st_mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
