"""The Action's run step against hostile repository content (issue 13, items 1 and 3).

The step's ``run`` line is run locally in bash as the runner would (tests/commands/test_action.py:
``_run_locally``), with $GITHUB_OUTPUT read back by the runner's own rules. A line of stdout
that begins with ``::`` is a workflow command: only physverify may write one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_action import _run_locally, make_workspace, parse_github_output

from physverify.commands import action

needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
OURS = ("::error file=", "::warning file=", "::notice file=", "::error::physverify", "::warning::baseline",
        "::error title=physverify", "::notice title=physverify", "::warning title=physverify")


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """tests/commands/test_action.py's checkout: a committed claim, then its defect put back (a regression)."""
    return make_workspace(tmp_path, monkeypatch)


def _commands(stdout: str) -> list[str]:
    """The lines the runner would read as workflow commands (it trims leading white space first)."""
    return [line.lstrip() for line in stdout.splitlines() if line.lstrip().startswith("::")]


# the log's groups (issue 38), each line exactly as the step writes it
GROUPS = ("::group::physverify replay: running the claims", "::group::physverify replay: each claim", "::endgroup::")


def _only_ours(stdout: str) -> None:
    for line in _commands(stdout):
        if line in GROUPS:
            continue
        assert line.startswith(OURS) and "injected" not in line.split("::", 2)[1], line
    assert "##[" not in stdout


def test_a_yaml_value_with_a_newline_cannot_emit_a_workflow_command(workspace: tuple[Path, str], tmp_path: Path) -> None:
    root, recorded = workspace
    (root / "claims" / "physverify.yaml").write_text('ledger: "nofolder\\n::warning::injected\\n/x.jsonl"\n')
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    assert ran["code"] == 2, ran["stdout"] + ran["stderr"]
    _only_ours(ran["stdout"])
    assert len([c for c in _commands(ran["stdout"]) if c not in GROUPS]) == 1
    assert "control character U+000A" in ran["stdout"]
    assert ran["outputs"] == {"gate": "error", "exit-code": "2"}


def test_an_event_value_with_a_newline_stays_inside_its_warning(workspace: tuple[Path, str], tmp_path: Path) -> None:
    root, _ = workspace
    ran = _run_locally(root, tmp_path, {"before": "c" * 40 + "\n::warning::injected"}, {"jobs": "1"})
    _only_ours(ran["stdout"])
    # not an object name, so never given to git (issue 21, item 12); the newline is shown, not obeyed
    assert f"::warning::baseline '{'c' * 40}\\n::warning::injected': the event's base is not a hexadecimal" in ran["stdout"]


@pytest.mark.parametrize("sandboxed", ["false", pytest.param("true", marks=needs_bwrap)])
def test_a_ledger_folder_named_with_newlines_cannot_rewrite_the_outputs(workspace: tuple[Path, str],
                                                                     tmp_path: Path, sandboxed: str) -> None:
    root, recorded = workspace
    folder = root / "claims" / "x\ngate=pass\nexit-code=0\n"
    folder.mkdir()
    (root / "claims" / "physverify.yaml").write_text(f"ledger: {json.dumps(folder.name + '/ledger.jsonl')}\n")
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1", "sandbox": sandboxed})
    assert ran["code"] == 2, ran["stdout"] + ran["stderr"]  # the real gate fails (regressed); it never passes
    assert ran["outputs"] == {"gate": "error", "exit-code": "2"}
    assert not (folder / "ledger.jsonl").exists()  # refused before anything was written there
    _only_ours(ran["stdout"])


@pytest.mark.parametrize("value", ["claims/x\ngate=pass\nexit-code=0", "a\r\nb", "<<EOF", "EOF\n", ""])
def test_outputs_read_back_exactly_whatever_a_value_holds(value: str) -> None:
    outputs = {"gate": "fail", "ledger": value, "exit-code": "1"}
    assert parse_github_output(action.output_lines(outputs)) == outputs


