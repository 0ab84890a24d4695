"""``physverify sandbox``: run confirm or replay on code you do not trust (issue 5, spec section 5).

The command inside is the same physverify command; the sandbox gives it no network, the
repository read-only at ``/repo`` (PHYSVERIFY_REPO, so it needs no --trusted), only the ledger
and output files writable, a private /tmp, no view of the host's home, and memory and
process-count limits. Three backends build one command line each (the table BACKENDS):
docker and podman run the image of sandbox/Dockerfile; bwrap (bubblewrap) runs the host's
own Python. What runs inside and which host files are writable is decided in plan.py.
What each protects against is in sandbox/README.md.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

# The plan (what runs inside, what is writable, the outer limit) is plan.py's; these
# are its names that belong to the sandbox's interface.
from physverify.commands.sandbox.plan import (
    CLAIM_GRACE_S,
    MOUNT,
    Inner,
    Plan,
    WritableFile,
    control_character,
    make_plan,
    outer_limit,
)
from physverify.commands.sandbox.defaults import DEFAULT_IMAGE, DEFAULT_MEMORY, DEFAULT_PIDS, GRACE_S, IMAGE_ENV
from physverify.errors import PhysverifyError, UsageError
from physverify.text import short_repr
from physverify.verdict import EXIT_ERROR, EXIT_FINDING, EXIT_OK

__all__ = [
    "BACKENDS", "CLAIM_GRACE_S", "DEFAULT_IMAGE", "DEFAULT_MEMORY", "DEFAULT_PIDS", "GRACE_S", "IMAGE_ENV", "MOUNT",
    "Inner", "Limits", "Plan", "SandboxRun", "UsageError", "WritableFile", "backend_env", "bwrap_argv",
    "choose_backend", "control_character", "docker_argv", "find_repo", "make_plan", "outer_limit", "parse_size",
    "podman_argv", "python_paths", "sandbox",
]

INSIDE_HOME = "/home/sandbox"
INSIDE_UID = 1000  # bwrap: a non-root uid inside (mapped to the caller's uid outside)
CAPTURE_BYTES = 64 * 1024  # sandbox(capture=True) keeps this much of the run's output
_ENGINE_PROBE_S = 10.0
_INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or Docker or Podman "
                 "and build the image as sandbox/README.md shows")


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    pids: int  # 0: no process-count limit


@dataclass(frozen=True)
class SandboxRun:
    exit_code: int
    backend: str
    argv: tuple[str, ...]
    timed_out: bool
    notes: tuple[str, ...]
    problem: str | None = None  # one line for the caller when the run ended without its own exit code
    ledger: Path | None = None  # the host file bound as the ledger
    output: str = ""  # with capture=True: the end of what the run wrote on stdout and stderr


# --- sizes, repository, commit --------------------------------------------------------
# The largest limit setrlimit and a cgroup's memory.max take (a signed 64-bit count of bytes,
# 8 EiB); a larger one failed inside the child's preexec_fn, an internal error at exit 3.
MAX_MEMORY_BYTES = 2**63 - 1
MAX_PIDS = 2**22  # Linux's largest pid_max: no limit above it limits anything


def parse_size(text: str) -> int:
    """Return the bytes of a size such as 512m, 2g or 1073741824 (binary units, as docker --memory)."""
    match = re.fullmatch(r"\s*(\d{1,20})\s*([kmgt]?)i?b?\s*", str(text).lower())  # 20 digits: past 8 EiB
    size = 0 if match is None else int(match.group(1)) * 1024 ** " kmgt".index(match.group(2) or " ")
    if not 0 < size <= MAX_MEMORY_BYTES:
        raise UsageError(f"--memory {short_repr(text)}: give a positive size of at most 8 EiB, such as 512m or 2g")
    return size


def find_repo(start: Path) -> Path:
    """Return the git working tree holding ``start``, else ``start`` itself (as confirm finds it)."""
    from physverify.gate.repo import root_for as repo_root_for

    return repo_root_for(start).resolve()


# --- the backends: each builds one command line ----------------------------------------
def docker_argv(plan: Plan, limits: Limits, *, image: str, name: str, engine: str = "docker") -> list[str]:
    """Return the docker (or podman) command line that runs ``plan`` in ``image``."""
    uid, gid = os.getuid(), os.getgid()
    argv = [engine, "run", "--rm", "--init", *(["--interactive"] if plan.sealed else []), "--name", name,
            "--network", "none", "--read-only",
            "--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes),
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    if limits.pids:
        argv += ["--pids-limit", str(limits.pids)]
    if engine == "podman" and uid != 0:
        argv += ["--userns", "keep-id"]  # rootless podman: keep the caller's uid so the ledger stays writable
    # The caller's uid and gid: written files keep their owner; root's gets no capabilities.
    argv += ["--user", f"{uid}:{gid}", "--mount", _mount_spec(plan.repo, MOUNT, readonly=True)]
    argv += [a for f in plan.writable for a in ("--mount", _mount_spec(f.host, f.inside, readonly=False))]
    argv += ["--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.memory_bytes}", "--env", "HOME=/tmp"]
    argv += [a for k, v in plan.env().items() for a in ("--env", f"{k}={v}")]
    return argv + ["--workdir", plan.cwd, image, *plan.args]


def podman_argv(plan: Plan, limits: Limits, *, image: str, name: str) -> list[str]:
    """Return the podman command line; podman takes docker's options."""
    return docker_argv(plan, limits, image=image, name=name, engine="podman")


