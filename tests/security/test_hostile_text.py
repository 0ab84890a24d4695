"""Hostile text in labels, messages, CLAIM fields and file names (issue 13, items 4, 10 and 17).

A claim's code and file choose these strings. None of them may crash an output (a lone
surrogate cannot be encoded), make a format unreadable (XML 1.0 forbids most control
characters), forge a line (a newline then "gate passed" or "::warning::"), reach the
terminal as an escape sequence, or reach a job summary as HTML or a link.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, DECAY_SOLVER, init_repo, verdict_line
from test_action import parse_github_output
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from physverify.commands import mcp_server
from physverify.gate.rules import DEFAULT_FAIL_ON, FIXED, NEW, REGRESSED, REMOVED, UNCHANGED, UNDECIDABLE
from physverify.gate.replay import ClaimRun, ReplayResult, gate_failures
from physverify.report import FORMATS
from physverify.report import text as text_report
from physverify.commands.run_specs import RunOutcome, SpecOutcome
from physverify.text import clean, visible
from physverify.verdict import CONFIRMED, EXIT_FINDING, EXIT_OK, NOT_DECIDABLE, REJECTED

# Everything at once: a lone surrogate, a screen clear, an OSC 52 clipboard write, a
# right-to-left override, NUL, HTML, a link, a pipe, a percent-encoded newline, and a
# newline that would start physverify's own last line and a workflow command.
HOSTILE = (
    "\ud800 \x1b[2J\x1b]52;c;cHduZWQ=\x07 \u202e \x00 <img src=x onerror=alert(1)> [a](javascript:x) | %0A"
    " \x85::notice::x \u2028::notice::y \r\ngate passed\n::warning::forged"
)
# Characters no output may show raw, anywhere (a line break only as physverify's own "\n").
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
COMMAND_LINE = re.compile(r"^::(error|warning|notice) [^\r\n]*?::")


def hostile_claim(text: str = HOSTILE) -> str:
    """DECAY_CLAIM with ``text`` in every CLAIM string, the check's label and both messages."""
    source = DECAY_CLAIM
    for field in ("amount() uses half the decay rate", "a test"):
        source = source.replace(repr(field).replace("'", '"'), repr(text + field))
    source = source.replace('"at t = 1 the amount follows exp(-rate t)"', repr(text + " at t = 1"))
    source = source.replace('f"{got:.6g} against {want:.6g}"', f'{text!r} + f"{{got:.6g}} against {{want:.6g}}"')
    return source


def _lines(output: str) -> list[str]:
    return output.splitlines()  # every separator Python knows, more than a terminal or the runner


# the Action's log groups (issue 38), each line exactly as the step writes it
GROUPS = ("::group::physverify replay: running the claims", "::group::physverify replay: each claim", "::endgroup::")


def _assert_no_forged_lines(output: str, fmt: str) -> None:
    output.encode("utf-8")  # strict: a lone surrogate raises here
    # The runner's legacy command form counts anywhere in a line (actions/runner, ActionCommand.TryParse).
    assert "##[" not in output, fmt
    for line in _lines(output):
        if line.startswith("::"):
            assert fmt == "github" and (COMMAND_LINE.match(line) or line in GROUPS), (fmt, line)
        assert line != "gate passed" or fmt == "text", (fmt, line)  # replay's text: counted by the caller


# --- item 4: end to end through the console script ---------------------------------------
def _project(tmp_path: Path, claim_source: str, solver: str = DECAY_SOLVER) -> Path:
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(solver)
    (root / "claims" / "claim_decay.py").write_text(claim_source)
    init_repo(root)
    return root


def _physverify(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "physverify", *args], cwd=root, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=300, check=False)


@pytest.mark.parametrize(("solver", "verdict", "code"), [(DECAY_SOLVER, REJECTED, EXIT_OK),
                                                         (DECAY_DEFECT, CONFIRMED, EXIT_FINDING)],
                         ids=[REJECTED, CONFIRMED])
