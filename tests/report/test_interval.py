"""The report draws a stochastic check as its estimate and interval against the band expected +- tol (issue 20)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from physverify import Check, mean_study, run_check
from physverify.report import _interval, html

HOSTILE = '<script>alert("x")</script> & "quoted" \x1b[31m\u202e'


def stochastic_outcome(label: str, mean: float) -> dict[str, Any]:
    """A real check's ledger entry: mean_study on normal data of the given mean against 0 +- 0.2."""
    study = lambda: mean_study(lambda m, rng: rng.normal(mean, 1.0, m), 0.0, tol=0.2, n=2000, seed=4)  # noqa: E731
    return run_check(Check("stochastic", label, study)).to_dict()


def record(checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"ledger_version": 1, "date": "2026-01-02T03:04:05+00:00", "physverify": "0.1.0", "claim_file": "c.py",
            "claim_key": "claims/c.py", "text": "a sampler", "source": "a person", "file": "mc.py", "line": 3,
            "reference": "Metropolis et al. 1953", "impact": "used", "repo_commit": None, "verdict": "confirmed",
            "reason": "r", "control": stochastic_outcome("control: a correct sampler", 0.0), "checks": checks}


def page_for(tmp_path: Path, checks: list[dict[str, Any]]) -> str:
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text(json.dumps(record(checks)) + "\n", encoding="utf-8")
    return html.render_report(html.from_ledger(ledger))


def test_a_stochastic_check_is_drawn_as_its_interval_against_the_band(tmp_path: Path) -> None:
    entry = stochastic_outcome("the code's sampler", 0.6)
    root = ET.fromstring(page_for(tmp_path, [entry]))
    figures = [f for f in root.iter("figure") if f.get("class") == "interval"]
    assert len(figures) == 2  # the control and the check
    text = "".join(figures[1].itertext())
    data = entry["data"]
    assert f"{data['estimate']:.6g}" in text and "-0.2 to 0.2" in text and "seed" in text and "4" in text
    assert "numpy.random.PCG64" in text and "0.001" in text
    assert any(el.tag.endswith("svg") for el in figures[1].iter())


def test_the_interval_figure_escapes_whatever_the_ledger_holds() -> None:
    data = {"kind": HOSTILE, "estimate": 1.0, "low": 0.5, "high": 1.5, "expected": 1.0, "tol": 0.2, "n": 10,
            "alpha": 0.01, "seed": 1, "generator": HOSTILE}
    figure = _interval.figure(data, "<figcaption>x</figcaption>")
    assert figure is not None and "<script" not in figure and "\x1b" not in figure and "\u202e" not in figure
    ET.fromstring(figure)  # well-formed


def test_data_that_is_not_a_usable_interval_draws_no_interval() -> None:
    base = {"kind": "mean", "estimate": 1.0, "low": 0.5, "high": 1.5, "expected": 1.0, "tol": 0.2}
    assert _interval.interval(base) is not None
    for broken in ({**base, "low": None}, {**base, "low": 2.0}, {**base, "tol": -1}, {**base, "kind": 3},
                   {"hs": [0.1, 0.05], "errors": [1e-2, 2.5e-3]}, "text", None):
        assert _interval.interval(broken) is None
