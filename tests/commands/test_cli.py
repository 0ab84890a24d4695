"""cli.py: exit codes, one-line errors, destinations checked first, Ctrl-C and SIGTERM (issues 10 and 13)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import git
import pytest
from support.fixtures import Ran, clean_env, init_repo

from physverify.gate import replay
from physverify.verdict import ExitCode

TINY_CLAIM = '''\
from physverify import PASS, Check, Result

CLAIM = {"text": "t", "source": "s", "file": "claim_ok.py", "line": 1, "reference": "arithmetic", "impact": "used"}


def control():
    return Check("exact", "one is one", lambda: Result(PASS, "1 == 1"))


def checks():
    return [Check("exact", "two is two", lambda: Result(PASS, "2 == 2"))]
'''


@pytest.fixture()
def project(tmp_path: Path) -> git.Repo:
    """A committed repository with one quick claim, its ledger not written yet."""
    repo = init_repo(tmp_path)
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "claim_ok.py").write_text(TINY_CLAIM)
    repo.index.add(["claims/claim_ok.py"])
    repo.index.commit("a claim")
    return repo


# --- destinations are checked before anything runs (issue 13, item 15) --------------------
@pytest.mark.parametrize(("extra", "message"), [
    (["--output", "no/report.json"], "no/report.json: the --output file's folder does not exist"),
    (["--ledger", "claims"], "claims: the ledger is a folder, not a file"),
    (["--ledger", "no/l.jsonl"], "no/l.jsonl: the ledger's folder does not exist"),
])
def test_a_destination_that_cannot_be_written_is_refused_before_any_claim_runs(
    project: git.Repo, cli: Callable[..., Ran], extra: list[str], message: str
) -> None:
    root = Path(project.working_tree_dir or "")
    done = cli("replay", "claims", "--trusted", *extra, cwd=root)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"physverify: {message}\n")
    assert not (root / "claims" / "confirm_ledger.jsonl").exists()


@pytest.mark.skipif(sys.platform == "win32" or __import__("os").geteuid() == 0, reason="root may write any file")
def test_a_read_only_ledger_is_refused_before_any_claim_runs(project: git.Repo, cli: Callable[..., Ran]) -> None:
    root = Path(project.working_tree_dir or "")
    ledger = root / "claims" / "confirm_ledger.jsonl"
    ledger.write_text("")
    ledger.chmod(0o444)
    done = cli("replay", "claims", "--trusted", cwd=root)
    assert (done.returncode, done.stderr) == (2, f"physverify: {Path('claims/confirm_ledger.jsonl')}: the ledger is not writable\n")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
def test_a_ledger_on_a_read_only_mount_is_refused_before_any_claim_runs_even_for_root(project: git.Repo) -> None:
    """What the test above shows for a user, for root too (CI runs as root): the ledger bound read-only over itself."""
    root = Path(project.working_tree_dir or "")
    ledger = root / "claims" / "confirm_ledger.jsonl"
    ledger.write_text("")
    ran = root / "ran"
    (root / "claims" / "claim_ok.py").write_text(TINY_CLAIM.replace(
        "def control():", f"open({str(ran)!r}, 'w').close()\n\n\ndef control():", 1))
    command = ["bwrap", "--bind", "/", "/", "--ro-bind", str(ledger), str(ledger), "--dev", "/dev", "--proc", "/proc",
               sys.executable, "-m", "physverify", "replay", "claims", "--trusted"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=clean_env(None), timeout=120)
    if done.returncode != 2 and "bwrap" in done.stderr:
        pytest.skip(f"bubblewrap cannot bind here: {done.stderr.strip()}")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"physverify: {Path('claims/confirm_ledger.jsonl')}: the ledger is not writable\n")
    assert not ran.exists() and ledger.read_text() == ""


# --- git failures are one-line usage errors (issue 13, item 11) ---------------------------
@pytest.mark.parametrize("flag", ["--baseline", "--changed-since"])
def test_a_ref_git_cannot_resolve_is_a_one_line_usage_error(project: git.Repo, cli: Callable[..., Ran], flag: str) -> None:
    root = Path(project.working_tree_dir or "")
    done = cli("replay", "claims", "--trusted", flag, "HEAD@{999}", cwd=root)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"physverify: {flag}: 'HEAD@{{999}}' is not a commit in {root}\n"


@pytest.mark.parametrize("flag", ["--baseline", "--changed-since"])
def test_head_1_in_a_shallow_clone_is_a_usage_error_that_says_why(
    project: git.Repo, tmp_path: Path, cli: Callable[..., Ran], flag: str
) -> None:
    root = Path(project.working_tree_dir or "")
    (root / "claims" / "notes.txt").write_text("second commit\n")
    project.index.add(["claims/notes.txt"])
    project.index.commit("second")
    clone = Path(git.Repo.clone_from(f"file://{root}", tmp_path / "shallow", depth=1).working_tree_dir or "")
    done = cli("replay", "claims", "--trusted", flag, "HEAD~1", cwd=clone)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "'HEAD~1' is not a commit" in done.stderr and "shallow" in done.stderr


# --- crashes and interrupts ---------------------------------------------------------------
def test_an_unexpected_crash_is_one_line_asking_for_a_report_and_exit_3(
    project: git.Repo, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("an internal mistake")

    monkeypatch.setattr(replay, "replay", broken)
    done = cli("replay", "claims", "--trusted", cwd=Path(project.working_tree_dir or ""))
    assert done.returncode == ExitCode.CRASH == 3
    assert done.stderr.count("\n") == 1 and "please report" in done.stderr and "an internal mistake" in done.stderr


SLEEPER = textwrap.dedent('''\
    import os, subprocess, sys, time
    from pathlib import Path
    from physverify import PASS, Check, Result

    CLAIM = {"text": "t", "source": "s", "file": "x.py", "line": 1, "reference": "r", "impact": "used"}


    def _hang():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(__file__).with_suffix(".pids").write_text(f"{os.getpid()} {child.pid}")
        time.sleep(600)
        return Result(PASS, "")


    def control():
        return Check("exact", "c", lambda: Result(PASS, ""))


    def checks():
        return [Check("exact", "hangs", _hang)]
''')


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_replay_stopped_by_a_signal_kills_every_running_claim_and_exits_in_one_line(
    tmp_path: Path, sig: int, code: int, said: str
) -> None:
    (tmp_path / "claims").mkdir()
    for name in ("a", "b"):
        (tmp_path / "claims" / f"claim_{name}.py").write_text(SLEEPER)
    proc = subprocess.Popen([sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "2"],
                            cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pidfiles = [tmp_path / "claims" / f"claim_{name}.pids" for name in ("a", "b")]
    while not all(p.is_file() and p.read_text() for p in pidfiles):  # both claims are running their grandchild
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (code, f"physverify: {said}\n"), out
    pids = [int(pid) for p in pidfiles for pid in p.read_text().split()]
    for _ in range(200):  # reaped by init shortly after the group was killed
        if not any(_alive(pid) for pid in pids):
            break
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)
    assert not (tmp_path / "claims" / "confirm_ledger.jsonl").exists()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
@pytest.mark.parametrize("isolation", ["fork", "fresh"])
def test_ctrl_c_on_a_one_job_replay_kills_the_running_claim_and_its_grandchild(tmp_path: Path, isolation: str) -> None:
    """With one job the main thread itself waits for the claim: the interrupted wait ends the claim's group."""
    (tmp_path / "claims").mkdir()
    for name in ("a", "b"):
        (tmp_path / "claims" / f"claim_{name}.py").write_text(SLEEPER)
    proc = subprocess.Popen(
        [sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "1", "--isolation", isolation],
        cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    first, second = (tmp_path / "claims" / f"claim_{name}.pids" for name in ("a", "b"))
    while not (first.is_file() and first.read_text()):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (130, "physverify: interrupted\n"), out
    pids = [int(pid) for pid in first.read_text().split()]
    for _ in range(200):
        if not any(_alive(pid) for pid in pids):
            break
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)
    assert not second.exists()  # the next claim never started


