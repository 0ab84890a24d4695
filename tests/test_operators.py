"""identity_check, operator_study and reversibility_study: their statuses on made-up numbers, and
whole claims through ``physverify confirm`` as a process on codes written for these tests (issue 18,
items 2-4)."""

from __future__ import annotations

import numpy as np
import pytest
from test_adapters import confirm, verdict

from physverify import (EXACT, FAIL, INCONCLUSIVE, PASS, Check, identity_check, operator_study, refine,
                        reversibility_study, run_check)
from physverify.checks import result_data
from physverify.errors import PhysverifyError


# --- identity_check ----------------------------------------------------------------------
def test_an_identity_within_round_off_is_exact_and_beyond_it_a_fail_naming_the_index() -> None:
    assert identity_check(np.array([0.0, 1e-16, -3e-14])).status == EXACT
    result = identity_check(np.array([0.0, 1e-16, 3e-5, 0.0]))
    assert result.status == FAIL
    assert result.message.startswith("deviation 3e-05 at index 2 of 4 values, above the tolerance 1e-12")
    assert result.index == (2,) and result.deviation == pytest.approx(3e-5)


def test_by_default_an_identity_is_exact_or_fail_and_a_stated_tolerance_gives_pass() -> None:
    values = np.array([1.0, 2.0 + 1e-9])
    assert identity_check(values, [1.0, 2.0]).status == FAIL
    passed = identity_check(values, [1.0, 2.0], rtol=1e-6)
    assert passed.status == PASS and "within the tolerance 2e-06" in passed.message
    assert identity_check(values, [1.0, 2.0], atol=1e-8).status == PASS


def test_the_round_off_grows_with_the_scale_as_check_order_s_floor_does() -> None:
    assert identity_check(1e6 + 1e-7, 1e6).status == FAIL
    assert identity_check(1e6 + 1e-7, 1e6, scale=1e6).status == EXACT


def test_a_two_dimensional_deviation_is_placed_by_row_and_column() -> None:
    values = np.zeros((3, 4))
    values[2, 1] = 0.5
    assert "at index (2, 1) of 12 values" in identity_check(values).message


def test_a_scalar_identity_has_no_index_and_a_nan_is_a_fail() -> None:
    assert identity_check(0.25, 0.5).message == ("deviation 0.25, above the tolerance 1e-12 (round-off 1e-12): the "
                                                 "identity does not hold")
    assert identity_check([0.0, float("nan")]).status == FAIL


def test_no_values_or_a_non_finite_scale_cannot_be_judged() -> None:
    assert identity_check([]).status == INCONCLUSIVE
    assert identity_check(0.0, scale=float("inf")).status == INCONCLUSIVE


def test_values_and_expected_values_that_do_not_broadcast_are_an_error_saying_so() -> None:
    outcome = run_check(Check("identity", "shapes", lambda: identity_check(np.zeros(3), np.zeros(4))))
    assert outcome.status == "ERROR" and "do not broadcast" in outcome.message


def test_a_negative_tolerance_is_refused() -> None:
    with pytest.raises(PhysverifyError, match="rtol and atol must be at least 0"):
        identity_check(0.0, atol=-1e-3)


def test_the_ledger_keeps_the_deviation_and_no_step_sizes_so_the_report_draws_no_plot() -> None:
    data = result_data(identity_check(np.array([0.0, 2e-3])))
    assert data == {"deviation": 2e-3, "tolerance": 1e-12, "roundoff": 1e-12, "index": [1], "count": 2}


# --- operator_study ------------------------------------------------------------------------
def wave(x):  # type: ignore[no-untyped-def]
    return np.sin(2 * np.pi * x)


def dwave(x):  # type: ignore[no-untyped-def]
    return 2 * np.pi * np.cos(2 * np.pi * x)


def difference(u, dx):  # type: ignore[no-untyped-def]
    return np.diff(u) / dx


