"""The convergence evidence of one check: its numbers read back from a ledger entry, and the
log-log plot of error against step size drawn with matplotlib (the optional extra
``physverify[report]``).

The plot shows what a reader needs to judge an order of accuracy (Roache, Verification and
Validation in Computational Science and Engineering, ch. 5): the measured errors, the
slope fitted over the levels the order was measured on, a line of the expected slope
through the finest point, and the round-off floor. One figure can hold several labelled
runs of a check (``Series``): the report draws a fixed or regressed claim's baseline beside
its latest run, and a fix-validated claim's variant run beside it the same way.

A ledger is read, not trusted (issue 21, item 2): a step size or error that is not a
positive finite number, a slope of -400 or 1e308, an integer of 400 digits or a denormal
step size must not stop the page. Everything is computed in log10 space, where every
positive finite float is a number between -324 and 309, and drawn on linear axes labelled
as powers of ten; a line whose ends are not finite is dropped, and the lines are clipped to
the band the data spans. No text from the ledger is drawn: every label is a fixed phrase or
a number formatted here, so nothing a claim file wrote can reach the SVG as markup.

The work is O(n log n) in the levels a check reports (issue 21, item 3: the fit window was
matched level by level against fit_hs): one sort, bisection for the window, and at most
``MAX_POINTS`` markers per run drawn (the plot says when it drew fewer than it has).
"""

from __future__ import annotations

import bisect
import html
import io
import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from physverify.text import visible

# The extra is physverify[report]; until this version is on the package index (README, "Install"),
# that name would fetch an older release, so the hint names the library itself.
INSTALL_HINT = "pip install 'matplotlib>=3.7' (the report extra of physverify)"
# check_order's default fit_points: the window drawn for a ledger line that predates fit_hs.
_DEFAULT_FIT_POINTS = 4
# Markers drawn per run: more are not told apart on a 30rem plot, and each is an SVG element
# (benchmarks/report_bench.py: 100,000 points took minutes before the cap).
MAX_POINTS = 500
# The series' names the legend may show: fixed words, so no ledger text reaches the SVG.
SERIES_NAMES = ("latest", "baseline", "variant", "control")


class Convergence(NamedTuple):
    """The numbers of one order study, as a ledger entry's "data" holds them (None: not finite).

    ``dropped`` counts the levels left out because their step size is not a positive finite number.
    """

    hs: tuple[float, ...]
    errors: tuple[float | None, ...]
    expected: float | None
    fitted: float | None
    floor: float | None
    fit_hs: tuple[float, ...]
    dropped: int = 0


class Series(NamedTuple):
    """One labelled run of a check in a figure: ``name`` is one of SERIES_NAMES (never ledger text)."""

    name: str
    numbers: Convergence


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None: a ledger's string, bool, NaN, inf or 400-digit integer is missing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _numbers(value: Any) -> list[float | None] | None:
    return [number(item) for item in value] if isinstance(value, list) else None


def convergence(data: Any) -> Convergence | None:
    """The convergence numbers in a check's "data", or None when it holds no usable hs and errors.

    Levels whose step size is not a positive finite number are left out (counted in ``dropped``);
    None when no level is left, or the two lists differ in length (the data is not one study).
    """
    if not isinstance(data, Mapping):
        return None
    hs, errors = _numbers(data.get("hs")), _numbers(data.get("errors"))
    if hs is None or errors is None or len(hs) != len(errors) or not hs:
        return None
    kept = [(h, e) for h, e in zip(hs, errors) if h is not None and h > 0]
    if not kept:
        return None
    fit_hs = [h for h in _numbers(data.get("fit_hs")) or [] if h is not None and h > 0]
    return Convergence(tuple(h for h, _ in kept), tuple(e for _, e in kept), number(data.get("expected")),
                       number(data.get("fitted")), number(data.get("floor")), tuple(fit_hs), len(hs) - len(kept))


def all_zero(c: Convergence) -> bool:
    """True when every error of the study is exactly 0 (an exact reproduction: nothing for a log scale)."""
    return bool(c.errors) and all(e == 0.0 for e in c.errors)


def _log(value: float | None) -> float | None:
    return math.log10(value) if value is not None and value > 0 else None


