"""The stochastic studies: their error rates, their errors, their determinism, and the worked claims (issue 20).

The rate tests run a study over many seeds and allow the count a correct rule could reach by
chance: the (1 - 1e-6) quantile of the binomial with the stated rate, so they fail only when the
rate is really above it, never by bad luck in practice.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.fixtures import verdict_line
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from physverify import (
    ERROR,
    FAIL,
    INCONCLUSIVE,
    PASS,
    Check,
    StochasticResult,
    distribution_study,
    mean_study,
    refine,
    run_check,
    weak_order_study,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples" / "stochastic"
PAGE = EXAMPLES.parent.parent / "stochastic.md"
SEEDS = 300


def chance_limit(rate: float, runs: int = SEEDS) -> int:
    """The most wrong decisions a rule whose error rate is ``rate`` gives in ``runs`` runs, but for a 1e-6 chance."""
    return int(binom.ppf(1 - 1e-6, runs, rate))


def normal(mean: float, sd: float):  # type: ignore[no-untyped-def]
    return lambda m, rng: rng.normal(mean, sd, m)


# --- the interval logic ------------------------------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(where=st.floats(-1.0, 1.0), sd=st.floats(0.1, 10.0), n=st.integers(10, 200), planned=st.booleans())
def test_a_mean_inside_the_band_fails_at_most_at_rate_alpha(where: float, sd: float, n: int, planned: bool) -> None:
    tol, alpha = 0.2 * sd, 0.05
    sizes = refine(n, max_n=8 * n) if planned else n
    fails = sum(mean_study(normal(where * tol, sd), 0.0, tol=tol, n=sizes, alpha=alpha, seed=s).status == FAIL
                for s in range(SEEDS))
    assert fails <= chance_limit(alpha)


@settings(max_examples=12, deadline=None)
@given(beyond=st.floats(1.0001, 3.0), side=st.sampled_from([-1.0, 1.0]), sd=st.floats(0.1, 10.0),
       n=st.integers(10, 200), planned=st.booleans())
def test_a_mean_outside_the_band_passes_at_most_at_rate_alpha(beyond: float, side: float, sd: float, n: int,
                                                              planned: bool) -> None:
    tol, alpha = 0.2 * sd, 0.05
    sizes = refine(n, max_n=8 * n) if planned else n
    passes = sum(mean_study(normal(side * beyond * tol, sd), 0.0, tol=tol, n=sizes, alpha=alpha, seed=s).status == PASS
                 for s in range(SEEDS))
    assert passes <= chance_limit(alpha)


def test_the_mean_study_decides_when_the_interval_is_clear_of_the_band_edges() -> None:
    assert mean_study(normal(0.0, 1.0), 0.0, tol=0.2, n=5000, seed=0).status == PASS
    assert mean_study(normal(0.5, 1.0), 0.0, tol=0.2, n=5000, seed=0).status == FAIL


def test_an_undecided_mean_says_which_n_would_decide_and_a_plan_grows_to_it() -> None:
    first = mean_study(normal(0.05, 1.0), 0.0, tol=0.2, n=100, seed=0)
    assert first.status == INCONCLUSIVE and "would decide" in first.message
    planned = mean_study(normal(0.05, 1.0), 0.0, tol=0.2, n=refine(100, max_n=12800), seed=0)
    assert planned.status == PASS and planned.n > 100
    assert planned.looks == 8 and planned.level == pytest.approx(1e-3 / 8)
    assert "8 looks" in planned.message


def test_kolmogorov_rates_hold_at_a_true_distance_equal_to_tol() -> None:
    # U(0, 1) against the cdf of U(0, c): the distance is 1 - 1/c, here exactly tol (then a little more).
    tol, alpha = 0.05, 0.05
    def against(c: float):  # type: ignore[no-untyped-def]
        return lambda x: np.clip(np.asarray(x) / c, 0.0, 1.0)
    uniform = lambda m, rng: rng.random(m)  # noqa: E731
    fails = sum(distribution_study(uniform, against(1 / (1 - tol)), tol=tol, n=400, alpha=alpha, seed=s).status == FAIL
                for s in range(SEEDS))
    passes = sum(distribution_study(uniform, against(1 / (1 - tol * 1.001)), tol=tol, n=400, alpha=alpha,
                                    seed=s).status == PASS for s in range(SEEDS))
    assert fails <= chance_limit(alpha) and passes <= chance_limit(alpha)


def test_total_variation_rates_hold_at_a_true_distance_equal_to_tol() -> None:
    tol, alpha = 0.05, 0.05
    coin = lambda p: (lambda m, rng: (rng.random(m) < p).astype(int))  # noqa: E731
    pmf = {0: 0.5, 1: 0.5}
    fails = sum(distribution_study(coin(0.5 + tol), pmf=pmf, tol=tol, n=400, alpha=alpha, seed=s).status == FAIL
                for s in range(SEEDS))
    passes = sum(distribution_study(coin(0.5 + 1.001 * tol), pmf=pmf, tol=tol, n=400, alpha=alpha, seed=s).status == PASS
                 for s in range(SEEDS))
    assert fails <= chance_limit(alpha) and passes <= chance_limit(alpha)


def test_the_distribution_study_decides_continuous_and_discrete_samples() -> None:
    from scipy.stats import norm, poisson

    assert distribution_study(normal(0.0, 1.0), norm.cdf, tol=0.05, n=5000).status == PASS
    assert distribution_study(normal(0.3, 1.0), norm.cdf, tol=0.05, n=5000).status == FAIL
    assert distribution_study(lambda m, rng: rng.poisson(10, m), pmf=lambda k: poisson.pmf(k, 10), tol=0.05,
                              n=20000).status == PASS
    labels = lambda m, rng: rng.choice(["up", "down"], m, p=[0.3, 0.7])  # noqa: E731
    assert distribution_study(labels, pmf={"up": 0.3, "down": 0.7}, tol=0.03, n=20000).status == PASS


def test_a_value_outside_the_mapping_counts_against_the_code_not_as_an_error() -> None:
    three = lambda m, rng: rng.choice(["a", "b", "c"], m, p=[0.3, 0.5, 0.2])  # noqa: E731
    result = distribution_study(three, pmf={"a": 0.3, "b": 0.7}, tol=0.05, n=20000)
    assert result.status == FAIL and result.estimate == pytest.approx(0.2, abs=0.02)


# --- chains -----------------------------------------------------------------------------------
def ar1(rho: float):  # type: ignore[no-untyped-def]
    """A stationary AR(1) chain of unit variance that continues between calls."""
    state = [0.0]
    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        from scipy.signal import lfilter
        noise = rng.standard_normal(m) * np.sqrt(1 - rho**2)
        values, last = lfilter([1.0], [1.0, -rho], noise, zi=[rho * state[0]])
        state[0] = float(values[-1])
        return values
    return sample


def test_a_correlated_chain_without_batches_is_inconclusive_and_says_to_pass_batches() -> None:
    result = mean_study(ar1(0.9), 0.0, tol=0.1, n=20000)
    assert result.status == INCONCLUSIVE and "pass batches=" in result.message


def test_batch_means_decide_a_chain_and_report_its_effective_sample_size() -> None:
    result = mean_study(ar1(0.9), 0.0, tol=0.1, n=100_000, batches=20)
    assert result.status == PASS and result.batches == 20
    assert 2000 < (result.ess or 0) < 15000  # the AR(1) value is n (1 - rho) / (1 + rho) = 5263


def test_batches_shorter_than_the_chain_s_memory_are_flagged() -> None:
    result = mean_study(ar1(0.999), 0.0, tol=0.5, n=20000, batches=20)
    assert result.status == INCONCLUSIVE and "use longer batches" in result.message


# --- the weak order ---------------------------------------------------------------------------
def gbm_euler(dt: float, m: int, rng: np.random.Generator) -> np.ndarray:
    """Euler-Maruyama for dX = X dt + 0.1 X dW on [0, 1] from X0 = 1, returning f(X) = X (E[X_1] = e)."""
    x = np.ones(m)
    for _ in range(round(1 / dt)):
        x = x + x * dt + 0.1 * x * rng.normal(0.0, np.sqrt(dt), m)
    return x


def test_euler_maruyama_has_weak_order_one() -> None:
    result = weak_order_study(gbm_euler, np.e, [0.1, 0.05, 0.025, 0.0125], 1, n=100_000)
    assert result.status == PASS, result.message
    assert result.kind == "weak order" and len(result.biases) == 4


def test_a_bias_of_order_one_half_fails_a_claim_of_order_one() -> None:
    half = lambda dt, m, rng: gbm_euler(dt, m, rng) + 0.5 * np.sqrt(dt)  # noqa: E731
    result = weak_order_study(half, np.e, [0.1, 0.05, 0.025, 0.0125], 1, n=100_000)
    assert result.status == FAIL, result.message


def test_a_bias_hidden_by_the_monte_carlo_error_is_inconclusive_with_the_n_to_resolve_it() -> None:
    result = weak_order_study(gbm_euler, np.e, [0.02, 0.01, 0.005], 1, n=200)
    assert result.status == INCONCLUSIVE and "per dt would resolve" in result.message


# --- bad output and frozen chains ---------------------------------------------------------------
@pytest.mark.parametrize(("sample", "words"), [
    (lambda m, rng: np.ones((m, 2)), "shape (20, 2)"),
    (lambda m, rng: np.full(m, np.nan), "not finite"),
    (lambda m, rng: np.ones(m - 3), "shape (17,)"),
    (lambda m, rng: 1.0, "a single number"),
    (lambda m, rng: ["x"] * m, "not numbers"),
])
def test_a_sample_of_the_wrong_shape_or_nan_is_an_error_with_a_clear_message(sample, words) -> None:  # type: ignore[no-untyped-def]
    outcome = run_check(Check("stochastic", "bad sample", lambda: mean_study(sample, 1.0, tol=0.1, n=20)))
    assert outcome.status == ERROR and words in outcome.message and "sample(20, rng)" in outcome.message
    assert "seed 0" in outcome.message


def test_too_few_values_are_an_error_naming_the_minimum() -> None:
    outcome = run_check(Check("stochastic", "tiny n", lambda: mean_study(normal(0, 1), 0.0, tol=0.1, n=3)))
    assert outcome.status == ERROR and "at least 10" in outcome.message


def test_a_discrete_sample_with_nan_or_nested_values_is_an_error() -> None:
    nan = distribution_study(lambda m, rng: [1.0] * (m - 1) + [float("nan")], pmf={1: 1.0}, tol=0.1, n=20)
    nested = distribution_study(lambda m, rng: [[1]] * m, pmf={1: 1.0}, tol=0.1, n=20)
    assert (nan.status, nested.status) == (ERROR, ERROR)
    assert "not finite" in nan.message and "list at index 0" in nested.message


def test_a_constant_sample_is_judged_like_any_other() -> None:
    frozen = lambda m, rng: np.full(m, 0.25)  # noqa: E731
    assert mean_study(frozen, 0.25, tol=0.0, n=50).status == PASS
    assert mean_study(frozen, 1.0, tol=0.1, n=50).status == FAIL
    assert mean_study(frozen, 1.0, tol=0.1, n=50, batches=10).status == FAIL


def test_the_draw_goes_into_the_ledger_data_and_the_message() -> None:
    outcome = run_check(Check("stochastic", "mean", lambda: mean_study(normal(0, 1), 0.0, tol=0.5, n=100, seed=42)))
    data = outcome.to_dict()["data"]
    assert (data["seed"], data["generator"], data["n"], data["alpha"]) == (42, "numpy.random.PCG64", 100, 1e-3)
    assert "seed 42" in outcome.message and "numpy.random.PCG64" in outcome.message and "n = 100" in outcome.message


def test_the_same_seed_gives_the_same_result_and_another_seed_another_sample() -> None:
    a, b = (mean_study(normal(0, 1), 0.0, tol=0.5, n=100, seed=5) for _ in range(2))
    assert a == b and isinstance(a, StochasticResult)
    assert mean_study(normal(0, 1), 0.0, tol=0.5, n=100, seed=6).estimate != a.estimate


def test_refine_stays_the_function_after_a_study_imported_its_module() -> None:
    import physverify.refine  # noqa: F401 - the import that used to replace the package's attribute
    from physverify import refine as plan

    assert callable(plan) and plan(8).start == 8


# --- the worked claims, through physverify confirm as a process ----------------------------------
FIXES = {
    "claim_ising_metropolis.py": ("ising.py", "math.exp(beta * delta)", "math.exp(-beta * delta)"),
    "claim_langevin_equipartition.py": ("langevin.py", "np.sqrt(friction", "np.sqrt(2.0 * friction"),
    "claim_gillespie_waiting_time.py": ("gillespie.py", "rng.exponential(total)", "rng.exponential(1.0 / total)"),
}


@pytest.fixture()
def examples(tmp_path: Path) -> Path:
    folder = tmp_path / "stochastic"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.mark.parametrize("claim", [pytest.param(name, marks=() if "ising" in name else pytest.mark.slow)
                                   for name in sorted(FIXES)])
def test_the_seeded_defect_is_confirmed_and_the_fixed_code_rejected(examples: Path, claim: str, cli: Any) -> None:
    # in this process (the claim still runs in its own child): what is checked is the printed verdict and lines
    code, defect, fix = FIXES[claim]
    ran = cli("confirm", claim, "--trusted", "--ledger", "ledger.jsonl", cwd=examples)
    assert (ran.returncode, verdict_line(ran.stdout).split(" (")[0]) == (1, "confirmed"), ran.stdout + ran.stderr
    assert "control PASS" in ran.stdout and "check FAIL" in ran.stdout
    page = PAGE.read_text(encoding="utf-8")
    missing = [line for line in ran.stdout.splitlines() if line not in page.splitlines()]
    assert not missing, f"docs/stochastic.md does not show these lines of the output: {missing}"
    text = (examples / code).read_text(encoding="utf-8")
    assert text.count(defect) == 1
    (examples / code).write_text(text.replace(defect, fix), encoding="utf-8")
    ran = cli("confirm", claim, "--trusted", "--ledger", "ledger.jsonl", cwd=examples)
    assert (ran.returncode, verdict_line(ran.stdout).split(" (")[0]) == (0, "rejected"), ran.stdout + ran.stderr


def checks_without_time(ledger: Path) -> list[bytes]:
    """Each line's control and checks as JSON bytes, without the wall-clock seconds (the one field that varies)."""
    lines = []
    for line in ledger.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        entries = [record["control"], *record["checks"]]
        lines.append(json.dumps([{k: v for k, v in e.items() if k != "seconds"} for e in entries]).encode())
    return lines


@pytest.mark.slow
def test_replaying_a_stochastic_claim_gives_byte_identical_checks_in_both_isolation_modes(tmp_path: Path,
                                                                                          cli: Any) -> None:
    # the replays run in this process; each claim still runs in a fresh child or one forked by the server
    claims = tmp_path / "claims"
    claims.mkdir()
    for name in ("claim_gillespie_waiting_time.py", "gillespie.py"):
        shutil.copy(EXAMPLES / name, claims / name)
    ledger = claims / "confirm_ledger.jsonl"
    for isolation in ("fresh", "fork", "fresh", "fork"):
        ran = cli("replay", "claims", "--trusted", "--record-all", "--isolation", isolation, cwd=tmp_path)
        assert "confirmed" in ran.stdout, ran.stdout + ran.stderr
    lines = checks_without_time(ledger)
    assert len(lines) == 4 and len(set(lines)) == 1
    assert b'"seed": 3' in lines[0] and b"numpy.random.PCG64" in lines[0]
    before = ledger.read_bytes()
    for isolation in ("fresh", "fork"):  # an unchanged replay writes nothing
        cli("replay", "claims", "--trusted", "--isolation", isolation, cwd=tmp_path)
    assert ledger.read_bytes() == before