def test_a_flux_difference_from_faces_to_cells_is_second_order_where_the_code_stores_it() -> None:
    assert operator_study(difference, wave, dwave, [16, 32, 64, 128], 2, sample="faces").status == PASS


def test_the_same_difference_compared_at_the_wrong_points_is_first_order() -> None:
    """A forward difference of node values belongs at the midpoints; at the left nodes it is first order."""
    result = operator_study(difference, wave, dwave, [16, 32, 64, 128], 2, sample="nodes",
                            where=lambda nx: np.arange(nx) / nx)
    assert result.status == FAIL and "clean order 1" in result.message


def test_a_result_of_the_wrong_length_is_an_error_that_names_the_lengths_expected() -> None:
    outcome = run_check(Check("operator", "lengths", lambda: operator_study(difference, wave, dwave, [16, 32], 2)))
    assert outcome.status == "ERROR"
    assert "apply returned 15 values at nx = 16, but where='cells' has 16 points" in outcome.message
    assert "nodes or faces 17" in outcome.message


def test_centres_with_ghost_cells_and_a_domain_other_than_the_unit_interval() -> None:
    def laplacian(u, dx):  # type: ignore[no-untyped-def]
        return (u[2:] - 2 * u[1:-1] + u[:-2]) / dx**2

    ghosts = lambda nx: -1.0 + (np.arange(-1, nx + 1) + 0.5) * 3.0 / nx  # noqa: E731
    result = operator_study(laplacian, np.exp, np.exp, [8, 16, 32, 64], 2, domain=(-1.0, 2.0), sample=ghosts)
    assert result.status == PASS and result.hs[0] == pytest.approx(3.0 / 8)


def test_a_tensor_product_laplacian_in_two_dimensions_and_a_staggered_mac_component() -> None:
    def laplacian(u, dx, dy):  # type: ignore[no-untyped-def]
        return ((u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + u[:-2, 1:-1]) / dx**2
                + (u[1:-1, 2:] - 2 * u[1:-1, 1:-1] + u[1:-1, :-2]) / dy**2)

    ghosts, centres = (lambda nx: (np.arange(-1, nx + 1) + 0.5) / nx), (lambda nx: (np.arange(nx) + 0.5) / nx)
    field = lambda x, y: np.sin(x) * np.cos(2 * y)  # noqa: E731
    assert operator_study(laplacian, field, lambda x, y: -5 * field(x, y), [8, 16, 32, 64], 2,
                          domain=((0, 1), (0, 1)), sample=ghosts, where=centres).status == PASS
    # u on the x-faces, its x-difference at the cell centres: ("faces", "cells") -> ("cells", "cells")
    assert operator_study(lambda u, dx, dy: np.diff(u, axis=0) / dx, field, lambda x, y: np.cos(x) * np.cos(2 * y),
                          [8, 16, 32, 64], 2, domain=((0, 1), (0, 2)), sample=("faces", "cells")).status == PASS


def test_a_refinement_plan_is_taken_where_a_list_is() -> None:
    result = operator_study(difference, wave, dwave, refine(16, max_n=128), 2, sample="faces")
    assert result.status == PASS and len(result.hs) == 4


@pytest.mark.parametrize(("kwargs", "match"), [({"sample": "centres"}, "not one of cells, nodes, faces"),
                                               ({"domain": (1.0, 0.0)}, "finite lo < hi"),
                                               ({"sample": ("cells", "cells")}, "2 point sets for 1 axes")])
def test_a_wrong_point_set_or_domain_is_refused_before_anything_runs(kwargs: dict, match: str) -> None:
    with pytest.raises(PhysverifyError, match=match):
        operator_study(difference, wave, dwave, [16, 32], 2, **kwargs)