def rows(c: Convergence) -> list[tuple[float, float | None, float | None]]:
    """(h, error, order between this level and the previous one) per level, coarsest first.

    The order is ``log(e0 / e1) / log(h0 / h1)`` (order.pairwise_orders) taken as differences of
    logarithms, so a denormal or huge error gives its order, not an overflow; None when not finite.
    """
    table: list[tuple[float, float | None, float | None]] = []
    before: tuple[float | None, float | None] = (None, None)
    for h, e in zip(c.hs, c.errors):
        now = (_log(h), _log(e))
        order = None
        if None not in before and None not in now and before[0] != now[0]:
            order = (before[1] - now[1]) / (before[0] - now[0])  # type: ignore[operator]
            order = order if math.isfinite(order) else None
        table.append((h, e, order))
        before = now
    return table


def available() -> bool:
    """True when matplotlib can be imported (the extra is installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# --- the geometry, in log10 space ------------------------------------------------------------
def _measured(c: Convergence) -> list[tuple[float, float]]:
    """(log10 h, log10 e) of every level with a positive finite error, finest first."""
    return sorted((math.log10(h), math.log10(e)) for h, e in zip(c.hs, c.errors) if e is not None and e > 0)


def _fit_window(c: Convergence, points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The measured points the order was fitted on: fit_hs, else check_order's default window.

    ``points`` are sorted by log h; fit_hs is matched by bisection in log space (a relative
    tolerance of 1e-9 in h), so the window costs O(n log n), not O(n * len(fit_hs)).
    """
    if c.fit_hs:
        wanted = sorted(math.log10(h) for h in c.fit_hs)
        tolerance = math.log10(1 + 1e-9)
        chosen = [p for p in points if _near(wanted, p[0], tolerance)]
        if len(chosen) >= 2:
            return chosen
    floor = _log(c.floor)
    above = [p for p in points if floor is None or p[1] > floor]
    return above[:_DEFAULT_FIT_POINTS]  # the finest levels above the floor


def _near(sorted_values: Sequence[float], value: float, tolerance: float) -> bool:
    i = bisect.bisect_left(sorted_values, value - tolerance)
    return i < len(sorted_values) and sorted_values[i] <= value + tolerance


def _clipped(x0: float, x1: float, y0: float, slope: float, band: tuple[float, float]) -> list[tuple[float, float]]:
    """The segment y = y0 + slope (x - x0) over [x0, x1], cut to ``band`` in y; [] when not finite or outside."""
    lo, hi = band
    ends = [(x0, y0), (x1, y0 + slope * (x1 - x0))]
    if not all(math.isfinite(v) for p in ends for v in p):
        return []
    if slope == 0:
        return ends if lo <= y0 <= hi else []
    # the x where the line crosses each edge of the band, kept within the segment
    xa, xb = sorted((x0 + (lo - y0) / slope, x0 + (hi - y0) / slope))
    start, stop = max(x0, xa), min(x1, xb)
    if not (math.isfinite(start) and math.isfinite(stop)) or start >= stop:
        return []
    return [(start, y0 + slope * (start - x0)), (stop, y0 + slope * (stop - x0))]


def _thinned(points: Sequence[tuple[float, float]], cap: int) -> list[tuple[float, float]]:
    """At most ``cap`` of ``points`` (sorted), evenly spread by rank, the first and last always kept."""
    if len(points) <= cap:
        return list(points)
    step = (len(points) - 1) / (cap - 1)
    return [points[round(i * step)] for i in range(cap)]


class _Geometry(NamedTuple):
    xs: tuple[float, float]  # the x axis, log10 h
    ys: tuple[float, float]  # the y axis, log10 error: the span of the data, with a margin


def _geometry(series: Sequence[Series]) -> _Geometry | None:
    xs = [math.log10(h) for s in series for h in (min(s.numbers.hs), max(s.numbers.hs))]
    ys = [y for s in series for _, y in _measured(s.numbers)]
    if not ys:
        return None
    x_lo, x_hi = _padded(min(xs), max(xs), 0.05, 0.3)
    y_lo, y_hi = _padded(min(ys), max(ys), 0.08, 1.2)
    return _Geometry((x_lo, x_hi), (y_lo, y_hi))


