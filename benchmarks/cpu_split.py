"""Where a cold replay's CPU goes, process by process, against the warm floor (issue 19's cold-replay target).

Runs one cold replay (no ledger, an empty cache folder) of scale_bench.py's N tiny claims with a
``sitecustomize`` on PYTHONPATH that makes every Python process it starts note its own resource
usage at exit. The fork server's children (each claim's own process; before the server did the
supervisor's jobs itself, a supervisor per claim and, through it, the claim's process) are counted
in the server's RUSAGE_CHILDREN; the claims' processes note their own usage before their exit, so
"supervisors and exits" is what is left of the server's children: every process's exit (unmapping
its copy of the server's pages) and, in a tree that still has them, the supervisors' own work.
Then the claims' compute in one warm process, as scale_bench.py measures the floor. Nothing is
asserted. To see the kernel's share of the same run, wrap it in ``perf record -a`` (see
benchmarks/README.md, "Issue 19's eighth pass").
Usage: python benchmarks/cpu_split.py [--claims 1000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_bench  # noqa: E402  (the same tiny claims, the same repository)

NOTE_AT_EXIT = '''\
import atexit, os, resource, sys


def _note():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    line = "\\t".join([" ".join(sys.argv), repr(own.ru_utime), repr(own.ru_stime), repr(kids.ru_utime),
                      repr(kids.ru_stime), str(own.ru_minflt)])
    fd = os.open(os.environ["CPU_SPLIT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (line.replace("\\n", " ") + "\\n").encode())
    os.close(fd)


atexit.register(_note)
'''


@dataclass
class Role:
    processes: int = 0
    user_s: float = 0.0
    system_s: float = 0.0
    faults: int = 0
    children: tuple[float, float] = (0.0, 0.0)
    notes: list[str] = field(default_factory=list)


def _role(argv: str) -> str:
    if "physverify.isolation.forkserver" in argv or "forkserver.py" in argv:
        return "fork server"
    if "parsepool" in argv:
        return "parse workers"
    if "fresh.py claim" in argv:
        return "claims' processes"
    return "parent"


def _read(log: Path) -> dict[str, Role]:
    roles: dict[str, Role] = {}
    for line in log.read_text().splitlines():
        argv, user, system, kids_user, kids_system, faults = line.split("\t")
        role = roles.setdefault(_role(argv), Role())
        role.processes += 1
        role.user_s += float(user)
        role.system_s += float(system)
        role.faults += int(faults)
        role.children = (role.children[0] + float(kids_user), role.children[1] + float(kids_system))
    return roles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=1000, help="tiny claims (default 1000)")
    parser.add_argument("--jobs", type=int, default=2, help="replay --jobs (default 2)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "claims-repo"
        scale_bench.make_repo(root, options.claims)
        site = base / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(NOTE_AT_EXIT)
        log = base / "rusage.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PHYSVERIFY_"))}
        env.update(PHYSVERIFY_CACHE_DIR=str(base / "cache"), CPU_SPLIT_LOG=str(log),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")])))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs",
                        str(options.jobs)], cwd=root, env=env, capture_output=True, check=False)
        wall = time.perf_counter() - start
        roles = _read(log)
        plain = {k: v for k, v in env.items() if k not in ("CPU_SPLIT_LOG", "PYTHONPATH")}
        if "PYTHONPATH" in os.environ:
            plain["PYTHONPATH"] = os.environ["PYTHONPATH"]
        compute = scale_bench.compute_seconds(root, options.claims)
        floor = scale_bench.warm_import_seconds(plain) + compute / options.jobs
    claims = roles.get("claims' processes", Role())
    server = roles.get("fork server", Role())
    left = Role(processes=claims.processes, user_s=server.children[0] - claims.user_s,
                system_s=server.children[1] - claims.system_s)
    rows = [("parent", roles.get("parent", Role())), ("parse workers", roles.get("parse workers", Role())),
            ("fork server", server), ("claims' processes", claims), ("supervisors and exits", left)]
    n = options.claims
    total = sum(r.user_s + r.system_s for _, r in rows)
    print(f"{n} tiny claims, --jobs {options.jobs}, load average {os.getloadavg()[0]:.1f}: cold replay {wall:.2f} s, "
          f"warm floor {floor:.2f} s ({wall / floor:.2f}x); the claims' compute in one process {compute:.2f} s")
    print()
    print("| process | count | user | system | CPU per claim | minor faults per process |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, role in rows:
        faults = f"{role.faults / role.processes:.0f}" if role.processes and role.faults else ""
        print(f"| {name} | {role.processes} | {role.user_s:.2f} s | {role.system_s:.2f} s | "
              f"{(role.user_s + role.system_s) / n * 1000:.2f} ms | {faults} |")
    print(f"| all | | | | {total / n * 1000:.2f} ms | |")


if __name__ == "__main__":
    main()