def _mount_spec(host: Path, target: str, *, readonly: bool) -> str:
    if "," in str(host) or "," in target:
        raise UsageError(f"sandbox: {host}: a path with a comma cannot be mounted by docker or podman")
    return f"type=bind,source={host},target={target}" + (",readonly" if readonly else "")


# The inner command under bwrap. ``python -m physverify`` exits 1 when physverify cannot be imported
# inside (run from a source folder the sandbox does not bind, or an install it cannot see), and 1 is
# the exit code of a finding: a run that never started read as a confirmed defect. So a failed
# import is exit 2 with one line, as any other run that gives no verdict.
INNER_MAIN = (
    "import sys\n"
    "try:\n"
    "    from physverify.commands.cli import command\n"
    "except ImportError as exc:\n"
    "    sys.stderr.write(f'physverify: cannot be imported inside the sandbox ({exc}); no verdict; install it with pip '\n"
    "                     'where the sandbox can see it (the host Python and its site-packages are mounted)\\n')\n"
    "    raise SystemExit(2) from None\n"
    "raise SystemExit(command())\n"
)


def bwrap_argv(plan: Plan, limits: Limits, *, python: Sequence[Path] = (), executable: str = "") -> list[str]:
    """Return the bubblewrap command line that runs ``plan`` with the host's Python."""
    # No --disable-userns: it would also refuse the user namespace each claim makes for its own /tmp
    # (isolation/privatetmp.py), which then refuses any further one to the claim with a seccomp filter.
    argv = ["bwrap", "--unshare-user", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "physverify-sandbox", "--die-with-parent", "--new-session", "--clearenv",
            "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", INSIDE_HOME,
            "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8"]
    argv += [a for k, v in plan.env().items() for a in ("--setenv", k, v)]
    size = str(limits.memory_bytes)  # tmpfs pages are memory: no bigger than the memory limit
    argv += _system_binds() + ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp",
                               "--size", size, "--tmpfs", "/dev/shm"]
    # The homes are empty tmpfs; the Python below may sit inside one (pyenv under /root).
    argv += ["--tmpfs", "/root", "--tmpfs", "/home", "--dir", INSIDE_HOME]
    argv += [a for p in python for a in ("--ro-bind", str(p), str(p))]
    argv += ["--ro-bind", str(plan.repo), MOUNT]
    argv += [a for f in plan.writable for a in ("--bind", str(f.host), f.inside)]
    # -I: neither the working folder (the repository: its own physverify/ would run in place of this one and read
    # the seal's key) nor the user site nor PYTHON* variables decide what is imported; -B: no .pyc is written.
    return argv + ["--chdir", plan.cwd, "--", executable or sys.executable, "-I", "-B", "-c", INNER_MAIN, *plan.args]


