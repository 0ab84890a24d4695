"""The sandbox (issue 5): what a claim inside cannot do, and the command lines each backend builds.

The bwrap tests run real claims through ``python -m physverify sandbox --backend bwrap`` in a
real git repository; each probe is also run outside (``--trusted``) where it must reach what
the sandbox hides, so the inside result is not a probe that could never succeed. The
docker and podman backends have no engine here: their exact command lines are tested.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import git
import pytest
from support.fixtures import Ran, init_repo, run_process, verdict_line

from physverify.commands.sandbox import run as sandbox
from physverify.errors import PhysverifyError, UsageError

PROJECT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
SMALL = ["--pids", "64", "--memory", "1g"]  # this machine is shared: the limits stay low


def claim_file(folder: Path, name: str, check_body: str, *, imports: str = "") -> Path:
    """Write a claim whose control passes and whose one check runs ``check_body`` (a function body)."""
    path = folder / name
    head = textwrap.dedent(f"""\
        import os, socket, time
        {imports}
        from physverify import Check, Result, PASS, FAIL

        CLAIM = {{"text": "probe {name}", "source": "tests/commands/test_sandbox.py", "file": "{name}", "line": 1,
                  "reference": "issue 5", "impact": "unknown"}}

        def control():
            return Check("probe", "the control runs", lambda: Result(PASS, "ran"))

        def checks():
            return [Check("probe", "{name}", _probe)]

        def _probe():
        """)
    path.write_text(head + textwrap.indent(textwrap.dedent(check_body), "    "), encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one committed file, its ledger to be written at its root."""
    root = tmp_path / "repo"
    root.mkdir()
    repo = init_repo(root)
    (root / "solver.py").write_text("X = 1\n", encoding="utf-8")
    repo.index.add(["solver.py"])
    repo.index.commit("solver")
    return root


def physverify(cwd: Path, *args: str, timeout: float = 120) -> Ran:
    return run_process(*args, cwd=cwd, timeout=timeout)


