"""forkclient.py: the fork server's client: one warm server, replaced when stale, fresh when it fails."""

from __future__ import annotations

import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

from support import hostile
import pytest
from support.childsupport import (SPEC_HEADER, assert_ends_soon, installed_noting_module, outside, start_sleeper,
                                  write_spec)

from physverify.isolation import child, forkclient, fresh, isolate
from physverify.commands import confirm


def test_a_preloaded_module_edited_on_disk_restarts_the_fork_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server keeps one fork server; an edit to what it preloaded must still be seen."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pv_preloaded_lib.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", str(lib))  # as a process started with it: the server and physverify see it
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.setattr(forkclient, "_STAMP_EVERY_S", 0.0)
    folder = tmp_path / "specs"
    folder.mkdir()
    spec = write_spec(
        folder,
        """
        import pv_preloaded_lib
        def checks():
            return [Check("demo", "value", lambda: Result(PASS, str(pv_preloaded_lib.VALUE)))]
    """,
    )
    forkclient.shutdown()
    try:
        first = isolate.run_child("spec", spec, timeout_s=60, isolation="fork", preload=["pv_preloaded_lib"])
        server = forkclient.servers()[frozenset({"pv_preloaded_lib"})]
        assert server is not None and "pv_preloaded_lib" in server.preload
        (lib / "pv_preloaded_lib.py").write_text("VALUE = 22\n")
        second = isolate.run_child("spec", spec, timeout_s=60, isolation="fork", preload=["pv_preloaded_lib"])
        assert forkclient.servers()[frozenset({"pv_preloaded_lib"})] is not server
    finally:
        forkclient.shutdown()
    assert [o.payload["checks"][0]["message"] for o in (first, second)] == ["1", "22"]  # type: ignore[index]


def test_a_claim_that_needs_a_module_the_server_lacks_has_the_same_server_import_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server started first (replay starts it while the claims are read) grows; it is not replaced."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    module, log = installed_noting_module(tmp_path, monkeypatch, "pv_grow_lib", "VALUE = 1\n")
    monkeypatch.setattr(forkclient, "_STAMP_EVERY_S", 0.0)
    folder = tmp_path / "specs"
    folder.mkdir()
    plain = write_spec(folder, "def checks():\n    return [Check('demo', 'runs', lambda: Result(PASS, ''))]\n",
                       name="verify_plain.py")
    needs = write_spec(
        folder,
        """
        import sys
        PRELOADED = "pv_grow_lib" in sys.modules
        import pv_grow_lib
        def checks():
            return [Check("demo", "value", lambda: Result(PASS, f"{PRELOADED} {pv_grow_lib.VALUE}"))]
    """,
    )
    forkclient.shutdown()
    try:
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None
        server = forkclient.servers()[frozenset()]
        assert "pv_grow_lib" not in server.preload
        grown = isolate.run_child("spec", needs, timeout_s=60, isolation="fork", outside_imports=outside(needs))
        assert forkclient.servers()[frozenset()] is server and "pv_grow_lib" in server.preload
        assert log.read_text().split() == [str(server.pid)]  # imported in the server once, never in a claim
        again = isolate.run_child("spec", needs, timeout_s=60, isolation="fork", outside_imports=outside(needs))
        assert forkclient.servers()[frozenset()] is server
        module.write_text("VALUE = 22\n")  # what it grew by is watched for edits too
        edited = isolate.run_child("spec", needs, timeout_s=60, isolation="fork", outside_imports=outside(needs))
        assert forkclient.servers()[frozenset()] is not server
    finally:
        forkclient.shutdown()
    messages = [o.payload["checks"][0]["message"] for o in (grown, again, edited)]  # type: ignore[index]
    assert messages == ["True 1", "True 1", "True 22"]


