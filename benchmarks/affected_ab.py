"""Issue 19's affected-only row, two physverify source trees side by side, alternating run by run.

scale_bench.py's repository of 40 tiny claims, 5 of which import model_a.py: a cold replay of
the 40 (no ledger, an empty cache folder), then, with that ledger committed and model_a.py
edited, the five-claim `replay claims --trusted --changed-since HEAD` and the pre-commit hook
with model_a.py staged (`replay --pre-commit model_a.py`), each with a warm cache folder of
its tree's own. The ledger is put back as committed before every run, so each run judges the
same five claims. Each source tree is put first on PYTHONPATH in turn; the order alternates
every round. Reported per row and tree: the medians of wall and of the physverify process's
own CPU (scale_bench.physverify), the load average as each run ended, and each tree's
affected-only ratio (the five-claim run's median over the cold replay's).

    python benchmarks/affected_ab.py main=/path/to/main/src branch=/path/to/branch/src --runs 8
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402 - next to this file

LEDGER = "claims/confirm_ledger.jsonl"
Run = tuple[float, float, float]  # wall, the physverify process's CPU, load average


def measured(args: list[str], root: Path, env: dict[str, str]) -> Run:
    run = scale_bench.physverify(args, root, env)
    return run.wall_s, run.cpu_s, os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, metavar="NAME=SRC", help="two source trees (the folders holding physverify/)")
    parser.add_argument("--runs", type=int, default=8, help="rounds; each runs every row once per tree")
    parser.add_argument("--jobs", type=int, default=2, help="replay --jobs (default 2)")
    args = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.trees)
    env0 = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_", "PYTHONPATH"))}
    for src in trees.values():  # as pip leaves an installed package: no tree pays for compiling its modules
        compileall.compile_dir(str(Path(src) / "physverify"), quiet=1)
    jobs = ["--jobs", str(args.jobs)]
    rows = {
        "cold replay of the 40": ["replay", "claims", "--trusted", *jobs],
        "`--changed-since HEAD`, 5 of 40": ["replay", "claims", "--trusted", *jobs, "--changed-since", "HEAD"],
        "pre-commit hook, model_a.py staged": ["replay", "--pre-commit", "model_a.py"],
    }
    found: dict[tuple[str, str], list[Run]] = {}
    with tempfile.TemporaryDirectory(prefix="affected-ab-") as scratch:
        cold_root = Path(scratch) / "cold"
        scale_bench.make_repo(cold_root, 40, affected=5)
        root = Path(scratch) / "affected"
        repository = scale_bench.make_repo(root, 40, affected=5)
        first = {**env0, "PHYSVERIFY_CACHE_DIR": str(Path(scratch) / "first")}
        scale_bench.physverify(rows["cold replay of the 40"], root, first)
        scale_bench.commit_ledger(repository)
        (root / "model_a.py").write_text(scale_bench.MODEL + "\n# edited: the five claims that import it re-run\n")
        repository.index.add(["model_a.py"])  # staged, for the hook; --changed-since HEAD sees it too
        for name, src in trees.items():  # each tree's warm cache: one unmeasured run
            env = {**env0, "PYTHONPATH": src, "PHYSVERIFY_CACHE_DIR": str(Path(scratch) / f"warm-{name}")}
            scale_bench.physverify(rows["`--changed-since HEAD`, 5 of 40"], root, env)
            repository.git.checkout("HEAD", "--", LEDGER)
        for round_ in range(args.runs):
            order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
            for name, src in order:
                cold_cache = Path(scratch) / f"cold-{name}"
                shutil.rmtree(cold_cache, ignore_errors=True)
                (cold_root / LEDGER).unlink(missing_ok=True)
                env = {**env0, "PYTHONPATH": src, "PHYSVERIFY_CACHE_DIR": str(cold_cache)}
                found.setdefault(("cold replay of the 40", name), []).append(
                    measured(rows["cold replay of the 40"], cold_root, env))
                env["PHYSVERIFY_CACHE_DIR"] = str(Path(scratch) / f"warm-{name}")
                for row in ("`--changed-since HEAD`, 5 of 40", "pre-commit hook, model_a.py staged"):
                    found.setdefault((row, name), []).append(measured(rows[row], root, env))
                    repository.git.checkout("HEAD", "--", LEDGER)
    print("| row | tree | wall | physverify CPU | load average |")
    print("|---|---|---:|---:|---:|")
    medians: dict[tuple[str, str], float] = {}
    for (row, name), runs in found.items():
        wall, cpu, load = (statistics.median(run[i] for run in runs) for i in range(3))
        medians[(row, name)] = wall
        print(f"| {row} | {name} | {wall:.3f} s | {cpu:.3f} s | {load:.1f} |")
    for name in trees:
        five, cold = medians[("`--changed-since HEAD`, 5 of 40", name)], medians[("cold replay of the 40", name)]
        print(f"{name}: affected-only {five / cold:.2f} ({five:.3f} s / {cold:.3f} s; target <= 0.35)")


if __name__ == "__main__":
    main()
