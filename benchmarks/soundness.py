"""How often does check_order confirm a defect that is not there, or pass one that is?

A check's FAIL becomes a "confirmed" defect (spec rule 4) and its PASS a "rejected" one,
so both kinds of error are verdicts a user acts on (issue 9). This benchmark measures
them on a suite where the truth is known:

- correct explicit Runge-Kutta methods of orders 1 to 4, written as Butcher tableaux
  (Butcher, Numerical Methods for Ordinary Differential Equations, sec. 23 and 32;
  Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1);
- mutants of each: one stage at the wrong time, one coefficient with the wrong sign, two
  weights swapped. A mutant's true order is measured on fine grids, per problem, and the
  mutant is kept only where it is at least one below the intended order;
- problems with exact solutions: Prothero-Robinson y' = lambda (y - g) + g' (Prothero
  and Robinson, Math. Comp. 28 (1974) 145), stiff-ish for explicit methods; a harmonic
  oscillator driven from slow to fast (x'' = -x + F cos(W t)); the nonlinear scalar
  equation y' = -2 t y**2, y = 1 / (1 + t**2);
- resolution sets from far too coarse to round-off: windows of 4 and 5 consecutive
  levels, and of 4 levels two apart, out of n = 4 ... 8192 steps.

Every case goes through this build's check_order and, in one subprocess fed the same
inputs, through the published physverify 0.6.0's (`--pv060 PYTHON`, a Python with
physverify==0.6.0 installed). It prints a Markdown table: false alarms (FAIL on a
correct method), false passes (PASS or EXACT on a defective one), and the share of
cases each build decides (anything but INCONCLUSIVE).

The sequential mode (issue 16) serves every kept (method, problem) pair as error_at(n) to
convergence_study(error_at, refine(n0, max_n=8192), p) for n0 = 2 ... 12, and prints the
same rates for the studies' stopping rule (a verdict must hold with one more level) and
for the rule without confirmation, with the median right-hand-side evaluations against
the cheapest fixed 4-level window of the same levels that decides rightly.

The groups of issue 35 (float32 and float16 integrators, inconsistent operators whose errors grow,
correct codes with pre-asymptotic humps) are in soundness_growth.py; ``--mode all`` (the default)
runs them first, then both modes above.

    python benchmarks/soundness.py [--mode fixed|sequential|both|growth|all] [--pv060 /tmp/pv060/bin/python]
                                   [--before OLD_CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from physverify.checks import EXACT, FAIL, INCONCLUSIVE, PASS
from physverify.order import check_order

STAGES = 4  # every tableau is padded to four stages (zero rows and weights add nothing)
NS = tuple(4 * 2**k for k in range(12))  # 4 ... 8192 steps
ROUND_OFF = 1e-10  # errors below this are not used to measure a true order


@dataclass(frozen=True)
class Tableau:
    name: str
    order: int
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    c: tuple[float, ...]


def _tableau(name: str, order: int, a: list[list[float]], b: list[float]) -> Tableau:
    """A consistent explicit tableau: c_i is the row sum of A (Butcher, sec. 23)."""
    s = len(b)
    rows = [[float(x) for x in row] + [0.0] * (s - len(row)) for row in a]
    return Tableau(name, order, tuple(tuple(r) for r in rows), tuple(float(x) for x in b),
                   tuple(sum(r) for r in rows))


CORRECT = (
    _tableau("Euler", 1, [[]], [1]),
    _tableau("Heun", 2, [[], [1]], [0.5, 0.5]),
    _tableau("midpoint", 2, [[], [0.5]], [0, 1]),
    _tableau("Ralston 2", 2, [[], [2 / 3]], [0.25, 0.75]),
    _tableau("Kutta 3", 3, [[], [0.5], [-1, 2]], [1 / 6, 2 / 3, 1 / 6]),
    _tableau("Heun 3", 3, [[], [1 / 3], [0, 2 / 3]], [0.25, 0, 0.75]),
    _tableau("SSP 3", 3, [[], [1], [0.25, 0.25]], [1 / 6, 1 / 6, 2 / 3]),
    _tableau("RK4", 4, [[], [0.5], [0, 0.5], [0, 0, 1]], [1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    _tableau("3/8 rule", 4, [[], [1 / 3], [-1 / 3, 1], [1, -1, 1]], [1 / 8, 3 / 8, 3 / 8, 1 / 8]),
)


def mutants(t: Tableau) -> Iterator[Tableau]:
    """One defect at a time: a stage time, a coefficient's sign, two weights swapped."""
    s = len(t.b)
    for i in range(1, s):
        wrong = 1.0 if t.c[i] != 1.0 else 0.5
        yield Tableau(f"{t.name}: c{i + 1} = {wrong:g}", t.order, t.a, t.b, t.c[:i] + (wrong,) + t.c[i + 1:])
    for i in range(s):
        for j in range(i):
            if t.a[i][j] != 0.0:
                rows = [list(r) for r in t.a]
                rows[i][j] = -rows[i][j]
                yield Tableau(f"{t.name}: -a{i + 1}{j + 1}", t.order, tuple(tuple(r) for r in rows), t.b, t.c)
    for i in range(s):
        for j in range(i):
            if t.b[i] != t.b[j]:
                b = list(t.b)
                b[i], b[j] = b[j], b[i]
                yield Tableau(f"{t.name}: b{j + 1} <-> b{i + 1}", t.order, t.a, tuple(b), t.c)