# --- sandbox: true -----------------------------------------------------------------------
@needs_bwrap
def test_the_sandboxed_step_refuses_a_repository_chosen_ledger_and_reports_none_to_upload(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    root, recorded = workspace
    (root / "claims" / "physverify.yaml").write_text("ledger: ../.git/config\n")
    config = (root / ".git" / "config").read_bytes()
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["code"] == 2, ran["stdout"] + ran["stderr"]
    assert "ledger" not in ran["outputs"]  # action.yml uploads steps.replay.outputs.ledger: nothing
    assert (root / ".git" / "config").read_bytes() == config
    assert "a file inside a .git folder is never bound writable" in ran["stdout"]


@needs_bwrap
def test_the_sandboxed_step_reads_no_physverify_yaml_through_a_link(workspace: tuple[Path, str],
                                                                   tmp_path: Path) -> None:
    root, recorded = workspace
    host_yaml = tmp_path / "hosts.yml"
    host_yaml.write_text("oauth_token: gho_secret_value\n")
    (root / "claims" / "physverify.yaml").symlink_to(host_yaml)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["code"] == 2 and "symbolic link" in ran["stdout"], ran["stdout"] + ran["stderr"]
    assert "oauth_token" not in ran["stdout"] + ran["stderr"] + ran["summary"]


def _import_the_physverify_under_test(root: Path) -> None:
    """Make the interpreter inside the sandbox import this process's physverify (a worktree's source, not the
    installed one): a link in the workspace root, first on sys.path for ``python -m``, to the package folder the
    sandbox binds read-only."""
    import physverify

    (root / "physverify").symlink_to(Path(physverify.__file__).resolve().parent)


@needs_bwrap
def test_a_sandboxed_claim_writing_workflow_commands_to_every_stdout_reaches_none(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    root, recorded = workspace
    claim = (root / "claims" / "claim_decay.py").read_text()
    spray = ('import os as _os\n'
             'for _p in _os.listdir("/proc"):\n'
             '    for _fd in ("1", "2"):\n'
             '        try:\n'
             '            with open(f"/proc/{_p}/fd/{_fd}", "w") as _h:\n'
             '                _h.write("::warning::injected\\n##[warning]injected\\n"\n'
             '                         "x ###[error]injected \\x1b]52;c;aGk=\\x07\\x1b[2J \\u202e \\x9b31m\\n")\n'
             '        except OSError:\n'
             '            pass\n')
    (root / "claims" / "claim_decay.py").write_text(spray + claim)
    _import_the_physverify_under_test(root)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["code"] in (1, 2), ran["stdout"] + ran["stderr"]
    _only_ours(ran["stdout"])
    if "share one /tmp" in ran["stdout"]:  # no namespace of its own (isolation/privatetmp.py): it reached our streams
        assert "injected" in ran["stdout"]  # it did write, and it is shown, as plain text
        # the terminal escapes (an OSC 52 clipboard write, a screen clear) and the bidi mark are shown as escapes
        assert "\\x1b]52;c;aGk=\\x07\\x1b[2J \\u202e \\x9b31m" in ran["stdout"]
    else:  # in a user namespace of its own, it opens no other process's /proc/PID/fd: nothing was written
        assert "injected" not in ran["stdout"] + ran["stderr"]
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", ran["stdout"])
    assert not any(line.lstrip().startswith("::") for line in ran["stderr"].splitlines())


def test_what_the_sandbox_printed_reaches_the_log_as_inert_lines() -> None:
    """The sandboxed run's output is the claim's: each line prefixed, every control and bidi mark shown, no "##["."""
    lines = action.neutralise("::warning::a\n  ##[error]b ###[stop-commands]t\r\x1b]52;c;aGk=\x07\x1b[2J\u2028\u202ez\x00")
    assert lines == ["sandbox| ::warning::a", "sandbox|   #\\x23[error]b ##\\x23[stop-commands]t",
                     "sandbox| \\x1b]52;c;aGk=\\x07\\x1b[2J", "sandbox| \\u202ez\\x00"]


# --- the report file is the runner's choice (issue 21, item 1) ----------------------------
def _commit_report_entry(root: Path, kind: str, victim: Path) -> None:
    """Commit ``physverify-report.html`` in the workspace as a link to ``victim``, a dangling link, or a folder."""
    import git

    entry = root / "physverify-report.html"
    if kind == "link":
        victim.write_text("the runner's own file\n")
        entry.symlink_to(victim)
    elif kind == "dangling":
        entry.symlink_to(victim)  # victim does not exist: following the link would create it
    else:
        entry.mkdir()
        (entry / "index.html").write_text("a committed folder\n")
    repo = git.Repo(root)
    repo.index.add(["physverify-report.html" if kind != "folder" else "physverify-report.html/index.html"])
    repo.index.commit(f"physverify-report.html as a {kind}")


def _report_went_where_the_runner_chose(ran: dict[str, object], tmp_path: Path) -> None:
    outputs = ran["outputs"]
    assert isinstance(outputs, dict)
    report = Path(outputs["report"])
    assert report.parent.parent == tmp_path / "runner-temp" and not report.is_symlink()
    assert "claims/claim_decay.py" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", ["link", "dangling", "folder"])
def test_a_committed_report_entry_is_never_written_through(workspace: tuple[Path, str], tmp_path: Path,
                                                           kind: str) -> None:
    root, recorded = workspace
    victim = tmp_path / "victim.txt"
    _commit_report_entry(root, kind, victim)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    assert ran["code"] == 1 and "Traceback" not in ran["stdout"] + ran["stderr"], ran["stdout"] + ran["stderr"]
    assert ran["outputs"]["gate"] == "fail" and ran["outputs"]["regressed"] == "1"
    _report_went_where_the_runner_chose(ran, tmp_path)
    if kind == "link":
        assert victim.read_text() == "the runner's own file\n"
    elif kind == "dangling":
        assert not victim.exists()
    else:
        assert (root / "physverify-report.html" / "index.html").read_text() == "a committed folder\n"


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("kind", ["link", "folder"])
def test_a_committed_report_entry_is_never_written_through_in_the_sandbox(workspace: tuple[Path, str],
                                                                          tmp_path: Path, kind: str) -> None:
    root, recorded = workspace
    victim = tmp_path / "victim.txt"
    _commit_report_entry(root, kind, victim)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"sandbox": "true", "jobs": "1"})
    assert ran["code"] == 1 and "Traceback" not in ran["stdout"] + ran["stderr"], ran["stdout"] + ran["stderr"]
    _report_went_where_the_runner_chose(ran, tmp_path)
    if kind == "link":
        assert victim.read_text() == "the runner's own file\n"
    else:
        assert (root / "physverify-report.html" / "index.html").read_text() == "a committed folder\n"


