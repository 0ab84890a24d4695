"""The MCP server's root: no path the repository chooses leads outside it (issue 13, items 16 and 24).

Each test drives ``python -m physverify mcp --root PROJECT`` through the SDK's real stdio
client. Outside the project sits a claim that, if it ever ran, would leave a marker file,
and a "secret" file whose hash must never reach a ledger.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, Ran, init_repo
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from physverify.gate import evaluate

SECRET = "root:$6$not-a-real-hash:19000:0:99999:7:::\n"


def _marking_claim(marker: Path) -> str:
    """DECAY_CLAIM that writes ``marker`` when it runs."""
    return DECAY_CLAIM.replace("def control():\n", f"def control():\n    open({str(marker)!r}, 'w').close()\n")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM)
    init_repo(root)
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "decay.py").write_text(DECAY_SOLVER)
    (tmp_path / "outside_claim.py").write_text(_marking_claim(tmp_path / "ran"))
    return root


def _calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """(is_error, text) of each call, in order, in one session of one server."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(root)])

    async def main() -> list[tuple[bool, str]]:
        answers = []
        async with Client(params, read_timeout_seconds=120) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                answers.append((bool(result.is_error), "".join(p.text for p in result.content if p.type == "text")))
        return answers

    return anyio.run(main)


def _ledger_texts(top: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in top.rglob("*.jsonl"))


def test_a_symlinked_claim_in_the_claims_folder_stops_replay_before_anything_runs(project: Path) -> None:
    (project / "claims" / "claim_link.py").symlink_to(project.parent / "outside_claim.py")
    [(is_error, text)] = _calls(project, [("replay_claims", {"trusted": True, "jobs": 1})])
    assert is_error and "claim_link.py" in text and "outside the project root" in text, text
    assert not (project.parent / "ran").exists()
    assert _ledger_texts(project.parent) == ""  # nothing recorded, not even the good claim


def test_a_ledger_named_by_physverify_yaml_outside_the_root_is_refused(project: Path) -> None:
    (project / "claims" / "physverify.yaml").write_text("ledger: ../../stolen.jsonl\n")
    (project / "claims" / "claim_decay.py").write_text(_marking_claim(project.parent / "ran"))
    linked = project / "elsewhere"
    linked.mkdir()
    (linked / "physverify.yaml").write_text("ledger: confirm_ledger.jsonl\n")
    (linked / "claim_decay.py").write_text(DECAY_CLAIM)
    (linked / "confirm_ledger.jsonl").symlink_to(project.parent / "stolen_too.jsonl")
    answers = _calls(project, [("replay_claims", {"trusted": True, "jobs": 1}),
                               ("replay_claims", {"claims": ["elsewhere"], "trusted": True, "jobs": 1})])
    for is_error, text in answers:
        assert is_error and "the ledger of" in text and "outside the project root" in text, text
    assert not (project.parent / "stolen.jsonl").exists() and not (project.parent / "stolen_too.jsonl").exists()
    assert not (project.parent / "ran").exists()


