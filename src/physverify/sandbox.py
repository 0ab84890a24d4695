"""``physverify sandbox``: run confirm or replay on code you do not trust (issue 5, spec section 5).

The command inside is the same physverify command; the sandbox gives it no network, the
repository read-only at ``/repo`` (PHYSVERIFY_REPO, so it needs no --trusted), only the ledger
and output files writable, a private /tmp, no view of the host's home, and memory and
process-count limits. Three backends build one command line each (the table BACKENDS):
docker and podman run the image of sandbox/Dockerfile; bwrap (bubblewrap) runs the host's
own Python. What each protects against is in sandbox/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from physverify.errors import PhysverifyError, UsageError
from physverify.ledger import DEFAULT_LEDGER
from physverify.verdict import EXIT_ERROR

MOUNT = "/repo"  # the repository inside; PHYSVERIFY_REPO points here
OUT_MOUNT = "/out"  # writable files that live outside the repository
INSIDE_HOME = "/home/sandbox"
INSIDE_UID = 1000  # bwrap: a non-root uid inside (mapped to the caller's uid outside)
IMAGE_ENV = "PHYSVERIFY_SANDBOX_IMAGE"
DEFAULT_IMAGE = "physverify-sandbox"
DEFAULT_MEMORY = "4g"
DEFAULT_PIDS = 512
COMMANDS = ("confirm", "replay")
GRACE_S = 60.0  # the outer limit of a confirm: its own --timeout plus this (start-up, ledger write)
_ENGINE_PROBE_S = 10.0
# The options whose value is a file physverify writes: they are the only writable places.
_WRITE_OPTIONS = {"confirm": ("--ledger", "--json"), "replay": ("--ledger", "--output")}
_INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or Docker or Podman "
                 "and build the image as sandbox/README.md shows")


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    pids: int  # 0: no process-count limit


@dataclass(frozen=True)
class WritableFile:
    host: Path
    inside: str


@dataclass(frozen=True)
class Plan:
    """What runs inside: the physverify arguments with paths translated, and what is mounted where."""

    repo: Path
    args: tuple[str, ...]
    cwd: str
    writable: tuple[WritableFile, ...]
    commit: str | None

    def env(self) -> dict[str, str]:
        """Return the variables physverify reads inside (spec sections 3 and 5)."""
        env = {"PHYSVERIFY_REPO": MOUNT, "PYTHONDONTWRITEBYTECODE": "1"}
        if self.commit:
            env["PHYSVERIFY_REPO_COMMIT"] = self.commit
        return env


@dataclass(frozen=True)
class SandboxRun:
    exit_code: int
    backend: str
    argv: tuple[str, ...]
    timed_out: bool
    notes: tuple[str, ...]


# --- sizes, repository, commit --------------------------------------------------------
def parse_size(text: str) -> int:
    """Return the bytes of a size such as 512m, 2g or 1073741824 (binary units, as docker --memory)."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", str(text).lower())
    if match is None or int(match.group(1)) == 0:
        raise UsageError(f"--memory {text!r}: give a positive size such as 512m or 2g")
    return int(match.group(1)) * 1024 ** " kmgt".index(match.group(2) or " ")


def find_repo(start: Path) -> Path:
    """Return the git working tree holding ``start``, else ``start`` itself (as confirm finds it)."""
    from physverify.repo import root_for as repo_root_for

    return repo_root_for(start).resolve()


# --- the command inside ---------------------------------------------------------------
def make_plan(args: Sequence[str], *, repo: Path, cwd: Path) -> Plan:
    """Return the Plan for ``physverify sandbox -- ARGS`` run from ``cwd`` on ``repo``."""
    from physverify.repo import commit as repo_commit

    command = _command(args)
    repo, cwd = repo.resolve(), cwd.resolve()
    translate = _Translator(repo, cwd)
    out: list[str] = [command]
    rest = list(args[1:])
    writes = _WRITE_OPTIONS[command]
    while rest:
        token = rest.pop(0)
        name, eq, value = token.partition("=")
        if name in writes and (eq or rest):
            value = value if eq else rest.pop(0)
            out += [name, translate.writable(value)]
        else:
            out.append(translate.readable(token))
    if not any(t == "--ledger" or t.startswith("--ledger=") for t in args):
        out += ["--ledger", translate.writable(str(_default_ledger(command, args, cwd)))]
    # The commit is read on the host, so it is the same for every backend (spec section 3).
    return Plan(repo, tuple(out), translate.inside(cwd) or MOUNT, tuple(translate.files), repo_commit(repo))


