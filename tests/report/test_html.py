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
from physverify.gate.replay import ReplayResult
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


def test_a_matplotlibrc_in_the_working_directory_changes_nothing_in_the_plots(tmp_path: Path) -> None:
    """matplotlib reads ./matplotlibrc at import; in the Action that is the repository's. The plots are drawn with
    matplotlib's own defaults: no TeX run on the repository's preamble (here TeX is missing, and the plot was lost),
    no colour or line of its choosing."""
    write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])
    (tmp_path / "matplotlibrc").write_text("text.usetex: True\ntext.latex.preamble: \\usepackage{nosuchpackage}\n"
                                           "axes.facecolor: 123456\nlines.linewidth: 17\n")
    done = subprocess.run([sys.executable, "-m", "physverify", "report", "--ledger", "l.jsonl", "-o", "out.html"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    root = parse((tmp_path / "out.html").read_text(encoding="utf-8"))
    svgs = [ET.tostring(svg, encoding="unicode") for svg in root.iter("{http://www.w3.org/2000/svg}svg")]
    assert len(svgs) == 2, done.stderr
    assert not any("#123456" in svg or "stroke-width: 17" in svg for svg in svgs)


def test_the_report_command_writes_the_file_and_exits_2_on_a_missing_ledger(tmp_path: Path, cli: Any) -> None:
    write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")])
    # the written file is read: in this process (a process of its own imports matplotlib anew, about 1.5 s)
    done = cli("report", "--ledger", "l.jsonl", "-o", "out.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(sections(parse((tmp_path / "out.html").read_text(encoding="utf-8")))) == 1
    # the refusal as a real process: nothing on stdout, the one line on stderr
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
    code = ("import sys; sys.modules['matplotlib'] = None\nfrom physverify.commands.cli import main\n"
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
    assert "PHYSVERIFY_SCREENSHOT" in (REPO / "tests" / "report" / "test_report_browser.py").read_text(encoding="utf-8")


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


# --- issue 18, item 7: the baseline beside the latest, all-zero errors, checks with no step size ---------
SVG = "{http://www.w3.org/2000/svg}svg"


def plots(section: ET.Element) -> list[str]:
    """The words of each plot in a section: its <text> elements, not its style sheet."""
    return [" ".join("".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text"))
            for svg in section.iter(SVG)]


def by_key(root: ET.Element) -> dict[str, ET.Element]:
    return {section_key(s): s for s in sections(root)}


def test_a_regressed_claim_draws_its_baseline_run_beside_the_latest_and_an_unchanged_one_does_not(
        tmp_path: Path) -> None:
    fixed_line = ledger_record("claims/a.py", "rejected", date="2026-01-01T00:00:00+00:00",
                               checks=[order_outcome("second order with the term", 2.0)])
    broken_line = ledger_record("claims/a.py", "confirmed", date="2026-02-01T00:00:00+00:00")
    steady = [ledger_record("claims/b.py", "confirmed", date=d) for d in ("2026-01-01T00:00:00+00:00", "2026-02-01")]
    root = parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [fixed_line, *steady, broken_line]))))
    regressed, unchanged = by_key(root)["claims/a.py"], by_key(root)["claims/b.py"]
    control, check = plots(regressed)
    for words in (control, check):
        assert "latest: measured error" in words and "baseline: measured error" in words
    assert "latest: fitted slope 1.00 (4 levels)" in check and "baseline: fitted slope 2.00 (4 levels)" in check
    assert "Drawn beside the baseline run (rejected, 2026-01-01T00:00:00+00:00)." in " ".join(regressed.itertext())
    assert all("baseline" not in words for words in plots(unchanged))
    assert "Drawn beside" not in " ".join(unchanged.itertext())


def test_a_check_renamed_since_the_baseline_has_nothing_to_overlay(tmp_path: Path) -> None:
    before = ledger_record("claims/a.py", "confirmed", date="2026-01-01T00:00:00+00:00",
                           checks=[order_outcome("the old label", 1.0)])
    after = ledger_record("claims/a.py", "rejected", checks=[order_outcome("second order with the term", 2.0)])
    control, check = plots(sections(parse(html.render_report(html.from_ledger(
        write_ledger(tmp_path / "l.jsonl", [before, after])))))[0])
    assert "baseline: measured error" in control and "baseline" not in check


def test_a_replay_read_back_from_the_sandbox_finds_its_baseline_run_in_the_ledger(result: ReplayResult,
                                                                                   tmp_path: Path) -> None:
    """The sandbox's JSON document keeps only the baseline's verdict and date; the ledger has its checks."""
    from physverify.report import json as report_json

    before = ledger_record("claims/regressed.py", "rejected", date="2026-01-01T00:00:00+00:00",
                           checks=[order_outcome("second order with the term", 2.0)])
    after = ledger_record("claims/regressed.py", "confirmed", date="2026-02-01T00:00:00+00:00")
    ledger = write_ledger(tmp_path / "l.jsonl", [before, after])
    run = replace(next(r for r in result.claims if r.key == "claims/regressed.py"), record=after, baseline=before)
    direct = replace(result, claims=(run,), ledger=ledger)
    again = report_json.from_dict(json.loads(render("json", direct)), ledger=ledger)
    assert again.claims[0].baseline == {"verdict": "rejected", "date": "2026-01-01T00:00:00+00:00"}
    for page in (html.render(direct), html.render(again)):
        control, check = plots(sections(parse(page))[0])
        assert "baseline: fitted slope 2.00 (4 levels)" in check and "baseline: measured error" in control


def zero_outcome() -> dict[str, Any]:
    hs = [0.1 / 2**k for k in range(5)]
    return run_check(Check("exact", "reproduces the polynomial exactly", lambda: check_order(hs, [0.0] * 5, 2))).to_dict()


def test_a_check_whose_errors_are_all_exactly_zero_says_so_in_words_and_draws_no_plot(tmp_path: Path) -> None:
    record = ledger_record("claims/a.py", "rejected", checks=[zero_outcome()])
    root = parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record]))))
    figures = [f for f in root.iter("figure") if "exactly" in "".join(f.find("figcaption").itertext())]  # type: ignore[union-attr]
    (figure,) = figures
    assert "Every error is exactly 0, at all 5 step sizes" in " ".join(figure.itertext())
    assert not list(figure.iter(SVG))
    rows = [[td.text for td in tr.iter("td")] for tr in figure.iter("tr")][1:]
    assert [r[1] for r in rows] == ["0"] * 5  # the numbers are still there


