"""Hostile repository text at the outputs the other security tests left open (issue 13).

- The GitHub runner reads its legacy command form ``##[name]data`` anywhere in a log line
  (actions/runner, ActionCommand.TryParse looks for the prefix with IndexOf, and
  ActionCommandManager falls back to it whenever a line is no ``::`` command). A label
  printed in the middle of physverify's own line, in the text report, a JSON document on
  stdout or the Action's shard line, was therefore a workflow command there;
  ``##[stop-commands]TOKEN`` switches off every later command of the step.
- The ledger is a committed file that reviewers read in a diff: U+2028, NEL and the bidi
  marks were written raw into its lines, so ``str.splitlines`` split one record in two and
  a U+202E reordered how the verdict after it reads.
- SARIF's artifactLocation.uri was the repository's path as it is: a "#" or "?" cut it,
  "%2e%2e" read back as "..", and a CLAIM["file"] of "https://..." was an absolute URI
  (one that code scanning's upload refuses: "unrecognized SARIF location URI scheme").
- ``physverify sandbox`` gave the run its own stdout and stderr: code under test that wrote
  to the inner physverify's streams (/proc/PID/fd/1) reached the terminal byte for byte.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from support.fixtures import DECAY_CLAIM
from support.hostile import claims_repo
from test_action import _run_locally, make_workspace

import physverify
from physverify.verdict import EXIT_FINDING

LEGACY = "##["
# Each would be read by the runner from the middle of a line; then line breaks for
# str.splitlines (U+2028, NEL), a right-to-left override and a C1 CSI that json.dumps keeps raw.
PAYLOAD = "##[error]injected ##[stop-commands]tok ###[warning]x \u2028 \x85 \u202e \x9b31m end"
RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _hostile_claim(text: str = PAYLOAD) -> str:
    """DECAY_CLAIM with ``text`` in CLAIM's text, the check's label and its message."""
    return (DECAY_CLAIM.replace('"amount() uses half the decay rate"', repr(text))
            .replace('"at t = 1 the amount follows exp(-rate t)"', repr(text + " label"))
            .replace('f"{got:.6g} against {want:.6g}"', f'{text!r} + f" {{got:.6g}}"'))


def _repo(tmp_path: Path, claims: dict[str, str]) -> Path:
    """The committed repository (support.hostile.claims_repo) holding ``claims``."""
    return claims_repo(tmp_path, claims).parent


def _physverify(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "physverify", *args], cwd=root, capture_output=True, text=True,
                          encoding="utf-8", stdin=subprocess.DEVNULL, timeout=300, check=False)


def test_confirm_prints_no_legacy_command_and_its_ledger_keeps_one_line_per_record(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"claim_decay.py": _hostile_claim()})
    shown = _physverify(root, "confirm", "claims/claim_decay.py", "--trusted")
    as_json = _physverify(root, "confirm", "claims/claim_decay.py", "--trusted", "--json", "-")
    for done in (shown, as_json):
        assert done.returncode == EXIT_FINDING, done.stderr
        assert LEGACY not in done.stdout + done.stderr
    assert "check FAIL #\\x23[error]injected #\\x23[stop-commands]tok ##\\x23[warning]x" in shown.stdout
    assert json.loads(as_json.stdout)["text"] == PAYLOAD  # the JSON reads back to the text exactly

    text = (root / "confirm_ledger.jsonl").read_text(encoding="utf-8")
    assert LEGACY not in text and RAW.search(text) is None
    lines = text.splitlines()  # every separator Python knows: each record is still one line
    assert len(lines) == 2 and len(text.split("\n")) == 3
    for line in lines:
        record = json.loads(line)
        assert record["text"] == PAYLOAD and record["checks"][0]["label"] == PAYLOAD + " label"


def test_replay_text_and_json_on_stdout_hold_no_legacy_command(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"claim_decay.py": _hostile_claim()})
    outputs = {}
    for fmt in ("text", "json", "junit", "github"):  # each a format a CI step may print to its log
        done = _physverify(root, "replay", "claims", "--trusted", "--jobs", "1", "--format", fmt)
        assert done.returncode == 0, (fmt, done.stderr)
        assert LEGACY not in done.stdout + done.stderr, fmt
        outputs[fmt] = done.stdout
    assert json.loads(outputs["json"])["claims"][0]["text"] == PAYLOAD


# --- SARIF locations ---------------------------------------------------------------------
SARIF_TARGETS = {
    "claim_url.py": "https://evil.example/x?y=1#frag",
    "claim_script.py": "javascript:alert(1)",
    "claim_dots.py": "src/a b#c/%2e%2e/%2e%2e/d?.py",
    "claim_unicode.py": "données/∂u.py",
}


def test_sarif_locations_are_relative_uri_references_that_decode_to_the_claimed_path(tmp_path: Path) -> None:
    claims = {name: DECAY_CLAIM.replace('"file": "decay.py"', f'"file": {target!r}')
              for name, target in SARIF_TARGETS.items()}
    root = _repo(tmp_path, claims)
    done = _physverify(root, "replay", "claims", "--trusted", "--jobs", "1", "--format", "sarif")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["runs"][0]["results"]
    by_claim = {r["properties"]["claim"].removeprefix("claims/"): r["locations"][0]["physicalLocation"]
                for r in results}
    assert set(by_claim) == set(SARIF_TARGETS)
    for name, physical in by_claim.items():
        uri = physical["artifactLocation"]["uri"]
        parts = urlsplit(uri)
        assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", ""), uri
        assert uri.isascii() and unquote(parts.path) == SARIF_TARGETS[name], uri
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"


# --- the Action ----------------------------------------------------------------------------
@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """tests/commands/test_action.py's checkout: a committed claim, then its defect put back (a regression)."""
    return make_workspace(tmp_path, monkeypatch)