# --- the event's base sha reaches git only as an object name (issue 21, item 12) ----------
@pytest.mark.parametrize("before", ["--upload-pack=touch {marker}", "HEAD --upload-pack=touch {marker}"])
def test_an_event_base_that_is_an_option_runs_nothing(workspace: tuple[Path, str], tmp_path: Path, before: str) -> None:
    """With a remote git can reach, `git fetch origin --upload-pack=CMD` would run CMD on the runner."""
    import git

    root, recorded = workspace
    marker = tmp_path / "upload-pack-ran"
    remote = tmp_path / "remote.git"
    git.Repo.clone_from(root, remote, bare=True)
    git.Repo(root).create_remote("origin", str(remote))
    ran = _run_locally(root, tmp_path, {"before": before.format(marker=marker)}, {"jobs": "1"})
    assert not marker.exists()
    assert "the event's base is not a hexadecimal object name" in ran["stdout"], ran["stdout"] + ran["stderr"]
    assert ran["outputs"]["regressed"] == "1"  # HEAD's ledger still says rejected: the gate holds


def test_the_fetch_of_a_missing_base_passes_the_sha_after_end_of_options(workspace: tuple[Path, str],
                                                                        tmp_path: Path) -> None:
    """A hexadecimal base the checkout lacks is fetched, and found, from the remote."""
    import git

    root, recorded = workspace
    remote = tmp_path / "remote.git"
    git.Repo.clone_from(root, remote, bare=True)
    shallow = git.Repo.clone_from(f"file://{remote}", tmp_path / "shallow", depth=1)
    assert not any(c.hexsha == recorded for c in shallow.iter_commits())
    ran = _run_locally(tmp_path / "shallow", tmp_path, {"before": recorded}, {"jobs": "1"})
    assert "not in the checkout" not in ran["stdout"], ran["stdout"]
    assert ran["outputs"]["regressed"] == "1" and ran["code"] == 1
