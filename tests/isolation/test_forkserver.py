"""forkserver.py: the fork server's side: what it imports, and the forked child it makes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from support.childsupport import installed_noting_module, noting_module, write_spec

from physverify.isolation import forkclient, isolate


def test_the_fork_server_never_imports_repository_code_even_when_physverify_yaml_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER

    from physverify.gate import replay

    claims = tmp_path / "claims"
    claims.mkdir()
    log = tmp_path / "imports.log"
    noting_module(claims, "decay", log, DECAY_SOLVER)  # only the claim's own child may import it
    (claims / "claim_decay.py").write_text(
        DECAY_CLAIM.replace('f"{got:.6g} against {want:.6g}"', "str(os.getpid())").replace(
            "import math\n", "import math\nimport os\n", 1
        )
    )
    (claims / "physverify.yaml").write_text("preload: [decay]\nisolation: fork\n")
    monkeypatch.setenv("PYTHONPATH", str(claims))  # so the server could import it, if it were asked to
    ledger_path = tmp_path / "ledger.jsonl"
    replay.replay([claims], ledger=ledger_path, trusted=True)
    child = json.loads(ledger_path.read_text())["checks"][0]["message"]
    assert log.read_text().split() == [child]


def test_the_forked_child_has_the_fresh_childs_cwd_sys_path_environment_and_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11, item 1: the forked child does exactly what the fresh child does."""
    import json

    spec = write_spec(
        tmp_path,
        """
        import json, os, sys
        def seen():
            return json.dumps({
                "cwd": os.getcwd(), "path": sys.path, "repo": os.environ.get("PHYSVERIFY_REPO"),
                "stdin": os.read(0, 10).decode(), "fd1_is_fd2": os.path.samestat(os.fstat(1), os.fstat(2)),
                "leader": os.getpgid(0) == os.getpid() != os.getsid(0), "bytecode": sys.dont_write_bytecode,
                "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
            })
        def checks():
            return [Check("demo", "what the child sees", lambda: Result(PASS, seen()))]
    """,
    )
    monkeypatch.setenv("PHYSVERIFY_REPO", str(tmp_path))  # set after any fork server started: still seen
    extra = tmp_path / "root"
    extra.mkdir()
    seen = {
        mode: json.loads(
            isolate.run_child("spec", spec, timeout_s=60, sys_path=[extra], isolation=mode).payload["checks"][0][
                "message"
            ]
        )
        for mode in isolate.ISOLATION_MODES
    }  # type: ignore[index]
    assert seen["fresh"] == seen["fork"]
    assert seen["fork"]["path"][:2] == [str(tmp_path), str(extra)] and seen["fork"]["repo"] == str(tmp_path)
    assert seen["fork"]["stdin"] == "" and seen["fork"]["fd1_is_fd2"] and seen["fork"]["leader"]


LOCAL_YAML_SPEC = """
    import yaml
    def checks():
        own = getattr(yaml, "SOURCE", None) == "the claim's own"
        return [Check("demo", "the claim's own yaml.py", lambda: Result(PASS if own else FAIL, yaml.__file__))]
"""


@pytest.mark.parametrize("how", ["another claim imports it", "preload names it"])
def test_a_claims_own_module_is_never_shadowed_by_a_preloaded_one(tmp_path: Path, isolation: str, how: str) -> None:
    """Issue 21, item 5: a local yaml.py against the installed yaml the server imported."""
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "yaml.py").write_text('SOURCE = "the claim\'s own"\n')
    spec = write_spec(folder, LOCAL_YAML_SPEC)
    other = tmp_path / "elsewhere"
    other.mkdir()
    installed = write_spec(other, """
        import yaml
        def checks():
            return [Check("demo", "the installed yaml", lambda: Result(PASS, yaml.__file__))]
    """)
    preload = ["yaml"] if how == "preload names it" else []
    forkclient.shutdown()
    try:
        first = isolate.run_child("spec", installed, timeout_s=60, isolation=isolation, preload=preload)
        assert first.payload is not None and first.payload["checks"][0]["status"] == "PASS"
        outcome = isolate.run_child("spec", spec, timeout_s=60, sys_path=[tmp_path], isolation=isolation,
                                    preload=preload)
    finally:
        forkclient.shutdown()
    assert outcome.payload is not None, outcome.failure()
    check = outcome.payload["checks"][0]
    assert check["status"] == "PASS", check["message"]
    assert check["message"] == str(folder / "yaml.py")


