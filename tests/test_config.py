"""physverify.yaml (config.py): every setting, and a clear exit-2 error for every mistake."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from physverify.config import DEFAULT_FAIL_ON, FIXED, REGRESSED, load_config
from physverify.errors import ConfigError
from physverify.verdict import EXIT_ERROR


def write(folder: Path, text: str) -> Path:
    (folder / "physverify.yaml").write_text(text)
    return folder


def test_a_folder_without_physverify_yaml_gets_the_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.path is None and config.fail_on == DEFAULT_FAIL_ON and config.expect == {}


def test_every_setting_is_read_and_resolved_against_the_claims_folder(tmp_path: Path) -> None:
    (tmp_path / "rk4_claim.py").write_text("CLAIM = {}\n")
    config = load_config(write(tmp_path, """
timeout: 30
jobs: 3
ledger: ../ledger.jsonl
fail_on: [regressed, fixed]
exclude: ["slow_*.py"]
expect:
  rk4_claim.py: rejected
"""))
    assert (config.timeout, config.jobs, config.exclude) == (30.0, 3, ("slow_*.py",))
    assert config.ledger == tmp_path / "../ledger.jsonl"
    assert config.fail_on == frozenset({REGRESSED, FIXED})
    assert config.expect == {(tmp_path / "rk4_claim.py").resolve(): "rejected"}


def test_an_empty_file_means_the_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing set yet\n")).fail_on == DEFAULT_FAIL_ON


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timout: 5\n", "unknown key 'timout' (known: timeout, jobs, ledger, fail_on, exclude, expect, isolation, preload)"),
        ("timeout: fast\n", "timeout must be a positive number of seconds, not 'fast'"),
        ("timeout: 0\n", "timeout must be a positive number of seconds"),
        ("timeout: yes\n", "timeout must be a positive number of seconds, not True"),
        ("jobs: 1.5\n", "jobs must be a whole number of at least 1"),
        ("jobs: 0\n", "jobs must be a whole number of at least 1"),
        ("ledger: 3\n", "ledger must be a file path"),
        ("fail_on: regressed\n", "fail_on must be a list of strings"),
        ("fail_on: [regresed]\n", "fail_on: unknown transition 'regresed' (known: new, unchanged, fixed"),
        ("exclude: [1]\n", "exclude must be a list of strings"),
        ("expect: [a.py]\n", "expect must be a mapping"),
        ("expect:\n  a.py: confirmd\n", "expect: 'a.py': 'confirmd' is not a verdict (known: confirmed, rejected"),
        ("expect:\n  missing.py: rejected\n", "expect: 'missing.py' is not a file"),
        ("- a\n- b\n", "must be a mapping of settings"),
        ("timeout: [\n", "is not valid YAML"),
    ],
)
def test_each_mistake_is_a_config_error_naming_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "a.py").write_text("CLAIM = {}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text))
    assert str(raised.value).startswith(str(tmp_path / "physverify.yaml"))
    assert message in str(raised.value)


def test_the_command_line_exits_two_on_a_config_typo(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    write(claims, "fail_on: [regresed]\n")
    out = subprocess.run([sys.executable, "-m", "physverify", "replay", "claims", "--trusted"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == EXIT_ERROR
    assert out.stderr.startswith("physverify: claims/physverify.yaml: fail_on: unknown transition 'regresed'")
