"""A one-claim replay against a committed ledger whose lines name claims that are gone, two source trees alternating.

The repository holds one tiny claim (scale_bench's) and a committed ledger of ``--lines``
lines (default 200,000), each for a claim whose file is gone (``claims/gone/NNNNNN.py``,
never committed), followed by the real claim's own line. Every replay must ask git, for
each such key, whether the file existed at the baseline commit (replay's removed claims):
before, one tree look-up per key; now one ``git ls-tree`` per repository and run. Each
source tree is put first on PYTHONPATH in turn, the order alternating every round; reported
per tree: the medians of wall, the physverify process's own peak memory (VmHWM) and CPU,
the CPU of its children (git; this script's RUSAGE_CHILDREN less the parent's) and the load
average as each run ended, and each round's ratio of the two trees' walls. On a machine shared
with other work the wall grows with the load; the two CPU columns do not.

    python benchmarks/removed_bench.py before=/tmp/before/src after=src --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402 - next to this file

REPLAY = ["replay", "claims", "--trusted", "--jobs", "1"]


def make(root: Path, lines: int, env: dict[str, str]) -> None:
    """One committed claim whose committed ledger has ``lines`` lines for gone claims, then its own."""
    repo = scale_bench.make_repo(root, 1)
    scale_bench.physverify(REPLAY, root, env)  # the claim's own line
    ledger = root / "claims" / "confirm_ledger.jsonl"
    own = ledger.read_bytes()
    record = json.loads(own)
    with ledger.open("wb") as out:
        for i in range(lines - 1):
            key = f"claims/gone/{i:06d}.py"
            digest = f"{i:064x}"  # each gone claim its own content, as a real history has
            out.write(json.dumps({**record, "claim_file": key, "claim_key": key, "claim_sha256": digest,
                                  "verdict": "confirmed"}).encode()
                      + b"\n")
        out.write(own)
    scale_bench.commit_ledger(repo, f"a ledger of {lines:,} lines, all but one for claims that are gone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=SRC", help="source trees (the folders holding physverify/)")
    parser.add_argument("--lines", type=int, default=200_000, help="lines of the committed ledger")
    parser.add_argument("--runs", type=int, default=3, help="rounds; each runs every tree once")
    args = parser.parse_args()
    trees = [tuple(tree.split("=", 1)) for tree in args.trees]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_", "PYTHONPATH"))}
    found: dict[str, list[tuple[scale_bench.Measured, float, float]]] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory(prefix="removed-bench-") as scratch:
        root = Path(scratch) / "repo"
        first = {**base_env, "PYTHONPATH": str(Path(trees[-1][1]).resolve()), "PHYSVERIFY_CACHE_DIR": "off"}
        make(root, args.lines, first)
        ratios = []
        for round_ in range(args.runs):
            order = trees if round_ % 2 == 0 else list(reversed(trees))
            walls = {}
            for name, src in order:
                env = {**base_env, "PYTHONPATH": str(Path(src).resolve()), "PHYSVERIFY_CACHE_DIR": "off"}
                # --dry-run: every round judges the same committed ledger and working ledger
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                run = scale_bench.physverify([*REPLAY, "--dry-run"], root, env)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                children = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime - run.cpu_s
                found[name].append((run, children, os.getloadavg()[0]))
                walls[name] = run.wall_s
                print(f"round {round_ + 1} {name}: {run.wall_s:.2f} s wall, {run.peak_mb:.0f} MB, "
                      f"{run.cpu_s:.2f} s CPU, children {children:.2f} s CPU, load {os.getloadavg()[0]:.1f}, "
                      f"exit {run.code}", file=sys.stderr, flush=True)
            if len(trees) == 2:
                ratios.append(walls[trees[0][0]] / walls[trees[1][0]])
    print(f"one-claim replay, committed ledger of {args.lines:,} lines for gone claims; medians of {args.runs} rounds")
    print("| tree | wall | peak parent memory | parent CPU | children CPU (git) | load average |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, runs in found.items():
        print(f"| {name} | {statistics.median(r.wall_s for r, _, _ in runs):.2f} s | "
              f"{statistics.median(r.peak_mb for r, _, _ in runs):.0f} MB | "
              f"{statistics.median(r.cpu_s for r, _, _ in runs):.2f} s | "
              f"{statistics.median(c for _, c, _ in runs):.2f} s | {statistics.median(x for _, _, x in runs):.1f} |")
    if ratios:
        print(f"wall {trees[0][0]} / {trees[1][0]}, each round: " + ", ".join(f"{r:.1f}x" for r in ratios))


if __name__ == "__main__":
    main()
