"""physverify mcp: the SDK's real stdio client against ``python -m physverify mcp`` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.fixtures import DECAY_CLAIM as CLAIM
from support.fixtures import DECAY_SOLVER as SOLVER
from support.fixtures import init_repo
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SPEC = '''\
import math

from physverify import FAIL, PASS, Check, Result

import decay


def _follows_exp() -> Result:
    got, want = decay.amount(2.0, 0.7, 1.0), 2.0 * math.exp(-0.7)
    return Result(PASS if abs(got - want) <= 1e-12 * want else FAIL, f"{got:.6g} against {want:.6g}")


def checks():
    return [Check("reference", "decay follows exp(-rate t)", lambda: _follows_exp())]
'''

SLOW_CLAIM = CLAIM.replace(
    'def control():\n', 'def control():\n    import time\n\n    time.sleep(60)\n'
)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A git repository with a solver, one claim and one spec that imports the claim's helper."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(SOLVER)
    (root / "claims" / "claim_decay.py").write_text(CLAIM)
    (root / "verify_decay.py").write_text(SPEC)
    repo = init_repo(root)
    repo.index.add(["decay.py", "claims/claim_decay.py", "verify_decay.py"])
    repo.index.commit("a solver and its claim")
    return root


# The SDK starts the server with a minimal environment; these carry over, so the server runs
# the physverify under test (PYTHONPATH) and the test's own cache of claim readings.
_CARRIED = ("PYTHONPATH", "PHYSVERIFY_CACHE_DIR")


def _server(root: Path, env: dict[str, str] | None = None) -> Client:
    carried = {name: os.environ[name] for name in _CARRIED if name in os.environ}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(root)], env={**carried, **(env or {})}
    )
    return Client(params, read_timeout_seconds=120)


def _session(root: Path, body: Callable[[Client], Awaitable[Any]], env: dict[str, str] | None = None) -> Any:
    """Run ``body`` against a fresh server for ``root`` and return what it returns."""

    async def main() -> Any:
        async with _server(root, env) as client:
            return await body(client)

    return anyio.run(main)


def _calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """(is_error, text) of each tool call, made in order in one session of one server."""

    async def body(client: Client) -> list[tuple[bool, str]]:
        answers = []
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            answers.append((bool(result.is_error), "".join(p.text for p in result.content if p.type == "text")))
        return answers

    return _session(root, body)


def _call(root: Path, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(is_error, text) of one tool call."""
    return _calls(root, [(tool, arguments)])[0]


