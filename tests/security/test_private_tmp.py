"""Each claim of a sandboxed run has its own /tmp, /dev/shm and HOME, which no other claim reaches (issue 37).

Before, every claim of a run shared the sandbox's one /tmp: a claim could plant a file another
reads at a fixed path (a numba or matplotlib cache, a hand-written /tmp/x.npy) or read what
another wrote there. The planter here writes at every fixed path it can, and for the length of
the victim's run also looks for the victim's files through every /proc/PID/root, /proc/PID/cwd
and /proc/PID/fd it can open, writing into what it finds. The victim, a real defect, polls for
the planted files while the planter runs, writes and reads back its own files in /tmp and HOME
(tempfile, numpy), and stays ``confirmed`` only if it saw nothing planted and its files held.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import DECAY_DEFECT, committed_project, init_repo

needs_bwrap = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")

# Runs for RUN_S seconds beside the victim (--jobs 2 starts both at once).
PLANTER = '''\
"""Plants files at fixed paths, and writes into every /tmp it reaches through /proc, while the victim runs."""
import os, time

from physverify import PASS, Check, Result

CLAIM = {"text": "a planter", "source": "a test", "file": "decay.py", "line": 1,
         "reference": "none: the checks pass", "impact": "unknown"}
RUN_S = 6.0
_REACHED = set()


def _plant(folder):
    try:
        with open(os.path.join(folder, "planted"), "w") as handle:
            handle.write("planted")
        return True
    except OSError:
        return False


def _fixed_paths():
    for folder in ("/tmp", os.path.expanduser("~"), os.environ.get("TMPDIR", "/tmp"), "/dev/shm", "/home/sandbox",
                   "/home", "/root"):
        _plant(folder)


def _through_proc():
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for route in ("root/tmp", "root/dev/shm", "cwd"):
            top = f"/proc/{pid}/{route}"
            try:
                for folder, _, names in os.walk(top):
                    for name in names:
                        _REACHED.add(f"{pid}:{route}:{name}")
                        if name.startswith("victim"):
                            with open(os.path.join(folder, name), "w") as handle:
                                handle.write("overwritten")
                    _plant(folder)
            except OSError:
                pass


def _run():
    end = time.monotonic() + RUN_S
    while time.monotonic() < end:
        _fixed_paths()
        _through_proc()
        time.sleep(0.05)
    return Result(PASS, "ok")


def control():
    return Check("x", "always passes", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "plants for a while", _run)]
'''

# A real FAIL (the halved decay rate), behind a control that passes only when nothing planted was
# seen and the claim's own files in /tmp, TMPDIR and HOME held while the planter ran.
VICTIM = '''\
"""Claim: amount() decays with half the rate; its control fails when another claim reached its files."""
import math, os, tempfile, time

import numpy as np

from physverify import FAIL, PASS, Check, Result

import decay

CLAIM = {"text": "amount() uses half the decay rate", "source": "a test", "file": "decay.py", "line": 6,
         "reference": "Krane, Introductory Nuclear Physics, sec. 6.1: N(t) = N0 exp(-lambda t)", "impact": "used"}
WATCH_S = 4.0
PLACES = ("/tmp", os.path.expanduser("~"), tempfile.gettempdir(), "/dev/shm", "/home/sandbox", "/home", "/root")


def _own_files_hold():
    mine = {"/tmp/victim.npy": None, os.path.join(os.path.expanduser("~"), "victim_home"): b"home",
            "/dev/shm/victim_shm": b"shm"}
    np.save("/tmp/victim.npy", np.arange(5.0))
    for path, data in mine.items():
        if data is not None:
            with open(path, "wb") as handle:
                handle.write(data)
    handle, named = tempfile.mkstemp(prefix="victim")
    os.write(handle, b"temp")
    os.close(handle)
    seen = []
    end = time.monotonic() + WATCH_S
    while time.monotonic() < end:
        seen += [place for place in PLACES if os.path.exists(os.path.join(place, "planted"))]
        time.sleep(0.05)
    if seen:
        return Result(FAIL, "saw planted files in " + ", ".join(sorted(set(seen))))
    if not np.array_equal(np.load("/tmp/victim.npy"), np.arange(5.0)):
        return Result(FAIL, "/tmp/victim.npy changed")
    for path, data in {**mine, named: b"temp"}.items():
        if data is not None and open(path, "rb").read() != data:
            return Result(FAIL, path + " changed")
    return Result(PASS, "nothing planted, own files held")


def _compare(t):
    want, got = math.exp(-1.0 * t), decay.amount(1.0, 1.0, t)
    return Result(PASS if abs(got - want) <= 1e-12 else FAIL, f"got {got}, want {want}")


def control():
    return Check("x", "its own /tmp, TMPDIR, /dev/shm and HOME", _own_files_hold)


def checks():
    return [Check("x", "amount at t=1", lambda: _compare(1.0))]
'''


def _project(tmp_path: Path) -> Path:
    files = {"decay.py": DECAY_DEFECT, "claims/a_planter.py": PLANTER, "claims/b_victim.py": VICTIM}
    return committed_project(tmp_path / "project", files, "a planter and a victim")


def _sandboxed_replay(root: Path, tmp_path: Path, isolation: str) -> tuple[dict[str, dict[str, object]], str]:
    output = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "physverify", "sandbox", "--backend", "bwrap", "--", "replay", "claims",
                           "--jobs", "2", "--isolation", isolation, "--dry-run", "--format", "json",
                           "--output", str(output)], cwd=root, capture_output=True, text=True, timeout=300)
    assert output.exists(), done.stdout + done.stderr
    claims = {Path(c["claim_key"]).stem: c for c in json.loads(output.read_text())["claims"]}
    return claims, done.stdout + done.stderr


@needs_bwrap
@pytest.mark.parametrize("isolation", ["fresh", "fork"])
def test_no_claim_reaches_another_claims_tmp_or_home_inside_the_sandbox(tmp_path: Path, isolation: str) -> None:
    claims, said = _sandboxed_replay(_project(tmp_path), tmp_path, isolation)
    victim = claims["b_victim"]
    assert victim["control"]["message"] == "nothing planted, own files held", said
    assert victim["verdict"] == "confirmed", said
    assert claims["a_planter"]["verdict"] == "rejected", said  # it ran, beside the victim, and passed


def test_the_sandboxed_command_asks_every_claim_for_its_own_namespace(tmp_path: Path) -> None:
    from physverify.commands.sandbox.plan import Inner, make_plan
    from physverify.commands.sandbox.run import INSIDE_HOME, Limits, bwrap_argv
    from physverify.isolation.privatetmp import ASK, CLAIM_NS_ENV

    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    init_repo(root)
    plan = make_plan(Inner(("replay", "claims"), "replay", ("claims",)), repo=root, cwd=root)
    argv = bwrap_argv(plan, Limits(2**30, 64))
    assert plan.env()[CLAIM_NS_ENV] == ASK
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--setenv" and argv[i + 1] == CLAIM_NS_ENV]
    assert "--disable-userns" not in argv  # each claim's process makes its own user namespace, then forbids more
    assert INSIDE_HOME in argv


def test_outside_the_sandbox_no_claim_enters_a_namespace() -> None:
    from physverify.isolation import privatetmp

    assert privatetmp.enter({}) is False
    assert privatetmp.probe({}) is None


@needs_bwrap
def test_where_no_namespace_can_be_made_one_line_says_the_claims_share_tmp(tmp_path: Path) -> None:
    """bwrap's --disable-userns refuses every new user namespace inside, as docker's seccomp profile does."""
    from physverify.commands.sandbox.plan import Inner, make_plan
    from physverify.commands.sandbox.run import Limits, backend_env, bwrap_argv, python_paths

    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    init_repo(root)
    plan = make_plan(Inner(("replay", "claims"), "replay", ("claims",)), repo=root, cwd=root)
    for writable in plan.writable:
        writable.host.touch()
    argv = bwrap_argv(plan, Limits(2**30, 64), python=python_paths())
    probe = ("import os\nfrom physverify.isolation import privatetmp as p\n"
             "print(p.probe())\nprint(os.environ.get(p.CLAIM_NS_ENV))\n")
    refused = ["bwrap", "--disable-userns", *argv[1 : argv.index("--chdir")], "--", sys.executable, "-I", "-c", probe]
    done = subprocess.run(refused, capture_output=True, text=True, timeout=120, env=backend_env("bwrap"))
    line, variable = done.stdout.splitlines()
    assert line.startswith("physverify: the claims of this run share one /tmp and /dev/shm: no claim can have its "
                           "own here ("), done.stdout + done.stderr
    assert "Each claim's own /tmp" in line and variable == "None"  # no claim tries: they run as before
    allowed = [*argv[: argv.index("--chdir")], "--", sys.executable, "-I", "-c", probe]
    done = subprocess.run(allowed, capture_output=True, text=True, timeout=120, env=backend_env("bwrap"))
    assert done.stdout.splitlines() == ["None", "private"], done.stdout + done.stderr


def test_a_claim_whose_namespace_cannot_be_made_after_the_probe_is_refused_not_run_shared(tmp_path: Path) -> None:
    """A process with a second thread cannot enter a user namespace: enter raises, so the claim's process ends."""
    code = (
        "import threading, time\n"
        "from physverify.isolation import privatetmp\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "try:\n"
        "    privatetmp.enter({privatetmp.CLAIM_NS_ENV: privatetmp.PRIVATE, 'HOME': '/tmp/h', 'TMPDIR': '/tmp/t'})\n"
        "except privatetmp.PrivateTmpError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    print('entered')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.stdout.startswith("the claim's own /tmp could not be made (") and "unshare" in done.stdout, done
    assert done.stdout.rstrip().endswith("the claim was not run")


# A claim that imports, once its namespace is made, a module installed below /tmp.
IMPORTS_LATE = '''\
"""Claim: amount() decays with half the rate; its check imports a module installed below /tmp."""
import math

from physverify import FAIL, PASS, Check, Result

import decay

CLAIM = {"text": "amount() uses half the decay rate", "source": "a test", "file": "decay.py", "line": 6,
         "reference": "Krane, Introductory Nuclear Physics, sec. 6.1: N(t) = N0 exp(-lambda t)", "impact": "used"}


def _compare(t):
    import installed_below_tmp  # first imported here, after the claim's own /tmp hid the sandbox's

    want, got = math.exp(-1.0 * t), decay.amount(1.0, 1.0, t)
    return Result(PASS if abs(got - want) <= 1e-12 else FAIL, f"got {got}, want {want}, {installed_below_tmp.WORD}")


def control():
    return Check("x", "exp(0) is 1", lambda: Result(PASS if math.exp(0.0) == 1.0 else FAIL, "exp(0) = 1"))


def checks():
    return [Check("x", "amount at t=1", lambda: _compare(1.0))]
'''


@needs_bwrap
@pytest.mark.parametrize("isolation", ["fresh", "fork"])
def test_what_the_sandbox_bound_below_tmp_stays_importable_in_the_claims_own_tmp(tmp_path: Path,
                                                                                 isolation: str) -> None:
    """A Python, a virtualenv or physverify itself installed below /tmp (a CI checkout there, a venv made in
    /tmp) is bound read-only into the sandbox below its /tmp; the claim's new tmpfs on /tmp must not hide it."""
    venv = tmp_path / "venv"  # below /tmp, as pytest's tmp_path is here
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    site_packages = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site_packages / "installed_below_tmp.py").write_text('WORD = "imported from below /tmp"\n')
    (site_packages / "under_test.pth").write_text(f"{Path(__file__).resolve().parents[2] / 'src'}\n")
    root = committed_project(tmp_path / "project", {"decay.py": DECAY_DEFECT, "claims/claim_late.py": IMPORTS_LATE},
                             "a claim importing late")
    output = tmp_path / "report.json"
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "physverify", "sandbox", "--backend", "bwrap", "--",
                           "replay", "claims", "--jobs", "1", "--isolation", isolation, "--dry-run", "--format",
                           "json", "--output", str(output)], cwd=root, capture_output=True, text=True, timeout=300)
    assert output.exists(), done.stdout + done.stderr
    claim = json.loads(output.read_text())["claims"][0]
    assert "imported from below /tmp" in claim["checks"][0]["message"], done.stdout + done.stderr + str(claim)
    assert claim["verdict"] == "confirmed", done.stdout + done.stderr
