"""Hostile files in a repository under test: claim files, imports, physverify.yaml, the ledger (issue 13).

Each test runs the real command line in a real git repository and checks what a user sees:
an exit code the docs promise, no traceback, and one ledger line for every claim run. Most run it
in this process (the cli fixture: an exception escaping the command fails the test there, and each
claim still runs in its own child); those about a hang (the FIFO, the alias bomb) start a real
process with a time limit, so a hang fails the test instead of stopping the suite.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import git
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the shared fixtures module
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, DECAY_SOLVER, Ran, init_repo, run_process, verdict_line

from physverify.gate.claim import MAX_CLAIM_BYTES
from physverify.verdict import EXIT_ERROR, EXIT_FINDING, EXIT_OK

# Valid Python (the child imports it), but 1500 levels deep for any recursive walk of the tree.
DEEP_REFERENCE = "\n\ndef reference_unused():\n    return math" + ".e" * 1500 + "\n"


def physverify(*args: str, cwd: Path) -> Ran:
    """The command as a real process (ended after run_process's time limit)."""
    return run_process(*args, cwd=cwd)


def lines(ledger: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines()]


@pytest.fixture()
def project(tmp_path: Path) -> git.Repo:
    """A repository with the decay solver and its claim, committed with no ledger yet."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM)
    repo = init_repo(root)
    repo.index.add(["decay.py", "claims/claim_decay.py"])
    repo.index.commit("a solver and a claim")
    return repo


def root_of(repo: git.Repo) -> Path:
    return Path(repo.working_tree_dir or ".")


def test_confirm_records_a_claim_whose_reference_is_1500_levels_deep(project: git.Repo,
        cli: Callable[..., Ran]) -> None:
    """Item 7: the reference scan raised RecursionError; confirm exited 1 with a traceback and no ledger line."""
    root = root_of(project)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM + DEEP_REFERENCE)
    done = cli("confirm", "claims/claim_decay.py", "--ledger", "ledger.jsonl", "--trusted", cwd=root)
    assert done.returncode == EXIT_OK and "Traceback" not in done.stderr, done.stderr
    assert [line["verdict"] for line in lines(root / "ledger.jsonl")] == ["rejected"]


@pytest.mark.parametrize(("old", "new"), [
    ('"file": "decay.py"', '"file": "de\\x00cay.py"'),
    ('"file": "decay.py"', '"file": "decay.py", "repo": "\\x00"'),
    ('"file": "decay.py"', '"file": "' + "x" * 300 + '.py"'),
    ('"file": "decay.py"', '"file": "decay.py", "repo": "' + "a/" * 3000 + '"'),
])
def test_confirm_records_a_claim_whose_paths_no_file_system_allows(project: git.Repo, old: str, new: str,
        cli: Callable[..., Ran]) -> None:
    """Item 7: a NUL or an overlong name in CLAIM's file or repo raised in confirm: exit 1, a traceback, no line."""
    root = root_of(project)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM.replace(old, new))
    done = cli("confirm", "claims/claim_decay.py", "--ledger", "ledger.jsonl", "--trusted", cwd=root)
    assert done.returncode == EXIT_ERROR and "Traceback" not in done.stderr, done.stderr
    (line,) = lines(root / "ledger.jsonl")
    assert line["verdict"] == "not decidable" and "CLAIM[" in str(line["reason"])


def test_replay_records_every_claim_beside_hostile_ones(project: git.Repo, cli: Callable[..., Ran]) -> None:
    """Items 7 and 26: one bad claim file stopped replay from writing a line for any claim."""
    root = root_of(project)
    claims = root / "claims"
    (claims / "claim_deep.py").write_text(DECAY_CLAIM + DEEP_REFERENCE)
    (claims / "claim_unparseable.py").write_text(DECAY_CLAIM + "\nX = " + "-" * 100_000 + "1\n")
    (claims / "claim_huge.py").write_text(DECAY_CLAIM + "\nTABLE = [" + "0, " * MAX_CLAIM_BYTES + "]\n")
    done = cli("replay", "claims", "--trusted", "--jobs", "2", "--format", "json", cwd=root)
    # three new claims that cannot load fail the gate (issue 10), and each still gets its line
    assert done.returncode == EXIT_FINDING and "Traceback" not in done.stderr, done.stderr
    recorded = {line["claim_key"]: line for line in lines(claims / "confirm_ledger.jsonl")}
    assert sorted(recorded) == [f"claims/{name}.py" for name in ("claim_decay", "claim_deep", "claim_huge", "claim_unparseable")]
    assert recorded["claims/claim_decay.py"]["verdict"] == recorded["claims/claim_deep.py"]["verdict"] == "rejected"
    assert recorded["claims/claim_unparseable.py"]["verdict"] == "not decidable"
    assert "is nested too deeply to be read" in str(recorded["claims/claim_unparseable.py"]["reason"])
    assert recorded["claims/claim_huge.py"]["verdict"] == "not decidable"
    assert "a claim file may hold at most 1,048,576 bytes (1 MiB)" in str(recorded["claims/claim_huge.py"]["reason"])


