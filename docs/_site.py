"""mkdocs hooks: the repository's pages outside docs/ join the site, and every link follows them.

README.md is the site's home page, sandbox/README.md, CONTRIBUTING.md, CHANGELOG.md and
benchmarks/README.md are pages, and a few other files the pages link to are served as they
are. Each is read from where it lives at build time, so no text is kept twice. A link in
any page is resolved as it is in the repository (relative to the page's own file) and
rewritten to where its target sits in the site; a link to a repository file the site does
not hold is left alone, so ``mkdocs build --strict`` names it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent

# a repository file outside docs/ -> its place in the site
PAGES = {
    "README.md": "index.md",
    "sandbox/README.md": "sandbox.md",
    "CONTRIBUTING.md": "contributing.md",
    "CHANGELOG.md": "changelog.md",
    "benchmarks/README.md": "benchmarks.md",
}
FILES = {
    "LICENSE": "repository/LICENSE.txt",
    "CITATION.cff": "repository/CITATION.cff",
    ".github/workflows/claims.yml": "repository/claims.yml",
}
PLACES = {**PAGES, **FILES}
SOURCES = {place: source for source, place in PLACES.items()}

_LINK = re.compile(r"(\]\()([^)\s#]*)(#[^)\s]*)?(\))")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^\s*(```|~~~)")


def on_files(files: Files, config: Any) -> Files:
    for source, place in PLACES.items():
        files.append(File.generated(config, place, abs_src_path=str(ROOT / source)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    uri = page.file.src_uri
    return rewrite(markdown, SOURCES.get(uri, f"docs/{uri}"), uri)


def rewrite(markdown: str, source: str, uri: str) -> str:
    """``markdown`` of the repository file ``source``, shown at ``uri``, with its links pointing into the site."""
    def moved(match: re.Match[str]) -> str:
        site = _place(match.group(2), source)
        if site is None:
            return match.group(0)
        link = posixpath.relpath(site, posixpath.dirname(uri) or ".")
        return f"{match.group(1)}{link}{match.group(3) or ''}{match.group(4)}"

    lines, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        lines.append(line if fenced else _LINK.sub(moved, line))
    return "\n".join(lines)


def _place(link: str, source: str) -> str | None:
    """Where the repository file a relative ``link`` of ``source`` names sits in the site; None to leave it."""
    if not link or link.startswith("/") or _SCHEME.match(link):
        return None
    target = posixpath.normpath(posixpath.join(posixpath.dirname(source), link))
    if target.startswith("docs/"):
        return target.removeprefix("docs/")
    return PLACES.get(target)