# --- reversibility_study -------------------------------------------------------------------
def kick_drift_kick(y, t, h, omega=2.0):  # type: ignore[no-untyped-def]
    x, v = y
    v = v - 0.5 * h * omega**2 * x
    x = x + h * v
    return np.array([x, v - 0.5 * h * omega**2 * x])


def euler(y, t, h):  # type: ignore[no-untyped-def]
    x, v = y
    return np.array([x + h * v, v - 4.0 * h * x])


def backwards(step):  # type: ignore[no-untyped-def]
    return lambda y, t, h: step(y, t, -h)


def test_a_symmetric_method_returns_exactly_and_that_is_exact_with_or_without_require_exact() -> None:
    for strict in (False, True):
        result = reversibility_study(kick_drift_kick, backwards(kick_drift_kick), [1.0, 0.0], 1.0,
                                     [10, 20, 40, 80], 2, require_exact=strict)
        assert result.status == EXACT and "time-reversible (symmetric)" in result.message


def test_a_method_that_is_not_symmetric_returns_at_its_order_and_fails_when_exactness_is_required() -> None:
    ns = [10, 20, 40, 80, 160]
    loose = reversibility_study(euler, backwards(euler), [1.0, 0.0], 1.0, ns, 1)
    assert loose.status == PASS and loose.message.startswith("round-trip error: observed order 1.0")
    strict = reversibility_study(euler, backwards(euler), [1.0, 0.0], 1.0, ns, 1, require_exact=True)
    assert strict.status == FAIL and strict.message.startswith("not time-reversible")


def test_a_backward_step_that_goes_forward_is_a_fail() -> None:
    result = reversibility_study(kick_drift_kick, kick_drift_kick, [1.0, 0.0], 1.0, [10, 20, 40, 80], 2)
    assert result.status == FAIL and "does not decrease" in result.message


def test_the_backward_step_is_called_at_the_time_it_starts_from() -> None:
    seen: list[float] = []

    def back(y, t, h):  # type: ignore[no-untyped-def]
        seen.append(t)
        return kick_drift_kick(y, t, -h)

    reversibility_study(kick_drift_kick, back, [1.0, 0.0], 1.0, [4, 8], 2)
    assert seen[:4] == [1.0, 0.75, 0.5, 0.25]


# --- whole claims through physverify confirm ------------------------------------------------
HEAT_CODE = '''\
"""Explicit (FTCS) heat conduction with fixed ends u = 0 (written for the tests)."""
import numpy as np


def solve(u0, r, steps):
    u = np.array(u0, dtype=float)
    for _ in range(steps):
        inner = u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = np.concatenate([[0.0], inner, [0.0]])
    return u
'''
# The right end is held at its neighbour's value (a zero-gradient end) instead of u = 0.
HEAT_ONE_SIDED = HEAT_CODE.replace("[0.0], inner, [0.0]", "[0.0], inner, inner[-1:]")

IDENTITY_CLAIM = '''
def bump(nx=41):
    x = np.linspace(-1.0, 1.0, nx)
    return np.where(np.abs(x) < 0.2, np.cos(2.5 * np.pi * x) ** 2, 0.0)


def mirror(steps):
    u = heat.solve(bump(), 0.4, steps)
    return identity_check(u - u[::-1], scale=float(np.max(np.abs(u))))


def control():
    # five steps do not reach the ends from the bump, so the ends cannot break the symmetry
    return Check("identity", "a centred bump stays mirror-symmetric before it reaches the ends", lambda: mirror(5))


def checks():
    # heat conduction keeps a mirror-symmetric start symmetric under symmetric boundary conditions
    return [Check("identity", "the bump stays mirror-symmetric after it reaches the ends", lambda: mirror(400))]
'''

FLUX_CODE = '''\
"""A conservative diffusion operator (k u')' on cell centres with one ghost cell each side (for the tests)."""
import numpy as np


def diffusion(u, dx, k):
    nx = len(u) - 2
    faces = np.arange(nx + 1) * dx
    flux = k(faces) * (u[1:] - u[:-1]) / dx
    return (flux[1:] - flux[:-1]) / dx
'''
# The conductivity taken at the cell centre left of each face instead of at the face.
FLUX_OFF_FACE = FLUX_CODE.replace("k(faces)", "k(faces - 0.5 * dx)")