def _padded(lo: float, hi: float, margin: float, least: float) -> tuple[float, float]:
    """[lo, hi] widened by ``margin`` of its span on each side, and to at least ``least`` decades."""
    span = hi - lo
    pad = max(margin * span, (least - span) / 2, 0.0)
    return lo - pad - margin * least / 4, hi + pad + margin * least / 4


def drawable(series: Sequence[Series]) -> bool:
    """True when at least one series has an error a log scale can show (positive and finite)."""
    return _geometry(series) is not None


# --- drawing -----------------------------------------------------------------------------------
class _Style(NamedTuple):
    marker: str
    color: str
    fit_color: str
    fit_line: str
    filled: bool


# The first series (the run the verdict is about) in the report's original style; each further
# series in the next style: hollow markers and a dash-dot fit, so the two read apart in grey too.
_STYLES = (
    _Style("o", "#1f4e99", "#c0392b", "-", True),
    _Style("s", "#d35400", "#d35400", "-.", False),
    _Style("^", "#6a1b9a", "#6a1b9a", ":", False),
)


def _draw(series: Sequence[Series]) -> Any:
    """The matplotlib Figure of one or more runs of a study (without pyplot: no global state, safe in threads).

    The first series is the one the verdict is about, drawn in the report's main style with the
    expected slope and the floor; each further series (a baseline, a fix-validated claim's variant)
    gets its own style, and the legend names every line with the series' name when there are
    several. The y axis spans the measured errors of every series; the floor is drawn only when it
    lies inside it, otherwise a note at the axis gives its value.
    """
    from matplotlib.figure import Figure

    geometry = _geometry(series)
    if geometry is None:
        raise ValueError("no error is a positive finite number: nothing to draw on a log scale")
    several = len(series) > 1
    columns = 1 if several else 2  # "baseline: fitted slope 0.00 (5 levels)" takes half the width
    fig = Figure(figsize=(5.2, 3.9))
    ax = fig.add_subplot()
    ax.set_xlim(*geometry.xs)
    ax.set_ylim(*geometry.ys)
    notes: list[str] = []
    for index, (name, c) in enumerate(series):
        style = _STYLES[min(index, len(_STYLES) - 1)]
        prefix = f"{name}: " if several else ""
        points = _measured(c)
        shown = _thinned(points, MAX_POINTS)
        if len(shown) < len(points):
            notes.append(f"{prefix}{len(shown):,} of {len(points):,} levels drawn")
        if all_zero(c):
            notes.append(f"{prefix}every error is exactly 0")
        ax.plot([x for x, _ in shown], [y for _, y in shown], style.marker, color=style.color,
                markerfacecolor=style.color if style.filled else "none", label=f"{prefix}measured error")
        window = _fit_window(c, points)
        if c.fitted is not None and len(window) >= 2:
            # the intercept that fits the window best for the fixed slope: the mean of log e - p log h
            mean = _mean([y - c.fitted * x for x, y in window])
            x0, x1 = window[0][0], window[-1][0]
            line = _clipped(x0, x1, mean + c.fitted * x0, c.fitted, geometry.ys) if math.isfinite(mean) else []
            if line:
                ax.plot([x for x, _ in line], [y for _, y in line], style.fit_line, color=style.fit_color,
                        linewidth=2, label=f"{prefix}fitted slope {order_text(c.fitted)} ({len(window):,} levels)")
        if c.expected is not None and points and (index == 0 or c.expected != series[0].numbers.expected):
            x_f, y_f = points[0]  # through the finest measured point, over the study's span of h
            x0, x1 = math.log10(min(c.hs)), math.log10(max(c.hs))
            line = _clipped(x0, x1, y_f + c.expected * (x0 - x_f), c.expected, geometry.ys)
            if line:
                ax.plot([x for x, _ in line], [y for _, y in line], "--", color="#555555",
                        label=f"{prefix if index else ''}expected slope {order_text(c.expected, 'g')}")
        floor = _log(c.floor)
        if index == 0 and floor is not None:
            assert c.floor is not None
            if geometry.ys[0] <= floor <= geometry.ys[1]:
                ax.axhline(floor, color="#999999", linestyle=":", label=f"round-off floor {c.floor:.1e}")
            else:
                where = "below" if floor < geometry.ys[0] else "above"
                y = 0.02 if where == "below" else 0.98
                ax.text(0.01, y, f"{'↓' if where == 'below' else '↑'} round-off floor {c.floor:.1e} {where} the axis",
                        transform=ax.transAxes, fontsize="x-small", color="#666666",
                        va="bottom" if where == "below" else "top", ha="left")
    if notes:
        ax.text(0.99, 0.98, "\n".join(notes), transform=ax.transAxes, fontsize="x-small", color="#444444",
                ha="right", va="top")
    _log_ticks(ax, geometry)
    ax.set_xlabel("step size h")
    ax.set_ylabel("error")
    ax.grid(True, which="major", alpha=0.3)
    # Fixed margins, not a layout engine: the engine lays the text out once more per figure, and a
    # 500-claim report draws a thousand of them (benchmarks/report_bench.py). The legend goes below
    # the axes, where it can hide no point; each of its rows takes about 0.2 in.
    rows = math.ceil(len(ax.get_legend_handles_labels()[1]) / columns)
    top, bottom = 0.12, 0.5 + 0.2 * rows  # inches above and below the axes
    height = 2.8 + top + bottom
    fig.set_size_inches(5.2, height)
    fig.subplots_adjust(left=0.14, right=0.97, top=1 - top / height, bottom=bottom / height)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.42 / (height - top - bottom)),
              ncols=columns, frameon=False)
    return fig


