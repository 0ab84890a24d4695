"""fresh.py: the fresh start and its watchdog: the claim dies with the process that started it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from support.childsupport import assert_ends_soon, sleeping_spec



def test_the_claim_dies_with_the_process_that_started_it(tmp_path: Path, isolation: str) -> None:
    """Issue 13, item 6: a killed confirm (CI cancel, OOM killer) leaves no claim running."""
    spec, pidfile, grandfile = sleeping_spec(tmp_path)
    runner = f"from physverify.isolation import isolate; isolate.run_child('spec', {str(spec)!r}, timeout_s=600, isolation={isolation!r})"
    parent = subprocess.Popen([sys.executable, "-c", runner])
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and grandfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    parent.kill()
    parent.wait()
    assert_ends_soon(pidfile)
    assert_ends_soon(grandfile)
