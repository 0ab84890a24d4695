"""The layering (issue 19, item 6): no module uses another's private names, and lint-imports' contracts hold.

A leading underscore marks what a module keeps to itself; what two modules share is public in
the module that owns it. The scan is static (ast), over every file of the package: ``from
physverify.x import _y``, and ``x._y`` where ``x`` is a physverify module bound by an import.
A package-private *module* (``report/_interval.py``) may be imported within the
package: the rule is about names a module defines.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"


def _module_name(file: Path, src: Path) -> str:
    parts = list(file.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str, src: Path) -> bool:
    base = src.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _absolute(module: str | None, level: int, importer: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))  # __version__ is public


def private_imports(src: Path, package: str) -> list[str]:
    """Every use of another module's private name in ``src/package``, as 'file:line: what'."""
    found: list[str] = []
    for file in sorted((src / package).rglob("*.py")):
        importer = _module_name(file, src)
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        modules: dict[str, str] = {}  # local name -> the package's module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package:
                        local = alias.asname or alias.name.split(".")[0]
                        modules[local] = alias.name if alias.asname else package
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node.module, node.level, importer, file.name == "__init__.py")
                if source.split(".")[0] != package:
                    continue
                for alias in node.names:
                    dotted = f"{source}.{alias.name}"
                    if _is_module(dotted, src):
                        modules[alias.asname or alias.name] = dotted
                    elif _private(alias.name) and source != importer:
                        found.append(f"{file.relative_to(src)}:{node.lineno}: from {source} import {alias.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and _private(node.attr)):
                target = modules[node.value.id]
                if target != importer and not _is_module(f"{target}.{node.attr}", src):
                    found.append(f"{file.relative_to(src)}:{node.lineno}: {node.value.id}.{node.attr} ({target})")
    return found


def test_no_physverify_module_uses_another_modules_private_names() -> None:
    assert private_imports(SRC, "physverify") == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_private_name_scan_finds_each_way_of_breaking_the_rule(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/_hidden.py": "VALUE = 1\n",
        "pkg/owner.py": "_SECRET = 1\ndef _helper():\n    return _SECRET\nPUBLIC = 2\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "_DEEP = 3\n",
        "pkg/by_from.py": "from pkg.owner import _helper, PUBLIC\n",
        "pkg/by_relative.py": "from .owner import _SECRET\n",
        "pkg/by_attribute.py": "from pkg import owner\n\ndef f():\n    return owner._helper()\n",
        "pkg/by_import_as.py": "import pkg.sub.deep as deep\nX = deep._DEEP\n",
        "pkg/fine.py": ("from pkg import _hidden, owner\nfrom pkg.owner import PUBLIC\n"
                        "import os\nX = owner.PUBLIC + _hidden.VALUE\nY = os._exit\n"),
    })
    found = private_imports(tmp_path, "pkg")
    assert [line.split(":")[0] for line in found] == [
        os.path.join("pkg", name) for name in ("by_attribute.py", "by_from.py", "by_import_as.py", "by_relative.py")
    ]
    assert any("_helper" in line for line in found) and any("_SECRET" in line for line in found)


def _lint_imports(cwd: Path, env_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = shutil.which("lint-imports")
    if command is None:
        pytest.skip("import-linter is not installed (pip install '.[dev]')")
    env = dict(os.environ, PYTHONPATH=str(env_path))
    return subprocess.run([command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_lint_imports_keeps_every_contract_of_pyproject() -> None:
    ran = _lint_imports(REPO, SRC)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "0 broken" in ran.stdout


def test_lint_imports_fails_on_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    """The contract is the one pyproject.toml uses; a lazy import (isolate -> warm -> isolate, before) counts."""
    _write(tmp_path, {
        "cyc/__init__.py": "",
        "cyc/a.py": "def f():\n    from cyc import b\n    return b\n",
        "cyc/b.py": "from cyc import a\n",
        ".importlinter": """\
            [importlinter]
            root_package = cyc

            [importlinter:contract:1]
            name = No cycle
            type = acyclic_siblings
            ancestors = cyc
        """,
    })
    ran = _lint_imports(tmp_path, tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "No cycles are allowed in cyc" in ran.stdout


# Each breaks the layers contract one way: the child's layer reaching up into the gate, a report
# importing a command lazily, a numerics module importing the child's layer, and a new top-level
# module that no layer names (the contract is exhaustive).
_WRONG_LAYER = {
    "isolation/probe_upward.py": "from physverify.gate import settings\n",
    "report/probe_upward.py": "def render():\n    from physverify.commands import cli\n    return cli\n",
    "refine.py": "from physverify.isolation import protocol\n",
    "probe_undeclared.py": "VALUE = 1\n",
}


@pytest.mark.parametrize("name", sorted(_WRONG_LAYER))
def test_lint_imports_fails_on_a_module_placed_in_the_wrong_layer(tmp_path: Path, name: str) -> None:
    """pyproject.toml's own contracts, on a copy of the package with one module in the wrong place."""
    shutil.copytree(SRC / "physverify", tmp_path / "src" / "physverify", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    assert _lint_imports(tmp_path, tmp_path / "src").returncode == 0  # the copy alone keeps them
    target = tmp_path / "src" / "physverify" / name
    target.write_text((target.read_text(encoding="utf-8") if target.exists() else "") + _WRONG_LAYER[name])
    ran = _lint_imports(tmp_path, tmp_path / "src")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "The layers: commands over report over gate over isolation over the numerics BROKEN" in ran.stdout
    assert Path(name).stem in ran.stdout  # the report names the module out of place


if __name__ == "__main__":  # a quick look at what the scan finds
    print("\n".join(private_imports(SRC, "physverify")) or "none", file=sys.stderr)
