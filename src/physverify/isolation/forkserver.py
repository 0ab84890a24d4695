"""The fork server's side: one warm process per configuration that forks the child of every claim (DESIGN.md, "Warm start").

Started by forkclient.py as ``python -s -B -m physverify.isolation.forkserver FD MODULE...`` in its own
session: it imports the modules it is given (numpy, physverify, the third-party modules
the claims import statically, what physverify.yaml's ``preload:`` names), sends the client
the files they came from, and then forks the claim's own process for each request, with no
process between them. That process becomes what a fresh start is (``_become_claim``): its own
process group, fd 1 pointed at stderr, the claim's folder as cwd, its sys.path and
environment; and a subreaper, so what it starts stays below it. The server does what a
supervisor process per claim did before: it reaps the claim, ends what it left, and tells
the client its status on the claim's watch socket, tagged with the claim's key. The client
watches each claim through a pidfd the server sends with its pid, and is a subreaper itself:
when the server dies or is stopped (a claim can do either), the running claims become the
client's children, run to their end, and are reaped by it (forkclient.py). So a claim that
kills or stops the server ends no sibling (issue 21, item 4). The server and every claim it
forks are not dumpable (``serve``). Repository code is only ever imported in a forked child,
never in the server, so an edit between two runs is always seen and no claim sees another's
state.

Before the claim runs, no module the server preloaded may stand in for one the claim's own
folder, the repository root or src/ provides (a local ``yaml.py``): such modules leave
``sys.modules`` in the forked process, as a fresh interpreter would never have had them
(issue 21, item 5).

The protocol, over a Unix SOCK_SEQPACKET socket pair (one message per send): first the
client sends the run's secret; then each request is a JSON object carrying that secret with
four descriptors (a reply socket, the child's result and stderr sockets, and the watch
socket whose other end the client keeps). The server refuses a request whose secret is wrong
or whose sender (SO_PASSCRED, checked per message) is not the process that started it
(issue 21, item 13). It answers ``{"pid": N}`` with the claim's pidfd on the reply socket once
forked, and the claim's tagged wait status on the watch socket once it has ended it. A request
``{"import": [MODULE...]}`` with a reply socket alone makes it import more modules first (a
claim needs one it did not preload), answered as a start is: the files, then ready.
"""

from __future__ import annotations

import array
import gc
import hmac
import importlib
import importlib.machinery
import json
import math
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from physverify.isolation import variant_channel
from physverify.isolation.child import run_as_process
from physverify.isolation.preload import provided_top_levels
from physverify.isolation.procgroup import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    end_children,
    end_descendants,
    kill_group,
    send_status,
    set_prctl,
)

_FRESH_MAIN = str(Path(__file__).with_name("fresh.py"))
MESSAGE_BYTES = 1 << 20  # the largest message either side sends (a request carries the claim's environment)
REQUEST_FDS = 4  # reply, result stream, stderr, watch
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
# The top-level modules loaded before any preload: what a fresh interpreter has too when the
# claim starts (the standard library's start-up, physverify's child layer). A module loaded by
# the preload and not in this set is one a fresh child would import from the claim's path.
_before_preload: frozenset[str] = frozenset()
_preloaded: tuple[int, frozenset[str]] = (0, frozenset())  # (len(sys.modules), its top-level names): _preloaded_tops
# Threads a fork may leave behind: those numpy's BLAS starts when numpy is imported (OpenBLAS
# and MKL stop and restart their pools around a fork, pthread_atfork). Any other thread the
# preload started (XLA's, torch's intra-op pool, a module that computes at import) may hold a
# lock that no thread of the forked child will ever release: the child sleeps until its timeout.
_tolerated_threads = 0
_thread_starters: list[str] = []  # the preloaded modules whose import started threads, for the note
_FORK_AWARE = frozenset({"numpy", "scipy"})