def test_a_check_with_no_step_size_is_a_sentence_and_a_list_never_a_log_log_plot(tmp_path: Path) -> None:
    """An identity check (a symmetry, a conserved total to round-off) keeps deviations and no hs."""
    mirror = {"label": "the Riemann fan is mirror symmetric", "family": "identity", "status": "FAIL", "message": "",
              "data": {"deviations": [0.0, 2e-16, 3.5e-3, 1e-16], "expected": 0.0}}
    periodic = {"label": "the two copies of the end point agree", "family": "identity", "status": "EXACT",
                "message": "", "data": {"errors": [0.0, 0.0, 0.0], "hs": []}}
    total = {"label": "the total is conserved", "family": "identity", "status": "PASS", "message": "",
             "data": {"values": [10.0, 10.0 + 1e-15, 10.0], "expected": 10.0}}
    record = ledger_record("claims/a.py", "confirmed", checks=[mirror, periodic, total])
    root = parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record]))))
    data = [f for f in root.iter("figure") if f.get("class") == "data"]
    words = [" ".join(f.itertext()) for f in data]
    assert "the largest of the 4 deviations is 0.0035 in size, at index 2" in words[0]
    assert "every one of the 3 errors is exactly 0" in words[1]
    assert "the largest of the 3 values is 1.78e-15 in size, at index 1" in words[2]
    assert all(not list(f.iter(SVG)) for f in data)
    assert len(list(root.iter(SVG))) == 1  # the control's plot only


