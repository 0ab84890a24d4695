"""The HTML report (issue 12): well-formed, self-contained, one section per claim in the gate's
order, escaped text, convergence plots from the ledger's data key, tables without matplotlib."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physverify.checks import FAIL, PASS, Check, run_check
from physverify.errors import PhysverifyError
from physverify.order import check_order
from physverify.replay import ReplayResult
from physverify.report import FORMATS, html, render

REPO = Path(__file__).resolve().parents[2]
OLD_LEDGER = REPO / "claims" / "confirm_ledger.jsonl"  # written before the data key existed
HOSTILE = '<script>alert("x")</script> & \'quoted\' "text" </section><img src=x onerror=alert(1)>\x0b'


def parse(page: str) -> ET.Element:
    """The page read by a strict XML parser: it raises on anything not well-formed."""
    return ET.fromstring(page)


def sections(root: ET.Element) -> list[ET.Element]:
    return [s for s in root.iter("section") if s.get("class") == "claim"]


def section_key(section: ET.Element) -> str:
    return "".join(section.find("h2/code").itertext())  # type: ignore[union-attr]


def order_outcome(label: str, exponent: float, expected: float = 2) -> dict[str, Any]:
    """A real check's ledger entry: check_order on errors C h**exponent."""
    hs = [0.1 / 2**k for k in range(5)]
    return run_check(Check("mms", label, lambda: check_order(hs, [3 * h**exponent for h in hs], expected))).to_dict()


def ledger_record(key: str, verdict: str, text: str = "a claim", date: str = "2026-01-02T03:04:05+00:00",
                  commit: str | None = "0123456789abcdef0123", checks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "ledger_version": 1, "date": date, "physverify": "0.1.0", "claim_file": key, "claim_key": key, "text": text,
        "source": "a person", "file": "sim/rk4.py", "line": 12, "reference": "Butcher, sec. 23", "impact": "used",
        "repo_commit": commit, "verdict": verdict, "reason": f"the reason for {verdict}",
        "control": order_outcome("control: second order without the term", 2.0),
        "checks": checks if checks is not None else [order_outcome("second order with the term", 1.0)],
    }


