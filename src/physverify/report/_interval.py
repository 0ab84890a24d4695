"""The evidence of a stochastic check: its estimate and confidence interval against the band expected +- tol.

A reader judges such a check by one picture (an equivalence test, Wellek, Testing Statistical
Hypotheses of Equivalence, ch. 1): PASS when the interval lies inside the band, FAIL when it lies
outside, INCONCLUSIVE when it reaches across an edge. The SVG is written here without matplotlib;
every label is a fixed phrase or a number formatted here, and the table goes through html.escape,
so nothing a ledger line holds reaches the page as markup.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from physverify.text import visible

_WIDTH, _HEIGHT, _PAD = 420, 64, 24


class Interval(NamedTuple):
    """The numbers of one stochastic check, as a ledger entry's "data" holds them."""

    kind: str
    estimate: float
    low: float
    high: float
    expected: float
    tol: float
    n: int | None
    alpha: float | None
    seed: int | None
    generator: str


def _number(value: Any) -> float | None:
    # A ledger is read, not trusted: anything but a finite number is missing.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def interval(data: Any) -> Interval | None:
    """The interval numbers in a check's "data", or None when it is not a usable stochastic check."""
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str) or not data.get("kind"):
        return None
    values = [_number(data.get(key)) for key in ("estimate", "low", "high", "expected", "tol")]
    estimate, low, high, expected, tol = values
    if estimate is None or low is None or high is None or expected is None or tol is None or low > high or tol < 0:
        return None
    n, seed = data.get("n"), data.get("seed")
    return Interval(str(data["kind"])[:40], estimate, low, high, expected, tol,
                    n if isinstance(n, int) and not isinstance(n, bool) else None, _number(data.get("alpha")),
                    seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
                    str(data.get("generator", ""))[:60])


def svg(iv: Interval) -> str:
    """A one-line number axis: the band as a green bar, the interval as a black bar, the estimate as a dot."""
    band_low, band_high = iv.expected - iv.tol, iv.expected + iv.tol
    left, right = min(band_low, iv.low), max(band_high, iv.high)
    span = (right - left) or max(abs(right), 1.0)
    left, right = left - 0.1 * span, right + 0.1 * span

    def x(value: float) -> float:
        return _PAD + (value - left) / (right - left) * (_WIDTH - 2 * _PAD)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="{_e(_caption(iv))}">',
        f'<line x1="{_PAD}" y1="40" x2="{_WIDTH - _PAD}" y2="40" stroke="#999"/>',
        f'<rect x="{x(band_low):.1f}" y="14" width="{max(x(band_high) - x(band_low), 1.0):.1f}" height="20" '
        'fill="#2e7d32" fill-opacity="0.25"/>',
        f'<line x1="{x(iv.low):.1f}" y1="24" x2="{x(iv.high):.1f}" y2="24" stroke="#1b1b1b" stroke-width="3"/>',
        f'<circle cx="{x(iv.estimate):.1f}" cy="24" r="4" fill="#b3261e"/>',
    ]
    for value in (band_low, iv.expected, band_high):
        parts.append(f'<text x="{x(value):.1f}" y="56" font-size="10" text-anchor="middle">{value:.4g}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _caption(iv: Interval) -> str:
    confidence = "" if iv.alpha is None else f"{1 - iv.alpha:.4g} "
    return (f"{iv.kind} {iv.estimate:.4g}, {confidence}interval {iv.low:.4g} to {iv.high:.4g}, "
            f"against the band {iv.expected:.4g} +- {iv.tol:.4g}")


def table(iv: Interval) -> str:
    """The same numbers as a table, with the draw (n, seed, generator, alpha) that makes them reproducible."""
    rows = [("estimate", f"{iv.estimate:.6g}"), ("interval", f"{iv.low:.6g} to {iv.high:.6g}"),
            ("band", f"{iv.expected - iv.tol:.6g} to {iv.expected + iv.tol:.6g} ({iv.expected:.6g} +- {iv.tol:.4g})"),
            ("n", "" if iv.n is None else str(iv.n)), ("alpha", "" if iv.alpha is None else f"{iv.alpha:g}"),
            ("seed", "" if iv.seed is None else str(iv.seed)), ("generator", iv.generator)]
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows if v)
    return f'<table class="numbers interval">{body}</table>'


def figure(data: Any, caption: str) -> str | None:
    """The figure of a stochastic check (``caption`` is already escaped HTML), or None for any other data."""
    iv = interval(data)
    if iv is None:
        return None
    return (f'<figure class="interval">{caption}<div class="plot">{svg(iv)}</div>'
            f'<p class="orders">{_e(_caption(iv))}</p>{table(iv)}</figure>')


def _e(text: str) -> str:
    """Text for an element or an attribute: controls and bidi marks shown as escapes, then HTML-escaped."""
    return html.escape(visible(text), quote=True)
