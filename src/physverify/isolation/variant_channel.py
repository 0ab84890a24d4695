"""How the variant's source reaches the claim's child (issue 17), in both isolation modes.

The variant travels with the run request, never through a path or value the repository
chooses, and nothing is written into the repository: the parent writes the source into an
unnamed file in the system's temporary folder (``tempfile.TemporaryFile``: O_TMPFILE, or a
name made with O_EXCL and unlinked at once), so nothing is left behind even when physverify
is killed. The child inherits the descriptor (fresh mode: ``--variant FD``; fork mode: a
fourth descriptor sent with the request) and reads it before the claim is imported. A pipe
would need a writer thread per run, and a socket message holds only about 200 KB.
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
    with tempfile.TemporaryFile() as handle:
        data = {"target": variant.target, "source": variant.source}
        handle.write(json.dumps(data).encode("utf-8", "surrogatepass"))
        handle.flush()
        yield handle.fileno()


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
