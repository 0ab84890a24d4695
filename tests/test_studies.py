"""Tests for physverify.studies (reference, invariant, patch, convergence and drift studies) and the worked examples
of spec section 8 that are built on them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import solvers

from physverify.checks import EXACT, FAIL, PASS
from physverify.errors import PhysverifyError
from physverify.order import SAME_AT_EVERY_RESOLUTION
from physverify.studies import (
    convergence_study,
    drift_study,
    invariant_study,
    patch_study,
    reference_study,
    refinement_path,
    self_convergence_study,
)

OMEGA = 2.0
RHS = solvers.oscillator_rhs(OMEGA)
ACCEL = solvers.oscillator_accel(OMEGA)
Y0 = [1.0, 0.5]
NS = (16, 32, 64, 128)
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples" / "confirm"


def energy(y: np.ndarray) -> float:
    """The oscillator's energy per unit mass, (v**2 + omega**2 x**2) / 2 (Taylor, Classical Mechanics, sec. 5.2)."""
    return 0.5 * (y[1] ** 2 + OMEGA**2 * y[0] ** 2)


# --- reference_study ------------------------------------------------------------------------------
def test_rk4_matches_the_independent_reference_at_fourth_order() -> None:
    result = reference_study(solvers.rk4(RHS), RHS, Y0, 2.0, NS, 4)
    assert (result.status, result.message) == (PASS, f"observed order {result.fitted:.2f} (expected 4)")


def test_a_midpoint_rule_with_a_full_half_step_fails_against_the_reference() -> None:
    result = reference_study(solvers.explicit_midpoint(RHS, defect=True), RHS, Y0, 2.0, (32, 64, 128, 256), 2)
    assert result.status == FAIL and result.fitted < 1.7
    assert result.message.startswith(f"observed order {result.fitted:.2f} (expected 2)")


def test_code_that_solves_a_different_equation_gives_the_same_error_at_every_resolution() -> None:
    code = solvers.rk4(solvers.oscillator_rhs(1.0))  # the code's omega is not the physics' omega
    result = reference_study(code, RHS, Y0, 2.0, NS, 4)
    assert result.status == FAIL and result.message.endswith(SAME_AT_EVERY_RESOLUTION)


def test_a_loose_reference_tolerance_is_refused() -> None:
    with pytest.raises(PhysverifyError, match="rtol 1e-12 or tighter"):
        reference_study(solvers.rk4(RHS), RHS, Y0, 2.0, NS, 4, rtol=1e-8)


# --- invariant_study ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("integrate", "order"),
    [(solvers.rk4(RHS), 4), (solvers.velocity_verlet(ACCEL), 2), (solvers.forward_euler(RHS), 1)],
    ids=["RK4", "velocity Verlet", "forward Euler"],
)
def test_the_energy_drift_shrinks_at_the_order_of_a_correct_scheme(integrate, order: int) -> None:  # noqa: ANN001
    result = invariant_study(integrate, energy, Y0, 2.0, NS, order)
    assert result.status == PASS and result.message.startswith("drift of the invariant: observed order")


def test_an_energy_drift_slower_than_the_scheme_order_fails() -> None:
    # issue 9: the coarsest drifts are larger than the energy itself, so finer steps are needed to settle
    result = invariant_study(solvers.forward_euler(RHS), energy, Y0, 2.0, (32, 64, 128, 256, 512), 2)
    assert result.status == FAIL


def test_a_linear_invariant_is_conserved_exactly_by_a_runge_kutta_method() -> None:
    exchange = lambda t, y: np.array([y[1] - y[0], y[0] - y[1]])  # noqa: E731 - two tanks: the total is conserved
    result = invariant_study(solvers.rk4(exchange), lambda y: float(y[0] + y[1]), [0.9, 0.1], 2.0, NS, 4)
    assert result.status == EXACT


# --- patch_study -----------------------------------------------------------------------------------------
CONSISTENT = [
    solvers.forward_euler(RHS),
    solvers.explicit_midpoint(RHS),
    solvers.rk4(RHS),
    solvers.velocity_verlet(ACCEL),
]


