"""preload.py: which modules the fork server preloads for a claim."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest


from physverify.gate import affected
from physverify.isolation import preload


def _chosen(claim_path: Path, root: Path, explicit: Sequence[str] = ()) -> frozenset[str]:
    """The preload of a claim in ``root``, its outside imports found as the gate finds them."""
    return preload.preload_for(claim_path, [str(root)], explicit, affected.outside_of(claim_path, root))


def test_the_fork_server_preloads_installed_libraries_the_claims_import_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "local_solver.py").write_text("import scipy.linalg\n")  # in the closure: its imports count too
    claim_path = tmp_path / "claim_x.py"
    claim_path.write_text(
        textwrap.dedent("""
        import json
        import numba
        import local_solver
        from scipy import integrate
        from physverify import reference_study
        def later():
            import torch
    """)
    )
    chosen = _chosen(claim_path, tmp_path, explicit=["json"])
    assert {"numpy", "physverify", "scipy.integrate", "scipy.linalg", "json"} <= chosen
    assert not {"torch", "local_solver"} & chosen  # a thread or GPU starter; repository code
    assert ("numba" in chosen) == (importlib.util.find_spec("numba") is not None)  # starts no thread: preloaded


@pytest.mark.parametrize("framework", preload.FORK_SAFE_FRAMEWORKS)
def test_importing_a_framework_the_server_preloads_starts_no_thread_beyond_numpys(framework: str) -> None:
    """jax and numba are preloaded because their import starts nothing a fork would lose; this holds it to the
    installed versions (a later release that starts XLA at import must go back to NEVER_PRELOAD)."""
    pytest.importorskip(framework)
    code = ("import os, numpy\nbefore = len(os.listdir('/proc/self/task'))\n"
            f"import {framework}\nprint(len(os.listdir('/proc/self/task')) - before)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["0"]


def test_names_imported_from_a_package_are_preloaded_only_when_they_are_its_submodules(tmp_path: Path) -> None:
    """``from physverify import PASS`` is an attribute: asking for ``physverify.PASS`` replaced the warm-up server."""
    claim_path = tmp_path / "claim_y.py"
    claim_path.write_text("from physverify import PASS, Check, checks\nfrom numpy import pi, linalg\n")
    chosen = _chosen(claim_path, tmp_path)
    assert {"physverify.checks", "numpy.linalg"} <= chosen
    assert not {"physverify.PASS", "physverify.Check", "numpy.pi"} & chosen


def test_a_folder_provides_a_module_a_package_or_an_extension_never_a_namespace_portion(tmp_path: Path) -> None:
    (tmp_path / "yaml.py").write_text("")
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("")
    (tmp_path / "scipy").mkdir()  # no __init__: a namespace portion, which an installed scipy wins over
    (tmp_path / "fastmod.abi3.so").write_text("")
    (tmp_path / "notes.yaml.txt").write_text("")
    asked = ["yaml", "numpy", "scipy", "fastmod", "notes", "absent"]
    assert preload.provided_top_levels([str(tmp_path), str(tmp_path / "missing")], among=asked) == {
        "yaml", "numpy", "fastmod"}


def test_the_listings_shortcut_gives_what_asking_the_finder_for_every_name_gives(tmp_path: Path) -> None:
    """provided_top_levels skips a name its folder's listing has no entry for: never one the finder would find."""
    import importlib.machinery
    import pkgutil

    folder = tmp_path / "mix"
    folder.mkdir()
    for suffix in importlib.machinery.all_suffixes():  # a module of every kind the import system loads
        (folder / f"kind{suffix.replace('.', '_')}{suffix}").write_text("")
    (folder / "pkg").mkdir()
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "compiled_pkg").mkdir()
    (folder / "compiled_pkg" / "__init__.pyc").write_bytes(b"")
    (folder / "portion").mkdir()  # a namespace portion: no loader, not provided
    (folder / "Upper.py").write_text("")
    (folder / "dotted.name.py").write_text("")
    (folder / "notes.txt").write_text("")
    asked = ["absent", "pkg", "compiled_pkg", "portion", "Upper", "upper", "dotted", "dotted.name", "notes",
             *(f"kind{s.replace('.', '_')}" for s in importlib.machinery.all_suffixes())]
    finder = pkgutil.get_importer(str(folder))
    assert finder is not None
    every = {name for name in asked if (spec := finder.find_spec(name)) is not None and spec.loader is not None}
    assert {"pkg", "compiled_pkg", "Upper"} <= every and not {"portion", "upper", "notes", "absent"} & every
    for first in range(len(asked)):  # whichever name comes first (the one that fills the finder's listing)
        order = asked[first:] + asked[:first]
        assert preload.provided_top_levels([str(folder)], among=order) == every, order


def test_numpy_is_preloaded_for_a_claim_that_may_use_it_and_only_then(tmp_path: Path) -> None:
    """The standard library and physverify's numpy-free names do not import numpy; anything else may."""
    (tmp_path / "pure_model.py").write_text("import math\n")
    (tmp_path / "array_model.py").write_text("import numpy as np\n")
    cases = {
        "import math\nimport pure_model\nfrom physverify import PASS, Check, Result, refine\n": False,
        "from physverify.checks import Check\nimport physverify.refine\nfrom physverify import checks\n": False,
        "import pure_model\nfrom physverify import Check, mms_order_study\n": True,
        "import array_model\nfrom physverify import Check\n": True,  # through the repository's own module
        "import physverify\n": True,  # any of its names may follow
        "import yaml\nfrom physverify import Check\n": True,  # an installed module
    }
    for number, (text, numpy) in enumerate(cases.items()):
        claim_path = tmp_path / f"claim_{number}.py"
        claim_path.write_text(text)
        chosen = _chosen(claim_path, tmp_path)
        assert set(preload.BASE_PRELOAD) <= chosen, text
        assert (set(preload.NUMPY_PRELOAD) <= chosen) is numpy and ("numpy" in chosen) is numpy, text


def test_the_numpy_free_names_are_the_packages_names_from_modules_that_do_not_import_numpy() -> None:
    """Held to physverify's own table of its public names, and to a fresh interpreter's imports."""
    import subprocess
    import sys

    import physverify

    free = {name for name, module in physverify._LAZY.items() if module in preload._NUMPY_FREE_MODULES}
    assert preload._NUMPY_FREE_NAMES == free | {"__version__", "checks"}
    names = sorted(preload._NUMPY_FREE_NAMES - {"checks"})
    code = (f"import sys\nfrom physverify import {', '.join(names)}\nfrom physverify import checks\n"
            "import physverify.refine\nprint('numpy' in sys.modules)")
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == "False"