def serve(sock: socket.socket, preload: Sequence[str]) -> None:
    """Take the run's secret, preload, report the modules' files, then fork per request until the client closes."""
    global _before_preload

    if not getattr(sys.flags, "safe_path", False):  # -P (Python 3.11 on) put no cwd first
        del sys.path[0]  # the server's cwd (physverify's folder), which no child has on its path
    # Not dumpable, nor is any claim it forks (the flag is inherited by fork, reset by exec): a
    # process of the same user without CAP_SYS_PTRACE cannot read their memory, descriptors or
    # environment through /proc, nor copy a descriptor with pidfd_getfd, where no Yama module
    # limits ptrace. The server holds the run's secret and each running claim's key.
    set_prctl(PR_SET_DUMPABLE, 0)
    client = os.getppid()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    first = _receive(sock)
    if first is None or not isinstance(first[0].get("secret"), str):
        return
    secret = first[0]["secret"]
    _before_preload = frozenset(name.partition(".")[0] for name in sys.modules)
    _import(preload)
    _send_files(sock)
    # OpenSSL sets up SHA-256 on its first use: here once, not in every claim's process, which
    # tags its result with it (1 ms, most of it page copies); the server tags each status with it.
    hmac.digest(bytes(32), b"", "sha256")
    # The preloaded objects stay out of the server's own collections: a full collection writes
    # to every object, and every page written is a copy of one the running claims share.
    # Each claim's process puts them back (_fresh_state), as a fresh interpreter has them.
    gc.freeze()
    set_prctl(PR_SET_CHILD_SUBREAPER, 1)  # without prctl the timeout's group kill still holds
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _reap()
        if sock.fileno() in ready:
            received = _receive(sock)
            if received is None:
                break
            _answer(received, client, secret)
    for pid in _running:  # the client is gone: so is everything it started (issue 13, item 6)
        kill_group(pid)
    end_descendants(None)  # and whatever was re-parented here, until nothing is left


def _import(modules: Sequence[str]) -> None:
    """Import each of ``modules`` here (numpy first); one that fails is left out (its claims meet the same error themselves).

    The threads each import starts are counted: numpy's BLAS pool is fork-aware and tolerated
    (numpy goes first so that what a later module starts is not taken for it); any other
    module that starts one is named in the hazard note (``fork_hazard``).
    """
    global _tolerated_threads
    for name in sorted(modules, key=lambda name: name.partition(".")[0] != "numpy"):
        before, had_numpy = thread_count(), "numpy" in sys.modules
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001, S112 - recorded by its absence: the child meets the same error itself
            continue
        started = thread_count() - before
        if started <= 0:
            continue
        if name.partition(".")[0] in _FORK_AWARE or not had_numpy and "numpy" in sys.modules:
            _tolerated_threads += started
        else:
            _thread_starters.append(name)


def thread_count() -> int:
    """How many threads this process has now, from the kernel's list (a C library's threads too); 1 without /proc."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def fork_hazard(threads: int | None = None) -> str | None:
    """Why forking this process now may leave a claim waiting forever, or None when it is safe.

    Asked before every fork: a thread beyond numpy's BLAS pool, or a framework's backend set
    up here (JAX's XLA client, torch's CUDA context), is state a fork does not carry over.
    ``threads``: this process's thread count, when the caller has just counted them.
    """
    backends = _initialised_backends()
    extra = (thread_count() if threads is None else threads) - 1 - _tolerated_threads
    if extra <= 0 and not backends:
        return None
    parts = [f"it holds {extra} thread{'s' if extra != 1 else ''} beyond numpy's"] if extra > 0 else []
    parts += [f"{backend} is initialised in it" for backend in backends]
    started = f" (started while importing {', '.join(_thread_starters)})" if _thread_starters else ""
    return "the fork server is not safe to fork: " + " and ".join(parts) + started


def _initialised_backends() -> list[str]:
    """The frameworks' backends set up in this process (looked up in sys.modules: nothing is imported to ask)."""
    found = []
    bridge = sys.modules.get("jax._src.xla_bridge")
    backends = getattr(bridge, "_backends", None)
    if backends:
        found.append(f"JAX's backend ({', '.join(sorted(map(str, backends)))})")
    cuda = sys.modules.get("torch.cuda")
    is_initialized = getattr(cuda, "is_initialized", None)
    if callable(is_initialized) and is_initialized():
        found.append("torch's CUDA context")
    return found


def _receive(sock: socket.socket) -> tuple[dict[str, Any], list[int], tuple[int, int] | None] | None:
    """One message: its JSON, the descriptors it carried, and its sender's (pid, uid); None at EOF."""
    space = socket.CMSG_SPACE((REQUEST_FDS + 1) * 4) + socket.CMSG_SPACE(_UCRED.size)  # and a variant
    try:
        data, ancillary, _, _ = sock.recvmsg(MESSAGE_BYTES, space)
    except OSError:
        return None
    if not data:
        return None
    fds: list[int] = []
    sender = None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            numbers = array.array("i")
            numbers.frombytes(payload[: len(payload) - len(payload) % numbers.itemsize])
            fds.extend(numbers)
        elif level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, uid, _ = _UCRED.unpack(payload[: _UCRED.size])
            sender = (pid, uid)
    try:
        message = json.loads(data)
    except ValueError:
        message = None
    return (message if isinstance(message, dict) else {}), fds, sender


