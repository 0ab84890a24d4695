"""Memory and process-count limits for the bwrap sandbox (issue 5; sandbox/README.md, "Limits").

bubblewrap sets no limits itself. Measured on the CI machine (root, cgroup v1):
RLIMIT_NPROC does not stop a fork bomb run as root, not even with --unshare-user, because
the kernel exempts processes whose real user is the initial namespace's root
(kernel/fork.c, copy_process). So the process count comes from a cgroup's pids.max where a
cgroup can be made (v2, or v1's pids controller), else from RLIMIT_NPROC for a non-root
caller; a root caller without a writable cgroup is refused. Memory: RLIMIT_AS on every
process (a huge allocation fails at once with MemoryError), plus the cgroup's memory limit on
the total where it can be made (many processes, tmpfs pages).
"""

from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from physverify.errors import PhysverifyError

CGROUP_ROOT = Path("/sys/fs/cgroup")
_V1_LIMITS = {"pids": "pids.max", "memory": "memory.limit_in_bytes"}
_V2_LIMITS = {"pids": "pids.max", "memory": "memory.max"}


@dataclass(frozen=True)
class Group:
    """The cgroup folders made for one run, and the rlimits its first process sets before exec."""

    folders: tuple[Path, ...]
    memory_bytes: int
    nproc: int | None  # RLIMIT_NPROC, only where no pids cgroup holds the count
    notes: tuple[str, ...]

    def enter(self) -> None:
        """Move the calling (just forked) process into the cgroups and set its rlimits; runs before exec."""
        pid = str(os.getpid()).encode()
        for folder in self.folders:
            fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (self.nproc, self.nproc))


@contextmanager
def limited(memory_bytes: int, pids: int) -> Iterator[Group]:
    """Yield a Group enforcing the limits; on exit kill whatever is left in it and remove its folders."""
    made = _make(memory_bytes, pids)
    try:
        yield _group(made, memory_bytes, pids)
    finally:
        for folder in dict.fromkeys(made.values()):
            _empty_and_remove(folder)


def _group(made: dict[str, Path], memory_bytes: int, pids: int) -> Group:
    notes = [f"memory: at most {_mib(memory_bytes)} per process (RLIMIT_AS)"
             + (", and in total (cgroup memory limit)" if "memory" in made else "; no cgroup for the total")]
    nproc = None
    if pids and "pids" in made:
        notes.append(f"processes: at most {pids} (cgroup pids.max)")
    elif pids and os.getuid() != 0:
        nproc = pids
        notes.append(f"processes: at most {pids} for this user (RLIMIT_NPROC)")
    elif pids:
        raise PhysverifyError("sandbox: cannot limit the number of processes: running as root, where "
                              "RLIMIT_NPROC does not apply, and no writable cgroup under /sys/fs/cgroup; "
                              "run as a non-root user, use docker or podman, or pass --pids 0 to run without")
    else:
        notes.append("processes: no limit (--pids 0)")
    return Group(tuple(dict.fromkeys(made.values())), memory_bytes, nproc, tuple(notes))


def _make(memory_bytes: int, pids: int) -> dict[str, Path]:
    """Return {controller: new cgroup folder with its limit written}, for the controllers that allow it."""
    name = f"physverify-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    values = {"memory": memory_bytes, "pids": pids}
    made: dict[str, Path] = {}
    for controller, folder, limit_file in _places(name):
        if controller == "pids" and not pids:
            continue
        try:
            folder.mkdir(exist_ok=True)  # v2: one folder holds both controllers
            (folder / limit_file).write_text(str(values[controller]))
        except OSError:  # not writable here (a non-root user, a read-only /sys, no such controller): fall back
            continue
        made[controller] = folder
    for folder in set(_places_folders(name)) - set(made.values()):
        try:
            folder.rmdir()
        except OSError:
            pass
    return made


def _places(name: str) -> list[tuple[str, Path, str]]:
    """Return (controller, folder to make, limit file) under the caller's own cgroups, v2 or v1."""
    own = _own_cgroups()
    if (CGROUP_ROOT / "cgroup.controllers").exists():  # the unified (v2) hierarchy: one folder
        folder = CGROUP_ROOT / own.get("", "/").lstrip("/") / name
        try:  # a controller reaches the new folder only when the parent delegates it
            delegated = (folder.parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            return []
        return [(c, folder, f) for c, f in _V2_LIMITS.items() if c in delegated]
    return [(c, CGROUP_ROOT / c / own[c].lstrip("/") / name, f) for c, f in _V1_LIMITS.items() if c in own]


def _places_folders(name: str) -> list[Path]:
    return [folder for _, folder, _ in _places(name)]


def _own_cgroups() -> dict[str, str]:
    """Return {controller: path} of this process (/proc/self/cgroup; v2's entry has controller '')."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    return own


def _empty_and_remove(folder: Path) -> None:
    """Kill every process left in ``folder`` (the sandbox's, after it ended), then remove the folder."""
    for _ in range(200):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    try:
        folder.rmdir()
    except OSError:
        pass  # still busy: the kernel removes nothing, and the folder is left for the next boot


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"