def test_one_folders_preload_never_reaches_another_folders_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    """Issue 21, item 5: folder X's ``preload:`` in the same run (or MCP session) as folder Y's claims."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pv_cross_lib.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", str(lib))  # as a process started with it: the server and physverify see it
    monkeypatch.syspath_prepend(str(lib))
    asks, plain = tmp_path / "x", tmp_path / "y"
    asks.mkdir()
    plain.mkdir()
    x_spec = write_spec(asks, "def checks():\n    return [Check('demo', 'x', lambda: Result(PASS, ''))]\n")
    y_spec = write_spec(plain, """
        import sys
        def checks():
            loaded = "pv_cross_lib" in sys.modules
            return [Check("demo", "nothing preloaded for me", lambda: Result(FAIL if loaded else PASS, str(loaded)))]
    """)
    forkclient.shutdown()
    try:
        isolate.run_child("spec", x_spec, timeout_s=60, isolation=isolation, preload=["pv_cross_lib"])
        outcome = isolate.run_child("spec", y_spec, timeout_s=60, isolation=isolation)
    finally:
        forkclient.shutdown()
    assert outcome.payload is not None and outcome.payload["checks"][0]["status"] == "PASS"


def _ask(server: forkclient.ForkServer, request: dict[str, object]) -> dict[str, object]:
    """Send ``request`` as the client does (four descriptors) and return the server's first answer."""
    import json
    import socket

    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)] + [socket.socketpair() for _ in range(3)]
    socket.send_fds(server._sock, [json.dumps(request).encode()], [theirs.fileno() for _, theirs in pairs])
    for _, theirs in pairs:
        theirs.close()
    reply = pairs[0][0]
    reply.settimeout(60)
    answer = json.loads(reply.recv(1 << 16))
    for mine, _ in pairs:
        mine.close()
    return answer  # type: ignore[no-any-return]


def _refused_from_another_process(ask: Callable[[], dict[str, object]]) -> None:
    """``ask`` from a forked copy of this process (it holds the client's socket and secret): the server refuses it."""
    import json
    import os

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write_end, json.dumps(ask()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    other = json.loads(os.read(read_end, 1 << 16))
    os.close(read_end)
    assert other == {"error": f"refused: the request came from process {pid}, not from the process that "
                              "started the server"}


def test_the_fork_server_forks_only_for_its_client_with_the_runs_secret(tmp_path: Path) -> None:
    """Issue 21, item 13: a request with another secret, or from another process holding the socket, is refused."""
    import os

    ran = tmp_path / "ran"
    spec = write_spec(tmp_path, f"open({str(ran)!r}, 'a').write('ran')\ndef checks():\n    return []\n")
    plain = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'runs', lambda: Result(PASS, ''))]\n",
                       name="verify_plain.py")
    forkclient.shutdown()
    try:
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None
        server = forkclient.servers()[frozenset()]
        request = {"mode": "spec", "path": str(spec), "extra": [], "env": dict(os.environ), "key": "00" * 32}
        wrong = _ask(server, {**request, "secret": "0" * 64})
        assert wrong == {"error": "refused: the request does not carry this run's secret"}
        _refused_from_another_process(lambda: _ask(server, {**request, "secret": server._secret}))
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None  # still serving
    finally:
        forkclient.shutdown()
    assert not ran.exists()


def test_the_fork_server_imports_more_only_for_its_client_with_the_runs_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import request (forkclient's grow) is held to the same two checks as a fork request."""
    import json
    import socket

    _, log = installed_noting_module(tmp_path, monkeypatch, "pv_asked_lib")  # on the server's path
    plain = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'runs', lambda: Result(PASS, ''))]\n",
                       name="verify_plain.py")

    def ask(server: forkclient.ForkServer, secret: str) -> dict[str, object]:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        socket.send_fds(server._sock, [json.dumps({"import": ["pv_asked_lib"], "secret": secret}).encode()],
                        [theirs.fileno()])
        theirs.close()
        with mine:
            mine.settimeout(60)
            return json.loads(mine.recv(1 << 20))  # type: ignore[no-any-return]

    forkclient.shutdown()
    try:
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None
        server = forkclient.servers()[frozenset()]
        assert ask(server, "0" * 64) == {"error": "refused: the request does not carry this run's secret"}
        _refused_from_another_process(lambda: ask(server, server._secret))
        assert not log.exists()
        answer = ask(server, server._secret)  # the client itself: imported, and the answer is its files
        assert "files" in answer and log.read_text().split() == [str(server.pid)]
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None  # still serving
    finally:
        forkclient.shutdown()


