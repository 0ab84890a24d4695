"""Closely spaced levels: how often does check_order err when the levels are refined by 1.1 or 1.25?

benchmarks/soundness.py measures check_order on windows of levels refined by 2 and 4. Users also
give closely spaced levels (n = 100, 110, 121, ...); over such a window a pre-asymptotic order
drifts by less than the settling spread per level, and the projections of check_order, which
assume a ratio of at least 1.5, do not see the drift. This benchmark serves the soundness suite's
kept (method, problem) pairs (correct Runge-Kutta methods and their mutants, the same problems;
see soundness.py) on windows of five consecutive levels of the sequences 4 * 1.1**k and
4 * 1.25**k (rounded, strictly increasing, up to 8192 steps), through this build's check_order
and, with ``--before SRC``, through another source tree's, in a subprocess fed the same errors.

    python benchmarks/close_levels.py [--before OLD_CHECKOUT/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import soundness  # noqa: E402  (the suite: tableaux, mutants, problems, measured errors)

RATIOS = (1.1, 1.25)
WINDOW = 5

_CHILD = """
import json, sys
from physverify.order import check_order
cases = json.load(open(sys.argv[1]))
print(json.dumps([check_order(c["hs"], c["errors"], c["expected"], scale=c["scale"]).status for c in cases]))
"""


def levels(ratio: float) -> list[int]:
    """4 * ratio**k rounded, strictly increasing, up to soundness.MAX_N."""
    out: list[int] = []
    x = 4.0
    while x <= soundness.MAX_N:
        n = int(round(x))
        if not out or n > out[-1]:
            out.append(n)
        x *= ratio
    return out


def cases() -> list[dict[str, object]]:
    """Every window of WINDOW consecutive close levels of every kept pair, for each ratio."""
    close = {ratio: levels(ratio) for ratio in RATIOS}
    ns = tuple(sorted(set(soundness.NS).union(*close.values())))
    kept, _ = soundness.pairs(ns)
    out: list[dict[str, object]] = []
    for ratio, seq in close.items():
        for pair in kept:
            for start in range(len(seq) - WINDOW + 1):
                window = seq[start:start + WINDOW]
                out.append({"ratio": ratio, "correct": pair.correct, "expected": pair.tableau.order,
                            "scale": pair.scale, "hs": [pair.problem.t_end / n for n in window],
                            "errors": [pair.errors[n] for n in window]})
    return out


def statuses(src: str | None, suite: list[dict[str, object]]) -> list[str]:
    """The statuses check_order gives each case, in this process or with ``src`` first on the path."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(suite, handle)
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, handle.name], env=env, capture_output=True, text=True,
                              check=True)
    finally:
        os.unlink(handle.name)
    return list(json.loads(done.stdout))


def table(rows: dict[str, list[str]], suite: list[dict[str, object]]) -> str:
    lines = ["| build | ratio | false alarms | false passes | decided, correct | decided, defective |",
             "|---|---|---|---|---|---|"]
    for build, found in rows.items():
        for ratio in RATIOS:
            picked = [(c, s) for c, s in zip(suite, found) if c["ratio"] == ratio]
            good = [s for c, s in picked if c["correct"]]
            bad = [s for c, s in picked if not c["correct"]]
            alarms = sum(s == "FAIL" for s in good)
            passes = sum(s in ("PASS", "EXACT") for s in bad)
            lines.append(f"| {build} | {ratio:g} | {100 * alarms / len(good):.1f}% ({alarms} of {len(good)}) | "
                         f"{100 * passes / len(bad):.1f}% ({passes} of {len(bad)}) | "
                         f"{100 * sum(s != 'INCONCLUSIVE' for s in good) / len(good):.1f}% | "
                         f"{100 * sum(s != 'INCONCLUSIVE' for s in bad) / len(bad):.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="an older checkout's src folder, judged on the same errors")
    args = parser.parse_args(argv)
    suite = cases()
    rows = {"this build": statuses(os.environ.get("PYTHONPATH"), suite)}
    if args.before:
        rows["before"] = statuses(args.before, suite)
    print(table(rows, suite))
    print(f"\n{len(suite)} windows of {WINDOW} levels, ratios {', '.join(f'{r:g}' for r in RATIOS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
