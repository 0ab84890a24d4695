"""The Action's gate decides from what physverify itself wrote, never from what a claim could (issue 37, items 1 and 7).

The step's ``run`` line is run locally in bash as the runner would (tests/commands/test_action.py:
``_run_locally``), on a checkout whose committed ledger says a claim is rejected and whose
last commit puts its defect back: a regression, so the gate must fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_action import _run_locally, make_workspace

import physverify
from physverify.commands.action import SHARD_RESULT


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    return make_workspace(tmp_path, monkeypatch)


# --- the merge job's input ------------------------------------------------------------------
def _huge(path: Path) -> None:
    with open(path, "wb") as handle:  # sparse: past the size limit without writing it
        handle.truncate(300 * 1024 * 1024)


SHARD_FILES = {
    "nested": lambda path: path.write_bytes(b"[" * 200_000),
    "nested object": lambda path: path.write_bytes(b'{"claims": ' + b"[" * 200_000),
    "not UTF-8": lambda path: path.write_bytes(b'{"shard": "1/1", "claims": [], "x": "\xff\xfe"}'),
    "huge": _huge,
    "not an object": lambda path: path.write_bytes(b"[1, 2, 3]"),
    "a field of the wrong kind": lambda path: path.write_bytes(
        b'{"shard": "1/1", "claims": [{"location": "x.py:\\u00b2", "transition": "new"}]}'),
}


@pytest.mark.parametrize("kind", sorted(SHARD_FILES))
def test_a_bad_shard_result_is_one_line_and_gate_error(workspace: tuple[Path, str], tmp_path: Path,
                                                       kind: str) -> None:
    root, recorded = workspace
    downloads = tmp_path / "downloads" / "shard-1"
    downloads.mkdir(parents=True)
    SHARD_FILES[kind](downloads / SHARD_RESULT)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"merge-shards": str(tmp_path / "downloads")})
    assert ran["code"] == 2, ran["stdout"] + ran["stderr"]
    assert ran["outputs"] == {"gate": "error", "exit-code": "2"}
    errors = [line for line in ran["stdout"].splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and SHARD_RESULT in errors[0], ran["stdout"]
    assert "Traceback" not in ran["stderr"] and "this is a bug" not in ran["stdout"] + ran["stderr"]
    assert os.path.getsize(downloads / SHARD_RESULT) > 0  # nothing of it was changed


# --- the sandboxed gate's own result ----------------------------------------------------------
needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")

# A claim beside the regressed one: it finds the result file on its ancestor's command line,
# writes a result with no claims and exit code 0 there, and lowers the ancestor's LIMIT with
# prlimit, so that physverify cannot write the ledger or start another claim and never
# writes a result of its own. It passes its own checks. MARK notes what it managed.
FORGER = '''\
"""A claim that forges the sandboxed run's result."""
import json, os, resource

from physverify import PASS, Check, Result

CLAIM = {{"text": "a forger", "source": "a test", "file": "decay.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}}


def _ancestors():
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{{pid}}/stat") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        yield pid


def _forge():
    done = []
    for pid in _ancestors():
        try:
            with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                args = handle.read().split(b"\\0")
        except OSError:
            continue
        # the file the host reads back: the JSON report (--report json=F), or --output F
        named = [a[len(b"json="):] for a in args if a.startswith(b"json=")]
        named += [args[args.index(b"--output") + 1]] if b"--output" in args else []
        if not named:
            continue
        try:  # read-only to a claim that has its own namespace (isolation/privatetmp.py); the limit is set anyway
            with open(named[0], "w") as handle:
                handle.write(json.dumps({{"claims": [], "exit_code": 0, "skipped": [], "written": 0}}))
            done.append("forged")
        except OSError as exc:
            done.append(f"not forged ({{exc.strerror}})")
        hard = resource.prlimit(pid, resource.{limit})[1]
        resource.prlimit(pid, resource.{limit}, ({value}, hard))
        done.append("limited")
        break
    return done


_DONE = _forge()


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "always passes: " + " and ".join(_DONE), lambda: Result(PASS, "ok"))]
'''


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize(("limit", "value", "isolation"), [("RLIMIT_FSIZE", 1, "fork"), ("RLIMIT_NOFILE", 3, "fresh")])
def test_a_claim_cannot_forge_the_sandboxed_gates_result(workspace: tuple[Path, str], tmp_path: Path, limit: str,
                                                          value: int, isolation: str) -> None:
    root, recorded = workspace
    (root / "claims" / "claim_forger.py").write_text(FORGER.format(limit=limit, value=value))
    (root / "claims" / "physverify.yaml").write_text(f"isolation: {isolation}\n")
    (root / "physverify").symlink_to(Path(physverify.__file__).resolve().parent)  # the physverify under test, inside
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["outputs"].get("gate") in ("fail", "error") and ran["code"] in (1, 2), ran["stdout"] + ran["stderr"]
    assert "a claim changed physverify's limits during the run" in ran["stdout"], ran["stdout"]
    assert f"{limit} " in ran["stdout"]


# A claim that looks for the physverify process above it (its command line is readable by all)
# and tries the routes a process of the same user has into it without ptrace: re-opening its
# descriptors, reading its environment and its memory. (Listing /proc/PID/fd stays possible
# where the caller is root, whose uid the sandbox maps to the claims' own; the names alone open nothing.)
PROBE = '''\
"""A claim that probes the physverify process above it."""
import os