# --- issue 21, item 2: hostile numbers never stop the page --------------------------------------------
HOSTILE_CLAIM = '''\
"""Claim: a study whose numbers are hostile to the report (issue 21, item 2)."""
from physverify import FAIL, PASS, Check, OrderResult

CLAIM = {
    "text": "the scheme diverges",
    "source": "a test",
    "file": "claims/claim_hostile.py",
    "line": 1,
    "reference": "Roache, Verification and Validation in Computational Science and Engineering, ch. 5",
    "impact": "used",
}
HS = (0.1, 0.05, 0.025)


def _result(*fields):
    return lambda: OrderResult(FAIL, "hostile numbers", *fields)


def control():
    return Check("mms", "second order where the term is off",
                 lambda: OrderResult(PASS, "second order", 2.0, 2.0, HS, (1e-2, 2.5e-3, 6.25e-4)))


def checks():
    return [
        Check("mms", "a diverging study", _result(2.0, -400.0, HS, (1.0, 1e120, 1e240))),
        Check("mms", "slopes of 1e308", _result(1e308, 1e308, HS, (1e-2, 1e-3, 1e-4))),
        Check("mms", "an integer of 400 digits", _result(10**400, 2.0, HS, (1, 10**400, 3), 10**400)),
        Check("mms", "denormal step sizes", _result(2.0, 2.0, (5e-324, 1e-320, 1e-310), (1e-3, 1e-2, 5e-324))),
        Check("mms", "not finite", _result(float("nan"), float("inf"), (0.1, float("inf"), 0.05), (1.0, float("nan"), 0.5))),
        Check("mms", "strings for numbers", _result("two", "x", ("a", 0.1, 0.05), ("b", 1.0, 0.5), "low", ("c",))),
    ]
'''
HOSTILE_LABELS = ("a diverging study", "slopes of 1e308", "an integer of 400 digits", "denormal step sizes",
                  "not finite", "strings for numbers")


@pytest.fixture()
def hostile_repo(tmp_path: Path) -> Path:
    from support.fixtures import init_repo

    root = tmp_path / "hostile"
    (root / "claims").mkdir(parents=True)
    (root / "claims" / "claim_hostile.py").write_text(HOSTILE_CLAIM)
    repo = init_repo(root)
    repo.index.add(["claims/claim_hostile.py"])
    repo.index.commit("a claim with hostile numbers")
    return root


def assert_every_check_shown(page: str) -> ET.Element:
    root = parse(page)
    captions = ["".join(f.find("figcaption").itertext()) for f in root.iter("figure")]  # type: ignore[union-attr]
    assert set(HOSTILE_LABELS) <= set(captions)
    return root


def test_hostile_numbers_from_a_claim_give_the_page_through_replay_and_report(hostile_repo: Path, physverify: Any) -> None:
    done = physverify("replay", "claims", "--trusted", "--format", "html", "--output", "replay.html", cwd=hostile_repo)
    warned = [line for line in done.stderr.splitlines() if " claims done (" not in line]  # not the progress count
    assert done.returncode == 0 and warned == [], done.stderr
    root = assert_every_check_shown((hostile_repo / "replay.html").read_text(encoding="utf-8"))
    assert len(list(root.iter(SVG))) == 7  # the control and each hostile check: every one could be drawn
    data = json.loads((hostile_repo / "claims" / "confirm_ledger.jsonl").read_text().splitlines()[-1])
    assert data["checks"][2]["data"]["expected"] == 10**400  # the ledger line keeps what the claim gave
    shown = physverify("report", "-o", "report.html", cwd=hostile_repo)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert_every_check_shown((hostile_repo / "report.html").read_text(encoding="utf-8"))


def test_a_hand_written_ledger_of_nan_infinity_and_huge_integers_gives_the_page(tmp_path: Path, physverify: Any) -> None:
    huge = "9" * 400
    line = ('{"claim_key": "claims/n.py", "verdict": "confirmed", "line": ' + huge + ', "checks": ['
            '{"label": "nan", "status": "FAIL", "data": {"hs": [NaN, Infinity, 0.1, 0.05], "errors": [NaN, 1, -Infinity, 0.5],'
            ' "fitted": NaN, "expected": -Infinity, "floor": ' + huge + '}},'
            '{"label": "huge", "status": "FAIL", "data": {"hs": [' + huge + ', 1e-320, 1e-321], "errors": [1e308, 1e-308, 4e-324],'
            ' "fitted": -1e308, "fit_hs": [1e-320, ' + huge + ']}},'
            '{"label": "other", "status": "PASS", "data": {"t_ends": [[[[[1]]]]], "n": ' + huge + ', "xs": ' + str(list(range(500))) + '}}]}\n')
    (tmp_path / "l.jsonl").write_text(line)
    done = physverify("report", "--ledger", "l.jsonl", "-o", "out.html", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    root = parse((tmp_path / "out.html").read_text(encoding="utf-8"))
    text = " ".join(root.itertext())
    assert "an integer of 400 digits" in text and "450 more" in text and "[...]" in text


def test_a_plot_that_fails_to_draw_is_a_note_on_its_check_and_the_page_goes_on(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from physverify import plot as _plot

    def broken(*_: Any) -> str:
        raise OverflowError("(34, 'Numerical result out of range') <b>")

    monkeypatch.setattr(_plot, "svg", broken)
    record = ledger_record("claims/a.py", "confirmed")
    root = parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record]))))
    notes = [" ".join(p.itertext()) for p in root.iter("p") if p.get("class") == "plot-note"]
    assert notes == ["The plot could not be drawn (OverflowError: (34, 'Numerical result out of range') <b>)."] * 2
    assert len([t for t in root.iter("table") if t.get("class") == "numbers"]) == 2 and not list(root.iter("b"))


