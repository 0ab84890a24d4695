"""Silencing a finding: a comment on its line, or an entry in physverify.yaml, each with its reason.

    k3 = f(t + h, y + h/2*k2)  # physverify: ignore[rk-order] a stage at t + h is what the paper prints

The reason is required in both places, so a silenced finding always says why in the code
review. A comment without one silences nothing and adds a note saying so. Silenced findings
are counted in the summary and listed in the JSON, never dropped without trace.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import replace

from physverify.gate.config import IgnoreEntry
from physverify.scan.findings import Finding, Note

_COMMENT = re.compile(rb"#\s*physverify:\s*ignore\[(?P<rules>[^\]]*)\](?P<reason>[^\r\n]*)")


def by_comment(finding: Finding, lines: Sequence[bytes]) -> tuple[Finding, Note | None]:
    """The finding, silenced when its line (of the file's ``lines``) says so with a reason; a note for a comment
    without a reason."""
    line = lines[finding.line - 1] if 0 < finding.line <= len(lines) else b""
    match = _COMMENT.search(line)
    if match is None:
        return finding, None
    rules = {r.strip() for r in match.group("rules").decode("utf-8", "replace").split(",")}
    if finding.rule not in rules and "*" not in rules:
        return finding, None
    reason = match.group("reason").decode("utf-8", "replace").strip()
    if not reason:
        return finding, Note(finding.file, f"line {finding.line}: 'physverify: ignore[{finding.rule}]' has no reason, "
                                           f"so it silences nothing; write why after the bracket")
    return replace(finding, silenced=reason), None


def by_config(finding: Finding, entries: Sequence[IgnoreEntry], also: str | None = None) -> Finding:
    """The finding, silenced by the first entry of physverify.yaml's ``ignore`` that matches it."""
    for entry in entries:
        if entry.rule not in (finding.rule, "*"):
            continue
        if entry.line is not None and entry.line != finding.line:
            continue
        if any(name is not None and fnmatch.fnmatchcase(name, entry.file) for name in (finding.file, also)):
            return replace(finding, silenced=entry.reason)
    return finding
