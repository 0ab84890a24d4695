"""Every string that starts physverify by a module path starts it: ``-m`` modules, the Action, the console script.

A module that moves between subpackages keeps working only if every string naming it moves
too; an import would fail at once, a string only when that process is started. The strings
are read from where they are used (the source's ``[..., "-m", "physverify...."]`` lists,
action.yml's ``run:`` lines, pyproject.toml's scripts, the fork server's preload), never
listed here, and each is started as its caller starts it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from physverify.isolation import preload

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
_NOT_FOUND = ("No module named", "Error while finding module specification", "is a package and cannot be directly")


def _dash_m_modules() -> dict[str, str]:
    """Each module started as ``[..., "-m", "physverify.x", ...]`` or ``interpreter("physverify.x")`` in the source,
    with the file that starts it."""
    found: dict[str, str] = {}
    for file in sorted((SRC / "physverify").rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            # child.interpreter("physverify.x") is ``python -s -B -m physverify.x``
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "interpreter" and node.args \
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("physverify"):
                found[str(node.args[0].value)] = str(file.relative_to(SRC))
            if not isinstance(node, (ast.List, ast.Tuple)):
                continue
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            for flag, module in zip(values, values[1:]):
                if flag == "-m" and isinstance(module, str) and module.startswith("physverify"):
                    found[module] = str(file.relative_to(SRC))
    return found


def _action_modules() -> list[str]:
    text = (REPO / "action.yml").read_text(encoding="utf-8")
    return re.findall(r"^\s*run:\s*python\b[^\n]*?-m\s+(physverify[\w.]*)", text, flags=re.MULTILINE)


def _started(module: str) -> subprocess.CompletedProcess[str]:
    """``python -B -m module`` with no arguments and an empty stdin, in an empty folder: its own main answers."""
    return subprocess.run([sys.executable, "-B", "-m", module], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          cwd=REPO / "tests" / "data", timeout=120)


def _has_main_guard(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)


def test_the_source_starts_the_child_the_server_and_the_parse_workers_by_module() -> None:
    """The scan below sees the three `-m` children physverify starts (not an empty list passing vacuously)."""
    starters = set(_dash_m_modules().values())
    assert {"physverify/isolation/fresh.py", "physverify/isolation/forkclient.py",
            "physverify/gate/parsepool.py"} <= starters


@pytest.mark.parametrize("module", sorted(set(_dash_m_modules()) | set(_action_modules())))
def test_each_dash_m_module_starts_by_its_string(module: str) -> None:
    assert _has_main_guard(module), f"{module} has no `if __name__ == '__main__'`: -m would run nothing"
    ran = _started(module)
    assert not any(marker in ran.stderr for marker in _NOT_FOUND), ran.stderr
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    # its own main ran: it said something (a usage line, an error of its own, or a traceback in its
    # file) or, as a parse worker given no request, ended at once with 0
    assert ran.returncode == 0 or (ran.stdout + ran.stderr).strip(), ran


def test_the_action_runs_a_module_that_exists() -> None:
    modules = _action_modules()
    assert modules, "action.yml has no `python -m physverify...` step"
    for module in modules:
        ran = _started(module)
        assert "::error::" in ran.stdout + ran.stderr  # the Action's own error line, outside a runner


def test_every_console_script_names_a_callable_and_starts() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts
    for name, target in scripts.items():
        module, _, attribute = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attribute)), target
        code = f"import sys; sys.argv = [{name!r}, '--version']; from {module} import {attribute}; {attribute}()"
        ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0 and ran.stdout.startswith(name), ran


def test_the_pre_commit_hook_runs_the_console_script() -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entries = re.findall(r"^\s*entry:\s*(\S+)", hooks, flags=re.MULTILINE)
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert entries and set(entries) <= set(scripts)


def test_every_module_the_fork_server_preloads_by_name_exists() -> None:
    for module in (*preload.BASE_PRELOAD, *preload.NUMPY_PRELOAD):
        assert importlib.util.find_spec(module) is not None, module
