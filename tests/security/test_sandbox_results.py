"""``physverify sandbox -- replay --output F`` (and ``--report json=F``, ``confirm --json F``) gives F only a sealed result.

The command line's sandbox bound the caller's F writable into the sandbox, where every claim
could write it too: a claim found F on its ancestor's command line and wrote a result of its
own there. Now F is never bound: physverify inside writes a sealed result into a file of the
runner's own, and the runner copies it to F only when the seal holds (commands/sandbox/seal.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, committed_project

from physverify.commands.sandbox import run as sandbox
from physverify.commands.sandbox import seal
from physverify.verdict import EXIT_ERROR, EXIT_FINDING, EXIT_OK

needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")

FORGED = {"claims": [], "exit_code": 0, "skipped": [], "written": 0}
# Beside a real defect: writes FORGED into every result file named on its ancestors' command lines,
# and with LIMIT, sets that ancestor's RLIMIT_FSIZE to one byte, so physverify cannot write its own.
FORGER = '''\
"""A claim that forges the results the caller asked for."""
import json, os, resource

from physverify import PASS, Check, Result

CLAIM = {{"text": "a forger", "source": "a test", "file": "decay.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}}


def _forge():
    done, pid = [], os.getpid()
    while pid > 1:
        with open(f"/proc/{{pid}}/stat") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        try:
            with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                args = handle.read().split(b"\\0")
        except OSError:
            continue
        named = [a[len(b"json="):] for a in args if a.startswith(b"json=")]
        named += [args[i + 1] for i, a in enumerate(args[:-1]) if a == b"--output"]
        for path in named:
            try:
                with open(path, "w") as handle:
                    handle.write(json.dumps(FORGED))
                done.append("forged " + path.decode())
            except OSError as exc:
                done.append(f"not forged ({{exc.strerror}})")
        if named and LIMIT:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, resource.prlimit(pid, resource.RLIMIT_FSIZE)[1]))
    return done or ["found nothing"]


FORGED = {forged!r}
LIMIT = {limit!r}
_DONE = _forge()


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "; ".join(_DONE), lambda: Result(PASS, "ok"))]
'''


def _project(tmp_path: Path, *, limit: bool = False) -> Path:
    files = {"decay.py": DECAY_DEFECT, "claims/a_forger.py": FORGER.format(forged=FORGED, limit=limit),
             "claims/b_victim.py": DECAY_CLAIM}
    return committed_project(tmp_path / "project", files, "a forger and a real defect")


def _replay(root: Path, output: Path, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "physverify", "sandbox", "--backend", "bwrap", "--", "replay", "claims",
                           "--jobs", "1", "--dry-run", "--format", "json", "--output", str(output),
                           "--report", f"json={report}"], cwd=root, capture_output=True, text=True, timeout=300)


@needs_bwrap
def test_a_claim_that_also_stops_physverify_writing_leaves_no_forged_result(tmp_path: Path) -> None:
    root = _project(tmp_path, limit=True)
    output, report = tmp_path / "output.json", tmp_path / "report.json"
    done = _replay(root, output, report)
    assert done.returncode == EXIT_ERROR, done.stdout + done.stderr
    assert "a claim changed physverify's limits" in done.stderr
    for path in (output, report):
        assert not path.exists() or json.loads(path.read_text()) != FORGED


@needs_bwrap
def test_a_claim_cannot_forge_the_result_files_of_the_command_lines_sandbox(tmp_path: Path) -> None:
    root = _project(tmp_path)
    output, report = tmp_path / "output.json", tmp_path / "report.json"
    done = _replay(root, output, report)
    for path in (output, report):
        result = json.loads(path.read_text())  # plain JSON: the seal was checked and taken off
        assert result != FORGED and result["exit_code"] == done.returncode, done.stdout + done.stderr
        verdicts = {Path(c["claim_key"]).stem: c["verdict"] for c in result["claims"]}
        assert verdicts == {"a_forger": "rejected", "b_victim": "confirmed"}, done.stderr
    forger = next(c for c in json.loads(output.read_text())["claims"] if c["claim_key"].endswith("a_forger.py"))
    assert forger["checks"][0]["label"].startswith("not forged"), forger["checks"]  # it found the staged files


@needs_bwrap
def test_a_confirm_json_file_comes_from_the_sealed_result(tmp_path: Path) -> None:
    root = _project(tmp_path)
    target = tmp_path / "confirm.json"
    done = subprocess.run([sys.executable, "-m", "physverify", "sandbox", "--backend", "bwrap", "--", "confirm",
                           "claims/b_victim.py", "--json", str(target)], cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == EXIT_FINDING, done.stdout + done.stderr
    assert json.loads(target.read_text())["verdict"] == "confirmed"


# Where a claim can write the staged file (no namespace of its own: docker's seccomp profile, an
# older kernel), what it wrote carries no seal: exit 2, one problem, the caller's file untouched.
def _staged(tmp_path: Path, data: bytes | None) -> tuple[Path, Path]:
    staged, target = tmp_path / "0-out.json", tmp_path / "out.json"
    if data is not None:
        staged.write_bytes(data)
    target.write_text("the caller's earlier file\n")
    return staged, target


def _ran(code: int) -> sandbox.SandboxRun:
    return sandbox.SandboxRun(code, "bwrap", ("bwrap",), False, ())


@pytest.mark.parametrize("forged", [json.dumps(FORGED).encode(), seal.seal(json.dumps(FORGED).encode(), bytes(32))])
def test_a_forged_staged_result_is_an_error_and_the_callers_file_stays(tmp_path: Path, forged: bytes) -> None:
    staged, target = _staged(tmp_path, forged)
    ran = sandbox._deliver(_ran(EXIT_OK), [(staged, target)], seal.new_key())
    assert ran.exit_code == EXIT_ERROR and ran.problem is not None and "seal" in ran.problem
    assert target.read_text() == "the caller's earlier file\n"


def test_a_verdict_without_its_result_is_an_error(tmp_path: Path) -> None:
    staged, target = _staged(tmp_path, None)  # a claim kept physverify from writing it (prlimit RLIMIT_FSIZE)
    ran = sandbox._deliver(_ran(EXIT_OK), [(staged, target)], seal.new_key())
    assert ran.exit_code == EXIT_ERROR and ran.problem is not None and "wrote no result" in ran.problem
    assert target.read_text() == "the caller's earlier file\n"
    assert sandbox._deliver(_ran(EXIT_ERROR), [(staged, target)], seal.new_key()).problem is None  # its own error


def test_a_sealed_result_reaches_the_callers_file_without_its_seal(tmp_path: Path) -> None:
    key = seal.new_key()
    staged, target = _staged(tmp_path, seal.seal(b'{"exit_code": 1}\n', key))
    ran = sandbox._deliver(_ran(EXIT_FINDING), [(staged, target)], key)
    assert ran.exit_code == EXIT_FINDING and ran.problem is None
    assert target.read_bytes() == b'{"exit_code": 1}\n'