# --- validated values that crashed (issue 21, item 10) --------------------------------------
@pytest.mark.parametrize("isolation", ["fork", "fresh"])
def test_a_timeout_of_1e10_runs_the_claim_and_writes_its_line(
    project: git.Repo, cli: Callable[..., Ran], isolation: str
) -> None:
    root = Path(project.working_tree_dir or "")  # in this process: a crash would escape cli.main and fail the test
    done = cli("confirm", "claims/claim_ok.py", "--trusted", "--timeout", "1e10", "--isolation", isolation,
               "--ledger", "l.jsonl", cwd=root)
    assert done.returncode == 0, done.stderr
    (line,) = (root / "l.jsonl").read_text().splitlines()
    assert '"verdict": "rejected"' in line and '"timeout_s": 10000000000.0' in line


@pytest.mark.parametrize("shard", ["²/³", "1/" + "9" * 5000, "١/٢"])
def test_a_shard_that_is_no_k_of_n_is_a_usage_error(
    project: git.Repo, cli: Callable[..., Ran], shard: str
) -> None:
    done = cli("replay", "claims", "--trusted", "--shard", shard, cwd=Path(project.working_tree_dir or ""))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("physverify: --shard must be K/N")


def test_the_console_command_and_python_m_run_main_and_freeze_what_it_left(tmp_path: Path) -> None:
    """``physverify`` (pyproject's script) and ``python -m physverify`` are ``cli.command``: main's exit code, with the
    objects main left frozen out of the interpreter's exit collections (what made every command 15-30 ms slower)."""
    import tomllib

    from physverify.commands import cli

    scripts = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"physverify": "physverify.commands.cli:command"}
    probe = ("import gc, sys\nfrom physverify.commands import cli\nsys.argv = ['physverify', *sys.argv[1:]]\n"
             "try:\n    code = cli.command()\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print('frozen', gc.get_freeze_count(), file=sys.stderr)\nraise SystemExit(code)\n")
    for args, expected in ((["--version"], 0), (["replay", str(tmp_path / "nope"), "--trusted"], 2)):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=clean_env(),
                              cwd=tmp_path, check=False)
        assert done.returncode == expected, done.stderr
        assert int(done.stderr.rsplit("frozen ", 1)[1]) > 1000
    module = subprocess.run([sys.executable, "-m", "physverify", "replay", str(tmp_path / "nope"), "--trusted"],
                            capture_output=True, text=True, env=clean_env(), cwd=tmp_path, check=False)
    assert module.returncode == 2 and "no such claims folder" in module.stderr
    assert cli.command.__module__ == "physverify.commands.cli"


