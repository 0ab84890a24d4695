"""What the reading of one claim costs besides its parse: the plain walk against specscan's fast ones (issue 19).

With an empty cache a run over 10,000 tiny claims parses each in a worker, and every walk
of the tree after ``ast.parse`` is paid 10,000 times. This measures, in one process and
interleaved a chunk at a time (so a busy machine slows both sides alike):

- the depth bound alone: ``specscan.walk(tree, MAX_NESTING)`` (every field of every node, the
  walk claim.py used) against ``specscan.deeper_than(tree, MAX_NESTING)``;
- the depth bound and the scan's pass for imports and functions, as a reading does them: the
  one plain walk and a pass over its nodes (claim.py handed the walk on) against
  ``deeper_than`` and ``specscan._Module``'s pass over ``specscan.statements(tree)``;

on scale_bench.py's tiny claim and on physverify's own modules (larger, varied files). It
prints microseconds per file (the minimum over chunks) and the median ratio of new to old
over chunks. Nothing is asserted. Usage: python benchmarks/walk_bench.py [--files N]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import scale_bench  # noqa: E402

from physverify.gate import claim, specscan  # noqa: E402


def _old_reading(tree: ast.AST) -> None:
    """The depth bound and specscan._Module's loop as they were: one plain walk, then every node of it."""
    walked = specscan.walk(tree, claim.MAX_NESTING)
    assert walked is not None
    import_nodes, functions = [], []
    for node in walked:
        if type(node) in specscan._PLAIN:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            import_nodes.append(node)
        else:
            functions.extend(specscan._named(node))


def _new_reading(tree: ast.AST) -> None:
    specscan.deeper_than(tree, claim.MAX_NESTING)
    specscan._Module(tree)  # type: ignore[arg-type]


def compare(trees: Sequence[ast.AST], old: Callable[[ast.AST], object], new: Callable[[ast.AST], object],
            chunk: int = 25) -> tuple[float, float, float]:
    """(old us per tree, new us per tree, median new/old ratio), each side timed on the same chunks in turn."""
    olds, news = [], []
    for start in range(0, len(trees), chunk):
        part = trees[start:start + chunk]
        for fn, out in ((old, olds), (new, news)):
            began = time.thread_time()
            for tree in part:
                fn(tree)
            out.append((time.thread_time() - began) / len(part) * 1e6)
    return min(olds), min(news), statistics.median(n / o for o, n in zip(olds, news))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=2000, help="tiny claims to read (default 2000)")
    args = parser.parse_args(argv)
    tiny = [ast.parse(scale_bench.CLAIM.format(i=i, module="model_b", terms=scale_bench.TERMS))
            for i in range(args.files)]
    own = [ast.parse(path.read_bytes()) for path in sorted((HERE.parent / "src" / "physverify").rglob("*.py"))]
    own = (own * max(1, 200 // len(own)))[:max(len(own), 200)]
    rows = [
        ("tiny claims", "depth bound", compare(tiny, lambda t: specscan.walk(t, claim.MAX_NESTING),
                                               lambda t: specscan.deeper_than(t, claim.MAX_NESTING))),
        ("tiny claims", "depth bound and scan pass", compare(tiny, _old_reading, _new_reading)),
        ("physverify's modules", "depth bound", compare(own, lambda t: specscan.walk(t, claim.MAX_NESTING),
                                                        lambda t: specscan.deeper_than(t, claim.MAX_NESTING), 5)),
        ("physverify's modules", "depth bound and scan pass", compare(own, _old_reading, _new_reading, 5)),
    ]
    print("| files | step | plain walk, us/file | fast walks, us/file | new/old (median over chunks) |")
    print("|---|---|---|---|---|")
    for files, step, (old, new, ratio) in rows:
        print(f"| {files} | {step} | {old:.1f} | {new:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