def test_numpy_comes_to_the_server_with_the_first_claim_that_may_use_it(tmp_path: Path) -> None:
    """The server replay starts while the claims are read has no numpy; a claim that uses numpy grows it."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    probe = "import sys\nHAS = 'numpy' in sys.modules\n"
    pure = write_spec(tmp_path, probe + "def checks():\n    return [Check('demo', 'n', lambda: Result(PASS, str(HAS)))]\n",
                      name="verify_pure.py")
    arrays = write_spec(tmp_path, probe + "import numpy as np\n"
                        "def checks():\n    return [Check('demo', 'n', lambda: Result(PASS, str(HAS)))]\n",
                        name="verify_arrays.py")
    forkclient.shutdown()
    try:
        forkclient.start()
        server = forkclient.servers()[frozenset()]
        seen = [isolate.run_child("spec", spec, timeout_s=60, isolation="fork", outside_imports=outside(spec))
                for spec in (pure, arrays, pure)]
        assert forkclient.servers()[frozenset()] is server and "numpy" in server.preload
    finally:
        forkclient.shutdown()
    # the last claim is forked from the grown server: within one configuration the server has the union, as before
    assert [o.payload["checks"][0]["message"] for o in seen] == ["False", "True", "True"]  # type: ignore[index]


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP"])
def test_a_server_that_cannot_grow_is_replaced_by_one_with_the_union(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: str
) -> None:
    """Dead or stopped (a claim can signal it) when a claim needs more: a new server, not a wait until _START_S."""
    import os
    import signal

    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    _, log = installed_noting_module(tmp_path, monkeypatch, "pv_grow_lib", "VALUE = 1\n")
    folder = tmp_path / "specs"  # the claims' repository; the module is installed outside it
    folder.mkdir()
    plain = write_spec(folder, "def checks():\n    return [Check('demo', 'runs', lambda: Result(PASS, ''))]\n",
                       name="verify_plain.py")
    needs = write_spec(folder, "import sys\nPRELOADED = 'pv_grow_lib' in sys.modules\nimport pv_grow_lib\n"
                       "def checks():\n    return [Check('demo', 'v', lambda: Result(PASS, str(PRELOADED)))]\n")
    monkeypatch.setattr(forkclient, "_START_S", 1e6)  # a wait for the stopped server would never end
    forkclient.shutdown()
    try:
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None
        server = forkclient.servers()[frozenset()]
        os.kill(server.pid, getattr(signal, sig))
        outcomes: list[object] = []
        asking = threading.Thread(
            target=lambda: outcomes.append(isolate.run_child("spec", needs, timeout_s=60, isolation="fork", outside_imports=outside(needs))),
            daemon=True)
        asking.start()
        asking.join(120)  # a hang detector, not a speed target: the whole call takes well under a second
        assert outcomes, "the claim waited for the stopped server"
        replacement = forkclient.servers()[frozenset()]
        assert replacement is not server and {"pv_grow_lib", "numpy"} <= replacement.preload
        outcome = outcomes[0]
        assert outcome.payload is not None and outcome.payload["checks"][0]["message"] == "True"  # type: ignore[attr-defined]
        assert str(replacement.pid) in log.read_text().split()
    finally:
        try:
            os.kill(server.pid, signal.SIGKILL)  # what a wait for it still holds (the registry's lock) ends
        except ProcessLookupError:
            pass
        forkclient.shutdown()


def test_the_mcp_server_keeps_one_fork_server_between_calls_and_it_ends_with_the_client(tmp_path: Path) -> None:
    """Issue 11, item 3, with the SDK's real client; the edit between the calls is still seen."""
    import re

    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    (tmp_path / "rate.py").write_text("RATE = 1\n")
    (tmp_path / "verify_parent.py").write_text(
        SPEC_HEADER
        + textwrap.dedent("""
        import os
        import rate
        def server():  # the parent of the claim's process
            return str(os.getppid())
        def checks():
            return [Check("demo", "who forked me", lambda: Result(PASS, f"ppid={server()} rate={rate.RATE}"))]
    """)
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(tmp_path)])

    async def two_calls() -> list[str]:
        texts = []
        async with Client(params, read_timeout_seconds=120) as client:
            for rate in (1, 2):
                (tmp_path / "rate.py").write_text(f"RATE = {rate}\n")
                result = await client.call_tool("run_checks", {"specs": ["verify_parent.py"], "trusted": True})
                texts.append("".join(p.text for p in result.content if p.type == "text"))
        return texts

    texts = anyio.run(two_calls)
    seen = [re.search(r"ppid=(\d+) rate=(\d+)", text) for text in texts]
    assert all(seen), texts
    (first_parent, first_rate), (second_parent, second_rate) = [m.groups() for m in seen]  # type: ignore[union-attr]
    assert first_parent == second_parent and (first_rate, second_rate) == ("1", "2")
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(first_parent)
    assert_ends_soon(pidfile)


