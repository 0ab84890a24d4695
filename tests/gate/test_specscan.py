"""claim.reference_notes (specscan.notes_in): rule 1's static heuristic, with true and false positives."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physverify.gate import specscan
from physverify.gate.claim import reference_notes

CLAIM = {"file": "oscillator.py", "line": 10}


def notes_for(tmp_path: Path, source: str, file: str = "oscillator.py") -> list[str]:
    path = tmp_path / "claim_x.py"
    path.write_text(source, encoding="utf-8")
    return reference_notes(path, {**CLAIM, "file": file})


# --- true positives ---------------------------------------------------------------------
def test_a_reference_calling_the_module_under_test_gets_one_note_with_its_line(tmp_path: Path) -> None:
    source = "import numpy as np\nimport oscillator\n\n\ndef reference_rhs(t, y):\n    return oscillator.rhs(t, y)\n"
    assert notes_for(tmp_path, source) == [
        "reference_rhs() (line 5) calls oscillator.rhs, the code under test"
    ]


def test_a_name_imported_from_the_module_under_test_is_seen(tmp_path: Path) -> None:
    source = "from oscillator import rhs as f\n\ndef exact_solution(t):\n    return f(t, 1.0)\n"
    assert notes_for(tmp_path, source) == ["exact_solution() (line 3) calls oscillator.rhs, the code under test"]


def test_an_aliased_module_is_named_by_its_real_name(tmp_path: Path) -> None:
    source = "import oscillator as osc\n\ndef rhs_ref(t, y):\n    return osc.rhs(t, y)\n"
    assert notes_for(tmp_path, source) == ["rhs_ref() (line 3) calls oscillator.rhs, the code under test"]


def test_passing_the_code_under_test_to_another_solver_is_a_use(tmp_path: Path) -> None:
    source = (
        "from scipy.integrate import solve_ivp\nimport oscillator\n\n"
        "def analytic_trajectory(ts):\n    return solve_ivp(oscillator.rhs, (0, 1), [1, 0], t_eval=ts).y\n"
    )
    assert notes_for(tmp_path, source) == ["analytic_trajectory() (line 4) uses oscillator.rhs, the code under test"]


def test_a_package_path_and_a_named_lambda_are_recognised(tmp_path: Path) -> None:
    source = "from sim.physics import oscillator\n\nref_energy = lambda y: oscillator.energy(y)\n"
    assert notes_for(tmp_path, source, file="src/sim/physics/oscillator.py") == [
        "ref_energy() (line 3) calls sim.physics.oscillator.energy, the code under test"
    ]


def test_a_helper_called_by_the_reference_is_followed(tmp_path: Path) -> None:
    source = (
        "import oscillator\n\ndef _force(y):\n    return oscillator.force(y)\n\n"
        "def expected_acceleration(y):\n    return _force(y) / 2.0\n"
    )
    assert notes_for(tmp_path, source) == [
        "expected_acceleration() (line 6) calls oscillator.force, the code under test (through _force())"
    ]


def test_each_dependency_is_reported_once_per_reference(tmp_path: Path) -> None:
    source = "import oscillator\n\ndef reference(t):\n    return oscillator.rhs(t) + oscillator.rhs(2 * t)\n"
    assert len(notes_for(tmp_path, source)) == 1


# --- false positives avoided ------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        # a reference written from the physics, as the spec asks
        "import numpy as np\nimport oscillator\n\ndef reference_rhs(t, y):\n    return np.array([y[1], -4.0 * y[0]])\n",
        # the code under test called where it belongs: in control() and checks()
        "import oscillator\n\ndef control():\n    return oscillator.integrate()\n",
        # a module whose name only starts like the one under test
        "import oscillator_tools\n\ndef reference(t):\n    return oscillator_tools.rhs(t)\n",
        # a parameter that shadows the imported name
        "from oscillator import rhs\n\ndef exact(t, rhs):\n    return rhs(t)\n",
        # another module of the same package
        "import sim.other\nimport sim.oscillator\n\ndef reference(t):\n    return sim.other.rhs(t)\n",
        # a word inside a name is not a reference prefix
        "import oscillator\n\ndef preference(t):\n    return oscillator.rhs(t)\n",
    ],
    ids=["physics", "control", "similar-module", "shadowed", "sibling-module", "preference"],
)
def test_no_note_where_the_reference_does_not_use_the_code_under_test(tmp_path: Path, source: str) -> None:
    assert notes_for(tmp_path, source, file="sim/oscillator.py") == []


# --- odd input never raises ---------------------------------------------------------------
def test_a_1500_deep_attribute_chain_in_a_reference_is_scanned(tmp_path: Path) -> None:
    """Issue 13, item 7: the scan recursed along the chain and raised RecursionError; confirm wrote no line."""
    source = "import numpy as np\nimport oscillator\n\n\ndef reference_rhs(t, y):\n"
    source += "    return oscillator.rhs(t, y) + np" + ".linalg" * 1500 + "\n"
    assert notes_for(tmp_path, source) == ["reference_rhs() (line 5) calls oscillator.rhs, the code under test"]


def test_a_chain_of_1500_helpers_is_followed_to_the_code_under_test(tmp_path: Path) -> None:
    """Issue 13, item 7: following helper calls recursed once per helper."""
    helpers = "".join(f"def h{i}():\n    return h{i + 1}()\n\n\n" for i in range(1500))
    source = f"import oscillator\n\n\ndef reference():\n    return h0()\n\n\n{helpers}def h1500():\n    return oscillator.rhs()\n"
    assert notes_for(tmp_path, source) == ["reference() (line 4) calls oscillator.rhs, the code under test (through h1500())"]



@pytest.mark.parametrize("file", [None, 3, "", "   "])
def test_a_claim_without_a_usable_file_gives_no_notes(tmp_path: Path, file: object) -> None:
    path = tmp_path / "c.py"
    path.write_text("import oscillator\ndef reference():\n    return oscillator.rhs()\n")
    assert reference_notes(path, {"file": file}) == []


def test_an_unparseable_or_missing_file_gives_no_notes(tmp_path: Path) -> None:
    assert notes_for(tmp_path, "def reference(:\n") == []
    assert reference_notes(tmp_path / "missing.py", CLAIM) == []
    (tmp_path / "bytes.py").write_bytes(b"\xff\xfe\x00import oscillator\n")
    assert reference_notes(tmp_path / "bytes.py", CLAIM) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(st.none(), st.integers(), st.text(max_size=30), st.sampled_from(["/", ".", "..", "a/..", "x/__init__.py", ".py"])),
    st.text(alphabet=string.printable, max_size=200),
)
def test_any_file_value_and_any_source_give_a_list_of_notes(tmp_path: Path, file: object, source: str) -> None:
    path = tmp_path / "c.py"
    path.write_text("import oscillator\n" + source, encoding="utf-8")
    notes = reference_notes(path, {"file": file})
    assert isinstance(notes, list) and all(isinstance(n, str) for n in notes)


def test_the_fast_walk_visits_every_node_in_ast_walks_order() -> None:
    """specscan.nodes replaced ast.walk (issue 19); rule 1 and the imports depend on the same order."""
    import ast as syntax

    import physverify

    folder = Path(physverify.__file__).parent
    for file in sorted(folder.glob("*.py")):
        tree = syntax.parse(file.read_text(encoding="utf-8"))
        assert [id(node) for node in specscan.nodes(tree)] == [id(node) for node in syntax.walk(tree)], file.name


def test_the_scan_finds_what_isinstance_over_ast_walk_finds() -> None:
    """The scan skips nodes by exact type (specscan._PLAIN, issue 19); the imports and functions must not change."""
    import ast as syntax

    import physverify

    wanted = (syntax.Import, syntax.ImportFrom, syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.Assign,
              syntax.AnnAssign)
    assert not any(isinstance(kind, type) and issubclass(kind, wanted) for kind in specscan._PLAIN)
    folder = Path(physverify.__file__).parent
    for file in sorted([*folder.rglob("*.py"), *Path(__file__).parent.glob("*.py")]):
        tree = syntax.parse(file.read_text(encoding="utf-8"))
        found = specscan._Module(tree)
        imports = [n for n in syntax.walk(tree) if isinstance(n, (syntax.Import, syntax.ImportFrom))]
        functions = [pair for n in syntax.walk(tree) if not isinstance(n, (syntax.Import, syntax.ImportFrom))
                     for pair in specscan._named(n)]
        assert found.import_nodes == imports and found.functions == functions, file.name


def test_module_names_are_remembered_per_string_and_each_caller_gets_its_own_set() -> None:
    """Issue 19: the names are remembered by the file's string; a caller changing its set changes no later answer."""
    first = specscan.module_names("src/sim/physics/oscillator.py")
    assert first == {"oscillator", "physics.oscillator", "sim.physics.oscillator", "src.sim.physics.oscillator"}
    first.add("planted")
    assert specscan.module_names("src/sim/physics/oscillator.py") == first - {"planted"}
    assert specscan.module_names("pkg/__init__.py") == {"pkg"} and specscan.module_names("//a/./b.py") == {"//.a.b", "a.b", "b"}
    assert specscan.module_names(" ") == set() and specscan.module_names(3) == set()
