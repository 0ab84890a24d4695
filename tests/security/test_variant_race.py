"""A claim running beside another cannot rewrite that claim's variant source (issue 37, item 3).

The variant of a claim with ``defect`` and ``fix`` reaches its child through a descriptor
physverify holds while the child starts. The racer below, a claim of the same run
(``--jobs 2``, fresh children), scans every process's descriptors for it, re-opens it through
/proc/PID/fd and puts the file's own (defective) source in place of the fix: the variant
then fails like the code, and the victim's ``confirmed`` becomes ``not decidable``. The
source is served from a sealed memfd, so the re-opened file cannot be written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fix_claims import BURGERS_DEFECT, BURGERS_IDENTITY_CHECKS, burgers_claim

REPETITIONS = 20

# Looks at every descriptor of every process of this test (working in its folder, HERE) until one
# holds a variant (a JSON object with "target" and "source"), then writes the target's own text
# as the source, and stops; it gives up after 20 s (it lost the race). It reports what it did in
# a file next to it. Processes elsewhere on the machine are never touched.
RACER = '''\
"""A claim that races its sibling for the variant's descriptor."""
import json, os, time

from physverify import PASS, Check, Result

CLAIM = {"text": "a racer", "source": "a test", "file": "burgers.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _variant(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        value = json.loads(os.pread(fd, 1 << 22, 0))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return value if isinstance(value, dict) and set(value) == {"target", "source"} else None


def _race():
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                if not os.readlink(f"/proc/{pid}/cwd").startswith(HERE):
                    continue
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                path = f"/proc/{pid}/fd/{fd}"
                found = _variant(path)
                if found is None:
                    continue
                found["source"] = open(found["target"]).read()
                try:
                    writable = os.open(path, os.O_RDWR)
                    os.ftruncate(writable, 0)
                    os.pwrite(writable, json.dumps(found).encode(), 0)
                    os.close(writable)
                except OSError as exc:
                    return f"refused: {exc}"
                return "rewritten"
    return "not found"


with open(os.path.join(os.path.dirname(__file__), "racer.log"), "a") as _log:
    _log.write(_race() + "\\n")


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "always passes too", lambda: Result(PASS, "ok"))]
'''


def _folder(tmp_path: Path) -> Path:
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "burgers.py").write_text(BURGERS_DEFECT)
    (claims / "claim_burgers.py").write_text(burgers_claim(BURGERS_IDENTITY_CHECKS))
    (claims / "claim_racer.py").write_text(RACER)
    return claims


@pytest.mark.slow
def test_a_racing_claim_cannot_rewrite_its_siblings_variant(tmp_path: Path, cli: Callable[..., Any]) -> None:
    claims = _folder(tmp_path)
    verdicts: list[str] = []
    for _ in range(REPETITIONS):
        done = cli("replay", "claims", "--jobs", "2", "--isolation", "fresh", "--timeout", "120", "--trusted",
                   "--dry-run", "--format", "json", cwd=tmp_path)
        verdicts += [c["verdict"] for c in json.loads(done.stdout)["claims"] if c["claim_key"].endswith("burgers.py")]
    attempts = (claims / "racer.log").read_text().splitlines()
    assert verdicts == ["confirmed"] * REPETITIONS, (verdicts, attempts)
    # the racer found the variant in most runs and every write was refused, so the verdicts above were tested
    assert "rewritten" not in attempts and attempts.count("not found") < REPETITIONS // 2, attempts
