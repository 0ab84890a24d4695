"""Renderers: one module per output format, each with ``render(...) -> str``.

``FORMATS`` maps a ``--format`` name to its module; ``physverify replay --format``
takes its choices from it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from physverify.report import github, html, json, junit, markdown, sarif, text

FORMATS: dict[str, ModuleType] = {
    "text": text,
    "json": json,
    "junit": junit,
    "sarif": sarif,
    "markdown": markdown,
    "github": github,
    "html": html,
}


def render(fmt: str, result: Any) -> str:
    """``result`` in the format named ``fmt`` (a key of FORMATS)."""
    rendered: str = FORMATS[fmt].render(result)
    return rendered
