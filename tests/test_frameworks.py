"""frameworks.py, and what JAX, Numba and PyTorch code gives every public study: the same verdict as NumPy's.

Each study is run twice on the same float32 numbers, once handed NumPy arrays and once the
framework's own (JAX without x64 computes in float32, the precision these cases use); the
status, the numbers and the message must agree, but for the note that says the JAX code
computes in float32.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.fixtures import Ran
from support.framework_codes import EXAMPLES, code, write_case

import physverify as pv
from physverify import frameworks
from physverify.checks import Result

jax = pytest.importorskip("jax")
jnp = jax.numpy
F32 = np.float32


def _numpy(x: Any) -> Any:
    return np.asarray(x, dtype=F32)


def _jax(x: Any) -> Any:
    return jnp.asarray(np.asarray(x, dtype=F32))


def _torch(x: Any) -> Any:
    import torch  # optional: its tests run where it is installed

    return torch.from_numpy(np.array(x, dtype=F32))


CONVERTERS = {"jax": _jax, "torch": _torch}


def _decay(to: Callable[[Any], Any]) -> Callable[..., Any]:
    """Forward Euler on y' = -y + source, the state handed back through ``to``."""

    def integrate(source: Callable[[float], Any], y0: Any, t_end: float, n: int) -> Any:
        h, y = t_end / n, np.asarray(y0, dtype=float)
        for k in range(n):
            y = y + h * (-y + np.asarray(source(k * h), dtype=float))
        return to(y)

    return integrate


def _walk(to: Callable[[Any], Any]) -> Callable[..., Any]:
    return lambda m, rng: to(rng.normal(0.5, 1.0, m))


def _euler_maruyama(to: Callable[[Any], Any]) -> Callable[..., Any]:
    def sample_at(dt: float, m: int, rng: np.random.Generator) -> Any:
        x = np.ones(m)
        for _ in range(round(1 / dt)):
            x = x + x * dt + 0.1 * x * rng.normal(0.0, dt**0.5, m)
        return to(x)

    return sample_at


def _rotation(to: Callable[[Any], Any], sign: float) -> Callable[..., Any]:
    def step(y: Any, t: float, h: float) -> Any:  # the implicit midpoint rule on a rotation: time-symmetric
        c, s = (1 - (h / 2) ** 2) / (1 + (h / 2) ** 2), sign * h / (1 + (h / 2) ** 2)
        y = np.asarray(y, dtype=float)
        return to(np.array([c * y[0] + s * y[1], -s * y[0] + c * y[1]]))

    return step


HS = [0.1, 0.05, 0.025, 0.0125]
MMS = pv.ManufacturedODE(lambda t: np.array([np.exp(-t) + 0.5 * np.sin(2 * t)]), lambda t, y: -y)
STUDIES: dict[str, Callable[[Callable[[Any], Any]], Result]] = {
    "check_order": lambda to: pv.check_order(HS, to([3e-2 * h * h for h in HS]), 2),
    "check_exact": lambda to: pv.check_exact(HS, to([1e-9, 2e-9, 1e-9, 3e-9]), floor=1e-6),
    "mms_order_study": lambda to: pv.mms_order_study(_decay(to), MMS, 1.0, [8, 16, 32, 64], 1),
    "reference_study": lambda to: pv.reference_study(_decay(to), lambda t, y: -y, np.array([1.0]), 1.0,
                                                     [8, 16, 32, 64], 1),
    "invariant_study": lambda to: pv.invariant_study(_decay(to), lambda y: to(np.asarray(y)[0] ** 2 * 0 + 1.0), np.array([1.0]), 1.0,
                                                     [8, 16, 32, 64], 1),
    "convergence_study": lambda to: pv.convergence_study(lambda n: to(3.0 / n**2), [8, 16, 32, 64], 2),
    "self_convergence_study": lambda to: pv.self_convergence_study(
        lambda n: to(np.sin(np.linspace(0, 1, 5)) + 1.0 / n**2), [8, 16, 32, 64], 2),
    "drift_study": lambda to: pv.drift_study(lambda t: to(1e-3 * (1.0 + 0.1 * np.sin(t))), [10.0, 20.0, 40.0, 80.0]),
    "identity_check": lambda to: pv.identity_check(to([1e-8, -2e-8, 0.0]), atol=1e-6),
    "operator_study": lambda to: pv.operator_study(
        lambda u, dx: to((np.roll(u, -1) - np.roll(u, 1)) / (2 * dx)), lambda x: np.sin(2 * np.pi * x),
        lambda x: 2 * np.pi * np.cos(2 * np.pi * x), [8, 16, 32, 64], 2),
    "reversibility_study": lambda to: pv.reversibility_study(_rotation(to, 1.0), _rotation(to, -1.0),
                                                             np.array([1.0, 0.0]), 1.0, [8, 16, 32], 2),
    "mean_study": lambda to: pv.mean_study(_walk(to), 0.5, tol=0.1, n=4000),
    "distribution_study": lambda to: pv.distribution_study(
        lambda m, rng: to(rng.random(m)), lambda x: np.clip(x, 0.0, 1.0), tol=0.05, n=4000),
    "weak_order_study": lambda to: pv.weak_order_study(_euler_maruyama(to), np.e, [0.1, 0.05, 0.025], 1, n=20_000),
}