@pytest.mark.parametrize("integrate", CONSISTENT, ids=["Euler", "midpoint", "RK4", "Verlet"])
def test_a_consistent_method_reproduces_a_straight_line_exactly(integrate) -> None:  # noqa: ANN001
    result = patch_study(integrate, RHS, intercept=[0.5, 0.25], slope=[0.25, 0.0])
    assert (result.status, result.message) == (EXACT, "error below 1e-12 at every resolution; order not measurable")


@pytest.mark.parametrize(
    "integrate", [solvers.explicit_midpoint(RHS, defect=True), solvers.rk4(RHS, defect=True)], ids=["midpoint", "RK4"]
)
def test_a_stage_at_the_wrong_time_or_increment_fails_the_patch_test(integrate) -> None:  # noqa: ANN001
    result = patch_study(integrate, RHS, intercept=[0.5, 0.25], slope=[0.25, 0.0])
    assert result.status == FAIL and "stage evaluated at the wrong time or increment" in result.message


def test_the_patch_test_does_not_see_a_defect_that_only_matters_on_a_curved_solution() -> None:
    # Verlet with the old acceleration is first order, yet exact on a straight line: EXACT is not an order.
    result = patch_study(solvers.velocity_verlet(ACCEL, defect=True), RHS, intercept=[0.5, 0.25], slope=[0.25, 0.0])
    assert result.status == EXACT


# --- the worked examples (spec section 8), each run in its own interpreter ------------------------------
RUN_CLAIM = """
import json, sys
from physverify import run_check
claim = __import__(sys.argv[1])
outcomes = [run_check(claim.control())] + [run_check(check) for check in claim.checks()]
print(json.dumps([[o.status, o.label, o.message] for o in outcomes]))
"""


def run_claim(folder: Path, name: str) -> list[list[str]]:
    """[status, label, message] of the control, then of each check, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-B", "-c", RUN_CLAIM, name], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def edited_copy(tmp_path: Path, *edits: tuple[str, str, str]) -> Path:
    """A copy of the examples folder with each edit ``(file, old, new)`` made once."""
    folder = tmp_path / "confirm"
    if not folder.exists():
        shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file, old, new in edits:
        text = (folder / file).read_text()
        assert text.count(old) == 1
        (folder / file).write_text(text.replace(old, new))
    return folder


@pytest.mark.slow
def test_the_oscillator_example_gives_the_spec_statuses_and_passes_once_the_sign_is_fixed(tmp_path: Path) -> None:
    control, check = run_claim(EXAMPLES, "claim_oscillator")
    assert control == [
        "PASS",
        "midpoint rule is second order with gamma = 0 (no damping)",
        "observed order 2.00 (expected 2)",
    ]
    assert check[:2] == ["FAIL", "midpoint rule is second order with gamma = 0.5 (damping on)"]
    assert check[2].startswith("error does not decrease with resolution (about ")
    assert check[2].endswith(SAME_AT_EVERY_RESOLUTION)
    fixed = edited_copy(tmp_path, ("oscillator.py", "+ gamma * v]", "- gamma * v]"))
    assert [status for status, _, _ in run_claim(fixed, "claim_oscillator")] == ["PASS", "PASS"]


@pytest.mark.slow
def test_the_verlet_example_is_rejected_and_would_be_confirmed_with_the_old_acceleration(tmp_path: Path) -> None:
    control, check = run_claim(EXAMPLES, "claim_verlet")
    assert control == [
        "EXACT",
        "free particle (omega = 0): straight-line motion",
        "error below 1e-12 at every resolution; order not measurable",
    ]
    assert check == [
        "PASS",
        "velocity Verlet is second order on the harmonic oscillator (omega = 2)",
        "observed order 2.00 (expected 2)",
    ]
    seeded = edited_copy(tmp_path, ("verlet.py", "v = v_half + 0.5 * h * a_new", "v = v_half + 0.5 * h * a"))
    assert [status for status, _, _ in run_claim(seeded, "claim_verlet")] == ["EXACT", "FAIL"]


@pytest.mark.slow
def test_the_decay_example_control_fails_until_the_reference_reads_half_life_as_a_half_life(tmp_path: Path) -> None:
    control, check = run_claim(EXAMPLES, "claim_decay")
    assert control[:2] == ["FAIL", "RK4 is fourth order on a slowly varying solution"]
    assert check[:2] == ["FAIL", "RK4 is fourth order on an oscillating solution"]
    assert control[2].endswith(SAME_AT_EVERY_RESOLUTION) and check[2].endswith(SAME_AT_EVERY_RESOLUTION)
    fixed = edited_copy(tmp_path, ("claim_decay.py", "RATE = HALF_LIFE ", "RATE = np.log(2.0) / HALF_LIFE "))
    assert [status for status, _, _ in run_claim(fixed, "claim_decay")] == ["EXACT", "PASS"]
    # with the reference fixed, the defect the review describes would be found: the control's
    # straight line does not see a wrong k3 slope, the oscillating solution does
    seeded = edited_copy(tmp_path, ("decay.py", "n + 0.5 * h * k2, rate", "n + 0.5 * h * k1, rate"))
    assert [status for status, _, _ in run_claim(seeded, "claim_decay")] == ["EXACT", "FAIL"]


# --- convergence_study, self_convergence_study, refinement_path, drift_study (issue 9) -------
def midpoint_decay(n: int) -> float:
    """The explicit midpoint rule on y' = -y, y(0) = 1, at t = 1 in n steps (second order)."""
    y, h = 1.0, 1.0 / n
    for _ in range(n):
        y = y + h * -(y + 0.5 * h * -y)
    return y


