"""rk-order and rk-consistency: exact orders of the classical tables, tables and stages found where they are
written, silent on correct methods and embedded pairs, and the same orders as nodepy where it is installed."""

from __future__ import annotations

import ast
from fractions import Fraction
from pathlib import Path

import pytest
from tables import CLASSICAL, NODEPY

from physverify.scan import rk, trees
from physverify.scan.exact import Surd
from physverify.scan.reading import findings_in


def _table(source: str, name: str) -> rk.Table:
    found = rk.tables_in(ast.parse(source).body, name)
    assert len(found) == 1, found
    return found[0]


def scan(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in findings_in(ast.parse(source), "x.py")]


def test_there_are_as_many_rooted_trees_of_each_order_as_butcher_counts() -> None:
    assert [len(trees.trees(p)) for p in range(1, 9)] == [1, 1, 2, 4, 9, 20, 48, 115]  # Butcher, Table 300(I)


@pytest.mark.parametrize("name", sorted(CLASSICAL))
def test_each_classical_table_has_its_order_exactly_and_is_no_finding(name: str) -> None:
    source, expected = CLASSICAL[name]
    table = _table(source, name)
    assert table.exact == (name != "tsitouras")  # long decimals are judged in floats, everything else exactly
    assert rk.orders(table) == expected
    assert rk.judge(table, "x.py") is None


def test_gauss_legendre_nodes_are_read_as_exact_square_roots() -> None:
    table = _table(CLASSICAL["gauss_legendre_2"][0], "gauss_legendre_2")
    assert table.c[0] == Surd(Fraction(1, 2), Fraction(-1, 6), 3)  # type: ignore[index]
    assert table.stated == (4,)  # Gauss-Legendre with s stages states order 2s


def test_a_wrong_weight_in_rk4_drops_its_order_and_says_which_condition_fails() -> None:
    source = CLASSICAL["rk4"][0].replace("b = np.array([1, 2, 2, 1]) / 6", "b = np.array([1, 1, 3, 1]) / 6")
    finding = rk.judge(_table(source, "rk4"), "x.py")
    assert finding is not None and finding.rule == "rk-order" and finding.expected_order == 4
    assert "hold only up to order 2" in finding.message  # sum b = 1, sum b c = 1/2 and sum b c^2 = 1/3 still hold
    assert "the order-3 condition of the tree [[.]] (gamma = 6) fails" in finding.message
    assert "Butcher, Numerical Methods for ODEs, sec. 31x" in finding.message


def test_a_node_that_is_not_the_row_sum_is_an_order_finding_when_the_order_drops() -> None:
    source = CLASSICAL["rk4"][0].replace("c = np.array([0, 0.5, 0.5, 1])", "c = np.array([0, 0.5, 1, 1])")
    finding = rk.judge(_table(source, "rk4"), "x.py")
    assert finding is not None and finding.rule == "rk-order"
    assert "stage 3 is evaluated at t + h, but its increments sum to 1/2*h" in finding.message


def test_an_inconsistent_runge_kutta_table_without_an_order_is_a_consistency_finding() -> None:
    assert scan("RK_A = [[0, 0], [1, 0]]\nRK_b = [0.5, 0.6]\n") == [(1, "rk-consistency")]
    assert scan("class Tableau:\n    A = [[0, 0], [1, 0]]\n    b = [0.5, 0.5]\n    c = [0, 0.5]\n") == [
        (2, "rk-consistency")]
    assert scan('"""Butcher tables."""\nA = [[0, 0], [1, 0]]\nb = [0.5, 0.5]\nc = [0, 0.5]\n') == [
        (2, "rk-consistency")]
    assert scan("RK_A = [[0, 0], [1, 0]]\nRK_b = [0.5, 0.5]\nRK_c = [0, 1]\n") == []  # Heun, unnamed: right


@pytest.mark.parametrize("source", [
    "def test_solve():\n    A = [[4, 1], [1, 3]]\n    b = [1, 2]\n    return solve(A, b)\n",  # A x = b
    "A = [[1, 1], [-1, 2]]\nb = [4, 1]\nc = [-1, -2]\nres = linprog(c, A_ub=A, b_ub=b)\n",  # linprog's cost
    "class Work:\n    A = [[0, 0], [1, 0]]\n    b = [0.5, 0.6]\n",  # "work" holds "rk", not as a word
])
def test_linear_algebra_named_a_b_c_is_no_runge_kutta_table(source: str) -> None:
    assert scan(source) == []


def test_an_embedded_pair_s_lower_row_is_not_a_defect_but_a_pair_missing_its_high_order_is() -> None:
    source = CLASSICAL["dormand_prince"][0]
    assert rk.judge(_table(source, "dormand_prince"), "x.py") is None
    broken = source.replace("F(11, 84), 0]\nb_hat", "F(11, 83), 0]\nb_hat")
    finding = rk.judge(_table(broken, "dormand_prince"), "x.py")
    assert finding is not None and finding.rule == "rk-order" and finding.expected_order == 5


def test_class_attributes_with_an_order_attribute_are_judged_by_it() -> None:
    source = ("class Midpoint:\n    order = 3\n    A = [[0, 0], [0.5, 0]]\n    b = [0, 1]\n    c = [0, 0.5]\n")
    assert scan(source) == [(3, "rk-order")]
    assert scan(source.replace("order = 3", "order = 2")) == []


def test_prefixed_tables_take_their_stated_order_from_the_prefix() -> None:
    source = "RK4_A = [[0,0,0,0],[0.5,0,0,0],[0,0.5,0,0],[0,0,1,0]]\nRK4_B = [1/6, 1/3, 1/3, 1/6]\n"
    assert scan(source) == []
    assert scan(source.replace("RK4_", "RK5_")) == [(1, "rk-order")]


