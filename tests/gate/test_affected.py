"""affected.py: which claims a change can affect (static import closure, changed files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fixtures import init_repo

from physverify.gate import affected
from physverify.errors import UsageError


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A src-layout project with a package, a claims folder, a helper and a module nobody imports."""
    return tree(tmp_path, {
        "src/sim/__init__.py": "",
        "src/sim/integrators.py": "from . import _tableau\nfrom .forces import spring\n",
        "src/sim/_tableau.py": "import numpy as np\n",
        "src/sim/forces.py": "def spring(x):\n    return -x\n",
        "src/sim/unused.py": "",
        "claims/helpers.py": "import sim.integrators\n",
        "claims/rk_claim.py": "import numpy\nfrom helpers import *\n\ndef checks():\n    import solver\n",
        "claims/solver.py": "",
        "claims/physverify.yaml": "timeout: 10\n",
        "tools/plot.py": "",
    })


def keys(paths: frozenset[Path], root: Path) -> set[str]:
    return {p.relative_to(root.resolve()).as_posix() for p in paths}


def test_the_closure_follows_helpers_packages_relative_imports_and_imports_inside_functions(project: Path) -> None:
    closure = keys(affected.import_closure(project / "claims" / "rk_claim.py", project), project)
    assert closure == {
        "claims/rk_claim.py", "claims/helpers.py", "claims/solver.py",
        "src/sim/__init__.py", "src/sim/integrators.py", "src/sim/_tableau.py", "src/sim/forces.py",
    }


def test_the_inputs_add_the_target_file_and_physverify_yaml(project: Path) -> None:
    claim = project / "claims" / "rk_claim.py"
    inputs = affected.claim_inputs(claim, project, "tools/plot.py", project / "claims" / "physverify.yaml")
    assert {"tools/plot.py", "claims/physverify.yaml", "src/sim/forces.py"} <= inputs
    assert "src/sim/unused.py" not in inputs
    assert affected.is_affected(inputs, frozenset({"src/sim/forces.py"}))
    assert not affected.is_affected(inputs, frozenset({"src/sim/unused.py", "README.md"}))


def test_folders_without_init_are_namespace_packages(tmp_path: Path) -> None:
    tree(tmp_path, {"docs/examples/solver.py": "", "claims/c.py": "from docs.examples import solver\n"})
    closure = keys(affected.import_closure(tmp_path / "claims" / "c.py", tmp_path), tmp_path)
    assert closure == {"claims/c.py", "docs/examples/solver.py"}


def test_a_file_that_does_not_parse_imports_nothing_but_is_its_own_input(tmp_path: Path) -> None:
    tree(tmp_path, {"claims/bad.py": "import (\n"})
    assert keys(affected.import_closure(tmp_path / "claims" / "bad.py", tmp_path), tmp_path) == {"claims/bad.py"}


def test_changed_since_sees_staged_unstaged_and_untracked_files_but_not_committed_ones(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    tree(tmp_path, {"a.py": "", "b.py": "", "c.py": "", "d.py": ""})
    repo.index.add(["a.py", "b.py", "c.py", "d.py"])
    repo.index.commit("start")
    tree(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 2\n", "new.py": ""})
    repo.index.add(["b.py"])  # b staged, a unstaged, new untracked
    (tmp_path / "c.py").unlink()
    assert affected.changed_since(tmp_path, "HEAD") == {"a.py", "b.py", "c.py", "new.py"}


def test_changed_since_head_by_git_status_names_what_the_diff_and_the_untracked_files_name(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    names = ["a.py", "sp ace.py", "new\nline.py", "tab\there.py", "ü.py", "sub/deep.py", "gone.py", "renamed.py"]
    tree(tmp_path, {name: "" for name in names})
    repo.index.add(names)
    repo.index.commit("start")
    tree(tmp_path, {"a.py": "x = 1\n", "sp ace.py": "y = 2\n", "new\nline.py": "z = 3\n", "untracked dir/u.py": "",
                    "ü.py": "w = 4\n"})
    repo.index.add(["sp ace.py"])
    (tmp_path / "gone.py").unlink()
    repo.git.mv("renamed.py", "moved.py")
    repo.index.commit("second")  # HEAD~1 is then another commit than HEAD: the diff's way
    tree(tmp_path, {"tab\there.py": "v = 5\n"})
    by_status = affected.changed_since(tmp_path, "HEAD")
    assert by_status == {"tab\there.py", "untracked dir/u.py", "a.py", "new\nline.py", "ü.py", "gone.py"}
    head = repo.head.commit.hexsha
    assert affected.changed_since(tmp_path, head) == by_status  # the same commit named otherwise: the same answer
    everything = affected.changed_since(tmp_path, "HEAD~1")
    assert everything == by_status | {"sp ace.py", "renamed.py", "moved.py"}


def test_an_unknown_ref_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    repo = init_repo(tmp_path)
    repo.index.commit("empty")
    with pytest.raises(UsageError, match="'nope' is not a commit"):
        affected.changed_since(tmp_path, "nope")


def test_files_are_keys_relative_to_the_root_and_outside_files_are_dropped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    got = affected.files_as_keys(["src/a.py", "../elsewhere.py", str(root / "b.py")], root, root)
    assert got == {"src/a.py", "b.py"}


def test_changed_since_outside_git_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not in a git repository"):
        affected.changed_since(tmp_path, "HEAD")


def test_a_relative_import_above_the_file_systems_root_is_ignored(tmp_path: Path) -> None:
    """Issue 13, item 8: `from ............ import x` raised IndexError, so the pre-commit hook blocked every commit."""
    tree(tmp_path, {
        "claims/c.py": "import helper\n\ndef never_called():\n    from ............ import x\n",
        "claims/helper.py": "from " + "." * 40 + "deep import y\n",
    })
    closure = keys(affected.import_closure(tmp_path / "claims" / "c.py", tmp_path), tmp_path)
    assert closure == {"claims/c.py", "claims/helper.py"}


def test_a_module_nested_too_deeply_to_parse_imports_nothing(tmp_path: Path) -> None:
    """Issue 13, item 7: RecursionError from ast in an imported module escaped the closure."""
    tree(tmp_path, {"claims/c.py": "import deep\n", "claims/deep.py": "import solver\nx = " + "-" * 100000 + "1\n"})
    closure = keys(affected.import_closure(tmp_path / "claims" / "c.py", tmp_path), tmp_path)
    assert closure == {"claims/c.py", "claims/deep.py"}


def test_an_import_of_a_name_too_long_for_the_file_system_is_ignored(tmp_path: Path) -> None:
    """Issue 13: `import xxx...` with a 300-letter name raised 'File name too long' in the closure."""
    tree(tmp_path, {"claims/c.py": "import solver\nimport " + "x" * 300 + "\nfrom " + "y" * 300 + " import z\n"
                    "import " + ".".join(["a"] * 3000) + "\n", "claims/solver.py": ""})
    closure = keys(affected.import_closure(tmp_path / "claims" / "c.py", tmp_path), tmp_path)
    assert closure == {"claims/c.py", "claims/solver.py"}
