"""`replay --jobs 1` of tiny claims from two or more source trees, against "fork + claim", interleaved.

Row 1 of restated_targets.py as an A/B: each round runs the cold `replay --jobs 1` of the same
~5 ms claims once per tree (the tree's ``src`` folder put on PYTHONPATH, so that physverify, its
fork server and its claims' processes all come from it), the order reversed every round, and
"fork + claim" once; each ratio is taken within its round. Every replay runs as its own process
(scale_bench.physverify). Nothing is asserted.

    python benchmarks/jobs1_ab.py before=/tmp/main/src after=src [--rounds 16] [--claims 100]
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
import restated_targets  # noqa: E402 - next to this file: the claims and the floor of row 1
import scale_bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="NAME=SRC: a name and the src folder of a physverify tree")
    parser.add_argument("--rounds", type=int, default=16, help="rounds (8 or more for effects under 10%%)")
    parser.add_argument("--claims", type=int, default=100, help="tiny claims (default 100)")
    args = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.trees)
    for src in trees.values():
        compileall.compile_dir(str(Path(src) / "physverify"), quiet=1)  # as pip leaves an installed package
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_", "PYTHONPATH"))}
    times: dict[str, list[float]] = {name: [] for name in [*trees, "fork + claim"]}
    ratios: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="jobs1-ab-") as tmp:
        root = Path(tmp) / "tiny"
        restated_targets.make_claims(root, args.claims, 5)
        for round_ in range(args.rounds):
            order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
            found: dict[str, float] = {}
            for name, src in order:
                cache = Path(tmp) / f"cache-{name}"
                found[name] = scale_bench.physverify(["replay", "claims", "--trusted", "--jobs", "1"], root,
                                                     {**env, "PYTHONPATH": src, "PHYSVERIFY_CACHE_DIR": str(cache)}).wall_s
                (root / "claims" / "confirm_ledger.jsonl").unlink(missing_ok=True)  # cold: no ledger, no cache
                shutil.rmtree(cache, ignore_errors=True)
            found["fork + claim"] = restated_targets.fork_claim_floor(root, args.claims)
            for name, seconds in found.items():
                times[name].append(seconds)
            for name in trees:
                ratios[name].append(found[name] / found["fork + claim"])
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    print(f"{args.rounds} rounds, {args.claims} claims of ~5 ms, load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print("| tree | `replay --jobs 1` / fork + claim, median | range over rounds | median replay |")
    print("|---|---:|---:|---:|")
    for name in trees:
        values = ratios[name]
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f}-{max(values):.2f} | "
              f"{statistics.median(times[name]):.3f} s |")
    print(f"\nfork + claim, median: {statistics.median(times['fork + claim']):.3f} s")


if __name__ == "__main__":
    main()
