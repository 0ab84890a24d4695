"""The parent's side of a claim that names its fix (issue 17): read the target once, build the variant.

Static, like the rest of rule 0: the file the claim is about is read (never run), the held
text is located and swapped (variant.py), and the result is the source the child will
import in its place (variant_channel.py). Every problem is a ``ClaimLoadError`` whose
message names the claim file and what was found.
"""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from physverify import files
from physverify.gate import claim, variant
from physverify.isolation.variant_channel import VariantSource


class Prepared(NamedTuple):
    """Which text the file holds, where, and the variant's source for the child."""

    match: variant.Match
    source: VariantSource


def prepare(values: Mapping[str, Any], target: Path | None, claim_path: Path) -> Prepared | None:
    """The variant of a claim with ``defect`` and ``fix``, None without them; ClaimLoadError when it cannot be made.

    ``target`` is CLAIM["file"] as confirm.find_target found it (None: not a file inside the
    root or the claim's folder).
    """
    if variant.DEFECT not in values:
        return None
    file = values["file"]
    if os.name != "posix":  # the variant travels as an inherited descriptor (variant_channel.py)
        raise claim.ClaimLoadError(f"{claim_path}: a claim with 'defect' and 'fix' runs on Linux and macOS only, "
                                   "where the variant can be handed to the claim's process")
    if target is None:
        raise claim.ClaimLoadError(f"{claim_path}: CLAIM['file'] {file!r} is not a file inside the repository or next "
                                   "to the claim, so the defect and the fix cannot be looked up in it")
    if target.resolve() == claim_path.resolve():
        raise claim.ClaimLoadError(f"{claim_path}: CLAIM['file'] is the claim file itself; the defect and the fix "
                                   "are lines of the code under test")
    text = _read_source(target, claim_path)
    try:
        match, source = variant.variant_source(text, values[variant.DEFECT], values[variant.FIX], values["line"],
                                               file=str(file))
    except variant.VariantError as exc:
        raise claim.ClaimLoadError(f"{claim_path}: {exc}") from None
    return Prepared(match, VariantSource(str(target.resolve()), source))


def _read_source(target: Path, claim_path: Path) -> str:
    """The target's text, decoded as Python decodes it (a PEP 263 line, else UTF-8)."""
    try:
        with files.open_regular(target) as handle:
            data = handle.read(variant.MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise claim.ClaimLoadError(f"{claim_path}: {target} cannot be read: {exc.strerror or exc}") from None
    if len(data) > variant.MAX_SOURCE_BYTES:
        raise claim.ClaimLoadError(f"{claim_path}: {target} is larger than {variant.MAX_SOURCE_BYTES >> 20} MiB, too "
                                   "large to swap a line in")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise claim.ClaimLoadError(f"{claim_path}: {target} cannot be decoded as Python source: {exc}") from None