def in_sandbox(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return physverify(cwd, "sandbox", "--backend", "bwrap", *SMALL, "--", *args, timeout=timeout)


def verdict(completed: subprocess.CompletedProcess[str]) -> dict:
    assert completed.stdout, completed.stderr
    return json.loads(completed.stdout)


def outside_and_inside(repo: Path, claim: Path) -> tuple[dict, dict]:
    """Return the ledger objects of ``claim`` run outside (--trusted) and inside the sandbox."""
    outside = verdict(physverify(repo, "confirm", claim.name, "--trusted", "--json", "-", "--timeout", "30"))
    inside = verdict(in_sandbox(repo, "confirm", claim.name, "--json", "-", "--timeout", "30"))
    return outside, inside


# --- what a claim inside cannot do -------------------------------------------------------
@needs_bwrap
def test_a_claim_inside_cannot_connect_to_a_socket_listening_on_the_host_loopback(repo: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        claim = claim_file(repo, "net.py", f"""\
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
            except OSError as exc:
                return Result(PASS, f"no connection: {{exc}}")
            return Result(FAIL, "connected to the host's listening socket")
            """)
        outside, inside = outside_and_inside(repo, claim)
    assert outside["verdict"] == "confirmed", outside  # the probe does reach the socket from the host
    assert inside["verdict"] == "rejected", inside
    assert "refused" in inside["checks"][0]["message"]


@needs_bwrap
def test_a_claim_inside_cannot_resolve_a_host_name(repo: Path) -> None:
    claim = claim_file(repo, "dns.py", """\
        try:
            found = socket.getaddrinfo("localhost", 80)
        except OSError as exc:
            return Result(PASS, f"not resolved: {exc}")
        return Result(FAIL, f"resolved: {found[0][4]}")
        """)
    outside, inside = outside_and_inside(repo, claim)
    assert outside["verdict"] == "confirmed", outside  # the host resolves localhost (/etc/hosts)
    assert inside["verdict"] == "rejected", inside


@needs_bwrap
def test_a_claim_inside_cannot_write_into_the_repository(repo: Path) -> None:
    claim = claim_file(repo, "write.py", """\
        written = []
        for name in ("solver.py", "new_file.txt", ".git/hooks/pre-commit"):
            try:
                with open(os.path.join(os.environ.get("PHYSVERIFY_REPO", "."), name), "a") as f:
                    f.write("changed")
                written.append(name)
            except OSError as exc:
                pass
        return Result(FAIL, f"wrote {written}") if written else Result(PASS, "nothing written")
        """)
    before = (repo / "solver.py").read_text()
    inside = verdict(in_sandbox(repo, "confirm", claim.name, "--json", "-"))
    assert inside["verdict"] == "rejected", inside
    assert (repo / "solver.py").read_text() == before
    assert not (repo / "new_file.txt").exists() and not (repo / ".git/hooks/pre-commit").exists()


@needs_bwrap
def test_a_claim_inside_cannot_read_a_file_planted_in_the_hosts_home_folder(repo: Path) -> None:
    planted = Path.home() / f"physverify-sandbox-test-{uuid.uuid4().hex}"
    planted.write_text("secret", encoding="utf-8")
    try:
        claim = claim_file(repo, "home.py", f"""\
            try:
                return Result(FAIL, "read: " + open({str(planted)!r}).read())
            except OSError as exc:
                return Result(PASS, f"not readable: {{exc}}")
            """)
        outside, inside = outside_and_inside(repo, claim)
    finally:
        planted.unlink()
    assert outside["verdict"] == "confirmed", outside
    assert inside["verdict"] == "rejected", inside


@needs_bwrap
@pytest.mark.slow
def test_a_fork_bomb_ends_as_not_decidable_with_its_ledger_line_and_the_host_stays_responsive(repo: Path) -> None:
    claim = claim_file(repo, f"bomb_{uuid.uuid4().hex}.py", """\
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.05)
        """)
    proc = subprocess.Popen([sys.executable, "-m", "physverify", "sandbox", "--backend", "bwrap", *SMALL, "--",
                             "confirm", claim.name, "--timeout", "6"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # the bomb is running: the host still starts a process at once
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=30)
    assert time.monotonic() - start < 10
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert verdict_line(stdout).startswith("not decidable (impact: unknown): timed out after 6 s")
    line = json.loads((repo / "confirm_ledger.jsonl").read_text().splitlines()[-1])
    assert (line["verdict"], line["claim_file"]) == ("not decidable", claim.name)
    assert not _processes_mentioning(claim.name)


@needs_bwrap
def test_a_50_gb_allocation_ends_as_not_decidable_with_the_reason_and_its_ledger_line(repo: Path) -> None:
    claim = claim_file(repo, "hog.py", """\
        block = numpy.ones(50 * 10**9 // 8)
        return Result(PASS, f"allocated {block.nbytes} bytes")
        """, imports="import numpy")
    completed = in_sandbox(repo, "confirm", claim.name, "--timeout", "60")
    assert completed.returncode == 2
    assert verdict_line(completed.stdout).startswith("not decidable"), completed.stdout
    assert "check ERROR hog.py: MemoryError" in completed.stdout
    line = json.loads((repo / "confirm_ledger.jsonl").read_text().splitlines()[-1])
    assert line["verdict"] == "not decidable" and "MemoryError" in line["checks"][0]["message"]


def _processes_mentioning(text: str) -> list[int]:
    """Return the pids whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_bwrap
def test_the_outer_limit_ends_every_process_inside(repo: Path) -> None:
    seconds = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"  # a sleep no other process on the machine runs
    claim = claim_file(repo, f"sleeper_{uuid.uuid4().hex}.py", f"""\
        import subprocess
        subprocess.Popen(["sleep", "{seconds}"], start_new_session=True)  # leaves the child's group
        time.sleep(300)
        """)
    completed = physverify(repo, "sandbox", "--backend", "bwrap", *SMALL, "--timeout", "4", "--",
                           "confirm", claim.name, "--timeout", "100")
    assert completed.returncode == 2
    assert "did not finish within 4 s" in completed.stderr
    assert not _processes_mentioning(claim.name) and not _processes_mentioning(f"sleep\x00{seconds}")


# --- the trust rule, the ledger and the commit -----------------------------------------
@needs_bwrap
def test_trusted_is_not_needed_inside_and_the_line_lands_in_the_hosts_ledger_with_the_dirty_commit(repo: Path) -> None:
    claim = claim_file(repo, "plain.py", "return Result(PASS, os.environ['PHYSVERIFY_REPO'])")
    refused = physverify(repo, "confirm", claim.name)
    assert refused.returncode == 2 and "sandbox/README.md" in refused.stderr
    (repo / "solver.py").write_text("X = 2\n", encoding="utf-8")  # a tracked file changed: -dirty
    ledger = repo.parent / "elsewhere" / "ledger.jsonl"
    ledger.parent.mkdir()
    completed = in_sandbox(repo, "confirm", claim.name, "--ledger", str(ledger))
    assert completed.returncode == 0, completed.stderr
    line = json.loads(ledger.read_text())
    assert line["repo_commit"] == git.Repo(repo).head.commit.hexsha + "-dirty"
    assert line["checks"][0]["message"] == sandbox.MOUNT
    assert not (repo / "confirm_ledger.jsonl").exists()


@needs_bwrap
def test_replay_runs_inside_and_an_unchanged_replay_leaves_the_ledger_as_it_was(repo: Path) -> None:
    claims = repo / "claims"
    claims.mkdir()
    claim_file(claims, "one.py", "return Result(PASS, 'fine')")
    completed = in_sandbox(repo, "replay", "claims", "--format", "json")
    assert completed.returncode == 0, completed.stderr
    ledger = claims / "confirm_ledger.jsonl"
    assert json.loads(ledger.read_text())["verdict"] == "rejected"
    before, output = ledger.read_bytes(), repo.parent / "report.json"
    again = in_sandbox(repo, "replay", "claims", "--output", str(output), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert ledger.read_bytes() == before and json.loads(output.read_text())


@needs_bwrap
def test_a_ledger_the_sandbox_made_for_a_run_that_wrote_nothing_is_removed(repo: Path) -> None:
    claim = claim_file(repo, "plain.py", "return Result(PASS, 'fine')")
    fresh = repo.parent / "fresh.jsonl"
    refused = in_sandbox(repo, "confirm", claim.name, "--timeout", "0", "--ledger", str(fresh))
    assert refused.returncode == 2 and "--timeout" in refused.stderr
    assert not fresh.exists()


# --- the verdicts are the same inside and outside ------------------------------------------
EXAMPLES = sorted((PROJECT / "docs" / "examples" / "confirm").glob("claim_*.py"))


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("claim", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_worked_examples_give_the_same_verdict_inside_and_outside(claim: Path, tmp_path: Path) -> None:
    outside = verdict(physverify(claim.parent, "confirm", claim.name, "--trusted", "--json", "-",
                                 "--ledger", str(tmp_path / "out.jsonl")))
    inside = verdict(physverify(claim.parent, "sandbox", "--backend", "bwrap", "--", "confirm", claim.name,
                                "--json", "-", "--ledger", str(tmp_path / "in.jsonl")))
    assert [c["status"] for c in inside["checks"]] == [c["status"] for c in outside["checks"]]
    assert (inside["verdict"], inside["reason"]) == (outside["verdict"], outside["reason"])


def test_the_five_worked_examples_are_there() -> None:
    """Three for the verdicts (docs/confirm.md section 8), two for claims that name their fix (section 9)."""
    assert len(EXAMPLES) == 5, EXAMPLES


@needs_bwrap
@pytest.mark.slow
def test_the_projects_own_claims_replay_to_the_same_verdicts_inside_and_outside(tmp_path: Path) -> None:
    def verdicts(*prefix: str, ledger: str, trusted: tuple[str, ...] = ()) -> dict[str, str]:
        completed = physverify(PROJECT, *prefix, "replay", "claims", "--format", "json", "--record-all",
                               "--ledger", str(tmp_path / ledger), *trusted, timeout=900)
        assert completed.returncode in (0, 1), completed.stderr
        return {r["claim_file"]: r["verdict"] for r in map(json.loads, (tmp_path / ledger).read_text().splitlines())}

    outside = verdicts(ledger="out.jsonl", trusted=("--trusted",))
    inside = verdicts("sandbox", "--backend", "bwrap", "--", ledger="in.jsonl")
    assert outside and inside == outside


# --- the command lines --------------------------------------------------------------------
def _inner(*args: str, folders: tuple[str, ...] = ()) -> sandbox.Inner:
    """The inner command as cli.py hands it over (cli parses; the sandbox receives values)."""
    return sandbox.Inner(args, args[0], folders=folders)


def test_paths_are_translated_to_the_mount_and_only_the_ledger_and_outputs_are_writable(repo: Path) -> None:
    (repo / "claims").mkdir()
    (repo / "claims" / "c.py").write_text("")
    outside_ledger = repo.parent / "ledger.jsonl"
    plan = sandbox.make_plan(_inner("confirm", str(repo / "claims" / "c.py"), "--json", "out.json", "--ledger",
                                    str(outside_ledger), "--timeout", "5"), repo=repo, cwd=repo)
    assert plan.args == ("confirm", "/repo/claims/c.py", "--json", "out.json", "--ledger", "/out/1/ledger.jsonl",
                         "--timeout", "5")
    assert plan.writable == (sandbox.WritableFile(repo.resolve() / "out.json", "/repo/out.json"),
                             sandbox.WritableFile(outside_ledger.resolve(), "/out/1/ledger.jsonl"))
    assert plan.cwd == "/repo" and plan.commit == git.Repo(repo).head.commit.hexsha


def test_each_report_file_of_a_replay_is_bound_writable_and_only_its_path_is_translated(repo: Path) -> None:
    """Issue 38: --report FORMAT=PATH writes a file, as --output does; the format stays as given."""
    (repo / "claims").mkdir()
    outside = repo.parent / "replay.xml"
    plan = sandbox.make_plan(_inner("replay", "claims", "--report", f"junit={outside}", "--report=sarif=r.sarif",
                                    folders=("claims",)), repo=repo, cwd=repo)
    assert plan.args[:5] == ("replay", "claims", "--report", "junit=/out/0/replay.xml", "--report")
    assert plan.args[5] == "sarif=r.sarif"
    assert {f.host for f in plan.writable} >= {outside.resolve(), repo.resolve() / "r.sarif"}
    with pytest.raises(UsageError, match="give FORMAT=PATH"):
        sandbox.make_plan(_inner("replay", "claims", "--report", "junit", folders=("claims",)), repo=repo, cwd=repo)


def test_the_default_ledgers_are_made_explicit_and_writable(repo: Path) -> None:
    (repo / "claims").mkdir()
    confirm = sandbox.make_plan(_inner("confirm", "x.py"), repo=repo, cwd=repo / "claims")
    assert confirm.args[-2:] == ("--ledger", "/repo/claims/confirm_ledger.jsonl") and confirm.cwd == "/repo/claims"
    assert confirm.writable[0].inside == "/repo/claims/confirm_ledger.jsonl"
    replay = sandbox.make_plan(_inner("replay", "--jobs", "2", "claims", folders=("claims",)), repo=repo, cwd=repo)
    assert replay.writable[0].inside == "/repo/claims/confirm_ledger.jsonl"


def test_paths_outside_the_repository_and_confirm_init_are_refused(repo: Path) -> None:
    stray = repo.parent / "stray.py"
    stray.write_text("")
    with pytest.raises(UsageError, match="outside the repository"):
        sandbox.make_plan(_inner("confirm", str(stray)), repo=repo, cwd=repo)
    with pytest.raises(UsageError, match="confirm init"):
        sandbox.make_plan(_inner("confirm", "init", "x.py"), repo=repo, cwd=repo)
    with pytest.raises(UsageError, match="confirm|replay"):
        sandbox.make_plan(_inner("run", "x.py"), repo=repo, cwd=repo)


def test_docker_and_podman_build_the_exact_command_lines(repo: Path) -> None:
    (repo / "claims").mkdir()
    plan = sandbox.make_plan(_inner("replay", "claims", "--format", "github", folders=("claims",)), repo=repo, cwd=repo)
    limits = sandbox.Limits(2**30, 64)
    uid, gid = os.getuid(), os.getgid()
    docker = sandbox.docker_argv(plan, limits, image="img", name="box")
    assert docker == [
        "docker", "run", "--rm", "--init", "--name", "box", "--network", "none", "--read-only",
        "--memory", "1073741824", "--memory-swap", "1073741824", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", "--pids-limit", "64", "--user", f"{uid}:{gid}",
        "--mount", f"type=bind,source={repo.resolve()},target=/repo,readonly",
        "--mount", f"type=bind,source={repo.resolve()}/claims/confirm_ledger.jsonl,target=/repo/claims/confirm_ledger.jsonl",
        "--tmpfs", "/tmp:rw,nosuid,nodev,size=1073741824", "--env", "HOME=/tmp",
        "--env", "PHYSVERIFY_REPO=/repo", "--env", "PYTHONDONTWRITEBYTECODE=1", "--env", "PYTHONNOUSERSITE=1",
        "--env", "PHYSVERIFY_CLAIM_NAMESPACE=ask",
        "--env", f"PHYSVERIFY_REPO_COMMIT={plan.commit}", "--workdir", "/repo", "img",
        "replay", "claims", "--format", "github", "--ledger", "/repo/claims/confirm_ledger.jsonl"]
    podman = sandbox.podman_argv(plan, limits, image="img", name="box")
    keep_id = ["--userns", "keep-id"] if uid != 0 else []
    assert podman == ["podman", *docker[1:19], *keep_id, *docker[19:]]


def test_bwrap_hides_home_and_network_and_binds_the_repository_read_only(repo: Path) -> None:
    plan = sandbox.make_plan(_inner("confirm", "c.py"), repo=repo, cwd=repo)
    argv = sandbox.bwrap_argv(plan, sandbox.Limits(2**30, 64), python=[Path("/opt/py")], executable="/opt/py/bin/python")
    assert {"--unshare-net", "--unshare-pid", "--unshare-user", "--die-with-parent", "--clearenv"} <= set(argv)
    pairs = list(zip(argv, argv[1:], argv[2:]))
    assert ("--ro-bind", str(repo.resolve()), "/repo") in pairs
    assert ("--bind", str(repo.resolve() / "confirm_ledger.jsonl"), "/repo/confirm_ledger.jsonl") in pairs
    assert argv.index("/root") < argv.index("/opt/py")  # the homes are hidden before the Python is bound
    assert argv[-10:] == ["--", "/opt/py/bin/python", "-I", "-B", "-c", sandbox.INNER_MAIN, "confirm", "c.py", "--ledger",
                         "/repo/confirm_ledger.jsonl"]


def test_the_inner_command_that_cannot_import_physverify_gives_no_verdict_not_a_finding(tmp_path: Path) -> None:
    # -S: no site-packages, so no physverify (what a sandbox that does not see the install meets).
    # ``python -m physverify`` exits 1 there, the exit code of a confirmed defect.
    plain = subprocess.run([sys.executable, "-S", "-m", "physverify", "--version"], cwd=tmp_path,
                           capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    assert plain.returncode == 1 and "No module named" in plain.stderr
    stub = subprocess.run([sys.executable, "-S", "-c", sandbox.INNER_MAIN, "confirm", "c.py"], cwd=tmp_path,
                          capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")}, timeout=60)
    assert stub.returncode == 2, stub
    assert stub.stderr.count("\n") == 1 and stub.stderr.startswith("physverify: cannot be imported inside the sandbox")


def test_the_inner_command_is_the_physverify_command(tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, "-c", sandbox.INNER_MAIN, "--version"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.startswith("physverify "), ran
    usage = subprocess.run([sys.executable, "-c", sandbox.INNER_MAIN, "--no-such-flag"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and usage.stderr.startswith("physverify: "), usage


def _fake_engine(folder: Path, name: str, *, answers: bool, has_image: bool = False) -> None:
    """Write an executable ``name`` whose ``info`` and ``image inspect`` succeed or fail as told."""
    path = folder / name
    path.write_text(f'#!/bin/sh\n[ "$1" = info ] && exit {0 if answers else 1}\nexit {0 if has_image else 1}\n')
    path.chmod(0o755)


def test_auto_picks_an_engine_with_the_image_else_bwrap_else_says_what_to_install(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PhysverifyError, match="apt-get install bubblewrap"):
        sandbox.choose_backend("auto")
    _fake_engine(tmp_path, "docker", answers=True)  # an engine, but the image is not built
    with pytest.raises(PhysverifyError, match="docker build -t physverify-sandbox -f sandbox/Dockerfile ."):
        sandbox.choose_backend("auto")
    _fake_engine(tmp_path, "bwrap", answers=True)
    assert sandbox.choose_backend("auto") == "bwrap"
    _fake_engine(tmp_path, "podman", answers=True, has_image=True)
    assert sandbox.choose_backend("auto") == "podman"
    _fake_engine(tmp_path, "docker", answers=True, has_image=True)
    assert sandbox.choose_backend("auto") == "docker"
    _fake_engine(tmp_path, "docker", answers=False, has_image=True)  # a client with no engine behind it
    assert sandbox.choose_backend("auto") == "podman"


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client")
def test_docker_without_the_image_says_how_to_build_it(repo: Path) -> None:
    completed = physverify(repo, "sandbox", "--backend", "docker", "--image", "no-such-image-xyz", "--",
                           "confirm", "c.py")
    assert completed.returncode == 2
    assert "docker build -t no-such-image-xyz -f sandbox/Dockerfile ." in completed.stderr
    assert not (repo / "confirm_ledger.jsonl").exists()


@pytest.mark.parametrize(("text", "size"), [("512m", 512 * 2**20), ("2g", 2 * 2**30), ("1GiB", 2**30), ("4096", 4096)])
def test_sizes_read_as_docker_reads_them(text: str, size: int) -> None:
    assert sandbox.parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1g", "lots", "2x"])
def test_a_size_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--memory"):
        sandbox.parse_size(text)


@pytest.mark.parametrize("text", ["8589934592g", "9999999999999999999999999", "9" * 5000],
                         ids=["8 EiB in g", "25 digits", "5000 digits"])
def test_a_size_beyond_what_setrlimit_takes_is_refused_before_anything_starts(text: str) -> None:
    """A limit over 8 EiB failed inside the child's preexec_fn: an internal error at exit 3 (or, past 4,300
    digits, int()'s own ValueError)."""
    with pytest.raises(UsageError, match="give a positive size of at most 8 EiB") as raised:
        sandbox.parse_size(text)
    assert len(str(raised.value)) < 150
    assert sandbox.parse_size("8388607t") == 8388607 * 2**40  # just under 8 EiB is still a size


@pytest.mark.parametrize(("args", "message"), [
    (["--memory", "99999999999999999999999g"], "--memory '99999999999999999999999g': give a positive size of at most"),
    (["--pids", "99999999999999999999"], "--pids 99999999999999999999: give a positive number of processes of at most"),
], ids=["memory", "pids"])
def test_a_limit_no_system_takes_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = run_process("sandbox", *args, "--", "confirm", "c.py", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"physverify: {message}") and done.stderr.count("\n") == 1