def _mean(values: Sequence[float]) -> float:
    """The mean of ``values``, nan when it is not finite (each divided first: 1e308s do not overflow the sum)."""
    if not all(math.isfinite(v) for v in values):
        return math.nan
    return math.fsum(v / len(values) for v in values)


def order_text(value: float, spec: str = ".2f") -> str:
    """An order for a label or a table: two decimals, or three significant digits for a hostile 1e308."""
    return format(value, spec) if abs(value) < 1e6 else format(value, ".3g")


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _power_of_ten(exponent: int) -> str:
    """A decade's label as plain text, 10 with a superscript exponent ("10⁻³")."""
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def _decades(lo: float, hi: float, most: int) -> list[int]:
    first, last = math.ceil(lo), math.floor(hi)
    step = max(1, math.ceil((last - first + 1) / most))
    return list(range(first, last + 1, step))


def _log_ticks(ax: Any, geometry: _Geometry) -> None:
    # The axes are linear in log10 values, so the ticks are placed here. Plain text labels, not
    # mathtext ($10^{-3}$), whose parser takes over half of the time of a plot; decades only for
    # the errors, at most seven; no minor ticks. Step sizes read as decimals (0.005, 0.01, 0.02), at
    # 1, 2 and 5 per decade when the study spans up to two and a half decades of h (most do).
    from matplotlib.ticker import NullLocator

    (x_lo, x_hi), (y_lo, y_hi) = geometry
    if x_hi - x_lo <= 2.5:
        x_ticks = _one_two_five(x_lo, x_hi)
    else:
        x_ticks = [(float(k), _decimal(1, k)) for k in _decades(x_lo, x_hi, 6)]
    ax.set_xticks([x for x, _ in x_ticks], [label for _, label in x_ticks])
    decades = _decades(y_lo, y_hi, 7)
    # errors within about a decade get 1, 2 and 5 in it, so the axis has numbers to read
    y_ticks = [(float(k), _power_of_ten(k)) for k in decades] if len(decades) >= 2 else _one_two_five(y_lo, y_hi)
    ax.set_yticks([y for y, _ in y_ticks], [label for _, label in y_ticks])
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(NullLocator())


def _one_two_five(lo: float, hi: float) -> list[tuple[float, str]]:
    """Ticks at 1, 2 and 5 times each power of ten within [lo, hi] (log10 values), labelled as decimals."""
    candidates = [(k + math.log10(m), _decimal(m, k)) for k in range(math.floor(lo), math.ceil(hi) + 1)
                  for m in (1, 2, 5)]
    return [(v, label) for v, label in candidates if lo <= v <= hi]


def _decimal(mantissa: int, exponent: int) -> str:
    """m x 10^k as a step size is written (0.005, 0.01, 2e-05); a power beyond a normal float's range
    (a denormal 1e-320 prints as 9.99989e-321) as m·10^k."""
    value = float(f"{mantissa}e{exponent}")
    if sys.float_info.min <= value <= sys.float_info.max:
        return f"{value:g}"
    return _power_of_ten(exponent) if mantissa == 1 else f"{mantissa}·{_power_of_ten(exponent)}"


