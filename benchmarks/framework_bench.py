"""What one JAX claim costs in each isolation mode, with and without the fork server preloading JAX.

A claim on a jax.numpy Laplacian (operator_study, control and check: a few small XLA
computations) is run N times in each of three ways, interleaved round by round so a
machine's changing load falls on all of them alike:

- fresh: a new interpreter per claim (``--isolation fresh``), which imports numpy, physverify and JAX;
- fork, no preload: the fork server forks the claim, but JAX is imported in every claim's process
  (jax put back into preload.NEVER_PRELOAD, as before this change);
- fork, preload: the server imported jax once (the default now); each claim starts with it.

Each row gives the median wall milliseconds per claim and its ratio to fresh. Nothing is asserted.
Usage: python benchmarks/framework_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from physverify.isolation import forkclient, isolate, preload

CLAIM = '''
import numpy as np
import jax.numpy as jnp
from physverify import Check, operator_study

CLAIM = {"text": "t", "source": "a benchmark", "file": "claim_jax.py", "line": 1, "reference": "LeVeque, sec. 1.5",
         "impact": "unknown"}


def laplacian(u, dx):
    u = jnp.asarray(u)
    return (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / dx**2


def study():
    k = 2 * np.pi
    return operator_study(laplacian, lambda x: np.sin(k * x), lambda x: -k * k * np.sin(k * x), [8, 16, 32, 64], 2)


def control():
    return Check("operator", "laplacian", study)


def checks():
    return [Check("operator", "laplacian", study)]
'''


def _run(claim: Path, isolation: str, preload: tuple[str, ...] = ()) -> float:
    start = time.perf_counter()
    outcome = isolate.run_child("claim", claim, timeout_s=300, isolation=isolation, preload=preload)
    assert outcome.payload is not None and outcome.payload["control"]["status"] == "PASS", outcome.stderr_tail
    return (time.perf_counter() - start) * 1000


def _without_jax_preload(run: Callable[[], float]) -> float:
    """``run()`` with jax never preloaded (the caller gives it a server of its own: another preload list)."""
    saved = preload.NEVER_PRELOAD
    preload.NEVER_PRELOAD = saved | {"jax", "jaxlib"}
    preload._remembered.clear()
    try:
        return run()
    finally:
        preload.NEVER_PRELOAD = saved
        preload._remembered.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as folder:
        preloading, plain = Path(folder) / "a", Path(folder) / "b"
        for where in (preloading, plain):
            where.mkdir()
            (where / "claim_jax.py").write_text(CLAIM)
        ways: dict[str, Callable[[], float]] = {
            "fresh": lambda: _run(preloading / "claim_jax.py", "fresh"),
            # preload=("json",): another configuration, so another server than the preloading one's
            "fork, no preload": lambda: _without_jax_preload(lambda: _run(plain / "claim_jax.py", "fork", ("json",))),
            "fork, preload": lambda: _run(preloading / "claim_jax.py", "fork"),
        }
        for way in ways.values():  # the servers start, and JAX's files are in the page cache
            way()
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(rounds):
            for name, way in ways.items():
                times[name].append(way())
        forkclient.shutdown()
    fresh = statistics.median(times["fresh"])
    print(f"{'':18} {'ms per claim':>12} {'ratio to fresh':>15}   ({rounds} rounds, medians, {sys.platform})")
    for name, values in times.items():
        middle = statistics.median(values)
        print(f"{name:18} {middle:12.0f} {middle / fresh:15.2f}")


if __name__ == "__main__":
    main()
