"""How fast does the command line start? Issue 11, item 4: `physverify --version` under 0.1 s.

`import physverify` loads nothing but the name table (PEP 562), so commands that run no
check never import numpy. Prints the median of N runs of each command, with the time of a
bare interpreter start beside it. Usage: python benchmarks/startup_bench.py [-n 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def median_seconds(command: list[str], cwd: Path, runs: int) -> tuple[float, float]:
    """Median wall and CPU time of ``runs`` runs of ``command`` (each must exit 0).

    CPU time is reported too because on a shared machine the wall time mostly measures
    the wait for a core."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return sorted(walls)[runs // 2], sorted(cpus)[runs // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "ledger.jsonl").write_text("")
        rows = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import physverify": [sys.executable, "-c", "import physverify"],
            "physverify --version": [sys.executable, "-m", "physverify", "--version"],
            "physverify ledger log": [sys.executable, "-m", "physverify", "ledger", "log", "--ledger", "ledger.jsonl"],
            "import numpy (for scale)": [sys.executable, "-c", "import numpy"],
        }
        print(f"median of {args.n} runs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(f"  {'':26s}   wall      CPU")
        for name, command in rows.items():
            wall, cpu = median_seconds(command, cwd, args.n)
            print(f"  {name:26s} {wall:6.3f} s  {cpu:6.3f} s")


if __name__ == "__main__":
    main()
