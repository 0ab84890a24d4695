"""The convergence plot itself (issues 18 and 21): log space, hostile numbers, the axis and the floor,
the cap on markers, several labelled series in one figure, and a notebook's view of a result."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from physverify.checks import FAIL, OrderResult
from physverify.order import check_order, pairwise_orders
from physverify import plot as _plot

SVG = "{http://www.w3.org/2000/svg}"
HS = [0.1 / 2**k for k in range(5)]


def study(**data: Any) -> _plot.Convergence:
    base: dict[str, Any] = {"hs": HS, "errors": [3 * h**2 for h in HS], "expected": 2.0, "fitted": 2.0, "floor": 1e-12}
    base.update(data)
    numbers = _plot.convergence(base)
    assert numbers is not None
    return numbers


def texts(svg: str) -> str:
    """The words the plot shows: its <text> elements (not its style sheet)."""
    return " ".join("".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text"))


def coordinates(svg: str) -> list[str]:
    """Every number in the SVG's paths and positions: each must be finite."""
    root = ET.fromstring(svg)
    values = [v for e in root.iter() for k, v in e.attrib.items() if k in ("d", "x", "y", "transform")]
    return re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|nan|inf", " ".join(values), re.I)


HOSTILE = {
    "fitted -400 (a diverging study)": {"fitted": -400.0, "errors": [1.0, 1e60, 1e120, 1e180, 1e240]},
    "fitted and expected 1e308": {"fitted": 1e308, "expected": 1e308},
    "expected -1e308": {"expected": -1e308, "fitted": -1e308},
    "an integer of 400 digits": {"expected": 10**400, "floor": 10**400, "errors": [1, 10**400, 3, 4, 5]},
    "denormal step sizes": {"hs": [5e-324, 1e-322, 1e-320, 1e-315, 1e-310]},
    "denormal and huge errors": {"errors": [1.7e308, 1e-308, 5e-324, 1e-320, 1e300]},
    "a step size of 1e308": {"hs": [1.7e308, 1e200, 1e100, 1.0, 1e-300]},
    "strings where numbers are": {"fitted": "2", "expected": [2], "floor": {}, "fit_hs": "all"},
    "nan and inf": {"fitted": math.nan, "expected": math.inf, "errors": [math.nan, math.inf, -math.inf, 1e-3, 1e-4]},
}


@pytest.mark.parametrize("change", HOSTILE.values(), ids=list(HOSTILE))
def test_hostile_numbers_give_a_well_formed_plot_with_finite_coordinates(change: dict[str, Any]) -> None:
    numbers = study(**change)
    svg = _plot.svg(numbers, "h")
    assert not [v for v in coordinates(svg) if not math.isfinite(float(v))]
    assert _plot.png(numbers)[:8] == b"\x89PNG\r\n\x1a\n"
    _plot.rows(numbers)  # the table's numbers too


def test_levels_whose_step_size_is_not_a_positive_finite_number_are_left_out_and_counted() -> None:
    numbers = _plot.convergence({"hs": [0.1, "a", math.inf, -1, 0.0, 10**400, 0.05], "errors": [1, 2, 3, 4, 5, 6, 0.25]})
    assert numbers is not None and numbers.hs == (0.1, 0.05) and numbers.errors == (1.0, 0.25) and numbers.dropped == 5
    assert _plot.convergence({"hs": ["a"], "errors": [1.0]}) is None
    assert _plot.convergence({"hs": [0.1, 0.05], "errors": [1.0]}) is None  # not one study


def test_pairwise_orders_are_taken_in_log_space_and_agree_with_the_order_module() -> None:
    errors = [3 * h**1.5 * (1 + h) for h in HS]
    ours = [q for _, _, q in _plot.rows(study(errors=errors))][1:]
    assert ours == pytest.approx(pairwise_orders(HS, errors), rel=1e-12)
    tiny = study(errors=[1e-300, 1e-310, 1e-320, 5e-324, 0.0])  # e0 / e1 would overflow as a quotient
    orders = [q for _, _, q in _plot.rows(tiny)]
    assert orders[0] is None and orders[1] == pytest.approx(10 / math.log10(2)) and orders[4] is None