def _answer(received: tuple[dict[str, Any], list[int], tuple[int, int] | None], client: int, secret: str) -> None:
    request, fds, sender = received
    if "import" in request:
        _grow(request, fds, sender, client, secret)
        return
    if len(fds) != REQUEST_FDS + (1 if request.get("variant") is True else 0):  # the fifth: a variant (issue 17)
        for fd in fds:
            os.close(fd)
        return
    reply = socket.socket(fileno=fds[0])
    answer: dict[str, Any]
    refusal = _refusal(request, sender, client, secret)
    # the threads held as it forks (numpy's BLAS pool, which stops for the fork and starts again
    # at its next use), so a claim that then times out can say so
    threads = thread_count()
    hazard = fork_hazard(threads) if refusal is None else None
    if refusal is not None:
        answer = {"error": refusal}
    elif hazard is not None:  # the client runs this claim in a fresh interpreter, with the hazard as its note
        answer = {"error": hazard, "unsafe": True}
    else:
        try:
            _fork_claim(request, fds, reply, threads)
        except OSError as exc:  # EAGAIN at a process limit: this claim gets a fresh child, the server lives on
            answer = {"error": str(exc)}
        else:
            return
    _send(reply, answer)
    for fd in fds[1:]:
        os.close(fd)
    reply.close()


def _grow(request: dict[str, Any], fds: list[int], sender: tuple[int, int] | None, client: int, secret: str) -> None:
    """Import more modules before the next fork: a claim needs one this server did not preload.

    The request carries one descriptor, its reply socket; the answer is what a start sends
    (the files of every module loaded now, then ready), so the client watches the new ones
    for edits too. The claims already running are not touched: a fork took what they have.
    """
    names = request.get("import")
    if len(fds) != 1 or not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        for fd in fds:
            os.close(fd)
        return
    reply = socket.socket(fileno=fds[0])
    with reply:
        refusal = _refusal(request, sender, client, secret)
        if refusal is not None:
            _send(reply, {"error": refusal})
            return
        _import(names)
        gc.freeze()  # what the imports made joins what was frozen at the start (serve)
        try:
            _send_files(reply)
        except OSError:
            pass  # the client stopped waiting: it takes this server for broken


def _refusal(request: dict[str, Any], sender: tuple[int, int] | None, client: int, secret: str) -> str | None:
    """Why a request is not served (not from the client process, or without the run's secret), or None."""
    if sender is not None and (sender[0] != client or sender[1] != os.getuid()):
        return f"refused: the request came from process {sender[0]}, not from the process that started the server"
    given = request.get("secret")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), secret.encode()):
        return "refused: the request does not carry this run's secret"
    return None


def _send_files(sock: socket.socket) -> None:
    files = sorted({f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)})
    for i in range(0, len(files), 200):  # each message well under the socket's buffer
        sock.send(json.dumps({"files": files[i : i + 200]}).encode())
    # its environment, so each request carries only what differs from it (_set_environment)
    sock.send(json.dumps({"ready": True, "environ": dict(os.environ)}).encode())


def _send_pid(reply: socket.socket, threads: int) -> bool:
    """In the forked claim's process, before any of the claim's code: its pid, with a pidfd of it; close ``reply``.

    Sent from here, not from the server after its fork: the claim may stop or kill the
    server at once, and a server descheduled right after the fork (a loaded machine) would
    then never answer. The client would take the claim for one never forked and run it
    again in a fresh child, where it stops its supervisor the same way and its verdict is
    lost at its timeout. Sent first, the answer is on the client's socket whatever the claim
    does to the server next.

    The client watches the claim's end through the pidfd and, once this server is gone and
    the claim is the client's child, reaps it. Without pidfds (Linux before 5.3) the claim
    cannot be watched: False, it exits unrun, and the client runs it in a fresh child.
    """
    with reply:
        try:
            pidfd = os.pidfd_open(os.getpid())
        except (AttributeError, OSError) as exc:
            _send(reply, {"error": f"a forked claim cannot be watched without pidfd_open (Linux 5.3): {exc}"})
            return False
        try:
            socket.send_fds(reply, [json.dumps({"pid": os.getpid(), "threads": threads}).encode()], [pidfd])
        except OSError:
            pass  # the client stopped waiting (its thread gave up): the claim's status still goes to its watch
        finally:
            os.close(pidfd)
    return True


