"""How the variant's source reaches the claim's child (issue 17), in both isolation modes.

The variant travels with the run request, never through a path or value the repository
chooses, and nothing is written into the repository. On Linux the parent writes the source
into a memfd, seals it (no write, no resize, no further seal) and keeps only a read-only
descriptor of it: another process of the same user that re-opens it through
/proc/PID/fd (a claim running beside this one) gets a file nobody can write, where the
writable temporary file used before let it replace the source the victim's variant
process imported. Elsewhere (macOS, which has no /proc to re-open it by) it is an unnamed
temporary file. The child inherits the descriptor (fresh mode: ``--variant FD``; fork
mode: a fifth descriptor sent with the request) and reads it before the claim is imported.
A pipe would need a writer thread per run, and a socket message holds only about 200 KB.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class VariantSource:
    """The source the child imports in place of the file at ``target`` (a resolved path)."""

    target: str
    source: str


@contextmanager
def descriptor(variant: VariantSource | None) -> Iterator[int | None]:
    """A readable descriptor holding ``variant``, open for the block; None without a variant."""
    if variant is None:
        yield None
        return
    data = json.dumps({"target": variant.target, "source": variant.source}).encode("utf-8", "surrogatepass")
    if not hasattr(os, "memfd_create"):
        with tempfile.TemporaryFile() as handle:
            handle.write(data)
            handle.flush()
            yield handle.fileno()
        return
    fd = sealed(data)
    try:
        yield fd
    finally:
        os.close(fd)


def sealed(data: bytes) -> int:
    """A read-only descriptor of a memfd holding ``data``, sealed so that no process can change it (Linux).

    The writable descriptor is closed before this returns, so no claim ever finds one.
    """
    import fcntl

    fd = os.memfd_create("physverify-variant", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    # A read-only open of the same file: the sealed copy could not be written anyway, but a
    # descriptor opened for writing is what a claim would look for. Without /proc the sealed one serves.
    try:
        readonly = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return fd
    os.close(fd)
    return readonly


def read(fd: int) -> VariantSource:
    """The child's side: the whole file from its start (the offset is shared with the parent), then close ``fd``."""
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    os.close(fd)
    value = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    return VariantSource(str(value["target"]), str(value["source"]))