def test_the_y_axis_spans_the_data_and_a_floor_outside_it_is_a_note_at_the_axis() -> None:
    numbers = study()  # errors from 3e-2 to 1.2e-4, floor 1e-12
    geometry = _plot._geometry([_plot.Series("latest", numbers)])
    assert geometry is not None
    low, high = math.log10(min(numbers.errors)), math.log10(max(numbers.errors))  # type: ignore[type-var]
    assert geometry.ys[0] < low and geometry.ys[1] > high
    assert (geometry.ys[1] - geometry.ys[0]) < (high - low) + 1.0  # no decades of empty space for the floor
    shown = texts(_plot.svg(numbers, "f"))
    assert "round-off floor 1.0e-12 below the axis" in shown
    inside = texts(_plot.svg(study(floor=1e-4), "g"))
    assert "round-off floor 1.0e-04" in inside and "below the axis" not in inside
    above = texts(_plot.svg(study(floor=1.0), "a"))
    assert "round-off floor 1.0e+00 above the axis" in above


def test_all_zero_errors_cannot_be_drawn_and_say_so() -> None:
    zero = study(errors=[0.0] * 5, fitted=None)
    assert _plot.all_zero(zero) and not _plot.drawable([_plot.Series("latest", zero)])
    with pytest.raises(ValueError, match="nothing to draw on a log scale"):
        _plot.svg(zero, "z")
    both = texts(_plot.svg([_plot.Series("latest", zero), _plot.Series("baseline", study())], "zb"))
    assert "latest: every error is exactly 0" in both and "baseline: measured error" in both
    assert not _plot.all_zero(study(errors=[0.0, 0.0, 0.0, 0.0, 1e-3]))


def test_a_study_of_100000_levels_draws_at_most_max_points_markers_and_says_so() -> None:
    hs = [1.0 / (10 + k) for k in range(100_000)]
    numbers = study(hs=hs, errors=[3 * h * h for h in hs], fit_hs=hs)
    svg = _plot.svg(numbers, "big")
    assert f"{_plot.MAX_POINTS} of 100,000 levels drawn" in texts(svg)
    markers = len(re.findall(r"<use ", svg))
    assert _plot.MAX_POINTS <= markers < _plot.MAX_POINTS + 20  # plus the legend's sample marker
    assert "fitted slope 2.00 (100,000 levels)" in texts(svg)


def test_the_fit_window_matches_fit_hs_by_bisection_with_the_old_tolerance() -> None:
    numbers = study(fit_hs=[HS[2] * (1 + 1e-12), HS[3], HS[4] * (1 - 1e-12), 0.77])
    window = _plot._fit_window(numbers, _plot._measured(numbers))
    assert [round(10**x, 12) for x, _ in window] == [round(h, 12) for h in sorted(HS[2:])]
    default = study(fit_hs=[0.77], errors=[1e-12, 1e-3, 1e-4, 1e-5, 1e-6], floor=1e-6)
    assert len(_plot._fit_window(default, _plot._measured(default))) == 3  # the finest above the floor


def test_several_series_share_one_figure_in_distinct_styles_with_a_legend() -> None:
    latest, baseline = study(errors=[3 * h for h in HS], fitted=1.0), study(errors=[0.8] * 5, fitted=0.0)
    variant = study(errors=[h * h for h in HS])
    svg = _plot.svg([_plot.Series("latest", latest), _plot.Series("baseline", baseline),
                     _plot.Series("variant", variant)], "s")
    shown = texts(svg)
    for line in ("latest: measured error", "latest: fitted slope 1.00 (4 levels)", "baseline: measured error",
                 "baseline: fitted slope 0.00 (4 levels)", "variant: measured error", "expected slope 2"):
        assert line in shown
    assert shown.count("expected slope") == 1  # one expected line when the runs expect the same order
    assert "#1f4e99" in svg and "#d35400" in svg and "#6a1b9a" in svg  # one colour per run
    assert "fill: none" in svg  # the later runs' markers are hollow