# Modules the command line imports after its package, each a plausible file name at a physics project's root.
_SHADOWED = ("signal", "random", "json", "argparse", "shlex", "secrets", "subprocess", "tempfile")


def test_python_m_physverify_in_a_project_with_stdlib_named_files_imports_none_of_them(project: git.Repo) -> None:
    """``python -m`` puts the working directory first on sys.path; physverify takes it off before importing its command
    line, so a project's ``signal.py`` or ``random.py`` at the root is never imported in place of the standard library's
    (it was, and the command crashed). The claim's own process still has the root on its path, by design."""
    root = Path(project.working_tree_dir or ".")
    ran = root.parent / f"{root.name}-imported.txt"
    for name in _SHADOWED:
        (root / f"{name}.py").write_text(f"import os\nwith open({str(ran)!r}, 'a') as f:\n"
                                         f"    f.write('{name} %d\\n' % os.getpid())\n")
    proc = subprocess.Popen([sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "1"],
                            cwd=root, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == ExitCode.OK, out + err
    assert "1 claim: 1 new" in out and out.startswith("rejected       new"), out
    lines = ran.read_text().splitlines() if ran.exists() else []
    assert not [line for line in lines if line.endswith(f" {proc.pid}")], lines


def test_building_the_parser_does_not_import_the_sandbox() -> None:
    """Every command builds the whole parser, the no-op hook too: the sandbox's defaults come from a module of
    their own, and they and the backends' names are the sandbox's."""
    from physverify.commands.sandbox import defaults as _sandbox_defaults, run as sandbox

    assert tuple(sandbox.BACKENDS) == _sandbox_defaults.BACKEND_NAMES
    assert (sandbox.DEFAULT_MEMORY, sandbox.DEFAULT_PIDS, sandbox.IMAGE_ENV, sandbox.DEFAULT_IMAGE, sandbox.GRACE_S) == (
        _sandbox_defaults.DEFAULT_MEMORY, _sandbox_defaults.DEFAULT_PIDS, _sandbox_defaults.IMAGE_ENV,
        _sandbox_defaults.DEFAULT_IMAGE, _sandbox_defaults.GRACE_S)
    probe = "import sys\nfrom physverify.commands import cli\ncli.build_parser()\nprint('physverify.commands.sandbox.run' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=clean_env(), check=True)
    assert done.stdout.strip() == "False"


# --- bad input from the command line: one line, exit 2, nothing written --------------------
# A name longer than any file system allows (255 bytes): the system refuses it with ENAMETOOLONG
# wherever it is first touched, which pathlib's is_dir() and exists() pass on.
LONG = "n" * 300


@pytest.mark.parametrize("args", [
    ["replay", "--trusted", LONG],
    ["replay", "--trusted", "claims", "--ledger", LONG + ".jsonl"],
    ["replay", "--trusted", "claims", "--output", LONG],
    ["confirm", "--trusted", "claims/claim_ok.py", "--ledger", LONG + ".jsonl"],
    ["confirm", "--trusted", "claims/claim_ok.py", "--json", LONG],
    ["run", LONG + ".py"],
    ["report", "--ledger", LONG],
    ["ledger", "log", "--claims", LONG],
    ["ledger", "merge", "claims/claim_ok.py", "-o", LONG],
    ["mcp", "--root", LONG],
], ids=lambda args: " ".join(a if a != LONG and not a.startswith(LONG) else "LONG" for a in args))
def test_a_name_longer_than_the_file_system_allows_is_one_line_and_exit_2(
    project: git.Repo, physverify: Callable[..., Ran], args: list[str]
) -> None:
    root = Path(project.working_tree_dir or "")
    done = physverify(*args, cwd=root)
    assert done.returncode == ExitCode.ERROR, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and "bug" not in done.stderr, done.stderr
    assert done.stderr.startswith("physverify: ") and "File name too long" in done.stderr, done.stderr
    assert len(done.stderr) < 200  # the name is shown cut in the middle, not whole
    assert not (root / "claims" / "confirm_ledger.jsonl").exists()


def test_confirm_records_a_claim_path_longer_than_the_file_system_allows_as_a_load_error(
    project: git.Repo, physverify: Callable[..., Ran]
) -> None:
    """Spec section 3: a claim file that cannot be read is still one ledger line, without CLAIM fields."""
    root = Path(project.working_tree_dir or "")
    done = physverify("confirm", "--trusted", LONG + ".py", "--ledger", "l.jsonl", cwd=root)
    assert done.returncode == ExitCode.ERROR and done.stderr == "", done.stderr
    assert done.stdout.startswith("not decidable: ") and "cannot be read: File name too long" in done.stdout
    (line,) = (root / "l.jsonl").read_text().splitlines()
    assert '"verdict": "not decidable"' in line and '"claim_sha256": null' in line


@pytest.mark.parametrize("command", [["ledger", "log"], ["ledger", "show", "claims/claim_ok.py"]])
def test_a_ledger_named_with_ledger_that_does_not_exist_is_an_error_not_an_empty_history(
    project: git.Repo, cli: Callable[..., Ran], command: list[str]
) -> None:
    """A typo in --ledger printed "No ledger lines" and exit 0 (report and merge already refused it)."""
    done = cli(*command, "--ledger", "claims/confirm_ledgr.jsonl", cwd=Path(project.working_tree_dir or ""))
    assert (done.returncode, done.stdout) == (ExitCode.ERROR, "")
    assert done.stderr == f"physverify: {Path('claims/confirm_ledgr.jsonl')}: no such ledger file\n"


def test_a_ref_of_thousands_of_characters_is_shown_shortened(project: git.Repo, cli: Callable[..., Ran]) -> None:
    done = cli("replay", "claims", "--trusted", "--baseline", "a" * 5000, cwd=Path(project.working_tree_dir or ""))
    assert done.returncode == ExitCode.ERROR and done.stderr.startswith("physverify: --baseline: 'aaa")
    assert "is not a commit" in done.stderr and len(done.stderr) < 300


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_blank_reason_for_a_dependent_reference_is_refused_and_nothing_is_written(
    project: git.Repo, cli: Callable[..., Ran], reason: str
) -> None:
    """Spec rule 1: the reason is what the ledger keeps next to the notes it overrides; a blank one keeps nothing."""
    root = Path(project.working_tree_dir or "")
    done = cli("confirm", "claims/claim_ok.py", "--trusted", "--ledger", "l.jsonl",
               "--allow-dependent-reference", reason, cwd=root)
    assert (done.returncode, done.stdout) == (ExitCode.ERROR, "")
    assert done.stderr.startswith("physverify: --allow-dependent-reference needs the reason in words")
    assert not (root / "l.jsonl").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["replay", "--shard", "-1/2"], "physverify replay: argument --shard: expected one argument (for a value that "
     "starts with '-', write --shard=VALUE) (see 'physverify replay --help')"),
    (["report", "--max-plots", "many"], "physverify report: argument --max-plots: invalid int value: 'many' "
     "(see 'physverify report --help')"),
    (["replay", "--jbos", "2"], "physverify: unrecognized arguments: --jbos (see 'physverify --help')"),
    (["confirm"], "physverify confirm: the following arguments are required: CLAIM.py (see 'physverify confirm --help')"),
], ids=["a value like a flag", "a wrong type", "a misspelled flag", "a missing argument"])
def test_a_usage_error_argparse_finds_is_one_line_naming_the_flag(
    tmp_path: Path, physverify: Callable[..., Ran], args: list[str], message: str
) -> None:
    """argparse printed its usage block (five lines for replay) before the one line that says what is wrong."""
    done = physverify(*args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (ExitCode.ERROR, "", message + "\n")


MARKING_CLAIM = TINY_CLAIM.replace(
    'def control():\n', 'def control():\n    open(__file__ + ".ran", "w").close()\n'
)


@pytest.mark.parametrize("command", ["confirm", "replay"])
@pytest.mark.parametrize("kind", ["FIFO", "device"])
def test_a_ledger_that_is_a_fifo_or_a_device_is_refused_before_the_claim_runs(
    project: git.Repo, cli: Callable[..., Ran], command: str, kind: str
) -> None:
    """The append refused it, but only after the run: minutes of a claim lost, the verdict with them."""
    root = Path(project.working_tree_dir or "")
    (root / "claims" / "claim_ok.py").write_text(MARKING_CLAIM)
    ledger = root / "special.jsonl"
    if kind == "FIFO":
        __import__("os").mkfifo(ledger)
    else:
        ledger.symlink_to("/dev/null")
    target = ["claims/claim_ok.py"] if command == "confirm" else ["claims"]
    done = cli(command, *target, "--trusted", "--ledger", "special.jsonl", cwd=root)
    what = "a FIFO" if kind == "FIFO" else "a device or socket"
    assert (done.returncode, done.stdout) == (ExitCode.ERROR, "")
    assert done.stderr == f"physverify: special.jsonl: the ledger is {what}, not a regular file\n"
    assert not (root / "claims" / "claim_ok.py.ran").exists()


# --- a new user's first steps, as docs/confirm.md shows them --------------------------
def test_confirm_init_starts_the_claims_folder_of_a_repository_that_has_none(
    tmp_path: Path, physverify: Callable[..., Ran]
) -> None:
    """docs/confirm.md's own `confirm init claims/claim_rk4.py ...` failed with "cannot be written" in a new repository."""
    init_repo(tmp_path)
    done = physverify("confirm", "init", "claims/claim_rk4.py", "--text", "the k3 stage uses the wrong slope",
                      "--file", "decay.py", "--line", "22", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (ExitCode.OK, ""), done.stderr
    assert done.stdout == ("wrote claims/claim_rk4.py: fill in source, reference and impact, then control() and "
                           "checks(); then run 'physverify confirm claims/claim_rk4.py --trusted'\n")
    assert "FILL IN" in (tmp_path / "claims" / "claim_rk4.py").read_text(encoding="utf-8")


def test_confirm_init_names_a_folder_it_cannot_create(tmp_path: Path, physverify: Callable[..., Ran]) -> None:
    (tmp_path / "claims").write_text("a file where the folder should be\n")
    done = physverify("confirm", "init", "claims/claim_rk4.py", "--text", "t", "--file", "decay.py", "--line", "2",
                      cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.ERROR, "")
    assert done.stderr == "physverify: claims/claim_rk4.py: its folder claims cannot be created: a file is in the way\n"


def test_ledger_help_names_each_of_its_actions(physverify: Callable[..., Ran], tmp_path: Path) -> None:
    """README lists `ledger log / ledger show / ledger merge`; the help named only log and merge."""
    top = " ".join(physverify("--help", cwd=tmp_path).stdout.split())
    described = " ".join(physverify("ledger", "--help", cwd=tmp_path).stdout.split())
    assert "its latest verdict (show)" in top and "'ledger show CLAIM' a claim's latest verdict" in described


def test_confirm_says_when_the_claimed_file_is_not_found(project: git.Repo, physverify: Callable[..., Ran]) -> None:
    """A typo in CLAIM["file"] (or in init's --file) only left file_sha256 null in the ledger, with no word said."""
    root = Path(project.working_tree_dir or "")
    (root / "claims" / "claim_typo.py").write_text(TINY_CLAIM.replace('"file": "claim_ok.py"', '"file": "sovler.py"'))
    typo = physverify("confirm", "claims/claim_typo.py", "--trusted", cwd=root)
    assert typo.returncode == ExitCode.OK and typo.stdout.splitlines()[-1] == (
        "  note: CLAIM['file'] 'sovler.py' was not found from the repository root or next to the claim file, so no "
        "hash of it is recorded; check the path (relative to the repository root)"), typo.stdout
    found = physverify("confirm", "claims/claim_ok.py", "--trusted", cwd=root)
    assert found.returncode == ExitCode.OK and "note:" not in found.stdout, found.stdout


# --- several reports from one run, and progress in a CI log (issue 38) ---------------------
HOSTILE = "</failure><script>alert(1)</script>]]>&amp;\x1b[31m\n::error::forged"
HOSTILE_CLAIM = TINY_CLAIM.replace('"text": "t"', f'"text": {HOSTILE!r}').replace(
    '"two is two"', f'"two is two {HOSTILE!r}"').replace('Result(PASS, "2 == 2")', f'Result(FAIL, {HOSTILE!r})').replace(
    "import PASS,", "import FAIL, PASS,")
DATA = Path(__file__).resolve().parents[1] / "data"


def test_one_replay_writes_junit_sarif_and_html_reports_that_validate_and_prints_its_usual_text(
    project: git.Repo, physverify: Callable[..., Ran]
) -> None:
    import json

    import jsonschema
    import xmlschema

    root = Path(project.working_tree_dir or "")
    (root / "claims" / "claim_hostile.py").write_text(HOSTILE_CLAIM)
    plain = physverify("replay", "claims", "--trusted", "--dry-run", cwd=root)
    (root / "out").mkdir()
    done = physverify("replay", "claims", "--trusted", "--report", "junit=out/r.xml", "--report", "sarif=out/r.sarif",
                      "--report=html=out/r.html", cwd=root)
    assert done.returncode == plain.returncode == ExitCode.OK, done.stderr
    assert done.stdout == plain.stdout.replace("0 lines written", "2 lines written")  # the terminal text as ever
    xmlschema.XMLSchema(DATA / "junit.xsd").validate(str(root / "out" / "r.xml"))
    junit = (root / "out" / "r.xml").read_text(encoding="utf-8")
    assert junit.count("<testcase ") == 2 and "\x1b" not in junit and "<script>" not in junit
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))  # the whole schema
    jsonschema.Draft4Validator.check_schema(schema)
    sarif = json.loads((root / "out" / "r.sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(sarif)
    assert sarif["runs"][0]["results"], "the hostile claim is a result: the schema saw one"
    sarif["runs"][0]["results"][0]["level"] = "fatal"  # the validation has teeth
    assert not jsonschema.Draft4Validator(schema).is_valid(sarif)
    assert any("alert(1)" in result["message"]["text"] for result in sarif["runs"][0]["results"])
    assert "\x1b" not in (root / "out" / "r.sarif").read_text(encoding="utf-8")
    page = (root / "out" / "r.html").read_text(encoding="utf-8")
    assert "alert(1)" in page and "<script>alert(1)" not in page and "\x1b" not in page


def test_the_junit_time_of_a_claim_is_its_whole_run_not_only_its_checks(
    project: git.Repo, physverify: Callable[..., Ran]
) -> None:
    """A claim whose module sleeps at import spends that time outside any check: the case's time holds it."""
    import xml.etree.ElementTree as ET

    root = Path(project.working_tree_dir or "")
    (root / "claims" / "claim_ok.py").write_text("import time\ntime.sleep(1.5)\n" + TINY_CLAIM)
    done = physverify("replay", "claims", "--trusted", "--format", "junit", cwd=root)
    case = ET.fromstring(done.stdout.encode()).find("testsuite/testcase")
    assert case is not None and float(case.get("time") or 0) >= 1.5, done.stdout


@pytest.mark.parametrize("value", ["junit", "junit=", "yaml=r.yaml", "junit=-", "sarif=r.xml"])
def test_a_report_without_a_known_format_and_a_file_of_its_own_is_a_usage_error(
    project: git.Repo, physverify: Callable[..., Ran], value: str
) -> None:
    root = Path(project.working_tree_dir or "")
    done = physverify("replay", "claims", "--trusted", "--report", "junit=r.xml", "--report", value, cwd=root)
    assert done.returncode == ExitCode.ERROR and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert "--report" in done.stderr and not (root / "claims" / "confirm_ledger.jsonl").exists()


def test_a_repeated_format_is_a_usage_error_not_the_last_one_silently(
    project: git.Repo, physverify: Callable[..., Ran]
) -> None:
    root = Path(project.working_tree_dir or "")
    done = physverify("replay", "claims", "--trusted", "--format", "json", "--format", "junit", cwd=root)
    assert done.returncode == ExitCode.ERROR and done.stdout == "", done.stderr
    assert "--format: given twice" in done.stderr and "--report" in done.stderr
    assert not (root / "claims" / "confirm_ledger.jsonl").exists()


def test_a_replay_with_its_stderr_piped_prints_counted_progress(
    project: git.Repo, physverify: Callable[..., Ran]
) -> None:
    """Outside a terminal (a CI log) a count, never each claim's line; at least the last one, when all are done."""
    root = Path(project.working_tree_dir or "")
    for n in range(3):
        (root / "claims" / f"claim_{n}.py").write_text(TINY_CLAIM)
    done = physverify("replay", "claims", "--trusted", cwd=root)
    lines = done.stderr.splitlines()
    assert done.returncode == ExitCode.OK and lines and lines[-1].startswith("[4/4] claims done ("), done.stderr
    assert all(line.startswith("[") and "/4] claims done (" in line for line in lines), done.stderr
    hook = physverify("replay", "--pre-commit", "--claims", "claims", "claims/claim_0.py", cwd=root)
    assert "claims done" not in hook.stderr, hook.stderr
