"""The docs site: mkdocs.yml builds docs/ with --strict, and the pages outside docs/ are part of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")


def test_the_site_builds_strictly_with_the_readmes_as_its_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    ran = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "A simulation can run, produce plausible plots" in home  # README.md is the home page
    assert 'href="sandbox/"' in home and 'href="mcp/"' in home  # README's links lead into the site
    assert "What it does not protect against" in (site / "sandbox" / "index.html").read_text(encoding="utf-8")
    pre_commit = (site / "pre-commit" / "index.html").read_text(encoding="utf-8")
    assert 'href="../sandbox/"' in pre_commit  # a docs page's ../sandbox/README.md, followed too
    assert (site / "repository" / "LICENSE.txt").read_text(encoding="utf-8").startswith("MIT License")
    assert not (site / "_site.py").exists()


def test_a_link_is_rewritten_as_the_repository_resolves_it() -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import _site
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = "[a](docs/replay.md#ledger) [b](sandbox/README.md) [c](src/x.py) [d](https://x.org/a.md)\n```\n[e](docs/x.md)\n```"
    assert _site.rewrite(text, "README.md", "index.md") == (
        "[a](replay.md#ledger) [b](sandbox.md) [c](src/x.py) [d](https://x.org/a.md)\n```\n[e](docs/x.md)\n```")
    assert _site.rewrite("[h](../README.md) [p](../docs/mcp.md)", "sandbox/README.md", "sandbox.md") == (
        "[h](index.md) [p](mcp.md)")