def test_the_plot_draws_no_text_but_fixed_words_and_numbers() -> None:
    words = set(re.findall(r"[a-z]+", texts(_plot.svg([_plot.Series("latest", study()),
                                                        _plot.Series("baseline", study(fitted=1.0))], "w"))))
    assert words <= {"latest", "baseline", "measured", "error", "fitted", "slope", "levels", "expected", "round",
                     "off", "floor", "below", "above", "the", "axis", "step", "size", "h", "e"}


# --- a notebook's view: OrderResult._repr_html_ ------------------------------------------------------
def notebook_html(result: object) -> str:
    """The text/html a notebook shows for ``result``: IPython's own display formatter when installed."""
    try:
        from IPython.core.formatters import DisplayFormatter
    except ImportError:
        return result._repr_html_()  # type: ignore[attr-defined]
    data, _ = DisplayFormatter().format(result)
    return str(data["text/html"])


def test_an_order_result_shows_its_status_message_and_the_reports_svg_in_a_notebook() -> None:
    result = check_order(HS, [3 * h for h in HS], 2)
    shown = notebook_html(result)
    root = ET.fromstring(shown)  # one well-formed element
    assert root.get("class") == "physverify-result"
    assert "".join(root.find("p/strong").itertext()) == FAIL  # type: ignore[union-attr]
    assert "observed order 1.00 (expected 2)" in "".join(root.itertext())
    (svg,) = root.iter(f"{SVG}svg")
    salt = re.search(r'id="(nb\d+)-', shown).group(1)  # type: ignore[union-attr]
    numbers = _plot.convergence({"hs": list(result.hs), "errors": list(result.errors), "expected": result.expected,
                                 "fitted": result.fitted, "floor": result.floor, "fit_hs": list(result.fit_hs)})
    assert numbers is not None
    assert svg is not None and _plot.svg(numbers, salt) in shown  # the report's very plot, byte for byte
    again = notebook_html(result)
    assert re.search(r'id="(nb\d+)-', again).group(1) != salt  # type: ignore[union-attr]  # two cells, no shared id


def test_without_matplotlib_a_notebook_shows_the_numbers_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = OrderResult(FAIL, '<script>alert("x")</script>', 2.0, 1.0, tuple(HS), tuple(3 * h for h in HS))
    shown = notebook_html(result)
    root = ET.fromstring(shown)
    assert "<svg" not in shown and not list(root.iter("script"))
    assert '<script>alert("x")</script>' in "".join(root.itertext())
    table = "".join(root.find("pre").itertext()).splitlines()  # type: ignore[union-attr]
    assert table[0].split() == ["h", "error", "order"] and table[2].split() == ["0.05", "0.15", "1.00"]


def test_importing_the_numerics_does_not_import_the_report() -> None:
    code = ("import sys, physverify.checks, physverify.order\n"
            "print(sorted(m for m in sys.modules if m.startswith(('physverify.report', 'matplotlib'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_tick_labels_stay_short_for_denormal_and_ordinary_step_sizes() -> None:
    assert [_plot._decimal(m, k) for m, k in ((5, -3), (1, -2), (2, -5))] == ["0.005", "0.01", "2e-05"]
    assert _plot._decimal(1, -320) == "10\u207b\u00b3\u00b2\u2070" and _plot._decimal(5, -324) == "5·10\u207b\u00b3\u00b2\u2074"
    svg = _plot.svg(study(hs=[5e-324, 1e-322, 1e-320, 1e-315, 1e-310]), "d")
    assert not [t for t in texts(svg).split() if "e-3" in t]  # no 9.88131e-324
