"""Where does the parent spend its time before and around the claims' children? (issue 19)

Generates a git repository of N tiny claims (default 1,000; each imports solver.py and has
a reference function, so the import closure and rule 1's scan both have work to do) with a
committed ledger holding a line for every claim, then profiles, in this process:

- no-op: ``replay --changed-since HEAD`` with nothing changed (planning only, no child);
- parent: a full replay with the child replaced by a canned passing result, so what is
  measured is everything the parent does per claim (discovery, reading, root, key, commit,
  rule 1, the ledger line), not the claims' compute. Replacing the child is fine here:
  this is a measurement, not a test of the runner.

Each is run twice: with an empty cache of static readings (PHYSVERIFY_CACHE_DIR points at
a fresh folder) and again with the cache the first run filled; the in-memory readings are
dropped before each run, as a new process has none. Prints the wall time, the time per
claim, and the counts the issue names: ast.walk nodes, source parses, git repositories
opened and git processes started. ``--profile`` also prints cProfile's top functions.

Usage: python benchmarks/planning_profile.py [-n 1000] [--profile]
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import git

SOLVER = "def rhs(t, y):\n    return -y\n"

CLAIM = '''"""Planning benchmark claim {i} (Hairer, Norsett and Wanner, II.1)."""
import math

import solver
from physverify import Check

CLAIM = {{
    "text": "claim {i}: rhs has the wrong sign",
    "source": "benchmarks/planning_profile.py",
    "file": "solver.py",
    "line": 2,
    "reference": "y' = -y has the solution exp(-t)",
    "impact": "unknown",
}}


def exact(t):
    return math.exp(-t)


def helper(values):
    return [v * 2 for v in values]


def control():
    return Check("exact", "the exact solution decays", lambda: None)


def checks():
    return [Check("exact", "rhs decays", lambda: None)]
'''


def make_repo(root: Path, n: int) -> None:
    """``n`` claims about solver.py and a ledger with a rejected line for each, all committed."""
    from physverify.gate import ledger

    repo = git.Repo.init(root)
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    (root / "claims").mkdir()
    (root / "solver.py").write_text(SOLVER)
    names = [f"claims/claim_{i:05d}.py" for i in range(n)]
    for i, name in enumerate(names):
        (root / name).write_text(CLAIM.format(i=i))
    lines = []
    for name in names:
        record = ledger.new_record(name, "2026-12-01T00:00:00+00:00", "bench", 300.0)
        record.update(claim_key=name, verdict="rejected", reason="bench")
        lines.append(json.dumps(record))
    (root / "claims" / "confirm_ledger.jsonl").write_text("\n".join(lines) + "\n")
    for name in ["solver.py", "claims/confirm_ledger.jsonl", *names]:  # written a while before `git add`, as usual
        old = os.stat(root / name).st_mtime_ns - 10 * 10**9
        os.utime(root / name, ns=(old, old))
    repo.git.add("-A")  # git's own add keeps each file's stat in the index (GitPython's index.add keeps none)
    repo.index.commit("benchmark claims")


class Counts:
    """ast.walk nodes, parses, Repo opens and git processes while counting is on."""

    def __init__(self) -> None:
        self.walked = self.parsed = self.repos = self.gits = 0


@contextmanager
def counting() -> Iterator[Counts]:
    counts = Counts()
    walk, parse, popen = ast.walk, ast.parse, subprocess.Popen.__init__
    repo_init = git.Repo.__init__

    def counted_walk(node: ast.AST) -> Iterator[ast.AST]:
        for found in walk(node):
            counts.walked += 1
            yield found

    def counted_parse(*args: object, **kwargs: object) -> ast.AST:
        counts.parsed += 1
        return parse(*args, **kwargs)  # type: ignore[arg-type]

    def counted_popen(self: subprocess.Popen[bytes], args: object, *rest: object, **kwargs: object) -> None:
        if isinstance(args, (list, tuple)) and args and str(args[0]).endswith("git"):
            counts.gits += 1
        popen(self, args, *rest, **kwargs)  # type: ignore[arg-type]

    def counted_repo(self: git.Repo, *args: object, **kwargs: object) -> None:
        counts.repos += 1
        repo_init(self, *args, **kwargs)  # type: ignore[arg-type]

    ast.walk, ast.parse = counted_walk, counted_parse  # type: ignore[assignment]
    subprocess.Popen.__init__ = counted_popen  # type: ignore[method-assign]
    git.Repo.__init__ = counted_repo  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        ast.walk, ast.parse = walk, parse  # type: ignore[assignment]
        subprocess.Popen.__init__ = popen  # type: ignore[method-assign]
        git.Repo.__init__ = repo_init  # type: ignore[method-assign]


@contextmanager
def canned_child() -> Iterator[None]:
    """The claim's child replaced by a passing result: only the parent's own work is left."""
    from physverify.isolation import isolate

    outcome = {"status": "PASS", "label": "x", "family": "exact", "message": "", "seconds": 0.0}
    real = isolate.run_child

    def run_child(*args: object, **kwargs: object) -> isolate.ChildOutcome:
        return isolate.ChildOutcome(0, {"control": outcome, "checks": [outcome]}, "", False, 0.0)

    isolate.run_child = run_child  # type: ignore[assignment]
    try:
        yield
    finally:
        isolate.run_child = real


def measure(name: str, call: Callable[[], object], n: int, profile: bool) -> None:
    profiler = cProfile.Profile() if profile else None
    with counting() as counts:
        start, cpu = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        call()
        if profiler is not None:
            profiler.disable()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    # CPU seconds of this process too: on a shared machine the wall time mostly measures the others
    print(f"  {name:<40} {wall:6.2f} s wall {1000 * wall / n:6.2f} ms/claim, {1000 * cpu / n:5.2f} ms CPU/claim  "
          f"ast.walk nodes {counts.walked:>9,}  "
          f"parses {counts.parsed:>6,}  Repo opens {counts.repos:>5,}  git processes {counts.gits:>5,}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="number of claims (default 1000)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions for each run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        make_repo(root, args.n)
        os.environ["PHYSVERIFY_CACHE_DIR"] = str(Path(tmp) / "cache")
        os.chdir(root)
        from physverify.gate import replay

        def no_op() -> object:
            return replay.replay(["claims"], trusted=True, changed_since="HEAD")

        def parent() -> object:
            with canned_child():
                return replay.replay(["claims"], trusted=True, dry_run=True, jobs=1, isolation="fresh")

        from physverify.gate import claim

        print(f"{args.n} claims, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")
        for label, call in (("no-op --changed-since HEAD", no_op), ("parent work of a full replay", parent)):
            for state in ("cold", "warm"):
                if state == "cold":  # a cache folder of its own, empty
                    os.environ["PHYSVERIFY_CACHE_DIR"] = str(Path(tempfile.mkdtemp(dir=tmp)))
                claim._READINGS.clear()  # what a new process has in memory: nothing
                measure(f"{label}, {state} cache", call, args.n, args.profile)


if __name__ == "__main__":
    main()
