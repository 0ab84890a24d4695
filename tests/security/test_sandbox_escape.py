"""The sandbox against hostile repository content (issue 13, items 1, 2, 5 and 21; issue 10).

Each test runs ``python -m physverify sandbox --backend bwrap`` on a real git repository that
tries to escape, read the caller's secrets, hang the run or kill physverify inside. Where a
probe could be a test that never fails, the same probe is first shown to work outside.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import git
import pytest
from support.fixtures import init_repo
from test_sandbox import claim_file

from physverify.commands.sandbox import run as sandbox
from physverify.isolation import privatetmp

PROJECT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
SMALL = ["--pids", "64", "--memory", "1g"]  # the machine is shared: the limits stay low


def _claim(folder: Path, name: str, body: str) -> Path:
    """tests/commands/test_sandbox.py's probe claim, with ``signal`` imported too."""
    return claim_file(folder, name, body, imports="import signal")


def _physverify(cwd: Path, *args: str, env: dict[str, str] | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "physverify", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


def _in_sandbox(cwd: Path, *args: str, env: dict[str, str] | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return _physverify(cwd, "sandbox", "--backend", "bwrap", *SMALL, "--", *args, env=env, timeout=timeout)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed git repository with a claims folder holding one harmless claim."""
    root = tmp_path / "repo"
    (root / "claims").mkdir(parents=True)
    git_repo = init_repo(root)
    _claim(root / "claims", "writer.py", "return Result(PASS, 'ran')\n")
    git_repo.index.add(["claims/writer.py"])
    git_repo.index.commit("claims")
    return root


def _hostile_claim(root: Path, inside_path: str) -> None:
    """A claim that writes an executable hook into ``inside_path`` (where the ledger is bound)."""
    _claim(root / "claims", "writer.py", f"""\
        try:
            with open({inside_path!r}, "a") as handle:
                handle.write("#!/bin/sh\\ntouch pwned\\n")
        except OSError as exc:
            return Result(PASS, f"not written: {{exc}}")
        return Result(FAIL, "wrote {inside_path}")
        """)


def _one_line_refusal(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("physverify:")]
    assert len(errors) == 1, done.stderr
    for word in words:
        assert word in errors[0], errors[0]


# --- item 1: no writable bind chosen by the repository ------------------------------------
@needs_bwrap
@pytest.mark.parametrize("chosen", ["../.git/hooks/post-checkout", "../.git/config", "../outside.jsonl"])
def test_a_physverify_yaml_ledger_outside_the_claims_folder_is_refused_and_nothing_is_created(
    repo: Path, chosen: str
) -> None:
    (repo / "claims" / "physverify.yaml").write_text(f"ledger: {chosen}\n")
    _hostile_claim(repo, "/repo/claims/" + chosen)
    config_before = (repo / ".git" / "config").read_bytes()
    done = _in_sandbox(repo, "replay", "claims")
    _one_line_refusal(done, "physverify.yaml", "ledger")
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert not (repo / "outside.jsonl").exists()
    assert (repo / ".git" / "config").read_bytes() == config_before


@needs_bwrap
def test_a_committed_symlink_as_the_ledger_is_refused_and_its_target_is_untouched(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "host_file.txt"
    target.write_text("the caller's own file\n")
    (repo / "claims" / "confirm_ledger.jsonl").symlink_to(target)
    _hostile_claim(repo, "/repo/claims/confirm_ledger.jsonl")
    done = _in_sandbox(repo, "replay", "claims")
    _one_line_refusal(done, "confirm_ledger.jsonl", "symbolic link")
    assert target.read_text() == "the caller's own file\n"


@needs_bwrap
def test_a_symlinked_claims_folder_cannot_carry_the_default_ledger_into_git(repo: Path) -> None:
    (repo / "evil").symlink_to(repo / ".git" / "hooks")
    _claim(repo / ".git" / "hooks", "c.py", "return Result(PASS, 'ran')")
    done = _in_sandbox(repo, "replay", "evil")
    _one_line_refusal(done, "symbolic link")
    assert not (repo / ".git" / "hooks" / "confirm_ledger.jsonl").exists()


@needs_bwrap
def test_a_ledger_the_caller_names_through_a_symlink_in_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    (repo / "hooks").symlink_to(repo / ".git" / "hooks")
    done = _in_sandbox(repo, "replay", "claims", "--ledger", "hooks/post-checkout")
    _one_line_refusal(done, "hooks", "symbolic link")
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()


@needs_bwrap
def test_a_ledger_the_caller_names_inside_git_is_refused(repo: Path) -> None:
    done = _in_sandbox(repo, "replay", "claims", "--ledger", ".git/hooks/post-checkout")
    _one_line_refusal(done, ".git")
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()


@needs_bwrap
def test_a_physverify_yaml_ledger_inside_the_claims_folder_is_used(repo: Path) -> None:
    (repo / "claims" / "physverify.yaml").write_text("ledger: history.jsonl\n")
    done = _in_sandbox(repo, "replay", "claims")
    assert done.returncode == 0, done.stderr
    assert json.loads((repo / "claims" / "history.jsonl").read_text())["verdict"] == "rejected"
    assert not (repo / "claims" / "confirm_ledger.jsonl").exists()


# --- item 2: no secret of the caller inside -----------------------------------------------
_ENVIRON_PROBE = """\
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                names = [v.split(b"=", 1)[0].decode() for v in handle.read().split(b"\\0") if v]
        except OSError:
            continue
        found += [f"{entry}:{n}" for n in names if n in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY")]
    return Result(FAIL, "seen: " + " ".join(found)) if found else Result(PASS, "no token in any /proc/*/environ")
    """


@needs_bwrap
def test_no_process_inside_holds_the_callers_tokens_in_its_environment(repo: Path) -> None:
    secret = uuid.uuid4().hex
    env = {**os.environ, "GITHUB_TOKEN": f"ghp_{secret}", "AWS_SECRET_ACCESS_KEY": secret}
    env.pop("PHYSVERIFY_REPO", None)
    claim = _claim(repo, "environ.py", _ENVIRON_PROBE)
    outside = _physverify(repo, "confirm", claim.name, "--trusted", "--json", "-", env=env)
    assert json.loads(outside.stdout)["verdict"] == "confirmed", outside.stderr  # the probe sees them outside
    inside = _in_sandbox(repo, "confirm", claim.name, "--json", "-", env=env)
    record = json.loads(inside.stdout)
    assert record["verdict"] == "rejected", record["checks"]
    assert secret not in inside.stdout + inside.stderr


def test_every_backend_starts_with_only_the_variables_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/docker.sock")
    for backend in sandbox.BACKENDS:
        env = sandbox.backend_env(backend)
        assert "GITHUB_TOKEN" not in env and "PATH" in env, backend
    assert sandbox.backend_env("docker")["DOCKER_HOST"] == "unix:///run/docker.sock"
    assert "DOCKER_HOST" not in sandbox.backend_env("bwrap")


# --- item 5: an outer limit for replay, from outside ----------------------------------------
# The claim's ancestors inside the sandbox, read before any is signalled: physverify, and in
# fork mode the fork server between it and the claim. Pid 1 is bwrap's init, which ignores
# signals from inside its namespace. They are signalled outermost first: the claim's own parent
# (its supervisor) dying sends the claim PR_SET_PDEATHSIG at once, so signalling nearest first
# let the claim die before it reached physverify about one run in three.
_EVERY_ANCESTOR = """\
chain, pid = [], os.getpid()
while True:
    pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
    if pid <= 1:
        break
    chain.append(pid)
for pid in reversed(chain):
    os.kill(pid, signal.{sig})
"""


@needs_bwrap
@pytest.mark.slow
def test_a_claim_that_stops_its_parent_cannot_hang_a_sandboxed_replay(repo: Path) -> None:
    _claim(repo / "claims", "writer.py", _EVERY_ANCESTOR.format(sig="SIGSTOP") + "time.sleep(600)\n")
    # The outer limit given, 15 s: the limit a replay computes for itself (tested below) is
    # 77 s here, ended by the same mechanism; waiting it out showed nothing more.
    done = _physverify(repo, "sandbox", "--backend", "bwrap", *SMALL, "--timeout", "15", "--", "replay", "claims",
                       "--jobs", "1", "--timeout", "2", timeout=600)
    if privatetmp.landlock_abi() >= 6:  # each claim's Landlock domain: its signals reach no process outside it
        assert done.returncode in (1, 2) and "Operation not permitted" in done.stdout + done.stderr, done.stderr
        assert not [line for line in done.stderr.splitlines() if line.startswith("physverify:")], done.stderr
    else:
        _one_line_refusal(done, "did not finish within")
    assert "writer.py" not in _command_lines()


def test_the_outer_limit_of_a_replay_grows_with_the_claims_and_shrinks_with_the_jobs(repo: Path) -> None:
    for n in range(5):
        _claim(repo / "claims", f"c{n}.py", "return Result(PASS, 'ran')")
    limit = sandbox.outer_limit(sandbox.Inner(("replay", "claims"), "replay", folders=("claims",),
                                              timeout="10", jobs="2"), cwd=repo, repo=repo)
    # six claims in three rounds of two, each its own timeout plus a grace, plus the run's grace
    assert limit == 3 * (10 + sandbox.CLAIM_GRACE_S) + sandbox.GRACE_S
    (repo / "claims" / "physverify.yaml").write_text("timeout: 20\njobs: 6\n")
    limit = sandbox.outer_limit(sandbox.Inner(("replay", "claims"), "replay", folders=("claims",)), cwd=repo, repo=repo)
    assert limit == 1 * (20 + sandbox.CLAIM_GRACE_S) + sandbox.GRACE_S


def _command_lines() -> str:
    text = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                text.append((entry / "cmdline").read_bytes().decode(errors="replace"))
        except OSError:
            continue
    return "\n".join(text)


# --- item 21: physverify killed inside ------------------------------------------------------
@needs_bwrap
def test_a_claim_that_kills_physverify_inside_gives_one_line_and_exit_2(repo: Path) -> None:
    claim = _claim(repo, "killer.py", _EVERY_ANCESTOR.format(sig="SIGKILL") + "time.sleep(60)\n")
    done = _in_sandbox(repo, "confirm", claim.name)
    if privatetmp.landlock_abi() >= 6:  # refused: physverify lives and gives the claim its verdict, no exit 137
        assert done.returncode == 2 and "PermissionError" in done.stderr and "137" not in done.stderr, done.stderr
        assert "not decidable" in done.stdout, done.stdout
    else:
        _one_line_refusal(done, "137")


# --- issue 10: the inner command is parsed by cli.py, exactly ---------------------------------
@pytest.mark.parametrize("module", ["run.py", "plan.py"])
def test_sandbox_does_not_import_the_command_line(module: str) -> None:
    tree = ast.parse((PROJECT / "src" / "physverify" / "commands" / "sandbox" / module).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "physverify.commands.cli" not in imported
    assert not any(isinstance(n, ast.ImportFrom) and n.module == "physverify.commands" and
                   any(a.name == "cli" for a in n.names) for n in ast.walk(tree))


@pytest.mark.parametrize("inner", [["confirm", "c.py", "--led", "x.jsonl"], ["replay", "claims", "--out", "r.txt"],
                                   ["replay", "claims", "--ledg=x.jsonl"]])
def test_an_abbreviated_option_of_the_inner_command_is_a_usage_error(repo: Path, inner: list[str]) -> None:
    done = _physverify(repo, "sandbox", "--backend", "bwrap", "--", *inner)
    assert done.returncode == 2
    assert "unrecognized arguments" in done.stderr, done.stderr
    assert not list(repo.glob("*.jsonl")) and not (repo / "r.txt").exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_the_sandbox_timeout_is_validated_like_every_other_timeout(repo: Path, value: str) -> None:
    done = _physverify(repo, "sandbox", "--backend", "bwrap", "--timeout", value, "--", "confirm", "c.py")
    assert done.returncode == 2
    assert done.stderr.startswith("physverify: --timeout must be a"), done.stderr


@needs_bwrap
def test_a_symlinked_physverify_yaml_is_not_read_on_the_host(repo: Path, tmp_path: Path) -> None:
    host_yaml = tmp_path / "hosts.yml"
    host_yaml.write_text("oauth_token: gho_secret_value\n")  # a YAML file of the caller's, such as gh's
    (repo / "claims" / "physverify.yaml").symlink_to(host_yaml)
    for args in (("replay", "claims"), ("replay", "claims", "--ledger", "ledger.jsonl")):
        done = _in_sandbox(repo, *args)
        _one_line_refusal(done, "physverify.yaml", "symbolic link")
        assert "oauth_token" not in done.stdout + done.stderr


def test_a_ledger_with_another_hard_link_is_refused(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "host_file.txt"
    elsewhere.write_text("the caller's own file\n")
    os.link(elsewhere, repo / "claims" / "confirm_ledger.jsonl")
    with pytest.raises(sandbox.UsageError, match="other hard links"):
        sandbox.make_plan(sandbox.Inner(("replay", "claims"), "replay", folders=("claims",)), repo=repo, cwd=repo)


# --- issue 17: the variant reaches the child with the repository read-only ----------------------
@needs_bwrap
@pytest.mark.parametrize("mode", ["fork", "fresh"])
def test_a_claim_that_names_its_fix_runs_both_sides_in_the_read_only_sandbox(repo: Path, mode: str) -> None:
    from support.fix_claims import BURGERS_DEFECT, BURGERS_IDENTITY_CHECKS, burgers_claim

    (repo / "burgers.py").write_text(BURGERS_DEFECT)
    (repo / "claim_burgers.py").write_text(burgers_claim(BURGERS_IDENTITY_CHECKS))
    before = {path: path.read_bytes() for path in repo.rglob("*") if path.is_file() and ".git" not in path.parts}
    done = _in_sandbox(repo, "confirm", "claim_burgers.py", "--isolation", mode, "--json", "-")
    record = json.loads(done.stdout)
    assert record["verdict"] == "confirmed", record["reason"] + done.stderr
    assert [c["status"] for c in record["variant"]["checks"]] == ["EXACT"]
    after = {path: path.read_bytes() for path in repo.rglob("*") if path.is_file() and ".git" not in path.parts}
    assert {path: data for path, data in after.items() if path.suffix != ".jsonl"} == before


# --- host-side git reads a received .git/config (issue 21, item 7) --------------------------
def _hostile_git_config(root: Path, markers: Path) -> dict[str, Path]:
    """A .git/config and .gitattributes whose commands would each leave a marker file on the host.

    core.fsmonitor runs on every index refresh; the filter's clean command when git hashes a
    file whose stat changed; the rest when a diff shows content. A tracked file is touched so
    that git has to look at it.
    """
    made = {name: markers / name for name in ("fsmonitor", "clean", "textconv", "external", "command", "hook")}
    for name, path in made.items():
        (markers / f"{name}.sh").write_text(f'#!/bin/sh\ntouch "{path}"\ncat\n')
        (markers / f"{name}.sh").chmod(0o755)
    hooks = root / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "pre-commit", "reference-transaction"):
        (hooks / hook).write_text(f'#!/bin/sh\ntouch "{made["hook"]}"\n')
        (hooks / hook).chmod(0o755)
    with open(root / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f'[core]\n\tfsmonitor = {markers / "fsmonitor.sh"}\n\thooksPath = {hooks}\n'
                     f'[diff]\n\texternal = {markers / "external.sh"}\n'
                     f'[filter "evil"]\n\tclean = {markers / "clean.sh"}\n\tsmudge = {markers / "clean.sh"}\n'
                     f'[diff "evil"]\n\ttextconv = {markers / "textconv.sh"}\n\tcommand = {markers / "command.sh"}\n')
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    return made


def _touch_tracked(root: Path) -> None:
    claim = root / "claims" / "writer.py"
    claim.write_text(claim.read_text() + "# edited\n")  # stat and content differ from the index: git must look


def test_the_hostile_git_config_really_runs_commands_when_git_is_asked_as_usual(repo: Path, tmp_path: Path) -> None:
    """The probe works: the ordinary dirty check (trusted repositories) runs the fsmonitor hook and the clean filter."""
    from physverify.gate import repo as repository

    markers = tmp_path / "markers"
    markers.mkdir()
    made = _hostile_git_config(repo, markers)
    _touch_tracked(repo)
    assert repository.commit(repo) is not None
    assert made["fsmonitor"].exists() and made["clean"].exists()


def test_the_sandboxs_commit_lookup_runs_nothing_the_repository_configured(repo: Path, tmp_path: Path) -> None:
    from physverify.gate import repo as repository
    from physverify.commands.sandbox.plan import Inner, make_plan

    markers = tmp_path / "markers"
    markers.mkdir()
    made = _hostile_git_config(repo, markers)
    head = repository.open_repo(repo).head.commit.hexsha  # type: ignore[union-attr]
    assert repository.commit(repo, untrusted=True) == head  # a clean tree is clean
    _touch_tracked(repo)
    plan = make_plan(Inner(("replay", "claims"), "replay", folders=("claims",)), repo=repo, cwd=repo)
    assert plan.commit == f"{head}-dirty"  # the edit is still seen
    assert not [name for name, path in made.items() if path.exists()]


@needs_bwrap
def test_physverify_sandbox_runs_no_fsmonitor_command_on_the_host(repo: Path, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    made = _hostile_git_config(repo, markers)
    _touch_tracked(repo)
    done = _in_sandbox(repo, "replay", "claims", "--jobs", "1")
    assert "Traceback" not in done.stderr, done.stderr
    assert not [name for name, path in made.items() if path.exists()], done.stderr


def _hostile_partial_clone(root: Path, markers: Path) -> Path:
    """A received .git that says it is a partial clone and lacks HEAD's tree: git fetches what is missing.

    The promisor remote is a real local repository; its upload-pack command, which git runs
    through the shell for the fetch, leaves a marker on the host first.
    """
    upstream = init_repo(markers / "upstream")
    upstream.index.commit("upstream")
    tree = git.Repo(root).head.commit.tree.hexsha
    (root / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    made = markers / "upload-pack"
    with open(root / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f'[extensions]\n\tpartialClone = origin\n[remote "origin"]\n\tpromisor = true\n'
                     f'\turl = {upstream.working_tree_dir}\n\tuploadpack = touch "{made}"; git-upload-pack\n')
    git.Repo(root).git.config("core.repositoryformatversion", "1")
    return made


def test_the_hostile_partial_clone_really_runs_its_upload_pack_when_git_is_asked_as_usual(
        repo: Path, tmp_path: Path) -> None:
    """The probe works: the ordinary dirty check (trusted repositories) fetches HEAD's tree through it."""
    from physverify.gate import repo as repository

    made = _hostile_partial_clone(repo, tmp_path)
    repository.commit(repo)
    assert made.exists()


def test_the_sandboxs_commit_lookup_fetches_nothing_for_a_received_partial_clone(repo: Path, tmp_path: Path) -> None:
    from physverify.commands.sandbox.plan import Inner, make_plan

    made = _hostile_partial_clone(repo, tmp_path)
    plan = make_plan(Inner(("replay", "claims"), "replay", folders=("claims",)), repo=repo, cwd=repo)
    assert plan.commit is None  # HEAD's tree is not there: the state is unknown
    assert not made.exists()


@needs_bwrap
def test_physverify_sandbox_runs_no_upload_pack_of_a_received_partial_clone_on_the_host(
        repo: Path, tmp_path: Path) -> None:
    made = _hostile_partial_clone(repo, tmp_path)
    _in_sandbox(repo, "replay", "claims", "--jobs", "1")
    assert not made.exists()