def _command(args: Sequence[str]) -> str:
    if not args or args[0] not in COMMANDS:
        raise UsageError("sandbox: give the command to run after --: physverify sandbox -- confirm|replay ...")
    if args[0] == "confirm" and len(args) > 1 and args[1] == "init":
        raise UsageError("sandbox: confirm init writes a template into the repository; run it outside the sandbox")
    return args[0]


def _default_ledger(command: str, args: Sequence[str], cwd: Path) -> Path:
    """Return the ledger the command would use without --ledger (cli.py; replay.default_ledger)."""
    if command == "confirm":
        return cwd / DEFAULT_LEDGER
    from physverify.config import load_config
    from physverify.replay import DEFAULT_CLAIMS_DIR, default_ledger

    parsed = _inner_args(args)
    folders = list(parsed.paths) if parsed is not None else []
    pre_commit, claims_option = (parsed.pre_commit, parsed.claims) if parsed is not None else (False, None)
    first = folders[0] if folders and not pre_commit else claims_option or DEFAULT_CLAIMS_DIR
    return default_ledger(load_config(cwd / first))


def _inner_args(args: Sequence[str]) -> argparse.Namespace | None:
    """The inner command's arguments as physverify's own parser reads them, or None when it refuses them.

    The parser is cli.py's, so no copy of confirm's or replay's options lives here; a refusal
    is left to the command inside, which says what is wrong in its own words.
    """
    from physverify.cli import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return build_parser().parse_args(list(args))
    except SystemExit:
        return None


def _outer_timeout(args: Sequence[str]) -> float | None:
    """Return the outer limit for ``args``: a confirm's own --timeout plus GRACE_S; replay has none."""
    parsed = _inner_args(args)
    if args[0] != "confirm" or parsed is None:
        return None
    from physverify.confirm import parse_timeout

    try:
        return parse_timeout(parsed.timeout) + GRACE_S
    except UsageError:  # a bad --timeout: the command inside refuses it with its own message
        return None


class _Translator:
    """Maps host paths in the arguments to the paths the command sees inside."""

    def __init__(self, repo: Path, cwd: Path) -> None:
        self.repo, self.cwd = repo, cwd
        self.cwd_inside = self.inside(cwd) is not None
        self.files: list[WritableFile] = []

    def inside(self, host: Path) -> str | None:
        """Return where the host path ``host`` is seen inside, or None when it is outside the repository."""
        resolved = host.resolve()
        if resolved == self.repo:
            return MOUNT
        if self.repo in resolved.parents:
            return f"{MOUNT}/{resolved.relative_to(self.repo).as_posix()}"
        return None

    def readable(self, token: str) -> str:
        """Return ``token`` with a host path in it (or after ``--opt=``) translated."""
        if token.startswith("-"):
            name, eq, value = token.partition("=")
            return f"{name}={self.readable(value)}" if eq and value and not value.startswith("-") else token
        path = Path(token)
        if not path.is_absolute() and self.cwd_inside:
            return token  # relative to the working folder, which is the same place inside
        host = path if path.is_absolute() else self.cwd / path
        if not host.exists():
            return token  # not a path (a git ref, a number, a format name)
        mapped = self.inside(host)
        if mapped is None:
            raise UsageError(f"sandbox: {token} is outside the repository {self.repo}; "
                             "move it into the repository or give a wider --repo")
        return mapped

    def writable(self, value: str) -> str:
        """Return the inside path of the file ``value`` (bound read-write on its own), or '-'."""
        if value == "-":
            return value
        host = (self.cwd / value).resolve()
        if host.is_dir() or not host.parent.is_dir():
            raise UsageError(f"sandbox: {value}: give a file in an existing folder for the ledger or output")
        for known in self.files:
            if known.host == host:
                return known.inside
        mapped = self.inside(host)
        inside = mapped if mapped is not None else f"{OUT_MOUNT}/{len(self.files)}/{host.name}"
        self.files.append(WritableFile(host, inside))
        keep = mapped is not None and self.cwd_inside and not Path(value).is_absolute()
        return value if keep else inside