def _ledger_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_server_lists_four_tools_and_refuses_calls_without_trust_or_with_a_bad_timeout(project: Path) -> None:
    """Four tests once, each with a server of its own: the tool list and three calls refused before anything
    runs, so one server answers them all (it starts in about 2 s, importing the SDK); each call's own
    assertions are kept, and the ledger is looked at after each refusal."""
    ledger = project / "confirm_ledger.jsonl"

    async def body(client: Client) -> list[tuple[bool, str]]:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        # the server lists four tools whose descriptions say what they run; all but the scan run code
        assert sorted(tools) == ["confirm_claim", "replay_claims", "run_checks", "scan"]
        for tool in tools.values():
            assert "What it runs" in (tool.description or "") and "When to use it" in (tool.description or ""), tool
            assert ("trusted" in tool.input_schema["properties"]) == (tool.name != "scan"), tool
        assert tools["confirm_claim"].input_schema["required"] == ["claim"]
        assert tools["run_checks"].input_schema["properties"]["timeout"]["default"] == 600
        answers = []
        for tool, arguments in (("confirm_claim", {"claim": "claims/claim_decay.py"}), ("run_checks", {}),
                                ("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True, "timeout": 0})):
            result = await client.call_tool(tool, arguments)
            answers.append((bool(result.is_error), "".join(p.text for p in result.content if p.type == "text")))
            assert not ledger.exists(), f"{tool} {arguments} wrote a ledger line"
        return answers

    unconfirmed, unchecked, bad_timeout = _session(project, body)
    # confirm_claim without trust is refused and runs nothing
    is_error, text = unconfirmed
    assert is_error, text
    assert "refusing to run the code under test: pass trusted: true if the code is yours" in text and "sandbox" in text
    assert not ledger.exists()
    # run_checks without trust is refused
    is_error, text = unchecked
    assert is_error and "refusing to run the code under test" in text, text
    # a bad timeout reaches the client as a one-line error
    is_error, text = bad_timeout
    assert is_error and "timeout must be a positive" in text and "--timeout" not in text, text


def test_confirm_claim_returns_the_verdict_then_the_ledger_line_and_appends_it(project: Path) -> None:
    (project / "decay.py").write_text(SOLVER.replace("-rate * t", "-rate * t / 2"))
    is_error, text = _call(project, "confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True})
    assert not is_error, text
    verdict_text, _, line = text.partition("\n\n")
    assert verdict_text.startswith("confirmed (impact: used): the control passed and 1 of 1 check failed")
    record = json.loads(line)
    assert record["verdict"] == "confirmed" and record["claim_file"] == "claims/claim_decay.py"
    assert _ledger_lines(project / "confirm_ledger.jsonl") == [record]


def test_physverify_repo_in_the_servers_environment_stands_for_trust(project: Path) -> None:
    async def body(client: Client) -> Any:
        return await client.call_tool("confirm_claim", {"claim": "claims/claim_decay.py"})

    result = _session(project, body, env={"PHYSVERIFY_REPO": str(project)})
    assert not result.is_error
    assert _ledger_lines(project / "confirm_ledger.jsonl")[0]["verdict"] == "rejected"


def test_paths_outside_the_root_are_refused_also_through_a_symlink(project: Path) -> None:
    outside = project.parent / "elsewhere.py"
    outside.write_text(CLAIM)
    (project / "claims" / "link.py").symlink_to(outside)
    claims = ("../elsewhere.py", str(outside), "claims/link.py")
    calls = [("confirm_claim", {"claim": claim, "trusted": True}) for claim in claims]
    calls.append(("run_checks", {"specs": ["../elsewhere.py"], "trusted": True}))
    calls.append(("replay_claims", {"claims": [".."], "trusted": True}))
    for (is_error, text), (_, arguments) in zip(_calls(project, calls), calls):
        assert is_error and "outside the project root" in text, (arguments, text)
    assert not (project / "confirm_ledger.jsonl").exists()


def test_a_claim_that_outlives_its_timeout_is_not_decidable(project: Path) -> None:
    (project / "claims" / "claim_slow.py").write_text(SLOW_CLAIM)
    is_error, text = _call(project, "confirm_claim", {"claim": "claims/claim_slow.py", "trusted": True, "timeout": 1})
    assert not is_error, text
    assert text.startswith("not decidable (impact: used): timed out after 1 s")


def test_run_checks_sees_an_edit_to_the_solver_between_two_calls(project: Path) -> None:
    async def body(client: Client) -> list[str]:
        texts = []
        for source in (SOLVER, SOLVER.replace("-rate * t", "-rate * t / 2")):
            (project / "decay.py").write_text(source)  # same server, same session: a fresh child per call
            result = await client.call_tool("run_checks", {"trusted": True})
            assert not result.is_error
            texts.append(result.content[0].text)
        return texts

    before, after = _session(project, body)
    assert before.startswith("PASS") and "1 PASS in 1 spec file" in before
    assert after.startswith("FAIL") and "1 FAIL in 1 spec file" in after
    assert json.loads(after.partition("\n\n")[2])["exit_code"] == 1


def test_run_checks_reports_a_spec_stopped_at_its_timeout_as_a_load_error(project: Path) -> None:
    (project / "verify_decay.py").write_text("import time\n\ntime.sleep(60)\n\n" + SPEC)
    is_error, text = _call(project, "run_checks", {"specs": ["verify_decay.py"], "trusted": True, "timeout": 1})
    assert not is_error, text
    assert text.splitlines()[0].startswith("LOAD-ERROR ") and "verify_decay.py" in text.splitlines()[0]
    assert "timeout" in text.splitlines()[0]


def test_replay_claims_returns_the_summary_and_every_transition(project: Path) -> None:
    async def body(client: Client) -> list[str]:
        texts = []
        for source in (SOLVER, SOLVER.replace("-rate * t", "-rate * t / 2")):
            (project / "decay.py").write_text(source)
            result = await client.call_tool("replay_claims", {"trusted": True, "jobs": 1})
            texts.append(result.content[0].text)
        return texts

    first, second = _session(project, body)
    first_json = json.loads(first.partition("\n\n")[2])
    second_json = json.loads(second.partition("\n\n")[2])
    assert [c["transition"] for c in first_json["claims"]] == ["new"]
    assert [c["transition"] for c in second_json["claims"]] == ["regressed"]
    assert "regressed" in second.partition("\n\n")[0] and "claims/claim_decay.py" in second
    assert len(_ledger_lines(project / "claims" / "confirm_ledger.jsonl")) == 2


def test_a_root_that_is_not_a_folder_stops_the_server_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "physverify", "mcp", "--root", str(tmp_path / "missing")],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"physverify: {tmp_path / 'missing'}: the project root given by --root is not a folder\n"


def test_confirm_and_replay_return_the_decisive_convergence_plot_as_a_png(tmp_path: Path) -> None:
    """Issue 12: beside the text, a PNG of the check that decided, for assistants that show images."""
    import base64
    import shutil

    root = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[2] / "docs" / "examples" / "confirm", root / "claims")
    init_repo(root)

    async def body(client: Client) -> list[Any]:
        confirmed = await client.call_tool("confirm_claim", {"claim": "claims/claim_oscillator.py", "trusted": True})
        replayed = await client.call_tool("replay_claims", {"trusted": True, "jobs": 1})
        return [confirmed, replayed]

    confirmed, replayed = _session(root, body)
    assert [part.type for part in confirmed.content] == ["text", "image"]
    assert confirmed.content[0].text.startswith("confirmed (impact: used)")
    image = confirmed.content[1]
    assert image.mime_type == "image/png" and base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert [part.type for part in replayed.content] == ["text", "image", "image", "image"]  # three new claims
    assert json.loads(replayed.content[0].text.partition("\n\n")[2])["claims"][0]["transition"] == "new"


def test_confirm_claim_runs_both_sides_of_a_claim_that_names_its_fix_in_one_session(project: Path) -> None:
    """Issue 17 under the long-running server: the variant is served per call, the file never changes."""
    claim = project / "claims" / "claim_decay.py"
    claim.write_text(CLAIM.replace('    "impact": "used",\n', '    "impact": "used",\n'
                                   '    "defect": "return y0 * math.exp(-rate * t / 2)",\n'
                                   '    "fix": "return y0 * math.exp(-rate * t)",\n'))
    solver = project / "decay.py"
    solver.write_text(SOLVER)
    defect = SOLVER.replace("-rate * t", "-rate * t / 2")

    async def body(client: Client) -> list[tuple[str, bytes]]:
        seen = []
        for text in (SOLVER, defect):
            solver.write_text(text)
            result = await client.call_tool("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True})
            seen.append(("".join(p.text for p in result.content if p.type == "text"), solver.read_bytes()))
        return seen

    (fixed, after_fixed), (broken, after_broken) = _session(project, body)
    assert fixed.startswith("rejected (impact: used): the checks pass, and fail with the claimed defect put back"), fixed
    assert broken.startswith("confirmed (impact: used): the checks fail, and the claimed fix makes them pass"), broken
    assert (after_fixed, after_broken) == (SOLVER.encode(), defect.encode())


def test_confirm_claim_with_a_timeout_of_1e10_gives_its_verdict_and_line(project: Path) -> None:
    is_error, text = _call(project, "confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True,
                                                      "timeout": 1e10})
    assert not is_error, text  # issue 21, item 10: an error with no reason before
    assert text.startswith("rejected")
    assert _ledger_lines(project / "confirm_ledger.jsonl")[0]["timeout_s"] == 1e10


def test_every_bad_argument_is_one_line_naming_it_and_the_server_keeps_serving(project: Path) -> None:
    """The SDK let an argument it does not know pass unseen ("timout": 5 ran with the default 300 s) and took
    true for 1 s and "2" for 2 jobs; its message for a wrong type was pydantic's four lines with a link."""
    long_name = "claims/" + "n" * 300 + ".py"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True, "timout": 5}),
        ("confirm_claim", {"trusted": True}),
        ("confirm_claim", {"claim": 5, "trusted": "yes", "timeout": True}),
        ("replay_claims", {"trusted": True, "jobs": "2"}),
        ("replay_claims", {"trusted": True, "record_all": 1}),
        ("run_checks", {"specs": "verify_decay.py", "trusted": True}),
        ("replay_claims", {"trusted": True, "changed_since": "no-such-ref"}),
        ("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True, "allow_dependent_reference": " "}),
        ("confirm_claim", {"claim": long_name, "trusted": True}),
        ("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True, "timeout": 30}),  # still serving
    ]
    answers = _calls(project, calls)
    expected = [
        "Error executing tool confirm_claim: timout is not one of its arguments "
        "(allow_dependent_reference, claim, ledger, timeout, trusted)",
        "Error executing tool confirm_claim: claim is required",
        "Error executing tool confirm_claim: claim: input should be a valid string, not 5; trusted: input should be "
        "a valid boolean, not 'yes'; timeout: input should be a valid number, not True",
        "Error executing tool replay_claims: jobs: input should be a valid integer, not '2'",
        "Error executing tool replay_claims: record_all: input should be a valid boolean, not 1",
        "Error executing tool run_checks: specs: input should be a valid list, not 'verify_decay.py'",
        f"Error executing tool replay_claims: changed_since: 'no-such-ref' is not a commit in {project.resolve()}",
        "Error executing tool confirm_claim: allow_dependent_reference needs the reason in words",
    ]
    for (is_error, text), want, (tool, arguments) in zip(answers, expected, calls):
        assert is_error and text.startswith(want) and "\n" not in text, (tool, arguments, text)
    is_error, text = answers[-2]  # a name no file system allows: confirm's load error, as at the terminal
    assert not is_error and text.startswith("not decidable: claims/nnn") and "File name too long" in text, text
    is_error, text = answers[-1]
    assert not is_error and text.startswith("rejected (impact: used)"), text
    # the two lines of the last two calls: nothing refused ran or wrote
    assert [line["verdict"] for line in _ledger_lines(project / "confirm_ledger.jsonl")] == ["not decidable", "rejected"]


def test_the_published_schemas_say_no_other_argument_is_taken(project: Path) -> None:
    async def body(client: Client) -> list[Any]:
        return (await client.list_tools()).tools

    for tool in _session(project, body):
        assert tool.input_schema.get("additionalProperties") is False, tool.name


def test_the_scan_tool_finds_a_stepper_s_wrong_stage_writes_its_claim_and_stays_inside_the_root(project: Path) -> None:
    stepper = Path(__file__).resolve().parents[2] / "docs" / "examples" / "real-code" / "rk4_step.py"
    (project / "rk4_step.py").write_text(stepper.read_text())
    found, outside, written = _calls(project, [("scan", {}), ("scan", {"paths": [".."]}),
                                               ("scan", {"paths": ["rk4_step.py"], "claims": "claims"})])
    is_error, text = found
    assert not is_error and text.startswith("rk4_step.py:17: rk-order: rk4_step states order 4"), text
    assert json.loads(text[text.index("{"):])["findings"][0]["line"] == 17
    is_error, text = outside
    assert is_error and "outside the project root" in text
    is_error, text = written
    assert not is_error and "wrote claims/scan_rk4_step_rk4_step_17.py" in text, text
    assert '"source": "physverify scan"' in (project / "claims" / "scan_rk4_step_rk4_step_17.py").read_text()
