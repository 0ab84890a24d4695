"""Renderers: one module per output format, each with ``render(...) -> str``.

``FORMATS`` maps a ``--format`` name to its module; ``physverify replay --format``
takes its choices from it. A module is imported when its format is first used, so the
command line starts without any renderer it does not need (issue 11: `--version` fast).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun

# Plots per HTML page by default: about two seconds of matplotlib; benchmarks/report_bench.py
# measures it. Named here, not in html.py, so the command line's parser need not import html.
MAX_PLOTS = 60

_MODULES = ("text", "json", "junit", "sarif", "markdown", "github", "html")


class _Formats(Mapping[str, ModuleType]):
    """The format names, each importing its module on first lookup."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in _MODULES:
            raise KeyError(name)
        return importlib.import_module(f"physverify.report.{name}")

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, ModuleType] = _Formats()


def finding(run: ClaimRun) -> str:
    """What a claim at its file:line says, in the words of a GitHub annotation and a SARIF result alike:
    the change, the claim's text, why, the deciding check and the gate's failures (unescaped)."""
    record = run.record or run.baseline or {}
    message = f"{run.change()} ({run.key}): {record.get('text') or run.key}. Why: {run.reason}"
    if run.evidence:
        message += f" Evidence: {run.evidence}."
    if run.failures:
        message += " Gate: " + "; ".join(run.failures)
    return message


def render(fmt: str, result: Any) -> str:
    """``result`` in the format named ``fmt`` (a key of FORMATS)."""
    rendered: str = FORMATS[fmt].render(result)
    return rendered