def _send(reply: socket.socket, message: dict[str, Any]) -> None:
    try:
        reply.send(json.dumps(message).encode())
    except OSError:
        pass  # the client stopped waiting (its thread gave up): nothing to tell


class _Running(NamedTuple):
    """A claim's process the server forked and has not reaped: where its status goes, and the key that tags it."""

    watch: socket.socket
    key: bytearray  # zeroed in every process forked after it (_become_claim): no sibling holds it


_running: dict[int, _Running] = {}  # pid -> the running claim


def _reap() -> None:
    """Reap every ended child; once a claim has ended, end what it left, then tell its status to the client.

    A claim's process is a subreaper (``_become_claim``): what it started stays below it while
    it runs, and comes to this process the moment it ends, before it can be reaped. So, when a
    claim is reaped here, every child of this process that is no running claim is a leftover of
    an ended one, and is ended (``procgroup.end_children``) before the status says the claim is done.
    """
    ended: list[tuple[_Running, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        claim = _running.pop(pid, None)
        if claim is not None:
            ended.append((claim, status))
    if not ended:
        return
    end_children(lambda pid: pid not in _running)  # no running claim: what an ended one left
    for claim, status in ended:
        send_status(claim.watch, status, bytes(claim.key))
        claim.watch.close()


def _fork_claim(request: dict[str, Any], fds: list[int], reply: socket.socket, threads: int) -> int:
    """Fork the claim's own process, which answers on ``reply`` (``_send_pid``); here, keep its watch socket and key
    for its status (``_reap``)."""
    _preloaded_tops()  # made here, once, so no claim's process makes it (drop_shadowed)
    key = bytearray.fromhex(request["key"])
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            if _send_pid(reply, threads):
                code = _become_claim(request, fds, key)
        except BaseException:  # noqa: BLE001 - reported as exit code 70: the claim's process could not be set up
            pass
        os._exit(code)
    reply.close()
    try:
        os.setpgid(pid, pid)  # also here: a kill of its group before the child's own setpgid still reaches it
    except OSError:
        pass  # it did it first, or already ended
    for fd in fds[1:]:
        if fd != fds[3]:
            os.close(fd)
    _running[pid] = _Running(socket.socket(fileno=fds[3]), key)
    return pid


def _become_claim(request: dict[str, Any], fds: list[int], key: bytearray) -> int:
    """In the forked process: become what a fresh start is (group, descriptors, cwd, environment, module state), run the claim.

    Its own process group in the server's session (as the fresh child's, in its supervisor's),
    with no death signal from the server: a claim that kills the server ends no other claim.
    A subreaper, so whatever it starts and leaves stays below it while it runs and is ended
    with it (``_reap``), attributed to no sibling.
    """
    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for sibling in _running.values():  # the claims running beside it: this copy forgets their keys and sockets
        sibling.key[:] = bytes(len(sibling.key))
        sibling.watch.close()
    _running.clear()
    set_prctl(PR_SET_CHILD_SUBREAPER, 1)
    variant = variant_channel.read(fds[REQUEST_FDS]) if len(fds) > REQUEST_FDS else None
    result_fd = _child_descriptors(fds[:REQUEST_FDS])
    mode, path, extra = request["mode"], Path(request["path"]), request["extra"]
    os.chdir(path.parent)
    _set_environment(request["env"], request.get("unset", []))
    del request
    sys.argv = [_FRESH_MAIN, mode, str(path)]  # as the fresh child has it
    _fresh_state([str(path.parent), *extra])
    # (a claim's own start-up hooks go here: after its descriptors and environment, before its code)
    code = run_as_process(mode, path, extra, result_fd, bytes(key), variant)
    end_descendants(None)  # what it left running: ended here when it can be, before its server or client must
    return code


def _child_descriptors(fds: list[int]) -> int:
    """stdin from /dev/null, fds 1 and 2 the stderr stream, the result stream kept for the result only; all else closed.

    Closed with the rest: the server's socket, the watch sockets of this claim and of every
    other (only the server tells a status), the other claims' streams.
    """
    _, out_fd, err_fd, _ = fds
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(err_fd, 2)
    os.dup2(err_fd, 1)
    result_fd = os.dup(out_fd)  # not inheritable (PEP 446), as the fresh child's saved stdout
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every descriptor number up to the limit
        open_fds = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in open_fds:
        if fd not in (0, 1, 2, result_fd):
            try:
                os.close(fd)
            except OSError:
                pass
    return result_fd


def _set_environment(changed: dict[str, str], unset: Sequence[str]) -> None:
    """``os.environ`` becomes the claim's: the client sends what differs from the server's own (``changed``, ``unset``).

    Clearing and refilling it cost every claim 80 putenv calls and the pages they write.
    """
    for name in unset:
        os.environ.pop(name, None)
    for name, value in changed.items():
        os.environ[name] = value


def _fresh_state(entries: Sequence[str]) -> None:
    """What differs after a fork and not after an interpreter start: caches, random seeds, preloaded modules."""
    gc.unfreeze()  # the server froze its objects (serve); a fresh interpreter's collector tracks them all
    invalidate_import_caches()  # a file added since the server started is found
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # type: ignore[attr-defined]  # found again from the claim's own TMPDIR (isolate's private HOME), as a fresh child's
    drop_shadowed(entries)
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # the global generator, from fresh entropy as a fresh child's (Python's reseeds itself)


def _process_start() -> float:
    """When this process started, on the wall clock (from /proc); minus infinity where that cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            ticks = int(handle.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime: clock ticks after boot
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, IndexError, ValueError):
        return -math.inf
    return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")


# A folder listing is current unless the folder changed within this long before it was made:
# the coarsest modification times kept (FAT's) are 2 s apart.
_MTIME_STEP_S = 2.0
# Every listing this server's finders hold was made after it started; a folder whose recorded
# modification time is older than this by the step cannot have changed since unseen.
_racy_after = _process_start() - _MTIME_STEP_S


def _invalidate_if_racy(finder: importlib.machinery.FileFinder) -> None:
    if finder._path_mtime >= _racy_after:  # type: ignore[attr-defined]
        finder._path_mtime = -1  # type: ignore[attr-defined]  # what FileFinder.invalidate_caches does


def invalidate_import_caches() -> None:
    """``importlib.invalidate_caches()``, except for the folder listings the server made that are known current.

    A FileFinder compares its folder's modification time with the one it listed at every
    lookup and lists the folder again when they differ; it misses a file added since only
    when the folder changed twice within one step of the file system's clock around the
    listing. So a listing of a folder whose time is older than the server's start by more
    than the coarsest step stays, and the claim's imports do not list every folder of
    site-packages and the standard library again (what invalidating them all cost each
    claim). Every other finder and cache is invalidated as the function does it.
    """
    original = importlib.machinery.FileFinder.invalidate_caches
    importlib.machinery.FileFinder.invalidate_caches = _invalidate_if_racy  # type: ignore[method-assign,assignment]
    try:
        importlib.invalidate_caches()
    finally:
        importlib.machinery.FileFinder.invalidate_caches = original  # type: ignore[method-assign]


def _preloaded_tops() -> frozenset[str]:
    """The top-level names of the modules loaded since the preload began, worked out again only when sys.modules grew.

    The server asks before every fork, so its children find the answer made: walking
    sys.modules in every claim's process wrote to (and so copied) the pages of every
    module's name, 0.8 ms a claim.
    """
    global _preloaded
    count, tops = _preloaded
    if count != len(sys.modules):
        tops = frozenset(name.partition(".")[0] for name in list(sys.modules)) - _before_preload
        _preloaded = (len(sys.modules), tops)
    return tops


def drop_shadowed(entries: Sequence[str]) -> list[str]:
    """Remove from sys.modules every preloaded module whose top-level name a folder in ``entries`` provides.

    A fresh interpreter would import those from the claim's own folder, the root or src/, first
    on its path; so must the forked child. The modules loaded before the preload stay: a fresh
    child has them too. Returns the top-level names removed.
    """
    shadowed = sorted(provided_top_levels(entries, among=_preloaded_tops()))
    if not shadowed:  # the usual case: walking sys.modules would write (and copy) every name's page, 0.6 ms
        return shadowed
    for name in list(sys.modules):
        if name.partition(".")[0] in shadowed:
            del sys.modules[name]
    return shadowed


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), sys.argv[2:])
    # The client waits for this exit at the end of every run: tearing down numpy's modules and
    # freeing the heap cost it 10 ms that the kernel does faster. The exit handlers still run
    # (a preloaded module's cleanup); nothing is buffered (the streams are /dev/null).
    import atexit

    atexit._run_exitfuncs()
    os._exit(0)