def test_a_claim_that_stops_its_parent_the_server_still_gets_its_verdict_and_the_next_claim_runs(tmp_path: Path) -> None:
    """A claim can SIGSTOP its parent, the fork server: the client then ends the server, reaps the claim itself
    (a subreaper) and reads its result; the next claim gets a new server."""
    stopper = write_spec(
        tmp_path,
        """
        import os, signal
        def checks():
            os.kill(os.getppid(), signal.SIGSTOP)
            return [Check("demo", "stopped its parent", lambda: Result(PASS, "done"))]
    """,
        name="verify_stopper.py",
    )
    plain = write_spec(
        tmp_path,
        """
        def checks():
            return [Check("demo", "runs", lambda: Result(PASS, "fine"))]
    """,
        name="verify_plain.py",
    )
    forkclient.shutdown()
    try:
        stopped = isolate.run_child("spec", stopper, timeout_s=60, isolation="fork")
        server = forkclient.servers()[frozenset()]
        after = isolate.run_child("spec", plain, timeout_s=60, isolation="fork")
        assert forkclient.servers()[frozenset()] is not server
    finally:
        forkclient.shutdown()
    assert not stopped.timed_out and stopped.returncode == 0, stopped
    assert stopped.payload is not None and stopped.payload["checks"][0]["message"] == "done"
    assert after.payload is not None and after.payload["checks"][0]["status"] == "PASS"