# --- output ------------------------------------------------------------------------------------
def _as_series(plot: Convergence | Sequence[Series]) -> Sequence[Series]:
    return [Series("latest", plot)] if isinstance(plot, Convergence) else plot


def svg(plot: Convergence | Sequence[Series], salt: str) -> str:
    """The plot as an <svg> element to inline in HTML; ``salt`` keeps its clip-path ids unique in the page.

    ``plot`` is one study, or several labelled runs of the same check drawn in one figure, the
    first in the main style: ``[Series("latest", now), Series("baseline", before)]`` for a claim
    whose verdict moved (html.py), ``[Series("latest", held), Series("variant", variant)]`` for a
    fix-validated claim's variant run. Raises when nothing can be drawn (``drawable`` says so
    first) or matplotlib fails on the numbers; the report turns that into a note on the check.
    """
    import matplotlib
    import matplotlib.style

    # matplotlib's own defaults, not a matplotlibrc's: matplotlib reads one from the working directory, the
    # repository's in the Action, where text.usetex would run TeX on the repository's preamble and any style
    # would change the report; also the same ledger then gives the same page on every machine.
    # fonttype none: text stays <text> (escaped by matplotlib), not glyph paths; hashsalt makes ids differ
    # between the plots of one page; no metadata, so the same ledger gives the same bytes.
    with matplotlib.style.context("default"), matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        buffer = io.StringIO()
        _draw(_as_series(plot)).savefig(buffer, format="svg", metadata={"Date": None, "Creator": None,
                                                                        "Format": None, "Type": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    # matplotlib numbers its groups figure_1, axes_1, ... in every file; inlined side by side, the
    # ids (and the references to them) get the salt in front, so each stays unique in the page.
    for before, after in (('id="', f'id="{salt}-'), ("url(#", f"url(#{salt}-"), ('href="#', f'href="#{salt}-')):
        text = text.replace(before, after)
    return text


def png(plot: Convergence | Sequence[Series]) -> bytes:
    """The plot as PNG bytes (for clients that show images, such as an MCP assistant)."""
    buffer = io.BytesIO()
    _draw(_as_series(plot)).savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


# --- a notebook's view of one result -------------------------------------------------------------
_NOTEBOOK_IDS = itertools.count(1)
_NOTEBOOK_ROWS = 40


def notebook_html(status: str, message: str, data: Mapping[str, Any]) -> str:
    """One result as a notebook cell shows it (``OrderResult._repr_html_``): the status, the message
    and the report's own SVG plot; without matplotlib, or when nothing can be drawn, the numbers
    as a text table. Every string is escaped."""
    def e(value: object) -> str:
        return html.escape(visible(value), quote=True)

    head = f'<p><strong class="physverify-status">{e(status)}</strong> {e(message)}</p>'
    numbers = convergence(data)
    if numbers is None:
        return f'<div class="physverify-result">{head}</div>'
    body = ""
    if all_zero(numbers):
        body = f"<p>Every error is exactly 0 at all {len(numbers.errors)} step sizes: nothing to draw on a log scale.</p>"
    elif available() and drawable([Series("latest", numbers)]):
        try:
            body = svg(numbers, f"nb{next(_NOTEBOOK_IDS)}")
        except Exception as exc:  # noqa: BLE001 - a plot that fails is a note, never a failed cell
            body = f"<p>The plot could not be drawn ({e(type(exc).__name__)}); the numbers follow.</p>"
    lines = [f"{'h':>12}  {'error':>12}  order"]  # a plain-text table: it reads the same without matplotlib
    table = rows(numbers)
    for h, err, q in table[:_NOTEBOOK_ROWS]:
        lines.append(f"{h:>12.4g}  {'not finite' if err is None else format(err, '.4g'):>12}  "
                     f"{'' if q is None else order_text(q)}")
    if len(table) > _NOTEBOOK_ROWS:
        lines.append(f"... {len(table) - _NOTEBOOK_ROWS:,} more levels")
    text = "<pre>" + "\n".join(e(line) for line in lines) + "</pre>"
    if body.startswith("<svg"):
        return f'<div class="physverify-result">{head}{body}<details><summary>the numbers</summary>{text}</details></div>'
    return f'<div class="physverify-result">{head}{body}{text}</div>'
