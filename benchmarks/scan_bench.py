"""``physverify scan`` on 10,000 generated files against ruff's own time on the same tree.

The tree holds the shapes the scan looks for and the code around them: steppers written out
in stages (some with a stage at the wrong time), Butcher tables as class attributes, grids
with their spacings, physical constants, pairs of inverse functions, and plain modules of
functions and classes (about 60 lines a file). ruff is the anchor of what a static pass over
Python costs: a parser in Rust, no import of the code. Both run as processes, alternately,
ruff with ``--no-cache`` and only pyflakes and pycodestyle (this project's own selection), so
neither is helped by a previous run. The scan's reading of each file is also timed in-process
(parse, rules), to show where its time goes. Nothing is asserted.
Usage: python benchmarks/scan_bench.py [--files 10000] [--runs 5]
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

STEPPER = '''"""A {kind} stepper of the generated tree."""
import numpy as np

G = {G}
g = 9.81


def rk4_step_{i}(f, t, y, h):
    k1 = f(t, y)
    k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
    k3 = f(t + {c3} * h, y + 0.5 * h * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


class Heun{i}:
    order = 2
    A = [[0, 0], [1, 0]]
    b = [0.5, 0.5]
    c = [0, 1]


def grid_{i}(n, length):
    x = np.linspace(0.0, length, n)
    dx = length / {denominator}
    return x, dx


def to_lab_{i}(v):
    return v * 2.0


def from_lab_{i}(v):
    return v / 2.0
'''

PLAIN = '''"""A plain module of the generated tree: helpers, a class, no physics."""
from __future__ import annotations

import json
import os


def load_{i}(path):
    with open(path) as handle:
        return json.load(handle)


def merge_{i}(a, b):
    out = dict(a)
    for key, value in b.items():
        if key in out and isinstance(out[key], dict):
            out[key] = merge_{i}(out[key], value)
        else:
            out[key] = value
    return out


class Store{i}:
    def __init__(self, root):
        self.root = root
        self.items = {{}}

    def put(self, key, value):
        self.items[key] = value
        return len(self.items)

    def path(self, key):
        return os.path.join(self.root, f"{{key}}.json")

    def keys(self):
        return sorted(self.items)


def summarize_{i}(values):
    total = sum(values)
    mean = total / len(values) if values else 0.0
    spread = max(values) - min(values) if values else 0.0
    return {{"total": total, "mean": mean, "spread": spread}}
'''


def make_tree(root: Path, files: int) -> None:
    """``files`` modules, one in four a stepper module, in folders of 100."""
    for i in range(files):
        folder = root / f"pkg{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 4 == 0:
            broken = i % 8 == 0
            text = STEPPER.format(i=i, kind="broken" if broken else "right", c3="1.0" if broken else "0.5",
                                  G="6.764e-11" if broken else "6.674e-11", denominator="n" if broken else "(n - 1)")
        else:
            text = PLAIN.format(i=i)
        (folder / f"mod{i:05d}.py").write_text(text)


def _time(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return time.perf_counter() - start


def _in_process(root: Path) -> tuple[float, float, int]:
    """Seconds spent parsing and seconds in the rules, over every file, in this process."""
    import ast

    from physverify.scan import reading, walk

    parse = rules = 0.0
    count = 0
    for file in walk.files_under(str(root)):
        data = Path(file).read_bytes()
        start = time.perf_counter()
        tree = ast.parse(data)
        middle = time.perf_counter()
        reading.findings_in(tree, file)
        rules += time.perf_counter() - middle
        parse += middle - start
        count += 1
    return parse, rules, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000, help="files in the generated tree (default 10000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each command, alternating (default 5)")
    options = parser.parse_args()
    commands = {
        "physverify scan": [sys.executable, "-m", "physverify", "scan", "."],
        "ruff check": [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E,F",
                       "--exit-zero", "--quiet", "."],
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        make_tree(root, options.files)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        ratios = []
        for _ in range(options.runs):
            times = {name: _time(command, root) for name, command in commands.items()}
            for name, seconds in times.items():
                samples[name].append(seconds)
            ratios.append(times["physverify scan"] / times["ruff check"])
        parse, rules, count = _in_process(root)
    print(f"{options.files} files, {options.runs} runs of each (alternating), load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} CPUs")
    print()
    print("| command | median wall | min | max |")
    print("|---|---:|---:|---:|")
    for name, values in samples.items():
        print(f"| {name} | {statistics.median(values):.2f} s | {min(values):.2f} s | {max(values):.2f} s |")
    print()
    print(f"ratio scan / ruff, run by run: {', '.join(f'{r:.1f}' for r in ratios)} "
          f"(median {statistics.median(ratios):.1f})")
    print(f"in process, {count} files: parse {parse:.2f} s, the rules {rules:.2f} s")


if __name__ == "__main__":
    main()
