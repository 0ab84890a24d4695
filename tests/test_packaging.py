"""What a user installs: the base install is light (no MCP SDK) and works; the version is in one place.

The fresh-venv test builds the package from a copy of this tree (so no build/ folder is left in
it) and installs it with pip into a virtual environment without the system's site packages; pip
fetches the dependencies from the package index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.fixtures import clean_env

import physverify
from physverify.commands.cli import MCP_MISSING

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples" / "confirm"


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=clean_env(), timeout=900)


@pytest.fixture(scope="module")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding ``pip install .`` of this tree; its bin folder."""
    work = tmp_path_factory.mktemp("base-install")
    tree = work / "physverify"
    shutil.copytree(ROOT, tree, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis",
        "node_modules", ".venv"))
    _run(sys.executable, "-m", "venv", work / "venv", cwd=work).check_returncode()
    bin_folder = work / "venv" / "bin"
    installed = _run(bin_folder / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", tree, cwd=work)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return bin_folder


@pytest.mark.slow
def test_the_base_install_has_no_mcp_sdk_and_physverify_mcp_says_which_extra_in_one_line(
        base_install: Path, tmp_path: Path) -> None:
    found = _run(base_install / "python", "-c", "import importlib.util as u; print(u.find_spec('mcp'))", cwd=tmp_path)
    assert found.stdout == "None\n"
    ran = _run(base_install / "physverify", "mcp", cwd=tmp_path)
    assert (ran.returncode, ran.stdout, ran.stderr) == (2, "", f"physverify: {MCP_MISSING}\n")
    assert "pip install 'physverify[mcp]'" in MCP_MISSING


@pytest.mark.slow
def test_the_base_install_gives_its_version_confirms_and_replays(base_install: Path, tmp_path: Path) -> None:
    assert _run(base_install / "physverify", "--version", cwd=tmp_path).stdout == f"physverify {physverify.__version__}\n"
    claims = tmp_path / "claims"
    claims.mkdir()
    for name in ("claim_verlet.py", "verlet.py"):
        shutil.copy(EXAMPLES / name, claims / name)
    confirmed = _run(base_install / "physverify", "confirm", "claims/claim_verlet.py", "--trusted",
                     "--ledger", "claims/confirm_ledger.jsonl", cwd=tmp_path)
    assert confirmed.returncode == 0 and confirmed.stdout.startswith("rejected (impact: used)"), confirmed.stderr
    replayed = _run(base_install / "physverify", "replay", "claims", "--trusted", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "rejected       unchanged    claim_verlet.py" in replayed.stdout and "gate passed" in replayed.stdout


def test_the_version_is_written_once_and_citation_cff_follows_it() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'version = { attr = "physverify.__version__" }' in pyproject
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["version"] == physverify.__version__
    assert f"## {physverify.__version__} (" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    # above every release published under the name: another project's line reached 0.10
    assert tuple(int(part) for part in physverify.__version__.split(".")) > (0, 10)


def test_citation_cff_is_valid_against_the_citation_file_format_schema() -> None:
    # check-jsonschema (the test extra) ships the Citation File Format 1.2.0 schema
    ran = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.citation-file-format",
                          str(ROOT / "CITATION.cff")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
