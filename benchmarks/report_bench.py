"""How fast is `physverify report`? Issue 12's benchmark, measured side by side in one run.

Writes a ledger of N claims (default 500), each line as `confirm` writes it: a control and two
checks whose data are real `check_order` results (second order, a first-order defect, an
order that has not settled), a third of the claims with an older line before (a history of
two). Then it times, each as a child process (`python -m physverify report ...`, start-up
included) and in-process (the rendering alone):

- tables: the page without plots (--max-plots 0), the floor any page pays: read the ledger,
  escape, lay out every claim and its numbers;
- default: the page as shipped, with the plots drawn for the first MAX_PLOTS checks;
- per plot: one matplotlib SVG, so the cost of drawing every check's plot can be read off.

Target (issue 12): a 500-claim ledger renders in under 5 s. Usage:
python benchmarks/report_bench.py [-n 500]

With ``--points``, issue 21's benchmark instead: one claim whose check reports 1,000, 20,000
and 100,000 levels, the page rendered (in-process, imports excluded) by the code before the fix
(``--before REF``, the source tree at that git ref, extracted to a temporary folder) and by this
checkout, side by side in one run; a render still going after ``--limit`` seconds is stopped:
python benchmarks/report_bench.py --points [--sizes 1000,20000,100000] [--before REF] [--limit 120]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from physverify.checks import Check, run_check
from physverify.order import check_order
from physverify import plot as _plot
from physverify.report import html


def outcome(label: str, errors_at: Any, expected: float) -> dict[str, Any]:
    hs = [0.2 / 2**k for k in range(6)]
    return run_check(Check("mms", label, lambda: check_order(hs, [errors_at(h) for h in hs], expected))).to_dict()


def record(i: int, verdict: str, date: str) -> dict[str, Any]:
    key = f"claims/claim_{i:04d}.py"
    checks = [outcome("second order with the term", lambda h: 0.7 * h, 2),
              outcome("second order on a harder problem", lambda h: 3 * h**2 * (1 + 40 * h), 2)]
    return {
        "ledger_version": 1, "date": date, "physverify": "bench", "claim_file": key, "claim_key": key,
        "claim_sha256": "0" * 64, "text": f"claim {i}: the stage k3 uses t + h instead of t + h/2 <sic> & co",
        "source": "benchmark", "file": f"src/solver_{i % 17}.py", "line": 10 + i % 90,
        "reference": "Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1", "impact": "used",
        "file_sha256": None, "repo_commit": f"{i:040x}", "verdict": verdict, "reason": f"the reason for {verdict}",
        "control": outcome("second order without the term", lambda h: 0.5 * h**2, 2), "checks": checks,
        "allow_dependent_reference": None, "timeout_s": 300.0, "stderr_tail": None,
    }


def write_ledger(path: Path, n: int) -> None:
    verdicts = ("confirmed", "rejected", "not decidable")
    lines = [record(i, "rejected", "2026-01-01T00:00:00+00:00") for i in range(0, n, 3)]
    lines += [record(i, verdicts[i % 3], "2026-02-01T00:00:00+00:00") for i in range(n)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def timed_command(ledger: Path, out: Path, *extra: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one `physverify report` process (CPU time does not grow with the
    machine's load, so it is the number to compare between runs on a shared machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "physverify", "report", "--ledger", str(ledger), "-o", str(out), *extra],
                   check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed_render(ledger: Path, max_plots: int | None) -> tuple[float, int]:
    start = time.perf_counter()
    page = html.render_report(html.from_ledger(ledger), max_plots)
    return time.perf_counter() - start, len(page)


# --- issue 21, item 3: many points in one check -------------------------------------------------
# The last commit of main before the report was made O(n log n) (the fit window matched every level
# against every fitted step size: quadratic).
BEFORE = "7a6323e"
REPO = Path(__file__).resolve().parents[1]
# Run in a child with the code under test first on its path: the ledger's page, timed without the
# imports (matplotlib is imported and warmed by one small plot first).
_TIMED = """
import sys, time
from pathlib import Path
from physverify import plot as _plot
from physverify.report import html
small = _plot.convergence({"hs": [0.1, 0.05], "errors": [0.1, 0.025], "expected": 2, "fitted": 2})
_plot.svg(small, "warm")
start = time.perf_counter()
page = html.render_report(html.from_ledger(Path(sys.argv[1])))
print(time.perf_counter() - start, len(page), "levels drawn" in page)
"""


def points_ledger(path: Path, n: int) -> None:
    """One claim whose check reports ``n`` levels of a second-order study (fitted on all of them, as
    a study that fits every level records it)."""
    hs = [1.0 / (10 + k) for k in range(n)]
    big = {"label": f"a study of {n} levels", "family": "mms", "status": "PASS", "message": "second order",
           "data": {"hs": hs, "errors": [3 * h * h for h in hs], "expected": 2.0, "fitted": 2.0, "floor": 1e-12,
                    "fit_hs": hs}}
    line = dict(record(0, "rejected", "2026-02-01T00:00:00+00:00"), checks=[big])
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")


def source_at(ref: str, into: Path) -> Path:
    """The ``src`` folder of this repository at git ``ref``, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref, "src"], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def timed_child(src: Path, ledger: Path, limit: float) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    try:
        done = subprocess.run([sys.executable, "-c", _TIMED, str(ledger)], env=env, capture_output=True, text=True,
                              timeout=limit, cwd=ledger.parent)
    except subprocess.TimeoutExpired:
        return f"> {limit:.0f} s (stopped)"
    if done.returncode != 0:
        return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:60]
    seconds, size, capped = done.stdout.split()
    return f"{float(seconds):.2f} s, {int(size) / 1e6:.1f} MB" + (", capped" if capped == "True" else "")


