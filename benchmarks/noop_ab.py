"""Issue 19's no-op rows at 10,000 claims, two physverify source trees side by side, alternating run by run.

The no-op `replay claims --trusted --changed-since HEAD` and the pre-commit hook with one
unrelated staged file (`replay --pre-commit notes.txt`), each with an empty cache folder
(cold) and right after with the cache that run left (warm), on an existing repository whose
ledger is committed (scale_bench.py's 10,000-claim one, say). Each source tree is put first
on PYTHONPATH in turn; the order alternates every round. Reported per row and tree: the
medians of wall, the physverify process's own CPU (scale_bench.physverify), the CPU of its
children (the parse workers and git processes: this script's RUSAGE_CHILDREN less the
parent's) and the load average as each run ended. The repository's index is changed only
to stage and unstage notes.txt.

    python benchmarks/noop_ab.py REPO main=/path/to/main/src branch=/path/to/branch/src --runs 6
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import git

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402 - next to this file

SINCE = ["replay", "claims", "--trusted", "--changed-since", "HEAD"]
HOOK = ["replay", "--pre-commit", "notes.txt"]
Run = tuple[float, float, float, float]  # wall, parent CPU, children CPU, load average


def measured(args: list[str], root: Path, env: dict[str, str]) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = scale_bench.physverify(args, root, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) - run.cpu_s
    return run.wall_s, run.cpu_s, children, os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a claims repository whose ledger is committed")
    parser.add_argument("trees", nargs=2, metavar="NAME=SRC", help="two source trees (the folders holding physverify/)")
    parser.add_argument("--runs", type=int, default=6, help="rounds; each runs every row once per tree")
    args = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.trees)
    env0 = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_", "PYTHONPATH"))}
    root: Path = args.repo
    repository = git.Repo(root)
    found: dict[tuple[str, str, str], list[Run]] = {}
    with tempfile.TemporaryDirectory(prefix="noop-ab-") as scratch:
        for round_ in range(args.runs):
            order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
            for name, src in order:
                for row, command in (("since", SINCE), ("hook", HOOK)):
                    folder = Path(scratch) / f"{name}-{row}"
                    shutil.rmtree(folder, ignore_errors=True)
                    env = {**env0, "PYTHONPATH": src, "PHYSVERIFY_CACHE_DIR": str(folder)}
                    if row == "hook":
                        (root / "notes.txt").write_text("a file no claim reads\n")
                        repository.index.add(["notes.txt"])
                    try:
                        found.setdefault((row, "cold", name), []).append(measured(command, root, env))
                        found.setdefault((row, "warm", name), []).append(measured(command, root, env))
                    finally:
                        if row == "hook":
                            repository.index.remove(["notes.txt"])
                            (root / "notes.txt").unlink()
    print("| row | cache | tree | wall | parent CPU | children CPU | load average |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (row, temperature, name), runs in found.items():
        wall, parent, children, load = (statistics.median(run[i] for run in runs) for i in range(4))
        label = "`--changed-since HEAD`" if row == "since" else "pre-commit hook"
        print(f"| {label} | {temperature} | {name} | {wall:.2f} s | {parent:.2f} s | {children:.2f} s | {load:.1f} |")


if __name__ == "__main__":
    main()
