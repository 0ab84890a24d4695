"""The Action's own processes start outside the sandbox, in the workspace: nothing committed there may stand in for them.

A step's working directory is the workspace, the checked-out repository (a pull request's, with
``sandbox: true``). ``python -m`` puts the working directory first on sys.path, so a ``pip/`` or
``physverify/`` folder or a ``json.py`` committed at the root ran in place of the installer or of
physverify, outside the sandbox and with the job's token. Every step starts Python with ``-I``.
Each test runs the step's ``run`` script in bash in the workspace, as the runner does.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from test_action import _action, _python_shim, _run_locally, make_workspace

RECORDER = 'import sys\nwith open({mark!r}, "a") as f:\n    f.write({name!r} + " " + " ".join(sys.orig_argv) + "\\n")\n'


def _plant(root: Path, mark: Path, names: tuple[str, ...]) -> None:
    """Each name as a module (``json``) or a package (``physverify/``) at the root that records who imported it."""
    for name in names:
        if name.endswith("/"):
            (root / name).mkdir()
            (root / name / "__init__.py").write_text(RECORDER.format(mark=str(mark), name=name))
            (root / name / "__main__.py").write_text(RECORDER.format(mark=str(mark), name=name + "__main__"))
        else:
            (root / f"{name}.py").write_text(RECORDER.format(mark=str(mark), name=name))


def _imports_by(mark: Path, command: str) -> list[str]:
    """The planted modules a process whose command line holds ``command`` imported (a claim's own process may)."""
    lines = mark.read_text().splitlines() if mark.exists() else []
    return [line for line in lines if command in line.split(" ", 1)[1]]


@pytest.mark.parametrize("planted", [("json", "dataclasses", "argparse", "typing", "tempfile"), ("physverify/",)],
                         ids=["standard-library-names", "a-physverify-package"])
def test_the_replay_step_runs_physverify_whatever_the_workspace_root_holds(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch,
                                                                             planted: tuple[str, ...]) -> None:
    root, recorded = make_workspace(tmp_path, monkeypatch)
    mark = tmp_path / "imported.txt"
    _plant(root, mark, planted)
    ran = _run_locally(root, tmp_path, {"before": recorded}, {"jobs": "1"})
    assert _imports_by(mark, "physverify.commands.action") == [], ran["stdout"] + ran["stderr"]
    # physverify's own step ran and judged: the gate fails on the claim (regressed, or not decidable where the claim's
    # own process imports the planted physverify, as a fresh interpreter in that repository would)
    assert ran["code"] == 1, ran["stdout"] + ran["stderr"]
    assert "physverify replay: gate failed" in ran["summary"], ran["summary"]
    assert ran["outputs"]["exit-code"] == "1"


def _wheel(folder: Path, name: str = "pv_entry_probe") -> Path:
    """A minimal pure-Python wheel, so the install step installs something real with no index."""
    dist = f"{name}-1.0.dist-info"
    files = {f"{name}/__init__.py": b"INSTALLED = True\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: physverify-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for path, data in files.items()) + f"{dist}/RECORD,,\n"
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in {**files, f"{dist}/RECORD": record.encode()}.items():
            archive.writestr(path, data)
    return wheel


def _install_step() -> dict[str, Any]:
    return next(step for step in _action()["runs"]["steps"] if step.get("name") == "Install physverify")


def test_the_install_step_runs_pip_whatever_the_workspace_root_holds(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    mark = tmp_path / "imported.txt"
    _plant(root, mark, ("pip/", "json", "typing"))
    target = tmp_path / "target"
    # the action's path is a wheel here, installed into a folder of the test (PIP_TARGET), never into this environment
    env = {**os.environ, "INPUT_REPORT": "false", "GITHUB_ACTION_PATH": str(_wheel(tmp_path)),
           "PIP_TARGET": str(target), "PIP_NO_INDEX": "1", "GITHUB_WORKSPACE": str(root)}
    env["PATH"] = f"{_python_shim(tmp_path)}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", _install_step()["run"]], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert _imports_by(mark, " pip ") == [], done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "pv_entry_probe" / "__init__.py").is_file(), done.stdout + done.stderr


def test_every_python_the_action_starts_is_isolated_from_the_workspace() -> None:
    """The two tests above run two steps; a step added later is held to the same rule here."""
    starts = [(step.get("name"), line.strip()) for step in _action()["runs"]["steps"]
              for line in str(step.get("run", "")).splitlines() if re.search(r"(^|[\s;&|(])python3?\s", line)]
    assert starts, "no step starts python: this test no longer looks where the action does"
    assert [start for start in starts if not re.search(r"python3?\s+-I\s", start[1])] == []