def test_confirm_exits_with_the_verdicts_code_whatever_the_labels_hold(
    tmp_path: Path, solver: str, verdict: str, code: int
) -> None:
    root = _project(tmp_path, hostile_claim(), solver)
    done = _physverify(root, "confirm", "claims/claim_decay.py", "--trusted")
    assert done.returncode == code, done.stderr.decode(errors="replace")
    live = done.stderr.decode("utf-8").splitlines()  # strict: the lines shown as the child finished each
    assert live and all(line.startswith(("  control ", "  check ")) for line in live), live
    assert "\x1b" not in done.stderr.decode("utf-8")
    out = done.stdout.decode("utf-8")  # strict
    assert verdict_line(out).startswith(f"{verdict} (impact: used)")
    assert RAW_CONTROL.search(out) is None
    _assert_no_forged_lines(out, "confirm")
    assert "\\ud800 \\x1b[2J\\x1b]52;c;cHduZWQ=\\x07 \\u202e \\x00" in out  # shown, not dropped
    lines = [json.loads(line) for line in (root / "confirm_ledger.jsonl").read_text("utf-8").split("\n")[:-1]]
    assert [line["verdict"] for line in lines] == [verdict]
    assert lines[0]["checks"][0]["label"] == clean(HOSTILE) + " at t = 1"  # the rest of the text kept exactly


def test_confirm_json_is_valid_utf8_json_with_the_text_kept(tmp_path: Path) -> None:
    root = _project(tmp_path, hostile_claim())
    done = _physverify(root, "confirm", "claims/claim_decay.py", "--trusted", "--json", "-")
    assert done.returncode == EXIT_OK, done.stderr.decode(errors="replace")
    out = done.stdout.decode("utf-8")
    assert len(_lines(out)) == 1
    record = json.loads(out)
    assert record["text"] == clean(HOSTILE) + "amount() uses half the decay rate"
    assert record["checks"][0]["message"].startswith(clean(HOSTILE))