def test_a_shards_log_line_shows_a_ledger_path_that_holds_a_legacy_command(workspace: tuple[Path, str],
                                                                         tmp_path: Path) -> None:
    """The shard job's one line named the ledger physverify.yaml chose, raw, in the runner's log."""
    root, recorded = workspace
    folder = root / "claims" / "##[error]injected"
    folder.mkdir()
    (root / "claims" / "physverify.yaml").write_text(f"ledger: {json.dumps(folder.name + '/ledger.jsonl')}\n")
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1", "shard": "1/1"})
    assert ran["code"] in (0, 1), ran["stdout"] + ran["stderr"]
    assert "physverify replay, shard 1/1:" in ran["stdout"]
    assert "#\\x23[error]injected/ledger.jsonl" in ran["stdout"]
    assert LEGACY not in ran["stdout"] + ran["stderr"]


# --- physverify sandbox on a terminal ------------------------------------------------------
needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
# Module-level lines of a claim: write to every stream of every process it can see, the inner physverify's among them.
SPRAY = (
    "import os as _os\n"
    "for _p in _os.listdir('/proc'):\n"
    "    for _fd in ('1', '2'):\n"
    "        try:\n"
    "            with open(f'/proc/{_p}/fd/{_fd}', 'w') as _h:\n"
    "                _h.write('\\x1b]52;c;aGk=\\x07\\x1b[2J sprayed \\u202e ##[error]injected\\x9b31m\\n')\n"
    "        except OSError:\n"
    "            pass\n"
)


@needs_bwrap
def test_what_sandboxed_code_writes_to_the_inner_streams_reaches_the_terminal_shown(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"claim_decay.py": SPRAY + DECAY_CLAIM})
    # The interpreter inside imports the physverify under test: a link in the repository's root (python -m puts
    # the working folder first on sys.path) to this process's package, which the sandbox binds read-only.
    (root / "physverify").symlink_to(Path(physverify.__file__).resolve().parent)
    done = subprocess.run([sys.executable, "-m", "physverify", "sandbox", "--", "confirm", "claims/claim_decay.py"],
                          cwd=root, capture_output=True, stdin=subprocess.DEVNULL, timeout=300, check=False)
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == EXIT_FINDING, out + err
    assert out.count("confirmed (impact: used)") == 1
    if "share one /tmp" in err:  # no namespace of its own (isolation/privatetmp.py): it reached the inner streams
        assert "\\x1b]52;c;aGk=\\x07\\x1b[2J sprayed \\u202e #\\x23[error]injected\\x9b31m" in out + err  # shown
    else:  # in a user namespace of its own, it opens no other process's /proc/PID/fd: nothing was written
        assert "sprayed" not in out + err
    assert RAW.search(out + err) is None and "\x1b" not in out + err and LEGACY not in out + err
    assert "physverify sandbox (bwrap): memory:" in err  # the sandbox's own notes still on stderr