# --- the backends: each builds one command line ----------------------------------------
def docker_argv(plan: Plan, limits: Limits, *, image: str, name: str, engine: str = "docker") -> list[str]:
    """Return the docker (or podman) command line that runs ``plan`` in ``image``."""
    uid, gid = os.getuid(), os.getgid()
    argv = [engine, "run", "--rm", "--init", "--name", name, "--network", "none", "--read-only",
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


def bwrap_argv(plan: Plan, limits: Limits, *, python: Sequence[Path] = (), executable: str = "") -> list[str]:
    """Return the bubblewrap command line that runs ``plan`` with the host's Python."""
    argv = ["bwrap", "--unshare-user", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--disable-userns",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
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
    return argv + ["--chdir", plan.cwd, "--", executable or sys.executable, "-m", "physverify", *plan.args]


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
        return subprocess.run(argv, capture_output=True, timeout=_ENGINE_PROBE_S).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# --- running ---------------------------------------------------------------------------
def sandbox(
    args: Sequence[str],
    *,
    backend: str = "auto",
    memory: str = DEFAULT_MEMORY,
    pids: int = DEFAULT_PIDS,
    repo: Path | None = None,
    image: str | None = None,
    timeout_s: float | None = None,
) -> SandboxRun:
    """``physverify sandbox``: run confirm or replay ``args`` in a sandbox; return its exit code and notes."""
    if pids < 0:
        raise UsageError(f"--pids {pids}: give a positive number of processes (0: no limit)")
    limits = Limits(parse_size(memory), pids)
    cwd = Path.cwd()
    plan = make_plan(args, repo=(repo or find_repo(cwd)), cwd=cwd)
    outer = timeout_s if timeout_s is not None else _outer_timeout(plan.args)
    image = image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
    chosen = choose_backend(backend, image)
    created = [f.host for f in plan.writable if not f.host.exists()]
    for path in created:  # a bind needs its source; an unused one is removed again below
        path.touch()
    try:
        if chosen == "bwrap":
            return _run_bwrap(plan, limits, outer)
        return _run_engine(chosen, plan, limits, outer, image)
    finally:
        for path in created:
            if path.exists() and path.stat().st_size == 0:
                path.unlink()


def _run_bwrap(plan: Plan, limits: Limits, outer: float | None) -> SandboxRun:
    from physverify import _cgroup  # POSIX only (resource): imported when bwrap runs

    argv = bwrap_argv(plan, limits, python=python_paths())
    with _cgroup.limited(limits.memory_bytes, limits.pids) as group:
        code, timed_out = _wait(subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=group.enter), outer,
                                lambda proc: proc.kill())
    return SandboxRun(code, "bwrap", tuple(argv), timed_out, group.notes + _timeout_notes(outer, timed_out))


def _run_engine(engine: str, plan: Plan, limits: Limits, outer: float | None, image: str) -> SandboxRun:
    if not _answers([engine, "image", "inspect", image]):
        raise _no_image(engine, image)
    name = f"physverify-sandbox-{uuid.uuid4().hex[:12]}"
    argv = BACKENDS[engine](plan, limits, image=image, name=name)
    # Killing the client does not stop the container, so the engine is told by name.
    def stop(proc: subprocess.Popen[bytes]) -> None:
        if not _answers([engine, "kill", name]):
            proc.kill()

    code, timed_out = _wait(subprocess.Popen(argv, stdin=subprocess.DEVNULL), outer, stop)
    notes = (f"{engine}: memory {limits.memory_bytes} bytes and {limits.pids or 'unlimited'} processes "
             "(the container's cgroup), no network, repository read-only",)
    return SandboxRun(code, engine, tuple(argv), timed_out, notes + _timeout_notes(outer, timed_out))


def _wait(proc: subprocess.Popen[bytes], outer: float | None,
          stop: Callable[[subprocess.Popen[bytes]], object]) -> tuple[int, bool]:
    """Return (exit code, timed out) of ``proc``, stopping it at ``outer`` seconds or on Ctrl-C."""
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


def _timeout_notes(outer: float | None, timed_out: bool) -> tuple[str, ...]:
    if not timed_out:
        return ()
    return (f"the sandbox run did not finish within {outer:g} s and was ended with everything in it; "
            "no ledger line was written for it",)