def test_a_terminal_that_cannot_show_a_character_does_not_change_the_exit_code(tmp_path: Path) -> None:
    root = _project(tmp_path, hostile_claim("µ ∂u/∂t "))
    done = subprocess.run([sys.executable, "-m", "physverify", "confirm", "claims/claim_decay.py", "--trusted"],
                          cwd=root, capture_output=True, stdin=subprocess.DEVNULL, timeout=300, check=False,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == EXIT_OK, done.stderr.decode(errors="replace")
    assert "check PASS \\xb5 \\u2202u/\\u2202t  at t = 1" in done.stdout.decode("ascii")


def test_a_hostile_error_message_is_one_line_on_stderr(tmp_path: Path) -> None:
    done = _physverify(tmp_path, "confirm", "claim.py", "--trusted", "--ledger", "no\n::error::forged\x1b[31m/l.jsonl")
    assert done.returncode == 2 and done.stdout == b""
    err = done.stderr.decode("utf-8")
    assert len(err.splitlines()) == 1 and err.startswith("physverify: ") and "\x1b" not in err


@pytest.mark.slow
def test_replay_writes_every_format_well_formed_for_hostile_claims_and_file_names(tmp_path: Path) -> None:
    root = _project(tmp_path, hostile_claim())
    claims = root / "claims"
    (claims / "claim_decay.py").rename(claims / "claim_x\n::warning::forged\x1b[2J.py")
    (claims / os.fsdecode(b"claim_\xff.py")).write_text(hostile_claim("\u202e\ud800\x1b"))
    outputs = {}
    for fmt in sorted(FORMATS):  # the first run records, the others see every claim unchanged
        done = _physverify(root, "replay", "claims", "--trusted", "--jobs", "1", "--format", fmt)
        assert done.returncode == EXIT_OK, (fmt, done.stderr.decode(errors="replace"))
        outputs[fmt] = done.stdout.decode("utf-8")
    for fmt, out in outputs.items():
        _assert_no_forged_lines(out, fmt)
        if fmt in ("text", "markdown", "github"):
            assert RAW_CONTROL.search(out) is None, fmt
    data = json.loads(outputs["json"])
    keys = {claim["claim_key"] for claim in data["claims"]}
    assert keys == {"claims/claim_x\n::warning::forged\x1b[2J.py", "claims/claim_\\udcff.py"}
    assert {claim["transition"] for claim in data["claims"]} == {"unchanged"}  # the same claims as the first run
    json.loads(outputs["sarif"])
    suite = ET.fromstring(outputs["junit"].encode("utf-8")).find("testsuite")
    assert suite is not None and len(suite.findall("testcase")) == 2


def test_the_action_step_fills_its_outputs_and_summary_for_hostile_claims(tmp_path: Path) -> None:
    """The run step of action.yml (python -m physverify.commands.action), with the runner's files in tmp_path."""
    root = _project(tmp_path, hostile_claim(), DECAY_DEFECT)
    files = {name: tmp_path / f"{name.lower()}.txt" for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT")}
    env = {**os.environ, **{k: str(v) for k, v in files.items()}, "GITHUB_WORKSPACE": str(root),
           "INPUT_JOBS": "1", "INPUT_SARIF": "out.sarif", "GITHUB_EVENT_NAME": "workflow_dispatch"}
    env.pop("PHYSVERIFY_REPO", None)
    done = subprocess.run([sys.executable, "-m", "physverify.commands.action"], cwd=root, env=env, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=300, check=False)
    assert done.returncode == EXIT_OK, done.stderr.decode(errors="replace")  # a new confirmed claim passes the gate
    log = done.stdout.decode("utf-8")
    # the log's group of each claim is replay's text report, whose own last line is "gate passed"
    head, _, rest = log.partition("::group::physverify replay: each claim\n")
    text, _, tail = rest.partition("::endgroup::\n")
    assert text.rstrip("\n").endswith("gate passed") and text.count("\ngate passed") == 1, text
    _assert_no_forged_lines(text, "text")
    _assert_no_forged_lines(head + tail, "github")
    annotations = [line for line in log.splitlines() if line.startswith("::") and line not in GROUPS]
    assert RAW_CONTROL.search(log) is None and annotations[0].startswith("::warning file=decay.py,line=6")
    outputs = parse_github_output(files["GITHUB_OUTPUT"].read_text("utf-8"))
    assert outputs["gate"] == "pass" and outputs["confirmed"] == "1"
    summary = files["GITHUB_STEP_SUMMARY"].read_text("utf-8")
    assert summary.startswith("## physverify replay: gate passed") and "<img" not in summary.replace("\\<img", "")
    json.loads((root / "out.sarif").read_text("utf-8"))


# --- item 4 through the real MCP client -------------------------------------------------
def test_the_mcp_server_answers_for_hostile_text_and_keeps_serving(tmp_path: Path) -> None:
    root = _project(tmp_path, hostile_claim())
    (root / "claims" / "claim_raises.py").write_text(
        DECAY_CLAIM.replace("def control():\n", f"def control():\n    raise ValueError({HOSTILE!r})\n")
    )
    (root / "verify_hostile.py").write_text(hostile_claim())  # its checks() run as a spec by run_checks
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(root)])

    async def main() -> list[tuple[bool, str]]:
        answers = []
        async with Client(params, read_timeout_seconds=120) as client:
            for claim in ("claims/claim_decay.py", "claims/claim_raises.py", "claims/claim_decay.py"):
                result = await client.call_tool("confirm_claim", {"claim": claim, "trusted": True})
                answers.append((bool(result.is_error), "".join(p.text for p in result.content if p.type == "text")))
            for tool in ("replay_claims", "run_checks"):
                result = await client.call_tool(tool, {"trusted": True, "jobs": 1} if tool == "replay_claims" else {
                    "specs": ["verify_hostile.py"], "trusted": True})
                answers.append((bool(result.is_error), "".join(p.text for p in result.content if p.type == "text")))
        return answers

    answers = anyio.run(main)
    for i, (is_error, answer) in enumerate(answers):
        assert not is_error, answer
        shown, _, body = answer.partition("\n\n")
        _assert_no_forged_lines(answer, "text" if i == 3 else "confirm")
        assert RAW_CONTROL.search(shown) is None
        json.loads(body)
    assert answers[0][1].startswith("rejected") and answers[2][1].startswith("rejected")
    assert answers[1][1].startswith("not decidable") and "\\x1b[2J" in answers[1][1]
    # the claim that raises is new and not decidable, so the gate fails; no label forged a "gate passed" line
    assert "gate passed" not in _lines(answers[3][1])
    assert _lines(answers[3][1]).count("gate failed: 1 claim(s) (fail_on: regressed, undecidable)") == 1
    assert answers[4][1].startswith("PASS         reference  \\ud800 \\x1b[2J")


