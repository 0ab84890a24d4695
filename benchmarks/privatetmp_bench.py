"""What a claim's own /tmp costs (isolation/privatetmp.py): the namespace each claim of a sandboxed run enters.

Two measurements, each interleaved round by round (the order reversed every round), with the
ratio of every round and the medians:

- enter: a warm interpreter (numpy and physverify imported, as the fork server) forks a child
  that exits at once, against a child that first enters its own user and mount namespace,
  tmpfs, Landlock domain and seccomp filter (``privatetmp.enter``), then exits;
- replay: ``physverify replay --jobs 1 --dry-run`` of N tiny claims (scale_bench.py's), with
  each claim in its own namespace (PHYSVERIFY_CLAIM_NAMESPACE=ask, as the sandbox sets it)
  against without, in fork and in fresh mode.

Both run inside the bwrap sandbox, on the command line ``physverify sandbox`` builds for the
repository of those claims (the script starts itself there with ``--inside``): the namespace's
cost depends on the mounts it makes read-only, and the sandbox has a dozen where a host has
many more.

Nothing is asserted. Usage: python benchmarks/privatetmp_bench.py [--claims 40] [--rounds 5] [--forks 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402  (the same tiny claims, the same repository)

from physverify.isolation import privatetmp  # noqa: E402


def _forks(n: int, enter: bool) -> float:
    """Milliseconds per fork + (enter) + exit + wait, over ``n`` children."""
    start = time.perf_counter()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if enter:
                    privatetmp.enter({privatetmp.CLAIM_NS_ENV: privatetmp.PRIVATE, "HOME": "/tmp/home",
                                      "TMPDIR": "/tmp/tmp"})
            except BaseException:  # noqa: BLE001 - the parent sees the exit code
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("privatetmp.enter failed in the child: no namespace can be made here")
    return (time.perf_counter() - start) * 1000 / n


def _replay(root: Path, isolation: str, private: bool) -> float:
    env = dict(os.environ)
    env.pop(privatetmp.CLAIM_NS_ENV, None)
    if private:
        env[privatetmp.CLAIM_NS_ENV] = privatetmp.ASK
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-I", "-m", "physverify", "replay", "claims", "--jobs", "1",
                           "--dry-run", "--isolation", isolation], cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1) or "claims share one /tmp" in done.stderr:
        raise SystemExit(f"the replay failed or ran without the namespace:\n{done.stdout}{done.stderr}")
    return seconds


def _interleaved(rounds: int, plain: Callable[[], float], private: Callable[[], float]) -> list[tuple[float, float]]:
    results = []
    for i in range(rounds):
        if i % 2:
            b = private()
            a = plain()
        else:
            a = plain()
            b = private()
        results.append((a, b))
    return results


def _report(label: str, unit: str, pairs: list[tuple[float, float]], per: int = 1) -> None:
    ratios = [b / a for a, b in pairs]
    extra = [(b - a) / per for a, b in pairs]
    print(f"{label}: without {statistics.median(a for a, _ in pairs):.3f} {unit}, "
          f"with {statistics.median(b for _, b in pairs):.3f} {unit}; ratio per round "
          f"{', '.join(f'{r:.3f}' for r in ratios)} (median {statistics.median(ratios):.3f}); "
          f"extra per claim {statistics.median(extra) * (1000 if unit == 's' else 1):.2f} ms (median)")


def _inside(args: argparse.Namespace) -> None:
    import ctypes  # noqa: F401  (loaded by the fork server and the fresh supervisor before they fork: procgroup)

    import numpy  # noqa: F401  (a warm interpreter, as the fork server's)

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, Landlock ABI {privatetmp.landlock_abi()}, "
          f"{len(open('/proc/self/mountinfo').readlines())} mounts in the sandbox")
    _report("fork + exit (per child)", "ms", _interleaved(args.rounds, lambda: _forks(args.forks, False),
                                                            lambda: _forks(args.forks, True)))
    root = Path.cwd()
    for isolation in ("fork", "fresh"):
        pairs = _interleaved(args.rounds, lambda: _replay(root, isolation, False), lambda: _replay(root, isolation, True))
        _report(f"replay --jobs 1 of {args.claims} claims, {isolation}", "s", pairs, per=args.claims)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--forks", type=int, default=200)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        _inside(args)
        return
    from physverify.commands.sandbox import run as sandbox

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        scale_bench.make_repo(root, args.claims)
        plan = sandbox.make_plan(sandbox.Inner(("replay", "claims"), "replay", ("claims",)), repo=root, cwd=root)
        argv = sandbox.bwrap_argv(plan, sandbox.Limits(4 * 2**30, 4096), python=sandbox.python_paths())
        for writable in plan.writable:  # a bind needs its source, as sandbox() makes it
            writable.host.touch()
        here = str(Path(__file__).resolve().parent)
        argv = argv[: argv.index("--chdir")] + ["--ro-bind", here, here, "--chdir", plan.cwd, "--", sys.executable,
                                                  "-I", f"{here}/privatetmp_bench.py", "--inside",
                                                  *(f"--{k}={v}" for k, v in vars(args).items() if k != "inside")]
        subprocess.run(argv, check=True, env=sandbox.backend_env("bwrap"))


if __name__ == "__main__":
    main()
