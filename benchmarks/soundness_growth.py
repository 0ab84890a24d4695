"""Soundness where real code differs from the textbook (issue 35): low precision, growing errors, humps.

Three groups, each judged as fixed lists of levels and as refine() plans without max_n, through the
studies a claim calls (convergence_study served from measured tables, operator_study on real
operators), so the precision detection, the per-level round-off and the plans' stopping rules are
all in the loop:

- precision: the Runge-Kutta methods of soundness.py (correct, and the mutants whose true order,
  measured in float64, is at least one below) computing in float32 or float16, returning their
  own precision or cast to float64 on the way out with ``precision=numpy.float32``;
- growth: 1-D periodic difference operators, correct and inconsistent (a sum where a difference
  belongs, a difference divided by h where h**2 belongs, a wrong centre weight, an extra 1/h),
  in float64 and float32 on grids from n = 8 to 32768, where a correct float32 operator's round-off
  grows like eps |u| / h**k, and the C-grid vorticity of issue 35 with and without its defect;
- humps: correct codes whose error rises at coarse levels before it falls (backward Euler, the
  implicit midpoint rule and RK4 on a fast oscillator, from their exact amplification matrices;
  Hairer and Wanner, Solving ODEs II, sec. IV.2), never to be confirmed as defects.

For each group it prints false alarms (FAIL of a correct code), false passes (PASS or EXACT of a
defective one), the share decided rightly, and how many plans would have run past 120 s (the
levels a plan asked, costed at the measured time of one right-hand-side evaluation of a float32
RK4 step in plain numpy), or asked a level beyond the measured tables.

    python benchmarks/soundness_growth.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from physverify import EXACT, FAIL, INCONCLUSIVE, PASS, convergence_study, operator_study, refine

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import soundness as base  # noqa: E402  the tableaux, mutants and problems of the first benchmark

LIMIT_S = 120.0
STARTS = (2, 3, 4, 6, 8, 12)


@dataclass
class Run:
    group: str
    mode: str  # "fixed" or "plan"
    correct: bool
    status: str
    seconds: float = 0.0  # the modelled cost of a plan
    beyond: bool = False  # the plan asked a level the table does not hold


# --- precision: Runge-Kutta methods in float32 and float16 -----------------------------------
def integrate_in(tableaux: list[base.Tableau], problem: base.Problem, ns: list[int],
                 dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """End states (M, len(ns), dim) in ``dtype`` and errors (M, len(ns)), every tableau and level at once.

    Each stage is computed and stored in ``dtype`` (a code computing in that precision); the time t is
    formed in float64 and rounded, as a code adding a float32 step to a float64 clock would see it.
    """
    a, b, c = (x.astype(dtype) for x in base.padded(tableaux))
    m, dim = len(tableaux), problem.exact(0.0).size
    ns_arr = np.array(ns)
    rows = np.repeat(ns_arr, m)
    h64 = (problem.t_end / rows)[:, None]
    h = h64.astype(dtype)
    aa, bb, cc = np.tile(a, (len(ns), 1, 1)), np.tile(b, (len(ns), 1)), np.tile(c, (len(ns), 1))
    y = np.tile(problem.exact(0.0).astype(dtype), (len(rows), 1))
    with np.errstate(all="ignore"):
        for step in range(int(ns_arr.max())):
            live = rows > step
            if not live.any():
                break
            ya, ha, t = y[live], h[live], (step * h64[live])
            k = np.zeros((int(live.sum()), base.STAGES, dim), dtype=dtype)
            for i in range(base.STAGES):
                yi = (ya + ha * np.einsum("mj,mjd->md", aa[live, i, :], k)).astype(dtype)
                ti = t + cc[live, i:i + 1].astype(float) * h64[live]
                k[:, i, :] = problem.rhs(ti, yi.astype(float)).astype(dtype)
            y[live] = (ya + ha * np.einsum("mj,mjd->md", bb[live], k)).astype(dtype)
    states = y.reshape(len(ns), m, dim).transpose(1, 0, 2)
    exact = problem.exact(problem.t_end)
    errors = np.max(np.abs(states.astype(float) - exact), axis=2)
    return states, np.where(np.isfinite(errors), errors, np.inf)


def precision_runs(levels: list[int], problems: list[base.Problem], table_max: int, t_eval: float) -> list[Run]:
    tableaux = list(base.CORRECT) + [m for t in base.CORRECT for m in base.mutants(t)]
    runs: list[Run] = []
    plan_ns = _plan_levels(table_max)
    for problem in problems:
        truth = base.errors_of(tableaux, problem, base.NS)
        scale = float(max(np.max(np.abs(problem.exact(0.0))), np.max(np.abs(problem.exact(problem.t_end)))))
        for dtype, cast in ((np.float32, False), (np.float32, True), (np.float16, False)):
            states, errors = integrate_in(tableaux, problem, plan_ns, dtype)
            for k, t in enumerate(tableaux):
                measured = base.true_order(truth[k])
                correct = t in base.CORRECT
                if correct and (measured is None or abs(measured - t.order) > 0.2):
                    continue
                if not correct and (measured is None or measured > t.order - 0.9):
                    continue
                table = {n: (float(errors[k, j]), states[k, j].astype(float) if cast else states[k, j])
                         for j, n in enumerate(plan_ns)}
                kwargs = {"precision": np.float32} if cast else {}
                name = f"precision ({np.dtype(dtype).name}{', cast to float64' if cast else ''})"
                runs.extend(_served(name, correct, table, t.order, problem.t_end, scale, levels, len(t.b),
                                    t_eval, kwargs))
    return runs


def _served(group: str, correct: bool, table: dict[int, tuple[float, Any]], order: float, t_end: float,
            scale: float, levels: list[int], cost_per_n: float, t_eval: float, kwargs: dict[str, Any]) -> list[Run]:
    """Fixed windows of ``levels`` and plans refine(n0) with no max_n, served from ``table``."""
    runs: list[Run] = []
    for window in windows(levels):
        result = convergence_study(lambda n: table[n], window, order, h=lambda n: t_end / n, scale=scale, **kwargs)
        runs.append(Run(group, "fixed", correct, result.status))
    for n0 in STARTS:
        asked: list[int] = []
        beyond = [False]

        def error_at(n: int) -> tuple[float, Any]:
            asked.append(n)
            if n not in table:
                beyond[0] = True
                raise _Beyond(n)
            return table[n]

        try:
            status = convergence_study(error_at, refine(n0), order, h=lambda n: t_end / n, scale=scale,
                                       **kwargs).status
        except _Beyond:
            status = INCONCLUSIVE  # served as undecided: the table ends where a real run would go on
        runs.append(Run(group, "plan", correct, status, sum(asked) * cost_per_n * t_eval, beyond[0]))
    return runs


class _Beyond(Exception):
    pass


def _plan_levels(table_max: int) -> list[int]:
    """Every level a plan refine(n0) may ask for up to table_max, and the level between two of them it may add."""
    doubling = {n0 * 2**k for n0 in STARTS for k in range(20) if n0 * 2**k <= table_max}
    return sorted(doubling | {int(round(n * 2**0.5)) for n in doubling if n * 2 <= table_max})


def windows(levels: list[int]) -> Iterator[list[int]]:
    """Windows of 4 and 5 consecutive levels."""
    for length in (4, 5):
        for start in range(len(levels) - length + 1):
            yield levels[start:start + length]


def rhs_evaluation_seconds() -> float:
    """The time of one right-hand-side evaluation inside a float32 RK4 step written in plain numpy."""
    y, h = np.array([1.0, 0.0], dtype=np.float32), np.float32(1e-3)
    f = lambda t, z: np.array([z[1], -z[0]], dtype=np.float32)  # noqa: E731
    start, steps = time.perf_counter(), 2000
    for i in range(steps):
        k1 = f(i, y)
        k2 = f(i, y + h / 2 * k1)
        k3 = f(i, y + h / 2 * k2)
        k4 = f(i, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return (time.perf_counter() - start) / (4 * steps)


# --- growth: inconsistent difference operators ---------------------------------------------------
def _periodic(stencil: Callable[[np.ndarray, np.ndarray, np.ndarray, Any], np.ndarray], dtype: Any) -> Callable[..., Any]:
    def apply(values: np.ndarray, dx: float) -> np.ndarray:
        u = values.astype(dtype)
        return stencil(np.roll(u, 1), u, np.roll(u, -1), dtype(dx))
    return apply


OPERATORS: list[tuple[str, bool, int, Callable[..., np.ndarray]]] = [
    # (name, correct, derivative (1 or 2), stencil(left, centre, right, h))
    ("central gradient", True, 1, lambda lo, c, r, h: (r - lo) / (2 * h)),
    ("Laplacian", True, 2, lambda lo, c, r, h: (r - 2 * c + lo) / (h * h)),
    ("gradient, sum for difference", False, 1, lambda lo, c, r, h: (r + lo) / (2 * h)),
    ("gradient over h**2", False, 1, lambda lo, c, r, h: (r - lo) / (2 * h * h)),
    ("Laplacian, centre weight -3", False, 2, lambda lo, c, r, h: (r - 3 * c + lo) / (h * h)),
    ("Laplacian over h**3", False, 2, lambda lo, c, r, h: (r - 2 * c + lo) / (h * h * h)),
]
FIELDS = [
    ("sin 2 pi x + 0.5", lambda x: np.sin(2 * np.pi * x) + 0.5, lambda x: 2 * np.pi * np.cos(2 * np.pi * x),
     lambda x: -4 * np.pi**2 * np.sin(2 * np.pi * x)),
    ("sin 6 pi x + 1", lambda x: np.sin(6 * np.pi * x) + 1.0, lambda x: 6 * np.pi * np.cos(6 * np.pi * x),
     lambda x: -36 * np.pi**2 * np.sin(6 * np.pi * x)),
    ("exp(sin 2 pi x)", lambda x: np.exp(np.sin(2 * np.pi * x)),
     lambda x: 2 * np.pi * np.cos(2 * np.pi * x) * np.exp(np.sin(2 * np.pi * x)),
     lambda x: 4 * np.pi**2 * (np.cos(2 * np.pi * x) ** 2 - np.sin(2 * np.pi * x)) * np.exp(np.sin(2 * np.pi * x))),
]


def operator_runs(levels: list[int], starts: tuple[int, ...]) -> list[Run]:
    runs: list[Run] = []
    for name, correct, k, stencil in OPERATORS:
        for dtype in (np.float64, np.float32):
            group = f"growth ({np.dtype(dtype).name})"
            for _, u, du, d2u in FIELDS:
                apply, exact = _periodic(stencil, dtype), (du if k == 1 else d2u)
                for window in windows(levels):
                    runs.append(Run(group, "fixed", correct, operator_study(apply, u, exact, window, 2).status))
                for n0 in starts:
                    runs.append(Run(group, "plan", correct, operator_study(apply, u, exact, refine(n0), 2).status))
    return runs


def c_grid_runs(levels: list[int]) -> list[Run]:
    """The C-grid vorticity of issue 35 (a sum where a difference belongs), and the correct one."""
    interior = lambda nx: np.arange(1, nx) / nx  # noqa: E731
    u = lambda x, y: np.cos(2 * np.pi * y) * np.exp(x)  # noqa: E731
    v = lambda x, y: np.sin(2 * np.pi * x) * y**2  # noqa: E731
    zeta = lambda x, y: 2 * np.pi * np.cos(2 * np.pi * x) * y**2 + 2 * np.pi * np.sin(2 * np.pi * y) * np.exp(x)  # noqa: E731
    runs: list[Run] = []
    for defect in (False, True):
        for dtype in (np.float64, np.float32):
            def apply(uf: np.ndarray, vf: np.ndarray, dx: float, dy: float, dtype: Any = dtype,
                      defect: bool = defect) -> np.ndarray:
                uf, vf = uf.astype(dtype), vf.astype(dtype)
                dudy = (uf[1:-1, 1:] + uf[1:-1, :-1]) if defect else (uf[1:-1, 1:] - uf[1:-1, :-1])
                return (vf[1:, 1:-1] - vf[:-1, 1:-1]) / dtype(dx) - dudy / dtype(dy)

            def study(ns: Any) -> str:
                return operator_study(apply, (u, v), zeta, ns, 2, domain=((0, 1), (0, 1)),
                                      sample=("x-faces", "y-faces"), where=(interior, interior)).status

            group = f"growth ({np.dtype(dtype).name})"
            runs.extend(Run(group, "fixed", not defect, study(w)) for w in windows(levels))
            runs.extend(Run(group, "plan", not defect, study(refine(n0))) for n0 in (4, 8))
    return runs


# --- humps: correct methods on a fast oscillator, from their amplification matrices ------------
def hump_runs(levels: list[int], table_max: int, t_eval: float) -> list[Run]:
    runs: list[Run] = []
    plan_ns = _plan_levels(table_max)
    for method, order, stages in (("backward Euler", 1, 1), ("implicit midpoint", 2, 1), ("RK4", 4, 4)):
        for w in (4.0, 8.0, 16.0, 32.0):
            for t_end in (1.0, 3.0):
                a = np.array([[0.0, 1.0], [-w * w, 0.0]])
                y0 = np.array([1.0, 0.0])
                exact = np.array([np.cos(w * t_end), -w * np.sin(w * t_end)])
                table: dict[int, tuple[float, Any]] = {}
                for n in plan_ns:
                    with np.errstate(all="ignore"):
                        y = np.linalg.matrix_power(_amplification(method, a * (t_end / n)), n) @ y0
                    error = float(np.max(np.abs(y - exact)))
                    table[n] = (error if np.isfinite(error) else np.inf, y)
                runs.extend(_served("humps (correct)", True, table, order, t_end, w, levels, stages, t_eval, {}))
    return runs


def _amplification(method: str, z: np.ndarray) -> np.ndarray:
    eye = np.eye(len(z))
    if method == "backward Euler":
        return np.linalg.inv(eye - z)
    if method == "implicit midpoint":
        return np.linalg.solve(eye - z / 2, eye + z / 2)
    return eye + z + z @ z / 2 + z @ z @ z / 6 + z @ z @ z @ z / 24


def has_hump(table_errors: list[float]) -> bool:
    return int(np.argmax(table_errors)) > 0


# --- the table -------------------------------------------------------------------------------
def table(runs: list[Run]) -> str:
    head = ["group", "runs", "correct / defective", "false alarms", "false passes", "right, correct",
            "right, defective", "plans past 120 s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in dict.fromkeys(r.group for r in runs):
        for mode in ("fixed", "plan"):
            chosen = [r for r in runs if r.group == group and r.mode == mode]
            if not chosen:
                continue
            good = [r for r in chosen if r.correct]
            bad = [r for r in chosen if not r.correct]
            alarms = sum(r.status == FAIL for r in good)
            passes = sum(r.status in (PASS, EXACT) for r in bad)
            right_c = _share(sum(r.status in (PASS, EXACT) for r in good), len(good))
            right_d = _share(sum(r.status == FAIL for r in bad), len(bad))
            late = "-" if mode == "fixed" else str(sum(r.seconds > LIMIT_S for r in chosen))
            if mode == "plan" and any(r.beyond for r in chosen):
                late += f" ({sum(r.beyond for r in chosen)} asked beyond the measured levels)"
            lines.append(f"| {group} | {mode} | {len(good)} / {len(bad)} | {_share(alarms, len(good))} ({alarms}) | "
                         f"{_share(passes, len(bad))} ({passes}) | {right_c} | {right_d} | {late} |")
    return "\n".join(lines)


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "-"


def all_runs(quick: bool = False) -> list[Run]:
    t_eval = rhs_evaluation_seconds()
    problems = [base.driven_oscillator(0.5), base.driven_oscillator(3.0), base.riccati()]
    rk_levels = [4 * 2**k for k in range(9 if quick else 11)]
    table_max = 4096 if quick else 16384
    runs = precision_runs(rk_levels, problems[:1] if quick else problems, table_max, t_eval)
    op_levels = [8 * 2**k for k in range(9 if quick else 13)]
    runs += operator_runs(op_levels, (4, 8) if quick else (4, 6, 8, 12, 16))
    runs += c_grid_runs([8 * 2**k for k in range(5 if quick else 8)])
    runs += hump_runs(rk_levels, table_max, t_eval)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer problems and levels, for a first look")
    args = parser.parse_args(argv)
    print(table(all_runs(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
