"""What one claim's own process costs: the floor under issue 19's "cold replay within 2.0x of the warm floor".

Spec section 4 runs every claim in a process of its own. This benchmark measures, side by
side in one run on the tiny claims of scale_bench.py, how much of a cold replay's time per
claim is that process and how much is physverify's:

- compute: the claim's control() and checks() in this process (what scale_bench's warm floor counts);
- fork + exit: a warm interpreter (numpy and physverify imported, ``gc.freeze()``, as the fork
  server) forks a child that exits at once;
- fork + fork + exit: the same with the supervisor between them (the child forks the claim's
  process and waits for it), as the fork server does;
- fork + claim: the child runs the claim (compile, import of its model, control(), checks());
- fork + fork + claim: both, the shape of a claim under the fork server;
- physverify: a cold ``replay`` of N claims with --jobs 1, CPU of every process per claim.

Each row gives wall and CPU milliseconds per claim (CPU of this process and its children,
from getrusage) and its ratio to the compute alone. Nothing is asserted.
Usage: python benchmarks/fork_floor.py [--claims N]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402  (the same tiny claims, the same repository)


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _per_claim(n: int, body: Callable[[int], None]) -> tuple[float, float]:
    """Wall and CPU milliseconds per call of ``body(i)``, i = 0 .. n-1."""
    cpu, wall = _cpu(), time.perf_counter()
    for i in range(n):
        body(i)
    return (time.perf_counter() - wall) * 1000 / n, (_cpu() - cpu) * 1000 / n


def _forked(child: Callable[[], None]) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            child()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=200, help="claims per row (default 200)")
    n = parser.parse_args().claims
    import numpy  # noqa: F401  (what the fork server holds before it forks)

    import physverify.checks  # noqa: F401
    import physverify.isolation.child  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "claims-repo"
        scale_bench.make_repo(root, n)
        sources = [(root / "claims" / f"claim_{i:05d}.py").read_text() for i in range(n)]
        sys.path[:0] = [str(root), str(root / "claims")]
        gc.collect()
        gc.freeze()

        def claim(i: int) -> None:
            space: dict[str, object] = {"__name__": f"claim_{i}"}
            exec(compile(sources[i], f"claim_{i:05d}.py", "exec"), space)
            for check in [space["control"](), *space["checks"]()]:  # type: ignore[operator]
                check.run()

        def compute(i: int) -> None:  # the checks alone: what the warm floor counts
            space: dict[str, object] = {"__name__": f"claim_{i}"}
            exec(compile(sources[i], f"claim_{i:05d}.py", "exec"), space)
            checks = [space["control"](), *space["checks"]()]  # type: ignore[operator]
            start = time.perf_counter()
            for check in checks:
                check.run()
            compute_s.append(time.perf_counter() - start)

        compute_s: list[float] = []
        _per_claim(n, compute)
        compute_ms = sum(compute_s) * 1000 / n
        rows = [
            ("fork + exit", _per_claim(n, lambda i: _forked(lambda: None))),
            ("fork + fork + exit", _per_claim(n, lambda i: _forked(lambda: _forked(lambda: None)))),
            ("fork + claim", _per_claim(n, lambda i: _forked(lambda: claim(i)))),
            ("fork + fork + claim", _per_claim(n, lambda i: _forked(lambda: _forked(lambda: claim(i))))),
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_"))}
        env["PHYSVERIFY_CACHE_DIR"] = str(Path(tmp) / "cache")
        cpu, wall = _cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "1"], cwd=root,
                       env=env, capture_output=True, check=False)
        rows.append(("physverify replay --jobs 1 (all its processes)",
                     ((time.perf_counter() - wall) * 1000 / n, (_cpu() - cpu) * 1000 / n)))
    print(f"{n} tiny claims, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; the claims' compute: "
          f"{compute_ms:.1f} ms per claim")
    print()
    print("| per claim | wall | CPU | wall / compute |")
    print("|---|---:|---:|---:|")
    print(f"| compute alone | {compute_ms:.1f} ms | | 1.0x |")
    for label, (wall_ms, cpu_ms) in rows:
        print(f"| {label} | {wall_ms:.1f} ms | {cpu_ms:.1f} ms | {wall_ms / compute_ms:.1f}x |")


if __name__ == "__main__":
    main()