def euler_decay(n: int) -> float:
    y, h = 1.0, 1.0 / n
    for _ in range(n):
        y = y - h * y
    return y


def test_convergence_study_judges_any_error_with_h_one_over_n_by_default() -> None:
    result = convergence_study(lambda n: abs(midpoint_decay(n) - np.exp(-1.0)), (8, 16, 32, 64), 2)
    assert result.status == PASS and result.message.startswith("observed order 2.0")
    assert result.hs == (1 / 8, 1 / 16, 1 / 32, 1 / 64) and len(result.errors) == 4


def test_convergence_study_takes_the_step_size_from_h() -> None:
    result = convergence_study(lambda n: abs(euler_decay(n) - np.exp(-1.0)), (8, 16, 32, 64), 1, h=lambda n: 2.0 / n)
    assert result.status == PASS and result.hs[0] == 0.25


def test_convergence_study_fails_a_settled_lower_order() -> None:
    result = convergence_study(lambda n: abs(euler_decay(n) - np.exp(-1.0)), (16, 32, 64, 128, 256), 2)
    assert result.status == FAIL and "below the accepted range" in result.message


def test_self_convergence_measures_the_order_without_an_exact_solution() -> None:
    result = self_convergence_study(lambda n: [midpoint_decay(n)], (8, 16, 32, 64, 128), 2)
    assert result.status == PASS
    assert result.message.startswith("differences of consecutive levels: observed order 2.0")
    assert result.hs == (1 / 8, 1 / 16, 1 / 32, 1 / 64)  # the coarser level of each pair
    assert result.errors[0] == pytest.approx(abs(midpoint_decay(16) - midpoint_decay(8)))


def test_self_convergence_fails_a_first_order_method_claimed_second_order() -> None:
    result = self_convergence_study(lambda n: [euler_decay(n)], (16, 32, 64, 128, 256), 2)
    assert result.status == FAIL and "a clean order 1" in result.message


def test_self_convergence_solves_each_level_once() -> None:
    calls: list[int] = []

    def solve(n: int) -> list[float]:
        calls.append(n)
        return [midpoint_decay(n)]

    self_convergence_study(solve, (8, 16, 32, 64), 2)
    assert sorted(calls) == [8, 16, 32, 64]


@pytest.mark.parametrize("ns", [(8, 16, 48), (8, 16), (8, 0, 16)])
def test_self_convergence_refuses_levels_without_one_refinement_ratio(ns: tuple[int, ...]) -> None:
    with pytest.raises(PhysverifyError):
        self_convergence_study(lambda n: [0.0], ns, 2)


def test_self_convergence_refuses_solutions_at_different_points() -> None:
    with pytest.raises(PhysverifyError, match="shape"):
        self_convergence_study(lambda n: np.zeros(n), (8, 16, 32), 2)