@pytest.mark.parametrize("target", ["/etc/passwd", "../secret.txt", "SECRET_LINK"])
def test_a_claimed_file_outside_the_root_is_refused_and_never_hashed(project: Path, target: str) -> None:
    if target == "SECRET_LINK":
        (project / "secret_link.txt").symlink_to(project.parent / "secret.txt")
        target = "secret_link.txt"
    (project / "claims" / "claim_decay.py").write_text(DECAY_CLAIM.replace('"file": "decay.py"', f'"file": {target!r}'))
    answers = _calls(project, [("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True}),
                               ("replay_claims", {"trusted": True, "jobs": 1})])
    for is_error, text in answers:
        assert is_error and "CLAIM['file'] of" in text and "outside the project root" in text, text
    assert _ledger_texts(project.parent) == ""


def test_confirm_never_hashes_a_claimed_file_outside_its_folder(project: Path, cli: Callable[..., Ran]) -> None:
    """The command line too: CLAIM["file"] may not lead out of the repository (or the claim's folder).

    In this process (the claim still runs in its own child): what is read is the JSON object printed."""
    (project / "secret_link.txt").symlink_to(project.parent / "secret.txt")
    secret_hash = hashlib.sha256(SECRET.encode()).hexdigest()
    for target in (str(project.parent / "secret.txt"), "../secret.txt", "../../secret.txt", "secret_link.txt"):
        claim = project / "claims" / "claim_decay.py"
        assert evaluate.find_target(project, claim, target) is None, target
    found = evaluate.find_target(project, project / "claims" / "claim_decay.py", "../decay.py")  # out of claims/, in the root
    assert found is not None and found.resolve() == project / "decay.py"
    done = cli("confirm", "claims/claim_decay.py", "--trusted", "--json", "-", cwd=project)
    assert json.loads(done.stdout)["file_sha256"] is not None  # decay.py, inside, is still hashed
    (project / "claims" / "claim_decay.py").write_text(DECAY_CLAIM.replace('"decay.py"', '"../secret.txt"'))
    done = cli("confirm", "claims/claim_decay.py", "--trusted", "--json", "-", cwd=project)
    assert json.loads(done.stdout)["file_sha256"] is None
    assert secret_hash not in _ledger_texts(project)


def test_a_claims_repo_outside_the_root_is_refused(project: Path) -> None:
    (project / "claims" / "claim_decay.py").write_text(
        _marking_claim(project.parent / "ran").replace('"impact": "used",', '"impact": "used",\n    "repo": "../..",')
    )
    [(is_error, text)] = _calls(project, [("confirm_claim", {"claim": "claims/claim_decay.py", "trusted": True})])
    assert is_error and "CLAIM['repo'] of" in text and "outside the project root" in text, text
    assert not (project.parent / "ran").exists()


def test_a_symlinked_spec_outside_the_root_is_refused(project: Path) -> None:
    (project / "verify_link.py").symlink_to(project.parent / "outside_claim.py")
    [(is_error, text)] = _calls(project, [("run_checks", {"trusted": True})])
    assert is_error and "verify_link.py" in text and "outside the project root" in text, text
    assert not (project.parent / "ran").exists()


def test_trusted_must_be_a_json_boolean(project: Path) -> None:
    # Every value is refused before anything runs, so one server answers them all (one start of the
    # server instead of five); after each value's three calls the marker and the ledgers are looked at,
    # so a value that ran the claim or wrote a line is named.
    (project / "claims" / "claim_decay.py").write_text(_marking_claim(project.parent / "ran"))
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(project)])

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            for trusted in ("yes", "true", 1, "false", None):
                for tool, arguments in (("confirm_claim", {"claim": "claims/claim_decay.py"}), ("replay_claims", {}),
                                        ("run_checks", {})):
                    result = await client.call_tool(tool, {**arguments, "trusted": trusted})
                    text = "".join(p.text for p in result.content if p.type == "text")
                    assert result.is_error and "trusted" in text, (trusted, tool, text)
                assert not (project.parent / "ran").exists(), f"trusted={trusted!r} ran the claim"
                assert _ledger_texts(project) == "", f"trusted={trusted!r} wrote a ledger line"

    anyio.run(main)


def test_a_nul_byte_in_a_path_is_a_clear_error(project: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("confirm_claim", {"claim": "claims/claim\x00decay.py", "trusted": True}),
        ("confirm_claim", {"claim": "claims/claim_decay.py", "ledger": "led\x00ger.jsonl", "trusted": True}),
        ("replay_claims", {"claims": ["cla\x00ims"], "trusted": True}),
        ("run_checks", {"specs": ["verify\x00.py"], "trusted": True}),
    ]
    for is_error, text in _calls(project, calls):
        assert is_error and "a path cannot hold a NUL byte" in text and "\\x00" in text, text
    assert _ledger_texts(project) == ""
