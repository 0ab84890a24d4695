"""Hostile claims shared by the issue 21 tests (items 4 and 6): sibling forgers, server signallers, heartbeats;
and the repositories the security tests attack."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, DECAY_SOLVER, init_repo

from physverify.gate import replay

LEDGER = "claims/confirm_ledger.jsonl"

# Claim A of item 4: finds every other process working in its folder (its siblings and their
# supervisors), and writes a forged PASS into each of their pipes and sockets: through
# /proc/PID/fd (which opens a pipe, never a socket) and, with ptrace-level access, through a
# copy of the descriptor itself (pidfd_getfd). It does not know any sibling's key. Then it
# tells the victims it is done (the file DONE) and passes.
FORGER = DECAY_CLAIM.replace("import decay\n", '''import decay
import ctypes, json, os, time
from physverify.isolation.protocol import MARKER

_FAKE = {"label": "at t = 1 the amount follows exp(-rate t)", "family": "reference", "status": "PASS",
         "message": "forged", "seconds": 0.0}
_FORGED = json.dumps({"load_error": None, "control": dict(_FAKE, label="at t = 0 nothing has decayed"),
                      "checks": [_FAKE]})
_LINES = (MARKER + "\\n" + _FORGED + "\\n" + MARKER + "0" * 64 + "\\n" + _FORGED + "\\n").encode()
_LIBC = ctypes.CDLL(None, use_errno=True)
_PIDFD_GETFD = 438


def _siblings():
    me, mine, here = os.getpid(), os.getppid(), os.getcwd()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (me, mine):
            try:
                if os.readlink(f"/proc/{name}/cwd") == here:
                    yield int(name)
            except OSError:
                pass


def _write(fd):
    try:
        os.set_blocking(fd, False)
        os.write(fd, _LINES)
        return 1
    except OSError:
        return 0
    finally:
        os.close(fd)


def _attack(pid):
    opened = copied = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0, 0
    for fd in fds:
        try:
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith(("pipe:", "socket:")):
                continue
            opened += _write(os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        copy = _LIBC.syscall(_PIDFD_GETFD, pidfd, int(fd), 0)
        os.close(pidfd)
        if copy >= 0:
            copied += _write(copy)
    return opened, copied


def _forge():
    seen, opened, copied = set(), 0, 0
    deadline = time.monotonic() + 60
    while (len(seen) < SIBLINGS or opened + copied < 3) and time.monotonic() < deadline:
        for pid in _siblings():
            seen.add(pid)
            o, c = _attack(pid)
            opened, copied = opened + o, copied + c
        time.sleep(0.05)
    open(DONE, "w").write("done")
    return Result(PASS if seen else FAIL, f"siblings {len(seen)}, opened {opened}, copied {copied}")
''').replace('"""Claim: amount() decays with half the rate."""', '"""Claim A: forges its siblings\' results."""').replace(
    'return [Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]',
    'return [Check("attack", "forged its siblings", _forge)]',
)

def forger(done: str, siblings: int) -> str:
    """Claim A, writing ``done`` once it has attacked ``siblings`` other claims at least."""
    return FORGER.replace("CLAIM = {", f"DONE = {done!r}\nSIBLINGS = {siblings}\nCLAIM = {{", 1)


def victim(done: str) -> str:
    """A victim claim: confirmed on DECAY_DEFECT, once ``done`` exists (at most 90 s)."""
    return VICTIM.replace("CLAIM = {", f"DONE = {done!r}\nWAIT = True\nCLAIM = {{", 1)


# A victim of item 4: the real claim, whose check FAILs on the defect, once the attacker is done.
VICTIM = DECAY_CLAIM.replace("import decay\n", "import decay\nimport os, time\n").replace(
    "def _compare(t):\n",
    "def _compare(t):\n    deadline = time.monotonic() + 90\n"
    "    if WAIT:\n        open(f'{DONE}.{os.getpid()}.waiting', 'w').close()  # running: what a signaller waits for\n"
    "    while WAIT and not os.path.exists(DONE) and time.monotonic() < deadline:\n        time.sleep(0.05)\n",
)


# Claim A of item 4's second part: once its siblings run, signals the shared fork server (the
# ancestor started as physverify.isolation.forkserver; in fresh mode there is none) with SIG, then passes.
SIGNALLER_SERVER = '''
def _server():
    """The topmost ancestor started as the fork server (what it forks carries its command line too)."""
    found, pid = None, os.getppid()
    while pid > 1:
        try:
            if b"physverify.isolation.forkserver" in open(f"/proc/{pid}/cmdline", "rb").read():
                found = pid
            pid = int(open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            break
    return found
'''

