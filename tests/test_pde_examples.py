"""The PDE and long-time claims of docs/pde.md and docs/ai-review.md, end to end (issue 9).

Each example solver in docs/examples/pde/ carries one defect. Its claim must come out
confirmed through ``physverify confirm --trusted`` (run in this process; each claim runs in its
own child); the same claim on a copy of the solver with the defect fixed must come out rejected. The refinement-path test shows
the pitfall docs/pde.md explains: dt/dx**2 = const hides a first-order time error.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from support.fixtures import Ran, verdict_line

from physverify import FAIL, PASS, OrderResult, convergence_study, refinement_path

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples" / "pde"
PAGE = EXAMPLES.parent.parent / "pde.md"

# (claim, solver, the defective line, the line as the reference method writes it)
FIXES = {
    "claim_heat_cn_source.py": (
        "heat_cn.py",
        "u = implicit @ (explicit @ u + dt * source(xi, t))",
        "u = implicit @ (explicit @ u + 0.5 * dt * (source(xi, t) + source(xi, t + dt)))",
    ),
    "claim_heat_ftcs_boundary.py": (
        "heat_ftcs.py",
        "new[0], new[-1] = new[1], new[-2]",
        "new[0], new[-1] = u[0] + 2.0 * r * (u[1] - u[0]), u[-1] + 2.0 * r * (u[-2] - u[-1])",
    ),
    "claim_symplectic_drift.py": (
        "symplectic.py",
        "q, p = q + h * p, p + h * force(q)",
        "p = p + h * force(q)\n        q = q + h * p",
    ),
}


def confirm(cli: Callable[..., Ran], claim: Path, ledger: Path) -> Ran:
    """``physverify confirm`` in this process (the cli fixture): the test reads its verdict; the claim runs in its child."""
    return cli("confirm", str(claim), "--trusted", "--ledger", str(ledger), cwd=claim.parent)


@pytest.fixture()
def examples(tmp_path: Path) -> Path:
    folder = tmp_path / "pde"
    shutil.copytree(EXAMPLES, folder)
    return folder


@pytest.mark.parametrize("claim", sorted(FIXES))
def test_the_seeded_defect_is_confirmed_and_the_fixed_solver_rejected(examples: Path, claim: str,
                                                                     cli: Callable[..., Ran]) -> None:
    solver, defect, fix = FIXES[claim]
    run = confirm(cli, examples / claim, examples / "ledger.jsonl")
    assert (run.returncode, verdict_line(run.stdout).split(" (")[0]) == (1, "confirmed"), run.stdout + run.stderr
    assert "control PASS" in run.stdout and "check FAIL" in run.stdout
    code = (examples / solver).read_text(encoding="utf-8")
    assert code.count(defect) == 1
    (examples / solver).write_text(code.replace(defect, fix), encoding="utf-8")
    run = confirm(cli, examples / claim, examples / "ledger.jsonl")
    assert (run.returncode, verdict_line(run.stdout).split(" (")[0]) == (0, "rejected"), run.stdout + run.stderr


def load(folder: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T_END = 0.1


def cn_error(heat_cn: ModuleType, nx: int, nt: int) -> float:
    """Crank-Nicolson's max-norm error at T_END on u = sin(pi x)(1 + sin 4t), manufactured (source f = u_t - u_xx)."""
    def source(x: np.ndarray, t: float) -> np.ndarray:
        return np.sin(np.pi * x) * (4.0 * np.cos(4.0 * t) + np.pi**2 * (1.0 + np.sin(4.0 * t)))

    x = np.linspace(0.0, 1.0, nx + 1)
    exact = np.sin(np.pi * x) * (1.0 + np.sin(4.0 * T_END))
    return float(np.max(np.abs(heat_cn.solve(nx, nt, T_END, lambda x: np.sin(np.pi * x), source) - exact)))


def path_study(heat_cn: ModuleType, time_order: float) -> OrderResult:
    nxs = (8, 16, 32, 64, 128)
    steps = dict(zip(nxs, refinement_path(nxs, space_order=2, time_order=time_order, nt0=2)))
    return convergence_study(lambda nx: cn_error(heat_cn, nx, steps[nx]), nxs, 2)


def test_dt_over_dx_squared_fixed_hides_the_time_defect_that_dt_over_dx_fixed_exposes(examples: Path) -> None:
    """docs/pde.md: along dt ~ dx**2 an O(dt) error falls like dx**2 and passes as second order."""
    defective = load(examples, "heat_cn")
    page = PAGE.read_text(encoding="utf-8")
    for time_order, status in ((2, FAIL), (1, PASS)):  # dt ~ dx exposes the O(dt) error; dt ~ dx**2 hides it
        result = path_study(defective, time_order)
        assert result.status == status
        assert ", ".join(f"{e:.3g}" for e in result.errors) in page  # the table in docs/pde.md
    solver, defect, fix = FIXES["claim_heat_cn_source.py"]
    (examples / solver).write_text((examples / solver).read_text(encoding="utf-8").replace(defect, fix), "utf-8")
    assert path_study(load(examples, "heat_cn"), time_order=2).status == PASS


def test_the_code_quoted_in_docs_pde_md_is_the_example_claims_code() -> None:
    quoted = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    sources = "\n".join(path.read_text(encoding="utf-8") for path in EXAMPLES.glob("*.py"))
    assert quoted and all(block in sources for block in quoted)