def padded(tableaux: list[Tableau]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (M, 4, 4), b (M, 4), c (M, 4) for M tableaux, so that all run in one vectorised loop."""
    m = len(tableaux)
    a, b, c = np.zeros((m, STAGES, STAGES)), np.zeros((m, STAGES)), np.zeros((m, STAGES))
    for k, t in enumerate(tableaux):
        s = len(t.b)
        a[k, :s, :s], b[k, :s], c[k, :s] = t.a, t.b, t.c
    return a, b, c


@dataclass(frozen=True)
class Problem:
    name: str
    rhs: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (t of shape (M, 1), y of shape (M, dim)) -> (M, dim)
    exact: Callable[[float], np.ndarray]
    t_end: float


def prothero_robinson(lam: float) -> Problem:
    g, dg = np.sin, np.cos
    return Problem(f"Prothero-Robinson lambda = {lam:g}", lambda t, y: lam * (y - g(t)) + dg(t),
                   lambda t: np.array([np.sin(t)]), 2.0)


def driven_oscillator(w: float) -> Problem:
    """x'' = -x + F cos(w t), x(0) = 1, x'(0) = 0: x = (1 - A) cos t + A cos(w t), A = F / (1 - w**2).

    F = w**2 - 1 gives A = -1: the drive's own motion has amplitude 1 at every w, so a
    fast drive is as large as the slow motion and coarse steps cannot resolve it.
    """
    f = w**2 - 1.0
    amp = f / (1.0 - w**2)

    def rhs(t: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.concatenate([y[:, 1:2], -y[:, 0:1] + f * np.cos(w * t)], axis=1)

    def exact(t: float) -> np.ndarray:
        return np.array([(1 - amp) * np.cos(t) + amp * np.cos(w * t), -(1 - amp) * np.sin(t) - amp * w * np.sin(w * t)])

    return Problem(f"driven oscillator W = {w:g}", rhs, exact, 5.0)


def riccati() -> Problem:
    return Problem("y' = -2 t y^2", lambda t, y: -2.0 * t * y**2, lambda t: np.array([1.0 / (1.0 + t * t)]), 3.0)


PROBLEMS = (prothero_robinson(-10.0), prothero_robinson(-100.0), driven_oscillator(0.5), driven_oscillator(3.0),
            driven_oscillator(10.0), driven_oscillator(30.0), riccati())


def errors_of(tableaux: list[Tableau], problem: Problem, ns: tuple[int, ...] = NS) -> np.ndarray:
    """Max-norm errors at t_end, shape (M, len(ns)), every tableau and every step count at once.

    One row per (step count, tableau), longest runs first: at step ``s`` the rows whose run is
    longer than ``s`` are a prefix, and only that prefix takes the step. Each row sees the very
    operations it would see alone (its own h, the same vectorised stage sums), so the table is
    the one a loop over the step counts gives; the loop over steps runs max(ns) times instead of
    sum(ns), which was most of the benchmark's time.
    """
    a, b, c = padded(tableaux)
    m = len(tableaux)
    y0, y_end = problem.exact(0.0), problem.exact(problem.t_end)
    longest_first = sorted(range(len(ns)), key=lambda col: -ns[col])
    steps = np.repeat(np.array([ns[col] for col in longest_first], dtype=np.int64), m)  # non-increasing
    rows_a, rows_b, rows_c = (np.tile(x, (len(ns),) + (1,) * (x.ndim - 1)) for x in (a, b, c))
    h = (problem.t_end / steps)[:, None]
    y = np.tile(y0, (len(steps), 1))
    out = np.empty((m, len(ns)))
    with np.errstate(all="ignore"):
        active = len(steps)
        for step in range(int(steps[0]) if len(steps) else 0):
            while steps[active - 1] <= step:
                active -= 1
            ya, ha = y[:active], h[:active]
            t = step * ha
            k = np.zeros((active, STAGES, y0.size))
            for i in range(STAGES):
                yi = ya + ha * np.einsum("mj,mjd->md", rows_a[:active, i, :], k)
                k[:, i, :] = problem.rhs(t + rows_c[:active, i:i + 1] * ha, yi)
            y[:active] = ya + ha * np.einsum("mj,mjd->md", rows_b[:active], k)
        err = np.max(np.abs(y - y_end), axis=1)
        err = np.where(np.isfinite(err), err, np.inf)
    for block, col in enumerate(longest_first):
        out[:, col] = err[block * m:(block + 1) * m]
    return out


def true_order(errors: np.ndarray) -> float | None:
    """The order the finest three levels above round-off agree on (within 0.1), or None."""
    usable = [i for i, e in enumerate(errors) if ROUND_OFF < e < 1e3]
    if len(usable) < 3 or usable[-3:] != list(range(usable[-1] - 2, usable[-1] + 1)):
        return None
    e = errors[usable[-3:]]
    q1, q2 = np.log2(e[0] / e[1]), np.log2(e[1] / e[2])
    return float(q2) if abs(q1 - q2) <= 0.1 else None


def windows() -> Iterator[list[int]]:
    """Resolution sets, coarse to fine: 4 and 5 consecutive levels, and 4 levels two apart."""
    for length in (4, 5):
        for start in range(len(NS) - length + 1):
            yield list(range(start, start + length))
    for start in range(len(NS) - 6):
        yield list(range(start, start + 7, 2))


@dataclass(frozen=True)
class Case:
    correct: bool
    hs: list[float]
    errors: list[float]
    expected: int
    scale: float


@dataclass(frozen=True)
class Pair:
    """One (method, problem) pair of the suite, with its errors at every step count measured."""

    tableau: Tableau
    problem: Problem
    correct: bool
    scale: float
    errors: dict[int, float]

    @property
    def stages(self) -> int:
        return len(self.tableau.b)


def pairs(ns: tuple[int, ...] = NS) -> tuple[list[Pair], dict[str, int]]:
    """Every kept (method, problem) pair with its errors at ``ns`` (which must include NS), and the tally."""
    kept = {"mutants kept": 0, "mutants dropped (not >= 1 below)": 0, "correct with another order": 0}
    tableaux = list(CORRECT)
    for t in CORRECT:
        tableaux.extend(mutants(t))
    out: list[Pair] = []
    for problem in PROBLEMS:
        table = errors_of(tableaux, problem, ns)
        scale = float(max(np.max(np.abs(problem.exact(0.0))), np.max(np.abs(problem.exact(problem.t_end)))))
        for t, row in zip(tableaux, table):
            errors = {n: float(x) for n, x in zip(ns, row)}
            correct = t in CORRECT
            measured = true_order(np.array([errors[n] for n in NS]))
            if correct and (measured is None or abs(measured - t.order) > 0.2):
                kept["correct with another order"] += 1
            if not correct:
                if measured is None or measured > t.order - 0.9:
                    kept["mutants dropped (not >= 1 below)"] += 1
                    continue
                kept["mutants kept"] += 1
            out.append(Pair(t, problem, correct, scale, errors))
    return out, kept


def suite() -> tuple[list[Case], dict[str, int]]:
    """Every fixed-window case, and how many mutant-problem pairs were kept and dropped."""
    kept_pairs, kept = pairs()
    cases = [Case(p.correct, [p.problem.t_end / NS[i] for i in levels], [p.errors[NS[i]] for i in levels],
                  p.tableau.order, p.scale) for p in kept_pairs for levels in windows()]
    return cases, kept


# --- the sequential mode (issue 16) -------------------------------------------------
STARTS = tuple(range(2, 13))  # the first level n0 of each plan
MAX_N = 8192


def sequential_ns() -> tuple[int, ...]:
    """Every step count a plan refine(n0, max_n=8192) can ask for, n0 in STARTS (NS among them)."""
    return tuple(sorted({n0 * 2**k for n0 in STARTS for k in range(14) if n0 * 2**k <= MAX_N} | set(NS)))


@dataclass(frozen=True)
class Run:
    correct: bool
    status: str
    naive: str  # the status at the first look that decides: the rule without confirmation
    rhs: int  # right-hand-side evaluations of the levels the study asked for
    oracle: int | None  # those of the cheapest fixed 4-level window of the same levels that decides rightly


def sequential_runs(kept_pairs: list[Pair]) -> list[Run]:
    """convergence_study with refine(n0, max_n=8192) on every pair and start, served from the measured errors."""
    from physverify import convergence_study, refine

    runs: list[Run] = []
    for p in kept_pairs:
        t_end = p.problem.t_end
        for n0 in STARTS:
            asked: list[int] = []

            def error_at(n: int, p: Pair = p, asked: list[int] = asked) -> float:
                asked.append(n)
                return p.errors[n]

            result = convergence_study(error_at, refine(n0, max_n=MAX_N), p.tableau.order, h=lambda n: t_end / n,
                                       scale=p.scale)
            levels = list(refine(n0, max_n=MAX_N).levels())
            runs.append(Run(p.correct, result.status, _naive(p, levels), p.stages * sum(asked), _oracle(p, levels)))
    return runs


def _judge(p: Pair, ns: list[int]) -> str:
    return check_order([p.problem.t_end / n for n in ns], [p.errors[n] for n in ns], p.tableau.order,
                       scale=p.scale).status


def _right(p: Pair, status: str) -> bool:
    return status == (PASS if p.correct else FAIL) or (p.correct and status == EXACT)


def _naive(p: Pair, levels: list[int]) -> str:
    """Stop at the first prefix of the levels check_order decides on."""
    for k in range(2, len(levels) + 1):
        status = _judge(p, levels[:k])
        if status != INCONCLUSIVE:
            return status
    return INCONCLUSIVE


def _oracle(p: Pair, levels: list[int]) -> int | None:
    """The cost of the cheapest window of 4 consecutive levels that decides rightly (None: none does)."""
    costs = [p.stages * sum(levels[i:i + 4]) for i in range(len(levels) - 3) if _right(p, _judge(p, levels[i:i + 4]))]
    return min(costs) if costs else None


def sequential_table(runs: list[Run]) -> str:
    head = ["rule", "false alarms (of {c} correct runs)", "false passes (of {d} defective runs)",
            "right, correct", "right, defective", "median rhs evaluations", "median, cheapest right 4-level window"]
    correct = [r for r in runs if r.correct]
    defective = [r for r in runs if not r.correct]
    head = [h.format(c=len(correct), d=len(defective)) for h in head]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    oracle = [r.oracle for r in runs if r.oracle is not None]
    for name, status in (("confirmed with one more level (refine)", lambda r: r.status),
                         ("first decision, unconfirmed", lambda r: r.naive)):
        alarms = sum(status(r) == FAIL for r in correct)
        passes = sum(status(r) in (PASS, EXACT) for r in defective)
        right_c = sum(status(r) in (PASS, EXACT) for r in correct) / len(correct)
        right_d = sum(status(r) == FAIL for r in defective) / len(defective)
        rhs = f"{np.median([r.rhs for r in runs]):.0f}" if name.startswith("confirmed") else "-"
        lines.append(f"| {name} | {alarms / len(correct):.1%} ({alarms}) | {passes / len(defective):.1%} ({passes}) | "
                     f"{right_c:.1%} | {right_d:.1%} | {rhs} | {np.median(oracle):.0f} ({len(oracle)} runs) |")
    return "\n".join(lines)


def statuses_here(cases: list[Case]) -> list[str]:
    return [check_order(c.hs, c.errors, c.expected, scale=c.scale).status for c in cases]


_CHILD = """
import json, sys
from physverify.order import check_order
out = []
for hs, errors, expected, scale in json.load(sys.stdin):
    try:
        out.append(check_order(hs, errors, expected, scale=scale).status)
    except Exception as exc:
        out.append("ERROR")
json.dump(out, sys.stdout)
"""


def statuses_in(python: str, cases: list[Case], source: str | None = None) -> list[str]:
    """The statuses another installation's check_order gives (one child process, same inputs).

    ``source``: a folder put first on the child's PYTHONPATH (another checkout's src/).
    """
    payload = json.dumps([[c.hs, c.errors, c.expected, c.scale] for c in cases])
    env = {**os.environ, "PYTHONPATH": source} if source else {k: v for k, v in os.environ.items()
                                                                  if k != "PYTHONPATH"}
    done = subprocess.run([python, "-c", _CHILD], input=payload, capture_output=True, text=True, check=True,
                          cwd="/", env=env)
    return list(json.loads(done.stdout))


def tally(cases: list[Case], statuses: list[str]) -> dict[str, float]:
    correct = [s for c, s in zip(cases, statuses) if c.correct]
    defective = [s for c, s in zip(cases, statuses) if not c.correct]
    return {
        "false alarms": sum(s == FAIL for s in correct) / len(correct),
        "false alarm count": sum(s == FAIL for s in correct),
        "false passes": sum(s in (PASS, EXACT) for s in defective) / len(defective),
        "false pass count": sum(s in (PASS, EXACT) for s in defective),
        "decided, correct": sum(s != INCONCLUSIVE for s in correct) / len(correct),
        "decided, defective": sum(s != INCONCLUSIVE for s in defective) / len(defective),
    }


def table(rows: dict[str, dict[str, float]], n_correct: int, n_defective: int) -> str:
    head = ["build", f"false alarms (of {n_correct} correct)", f"false passes (of {n_defective} defective)",
            "decided, correct", "decided, defective"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for build, r in rows.items():
        lines.append(f"| {build} | {r['false alarms']:.1%} ({r['false alarm count']:.0f}) | "
                     f"{r['false passes']:.1%} ({r['false pass count']:.0f}) | "
                     f"{r['decided, correct']:.1%} | {r['decided, defective']:.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pv060", help="a Python with physverify==0.6.0 installed, to compare against")
    parser.add_argument("--before", metavar="SRC", help="the src/ folder of an earlier checkout, to compare against")
    parser.add_argument("--mode", choices=("fixed", "sequential", "both", "growth", "all"), default="all",
                        help="fixed windows of levels, refine() plans judged level by level, both, the groups of "
                             "soundness_growth.py (low precision, growing errors, humps), or all of them (the default)")
    args = parser.parse_args(argv)
    if args.mode in ("growth", "all"):
        import soundness_growth  # the groups of issue 35, in their own module

        print(soundness_growth.table(soundness_growth.all_runs()) + "\n")
        if args.mode == "growth":
            return 0
    if args.mode in ("sequential", "both", "all"):
        kept_pairs, kept = pairs(sequential_ns())
        print(sequential_table(sequential_runs(kept_pairs)))
        print(f"\n{len(kept_pairs)} (method, problem) pairs, starts n0 = {STARTS[0]} ... {STARTS[-1]}, "
              f"refine(n0, max_n={MAX_N})\n")
        if args.mode == "sequential":
            return 0
    cases, kept = suite()
    rows = {"this build": tally(cases, statuses_here(cases))}
    if args.before:
        rows["before issue 9"] = tally(cases, statuses_in(sys.executable, cases, args.before))
    if args.pv060:
        rows["physverify 0.6.0"] = tally(cases, statuses_in(args.pv060, cases))
    n_correct = sum(c.correct for c in cases)
    print(table(rows, n_correct, len(cases) - n_correct))
    print("\n" + ", ".join(f"{k}: {v}" for k, v in kept.items()) + f"; {len(PROBLEMS)} problems, "
          f"{len(CORRECT)} correct methods")
    return 0


if __name__ == "__main__":
    sys.exit(main())