def test_refinement_path_keeps_dt_proportional_to_dx_to_the_order_ratio() -> None:
    assert refinement_path([16, 32, 64], space_order=2, time_order=2, nt0=10) == [10, 20, 40]
    assert refinement_path([16, 32, 64], space_order=2, time_order=1, nt0=10) == [10, 40, 160]
    assert refinement_path([10, 20, 40], space_order=4, time_order=2, nt0=3) == [3, 12, 48]


@pytest.mark.parametrize(
    ("nxs", "kwargs"),
    [((32, 16), {"space_order": 2, "time_order": 1, "nt0": 4}),
     ((16, 32), {"space_order": 2, "time_order": 0, "nt0": 4}),
     ((16, 32), {"space_order": 2, "time_order": 1, "nt0": 0})],
)
def test_refinement_path_refuses_a_path_that_does_not_refine(nxs: tuple[int, ...], kwargs: dict[str, float]) -> None:
    with pytest.raises(PhysverifyError):
        refinement_path(nxs, **kwargs)  # type: ignore[arg-type]


def oscillator_energy_deviation(symplectic: bool, h: float = 0.05) -> Callable[[float], float]:
    """max |H - H0| up to T for q'' = -q with symplectic or explicit Euler (Hairer, Lubich and Wanner, sec. I.1)."""
    def deviation_at(t_end: float) -> float:
        q, p, worst = 1.0, 0.0, 0.0
        for _ in range(round(t_end / h)):
            if symplectic:
                p = p - h * q
                q = q + h * p
            else:
                q, p = q + h * p, p - h * q
            worst = max(worst, abs(0.5 * (p * p + q * q) - 0.5))
        return worst
    return deviation_at


def test_drift_study_passes_a_bounded_energy_error_and_fails_a_growing_one() -> None:
    t_ends = (10.0, 20.0, 40.0, 80.0)
    bounded = drift_study(oscillator_energy_deviation(True), t_ends)
    assert bounded.status == PASS and bounded.expected == 0.0 and bounded.hs == t_ends
    growing = drift_study(oscillator_energy_deviation(False), t_ends)
    assert growing.status == FAIL and "(expected bounded)" in growing.message and growing.fitted > 1.0


@pytest.mark.parametrize(
    ("deviation", "expect", "status"),
    [(lambda t: 1e-3 * t, "linear", PASS),
     (lambda t: 1e-3 * t, "bounded", FAIL),
     (lambda t: 1e-3, "linear", FAIL),
     (lambda t: 1e-6 * t**3, "linear", FAIL),
     (lambda t: 1e-3 * t**0.5, "bounded", "INCONCLUSIVE"),
     (lambda t: 1e-3 * t**0.5, "linear", "INCONCLUSIVE"),
     (lambda t: 1e-3 * t**1.5, "linear", "INCONCLUSIVE"),
     (lambda t: 1e-15, "bounded", EXACT),
     (lambda t: float("inf") if t > 30 else 1e-3, "bounded", FAIL)],
)
def test_drift_study_classes_the_growth_exponent(deviation: Callable[[float], float], expect: str, status: str) -> None:
    assert drift_study(deviation, (10.0, 20.0, 40.0, 80.0), expect=expect).status == status


def test_drift_study_is_inconclusive_while_the_growth_has_not_settled() -> None:
    # growing at first, then level: the last pair of end times disagrees with the fit
    result = drift_study(lambda t: 1e-4 * min(t, 40.0), (10.0, 20.0, 40.0, 80.0))
    assert result.status == "INCONCLUSIVE" and "add end times longer than T = 80" in result.message


@pytest.mark.parametrize(("t_ends", "expect"), [((10.0, 20.0), "bounded"), ((0.0, 1.0, 2.0), "bounded"),
                                                ((1.0, 2.0, 4.0), "quadratic")])
def test_drift_study_refuses_unusable_end_times_or_expectations(t_ends: tuple[float, ...], expect: str) -> None:
    with pytest.raises(PhysverifyError):
        drift_study(lambda t: 1e-3, t_ends, expect=expect)