from physverify import PASS, Check, Result

CLAIM = {"text": "a probe", "source": "a test", "file": "decay.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}


def _parent(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def _probe():
    pid = os.getpid()
    while pid > 1:
        pid = _parent(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"physverify.commands.cli" not in handle.read():
                continue
        reached = []
        for route in ("fd/0", "fd/1", "fd/2", "environ", "mem"):
            try:
                os.close(os.open(f"/proc/{pid}/{route}", os.O_RDONLY))
                reached.append(route)
            except OSError:
                pass
        return "reached " + (",".join(reached) or "nothing")
    return "no physverify above"


_FOUND = _probe()


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "probe: " + _FOUND, lambda: Result(PASS, "ok"))]
'''


@needs_bwrap
def test_no_claim_inside_the_sandbox_opens_physverifys_descriptors_environment_or_memory(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    import json
    import subprocess
    import sys

    root, _ = workspace
    (root / "claims" / "claim_probe.py").write_text(PROBE)
    (root / "physverify").symlink_to(Path(physverify.__file__).resolve().parent)
    output = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "physverify", "sandbox", "--backend", "bwrap", "--", "replay", "claims",
                           "--jobs", "1", "--format", "json", "--output", str(output)], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert output.exists(), done.stdout + done.stderr
    probe = next(c for c in json.loads(output.read_text())["claims"] if c["claim_key"].endswith("claim_probe.py"))
    assert [c["label"] for c in probe["checks"]] == ["probe: reached nothing"]


def test_only_a_result_sealed_with_the_runs_key_is_opened() -> None:
    from physverify.commands.sandbox import seal
    from physverify.errors import PhysverifyError

    key, other = seal.new_key(), seal.new_key()
    data = b'{"claims": [], "exit_code": 0}\n'
    assert seal.opened(seal.seal(data, key), key, "the result") == data
    forged = [data, seal.seal(data, other), seal.seal(data, key)[:-2] + b"1}", b"", b"0" * 64 + b"\n" + data]
    for sealed in forged:
        with pytest.raises(PhysverifyError, match="does not carry this run's seal"):
            seal.opened(sealed, key, "the result")


def test_the_key_is_read_from_standard_input_only_when_the_host_asks_for_a_seal() -> None:
    from physverify.commands.sandbox import seal
    from physverify.errors import PhysverifyError

    key = seal.new_key()
    for sent, env, wanted in [(seal.key_line(key), {seal.SEAL_ENV: "stdin"}, True), (b"", {}, False)]:
        read, write = os.pipe()
        os.write(write, sent)
        os.close(write)
        try:
            assert seal.receive(env, read) is wanted
        finally:
            os.close(read)
    assert seal.opened(seal.seal(b"x"), key, "the result") == b"x"  # the key received is the one sealing
    read, write = os.pipe()
    os.write(write, b"not a key\n")
    os.close(write)
    with pytest.raises(PhysverifyError, match="no key for the result's seal"):
        seal.receive({seal.SEAL_ENV: "stdin"}, read)
    os.close(read)


def test_a_sealed_plan_keeps_docker_s_standard_input_open_for_the_key(tmp_path: Path) -> None:
    from dataclasses import replace

    from physverify.commands.sandbox import run as sandbox
    from physverify.commands.sandbox.seal import SEAL_ENV

    (tmp_path / "claims").mkdir()
    plan = sandbox.make_plan(sandbox.Inner(("replay", "claims"), "replay", folders=("claims",)), repo=tmp_path,
                             cwd=tmp_path)
    limits = sandbox.Limits(2**30, 64)
    assert "--interactive" not in sandbox.docker_argv(plan, limits, image="img", name="box")
    sealed = replace(plan, sealed=True)
    assert "--interactive" in sandbox.docker_argv(sealed, limits, image="img", name="box")
    assert sealed.env()[SEAL_ENV] == "stdin" and SEAL_ENV not in plan.env()


# Outside the sandbox too: a claim that lowers physverify's RLIMIT_NOFILE by one, which breaks
# nothing by itself: the change alone is what the run refuses.
LIMITER = '''\
"""A claim that changes its ancestor physverify's limits."""
import os, resource, time

from physverify import PASS, Check, Result

CLAIM = {"text": "a limiter", "source": "a test", "file": "decay.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}

pid = os.getpid()
while pid > 1:
    with open(f"/proc/{pid}/stat") as handle:
        pid = int(handle.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        if b"replay" in handle.read().split(b"\\0"):
            soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft - 1, hard))
            break


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "always passes too", lambda: Result(PASS, "ok"))]
'''


@pytest.mark.parametrize("isolation", ["fork", "fresh"])
def test_a_claim_that_changes_physverifys_limits_leaves_the_run_without_a_verdict(tmp_path: Path,
                                                                                isolation: str) -> None:
    from support.fixtures import DECAY_CLAIM, run_process
    from support.hostile import claims_repo

    claims = claims_repo(tmp_path, {"claim_decay.py": DECAY_CLAIM, "claim_limiter.py": LIMITER})
    done = run_process("replay", "claims", "--trusted", "--jobs", "1", "--isolation", isolation,
                       cwd=claims.parent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "physverify: a claim changed physverify's limits during the run (RLIMIT_NOFILE" in done.stderr
    assert not (claims / "confirm_ledger.jsonl").exists()  # no verdict, no line