def _system_binds() -> list[str]:
    """Return the read-only binds of the system: /usr, its merged-/usr links, and a few files of /etc."""
    argv = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    etc = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf",
           "localtime", "gitconfig", "mime.types")
    return argv + [a for name in etc for a in ("--ro-bind-try", f"/etc/{name}", f"/etc/{name}")]


def python_paths() -> list[Path]:
    """Return the folders the host's Python and physverify need, outside /usr, without nesting."""
    import site

    import physverify

    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)),
                  str(Path(physverify.__file__).resolve().parent.parent), *site.getsitepackages()}
    if site.ENABLE_USER_SITE:  # only the user's site-packages, never the rest of the home
        candidates.add(site.getusersitepackages())
    paths = sorted({Path(os.path.realpath(c)) for c in candidates if os.path.isdir(c)})
    kept: list[Path] = []
    for path in paths:
        if path == Path("/") or path.parts[1] in ("usr", "bin", "lib", "lib64", "sbin"):
            continue
        if not any(k == path or k in path.parents for k in kept):
            kept.append(path)
    return kept


BACKENDS: dict[str, Callable[..., list[str]]] = {"docker": docker_argv, "podman": podman_argv, "bwrap": bwrap_argv}


def choose_backend(name: str, image: str = DEFAULT_IMAGE) -> str:
    """Return the backend to use: ``name``; for auto, an engine that answers and has ``image``, else bwrap."""
    if name != "auto":
        if name not in BACKENDS:
            raise UsageError(f"sandbox: unknown backend {name!r} (choose from auto, {', '.join(BACKENDS)})")
        if shutil.which(name) is None:
            raise PhysverifyError(f"sandbox: {name} is not installed; {_INSTALL_HINT}")
        return name
    engines = [e for e in ("docker", "podman") if shutil.which(e) and _answers([e, "info"])]
    for engine in engines:
        if _answers([engine, "image", "inspect", image]):
            return engine
    if shutil.which("bwrap"):
        return "bwrap"  # an engine without the image (a CI runner's docker): bwrap needs no build
    if engines:
        raise _no_image(engines[0], image)
    raise PhysverifyError(f"sandbox: no sandbox is available here; {_INSTALL_HINT}")


def _no_image(engine: str, image: str) -> PhysverifyError:
    return PhysverifyError(f"sandbox: {engine} has no image {image!r}; build it as sandbox/README.md shows: "
                           f"{engine} build -t {image} -f sandbox/Dockerfile .")