OPERATOR_CLAIM = '''
GHOSTS = lambda nx: (np.arange(-1, nx + 1) + 0.5) / nx  # cell centres with one ghost each side
field = lambda x: np.sin(2.0 * x)


def study(k, dk):
    exact = lambda x: dk(x) * 2.0 * np.cos(2.0 * x) - 4.0 * k(x) * np.sin(2.0 * x)  # (k u')' by the product rule
    return operator_study(lambda u, dx: fluxes.diffusion(u, dx, k), field, exact, [16, 32, 64, 128], 2,
                          sample=GHOSTS, where="cells")


def control():
    # a constant conductivity is the same at the face and at the centre
    return Check("operator", "(k u')' is second order with k = 1", lambda: study(lambda x: 1.0 + 0 * x,
                                                                                  lambda x: 0 * x))


def checks():
    return [Check("operator", "(k u')' is second order with k = 1 + x**2",
                  lambda: study(lambda x: 1.0 + x**2, lambda x: 2.0 * x))]
'''

LEAPFROG_CODE = '''\
"""A leapfrog (kick-drift-kick) step of x'' = -omega**2 x that accepts a negative step (for the tests)."""


def step(x, v, h, omega):
    v = v - 0.5 * h * omega**2 * x
    x = x + h * v
    v = v - 0.5 * h * omega**2 * x
    return x, v
'''
# The closing half kick dropped and the opening one made whole: symplectic Euler, which is not symmetric.
LEAPFROG_EULER = LEAPFROG_CODE.replace("    v = v - 0.5 * h * omega**2 * x\n    x = x + h * v\n    v = v - 0.5 * h * omega**2 * x",
                                       "    v = v - h * omega**2 * x\n    x = x + h * v")

REVERSIBILITY_CLAIM = '''
def study(omega):
    forward = lambda y, t, h: np.array(leapfrog.step(y[0], y[1], h, omega))
    backward = lambda y, t, h: np.array(leapfrog.step(y[0], y[1], -h, omega))
    return reversibility_study(forward, backward, [1.0, 0.5], 2.0, [10, 20, 40, 80, 160], 2, require_exact=True)


def control():
    # without a force the kicks do nothing, so any ordering of them is reversible
    return Check("reversibility", "a free particle returns to its start", lambda: study(0.0))


def checks():
    return [Check("reversibility", "the oscillator returns to its start (leapfrog is symmetric)", lambda: study(2.0))]
'''

IMPORTS = "from physverify import identity_check, operator_study, reversibility_study\n"


@pytest.mark.parametrize(("module", "code", "body", "expected"), [
    ("heat", HEAT_CODE, IDENTITY_CLAIM, "rejected"),
    ("heat", HEAT_ONE_SIDED, IDENTITY_CLAIM, "confirmed"),
    ("fluxes", FLUX_CODE, OPERATOR_CLAIM, "rejected"),
    ("fluxes", FLUX_OFF_FACE, OPERATOR_CLAIM, "confirmed"),
    ("leapfrog", LEAPFROG_CODE, REVERSIBILITY_CLAIM, "rejected"),
    ("leapfrog", LEAPFROG_EULER, REVERSIBILITY_CLAIM, "confirmed"),
], ids=["identity-correct", "identity-one-sided-end", "operator-correct", "operator-off-face",
        "reversibility-correct", "reversibility-not-symmetric"])