def points_main(sizes: list[int], before: str, limit: float) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        old = source_at(before, Path(tmp) / "before")
        new = Path(__file__).resolve().parents[1] / "src"
        print(f"one check of N levels; page render in-process, imports excluded; {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}; before = {before}, after = this checkout")
        print(f"{'levels':>8}  {'before':>28}  {'after':>28}")
        for n in sizes:
            ledger = Path(tmp) / f"points-{n}.jsonl"
            points_ledger(ledger, n)
            print(f"{n:>8,}  {timed_child(old, ledger, limit):>28}  {timed_child(new, ledger, limit):>28}", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500, help="claims in the ledger (default: 500)")
    parser.add_argument("--points", action="store_true", help="issue 21's benchmark: one check of many levels")
    parser.add_argument("--sizes", default="1000,20000,100000", help="levels per check for --points")
    parser.add_argument("--before", default=BEFORE, help=f"the git ref of the code before (default: {BEFORE})")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a render is stopped")
    args = parser.parse_args()
    if args.points:
        return points_main([int(v) for v in args.sizes.split(",")], args.before, args.limit)
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        ledger, out = Path(tmp) / "ledger.jsonl", Path(tmp) / "report.html"
        write_ledger(ledger, n)
        checks_with_data = 3 * n
        print(f"{n} claims, {checks_with_data} checks with data, ledger {ledger.stat().st_size / 1e6:.1f} MB, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        tables_cmd = timed_command(ledger, out, "--max-plots", "0")
        default_cmd = timed_command(ledger, out)
        size = out.stat().st_size
        tables, _ = timed_render(ledger, 0)
        default, _ = timed_render(ledger, html.MAX_PLOTS)
        numbers = _plot.convergence(record(0, "confirmed", "")["checks"][0]["data"])
        assert numbers is not None
        _plot.svg(numbers, "warm")
        start = time.perf_counter()
        for i in range(10):
            _plot.svg(numbers, f"p{i}")
        per_plot = (time.perf_counter() - start) / 10
    print(f"{'':30}{'command wall':>14}{'command CPU':>13}{'render wall':>13}")
    print(f"{'tables only (--max-plots 0)':30}{tables_cmd[0]:>13.2f}s{tables_cmd[1]:>12.2f}s{tables:>12.2f}s")
    print(f"{f'default ({html.MAX_PLOTS} plots)':30}{default_cmd[0]:>13.2f}s{default_cmd[1]:>12.2f}s{default:>12.2f}s"
          f"   page {size / 1e6:.1f} MB")
    print(f"one plot (matplotlib SVG): {per_plot * 1000:.0f} ms wall; every check's plot would add about "
          f"{per_plot * checks_with_data:.0f} s")
    verdict = "meets" if default_cmd[1] < 5 else "misses"
    print(f"target: under 5 s for {n} claims: the default page {verdict} it in CPU time ({default_cmd[1]:.2f} s; "
          f"wall {default_cmd[0]:.2f} s at this load)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
