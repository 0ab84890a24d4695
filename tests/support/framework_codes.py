"""The JAX and Numba codes of docs/examples/frameworks and their claims, copied where a test runs them.

Each code holds its defect; the claim's ``defect``/``fix`` keys say what restores the book's
line, and ``write_case(..., fixed=True)`` writes the code with it restored.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "frameworks"
CASES = ("langevin", "metropolis", "rk4", "laplacian")  # claim_NAME.py on NAME.py


def claim_keys(name: str) -> dict[str, object]:
    """The CLAIM of claim_NAME.py (a literal dict, read without running the file)."""
    tree = ast.parse((EXAMPLES / f"claim_{name}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CLAIM" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, dict)
            return value
    raise AssertionError(f"claim_{name}.py has no CLAIM")


def code(name: str, *, fixed: bool = False) -> str:
    """NAME.py as the docs hold it (its defect), or with the claim's fix in place of the defect."""
    text = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
    if not fixed:
        return text
    keys = claim_keys(name)
    defect, fix = str(keys["defect"]), str(keys["fix"])
    lines = text.splitlines(keepends=True)
    line = next(i for i, held in enumerate(lines) if held.strip() == defect)
    lines[line] = lines[line].replace(defect, fix)
    return "".join(lines)


def write_case(folder: Path, name: str, *, fixed: bool = False, claim: str | None = None) -> Path:
    """NAME.py (its defect, or its fix when ``fixed``) and its claim (``claim``: another claim file on it) in ``folder``."""
    (folder / f"{name}.py").write_text(code(name, fixed=fixed), encoding="utf-8")
    source = EXAMPLES / (claim or f"claim_{name}.py")
    shutil.copy(source, folder / source.name)
    return folder / source.name
