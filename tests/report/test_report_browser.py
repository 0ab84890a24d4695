"""The HTML report in a real browser (issue 12): headless Chromium opens it from disk, finds one
section per claim and every plot drawn with a size, sees no console error and no request
beyond the file itself, and takes the screenshot docs/report.md shows. Issue 18: the regressed
claim's plots draw its baseline run beside the latest with a legend, and a check whose errors
are all exactly 0 says so in words, with no plot.

The worked example is real: the three claims of docs/examples/confirm in a git repository,
the oscillator's damping sign fixed and then broken again (a regression with its history).
Set PHYSVERIFY_SCREENSHOT=docs/report.png to refresh the screenshot in the docs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import Ran, init_repo

from physverify.commands import cli as _cli

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package, installed by .ci/install
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "confirm"
HOSTILE = '<script>alert("x")</script> & \'quoted\' "text"<img src=x onerror=alert(1)>'

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (.ci/install installs it)"),
]


def physverify(*args: str, cwd: Path) -> Ran:
    """``physverify ARGS`` run in this process by ``cli.main``, as the ``cli`` fixture runs it, but usable by the
    module's fixture too: these runs are read for their exit code and the files they write, and each claim
    still runs in its own child (a process per run also started a fork server of its own)."""
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _cli.main(list(args))
    finally:
        os.chdir(here)
    return Ran(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-sync",
        ])
        yield launched
        launched.close()


class Opened:
    """A page opened from disk, with everything the browser reported while loading it."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1100, "height": 1500})
        self.console: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(path.as_uri(), wait_until="load")

    def sizes(self, selector: str) -> list[tuple[float, float]]:
        boxes = [element.bounding_box() for element in self.page.query_selector_all(selector)]
        return [(box["width"], box["height"]) if box else (0.0, 0.0) for box in boxes]


