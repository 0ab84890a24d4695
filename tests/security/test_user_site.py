"""A ``.pth`` file one claim plants in the user's site-packages never runs in another claim's process (issue 37, item 2).

Python runs every ``.pth`` file of the user site at start, when the user site is on: every
system Python, ``actions/setup-python`` without a venv, a ``--system-site-packages`` venv (the
one made here). The planter claim writes ``~/.local/lib/python3.X/site-packages/zz.pth``, whose
line makes every check PASS in whatever interpreter starts after it; the victim, a real FAIL,
then came out ``rejected``. Every interpreter physverify starts for a claim or a server runs
with ``-s`` and PYTHONNOUSERSITE, and inside the sandbox each claim has a HOME of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, init_repo

import physverify

SRC = Path(physverify.__file__).resolve().parent.parent
needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")

PLANT = ('import physverify.checks as _c; _c.run_check = lambda check: __import__("physverify.checks", '
         'fromlist=["x"]).CheckOutcome(check.label, check.family, "PASS", "planted", 0.0)\n')
# Plants the line in its own user site, and in the sandbox's HOME for the claims after it.
PLANTER = f'''\
"""Plants a .pth file in the user's site-packages, then passes."""
import os, site, sys

from physverify import PASS, Check, Result

CLAIM = {{"text": "a planter", "source": "a test", "file": "decay.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}}
_VERSION = f"python{{sys.version_info[0]}}.{{sys.version_info[1]}}"
for _home in {{os.path.expanduser("~"), "/home/sandbox"}}:
    _site = os.path.join(_home, ".local", "lib", _VERSION, "site-packages")
    try:
        os.makedirs(_site, exist_ok=True)
        with open(os.path.join(_site, "zz.pth"), "w") as _handle:
            _handle.write({PLANT!r})
    except OSError:
        pass


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "always passes too", lambda: Result(PASS, "ok"))]
'''


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``--system-site-packages`` venv: its user site is on (checked), and the system's numpy is in it."""
    folder = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)], check=True)
    # the physverify under test, installed as an editable install is: a path in the venv's site-packages
    site_packages = folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site_packages / "physverify_under_test.pth").write_text(str(SRC) + "\n")
    return folder / "bin" / "python"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHYSVERIFY_", "GIT_", "PYTHON"))}
    return {**env, "HOME": str(home), "PYTHONPATH": str(SRC)}


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_DEFECT)
    (root / "claims" / "a_planter.py").write_text(PLANTER)
    (root / "claims" / "b_victim.py").write_text(DECAY_CLAIM)
    repo = init_repo(root)
    repo.index.add(["decay.py", "claims/a_planter.py", "claims/b_victim.py"])
    repo.index.commit("a planter and a victim")
    return root


def _victim(report: str) -> str:
    return next(c["verdict"] for c in json.loads(report)["claims"] if c["claim_key"].endswith("b_victim.py"))


def test_the_venv_has_its_user_site_on(venv: Path, tmp_path: Path) -> None:
    done = subprocess.run([venv, "-c", "import site; print(site.ENABLE_USER_SITE, site.getusersitepackages())"],
                          env=_env(tmp_path), capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", site_packages(tmp_path)]


def site_packages(home: Path) -> str:
    return str(home / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages")


def test_a_pth_planted_in_the_shared_home_never_runs_in_a_later_claims_process(venv: Path, tmp_path: Path) -> None:
    root, home = _project(tmp_path), tmp_path / "home"
    home.mkdir()
    done = subprocess.run([venv, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "1", "--isolation",
                           "fresh", "--dry-run", "--format", "json"], cwd=root, env=_env(home), capture_output=True,
                          text=True, timeout=300)
    assert (Path(site_packages(home)) / "zz.pth").is_file()  # it was planted, where the victim's Python would look
    assert _victim(done.stdout) == "confirmed", done.stdout + done.stderr


@needs_bwrap
def test_a_pth_planted_inside_the_sandbox_never_runs_in_a_later_claims_process(venv: Path, tmp_path: Path) -> None:
    root, home = _project(tmp_path), tmp_path / "home"
    home.mkdir()
    output = tmp_path / "report.json"
    done = subprocess.run([venv, "-m", "physverify", "sandbox", "--backend", "bwrap", "--", "replay", "claims",
                           "--jobs", "1", "--isolation", "fresh", "--format", "json", "--output", str(output)],
                          cwd=root, env=_env(home), capture_output=True, text=True, timeout=300)
    assert output.exists(), done.stdout + done.stderr
    assert _victim(output.read_text()) == "confirmed", done.stdout + done.stderr
