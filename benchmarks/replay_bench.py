"""How fast is `physverify replay`? Issue 4's benchmark, measured side by side in one run.

Generates N claims (default 40) in a temporary git repository, each an order-of-accuracy
study of a small numpy solver, and prints:

- replay: `physverify replay claims --trusted` (all CPUs);
- serial: a loop of `physverify confirm CLAIM --trusted`, one process after another;
- floor: what no runner can beat: N times (interpreter start + numpy import), spread over
  the cores, plus the claims' own compute (measured in this process), spread likewise;
- no-change: `physverify replay --changed-since HEAD` after the ledger is committed.

Targets on 2 cores: replay at least 1.8x faster than serial and within 1.5x of the floor;
no-change under 1 s. Usage: python benchmarks/replay_bench.py [-n 40] [--jobs J]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

SOLVER = '''"""Explicit midpoint rule for y' = f(t, y) (a small solver for the benchmark)."""
import numpy as np


def integrate(source, y0, t_end, n_steps, omega):
    h, t, y = t_end / n_steps, 0.0, np.array(y0, dtype=float)

    def f(s, state):
        return np.array([state[1], -omega**2 * state[0]]) + source(s)

    for _ in range(n_steps):
        y = y + h * f(t + 0.5 * h, y + 0.5 * h * f(t, y))
        t += h
    return y
'''

CLAIM = '''"""Benchmark claim {i}: the midpoint rule in solver.py is second order (Hairer, Norsett and Wanner, II.1)."""
import numpy as np

import solver
from physverify import Check, ManufacturedODE, mms_order_study

CLAIM = {{
    "text": "benchmark claim {i}: the midpoint rule is only first order",
    "source": "benchmarks/replay_bench.py",
    "file": "solver.py",
    "line": 12,
    "reference": "Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1: the explicit midpoint rule is second order",
    "impact": "unknown",
}}
OMEGA = {omega}


def oscillator_rhs(t, y):
    return np.array([y[1], -OMEGA**2 * y[0]])


def study(omega, u):
    mms = ManufacturedODE(u, lambda t, y: np.array([y[1], -omega**2 * y[0]]))
    run = lambda source, y0, t_end, n: solver.integrate(source, y0, t_end, n, omega)
    return mms_order_study(run, mms, 1.0, (25, 50, 100, 200), expected_order=2)


def control():
    return Check("mms", "second order on a polynomial path (omega = 0)",
                 lambda: study(0.0, lambda t: np.array([1.0 + t**2, 2.0 * t])))


def checks():
    return [Check("mms", "second order on the oscillator", lambda: study(OMEGA, lambda t: np.array(
        [np.cos(OMEGA * t), -OMEGA * np.sin(OMEGA * t)])))]
'''


def make_repo(root: Path, n: int) -> None:
    """A git repository with solver.py and ``n`` claims about it, committed."""
    repo = git.Repo.init(root)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    (root / "claims").mkdir()
    (root / "solver.py").write_text(SOLVER)
    for i in range(n):
        (root / "claims" / f"claim_{i:03d}.py").write_text(CLAIM.format(i=i, omega=1.0 + 0.05 * i))
    repo.index.add(["solver.py", *[f"claims/claim_{i:03d}.py" for i in range(n)]])
    repo.index.commit("benchmark claims")


def timed(command: list[str], cwd: Path) -> float:
    """Wall time of one command; it must exit 0 (rejected / gate passed)."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def compute_seconds(root: Path, n: int) -> float:
    """The claims' own compute: control() and checks() run in this process, imports excluded."""
    sys.path[:0] = [str(root), str(root / "claims")]
    total = 0.0
    for i in range(n):
        spec = importlib.util.spec_from_file_location(f"bench_claim_{i}", root / "claims" / f"claim_{i:03d}.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        start = time.perf_counter()
        for check in [module.control(), *module.checks()]:
            check.run()
        total += time.perf_counter() - start
    return total


def startup_seconds(repeats: int = 5) -> float:
    """One interpreter start plus the numpy import, the least a fresh child costs (median)."""
    times = sorted(timed([sys.executable, "-c", "import numpy"], Path.cwd()) for _ in range(repeats))
    return times[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="number of claims (default 40)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="replay --jobs (default: CPUs)")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "physverify"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, args.n)
        serial = sum(timed([*cli, "confirm", f"claims/claim_{i:03d}.py", "--trusted", "--ledger", "serial.jsonl"], root)
                     for i in range(args.n))
        replay = timed([*cli, "replay", "claims", "--trusted", "--jobs", str(args.jobs)], root)
        repo = git.Repo(root)
        repo.index.add(["claims/confirm_ledger.jsonl"])
        repo.index.commit("ledger")
        no_change = timed([*cli, "replay", "claims", "--trusted", "--changed-since", "HEAD"], root)
        floor = (args.n * startup_seconds() + compute_seconds(root, args.n)) / args.jobs
    print(f"{args.n} claims, {args.jobs} jobs, {os.cpu_count()} CPUs")
    print(f"  replay            {replay:7.2f} s   {serial / replay:5.2f}x faster than serial (target >= 1.8x)")
    print(f"  serial confirm    {serial:7.2f} s")
    print(f"  floor             {floor:7.2f} s   replay / floor = {replay / floor:4.2f} (target <= 1.5)")
    print(f"  no-change replay  {no_change:7.2f} s   (--changed-since HEAD; target < 1 s)")


if __name__ == "__main__":
    main()
