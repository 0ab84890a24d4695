"""What the interpreter's exit costs a command: ``cli.main`` then a plain exit, against ``cli.command`` (main, then gc.freeze).

A warm no-op ``replay claims --trusted --changed-since HEAD`` on scale_bench.py's tiny claims
(the memo answers, so the run itself is short and its exit is a visible part of it), and
``physverify --version``. The two entries run alternately, each as its own process; the wall
and the process's own CPU (user + system, from wait4, so the exit is counted) are medians.
Nothing is asserted.
Usage: python benchmarks/exit_bench.py [--claims 1000] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402  (the same tiny claims, the same repository)

ENTRIES = {
    "main, plain exit": "import sys\nfrom physverify.commands.cli import main\nraise SystemExit(main())\n",
    "cli.command": "import sys\nfrom physverify.commands.cli import command\nraise SystemExit(command())\n",
}


def _measure(code: str, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit status {status}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=1000, help="tiny claims in the repository (default 1000)")
    parser.add_argument("--runs", type=int, default=15, help="runs of each entry per command (default 15)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "claims-repo"
        repo = scale_bench.make_repo(root, options.claims)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_"))}
        env["PHYSVERIFY_CACHE_DIR"] = str(Path(tmp) / "cache")
        subprocess.run([sys.executable, "-m", "physverify", "replay", "claims", "--trusted"], cwd=root, env=env,
                       capture_output=True, check=False)
        scale_bench.commit_ledger(repo)
        time.sleep(2.1)  # the no-op memo keeps only stats older than its margin
        noop = ["replay", "claims", "--trusted", "--changed-since", "HEAD"]
        for _ in range(2):  # the memo is made, then answers
            subprocess.run([sys.executable, "-m", "physverify", *noop], cwd=root, env=env, capture_output=True,
                           check=False)
        commands = {"warm no-op --changed-since HEAD": noop, "--version": ["--version"]}
        print(f"{options.claims} tiny claims, {options.runs} runs of each, load average {os.getloadavg()[0]:.1f}")
        print()
        print("| command | entry | wall | CPU |")
        print("|---|---|---:|---:|")
        for label, args in commands.items():
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in ENTRIES}
            for _ in range(options.runs):
                for name, code in ENTRIES.items():
                    samples[name].append(_measure(code, args, root, env))
            for name, runs in samples.items():
                wall = statistics.median(w for w, _ in runs) * 1000
                cpu = statistics.median(c for _, c in runs) * 1000
                print(f"| {label} | {name} | {wall:.1f} ms | {cpu:.1f} ms |")


if __name__ == "__main__":
    main()
