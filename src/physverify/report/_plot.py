"""The convergence evidence of one check: its numbers read back from a ledger entry, and the
log-log plot of error against step size drawn with matplotlib (the optional extra
``physverify[report]``).

The plot shows what a reader needs to judge an order of accuracy (Roache, Verification and
Validation in Computational Science and Engineering, ch. 5): the measured errors, the
slope fitted over the levels the order was measured on, a line of the expected slope
through the finest point, and the round-off floor. No text from the ledger is drawn:
every label is a fixed phrase or a number formatted here, so nothing a claim file wrote
can reach the SVG as markup.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple


# The extra is physverify[report]; until this version is on the package index (README, "Install"),
# that name would fetch an older release, so the hint names the library itself.
INSTALL_HINT = "pip install 'matplotlib>=3.7' (the report extra of physverify)"
# check_order's default fit_points: the window drawn for a ledger line that predates fit_hs.
_DEFAULT_FIT_POINTS = 4


class Convergence(NamedTuple):
    """The numbers of one order study, as a ledger entry's "data" holds them (None: not finite)."""

    hs: tuple[float, ...]
    errors: tuple[float | None, ...]
    expected: float | None
    fitted: float | None
    floor: float | None
    fit_hs: tuple[float, ...]


def _number(value: Any) -> float | None:
    # A ledger is read, not trusted: a value that is not a finite number is treated as missing.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _numbers(value: Any) -> list[float | None] | None:
    return [_number(item) for item in value] if isinstance(value, list) else None


def convergence(data: Any) -> Convergence | None:
    """The convergence numbers in a check's "data", or None when it holds no usable hs and errors."""
    if not isinstance(data, Mapping):
        return None
    hs, errors = _numbers(data.get("hs")), _numbers(data.get("errors"))
    if hs is None or errors is None or len(hs) != len(errors) or not hs or any(h is None or h <= 0 for h in hs):
        return None
    fit_hs = [h for h in _numbers(data.get("fit_hs")) or [] if h is not None and h > 0]
    return Convergence(tuple(h for h in hs if h is not None), tuple(errors), _number(data.get("expected")),
                       _number(data.get("fitted")), _number(data.get("floor")), tuple(fit_hs))


def rows(c: Convergence) -> list[tuple[float, float | None, float | None]]:
    """(h, error, order between this level and the previous one) per level, coarsest first."""
    from physverify.order import pairwise_orders  # here: numpy only when a page has numbers (issue 11)

    table: list[tuple[float, float | None, float | None]] = []
    for i, (h, e) in enumerate(zip(c.hs, c.errors)):
        before = c.errors[i - 1] if i else None
        usable = i and e is not None and before is not None and e > 0 and before > 0 and c.hs[i - 1] != h
        order = pairwise_orders([c.hs[i - 1], h], [before, e])[0] if usable else None  # type: ignore[list-item]
        table.append((h, e, order))
    return table


def available() -> bool:
    """True when matplotlib can be imported (the extra is installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _measured(c: Convergence) -> list[tuple[float, float]]:
    return [(h, e) for h, e in zip(c.hs, c.errors) if e is not None and e > 0]


def _fit_window(c: Convergence, points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The measured points the order was fitted on: fit_hs, else check_order's default window."""
    if c.fit_hs:
        chosen = [(h, e) for h, e in points if any(math.isclose(h, f, rel_tol=1e-9) for f in c.fit_hs)]
        if len(chosen) >= 2:
            return chosen
    above = [(h, e) for h, e in points if c.floor is None or e > c.floor]
    return sorted(above, key=lambda p: -p[0])[-_DEFAULT_FIT_POINTS:]