def _answers(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=_ENGINE_PROBE_S, env=backend_env(argv[0]),
                              check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# --- running ---------------------------------------------------------------------------
# Variables a backend's own client may need; nothing else of the caller's environment reaches
# any backend (issue 13: bwrap's init inside kept GITHUB_TOKEN in /proc/1/environ).
_BASE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
_ENGINE_ENV = ("HOME", "USER", "LOGNAME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "DBUS_SESSION_BUS_ADDRESS",
               "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
               "CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF",
               "REGISTRY_AUTH_FILE")


def backend_env(backend: str) -> dict[str, str]:
    """Return the environment ``backend`` is started with: a fixed list of names, never the caller's whole one."""
    names = _BASE_ENV if backend == "bwrap" else _BASE_ENV + _ENGINE_ENV
    env = {name: os.environ[name] for name in names if name in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def sandbox(
    inner: Inner,
    *,
    backend: str = "auto",
    memory: str = DEFAULT_MEMORY,
    pids: int = DEFAULT_PIDS,
    repo: Path | None = None,
    image: str | None = None,
    timeout: str | None = None,
    capture: bool = False,
    relay: Relay | None = None,
) -> SandboxRun:
    """``physverify sandbox``: run confirm or replay ``inner`` in a sandbox; return its exit code and notes.

    With ``capture`` the run's stdout and stderr do not reach the caller's: the last
    CAPTURE_BYTES of both come back in ``output`` (the Action, whose stdout the runner reads
    for workflow commands, prints them neutralised). With ``relay`` (the command line's
    stdout and stderr writers) each line goes to its writer as it comes, shown through
    ``visible``: the code inside can write to the inner physverify's own streams, and
    passed on as bytes a screen clear, an OSC 52 clipboard write or a ``##[`` command reached
    the terminal or a CI log as it was (issue 13).

    Every result file the caller names (``--output``, ``--report``, ``--json``) reaches it
    only through the seal (commands/sandbox/seal.py): the command inside receives a new key on
    its standard input and writes each result, sealed, into a file of a folder of the runner's
    own; the runner copies it to the caller's file only when the seal holds. A result a claim
    forged, or none where physverify inside reported a verdict, is exit 2 with a problem, and
    the caller's file is left as it was.
    """
    import tempfile

    from physverify.commands.sandbox import seal

    from physverify.gate.evaluate import parse_timeout

    if not 0 <= pids <= MAX_PIDS:
        raise UsageError(f"--pids {short_repr(pids)}: give a positive number of processes of at most {MAX_PIDS:,} "
                         "(0: no limit)")
    outer_given = parse_timeout(timeout) if timeout is not None else None  # the rule of every --timeout
    limits = Limits(parse_size(memory), pids)
    cwd = Path.cwd()
    key = seal.new_key()
    with tempfile.TemporaryDirectory(prefix="physverify-sandbox-") as staging:
        plan = make_plan(inner, repo=(repo or find_repo(cwd)), cwd=cwd, staging=Path(staging))
        plan = replace(plan, sealed=True)
        outer = outer_given if outer_given is not None else outer_limit(inner, cwd=cwd, repo=plan.repo)
        image = image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
        chosen = choose_backend(backend, image)
        created = [f.host for f in plan.writable if _create(f.host)]  # a bind needs its source
        try:
            run = _run_bwrap if chosen == "bwrap" else functools.partial(_run_engine, chosen, image=image)
            ran = run(plan, limits, outer, _Tail() if capture else _Relay(*relay) if relay is not None else None, key)
        finally:
            for path in created:  # an unused one is removed again
                if path.lstat().st_size == 0:
                    path.unlink()
        return _deliver(_known_exit(replace(ran, ledger=plan.ledger)), plan.outputs, key)


def _deliver(ran: SandboxRun, outputs: Sequence[tuple[Path, Path]], key: bytes) -> SandboxRun:
    """Copy each staged result to the caller's file once every seal holds; else exit 2 with a problem, nothing copied.

    A result missing where physverify inside ended with a verdict (0 or 1) is a problem too: a
    claim kept it from writing (a limit set with prlimit), and the caller's old file must not
    stand for this run's.
    """
    from physverify.commands.sandbox import seal

    opened: list[tuple[Path, bytes]] = []
    for staged, target in outputs:
        data = _read_staged(staged)
        if not data:
            if ran.exit_code in (EXIT_OK, EXIT_FINDING) and ran.problem is None:
                return replace(ran, exit_code=EXIT_ERROR, problem=(
                    f"sandbox: physverify inside ended with exit {ran.exit_code} but wrote no result for {target}; "
                    "no verdict"))
            continue
        try:
            opened.append((target, seal.opened(data, key, f"sandbox: the result for {target}")))
        except PhysverifyError as exc:
            return replace(ran, exit_code=EXIT_ERROR, problem=str(exc))
    for target, data in opened:
        _write_result(target, data)
    return ran


_MAX_RESULT = 256 * 1024 * 1024  # as the Action's reader of a result (action.result_of)


def _read_staged(path: Path) -> bytes:
    """The bytes of a staged result: a regular file reached without a link, at most _MAX_RESULT; b"" when none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise PhysverifyError(f"sandbox: the result staged for {path.name} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_RESULT:
            raise PhysverifyError(f"sandbox: the result staged for {path.name} is not a regular file of at most "
                                  f"{_MAX_RESULT} bytes; no verdict")
        return handle.read()


def _write_result(path: Path, data: bytes) -> None:
    """Write a result whose seal held to the caller's file (checked by plan.writable_path), never through a link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot be written: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _create(path: Path) -> bool:
    """Create the empty file ``path`` unless it exists, never through a link; return whether it was made."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        if not stat.S_ISREG(path.lstat().st_mode):  # replaced by a link or a folder since it was checked
            raise UsageError(f"sandbox: {path}: not a regular file; the sandbox binds only regular files") from None
        return False
    os.close(fd)
    return True


def _known_exit(ran: SandboxRun) -> SandboxRun:
    """Return ``ran`` with an exit code other than 0, 1 or 2 (physverify killed inside) turned into 2 and a problem."""
    if ran.exit_code in (EXIT_OK, EXIT_FINDING, EXIT_ERROR):
        return ran
    code = ran.exit_code
    signum = -code if code < 0 else code - 128 if 128 < code < 160 else None
    how = f"exit {code}" + (f", signal {signum}" if signum else "")
    problem = (f"sandbox: physverify inside ended abnormally ({how}) before it reported, perhaps killed by the "
               "code under test; no verdict, and no ledger line for a claim it had not finished")
    return replace(ran, exit_code=EXIT_ERROR, problem=problem)


def _run_bwrap(plan: Plan, limits: Limits, outer: float, tail: _Output | None, key: bytes | None) -> SandboxRun:
    from physverify.commands.sandbox import cgroup as _cgroup  # POSIX only (resource): imported when bwrap runs

    argv = bwrap_argv(plan, limits, python=python_paths())
    with _cgroup.limited(limits.memory_bytes, limits.pids) as group:
        out, err = _streams(tail)
        proc = subprocess.Popen(argv, stdin=_stdin(key), stdout=out, stderr=err, env=backend_env("bwrap"),
                                preexec_fn=group.enter)
        _send_key(proc, key)
        code, timed_out = _wait(proc, outer, lambda proc: proc.kill(), tail)
    return _ran(code, "bwrap", argv, group.notes, outer, timed_out, tail)


def _run_engine(engine: str, plan: Plan, limits: Limits, outer: float, tail: _Output | None, key: bytes | None, *,
                image: str) -> SandboxRun:
    if not _answers([engine, "image", "inspect", image]):
        raise _no_image(engine, image)
    name = f"physverify-sandbox-{os.urandom(6).hex()}"  # uuid would import platform into every command's start
    argv = BACKENDS[engine](plan, limits, image=image, name=name)
    # Killing the client does not stop the container, so the engine is told by name.
    def stop(proc: subprocess.Popen[bytes]) -> None:
        if not _answers([engine, "kill", name]):
            proc.kill()

    out, err = _streams(tail)
    proc = subprocess.Popen(argv, stdin=_stdin(key), stdout=out, stderr=err, env=backend_env(engine))
    _send_key(proc, key)
    code, timed_out = _wait(proc, outer, stop, tail)
    notes = (f"{engine}: memory {limits.memory_bytes} bytes and {limits.pids or 'unlimited'} processes "
             "(the container's cgroup), no network, repository read-only",)
    return _ran(code, engine, argv, notes, outer, timed_out, tail)


def _stdin(key: bytes | None) -> int:
    """Popen's stdin: a pipe that carries the seal's key, else nothing."""
    return subprocess.DEVNULL if key is None else subprocess.PIPE


def _send_key(proc: subprocess.Popen[bytes], key: bytes | None) -> None:
    """Write the seal's key on the run's standard input and close it: read once, by physverify, before any claim runs.

    The line fits the pipe's buffer, so this never waits for the command inside.
    """
    if key is None or proc.stdin is None:
        return
    from physverify.commands.sandbox.seal import key_line

    try:
        proc.stdin.write(key_line(key))
        proc.stdin.close()
    except OSError:
        pass  # it ended at once: it reports no sealed result, which the caller takes as an error


def _streams(tail: _Output | None) -> tuple[int | None, int | None]:
    """Return Popen's stdout and stderr: the caller's, one pipe for a ``_Tail``, two for a ``_Relay``."""
    if tail is None:
        return None, None
    return (subprocess.PIPE, subprocess.PIPE) if isinstance(tail, _Relay) else (subprocess.PIPE, subprocess.STDOUT)


# The command line's writers for the run's stdout and stderr (``sandbox(relay=...)``).
Relay = tuple[Callable[[str], object], Callable[[str], object]]


class _Relay:
    """Copies the run's stdout and stderr to two writers in threads, line by line, each line through ``visible``.

    Tabs stay (they move no cursor but to a tab stop); a line longer than CAPTURE_BYTES is
    passed on in pieces, so a claim writing without end never makes one held whole.
    """

    def __init__(self, out: Callable[[str], object], err: Callable[[str], object]) -> None:
        self.writers = (out, err)
        self.threads: list[threading.Thread] = []

    def start(self, proc: subprocess.Popen[bytes]) -> None:
        for stream, write in zip((proc.stdout, proc.stderr), self.writers):
            if stream is not None:
                thread = threading.Thread(target=_relay_lines, args=(stream, write), daemon=True)
                thread.start()
                self.threads.append(thread)

    def join(self) -> None:
        """Wait for both pipes to end (every process inside has ended), as ``_Tail.text`` does."""
        for thread in self.threads:
            thread.join(timeout=_ENGINE_PROBE_S)


def _relay_lines(stream: IO[bytes], write: Callable[[str], object]) -> None:
    from physverify.text import visible

    def shown(line: bytes) -> str:
        return visible(line.decode("utf-8", errors="replace"), keep="\t") + "\n"

    pending = b""
    for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
        *whole, pending = (pending + chunk).split(b"\n")
        for line in whole:
            write(shown(line))
        if len(pending) > CAPTURE_BYTES:
            write(shown(pending))
            pending = b""
    if pending:
        write(shown(pending))


class _Tail:
    """Reads a pipe to its end in a thread, keeping only its last CAPTURE_BYTES (a claim may write without end)."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.thread: threading.Thread | None = None

    def start(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdout is not None:
            self.thread = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
            self.thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            self.kept += chunk
            del self.kept[:-CAPTURE_BYTES]

    def text(self) -> str:
        """Return what was kept; the pipe ends when every process inside has ended."""
        if self.thread is not None:
            self.thread.join(timeout=_ENGINE_PROBE_S)
        return bytes(self.kept).decode("utf-8", errors="replace")


_Output = _Tail | _Relay


def _ran(code: int, backend: str, argv: Sequence[str], notes: tuple[str, ...], outer: float,
         timed_out: bool, tail: _Output | None) -> SandboxRun:
    if isinstance(tail, _Relay):
        tail.join()  # every line shown before the caller writes its notes
    problem = None
    if timed_out:
        problem = (f"sandbox: the run did not finish within {outer:g} s (the outer limit; sandbox/README.md, "
                   "\"Time\") and was ended with everything in it; no ledger line was written for a claim it did not finish")
    return SandboxRun(EXIT_ERROR if timed_out else code, backend, tuple(argv), timed_out, notes, problem,
                      output=tail.text() if isinstance(tail, _Tail) else "")


def _wait(proc: subprocess.Popen[bytes], outer: float,
          stop: Callable[[subprocess.Popen[bytes]], object], tail: _Output | None = None) -> tuple[int, bool]:
    """Return (exit code, timed out) of ``proc``, stopping it at ``outer`` seconds or on Ctrl-C."""
    if tail is not None:
        tail.start(proc)
    try:
        return proc.wait(timeout=outer), False
    except subprocess.TimeoutExpired:
        stop(proc)
        proc.wait()
        return EXIT_ERROR, True
    except BaseException:  # Ctrl-C: end the sandbox too, then re-raise
        stop(proc)
        proc.wait()
        raise