def test_replay_skips_a_fifo_and_a_device_named_like_claims(project: git.Repo) -> None:
    """Issue 13 (item 20's discovery part): reading a FIFO named *.py waited for a writer for ever."""
    root = root_of(project)
    os.mkfifo(root / "claims" / "claim_fifo.py")
    (root / "claims" / "claim_zero.py").symlink_to("/dev/zero")
    done = physverify("replay", "claims", "--trusted", "--jobs", "1", cwd=root)
    assert done.returncode == EXIT_OK and "Traceback" not in done.stderr, done.stderr
    assert [line["claim_key"] for line in lines(root / "claims" / "confirm_ledger.jsonl")] == ["claims/claim_decay.py"]


@pytest.mark.parametrize("how", ["--changed-since", "--pre-commit"])
def test_a_relative_import_above_the_root_does_not_stop_the_gate(project: git.Repo, how: str,
        cli: Callable[..., Ran]) -> None:
    """Item 8: `from ............ import x`, even in a function never called, raised IndexError in every commit's hook."""
    root = root_of(project)
    (root / "claims" / "helpers.py").write_text("def never_called():\n    from ............ import x\n")
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM.replace("import decay\n", "import decay\nimport helpers\n"))
    assert cli("replay", "claims", "--trusted", "--jobs", "1", cwd=root).returncode == EXIT_OK
    project.index.add(["claims/helpers.py", "claims/claim_decay.py", "claims/confirm_ledger.jsonl"])
    project.index.commit("the claim is rejected")
    (root / "decay.py").write_text(DECAY_DEFECT)
    project.index.add(["decay.py"])
    if how == "--changed-since":
        done = cli("replay", "claims", "--trusted", "--jobs", "1", "--changed-since", "HEAD", cwd=root)
    else:
        done = cli("replay", "--pre-commit", "decay.py", cwd=root)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == EXIT_FINDING and "regressed" in done.stdout, done.stdout + done.stderr


def test_a_byte_order_mark_on_the_ledger_keeps_the_baseline_so_a_regression_fails_the_gate(project: git.Repo,
        cli: Callable[..., Ran]) -> None:
    """Item 12: with a BOM the first line was skipped, the regression was reported as new and the gate passed."""
    root = root_of(project)
    assert cli("replay", "claims", "--trusted", "--jobs", "1", cwd=root).returncode == EXIT_OK
    ledger = root / "claims" / "confirm_ledger.jsonl"
    ledger.write_bytes(b"\xef\xbb\xbf" + ledger.read_bytes())  # an editor saved it
    (root / "decay.py").write_text(DECAY_DEFECT)
    done = cli("replay", "claims", "--trusted", "--jobs", "1", cwd=root)
    assert done.returncode == EXIT_FINDING and "regressed" in done.stdout, done.stdout + done.stderr
    assert "line skipped" not in done.stdout + done.stderr


def test_a_yaml_alias_bomb_is_a_config_error_not_a_hang(project: git.Repo) -> None:
    """Item 9: 334 bytes of nested aliases in physverify.yaml cost 52 s and 3.2 GB before any claim ran."""
    root = root_of(project)
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    bomb += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    (root / "claims" / "physverify.yaml").write_text("\n".join([*bomb, "timeout: *i"]) + "\n")
    done = physverify("replay", "claims", "--trusted", cwd=root)
    assert done.returncode == EXIT_ERROR
    assert done.stderr == "physverify: claims/physverify.yaml: line 1: anchors and aliases (&a) are not allowed\n"


# The claim takes the result descriptor and the key from the frame of the code that runs it
# (physverify's own child_main, in its own process) and writes a result of its own, tagged,
# before its checks run. Another claim has neither (tests/isolation/test_protocol.py).
FORGER = '''
import json, os, sys
from physverify.isolation.protocol import encode_result

def _forge():
    frame = sys._getframe()
    while not isinstance(frame.f_locals.get("key"), bytes):
        frame = frame.f_back
    fake = {"label": "at t = 1 the amount follows exp(-rate t)", "family": "reference",
            "status": "PASS", "message": "forged", "seconds": 0.0}
    result = {"load_error": None, "control": dict(fake, label="at t = 0"), "checks": [fake]}
    os.write(frame.f_locals["result_fd"], encode_result(result, frame.f_locals["key"]))
    os._exit(0)

_forge()
'''


def test_a_trusted_claim_can_forge_its_verdict_and_the_docs_say_so(project: git.Repo, cli: Callable[..., Ran]) -> None:
    """Item 27: a real FAIL reported as rejected; docs/confirm.md and the README must say it plainly."""
    root = root_of(project)
    (root / "decay.py").write_text(DECAY_DEFECT)  # the claim's check really fails on this code
    honest = cli("confirm", "claims/claim_decay.py", "--ledger", "honest.jsonl", "--trusted", cwd=root)
    assert honest.returncode == EXIT_FINDING, honest.stdout + honest.stderr
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM + FORGER)
    forged = cli("confirm", "claims/claim_decay.py", "--ledger", "forged.jsonl", "--trusted", cwd=root)
    assert forged.returncode == EXIT_OK and verdict_line(forged.stdout).startswith("rejected"), forged.stdout + forged.stderr
    docs = Path(__file__).resolve().parents[2]
    for page in ("docs/confirm.md", "README.md"):
        text = " ".join((docs / page).read_text(encoding="utf-8").split())
        assert "A claim can forge its own verdict" in text and "a real FAIL" in text, page
        assert "with `--trusted` and inside the sandbox alike" in text, page