# --- issue 21, item 3: many points, a cap and a time budget -------------------------------------------
def test_a_check_of_100000_points_gives_the_page_and_says_it_capped(tmp_path: Path, cli: Any) -> None:
    hs = [1.0 / (10 + k) for k in range(100_000)]
    big = {"label": "a long study", "family": "mms", "status": "PASS", "message": "",
           "data": {"hs": hs, "errors": [3 * h * h for h in hs], "expected": 2.0, "fitted": 2.0, "floor": 1e-12, "fit_hs": hs}}
    write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "rejected", checks=[big])])
    done = cli("report", "--ledger", "l.jsonl", "-o", "out.html", cwd=tmp_path)  # only its exit code is read
    assert done.returncode == 0, done.stderr
    root = parse((tmp_path / "out.html").read_text(encoding="utf-8"))
    words = plots(sections(root)[0])[1]
    assert "500 of 100,000 levels drawn" in words and "fitted slope 2.00 (100,000 levels)" in words
    table = [t for t in root.iter("table") if t.get("class") == "numbers"][1]
    assert len(list(table.iter("tr"))) == 1 + html.MAX_ROWS + 1
    assert "99,000 levels not shown (the ledger line holds all 100,000)" in " ".join(table.itertext())


def test_past_the_time_budget_every_further_check_is_a_table(tmp_path: Path) -> None:
    report = html.from_ledger(write_ledger(tmp_path / "l.jsonl", [ledger_record("claims/a.py", "confirmed")]))
    root = parse(html.render_report(report, budget_s=0))
    assert not list(root.iter(SVG))
    assert len([t for t in root.iter("table") if t.get("class") == "numbers"]) == 2
    assert "The page spent its time budget for plots (0 s); the other 2 checks give their numbers as tables" in \
        " ".join(root.itertext())
    assert len(list(parse(html.render_report(report, budget_s=None)).iter(SVG))) == 2


def test_hostile_numbers_through_mcp_give_the_answer_the_ledger_line_and_the_image(hostile_repo: Path) -> None:
    """The real MCP client against the real server: no bare "Error executing tool" (issue 21, item 2)."""
    from test_mcp_server import _session

    async def body(client: Any) -> list[Any]:
        replayed = await client.call_tool("replay_claims", {"trusted": True, "jobs": 1})
        confirmed = await client.call_tool("confirm_claim", {"claim": "claims/claim_hostile.py", "trusted": True})
        return [replayed, confirmed]

    # the server's environment is the SDK's default plus this: the code under test, not an installed copy
    replayed, confirmed = _session(hostile_repo, body, {"PYTHONPATH": __import__("os").environ.get("PYTHONPATH", "")})
    for answer in (replayed, confirmed):
        assert not answer.is_error, answer.content[0].text
        assert [part.type for part in answer.content] == ["text", "image"]  # the diverging study decided: drawn
    document = json.loads(replayed.content[0].text.partition("\n\n")[2])
    assert [c["verdict"] for c in document["claims"]] == ["confirmed"]
    lines = (hostile_repo / "claims" / "confirm_ledger.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["checks"][0]["data"]["fitted"] == -400.0


def _sandbox_imports_this_physverify() -> bool:
    """The sandbox clears the environment, so inside it Python imports the installed physverify; a test
    of a checkout on PYTHONPATH (a worktree beside the editable install) cannot run its code there."""
    import os
    import shutil

    import physverify

    if shutil.which("bwrap") is None:
        return False
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import physverify; print(physverify.__file__)"], env=env,
                          capture_output=True, text=True, timeout=120, cwd="/")
    return done.stdout.strip() == physverify.__file__