def _without_note(message: str) -> str:
    return message.split("; jax_enable_x64 is off")[0]


@pytest.mark.parametrize("framework", sorted(CONVERTERS))
@pytest.mark.parametrize("name", sorted(STUDIES))
def test_framework_arrays_give_every_public_study_the_verdict_numpy_arrays_of_the_same_values_give(
    name: str, framework: str
) -> None:
    pytest.importorskip(framework)
    with_numpy, with_jax = STUDIES[name](_numpy), STUDIES[name](CONVERTERS[framework])
    assert with_jax.status == with_numpy.status
    assert _without_note(with_jax.message) == _without_note(with_numpy.message)
    assert getattr(with_jax, "errors", None) == getattr(with_numpy, "errors", None)


def test_a_float32_jax_result_notes_that_jax_enable_x64_is_off_and_a_numpy_one_does_not() -> None:
    assert frameworks.jax_x64_note(jnp.ones(3)).startswith("jax_enable_x64 is off: the code computes in float32")
    assert frameworks.jax_x64_note(np.ones(3, dtype=F32)) == ""
    assert "jax_enable_x64 is off" in STUDIES["operator_study"](_jax).message
    assert "jax_enable_x64 is off" not in STUDIES["operator_study"](_numpy).message


def test_only_compiled_callables_are_taken_for_compiled_ones() -> None:
    numba = pytest.importorskip("numba")
    assert frameworks.is_numba_dispatcher(numba.njit(lambda x: x))
    assert frameworks.is_jax_jitted(jax.jit(lambda x: x))
    assert not frameworks.is_numba_dispatcher(len) and not frameworks.is_jax_jitted(lambda x: x)


# --- claims on JAX and Numba code, end to end through `physverify confirm` and `replay` ----------
VERDICT_EXIT = {"confirmed": 1, "rejected": 0}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "fixed", "verdict"), [
    ("langevin", False, "confirmed"),  # the force where force over mass belongs; key-based sampler
    ("langevin", True, "rejected"),
    ("metropolis", False, "confirmed"),  # +Exp(1) where -Exp(1) belongs
    ("rk4", False, "confirmed"),  # @njit RK4, k3 at t + h
    ("rk4", True, "rejected"),
    ("laplacian", False, "confirmed"),  # float32 JAX, / dx where / dx**2 belongs
    ("laplacian", True, "rejected"),
    ("laplacian_x64", False, "confirmed"),  # the same, JAX computing in float64
])
def test_a_claim_on_jax_or_numba_code_gets_the_verdict_the_physics_calls_for_in_both_isolation_modes(
    tmp_path: Path, physverify: Callable[..., Ran], isolation: str, name: str, fixed: bool, verdict: str
) -> None:
    pytest.importorskip("numba" if name == "rk4" else "jax")
    code_name, _, variant = name.partition("_")
    claim = write_case(tmp_path, code_name, fixed=fixed, claim=f"claim_{name}.py" if variant else None)
    ran = physverify("confirm", claim.name, "--trusted", "--isolation", isolation, "--ledger", "ledger.jsonl",
                     cwd=tmp_path)
    line = json.loads((tmp_path / "ledger.jsonl").read_text())
    assert (line["verdict"], ran.returncode) == (verdict, VERDICT_EXIT[verdict]), ran.stdout + ran.stderr
    assert line["variant"]["held"] == ("fix" if fixed else "defect")
    assert "isolation_note" not in line  # jax and numba preloaded, nothing started: every claim forked
    if name.startswith("laplacian"):  # JAX's float32 is said where the operator's result is judged
        assert ("jax_enable_x64 is off" in line["checks"][0]["message"]) == (name == "laplacian")