# --- the property: any text, every format ------------------------------------------------
SPECIALS = [
    "\ud800", "\udfff", "\udcff", "\x00", "\x1b", "\x1b]52;c;aGk=\x07", "\x9b31m", "\n", "\r", "\r\n", "\x85", "\x0b",
    "\x0c", "\x1c", "\u2028", "\u2029", "\u202e", "\u2066", "\u200f", "\ufffe", "::", "::warning::x", "\n::error::y",
    "gate passed", "<script>", "<!--", "]]>", "&amp;", "|", "`", "``", "\\", "[x](y)", "![i](u)", "*", "_", "$", "%",
    "%0A", ":", ",", "##[", "#", "##[stop-commands]t", "[",
]
hostile_text = st.lists(
    st.one_of(st.sampled_from(SPECIALS), st.text(st.characters(exclude_categories=()), max_size=4)), max_size=6
).map("".join)
KINDS = [(NEW, CONFIRMED, None), (UNCHANGED, CONFIRMED, CONFIRMED), (REGRESSED, CONFIRMED, REJECTED),
         (FIXED, REJECTED, CONFIRMED), (UNDECIDABLE, NOT_DECIDABLE, REJECTED), (REMOVED, None, REJECTED),
         (NEW, REJECTED, None)]


def _outcome(label: str, message: str) -> dict[str, Any]:
    return {"label": label, "family": "mms", "status": "PASS", "message": message, "seconds": 0.5}


def _record(s: list[str], verdict: str | None) -> dict[str, Any]:
    return {
        "claim_file": s[0], "claim_key": s[0], "text": s[1], "source": s[2], "file": s[3], "line": 3,
        "reference": s[4], "impact": s[5], "verdict": verdict, "reason": s[6],
        "control": _outcome(s[7], s[8]), "checks": [_outcome(s[9], s[10]), _outcome(s[11], s[0])],
        "allow_dependent_reference": {"reason": s[2], "notes": [s[3]]},
    }


@st.composite
def replays(draw: st.DrawFn) -> tuple[ReplayResult, dict[str, Any]]:
    """A replay whose every claim string, path, warning and note is hostile, and a confirm record."""
    runs = []
    for i, (transition, verdict, before) in enumerate(draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))):
        s = draw(st.lists(hostile_text, min_size=12, max_size=12))
        s[0] = f"{i}{s[0]}"  # distinct keys
        record = _record(s, verdict) if verdict is not None else None
        base = _record(s, before) if before is not None else None
        run = ClaimRun(s[0], transition, verdict, before, record, base, target=s[3] or None, line=3, recorded=True)
        runs.append(ClaimRun(**{**run.__dict__, "failures": gate_failures(run, DEFAULT_FAIL_ON)}))
    extra = draw(st.lists(hostile_text, min_size=3, max_size=3))
    result = ReplayResult(
        claims=tuple(runs), skipped=(extra[0],), ledger=Path("claims") / extra[0].replace("\x00", ""), written=1,
        fail_on=DEFAULT_FAIL_ON, exit_code=EXIT_FINDING if any(r.failures for r in runs) else EXIT_OK,
        warnings=(extra[1],), notes=(f"the ledger changed ({extra[2]})",),  # notes are physverify's sentences
    )
    return result, _record(draw(st.lists(hostile_text, min_size=12, max_size=12)), CONFIRMED)


