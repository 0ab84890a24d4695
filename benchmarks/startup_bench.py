"""How fast does the command line start? Issue 11, item 4: `physverify --version` under 0.1 s.

`import physverify` loads nothing but the name table (PEP 562), so commands that run no
check never import numpy. Prints the median of N runs of each command, with the time of a
bare interpreter start beside it. Usage: python benchmarks/startup_bench.py [-n 15]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def median_seconds(command: list[str], cwd: Path, runs: int) -> float:
    """Median wall time of ``runs`` runs of ``command`` (each must exit 0)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


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
        for name, command in rows.items():
            print(f"  {name:26s} {median_seconds(command, cwd, args.n):6.3f} s")


if __name__ == "__main__":
    main()