def _jax_claims(folder: Path, count: int) -> None:
    """``count`` claims on JAX Laplacians (half with / dx, half with / dx**2), one phase of sin 2 pi x each."""
    for fixed in (False, True):
        (folder / f"laplacian_{'fixed' if fixed else 'defect'}.py").write_text(code("laplacian", fixed=fixed))
    for i in range(count):
        module = "laplacian_fixed" if i % 2 else "laplacian_defect"
        (folder / f"claim_wave{i}.py").write_text(textwrap.dedent(f"""
            import numpy as np
            from physverify import Check, operator_study
            import {module} as code
            CLAIM = {{"text": "the Laplacian divides by dx", "source": "a test", "file": "{module}.py", "line": 10,
                      "reference": "LeVeque, Finite Difference Methods, sec. 1.5", "impact": "used"}}
            K, PHASE = 2 * np.pi, {0.5 * i}
            def study(apply):
                return operator_study(apply, lambda x: np.sin(K * x + PHASE), lambda x: -K * K * np.sin(K * x + PHASE),
                                      [8, 16, 32, 64], 2)
            def control():
                return Check("operator", "book", lambda: study(lambda u, dx: (np.roll(u, -1) - 2 * u + np.roll(u, 1)) / dx**2))
            def checks():
                return [Check("operator", "code", lambda: study(code.laplacian))]
        """))


def _comparable(ledger: Path) -> list[dict[str, Any]]:
    """The ledger's lines without what differs between two runs of the same claims (the date, the seconds)."""
    lines = [json.loads(text) for text in ledger.read_text().splitlines()]
    for line in lines:
        line.pop("date")
        for outcome in [line["control"], *line["checks"]]:
            outcome.pop("seconds")
    return sorted(lines, key=lambda line: line["claim_file"])


@pytest.mark.slow
def test_a_replay_of_ten_jax_claims_forked_twice_writes_the_lines_a_fresh_replay_writes(
    tmp_path: Path, physverify: Callable[..., Ran]
) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    _jax_claims(claims, 10)
    runs = {}
    for label, isolation in (("fork1", "fork"), ("fork2", "fork"), ("fresh", "fresh")):
        ledger = tmp_path / f"{label}.jsonl"
        ran = physverify("replay", "claims", "--trusted", "--isolation", isolation, "--ledger", str(ledger),
                         "--record-all", "--jobs", "2", cwd=tmp_path)
        assert ledger.exists(), ran.stdout + ran.stderr
        runs[label] = _comparable(ledger)
    assert len(runs["fresh"]) == 10
    assert runs["fork1"] == runs["fork2"] == runs["fresh"]
    assert [line["verdict"] for line in runs["fresh"]] == ["confirmed", "rejected"] * 5


PAGE = Path(__file__).resolve().parent.parent / "docs" / "real-code.md"
WORKED = re.compile(r"<!-- framework-example: (\S+), verdict: ([\w ]+) -->\n```python\n(.*?)```", re.DOTALL)


def test_the_pages_worked_framework_claims_are_the_example_files_with_the_verdicts_the_tests_above_give() -> None:
    """docs/real-code.md's JAX Langevin, @njit RK4 and JAX Laplacian (x64 off and on) claims, as the tests run them."""
    shown = {name: (verdict, block) for name, verdict, block in WORKED.findall(PAGE.read_text(encoding="utf-8"))}
    assert set(shown) == {"claim_langevin.py", "claim_rk4.py", "claim_laplacian.py", "claim_laplacian_x64.py"}
    for name, (verdict, block) in shown.items():
        assert block == (EXAMPLES / name).read_text(encoding="utf-8"), name
        assert verdict == "confirmed"  # on the code as it is, which holds the defect (the parametrisation above)