# --- claim files written for physverify 0.6.0 run unchanged (issue 9, item 4) ----------------
SOLVER_060 = '''\
import numpy as np


def integrate(source, y0, t_end, n):
    """The explicit midpoint rule for the oscillator y'' = -y (a defect would take the full step)."""
    h, t, y = t_end / n, 0.0, np.asarray(y0, dtype=float)
    f = lambda s, u: np.array([u[1], -u[0]]) + source(s)
    for _ in range(n):
        y = y + h * f(t + HALF * h, y + HALF * h * f(t, y))
        t += h
    return y


HALF = 0.5
'''

CLAIM_060 = '''\
"""A claim file as physverify 0.6.0's users wrote them: its keyword names and helpers."""
import numpy as np

import solver
from physverify import Check, ManufacturedODE, check_order, invariant_study, ode_checks, patch_study
from physverify import reference_study, zero_source

CLAIM = {
    "text": "the midpoint step takes the full step for the half step, so the method is first order",
    "source": "a 0.6.0 user",
    "file": "solver.py",
    "line": 8,
    "reference": "Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1: the explicit midpoint rule is second order",
    "impact": "used",
}
rhs = lambda t, y: np.array([y[1], -y[0]])
energy = lambda y: 0.5 * (y[0] ** 2 + y[1] ** 2)
NS = (20, 40, 80, 160)


def control():
    # zero_source, patch_study(y0=...): a straight line is exact for any consistent method
    assert np.allclose(solver.integrate(zero_source, [1.0, 0.0], 0.0, 1), [1.0, 0.0])
    return Check("patch", "a straight line is exact", lambda: patch_study(solver.integrate, rhs, y0=[0.3, 0.0],
                                                                          slope=[0.0, 0.0], t_end=1.0, ns=NS))


def checks():
    mms = ManufacturedODE(lambda t: np.array([np.sin(2 * t), 2 * np.cos(2 * t)]), rhs)
    bundle = ode_checks("midpoint", solver.integrate, rhs_ref=rhs, mms=mms, y0_free=[1.0, 0.0], t_end=1.0, ns=NS,
                        order=2)
    return bundle + [
        Check("reference", "against scipy, 0.6.0 keywords",
              lambda: reference_study(solver.integrate, rhs_ref=rhs, y0=[1.0, 0.0], t_end=1.0, ns=NS,
                                      expected_order=2, ref_factor=16, tol=0.4)),
        Check("invariant", "energy drift at order 2",
              lambda: invariant_study(solver.integrate, quantity=energy, y0=[1.0, 0.0], t_end=1.0, ns=NS,
                                      expected_order=2)),
    ]
'''


@pytest.mark.slow
@pytest.mark.parametrize(("half", "verdict", "code"), [("0.5", "rejected", 0), ("1.0", "confirmed", 1)])
def test_a_claim_file_written_for_0_6_0_runs_unchanged(tmp_path: Path, half: str, verdict: str, code: int,
                                                      cli: Any) -> None:
    (tmp_path / "solver.py").write_text(SOLVER_060.replace("HALF = 0.5", f"HALF = {half}"))
    (tmp_path / "claim_060.py").write_text(CLAIM_060)
    # in this process (the cli fixture): the claim file, what is tested, still runs in its own child
    done = cli("confirm", "claim_060.py", "--trusted", "--json", "-", cwd=tmp_path)
    record = json.loads(done.stdout)
    assert (done.returncode, record["verdict"]) == (code, verdict), record["reason"]
    assert len(record["checks"]) == 4 and "ERROR" not in [c["status"] for c in record["checks"]]


def test_a_0_6_0_keyword_beside_its_new_name_is_refused_and_tol_sets_both_tolerances() -> None:
    from physverify.order import check_order

    hs, errors = (0.1, 0.05, 0.025, 0.0125), [h**3.3 for h in (0.1, 0.05, 0.025, 0.0125)]
    assert check_order(hs, errors, 2).status == "INCONCLUSIVE"  # order 3.3 is above [1.7, 3)
    assert check_order(hs, errors, 2, tol=1.5).status == PASS  # [0.5, 3.5)
    assert check_order(hs, errors, 2, tol=None).status == "INCONCLUSIVE"
    with pytest.raises(TypeError, match="tol= .*and tol_low="):
        check_order(hs, errors, 2, tol=1.5, tol_low=0.1)