def test_a_claim_running_when_the_mcp_client_disconnects_is_ended(tmp_path: Path) -> None:
    """Issue 13, item 6: an MCP client that goes away leaves no claim running."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    pidfile = tmp_path / "claim.pid"
    grandfile = tmp_path / "grandchild.pid"
    write_spec(
        tmp_path,
        start_sleeper(grandfile)
        + f"""
        import os
        def checks():
            open({str(pidfile)!r}, "w").write(str(os.getpid()))
            time.sleep(300)
            return []
    """,
        name="verify_slow.py",
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(tmp_path)])

    async def leave_while_running() -> None:
        async with Client(params, read_timeout_seconds=120) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "run_checks", {"specs": ["verify_slow.py"], "trusted": True})
            with anyio.fail_after(60):
                while not (pidfile.exists() and pidfile.read_text()):
                    await anyio.sleep(0.05)
            group.cancel_scope.cancel()

    anyio.run(leave_while_running)
    assert_ends_soon(pidfile)
    assert_ends_soon(grandfile)


def test_while_stopping_fork_mode_falls_back_to_no_fresh_child(tmp_path: Path) -> None:
    """On the way out no fork server starts, and the fresh child fork mode falls back to is refused too: Stopped."""
    spec = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'passes', lambda: Result(PASS, ''))]\n")
    forkclient.shutdown()  # so the next run has to start a server
    with isolate.stopping(), pytest.raises(isolate.Stopped):
        forkclient.run_forked("spec", spec, [], child.child_environment(None), timeout_s=60, preload=())
    with isolate.stopping(), pytest.raises(isolate.Stopped):
        fresh.run_fresh("spec", spec, [], child.child_environment(None), 60)
    assert isolate.run_child("spec", spec, timeout_s=60, isolation=isolate.FORK).payload is not None


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGSTOP"])
def test_a_claim_that_signals_the_fork_server_decides_no_other_claims_verdict(
    tmp_path: Path, isolation: str, sig: str
) -> None:
    """Issue 21, item 4: B and C run beside A when it signals the server; D starts after."""
    from support.fixtures import DECAY_DEFECT, init_repo

    from physverify.gate import replay

    done = str(tmp_path / "signal.done")
    root = tmp_path / "repo"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_DEFECT)
    claims = {"claim_a_signaller.py": hostile.signaller(done, sig), "claim_b_victim.py": hostile.victim(done),
              "claim_c_victim.py": hostile.victim(done), "claim_d_after.py": hostile.plain()}
    for name, text in claims.items():
        (root / "claims" / name).write_text(text)
    repo = init_repo(root)
    repo.index.add(["decay.py", *[f"claims/{name}" for name in claims]])
    repo.index.commit("claims")
    forkclient.shutdown()
    try:
        result = replay.replay([root / "claims"], ledger=tmp_path / "ledger.jsonl", trusted=True, jobs=3,
                               isolation=isolation, timeout_s=120)
    finally:
        forkclient.shutdown()
    runs = {run.key.rsplit("/", 1)[-1]: run for run in result.claims}
    signalled = runs["claim_a_signaller.py"].record["checks"][0]["message"]  # type: ignore[index]
    assert (signalled == "signalled None") == (isolation == "fresh"), signalled
    for name in ("claim_b_victim.py", "claim_c_victim.py", "claim_d_after.py"):
        assert runs[name].verdict == "confirmed", (name, runs[name].record)


def test_a_claim_whose_pid_is_read_late_is_not_swept_as_an_orphan_when_a_sibling_kills_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine a claim's thread may read its pid only after a sibling killed the server and the
    sibling's thread swept the orphans that came here: the claim must not be among them."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    from support.fixtures import DECAY_DEFECT, init_repo

    from physverify.gate import replay

    done = str(tmp_path / "signal.done")
    root = tmp_path / "repo"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_DEFECT)
    claims = {"claim_a_signaller.py": hostile.signaller(done, "SIGKILL"), "claim_b_victim.py": hostile.victim(done),
              "claim_c_victim.py": hostile.victim(done)}
    for name, text in claims.items():
        (root / "claims" / name).write_text(text)
    repo = init_repo(root)
    repo.index.add(["decay.py", *[f"claims/{name}" for name in claims]])
    repo.index.commit("claims")
    swept = threading.Event()
    victim = threading.local()
    real_run, real_reap = forkclient.ForkServer.run, forkclient.ForkServer._reap_orphan
    real_forked_pid = forkclient.ForkServer._forked_pid

    def run(server: forkclient.ForkServer, request: dict[str, object], *args: object) -> object:
        victim.late = "victim" in str(request["path"])
        return real_run(server, request, *args)  # type: ignore[arg-type]

    def reap_orphan(server: forkclient.ForkServer, pidfd: int) -> int | None:
        try:
            return real_reap(server, pidfd)
        finally:
            swept.set()  # the signaller's thread: the server it killed is reaped, its orphans swept

    def forked_pid(server: forkclient.ForkServer, reply: object, watch: object) -> tuple[int, int, int]:
        answer = real_forked_pid(server, reply, watch)  # type: ignore[arg-type]
        if victim.late:
            swept.wait(60)  # the victims' threads read their pids only then, as starved threads do
        return answer

    monkeypatch.setattr(forkclient.ForkServer, "run", run)
    monkeypatch.setattr(forkclient.ForkServer, "_reap_orphan", reap_orphan)
    monkeypatch.setattr(forkclient.ForkServer, "_forked_pid", forked_pid)
    forkclient.shutdown()
    try:
        result = replay.replay([root / "claims"], ledger=tmp_path / "ledger.jsonl", trusted=True, jobs=3,
                               isolation="fork", timeout_s=120)
    finally:
        forkclient.shutdown()
    runs = {run.key.rsplit("/", 1)[-1]: run for run in result.claims}
    for name in ("claim_b_victim.py", "claim_c_victim.py"):
        assert runs[name].verdict == "confirmed", (name, runs[name].record.get("reason"))  # type: ignore[union-attr]


def test_a_claim_whose_server_died_is_re_run_fresh_and_a_second_failure_names_the_server(tmp_path: Path) -> None:
    """Issue 21, item 4: the re-run decides; only when it fails too does the reason speak of the server."""
    import os
    import signal

    plain = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'runs', lambda: Result(PASS, ''))]\n")
    failing = write_spec(tmp_path, "import os\nos._exit(3)\n", name="verify_exits.py")
    forkclient.shutdown()
    try:
        for spec, dies in ((plain, False), (failing, True)):
            assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None
            server = forkclient.servers()[frozenset()]
            os.kill(server.pid, signal.SIGKILL)
            outcome = isolate.run_child("spec", spec, timeout_s=60, isolation="fork")
            if not dies:
                assert outcome.payload is not None and outcome.payload["checks"][0]["status"] == "PASS"
            else:
                assert outcome.payload is None
                assert (outcome.failure() or "").startswith("the fork server died under the claim (")
                assert (outcome.failure() or "").endswith(
                    "and the re-run in a fresh child failed too: the claim's process exited with code 3 "
                    "before it reported a result")
    finally:
        forkclient.shutdown()


def test_a_request_to_a_dead_server_leaves_no_socket_open(tmp_path: Path) -> None:
    """The claim's streams, made before the server is asked, are closed when it cannot fork (the caller goes fresh)."""
    import gc
    import os
    import signal
    import warnings

    from physverify.isolation.protocol import new_key

    plain = write_spec(tmp_path, "def checks():\n    return [Check('demo', 'runs', lambda: Result(PASS, ''))]\n")
    forkclient.shutdown()
    try:
        assert isolate.run_child("spec", plain, timeout_s=60, isolation="fork").payload is not None
        server = forkclient.servers()[frozenset()]
        os.kill(server.pid, signal.SIGKILL)
        request = {"mode": "spec", "path": str(plain), "extra": [], "env": child.child_environment(None),
                   "variant": False}
        gc.collect()  # what earlier tests left to the collector closes now, not during the count
        before = set(os.listdir("/proc/self/fd"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)  # a socket left to the collector says so
            for _ in range(3):
                with pytest.raises(forkclient.ForkUnavailable):
                    server.run(request, new_key(), 60.0)
            gc.collect()
        assert set(os.listdir("/proc/self/fd")) <= before
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
    finally:
        forkclient.shutdown()


def test_a_setsid_grandchild_of_a_claim_running_when_the_mcp_client_disconnects_is_ended(tmp_path: Path) -> None:
    """Issue 21, item 6: the heartbeat left by a spec that runs when the client goes away ends too."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    beat = tmp_path / "beat"
    write_spec(tmp_path, hostile.heartbeat(str(beat)) + textwrap.dedent("""
        def checks():
            start_heartbeat()
            time.sleep(300)
            return []
    """), name="verify_beats.py")
    params = StdioServerParameters(command=sys.executable, args=["-m", "physverify", "mcp", "--root", str(tmp_path)])

    async def leave_while_running() -> None:
        async with Client(params, read_timeout_seconds=120) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "run_checks", {"specs": ["verify_beats.py"], "trusted": True})
            with anyio.fail_after(60):
                while not (beat.exists() and beat.read_text()):
                    await anyio.sleep(0.05)
            group.cancel_scope.cancel()

    anyio.run(leave_while_running)
    assert hostile.stops_beating(beat, hostile.beating_pid(beat))


def test_shutdown_kills_a_server_still_importing_its_preload_and_does_not_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that ends before the server it started on a guess is ready (a no-op replay of changes) ends it
    with SIGKILL: nothing ran in it, and the run's exit does not wait for its imports."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    lib = tmp_path / "lib"
    lib.mkdir()
    importing = tmp_path / "importing"
    (lib / "pv_slow_preload.py").write_text(
        f"import pathlib, time\npathlib.Path({str(importing)!r}).write_text('yes')\ntime.sleep(20)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(lib))
    forkclient.shutdown()
    failures: list[Exception] = []

    def acquire() -> None:
        try:
            forkclient._acquire(frozenset({"pv_slow_preload"}), frozenset({"pv_slow_preload"}))
        except forkclient.ForkUnavailable as exc:
            failures.append(exc)

    starting = threading.Thread(target=acquire)
    starting.start()
    deadline = time.monotonic() + 60
    while not importing.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert importing.exists(), "the server never began its preload"
    (proc,) = forkclient._starting
    forkclient.shutdown()
    starting.join(10)
    assert not starting.is_alive(), "the start still waits for the server's imports"
    assert proc.returncode == -signal.SIGKILL
    assert len(failures) == 1 and not forkclient.servers()


def test_a_preloaded_module_that_computes_with_jax_at_import_sends_its_claims_to_fresh_interpreters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JAX library that builds a constant at import starts XLA's threads in the server; forking it left
    every JAX claim asleep until the timeout. Now each claim runs fresh, keeps its verdict, and says why."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    pytest.importorskip("jax")
    installed_noting_module(tmp_path, monkeypatch, "pv_jax_at_import",
                            "import jax.numpy as jnp\nTABLE = jnp.arange(4.0) * 2.0\n")
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "physverify.yaml").write_text("preload: [pv_jax_at_import]\n")
    claim = folder / "jax_claim.py"
    claim.write_text(textwrap.dedent('''
        import jax.numpy as jnp
        import pv_jax_at_import
        from physverify import Check, Result, PASS, FAIL
        CLAIM = {"text": "the table is doubled twice", "source": "a test", "file": "jax_claim.py", "line": 1,
                 "reference": "arithmetic", "impact": "unknown"}
        def _equal(value, expected):
            return Result(PASS if value == expected else FAIL, f"{value} (expected {expected})")
        def control():
            return Check("sum", "jax sums 0..3", lambda: _equal(float(jnp.arange(4.0).sum()), 6.0))
        def checks():
            return [Check("sum", "the table sums to 12", lambda: _equal(float(pv_jax_at_import.TABLE.sum()), 24.0))]
    '''))
    forkclient.shutdown()
    try:
        forked = confirm.confirm(claim, ledger=tmp_path / "fork.jsonl", timeout_s=120, trusted=True, isolation="fork")
    finally:
        forkclient.shutdown()
    fresh_run = confirm.confirm(claim, ledger=tmp_path / "fresh.jsonl", timeout_s=120, trusted=True, isolation="fresh")
    assert forked.record["verdict"] == fresh_run.record["verdict"] == "confirmed"
    assert forked.record["checks"][0]["message"] == fresh_run.record["checks"][0]["message"] == "12.0 (expected 24.0)"
    note = forked.record["isolation_note"]
    assert note.startswith("the fork server is not safe to fork: ") and "JAX's backend (cpu)" in note
    assert "pv_jax_at_import" in note and note.endswith("so the claim ran in a fresh interpreter")
    assert "isolation_note" not in fresh_run.record


def test_a_forked_claim_that_times_out_while_the_server_held_numpys_threads_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork copies no thread: a claim that waits on one sleeps until its timeout, and the reason must say why."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # numpy's BLAS starts one thread of its own in the server
    claim = tmp_path / "claim_sleeps.py"
    claim.write_text(textwrap.dedent('''
        import time
        import numpy as np
        from physverify import Check, Result, PASS
        CLAIM = {"text": "t", "source": "a test", "file": "claim_sleeps.py", "line": 1, "reference": "none",
                 "impact": "unknown"}
        def control():
            time.sleep(60)
            return Check("demo", "never", lambda: Result(PASS, ""))
        def checks():
            return [Check("demo", "never", lambda: Result(PASS, ""))]
    '''))
    forkclient.shutdown()
    try:
        forked = confirm.confirm(claim, ledger=tmp_path / "l.jsonl", timeout_s=3, trusted=True, isolation="fork")
    finally:
        forkclient.shutdown()
    assert forked.record["verdict"] == "not decidable"
    assert forked.record["reason"].startswith("timed out after 3")
    assert "the fork server held 2 threads when it forked this claim (numpy's BLAS pool)" in forked.record["reason"]
    assert forked.record["isolation_note"] in forked.record["reason"]


def test_a_jax_claim_is_forked_from_a_server_that_imported_jax_so_it_does_not_pay_jaxs_import(tmp_path: Path) -> None:
    """Importing jax starts no thread: the server preloads it, and the claim's process finds it imported."""
    if not isolate.fork_supported():
        pytest.skip("fork mode is Linux only")
    pytest.importorskip("jax")
    spec = write_spec(tmp_path, """
        import sys
        PRELOADED = "jax" in sys.modules
        import jax.numpy as jnp
        def checks():
            return [Check("demo", "jax", lambda: Result(PASS, f"{PRELOADED} {float(jnp.arange(3.0).sum())}"))]
    """)
    forkclient.shutdown()
    try:
        outcome = isolate.run_child("spec", spec, timeout_s=120, isolation="fork", outside_imports=outside(spec))
        assert "jax.numpy" in forkclient.servers()[frozenset()].preload
    finally:
        forkclient.shutdown()
    assert outcome.payload is not None and outcome.payload["checks"][0]["message"] == "True 3.0"
    assert outcome.note == ""


def test_what_a_claim_leaves_after_killing_its_server_comes_to_the_client_and_is_ended_and_reaped(
    tmp_path: Path
) -> None:
    """The server is gone, so the claim is the client's child (a subreaper): it ends with os._exit, past its own
    clean-up, and its heartbeat (setsid, double fork) comes to the client, which kills it. Both are reaped there:
    the claim's exit code is the one it gave, and neither is left a zombie."""
    from physverify.isolation.procgroup import state_of

    beat, pidfile = tmp_path / "beat", tmp_path / "claim.pid"
    spec = write_spec(tmp_path, hostile.heartbeat(str(beat)) + hostile.SIGNALLER_SERVER + f"""
import os, signal
def checks():
    start_heartbeat()
    open({str(pidfile)!r}, "w").write(str(os.getpid()))
    os.kill(_server(), signal.SIGKILL)
    os._exit(7)
""")
    forkclient.shutdown()
    try:
        outcome = isolate.run_child("spec", spec, timeout_s=60, isolation="fork")
        heartbeat = hostile.beating_pid(beat)
        assert hostile.stops_beating(beat, heartbeat)  # before the run's end (shutdown), which would end it too
        assert state_of(int(pidfile.read_text())) is None and state_of(heartbeat) is None  # reaped: no zombie here
    finally:
        forkclient.shutdown()
    assert outcome.payload is None and outcome.returncode == 7, outcome


def test_a_claims_escaped_process_lives_on_while_a_sibling_claim_ends(tmp_path: Path) -> None:
    """What a claim leaves behind is ended when it ends, never when a sibling does: each claim's process is the
    subreaper of what it starts, so the server ends only what an ended claim left."""
    from physverify.gate import replay

    beat, done = tmp_path / "beat", str(tmp_path / "short.done")
    watcher = hostile.beating_claim(str(beat), f"""deadline = time.monotonic() + 60
while not os.path.exists({done!r}) and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1.0)
before = open(BEAT).read()
time.sleep(0.5)
if open(BEAT).read() == before:
    return Result(FAIL, 'its heartbeat stopped when its sibling ended')""")
    short = hostile.plain().replace("import os, time\n", "import os, time\n\n\ndef _after_the_heartbeat():\n"
                                    f"    while not os.path.exists({str(beat)!r}):\n        time.sleep(0.02)\n"
                                    f"    open({done!r}, 'w').close()\n", 1).replace(
        "def _compare(t):\n", "def _compare(t):\n    _after_the_heartbeat()\n", 1)
    claims = hostile.claims_repo(tmp_path, {"claim_a_watcher.py": watcher, "claim_b_short.py": short})
    forkclient.shutdown()
    try:
        result = replay.replay([claims], ledger=tmp_path / "ledger.jsonl", trusted=True, jobs=2, isolation="fork",
                               timeout_s=120)
    finally:
        forkclient.shutdown()
    runs = {run.key.rsplit("/", 1)[-1]: run for run in result.claims}
    assert runs["claim_a_watcher.py"].record["checks"][0]["message"] == "beating", runs["claim_a_watcher.py"].record
    assert hostile.stops_beating(beat, hostile.beating_pid(beat))  # and once the watcher ended, so did it