SIGNALLER = DECAY_CLAIM.replace("import decay\n", '''import decay
import glob, os, signal, time
''' + SIGNALLER_SERVER + '''

def _signal():
    deadline = time.monotonic() + 60  # until the victims run beside it: each notes its pid once it waits for DONE
    while len(glob.glob(glob.escape(DONE) + ".*.waiting")) < VICTIMS and time.monotonic() < deadline:
        time.sleep(0.02)
    server = _server()
    if server is not None:
        os.kill(server, getattr(signal, SIG))
    open(DONE, "w").write("done")
    return Result(PASS, f"signalled {server}")
''').replace(
    'return [Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]',
    'return [Check("attack", "signalled the fork server", _signal)]',
)


def signaller(done: str, sig: str, victims: int = 2) -> str:
    """Claim A: once ``victims`` victims of ``done`` are running, sends ``sig`` (a name: SIGKILL, SIGSTOP) to the
    fork server, then writes ``done``."""
    return SIGNALLER.replace("CLAIM = {", f"DONE = {done!r}\nSIG = {sig!r}\nVICTIMS = {victims}\nCLAIM = {{", 1)


def plain() -> str:
    """A claim that is confirmed on DECAY_DEFECT at once."""
    return VICTIM.replace("CLAIM = {", "DONE = ''\nWAIT = False\nCLAIM = {", 1)


# Item 6: claim-file lines that start a heartbeat that has left everything behind: a grandchild
# that forks twice around setsid (so it is nobody's child and in no group of the claim's), with
# an environment of its own (no token of physverify's). It writes "PID TIME" to BEAT ten times a
# second. ``stops_beating`` is what the tests check a few seconds after the caller's end.
HEARTBEAT = '''
import os, subprocess, sys, time
_BEAT = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
while True:  # each beat whole (a rename): a kill between a truncation and its write left the file empty
    with open(sys.argv[1] + ".next", "w") as handle:
        handle.write(f"{os.getpid()} {time.time()}")
    os.replace(sys.argv[1] + ".next", sys.argv[1])
    time.sleep(0.1)
"""


def start_heartbeat():
    subprocess.Popen([sys.executable, "-c", _BEAT, BEAT], env={"PATH": os.environ.get("PATH", "")},
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
    while not os.path.exists(BEAT):
        time.sleep(0.02)
'''


def heartbeat(beat: str) -> str:
    """The lines that define ``start_heartbeat()``, writing to ``beat``."""
    return f"BEAT = {beat!r}\n" + HEARTBEAT


def beating_pid(beat: Path, seconds: float = 120) -> int:
    """The heartbeat's pid, once it has written it."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return int(beat.read_text().split()[0])
        except (OSError, IndexError, ValueError):
            time.sleep(0.05)
    raise AssertionError(f"no heartbeat in {beat}")


def stops_beating(beat: Path, pid: int, seconds: float = 20) -> bool:
    """True when the heartbeat ``pid`` ends within ``seconds`` and then writes no more; it is killed either way."""
    import os
    import signal
    import time

    from support.childsupport import pid_alive

    deadline = time.monotonic() + seconds
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = not pid_alive(pid)
    try:
        os.kill(pid, signal.SIGKILL)  # a test that fails leaves nothing beating
    except ProcessLookupError:
        pass
    last = beat.read_text()
    time.sleep(1.0)  # a few beats later: still the last one
    return ended and beat.read_text() == last


def rejected_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, settings: str | None = None,
                        ledger: str = LEDGER) -> tuple[git.Repo, Path, str]:
    """A repository whose committed ledger (at ``ledger``) says the claim is rejected, cwd there; the commit's sha."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM)
    files = ["decay.py", "claims/claim_decay.py", ledger]
    if settings is not None:
        (root / "claims" / "physverify.yaml").write_text(settings)
        files.append("claims/physverify.yaml")
    repo = init_repo(root)
    monkeypatch.chdir(root)
    result = replay.replay(["claims"], trusted=True, jobs=1)
    assert [run.verdict for run in result.claims] == ["rejected"]
    repo.index.add(files)
    return repo, root, repo.index.commit("the claim is rejected").hexsha


def claims_repo(tmp_path: Path, claims: dict[str, str]) -> Path:
    """A committed repository with DECAY_DEFECT as decay.py and ``claims`` in claims/; returns claims/."""
    root = tmp_path / "repo"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_DEFECT)
    for name, text in claims.items():
        (root / "claims" / name).write_text(text)
    repo = init_repo(root)
    repo.index.add(["decay.py", *[f"claims/{name}" for name in claims]])
    repo.index.commit("claims")
    return root / "claims"


def beating_claim(beat: str, then: str) -> str:
    """A claim whose check starts the heartbeat, then runs the lines ``then`` (indented for the function body)."""
    body = "def _beat():\n    start_heartbeat()\n" + "".join(f"    {line}\n" for line in then.splitlines())
    body += "    return Result(PASS, 'beating')\n"
    return DECAY_CLAIM.replace("import decay\n", "import decay\nimport os, signal\n").replace(
        "CLAIM = {", heartbeat(beat) + "\n\n" + SIGNALLER_SERVER + "\n\n" + body + "\n\nCLAIM = {", 1
    ).replace(
        'return [Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]',
        'return [Check("heartbeat", "starts a heartbeat", _beat)]',
    )
