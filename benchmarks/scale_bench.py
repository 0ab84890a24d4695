"""How does the gate scale with the number of claims? Issue 19's benchmark, every target side by side in one run.

Generates git repositories of N tiny claims (each computes for a few milliseconds, pure
Python, as in the issue) and measures, per N (default 100, 1,000 and 10,000):

- cold replay: `physverify replay claims --trusted`, no ledger yet (every claim new);
- replay again, nothing changed: the same command after the ledger is committed;
- `--changed-since HEAD` with nothing changed, with an empty cache folder and again with the
  one the first run left (``PHYSVERIFY_CACHE_DIR``; a physverify without a cache ignores it);
- the pre-commit hook's command (`physverify replay --pre-commit FILE`, as pre-commit runs the
  entry of .pre-commit-hooks.yaml) with one unrelated file staged, cold and warm cache;
- parent planning time per claim: the parent's CPU seconds in the warm no-op
  `--changed-since HEAD` (which plans every claim and runs none) less those of
  `physverify --version`, divided by N; measured with getrusage in that process;
- the warm floor: one interpreter importing physverify, plus the claims' own compute measured
  in this process and spread over the jobs; and cold replay against it;
- peak parent memory: the ru_maxrss of the physverify process itself in the cold replay (the
  fork server and the claims are other processes).

And once per run:

- affected-only: 40 claims of which 5 import the changed module, `--changed-since HEAD`,
  against the cold replay of the same 40;
- a no-op `--changed-since HEAD` on 1,000 claims whose committed ledger has 100,000 lines;
- a one-claim replay whose committed ledger has 200,000 lines (issue 21, item 11): time and
  parent memory.

Every command runs as its own process, in a temporary folder; nothing is asserted (benchmarks
never pass or fail). physverify's own modules are compiled first, as an installed package's
are: with PYTHONDONTWRITEBYTECODE set and a module edited since its .pyc was written, every
measured process would otherwise compile it again (tens of milliseconds each). Usage: python benchmarks/scale_bench.py [--sizes 100,1000,10000] [--jobs J]
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import git

# One tiny claim: the partial sums of 1/k^2 approach pi^2/6 with an error below 1/n (Apostol,
# Mathematical Analysis, 8.12: the tail of sum 1/k^2 after n terms lies between 1/(n+1) and
# 1/n). The claim says the model's sum is off; control and check both pass, so it is rejected.
MODEL = '''"""The terms of a series (the code the benchmark's claims are about)."""


def term(k):
    return 1.0 / (k * k)
'''

CLAIM = '''"""Benchmark claim {i}: {module}.term sums to pi^2/6 (Apostol, Mathematical Analysis, 8.12)."""
import math

from physverify import FAIL, PASS, Check, Result

import {module}

CLAIM = {{
    "text": "benchmark claim {i}: the series of {module}.term does not converge to pi^2/6",
    "source": "benchmarks/scale_bench.py",
    "file": "{module}.py",
    "line": 4,
    "reference": "Apostol, Mathematical Analysis, 8.12: the tail of sum 1/k^2 after n terms lies in (1/(n+1), 1/n)",
    "impact": "unknown",
}}
TERMS = {terms}


def _tail_bound():
    partial = sum({module}.term(k) for k in range(1, TERMS + 1))
    tail = math.pi ** 2 / 6 - partial
    ok = 1.0 / (TERMS + 1) - 1e-12 < tail < 1.0 / TERMS + 1e-12
    return Result(PASS if ok else FAIL, f"tail {{tail:.6g}} after {{TERMS}} terms")


def _first_term():
    return Result(PASS if {module}.term(1) == 1.0 else FAIL, "term(1) = 1")


def control():
    return Check("reference", "the first term is 1", _first_term)


def checks():
    return [Check("reference", "the tail after TERMS terms lies between 1/(n+1) and 1/n", _tail_bound)]
'''

TERMS = 60_000  # about 5 ms of compute per claim on this machine

# Runs physverify's command line in this process and reports its own peak memory and CPU time on
# the last stderr line, so the parent is measured apart from the fork server and the claims. The
# peak is VmHWM of /proc/self/status: ru_maxrss keeps the high-water mark of the process it was
# forked from across exec, so it would report this script's own size whenever that is larger.
MEASURED = (
    "import gc, resource, sys\n"
    "from physverify.commands.cli import main\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "except SystemExit as exc:\n"
    "    code = exc.code if isinstance(exc.code, int) else 0\n"
    "gc.freeze()\n"  # as cli.command, the console command, exits
    "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "with open('/proc/self/status') as status:\n"
    "    peak = next((line.split()[1] for line in status if line.startswith('VmHWM:')), usage.ru_maxrss)\n"
    "sys.stderr.write(f'\\nPHYSVERIFY_BENCH {peak} {usage.ru_utime + usage.ru_stime}\\n')\n"
    "raise SystemExit(code)\n"
)


@dataclass(frozen=True)
class Measured:
    wall_s: float
    peak_mb: float  # the physverify process's own maximum resident set
    cpu_s: float  # its own user + system CPU seconds
    code: int


def physverify(args: Sequence[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run ``physverify ARGS`` as one process; its wall time, its own peak memory and CPU."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    last = [line for line in done.stderr.splitlines() if line.startswith("PHYSVERIFY_BENCH ")]
    if not last:
        raise SystemExit(f"physverify {' '.join(args)} ended without its measurement (exit {done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    _, rss_kb, cpu = last[-1].split()
    if done.returncode not in (0, 1):
        raise SystemExit(f"physverify {' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return Measured(wall, int(rss_kb) / 1024, float(cpu), done.returncode)


def make_repo(root: Path, n: int, affected: int = 0) -> git.Repo:
    """A committed repository of ``n`` tiny claims; the first ``affected`` import model_a, the rest model_b."""
    root.mkdir(parents=True)
    repo = git.Repo.init(root)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "bench").set_value("user", "email", "bench@example.invalid")
        cfg.set_value("commit", "gpgsign", "false")
    (root / "claims").mkdir()
    for module in ("model_a", "model_b"):
        (root / f"{module}.py").write_text(MODEL)
    names = []
    for i in range(n):
        name = f"claims/claim_{i:05d}.py"
        module = "model_a" if i < affected else "model_b"
        (root / name).write_text(CLAIM.format(i=i, module=module, terms=TERMS))
        names.append(name)
    repo.index.add(["model_a.py", "model_b.py", *names])
    repo.index.commit("benchmark claims")
    return repo


def commit_ledger(repo: git.Repo, message: str = "ledger") -> None:
    repo.index.add(["claims/confirm_ledger.jsonl"])
    repo.index.commit(message)


def compute_seconds(root: Path, n: int) -> float:
    """The claims' own compute: control() and checks() run in this process, imports excluded."""
    sys.path[:0] = [str(root), str(root / "claims")]
    total = 0.0
    try:
        for i in range(n):
            spec = importlib.util.spec_from_file_location(f"scale_claim_{i}", root / "claims" / f"claim_{i:05d}.py")
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            start = time.perf_counter()
            for check in [module.control(), *module.checks()]:
                check.run()
            total += time.perf_counter() - start
    finally:
        del sys.path[:2]
    return total


def grow_ledger(ledger: Path, lines: int) -> None:
    """Rewrite ``ledger`` to ``lines`` lines: earlier runs of the same claims first, the real lines last."""
    real = ledger.read_bytes().splitlines()
    records = [json.loads(line) for line in real]
    earlier = []
    for j in range(lines - len(real)):
        record = dict(records[j % len(records)])
        record["date"] = f"2020-01-01T00:00:{j % 60:02d}+00:00"
        record["repo_commit"] = f"{j:040x}"
        earlier.append(json.dumps(record).encode())
    ledger.write_bytes(b"\n".join(earlier + real) + b"\n")


@dataclass
class SizeResult:
    n: int
    cold: Measured
    again: Measured
    since_cold: Measured
    since_warm: Measured
    hook_cold: Measured
    hook_warm: Measured
    floor_s: float
    plan_ms: float


def measure_size(base: Path, n: int, jobs: int, env: dict[str, str], startup_cpu: float) -> SizeResult:
    root = base / f"n{n}"
    repo = make_repo(root, n)
    replay = ["replay", "claims", "--trusted", "--jobs", str(jobs)]

    def cache(name: str) -> dict[str, str]:  # one cache folder per measurement that wants its own
        return {**env, "PHYSVERIFY_CACHE_DIR": str(base / f"cache-{n}-{name}")}

    cold = physverify(replay, root, cache("cold"))
    commit_ledger(repo)
    again = physverify(replay, root, cache("again"))
    since = ["replay", "claims", "--trusted", "--changed-since", "HEAD"]
    since_cold = physverify(since, root, cache("since"))
    since_warm = physverify(since, root, cache("since"))
    (root / "notes.txt").write_text("a file no claim reads\n")
    repo.index.add(["notes.txt"])
    hook = ["replay", "--pre-commit", "notes.txt"]
    hook_cold = physverify(hook, root, cache("hook"))
    hook_warm = physverify(hook, root, cache("hook"))
    floor = warm_import_seconds(env) + compute_seconds(root, n) / jobs
    plan_ms = max(since_warm.cpu_s - startup_cpu, 0.0) / n * 1000
    return SizeResult(n, cold, again, since_cold, since_warm, hook_cold, hook_warm, floor, plan_ms)


def warm_import_seconds(env: dict[str, str]) -> float:
    """ONE interpreter start plus the imports every claim makes (physverify)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import physverify"], env=env, check=True)
    return time.perf_counter() - start


def affected_only(base: Path, jobs: int, env: dict[str, str]) -> tuple[Measured, Measured]:
    """40 claims, 5 of them importing model_a: cold replay, then model_a edited and --changed-since HEAD."""
    root = base / "affected"
    repo = make_repo(root, 40, affected=5)
    env = {**env, "PHYSVERIFY_CACHE_DIR": str(base / "cache-affected")}
    cold = physverify(["replay", "claims", "--trusted", "--jobs", str(jobs)], root, env)
    commit_ledger(repo)
    (root / "model_a.py").write_text(MODEL + "\n# edited: the five claims that import it re-run\n")
    five = physverify(["replay", "claims", "--trusted", "--jobs", str(jobs), "--changed-since", "HEAD"], root, env)
    return cold, five


def big_ledger_noop(base: Path, jobs: int, env: dict[str, str]) -> Measured:
    """1,000 claims whose committed ledger has 100,000 lines: a no-op --changed-since HEAD."""
    root = base / "big-ledger"
    repo = make_repo(root, 1000)
    env = {**env, "PHYSVERIFY_CACHE_DIR": str(base / "cache-big")}
    physverify(["replay", "claims", "--trusted", "--jobs", str(jobs)], root, env)
    grow_ledger(root / "claims" / "confirm_ledger.jsonl", 100_000)
    commit_ledger(repo, "a ledger of 100,000 lines")
    physverify(["replay", "claims", "--trusted", "--changed-since", "HEAD"], root, env)  # fills the cache
    return physverify(["replay", "claims", "--trusted", "--changed-since", "HEAD"], root, env)


def huge_ledger_one_claim(base: Path, env: dict[str, str]) -> Measured:
    """One claim whose committed ledger has 200,000 lines (its own history): one replay."""
    root = base / "huge-ledger"
    repo = make_repo(root, 1)
    env = {**env, "PHYSVERIFY_CACHE_DIR": str(base / "cache-huge")}
    physverify(["replay", "claims", "--trusted", "--jobs", "1"], root, env)
    grow_ledger(root / "claims" / "confirm_ledger.jsonl", 200_000)
    commit_ledger(repo, "a ledger of 200,000 lines")
    return physverify(["replay", "claims", "--trusted", "--jobs", "1"], root, env)


def _row(label: str, cells: Sequence[str], target: str) -> str:
    return f"| {label} | " + " | ".join(cells) + f" | {target} |"


def table(sizes: Sequence[SizeResult]) -> list[str]:
    def each(f: object) -> list[str]:
        return [f(s) for s in sizes]  # type: ignore[operator]

    head = ["| measure | " + " | ".join(f"{s.n:,} claims" for s in sizes) + " | target |",
            "|---|" + "---:|" * len(sizes) + "---|"]
    return head + [
        _row("cold replay", each(lambda s: f"{s.cold.wall_s:.2f} s"), ""),
        _row("replay again, nothing changed", each(lambda s: f"{s.again.wall_s:.2f} s"), ""),
        _row("again / cold", each(lambda s: f"{s.again.wall_s / s.cold.wall_s:.2f}x"), "<= 1.1x at every N"),
        _row("`--changed-since HEAD`, nothing changed, cold cache", each(lambda s: f"{s.since_cold.wall_s:.2f} s"),
             "<= 5 s at 10,000"),
        _row("`--changed-since HEAD`, nothing changed, warm cache", each(lambda s: f"{s.since_warm.wall_s:.2f} s"),
             "<= 0.5 s at 10,000"),
        _row("pre-commit hook, one unrelated staged file, cold cache", each(lambda s: f"{s.hook_cold.wall_s:.2f} s"),
             "<= 5 s at 10,000"),
        _row("pre-commit hook, one unrelated staged file, warm cache", each(lambda s: f"{s.hook_warm.wall_s:.2f} s"),
             "<= 0.5 s at 10,000"),
        _row("parent planning CPU per claim, warm cache", each(lambda s: f"{s.plan_ms:.2f} ms"), "<= 1 ms"),
        _row("warm floor (one import + compute / jobs)", each(lambda s: f"{s.floor_s:.2f} s"), ""),
        _row("cold replay / warm floor", each(lambda s: f"{s.cold.wall_s / s.floor_s:.2f}x"), "<= 2.0x at 1,000"),
        _row("peak parent memory, cold replay", each(lambda s: f"{s.cold.peak_mb:.0f} MB"), "<= 200 MB at 10,000"),
        _row("peak parent memory, replay again", each(lambda s: f"{s.again.peak_mb:.0f} MB"), ""),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="claims per repository, separated by commas")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="replay --jobs (default: CPUs)")
    parser.add_argument("--skip-ledgers", action="store_true", help="leave out the 100,000- and 200,000-line ledgers")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_"))}
    package = Path(importlib.util.find_spec("physverify").origin or "").parent  # type: ignore[union-attr]
    compileall.compile_dir(package, quiet=1)  # as pip leaves an installed package
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        startup = min((physverify(["--version"], base, env) for _ in range(3)), key=lambda m: m.cpu_s)
        results = []
        for n in sizes:  # each size on stderr as it is done: the 10,000 case takes many minutes
            results.append(measure_size(base, n, args.jobs, env, startup.cpu_s))
            print("\n".join(table(results)[-12:]).replace("| ", "").replace(" |", ";"), file=sys.stderr, flush=True)
        cold40, five = affected_only(base, args.jobs, env)
        big = huge = None
        if not args.skip_ledgers:
            big = big_ledger_noop(base, args.jobs, env)
            huge = huge_ledger_one_claim(base, env)
    print(f"{args.jobs} jobs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
          f"{time.perf_counter() - started:.0f} s in all; `physverify --version` {startup.wall_s:.2f} s, "
          f"{startup.cpu_s:.2f} CPU s, {startup.peak_mb:.0f} MB")
    print()
    print("\n".join(table(results)))
    print()
    print("| measure | value | target |")
    print("|---|---:|---|")
    print(f"| affected-only (5 of 40) / cold replay of the 40 | {five.wall_s / cold40.wall_s:.2f} "
          f"({five.wall_s:.2f} s / {cold40.wall_s:.2f} s) | <= 0.35 |")
    if big is not None and huge is not None:
        print(f"| no-op `--changed-since HEAD`, 1,000 claims, 100,000-line committed ledger | {big.wall_s:.2f} s, "
              f"{big.peak_mb:.0f} MB | <= 2 s |")
        print(f"| one-claim replay, 200,000-line committed ledger (issue 21, item 11) | {huge.wall_s:.2f} s, "
              f"{huge.peak_mb:.0f} MB | (was 41 s, 2 GB) |")


if __name__ == "__main__":
    main()
