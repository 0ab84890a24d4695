"""Every "issue N" a comment in the source still names has its entry in docs/decisions.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_CITED = re.compile(r"\b[Ii]ssues? (\d+)")
_ENTRY = re.compile(r"^## (\d+):", re.MULTILINE)


def test_every_issue_the_code_cites_is_explained_in_docs_decisions() -> None:
    cited: dict[str, str] = {}
    for file in sorted((ROOT / "src" / "physverify").rglob("*.py")):
        for number in _CITED.findall(file.read_text(encoding="utf-8")):
            cited.setdefault(number, str(file.relative_to(ROOT)))
    explained = set(_ENTRY.findall((ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")))
    missing = {number: file for number, file in cited.items() if number not in explained}
    assert not missing, f"cited in the code, not in docs/decisions.md: {missing}"


def test_the_scan_reads_a_citation_the_way_comments_write_it() -> None:
    assert _CITED.findall("the loader (issue 13, item 9); issues 19 and Issue 21") == ["13", "19", "21"]