@pytest.mark.parametrize("sandbox", [
    "false",
    pytest.param("true", marks=[pytest.mark.slow, pytest.mark.skipif(
        not _sandbox_imports_this_physverify(),
        reason="needs bubblewrap and this checkout installed (the sandbox imports the installed physverify)")]),
])
def test_hostile_numbers_through_the_actions_step_give_the_page_the_outputs_and_the_summary(
        hostile_repo: Path, tmp_path: Path, sandbox: str) -> None:
    import git
    from test_action import _run_locally

    head = git.Repo(hostile_repo).head.commit.hexsha
    ran = _run_locally(hostile_repo, tmp_path, {"before": head}, {"jobs": "1", "sandbox": sandbox})
    assert ran["code"] == 0 and "Traceback" not in ran["stderr"], ran["stdout"] + ran["stderr"]
    assert ran["outputs"]["gate"] == "pass" and ran["outputs"]["confirmed"] == "1"
    assert ran["summary"].startswith("## physverify replay: gate passed")
    written = Path(ran["outputs"]["report"])
    page = written if written.is_absolute() else hostile_repo / written
    assert_every_check_shown(page.read_text(encoding="utf-8"))


NUMBERISH = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(min_value=-10**400, max_value=10**400)
             | st.sampled_from([5e-324, 1e-310, 1e308, -400.0, 0.0, 10**400]) | st.text(max_size=3) | st.none())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries(
    {"hs": st.lists(NUMBERISH, min_size=1, max_size=6), "errors": st.lists(NUMBERISH, min_size=1, max_size=6)},
    optional={name: NUMBERISH | st.lists(NUMBERISH, max_size=4) for name in ("expected", "fitted", "floor", "fit_hs")}),
    min_size=1, max_size=3))
def test_any_numbers_in_a_checks_data_give_a_well_formed_page(tmp_path: Path, datas: list[dict[str, Any]]) -> None:
    """Issue 21, item 2 as a property: whatever numbers (or not-numbers) a check's data holds, the page
    renders, parses, and every plot it drew has finite coordinates."""
    checks = [{"label": f"c{i}", "family": "mms", "status": "FAIL", "message": "", "data": d} for i, d in enumerate(datas)]
    before = ledger_record("claims/a.py", "rejected", date="2026-01-01T00:00:00+00:00", checks=checks[::-1])
    after = ledger_record("claims/a.py", "confirmed", checks=checks)  # regressed: the overlay is drawn too
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(json.dumps(before) + "\n" + json.dumps(after) + "\n", encoding="utf-8")  # NaN as JSON reads it
    root = parse(html.render_report(html.from_ledger(ledger), max_plots=None))
    for svg in root.iter(SVG):
        paths = " ".join(e.get("d", "") for e in svg.iter())
        assert "nan" not in paths.lower() and "inf" not in paths.lower()


def test_a_check_of_a_claim_that_names_its_fix_draws_both_runs_in_one_figure(tmp_path: Path) -> None:
    """Issue 17: the run on the code and the run with the fix, one figure per check."""
    record = ledger_record("claims/a.py", "confirmed")
    record["variant"] = {"held": "defect", "line": 12, "control": order_outcome("control: second order without the term", 2.0),
                         "checks": [order_outcome("second order with the term", 2.0)]}
    section = sections(parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record])))))[0]
    control, check = plots(section)
    assert "latest: fitted slope 1.00 (4 levels)" in check and "variant: fitted slope 2.00 (4 levels)" in check
    assert "variant: measured error" in control
    assert "The variant line is the same check in the run with the fix." in " ".join(section.itertext())


def test_a_stochastic_figure_that_fails_to_draw_is_a_note_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from physverify.report import _interval

    def broken(*_: Any) -> str:
        raise ValueError("cannot place the interval")

    monkeypatch.setattr(_interval, "figure", broken)
    record = ledger_record("claims/a.py", "confirmed")
    root = parse(html.render_report(html.from_ledger(write_ledger(tmp_path / "l.jsonl", [record]))))
    notes = [" ".join(p.itertext()) for p in root.iter("p") if p.get("class") == "plot-note"]
    assert notes == ["The plot could not be drawn (ValueError: cannot place the interval)."] * 2
    assert len(sections(root)) == 1