def write_ledger(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import matplotlib` raise ImportError, as on an install without the extra
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_replay_takes_html_from_the_format_table(result: ReplayResult, tmp_path: Path) -> None:
    assert FORMATS["html"] is html
    page = render("html", replace(result, ledger=tmp_path / "none.jsonl"))
    assert page.startswith("<!DOCTYPE html>")
    assert len(sections(parse(page))) == len(result.claims)


def test_claims_failing_the_gate_come_first_then_confirmed_then_the_rest(result: ReplayResult, tmp_path: Path,
                                                                         failing: set[str]) -> None:
    keys = [section_key(s) for s in sections(parse(html.render(replace(result, ledger=tmp_path / "x.jsonl"))))]
    assert set(keys[:3]) == failing
    assert keys[3] == "claims/known.py"  # confirmed, unchanged: the gate holds for it
    assert set(keys[4:]) == {run.key for run in result.claims} - failing - {"claims/known.py"}


def test_each_section_names_verdict_transition_claim_reference_place_and_every_check(tmp_path: Path) -> None:
    ledger = write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])
    root = parse(html.render_report(html.from_ledger(ledger)))
    (section,) = sections(root)
    text = " ".join(section.itertext())
    for expected in ("confirmed", "new: confirmed", "a claim", "a person", "Butcher, sec. 23", "sim/rk4.py:12",
                     "control: second order without the term", "second order with the term",
                     "observed order 1.00 (expected 2)", "0123456789ab"):
        assert expected in text
    statuses = [td.text for td in section.iter("td") if td.get("class") == "status"]
    assert statuses == [PASS, FAIL]


def test_text_with_markup_quotes_and_script_is_shown_as_text(tmp_path: Path) -> None:
    record = ledger_record("claims/<b>x</b>.py", "confirmed", text=HOSTILE)
    record["control"]["label"] = HOSTILE  # a label is drawn nowhere in the plot, shown only as text
    page = html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record])))
    root = parse(page)
    assert not [e for e in root.iter() if e.tag in ("script", "img", "b")]
    shown = [dd for dd in root.iter("dd") if dd.text and "alert" in dd.text]
    assert shown[0].text == HOSTILE.replace("\x0b", "\\x0b")  # a control shown as its escape, as in every format
    assert len(sections(root)) == 1  # the "</section>" in the text did not end the section
    for svg in root.iter("{http://www.w3.org/2000/svg}svg"):
        assert "alert" not in "".join(svg.itertext()) and "alert" not in ET.tostring(svg, encoding="unicode")


def test_a_check_with_data_gets_a_log_log_plot_with_its_four_lines(tmp_path: Path) -> None:
    page = html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])))
    root = parse(page)
    svgs = list(root.iter("{http://www.w3.org/2000/svg}svg"))
    assert len(svgs) == 2  # the control and the check
    legend = " ".join(svgs[1].itertext())
    for line in ("measured error", "fitted slope 1.00 (4 levels)", "expected slope 2", "round-off floor 1.0e-12"):
        assert line in legend
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids))  # two inlined SVGs share no id


def test_the_page_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    page = html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])))
    root = parse(page)
    assert not [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("script", "link", "img", "iframe", "object")]
    references = [v for e in root.iter() for k, v in e.attrib.items() if k.endswith(("href", "src"))]
    assert references and all(v.startswith("#") for v in references)  # only the SVGs' own clip paths and markers
    assert "url(" not in page.replace("url(#", "")


def test_without_matplotlib_the_numbers_are_tables_and_one_line_says_how_to_get_plots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_matplotlib(monkeypatch)
    page = html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])))
    root = parse(page)
    assert "<svg" not in page
    assert page.count("pip install &#x27;matplotlib&gt;=3.7&#x27;") == 1
    tables = [t for t in root.iter("table") if t.get("class") == "numbers"]
    assert len(tables) == 2
    rows = [[td.text or "" for td in tr.iter("td")] for tr in tables[1].iter("tr")][1:]
    assert rows[0] == ["0.1", "0.3", ""] and rows[1] == ["0.05", "0.15", "1.00"]  # h, error, pairwise order


def test_a_ledger_written_before_the_data_key_still_renders() -> None:
    report = html.from_ledger(OLD_LEDGER)
    root = parse(html.render_report(report))
    keys = {json.loads(line)["claim_key"] for line in OLD_LEDGER.read_text().splitlines() if line.strip()}
    assert {section_key(s) for s in sections(root)} == keys
    assert not list(root.iter("{http://www.w3.org/2000/svg}svg"))  # no data, no plot, and no error


def test_history_shows_every_line_and_the_last_change_decides_the_order(tmp_path: Path) -> None:
    ledger = write_ledger(tmp_path / "l.jsonl", [
        ledger_record("claims/b.py", "rejected", date="2026-01-01T00:00:00+00:00", commit="aaaaaaaaaaaaaaaa"),
        ledger_record("claims/a.py", "rejected"),
        ledger_record("claims/b.py", "confirmed", date="2026-02-01T00:00:00+00:00", commit="bbbbbbbbbbbbbbbb-dirty"),
    ])
    root = parse(html.render_report(html.from_ledger(ledger)))
    first, _ = sections(root)
    assert section_key(first) == "claims/b.py"  # rejected -> confirmed: the defect is back, fails the gate
    assert "fails the gate: regressed: rejected -> confirmed" in " ".join(first.itertext())
    strip = ["".join(li.itertext()) for li in first.iter("li")]
    assert strip == ["2026-01-01T00:00:00+00:00 rejected aaaaaaaaaaaa", "2026-02-01T00:00:00+00:00 confirmed bbbbbbbbbbbb"]
    only = html.from_ledger(ledger, "claims/a.py")
    assert [run.key for run in only.claims] == ["claims/a.py"]


def test_bad_ledgers_are_one_line_errors_and_bad_lines_are_notes(tmp_path: Path) -> None:
    with pytest.raises(PhysverifyError, match="no such ledger file"):
        html.from_ledger(tmp_path / "missing.jsonl")
    ledger = write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "rejected")])
    with pytest.raises(PhysverifyError, match="no line for the claim claims/zzz.py"):
        html.from_ledger(ledger, "claims/zzz.py")
    with ledger.open("a") as f:
        f.write("{not json\n")
    assert any(":2: not valid JSON" in note for note in html.from_ledger(ledger).notes)


def test_garbage_in_the_data_key_gives_no_plot_and_no_crash(tmp_path: Path) -> None:
    check = order_outcome("k", 1.0)
    check["data"].update(hs="<svg onload=alert(1)>", errors={"a": 1})
    other = {"label": "drift", "family": "invariant", "status": PASS, "message": "", "data": {"t_ends": [1.0, 2.0], "note": "<i>"}}
    record = ledger_record("claims/a.py", "rejected", checks=[check, other])
    root = parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record]))))
    assert len(list(root.iter("{http://www.w3.org/2000/svg}svg"))) == 1  # the control's plot only
    assert "1, 2" in " ".join(root.itertext()) and not list(root.iter("i"))


def test_the_report_command_writes_the_file_and_exits_2_on_a_missing_ledger(tmp_path: Path) -> None:
    write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])
    done = subprocess.run([sys.executable, "-m", "physverify", "report", "--ledger", "l.jsonl", "-o", "out.html"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(sections(parse((tmp_path / "out.html").read_text(encoding="utf-8")))) == 1
    missing = subprocess.run([sys.executable, "-m", "physverify", "report", "--ledger", "nope.jsonl"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == "physverify: nope.jsonl: no such ledger file; give the ledger with --ledger\n"


def test_the_report_command_reads_the_ledger_replay_writes_when_none_is_given(tmp_path: Path, cli: Any) -> None:
    """Issue 10's rule for `ledger log` holds for `report` too: physverify.yaml's ledger, else the claims folder's."""
    (tmp_path / "claims").mkdir()
    write_ledger(tmp_path / "claims" / "confirm_ledger.jsonl", [ledger_record("claims/a.py", "confirmed")])
    ran = cli("report", "-o", "out.html", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert [section_key(s) for s in sections(parse((tmp_path / "out.html").read_text(encoding="utf-8")))] == ["claims/a.py"]
    (tmp_path / "claims" / "physverify.yaml").write_text("ledger: kept.jsonl\n")
    write_ledger(tmp_path / "claims" / "kept.jsonl", [ledger_record("claims/b.py", "rejected")])
    assert cli("report", "-o", "out.html", cwd=tmp_path).returncode == 0
    assert [section_key(s) for s in sections(parse((tmp_path / "out.html").read_text(encoding="utf-8")))] == ["claims/b.py"]
    missing = cli("report", "-o", str(tmp_path / "no-such-folder" / "out.html"), cwd=tmp_path)
    assert missing.returncode == 2 and "no-such-folder" in missing.stderr  # refused before the ledger is read


def test_the_report_command_runs_without_matplotlib_installed(tmp_path: Path) -> None:
    write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])
    code = ("import sys; sys.modules['matplotlib'] = None\nfrom physverify.cli import main\n"
            "raise SystemExit(main(['report', '--ledger', 'l.jsonl', '-o', 'out.html']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert "<svg" not in page and "the report extra of physverify" in page and len(sections(parse(page))) == 1


def test_the_decisive_check_is_the_failed_control_else_the_first_failing_check() -> None:
    passing, failing = order_outcome("p", 2.0), order_outcome("f", 1.0)
    assert html.decisive({"control": passing, "checks": [passing, failing]}) is failing
    assert html.decisive({"control": failing, "checks": [failing]}) is failing  # the control, by identity
    assert html.decisive({"control": passing, "checks": [passing]}) is passing
    assert html.decisive({"control": None, "checks": []}) is None


def test_a_large_page_draws_its_first_plots_and_gives_the_rest_as_tables(tmp_path: Path) -> None:
    records = [ledger_record(f"claims/c{i}.py", "rejected") for i in range(3)] + [ledger_record("claims/z.py", "confirmed")]
    report = html.from_ledger(write_ledger(tmp_path / "l.jsonl", records))
    root = parse(html.render_report(report, max_plots=3))
    first = sections(root)[0]
    assert section_key(first) == "claims/z.py"  # confirmed: it comes first, so its plots are drawn
    assert len(list(first.iter("{http://www.w3.org/2000/svg}svg"))) == 2
    assert len(list(root.iter("{http://www.w3.org/2000/svg}svg"))) == 3
    assert "the other 5 give their numbers as tables" in " ".join(root.itertext())
    assert len([t for t in root.iter("table") if t.get("class") == "numbers"]) == 8  # every check keeps its numbers
    everything = parse(html.render_report(report, max_plots=None))
    assert len(list(everything.iter("{http://www.w3.org/2000/svg}svg"))) == 8


def test_the_docs_show_the_screenshot_the_browser_test_takes() -> None:
    doc = (REPO / "docs" / "report.md").read_text(encoding="utf-8")
    assert "![The report of the worked example in Chromium](report.png)" in doc
    shot = REPO / "docs" / "report.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "PHYSVERIFY_SCREENSHOT" in (REPO / "tests" / "test_report_browser.py").read_text(encoding="utf-8")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["claim_key", "text", "source", "file", "line", "reference", "verdict", "reason", "date", "repo_commit",
          "control", "checks", "impact"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({}, optional={name: JSON_VALUES for name in FIELDS}), min_size=1, max_size=4))
def test_any_json_object_in_the_ledger_gives_a_well_formed_page(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    """The ledger is read, not trusted: whatever a line holds, the page renders and parses."""
    for i, r in enumerate(records):
        r.setdefault("claim_key", f"claims/c{i}.py")
    ledger = write_ledger(tmp_path / "l.jsonl", records)
    parse(html.render_report(html.from_ledger(ledger)))


def test_the_second_run_of_a_claim_that_names_its_fix_is_in_the_table(tmp_path: Path) -> None:
    """Issue 17: the variant run's control and checks, as their own rows, and the decisive pair as evidence."""
    record = ledger_record("claims/a.py", "confirmed")
    record["variant"] = {"held": "defect", "line": 12, "control": {**record["control"], "label": "<ctl>"},
                         "checks": [{**record["checks"][0], "status": PASS, "message": "observed order 2.00"}]}
    ledger = write_ledger(tmp_path / "l.jsonl", [record])
    (section,) = sections(parse(html.render_report(html.from_ledger(ledger))))
    (table,) = [t for t in section.iter("table") if t.get("class") == "outcomes"]
    roles = [tr.find("td").text for tr in table.iter("tr") if tr.find("td") is not None]
    assert roles == ["control", "check (decisive)", "control with the fix", "check with the fix"]
    text = " ".join(section.itertext())
    assert "<ctl>" in text and "check FAIL on the code, PASS with the fix: second order with the term" in text
