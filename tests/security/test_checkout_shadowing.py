"""A ``physverify/`` package the repository commits never runs as physverify's own code.

Inside the sandbox the command ran as ``python -s -c ...`` in the repository, which puts the
working folder first on the path: a ``physverify/`` committed at the root ran in place of
physverify, read the seal's key from standard input and could seal any result it liked. It
now runs with ``-I``. The interpreters physverify starts for a claim ran ``-m`` in the claim's
folder, which put a ``physverify/`` (or a ``socket.py``) of the claims folder before physverify's
own child code, ahead of the claim's own namespace; they now take ``-P`` (Python 3.11 on).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, committed_project

needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")

STAND_IN = '''\
import sys


def command():
    print("STAND-IN physverify ran; key begins", sys.stdin.readline().strip()[:8])
    return 0
'''


def _project(tmp_path: Path, where: str) -> Path:
    package = "physverify" if where == "root" else "claims/physverify"
    files = {"decay.py": DECAY_SOLVER, "claims/claim_decay.py": DECAY_CLAIM,
             "claims/socket.py": 'raise SystemExit("a claims folder\'s socket.py was imported")\n',
             f"{package}/__init__.py": "", f"{package}/commands/__init__.py": "", f"{package}/commands/cli.py": STAND_IN}
    return committed_project(tmp_path / "project", files, "a claim and a stand-in physverify")


@needs_bwrap
def test_a_physverify_package_at_the_repositorys_root_does_not_run_inside_the_sandbox(tmp_path: Path) -> None:
    root = _project(tmp_path, "root")
    done = subprocess.run([sys.executable, "-I", "-m", "physverify", "sandbox", "--backend", "bwrap", "--", "replay",
                           "claims", "--dry-run"], cwd=root, capture_output=True, text=True, timeout=300)
    assert "STAND-IN" not in done.stdout + done.stderr
    assert "1 claim" in done.stderr + done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P is new in Python 3.11")
@pytest.mark.parametrize("isolation", ["fresh", "fork"])
def test_a_claims_folders_physverify_or_socket_py_is_not_the_childs_code(tmp_path: Path, isolation: str) -> None:
    root = _project(tmp_path, "claims")
    done = subprocess.run([sys.executable, "-I", "-m", "physverify", "replay", "claims", "--trusted", "--dry-run",
                           "--isolation", isolation], cwd=root, capture_output=True, text=True, timeout=300)
    assert "rejected" in done.stdout, done.stdout + done.stderr  # the honest solver: the claim is rejected
    assert "exited with code" not in done.stdout