def _draw(c: Convergence) -> Any:
    """The matplotlib Figure of one study (without pyplot: no global state, safe in threads)."""
    from matplotlib.figure import Figure

    # Fixed margins, not a layout engine: the engine lays the text out once more per figure, and a
    # 500-claim report draws a thousand of them (benchmarks/report_bench.py).
    fig = Figure(figsize=(5.2, 3.9))
    fig.subplots_adjust(left=0.14, right=0.97, top=0.97, bottom=0.3)
    ax = fig.add_subplot()
    points = _measured(c)
    ax.loglog([h for h, _ in points], [e for _, e in points], "o", color="#1f4e99", label="measured error")
    window = _fit_window(c, points)
    if c.fitted is not None and len(window) >= 2:
        # the intercept that fits the window best for the fixed slope: the mean of log e - p log h
        log_c = sum(math.log(e) - c.fitted * math.log(h) for h, e in window) / len(window)
        ends = [min(h for h, _ in window), max(h for h, _ in window)]
        ax.loglog(ends, [math.exp(log_c) * h**c.fitted for h in ends], "-", color="#c0392b", linewidth=2,
                  label=f"fitted slope {c.fitted:.2f} ({len(window)} levels)")
    if c.expected is not None and points:
        h_f, e_f = min(points)
        ends = [min(c.hs), max(c.hs)]
        ax.loglog(ends, [e_f * (h / h_f) ** c.expected for h in ends], "--", color="#555555",
                  label=f"expected slope {c.expected:g}")
    if c.floor is not None and c.floor > 0:
        ax.axhline(c.floor, color="#999999", linestyle=":", label=f"round-off floor {c.floor:.1e}")
    _plain_ticks(ax, c.hs)
    ax.set_xlabel("step size h")
    ax.set_ylabel("error")
    ax.grid(True, which="major", alpha=0.3)
    # below the axes, where it can hide no point (and no search for an empty corner is needed)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, frameon=False)
    return fig


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _power_of_ten(value: float, _position: object = None) -> str:
    """A decade's label as plain text, 10 with a superscript exponent ("10⁻³"); "" between decades."""
    if value <= 0:
        return ""
    exponent = math.log10(value)
    return "10" + str(round(exponent)).translate(_SUPERSCRIPT) if abs(exponent - round(exponent)) < 1e-9 else ""


def _plain_ticks(ax: Any, hs: Sequence[float]) -> None:
    # matplotlib's default log labels are mathtext ($10^{-3}$), whose parser takes over half of
    # the time of a plot; plain text with superscript digits reads the same. Each tick is a few
    # artists: decades only, at most seven per axis, and no minor ticks halve the drawing.
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    # Step sizes read as decimals (0.005, 0.01, 0.02), at 1, 2 and 5 per decade when the study
    # spans up to two and a half decades of h (most do); errors span many, so they keep powers of ten.
    wide = math.log10(max(hs) / min(hs)) > 2.5
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0,) if wide else (1.0, 2.0, 5.0), numticks=6))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
    ax.yaxis.set_major_locator(LogLocator(numticks=7))
    ax.yaxis.set_major_formatter(FuncFormatter(_power_of_ten))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(NullLocator())


def svg(c: Convergence, salt: str) -> str:
    """The plot as an <svg> element to inline in HTML; ``salt`` keeps its clip-path ids unique in the page."""
    import matplotlib

    # fonttype none: text stays <text> (escaped by matplotlib), not glyph paths; hashsalt makes ids differ
    # between the plots of one page; no metadata, so the same ledger gives the same bytes.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        buffer = io.StringIO()
        _draw(c).savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None,
                                                         "Type": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    # matplotlib numbers its groups figure_1, axes_1, ... in every file; inlined side by side, the
    # ids (and the references to them) get the salt in front, so each stays unique in the page.
    for before, after in (('id="', f'id="{salt}-'), ("url(#", f"url(#{salt}-"), ('href="#', f'href="#{salt}-')):
        text = text.replace(before, after)
    return text


def png(c: Convergence) -> bytes:
    """The plot as PNG bytes (for clients that show images, such as an MCP assistant)."""
    buffer = io.BytesIO()
    _draw(c).savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