def test_the_server_is_unsafe_to_fork_once_a_thread_beyond_numpys_runs_in_it() -> None:
    """Checked before every fork: a thread a preloaded module started may hold a lock no thread of the child frees."""
    code = textwrap.dedent("""
        import threading, time
        from physverify.isolation import forkserver
        forkserver._import(["numpy"])
        print(forkserver.fork_hazard())
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        print(forkserver.fork_hazard())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == ["None", "the fork server is not safe to fork: it holds 1 thread beyond numpy's"]


# Claim A of the dumpable test: once B runs, what it can take from B, from its own parent (the fork
# server, or the fresh child's supervisor) and, to show that the probe can succeed, from a process
# of its own that exec'd (dumpable again): its memory (/proc/PID/mem opened), a copy of its descriptor 0.
PROBER = '''
import ctypes, glob, os, subprocess, sys, time
_LIBC = ctypes.CDLL(None, use_errno=True)


def _reach(pid):
    got = []
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))
        got.append("mem")
    except OSError:
        pass
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return "gone"
    copy = _LIBC.syscall(438, pidfd, 0, 0)  # pidfd_getfd
    os.close(pidfd)
    if copy >= 0:
        os.close(copy)
        got.append("fd")
    return "+".join(got) or "nothing"


def _probe():
    deadline = time.monotonic() + 60
    while not glob.glob(glob.escape(DONE) + ".*.waiting") and time.monotonic() < deadline:
        time.sleep(0.02)
    sibling = int(glob.glob(glob.escape(DONE) + ".*.waiting")[0].rsplit(".", 2)[1])
    own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(0.2)
    seen = (f"own child {_reach(own.pid)}; sibling {_reach(sibling)}; parent {_reach(os.getppid())}; "
            f"dumpable {_LIBC.prctl(3, 0, 0, 0, 0)}; own fds {len(os.listdir('/proc/self/fd')) > 2}; "
            f"own status {'Name:' in open('/proc/self/status').read()}")
    own.kill()
    open(DONE, "w").write("done")
    return Result(PASS, seen)
'''


def test_a_claim_cannot_read_a_siblings_or_the_servers_memory_or_copy_their_descriptors(
    tmp_path: Path, isolation: str
) -> None:
    """Where no Yama module limits ptrace, a process of the same user may open another's /proc/PID/mem and copy its
    descriptors (pidfd_getfd): the claims' processes, the fork server and the fresh supervisor are not dumpable, so
    neither works without CAP_SYS_PTRACE. The run drops that capability (as root; a user's own run has none), so
    that the claims stand as a user's claims do; the prober's own exec'd child, dumpable, shows that the probe
    works. A claim still reads its own /proc/self. (For a user other than root, the /proc/PID files of a process
    that is not dumpable belong to root, so its environ and fd folder are closed too; root owns them anyway.)"""
    import json
    import os
    import shutil

    from support import hostile
    from support.fixtures import DECAY_CLAIM, clean_env

    drop = ["setpriv", "--bounding-set=-sys_ptrace"] if os.geteuid() == 0 else []
    if drop and shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to run the claims without CAP_SYS_PTRACE as root")
    done = str(tmp_path / "probe.done")
    prober = DECAY_CLAIM.replace("CLAIM = {", PROBER + f"\nDONE = {done!r}\n\nCLAIM = {{", 1).replace(
        'return [Check("reference", "at t = 1 the amount follows exp(-rate t)", lambda: _compare(1.0))]',
        'return [Check("attack", "reaches its sibling", _probe)]')
    claims = hostile.claims_repo(tmp_path, {"claim_a_prober.py": prober, "claim_b_victim.py": hostile.victim(done)})
    ledger = tmp_path / "ledger.jsonl"
    done_run = subprocess.run(
        [*drop, sys.executable, "-m", "physverify", "replay", "claims", "--trusted", "--jobs", "2",
         "--isolation", isolation, "--ledger", str(ledger)],
        cwd=claims.parent, env=clean_env(), capture_output=True, text=True, timeout=300)
    records = {json.loads(line)["claim_file"].rsplit("/", 1)[-1]: json.loads(line) for line in ledger.read_text().splitlines()}
    seen = records["claim_a_prober.py"]["checks"][0]["message"]
    assert seen == ("own child mem+fd; sibling nothing; parent nothing; dumpable 0; own fds True; "
                    "own status True"), (seen, done_run.stderr[-2000:])
    assert records["claim_b_victim.py"]["verdict"] == "confirmed"
