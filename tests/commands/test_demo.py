"""physverify demo: the worked examples confirmed and replayed, as a real process, writing only in its own folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.fixtures import run_process

from physverify.commands import demo
from physverify.errors import PhysverifyError


def _everything_under(folder: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(top, name), folder)
                  for top, dirs, files in os.walk(folder) for name in dirs + files)


@pytest.mark.slow
def test_the_demo_in_an_empty_folder_shows_three_verdicts_and_the_gate_failing_and_leaves_the_folder_empty(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, home, temporary = tmp_path / "empty", tmp_path / "home", tmp_path / "tmp"
    for folder in (here, home, temporary):
        folder.mkdir()
    # the user's cache folder as it would be without the suite's own: under this HOME, which must stay empty
    monkeypatch.delenv("PHYSVERIFY_CACHE_DIR")
    ran = run_process("demo", cwd=here, env={"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                                              "XDG_CONFIG_HOME": str(home / ".config"), "TMPDIR": str(temporary)})

    assert ran.returncode == 0, ran.stderr
    for verdict in ("confirmed", "rejected", "not decidable"):
        assert f"\n{verdict} (impact:" in "\n" + ran.stdout
    passed, _, failed = ran.stdout.partition("puts back the wrong sign")
    assert "fixed        claim_oscillator.py" in passed and "\ngate passed\n" in passed
    assert "regressed    claim_oscillator.py" in failed and "\ngate failed: 1 claim(s)" in failed
    assert _everything_under(here) == [] and _everything_under(home) == []
    (made,) = temporary.iterdir()  # the demo's one folder, kept so its report can be opened
    report = made / "report.html"
    assert f"the HTML report: {report}\n" in ran.stdout
    assert "claim_oscillator.py" in report.read_text(encoding="utf-8")


def test_a_step_that_does_not_come_out_as_documented_stops_the_demo_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a defect the solver does not hold: the demo cannot fix it, and says where its files are
    monkeypatch.setattr(demo, "DEFECT", "+ gamma * v * 2")
    with pytest.raises(PhysverifyError, match=r"^demo: oscillator.py does not hold '\+ gamma \* v \* 2' once; its "
                       r"files are in .*physverify-demo-\w+/claims$"):
        demo.demo(tmp_path)
    assert os.environ.get("MPLCONFIGDIR") is None or "physverify-demo" not in os.environ["MPLCONFIGDIR"]