_ESCAPED_CELL = re.compile(r"(?:\\[\\`*_\[\]<!|~&$#]|[^\\`*_\[\]<!|~&$#])*")
_CODE_CELL = re.compile(r"(`+)( ?)(.*)\2\1")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _check_markdown(out: str, result: ReplayResult) -> None:
    rows = [line for line in out.split("\n") if line.startswith("| ") and not line.startswith("| verdict |")]
    assert len(rows) == len(result.claims)
    for row in rows:
        cells = _UNESCAPED_PIPE.split(row)[1:-1]
        assert len(cells) == 6, row
        for i, cell in enumerate(cell.strip() for cell in cells):
            if i in (2, 3):  # the claim and file:line, code spans with a fence no run inside can close
                match = _CODE_CELL.fullmatch(cell)
                assert match and "`" * len(match.group(1)) not in match.group(3), cell
            else:
                assert _ESCAPED_CELL.fullmatch(cell.removeprefix("**fails the gate**: ")), cell
    for line in out.split("\n"):
        if line.startswith("> "):
            assert _ESCAPED_CELL.fullmatch(line.removeprefix("> ").removeprefix("warning: ")), line


def _check_one(fmt: str, out: str, result: ReplayResult) -> None:
    _assert_no_forged_lines(out, fmt)
    if fmt in ("text", "markdown", "github"):
        assert RAW_CONTROL.search(out) is None, (fmt, out)
    if fmt == "text":
        assert _lines(out).count("gate passed") == (not result.exit_code)
    elif fmt in ("json", "sarif"):
        assert len(_lines(out)) == len(out.split("\n"))
        data = json.loads(out)
        if fmt == "json":
            assert [c["claim_key"] for c in data["claims"]] == clean([r.key for r in result.claims])
    elif fmt == "junit":
        suite = ET.fromstring(out.encode("utf-8")).find("testsuite")
        assert suite is not None
        names = [case.get("name") for case in suite.findall("testcase")]
        assert names == [visible(r.key) for r in result.claims]
    elif fmt == "github":
        # an error, a warning for a defect still there, a notice for any other claim that moved (issue 10)
        annotated = sum(bool(r.failures) or r.verdict == CONFIRMED or r.transition != UNCHANGED for r in result.claims)
        assert len(out.split("\n")) == annotated + len(result.warnings) + len(result.notes) + 1
    elif fmt == "markdown":
        _check_markdown(out, result)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays())
def test_every_format_stays_well_formed_and_forges_no_line_for_any_text(drawn: tuple[ReplayResult, dict[str, Any]]) -> None:
    result, record = drawn
    for fmt, module in FORMATS.items():
        _check_one(fmt, module.render(result), result)
    confirm_text = text_report.render_confirm(record)
    run_text = text_report.render_run(RunOutcome([SpecOutcome(record["claim_file"], None, record["checks"]),
                                                  SpecOutcome(record["text"], record["reason"])]))
    for out in (confirm_text, run_text):
        _assert_no_forged_lines(out, "confirm")
        assert RAW_CONTROL.search(out) is None
    # The MCP result: the text a person reads, a blank line, the JSON (what the tools return).
    answer = mcp_server._text_then_json(confirm_text, record)
    _assert_no_forged_lines(answer, "confirm")
    assert json.loads(answer.partition("\n\n")[2]) == clean(record)

