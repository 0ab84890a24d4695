"""GitHub workflow commands for a replay: errors for gate failures, a notice for a fix, escaping."""

from __future__ import annotations

from physverify.gate.replay import ReplayResult
from physverify.report import github


def test_escaping_follows_the_runner_rules() -> None:
    assert github.escape_data("100%\r\nnext: a,b") == "100%25%0D%0Anext: a,b"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert github.command("error", "x", file="a,b.py", line=3, title=None) == "::error file=a%2Cb.py,line=3::x"


def test_gate_failures_are_errors_a_fix_is_a_notice_and_a_known_defect_a_warning(result: ReplayResult) -> None:
    lines = github.render(result).splitlines()
    by_claim = {next(k for k in [r.key for r in result.claims] if f"({k})" in line): line
                for line in lines if line.startswith("::") and "(claims/" in line}
    assert by_claim["claims/regressed.py"].startswith("::error file=sim/rk4.py,line=12,title=physverify%3A claim regressed::")
    assert by_claim["claims/pinned.py"].startswith("::error ")
    assert by_claim["claims/fixed.py"].startswith("::notice ")
    assert by_claim["claims/known.py"].startswith("::warning ")
    assert by_claim["claims/broken.py"].startswith("::error ")  # new and not decidable fails the gate
    assert by_claim["claims/gone.py"].startswith("::notice ")  # it moved, and its last verdict was rejected
    assert "claims/fine.py" not in by_claim
    # the message of a multi-line claim stays on one line, with %, CR and LF encoded
    assert "100%25 wrong" in by_claim["claims/regressed.py"] and "%0Asecond line" in by_claim["claims/regressed.py"]
    assert all("\r" not in line for line in lines) and len(lines) == len(github.render(result).split("\n"))
    assert lines[-1].startswith("physverify replay: gate failed")


def test_github_escaping_shows_controls_and_keeps_one_line_per_command() -> None:
    """Issue 13, item 17: the runner's escapes for CR, LF, % and properties; other controls shown."""
    line = github.command("warning", "a\x1b[31m\u202eb\n::error::c", file="x\n::notice::y.py", title="t")
    assert "\n" not in line and "\x1b" not in line and "\u202e" not in line
    assert line == "::warning file=x%0A%3A%3Anotice%3A%3Ay.py,title=t::a\\x1b[31m\\u202eb%0A::error::c"
