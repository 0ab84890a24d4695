"""How fast is `physverify replay`? Issues 4 and 11's benchmark, measured side by side in one run.

Generates N claims (default 40) in a temporary git repository, each an order-of-accuracy
study of a small numpy solver (with --scipy: against scipy's solve_ivp through
reference_study), and prints:

- replay fork: `physverify replay claims --trusted --isolation fork` (the default on Linux);
- replay fresh: the same with `--isolation fresh`, a new interpreter per claim;
- serial: a loop of `physverify confirm CLAIM --trusted`, one process after another;
- warm floor: ONE interpreter importing what the claims import (numpy, physverify, and
  scipy.integrate with --scipy), plus the claims' own compute (measured in this process)
  spread over the jobs: what no runner that isolates claims can beat;
- no-change: `physverify replay --changed-since HEAD` after the ledger is committed.

Targets on 2 cores (issue 11): fork replay within 2.0x of the warm floor, and with --scipy
at least 4x faster than serial. Usage: python benchmarks/replay_bench.py [-n 40] [--jobs J] [--scipy]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
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


SCIPY_CHECKS = """

def checks():
    from physverify import reference_study

    rhs = lambda t, y: np.array([y[1], -OMEGA**2 * y[0]])
    run = lambda source, y0, t_end, n: solver.integrate(source, y0, t_end, n, OMEGA)
    return [Check("reference", "second order against solve_ivp", lambda: reference_study(
        run, rhs, [1.0, 0.0], 1.0, (25, 50, 100, 200), expected_order=2))]
"""


def claim_text(i: int, scipy: bool) -> str:
    """Claim ``i``: the MMS claim, or with ``scipy`` its checks() replaced by a reference_study."""
    text = CLAIM.format(i=i, omega=1.0 + 0.05 * i)
    if scipy:
        text = text[: text.index("\n\ndef checks():")] + SCIPY_CHECKS
    return text


def make_repo(root: Path, n: int, scipy: bool = False) -> None:
    """A git repository with solver.py and ``n`` claims about it, committed."""
    repo = git.Repo.init(root)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    (root / "claims").mkdir()
    (root / "solver.py").write_text(SOLVER)
    for i in range(n):
        (root / "claims" / f"claim_{i:03d}.py").write_text(claim_text(i, scipy))
    repo.index.add(["solver.py", *[f"claims/claim_{i:03d}.py" for i in range(n)]])
    repo.index.commit("benchmark claims")


CPU: list[float] = []  # CPU seconds of each timed command and every process it waited for, in order


def timed(command: list[str], cwd: Path) -> float:
    """Wall time of one command; it must exit 0 (rejected / gate passed). Its CPU time goes to CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


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


def warm_import_seconds(scipy: bool) -> float:
    """ONE interpreter start plus the imports every claim makes."""
    imports = "import numpy, physverify, physverify.mms, physverify.studies" + (", scipy.integrate" if scipy else "")
    return timed([sys.executable, "-c", imports], Path.cwd())


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="number of claims (default 40)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="replay --jobs (default: CPUs)")
    parser.add_argument("--scipy", action="store_true", help="claims check against solve_ivp (reference_study)")
    parser.add_argument("--repeats", type=int, default=3, help="fork replays and floor imports, interleaved (median)")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "physverify"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, args.n, args.scipy)
        replay_cmd = [*cli, "replay", "claims", "--trusted", "--jobs", str(args.jobs), "--isolation"]
        # fork replay and the floor's import are measured in turns, so a burst of load from
        # other work on a shared machine hits both alike; the median of each is reported
        forks, imports, fork_cpu, import_cpu = [], [], [], []
        for r in range(args.repeats):
            forks.append(timed([*replay_cmd, "fork", "--ledger", f"fork{r}.jsonl"], root))
            fork_cpu.append(CPU[-1])
            imports.append(warm_import_seconds(args.scipy))
            import_cpu.append(CPU[-1])
        fresh = timed([*replay_cmd, "fresh", "--ledger", "fresh.jsonl"], root)
        fresh_cpu = CPU[-1]
        serial = sum(
            timed([*cli, "confirm", f"claims/claim_{i:03d}.py", "--trusted", "--ledger", "serial.jsonl"], root)
            for i in range(args.n)
        )
        (root / "fork0.jsonl").rename(root / "claims" / "confirm_ledger.jsonl")
        repo = git.Repo(root)
        repo.index.add(["claims/confirm_ledger.jsonl"])
        repo.index.commit("ledger")
        no_change = timed([*cli, "replay", "claims", "--trusted", "--changed-since", "HEAD"], root)
        compute = compute_seconds(root, args.n)
    replay = {"fork": median(forks), "fresh": fresh}
    floor = median(imports) + compute / args.jobs
    kind = "scipy (reference_study)" if args.scipy else "numpy (mms_order_study)"
    print(f"{args.n} {kind} claims, {args.jobs} jobs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(
        f"  fork replays {', '.join(f'{t:.2f}' for t in forks)} s; floor imports {', '.join(f'{t:.2f}' for t in imports)} s"
    )
    print(
        f"  replay, fork      {replay['fork']:7.2f} s   {serial / replay['fork']:5.2f}x faster than serial; "
        f"{replay['fork'] / floor:4.2f}x the warm floor (target <= 2.0)"
    )
    print(
        f"  replay, fresh     {replay['fresh']:7.2f} s   {serial / replay['fresh']:5.2f}x faster than serial; "
        f"{replay['fresh'] / floor:4.2f}x the warm floor"
    )
    print(f"  serial confirm    {serial:7.2f} s")
    print(
        f"  warm floor        {floor:7.2f} s   (one import {floor - compute / args.jobs:.2f} s + compute "
        f"{compute:.2f} s / {args.jobs})"
    )
    print(f"  no-change replay  {no_change:7.2f} s   (--changed-since HEAD; target < 1 s)")
    floor_cpu = median(import_cpu) + compute
    print(
        f"  CPU seconds (all processes): fork replay {median(fork_cpu):.2f}, fresh replay {fresh_cpu:.2f}, "
        f"warm floor {floor_cpu:.2f} (fork / floor = {median(fork_cpu) / floor_cpu:.2f})"
    )


if __name__ == "__main__":
    main()