@pytest.mark.parametrize(("name", "stated"), [
    ("rk4_step", (4,)), ("RungeKutta4", (4,)), ("rk45", (5, 4)), ("classical_rk", (4,)), ("heun", (2,)),
    ("ralston3", (3,)), ("dopri5", (5, 4)), ("ssprk3", (3,)), ("forward_euler", (1,)), ("explicit_midpoint", (2,)),
    ("bs23", (3, 2)), ("tsit5", (5, 4)), ("rk_step", None), ("park4", None), ("step", None),
])
def test_names_state_orders(name: str, stated: tuple[int, ...] | None) -> None:
    assert rk.stated_by_name(name) == stated


def test_docstrings_state_orders_but_not_the_order_of_the_equation() -> None:
    assert rk.stated_by_docstring("Fourth-order Runge-Kutta step.") == (4,)
    assert rk.stated_by_docstring("A method of order 3.") == (3,)
    assert rk.stated_by_docstring("Solve a second-order ODE with this step.") is None


# docs/examples/real-code/rk4_step.py takes k3 at t + h (line 17); put right, it is the classical RK4
RK4_WRONG = (Path(__file__).resolve().parents[2] / "docs" / "examples" / "real-code" / "rk4_step.py").read_text()
RK4_STAGES = RK4_WRONG.replace("k3 = f(t + h,", "k3 = f(t + 0.5 * h,")


def test_stages_written_out_are_read_as_their_table() -> None:
    function = next(node for node in ast.parse(RK4_STAGES).body if isinstance(node, ast.FunctionDef)
                    and node.name == "rk4_step")
    table = rk.from_stages(function, None)
    assert table is not None and rk.orders(table) == (4,) and table.exact
    assert table.c == [0, Fraction(1, 2), Fraction(1, 2), 1]
    assert scan(RK4_STAGES) == []


def test_a_stage_at_the_wrong_time_is_found_at_its_line() -> None:
    assert scan(RK4_WRONG) == [(17, "rk-order")]


@pytest.mark.parametrize("source", [
    # pre-multiplied stages, keyword time, a method object's rhs, y updated in place
    "def rk4(self, y, t, dt):\n    k1 = dt*self.f(y, t)\n    k2 = dt*self.f(y + k1/2, t + dt/2)\n"
    "    k3 = dt*self.f(y + k2/2, t + dt/2)\n    k4 = dt*self.f(y + k3, t + dt)\n    y += (k1 + 2*k2 + 2*k3 + k4)/6\n"
    "    return y\n",
    "def heun(f, t, y, h):\n    k1 = f(t, y)\n    k2 = f(t + h, y + h*k1)\n    return y + h*(k1 + k2)/2, t + h\n",
    "def midpoint(f, t, y, h):\n    return y + h*f(t + h/2, y + h/2*f(t, y))\n",
    "def euler(f, t, y, h):\n    return y + h*f(t, y)\n",
    # an argument passed through unchanged, a string among them
    "def rk2(f, t, y, h, p):\n    k1 = f(t, y, p, 'mode')\n    k2 = f(t + h, y + h*k1, p, 'mode')\n"
    "    return y + h/2*(k1 + k2)\n",
])
def test_correct_steppers_in_their_usual_spellings_are_silent(source: str) -> None:
    function = ast.parse(source).body[0]
    assert rk.from_stages(function, None) is not None  # type: ignore[arg-type]
    assert scan(source) == []


@pytest.mark.parametrize("source", [
    "def heun(f, t, y, h):\n    k1 = f(t, y)\n    k2 = f(t + h, y + h*k1)\n    return y + h*(k1 + k2)\n",
    "def heun(f, t, y, h):\n    k1 = f(t, y)\n    k2 = f(t, y + h*k1)\n    return y + h*(k1 + k2)/2\n",  # every stage at t
    "def midpoint(f, t, y, h):\n    return y + h*f(t + h, y + h/2*f(t, y))\n",
])
def test_broken_steppers_are_found(source: str) -> None:
    assert [rule for _, rule in scan(source)] == ["rk-order"]


def test_a_partitioned_stepper_is_not_read_as_one_table() -> None:
    source = ("def rk2_xv(acc, t, x, v, h):\n    k1 = acc(t, x, v)\n"
              "    k2 = acc(t + h, x + h*v, v + h*k1)\n    return v + h*(k1 + k2)/2\n")
    assert rk.from_stages(ast.parse(source).body[0], None) is None  # type: ignore[arg-type]


def test_steppers_the_reader_cannot_follow_are_left_alone() -> None:
    loop = "def rk4(f, t, y, h, a, b, c):\n    k = []\n    for i in range(4):\n        k.append(f(t + c[i]*h, y))\n" \
           "    return y + h*sum(b[i]*k[i] for i in range(4))\n"
    assert scan(loop) == []


def test_nodepy_agrees_on_the_order_of_every_classical_table() -> None:
    rkm = pytest.importorskip("nodepy.runge_kutta_method")
    import numpy as np

    methods = rkm.loadRKM("All")
    for ours, theirs in NODEPY.items():
        table = _table(CLASSICAL[ours][0], ours)
        method = methods[theirs]
        tol = 1e-10  # nodepy's own default 1e-14 is tighter than Tsit5's published decimals satisfy its conditions
        expected = [method.order(tol=tol)]
        if table.embedded is not None:
            expected.append(method.embedded_method.order(tol=tol))
        assert list(rk.orders(table)) == expected, ours
        assert np.allclose(np.array(method.b, dtype=float), [float(x) for x in table.b])