def test_each_study_rejects_a_correct_code_and_confirms_a_seeded_defect(tmp_path, module, code, body,  # type: ignore[no-untyped-def]
                                                                       expected, cli) -> None:
    ran = confirm(cli, tmp_path, module, code, IMPORTS.format(module=module) + body,
                  "LeVeque, Finite Volume Methods for Hyperbolic Problems, sec. 4.1")
    assert verdict(ran) == expected, ran.stdout
    assert "control EXACT" in ran.stdout or "control PASS" in ran.stdout, ran.stdout


def test_refine_is_the_function_even_after_a_study_imported_the_refine_submodule() -> None:
    """A claim's ``from physverify import operator_study, refine`` gave the module physverify.refine:
    importing operators imports the submodule first, and the import system binds it on the package."""
    import subprocess
    import sys

    code = "from physverify import operator_study, refine; print(callable(refine), type(refine).__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "function"]


def test_the_report_shows_an_identity_as_its_numbers_never_as_a_log_log_plot(tmp_path, cli) -> None:  # type: ignore[no-untyped-def]
    """Issue 18, item 2: a symmetry check has no step size, so the report must not invent an h axis."""
    ran = confirm(cli, tmp_path, "heat", HEAT_ONE_SIDED, IMPORTS + IDENTITY_CLAIM, "Morton and Mayers, sec. 2.6")
    assert verdict(ran) == "confirmed"
    page = cli("report", "--ledger", "ledger.jsonl", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    assert "<dt>deviation</dt>" in page.stdout and "<dt>roundoff</dt>" in page.stdout
    assert "<svg" not in page.stdout and 'class="convergence"' not in page.stdout


def test_an_operator_study_given_a_plan_refines_only_until_its_verdict_holds() -> None:
    """operator_study goes through the one plan-aware sweep (issue 16): a plan stops early, on both verdicts."""
    import numpy as np

    from physverify import FAIL, PASS, operator_study, refine

    seen: list[int] = []

    def forward_difference(values: np.ndarray, dx: float) -> np.ndarray:
        seen.append(len(values) - 1)
        return np.diff(values) / dx

    centred = operator_study(forward_difference, np.sin, np.cos, refine(8, max_n=1 << 14), 2, sample="nodes",
                             where=lambda nx: (np.arange(nx) + 0.5) / nx)
    assert centred.status == PASS and "refined n = 8" in centred.message
    assert max(seen) < 1 << 14  # it stopped long before max_n
    seen.clear()
    at_nodes = operator_study(forward_difference, np.sin, np.cos, refine(8, max_n=1 << 14), 2, sample="nodes",
                              where=lambda nx: np.arange(nx) / nx)  # compared at the left node: first order
    assert at_nodes.status == FAIL and "grid location" in at_nodes.message and "integrator" not in at_nodes.message
    assert max(seen) < 1 << 14


# --- several fields on a staggered grid; growth is evidence (issue 35) ------------------------
CGRID_FIX_LINE = "dudy = (u[1:-1, 1:] - u[1:-1, :-1]) / dy"
CGRID_DEFECT_LINE = "dudy = (u[1:-1, 1:] + u[1:-1, :-1]) / dy"
CGRID_CODE = f'''\
"""Relative vorticity on an Arakawa C grid (written for the tests)."""


def vorticity(u, v, dx, dy):
    """zeta = dv/dx - du/dy at the interior cell corners; u on x-faces (nx+1, ny), v on y-faces (nx, ny+1)."""
    dvdx = (v[1:, 1:-1] - v[:-1, 1:-1]) / dx
    {CGRID_FIX_LINE}
    return dvdx - dudy
'''
CGRID_CLAIM = f'''\
"""Claim: du/dy adds the two u values where it needs their difference."""
import numpy as np

import cgrid
from physverify import Check, operator_study, refine

CLAIM = {{
    "text": "vorticity() adds the two u values in du/dy, so du/dy is about 2u/dy",
    "source": "a test",
    "file": "cgrid.py",
    "line": 7,
    "reference": "Arakawa and Lamb, Methods in Computational Physics 17 (1977), sec. III: the C-grid vorticity",
    "impact": "used",
    "defect": "{CGRID_DEFECT_LINE}",
    "fix": "{CGRID_FIX_LINE}",
}}
INTERIOR = lambda nx: np.arange(1, nx) / nx  # the interior corners of nx cells on [0, 1]


def study(u, dudy):
    v = lambda x, y: np.sin(2 * np.pi * x) * y**2
    zeta = lambda x, y: 2 * np.pi * np.cos(2 * np.pi * x) * y**2 - dudy(x, y)
    return operator_study(cgrid.vorticity, (u, v), zeta, refine(8), 2, domain=((0, 1), (0, 1)),
                          sample=("x-faces", "y-faces"), where=(INTERIOR, INTERIOR))


def control():
    # with u = 0 the sum and the difference of two u values agree: only dv/dx is tested
    return Check("operator", "the vorticity is second order with u = 0",
                 lambda: study(lambda x, y: 0 * x, lambda x, y: 0 * x))


def checks():
    return [Check("operator", "the vorticity is second order", lambda: study(
        lambda x, y: np.cos(2 * np.pi * y) * np.exp(x), lambda x, y: -2 * np.pi * np.sin(2 * np.pi * y) * np.exp(x)))]
'''


@pytest.mark.parametrize(("code", "expected"), [(CGRID_CODE.replace(CGRID_FIX_LINE, CGRID_DEFECT_LINE), "confirmed"),
                                                (CGRID_CODE, "rejected")], ids=["defect", "fixed"])
def test_the_c_grid_vorticity_sum_is_confirmed_by_its_growing_error_and_its_fix_rejected(
        tmp_path, cli, code: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "cgrid.py").write_text(code, encoding="utf-8")
    (tmp_path / "claim.py").write_text(CGRID_CLAIM, encoding="utf-8")
    ran = cli("confirm", "claim.py", "--trusted", "--ledger", "ledger.jsonl", cwd=tmp_path)
    assert verdict(ran) == expected, ran.stdout + ran.stderr
    assert "control PASS" in ran.stdout, ran.stdout
    growth = "the error grows as h shrinks" in ran.stdout and "the discretisation is inconsistent" in ran.stdout
    assert growth, ran.stdout  # the defect's growth is shown on the code, or on the variant with the defect put back
    assert "finer" not in ran.stdout.split("the error grows as h shrinks")[1].split("\n")[0]


def _c_grid(defect: bool, dtype: type = np.float64):  # type: ignore[no-untyped-def]
    def apply(u: np.ndarray, v: np.ndarray, dx: float, dy: float) -> np.ndarray:
        u, v = u.astype(dtype), v.astype(dtype)
        dudy = (u[1:-1, 1:] + u[1:-1, :-1]) if defect else (u[1:-1, 1:] - u[1:-1, :-1])
        return (v[1:, 1:-1] - v[:-1, 1:-1]) / dtype(dx) - dudy / dtype(dy)
    return apply


def _interior(nx: int) -> np.ndarray:
    return np.arange(1, nx) / nx


def _cgrid_study(defect: bool, ns: object, dtype: type = np.float64) -> object:
    u = lambda x, y: np.cos(2 * np.pi * y) * np.exp(x)  # noqa: E731
    v = lambda x, y: np.sin(2 * np.pi * x) * y**2  # noqa: E731
    zeta = lambda x, y: 2 * np.pi * np.cos(2 * np.pi * x) * y**2 + 2 * np.pi * np.sin(2 * np.pi * y) * np.exp(x)  # noqa: E731
    return operator_study(_c_grid(defect, dtype), (u, v), zeta, ns, 2, domain=((0, 1), (0, 1)),
                          sample=("x-faces", "y-faces"), where=(_interior, _interior))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_two_fields_at_their_own_staggerings_are_one_study(dtype: type) -> None:
    ns = [8, 16, 32, 64, 128, 256, 512, 1024]
    right, wrong = _cgrid_study(False, ns, dtype), _cgrid_study(True, ns, dtype)
    assert right.status == PASS, right.message  # type: ignore[attr-defined]
    assert wrong.status == FAIL and "grows as h shrinks" in wrong.message  # type: ignore[attr-defined]
    if dtype is np.float32:
        assert "levels n >= " in right.message and "round-off and were not used" in right.message  # type: ignore[attr-defined]


def _laplacian_float32(over_h3: bool):  # type: ignore[no-untyped-def]
    def apply(u: np.ndarray, dx: float) -> np.ndarray:
        u, h = u.astype(np.float32), np.float32(dx)
        return (np.roll(u, -1) - 2 * u + np.roll(u, 1)) / (h * h * (h if over_h3 else np.float32(1)))
    return apply


def test_a_float32_laplacian_over_h3_fails_on_growth_whose_finest_level_is_a_few_times_its_round_off() -> None:
    # The error u''/h doubles at every level (1e4 ... 8e4); the operator's response to a four-unit change
    # of the field grows like 1/h**3 and reaches a third of the error at nx = 2048, but every level is
    # more than GROWTH_OVER_BOUND times above it, and the growth is steady from the first: inconsistency.
    field, second = (lambda x: np.sin(2 * np.pi * x) + 0.5), (lambda x: -4 * np.pi**2 * np.sin(2 * np.pi * x))
    result = operator_study(_laplacian_float32(True), field, second, [256, 512, 1024, 2048], 2)
    assert result.status == FAIL and "grows as h shrinks" in result.message, result.message


def test_a_correct_float32_laplacian_growing_from_round_off_is_never_a_fail() -> None:
    # Past its round-off turn (nx >= 2048 in float32) a correct Laplacian's error is eps |u| / h**2 and grows
    # like 1/h**2, from the first level of this window on: round-off, within its bound.
    field, second = (lambda x: np.sin(2 * np.pi * x) + 0.5), (lambda x: -4 * np.pi**2 * np.sin(2 * np.pi * x))
    for levels in ([2048, 4096, 8192, 16384], [4096, 8192, 16384, 32768, 65536]):
        result = operator_study(_laplacian_float32(False), field, second, levels, 2)
        assert result.status != FAIL and "round-off" in result.message, result.message


def test_several_fields_need_one_sample_point_set_each() -> None:
    with pytest.raises(PhysverifyError, match="2 fields need 2 sample point sets"):
        operator_study(lambda u, v, dx: u, (np.sin, np.cos), np.cos, [8, 16], 2, sample=["cells", "nodes", "cells"])
    with pytest.raises(PhysverifyError, match="needs 2 axes"):
        operator_study(lambda u, dx: u, np.sin, np.cos, [8, 16], 2, sample="y-faces")


def _missing_inverse_dx(u: np.ndarray, dx: float) -> np.ndarray:
    return (np.roll(u, -1) - 2.0 * u + np.roll(u, 1)) / dx  # dx where dx**2 belongs: the result is dx u''


@pytest.mark.parametrize("levels", [[16, 32, 64, 128], refine(16)], ids=["fixed", "plan"])
def test_a_laplacian_missing_a_1_over_dx_fails_even_where_its_result_is_small_beside_the_error(levels: object) -> None:
    """At dx < 0.1 the code's result dx u'' is below a tenth of its flat error at every level; it shrinks like dx at
    one settled order, so the code has converged (to zero): not a solution lost to coarse steps, which decays
    faster than any power of h (Hairer and Wanner, Solving ODEs II, sec. IV.3)."""
    k = 2.0 * np.pi
    result = operator_study(_missing_inverse_dx, lambda x: np.sin(k * x), lambda x: -k * k * np.sin(k * x), levels, 2)
    assert result.status == FAIL and "does not decrease" in result.message, result.message