@pytest.fixture(scope="module")
def worked_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger from real runs: the oscillator fixed then broken again, verlet rejected, decay not decidable."""
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(EXAMPLES, root / "claims")
    repo = init_repo(root)
    solver = root / "claims" / "oscillator.py"
    broken = solver.read_text()
    solver.write_text(broken.replace("+ gamma * v", "- gamma * v"))
    repo.index.add(["claims"])
    repo.index.commit("damping opposes the velocity")
    assert physverify("confirm", "claims/claim_oscillator.py", "--trusted", "--ledger", "ledger.jsonl", cwd=root).returncode == 0
    solver.write_text(broken)
    repo.index.add(["claims"])
    repo.index.commit("a refactor that brings the wrong damping sign back")
    for name, code in (("claim_oscillator", 1), ("claim_verlet", 0), ("claim_decay", 2)):
        assert physverify("confirm", f"claims/{name}.py", "--trusted", "--ledger", "ledger.jsonl", cwd=root).returncode == code
    done = physverify("report", "--ledger", "ledger.jsonl", "-o", "report.html", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_the_report_opens_from_disk_with_one_section_per_claim_and_every_plot_drawn(browser: Any, worked_example: Path) -> None:
    ET.parse(worked_example / "report.html")  # well-formed: a strict XML parser reads the real page too
    opened = Opened(browser, worked_example / "report.html")
    page = opened.page
    assert page.locator("section.claim").count() == 3
    headings = page.locator("section.claim h2").all_inner_texts()
    assert headings[0] == "confirmed claims/claim_oscillator.py"  # regressed: fails the gate, so it comes first
    assert "fails the gate: regressed: rejected -> confirmed" in page.locator("section.claim").first.inner_text()
    records = [json.loads(line) for line in (worked_example / "ledger.jsonl").read_text().splitlines()]
    with_data = sum(bool(o.get("data")) for r in records[1:] for o in [r["control"], *r["checks"]])
    sizes = opened.sizes(".plot svg")
    assert len(sizes) == with_data == 6
    assert all(width > 100 and height > 50 for width, height in sizes)
    assert page.locator("section.claim").first.locator(".history li").count() == 2  # rejected, then confirmed
    regressed = page.locator("section.claim").first
    assert regressed.locator("svg").count() == 2
    for i in range(2):  # the control and the check, each with the baseline run (rejected) beside the latest
        legend = regressed.locator("svg").nth(i).locator("text").all_text_contents()
        assert {"latest: measured error", "baseline: measured error"} <= set(legend), legend
        shown = regressed.locator("svg").nth(i).locator("text", has_text="baseline: measured error").bounding_box()
        box = regressed.locator("svg").nth(i).bounding_box()
        assert shown and box and box["y"] <= shown["y"] <= box["y"] + box["height"]  # inside the plot, not cut off
    assert regressed.locator("p.plot-note", has_text="Drawn beside the baseline run (rejected, ").count() == 2
    others = page.locator("section.claim").nth(1).locator("svg text").all_text_contents()
    assert others and not [t for t in others if "baseline" in t]  # an unchanged claim: the latest run only
    assert [m for m in opened.console if m.startswith(("error", "pageerror", "warning"))] == []
    assert opened.requests == [(worked_example / "report.html").as_uri()]
    shot = worked_example / "report.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    target = os.environ.get("PHYSVERIFY_SCREENSHOT")
    if target:  # refresh the docs' screenshot from this very page
        shutil.copyfile(shot, target)
    page.close()


def test_replay_writes_the_same_page_and_a_hostile_claim_shows_as_text(browser: Any, worked_example: Path,
                                                                      tmp_path: Path) -> None:
    shutil.copytree(worked_example / "claims", tmp_path / "claims")
    claim = tmp_path / "claims" / "claim_verlet.py"
    stated = '"line 13 uses the old acceleration in the velocity update, so the method is only first order"'
    claim.write_text(claim.read_text().replace(stated, json.dumps(HOSTILE), 1))  # a JSON string is a Python literal
    done = physverify("replay", "claims", "--trusted", "--format", "html", "--output", "replay.html", cwd=tmp_path)
    # every worked example is a new claim; the decay example is not decidable, and a new claim
    # must give a verdict (issue 10)
    assert done.returncode == 1, done.stderr + done.stdout
    examples = len(list((tmp_path / "claims").glob("claim_*.py")))
    opened = Opened(browser, tmp_path / "replay.html")
    page = opened.page
    assert page.locator("h1").inner_text() == "physverify replay: gate failed"
    assert examples >= 3 and page.locator("section.claim").count() == examples
    assert any(HOSTILE in text for text in page.locator("dd").all_inner_texts())
    assert opened.dialogs == [] and page.locator("section.claim img").count() == 0
    assert all(width > 100 and height > 50 for width, height in opened.sizes(".plot svg"))
    assert [m for m in opened.console if m.startswith(("error", "pageerror"))] == []
    assert opened.requests == [(tmp_path / "replay.html").as_uri()]
    page.close()


MIDPOINT = '''\
"""The midpoint rule, the code under test."""


def integrate(f, a, b, n):
    h = (b - a) / n
    return h * sum(f(a + (i + 0.5) * h) for i in range(n))
'''

EXACT_CLAIM = '''\
"""Claim: the midpoint rule is wrong for straight lines. On x over [0, 1] with n a power of two
every midpoint and the sum are exact binary fractions, so a correct rule gives 1/2 exactly and
every error is 0 (Davis and Rabinowitz, Methods of Numerical Integration, sec. 2.1: the midpoint
rule is exact for polynomials of degree one)."""
from physverify import Check, check_order

import midpoint

CLAIM = {
    "text": "the midpoint rule is not exact for a linear integrand",
    "source": "a test",
    "file": "claims/midpoint.py",
    "line": 4,
    "reference": "Davis and Rabinowitz, Methods of Numerical Integration, sec. 2.1",
    "impact": "used",
}
NS = (4, 8, 16, 32)


def _study(f, exact):
    return lambda: check_order([1 / n for n in NS], [abs(midpoint.integrate(f, 0.0, 1.0, n) - exact) for n in NS], 2)


def control():
    return Check("exact", "a constant integrates exactly", _study(lambda x: 1.0, 1.0))


def checks():
    return [Check("exact", "a straight line integrates exactly", _study(lambda x: x, 0.5))]
'''


def test_a_check_whose_errors_are_all_exactly_zero_says_so_in_the_browser(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "midpoint.py").write_text(MIDPOINT)
    (tmp_path / "claims" / "claim_midpoint.py").write_text(EXACT_CLAIM)
    init_repo(tmp_path)
    done = physverify("confirm", "claims/claim_midpoint.py", "--trusted", "--ledger", "ledger.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout  # rejected: the rule is right
    record = json.loads((tmp_path / "ledger.jsonl").read_text())
    assert record["verdict"] == "rejected" and record["checks"][0]["data"]["errors"] == [0.0] * 4
    assert physverify("report", "--ledger", "ledger.jsonl", "-o", "report.html", cwd=tmp_path).returncode == 0
    opened = Opened(browser, tmp_path / "report.html")
    page = opened.page
    figures = page.locator("figure.convergence")
    assert figures.count() == 2 and page.locator("svg").count() == 0
    for i in range(2):
        note = figures.nth(i).locator("p.plot-note")
        assert note.inner_text().startswith("Every error is exactly 0, at all 4 step sizes")
        assert note.is_visible() and figures.nth(i).locator("table.numbers").is_visible()
    assert [m for m in opened.console if m.startswith(("error", "pageerror", "warning"))] == []
    page.close()
