"""What the child-process tests share (test_child.py, test_procgroup.py, test_fork*.py, ...): specs, pids."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from physverify.gate import affected

if TYPE_CHECKING:
    import pytest

SPEC_HEADER = "from physverify import Check, Result, PASS, FAIL\n"


def write_spec(folder: Path, body: str, name: str = "verify_case.py") -> Path:
    path = folder / name
    path.write_text(SPEC_HEADER + textwrap.dedent(body), encoding="utf-8")
    return path


def outside(spec: Path) -> Callable[[], list[tuple[str, tuple[str, ...]]]]:
    """What run_specs gives isolate.run_child for a spec file: its imports from outside its folder, for the preload."""
    resolved = spec.resolve()
    return lambda: affected.outside_of(resolved, resolved.parent)


def noting_module(folder: Path, name: str, log: Path, body: str = "") -> Path:
    """A module ``name`` in ``folder`` that appends, to ``log``, the pid of each process importing it, then ``body``."""
    path = folder / f"{name}.py"
    path.write_text(f"import os\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n')\n" + body)
    return path


def installed_noting_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                            body: str = "") -> tuple[Path, Path]:
    """``noting_module`` in ``tmp_path/lib``, outside any claims folder below ``tmp_path``: (its file, its log).

    On PYTHONPATH, so a fork server started now finds it as an installed module, and on this
    process's sys.path, so preload.py does too.
    """
    lib = tmp_path / "lib"
    lib.mkdir()
    log = tmp_path / "imported.log"
    path = noting_module(lib, name, log, body)
    monkeypatch.setenv("PYTHONPATH", str(lib))
    monkeypatch.syspath_prepend(str(lib))
    return path, log


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it has no state "Z" once reaped by init
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_sleeper(pidfile: Path) -> str:
    """Claim-file lines that start a grandchild sleeping for 300 s and note its pid in ``pidfile``."""
    return f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
    """


def assert_ends_soon(pidfile: Path) -> None:
    """The process whose pid is in ``pidfile`` is gone within 5 s."""
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid)


def sleeping_spec(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A spec that writes its pid, starts a sleeping grandchild (its pid in the second file) and sleeps itself."""
    pidfile = tmp_path / "claim.pid"
    grandfile = tmp_path / "grandchild.pid"
    spec = write_spec(
        tmp_path,
        start_sleeper(grandfile)
        + f"""
        import os
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        def checks():
            time.sleep(300)
            return []
    """,
    )
    return spec, pidfile, grandfile
