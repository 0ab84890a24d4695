"""Shared test material: a real git repository in tmp_path, and a tiny solver with a claim about it.

As pre-commit keeps its repository fixtures in one module, the integration tests (replay,
pre-commit, the Action, the MCP server, the sandbox) build their throwaway projects from here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import git

from physverify.gate.repo import LOCAL_GIT_VARS


def init_repo(path: Path) -> git.Repo:
    """A new git repository at ``path`` with a local identity, so commits work on any machine."""
    repo = git.Repo.init(path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "physverify tests")
        config.set_value("user", "email", "tests@physverify.invalid")
        config.set_value("commit", "gpgsign", "false")  # a user's global signing setting must not stop the tests
    return repo


def committed_project(root: Path, files: Mapping[str, str], message: str) -> Path:
    """A new git repository at ``root`` holding ``files`` (path relative to ``root`` -> text), all committed."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    repo = init_repo(root)
    repo.index.add(list(files))
    repo.index.commit(message)
    return root


# Exponential decay and a claim that it decays with half the rate (Krane, Introductory
# Nuclear Physics, sec. 6.1: N(t) = N0 exp(-lambda t)). DECAY_DEFECT seeds that defect.
DECAY_SOLVER = '''\
"""Exponential decay, the code under test."""
import math


def amount(y0, rate, t):
    return y0 * math.exp(-rate * t)
'''
DECAY_DEFECT = DECAY_SOLVER.replace("-rate * t", "-rate * t / 2")

DECAY_CLAIM = '''\
"""Claim: amount() decays with half the rate."""
import math

from physverify import FAIL, PASS, Check, Result

import decay

CLAIM = {
    "text": "amount() uses half the decay rate",
    "source": "a test",
    "file": "decay.py",
    "line": 6,
    "reference": "Krane, Introductory Nuclear Physics, sec. 6.1: N(t) = N0 exp(-lambda t)",
    "impact": "used",
}


def _compare(t):
    got, want = decay.amount(2.0, 0.7, t), 2.0 * math.exp(-0.7 * t)
    return Result(PASS if abs(got - want) <= 1e-12 * abs(want) else FAIL, f"{got:.6g} against {want:.6g}")


def control():
    return Check("reference", "at t = 0 nothing has decayed", lambda: _compare(0.0))


def checks():
    return [Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]
'''


# --- the command line as a process (tests/conftest.py wraps these as fixtures) -------------
SANDBOX_VARS = ("PHYSVERIFY_REPO", "PHYSVERIFY_REPO_COMMIT")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without the sandbox's and git's repository variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in SANDBOX_VARS and k not in LOCAL_GIT_VARS}
    env.update(extra or {})
    return env


class Ran(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def run_process(*args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 300) -> Ran:
    """``python -m physverify ARGS`` as a real process in ``cwd``."""
    done = subprocess.run([sys.executable, "-m", "physverify", *args], cwd=cwd, capture_output=True, text=True,
                          env=clean_env(env), timeout=timeout)
    return Ran(done.returncode, done.stdout, done.stderr)


def verdict_line(stdout: str) -> str:
    """The verdict line of ``physverify confirm``'s text: the first line not indented (the control and check lines,
    printed as the child finishes each, come before it)."""
    return next((line for line in stdout.splitlines() if not line.startswith(" ")), "")


def ledger_record(claim: str = "claims/a.py", verdict: str = "confirmed", date: str = "2026-01-01T00:00:00+00:00",
                  **extra: Any) -> dict[str, Any]:
    """A ledger line with the fields the readers look at (not every field of the schema)."""
    return {"ledger_version": 1, "date": date, "claim_file": claim, "verdict": verdict, "reason": "r", **extra}


def write_ledger(path: Path, records: list[dict[str, Any]], tail: bytes = b"") -> Path:
    """``path`` holding ``records`` as JSON lines, then ``tail`` (a torn line, say)."""
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)
    return path
