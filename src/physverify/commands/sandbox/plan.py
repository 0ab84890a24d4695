"""The plan of a sandbox run: what runs inside, which host files are bound writable, and its outer limit.

``sandbox.py`` turns a Plan into a backend's command line and runs it; this module decides
what goes into the Plan from the values cli.py parsed (issue 10: the sandbox receives values,
it does not parse). A writable bind is a way out of the sandbox, so every such file is checked
here (``writable_path``) and a repository never chooses one outside its claims folder
(issue 13; sandbox/README.md, "The writable files").
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from physverify.gate import settings
from physverify.commands.sandbox.defaults import GRACE_S
from physverify.errors import UsageError
from physverify.gate.ledger import DEFAULT_LEDGER
from physverify.isolation.privatetmp import ASK, CLAIM_NS_ENV

if TYPE_CHECKING:
    from physverify.gate.config import Config

MOUNT = "/repo"  # the repository inside; PHYSVERIFY_REPO points here
OUT_MOUNT = "/out"  # writable files that live outside the repository
COMMANDS = ("confirm", "replay")
CLAIM_GRACE_S = 15.0  # added per claim of a replay to its --timeout (its child's start and end)
# The options whose value is a file physverify writes: they are the only writable places.
_WRITE_OPTIONS = {"confirm": ("--ledger", "--json"), "replay": ("--ledger", "--output", "--report")}
# The results among them: written inside into a file of the runner's own (``staging``), sealed, and
# copied to the file the caller named only once the seal holds (run.py, ``_deliver``).
_STAGED = ("--json", "--output", "--report")


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
    ledger: Path | None = None  # the ledger on the host, after the checks of writable_path
    sealed: bool = False  # the host sends a key on standard input and reads only a result sealed with it
    outputs: tuple[tuple[Path, Path], ...] = ()  # (the staged file bound inside, the caller's file) of each result

    def env(self) -> dict[str, str]:
        """Return the variables physverify reads inside (spec sections 3 and 5)."""
        # No user site and no start-up file: every claim of a run shares the HOME inside (child.interpreter).
        env = {settings.REPO_ENV: MOUNT, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
               CLAIM_NS_ENV: ASK}  # each claim its own /tmp, where the kernel allows it (isolation/privatetmp.py)
        if self.commit:
            env[settings.REPO_COMMIT_ENV] = self.commit
        if self.sealed:
            from physverify.commands.sandbox.seal import SEAL_ENV

            env[SEAL_ENV] = "stdin"
        return env


# --- the command inside ---------------------------------------------------------------
@dataclass(frozen=True)
class Inner:
    """The command to run inside, as cli.py parsed it: its own arguments and the values the sandbox needs.

    cli.py parses with physverify's own parser (no abbreviations), so an option the sandbox
    looks for here is exactly the option the command inside reads.
    """

    args: tuple[str, ...]  # as given, the command's name first
    command: str | None
    folders: tuple[str, ...] = ()  # replay: the claims folders (empty: claims)
    timeout: str | None = None  # the command's own --timeout as given
    jobs: str | None = None  # replay's --jobs as given


def make_plan(inner: Inner, *, repo: Path, cwd: Path, staging: Path | None = None) -> Plan:
    """Return the Plan for ``physverify sandbox -- ARGS`` run from ``cwd`` on ``repo``.

    With ``staging`` (a folder of the runner's own), a result file the caller names is not bound
    itself: a new file in ``staging`` is, and ``Plan.outputs`` pairs the two.
    """
    from physverify.gate.repo import commit as repo_commit

    command = _command(inner)
    repo, cwd = repo.resolve(), cwd.resolve()
    translate = _Translator(repo, cwd, staging)
    out: list[str] = [command]
    rest = list(inner.args[1:])
    writes = _WRITE_OPTIONS[command]
    named: dict[str, Path | None] = {}  # option -> the host file bound for it
    while rest:
        token = rest.pop(0)
        name, eq, value = token.partition("=")
        if name in writes and (eq or rest):
            value = value if eq else rest.pop(0)
            fmt, path = _report_value(value) if name == "--report" else ("", value)  # only its path is bound
            arg, named[name] = translate.writable(path, name)
            out += [name, f"{fmt}={arg}" if name == "--report" else arg]
        else:
            out.append(translate.readable(token))
    if "--ledger" not in named:  # made explicit, so the command inside writes only where it is bound
        arg, named["--ledger"] = translate.default_ledger(*_default_ledger(inner, cwd, repo))
        out += ["--ledger", arg]
    # The commit is read on the host, so it is the same for every backend (spec section 3), with
    # git told to run nothing the received .git/config names (issue 21, item 7).
    return Plan(repo, tuple(out), translate.inside(cwd) or MOUNT, tuple(translate.files),
                repo_commit(repo, untrusted=True), named["--ledger"], outputs=tuple(translate.outputs))


def _report_value(value: str) -> tuple[str, str]:
    """--report FORMAT=PATH split in two; a UsageError without the '='."""
    fmt, eq, path = value.partition("=")
    if not eq or not path:
        raise UsageError(f"sandbox: --report {value!r}: give FORMAT=PATH, e.g. --report junit=replay.xml")
    return fmt, path


def _command(inner: Inner) -> str:
    if inner.command not in COMMANDS or not inner.args or inner.args[0] != inner.command:
        raise UsageError("sandbox: give the command to run after --: physverify sandbox -- confirm|replay ...")
    if inner.command == "confirm" and inner.args[1:2] == ("init",):
        raise UsageError("sandbox: confirm init writes a template into the repository; run it outside the sandbox")
    return inner.command


def _first_folder(inner: Inner, cwd: Path) -> Path:
    from physverify.gate.replay import DEFAULT_CLAIMS_DIR

    return cwd / (inner.folders[0] if inner.folders else DEFAULT_CLAIMS_DIR)


def _default_ledger(inner: Inner, cwd: Path, repo: Path) -> tuple[Path, Path, str]:
    """Return (the ledger, the claims folder it must stay in, where it was chosen) without --ledger."""
    from physverify.gate.replay import default_ledger

    if inner.command == "confirm":
        return cwd / DEFAULT_LEDGER, cwd, "the default"
    config = _host_config(_first_folder(inner, cwd), repo)
    chosen = f"{config.origin('ledger')}: ledger" if config.ledger is not None else "the default"
    return default_ledger(config), config.folder, chosen


def _host_config(folder: Path, repo: Path) -> Config:
    """Return the claims folder's Config, read on the host: never through a link the repository holds.

    A committed ``physverify.yaml -> ~/.config/...`` would make the host read one of the
    caller's files and quote its keys in an error, which the Action prints to a public log.
    """
    from physverify.gate.config import CONFIG_NAME, PYPROJECT_NAME, load_config

    if folder.is_dir():
        writable_path(folder, repo, f"the claims folder {folder}", kind="folder")
    for settings_file in (folder / CONFIG_NAME, repo / PYPROJECT_NAME):
        if settings_file.is_symlink():
            raise UsageError(f"sandbox: {settings_file} is a symbolic link; the sandbox reads no {settings_file.name} "
                             "through a link")
    return load_config(folder)


def outer_limit(inner: Inner, *, cwd: Path, repo: Path) -> float:
    """Return the outer limit of a run, in seconds, enforced from the host (sandbox/README.md, "Time").

    A confirm gets its own --timeout plus GRACE_S. A replay runs its claims in rounds of
    --jobs, each claim within its --timeout (physverify.yaml's, else the default), so it gets
    rounds x (timeout + CLAIM_GRACE_S) + GRACE_S: a claim that stops or kills the process
    enforcing its own limit (issue 13) still cannot keep the run going past this.
    """
    from physverify.gate.replay import discover

    if inner.command != "replay":
        return settings.wait_limit(_seconds(inner.timeout, settings.DEFAULT_TIMEOUT_S)) + GRACE_S
    folders = [cwd / f for f in inner.folders] or [_first_folder(inner, cwd)]
    configs = [_host_config(folder, repo) for folder in folders if folder.is_dir()]
    if not configs:  # no such folder: the command inside says so at once
        return GRACE_S
    claims = sum(len(discover(c.folder, c.exclude)) for c in configs)
    run = _settings(inner, configs[0])  # as replay chooses them
    return -(-claims // run.jobs) * (settings.wait_limit(run.timeout_s) + CLAIM_GRACE_S) + GRACE_S


def _settings(inner: Inner, first: Config) -> settings.RunSettings:
    """The run's timeout and jobs as the replay inside resolves them; a bad flag counts as not given (refused inside)."""
    flags = {"timeout_s": inner.timeout, "jobs": inner.jobs}
    for name in list(flags):
        try:
            settings.resolve({name: flags[name]}, first)
        except UsageError:
            flags[name] = None
    return settings.resolve(flags, first)


def _seconds(given: str | None, default: float) -> float:
    """Return ``given`` as a timeout, else ``default``; a bad one is refused inside, in its own words."""
    try:
        return settings.parse_timeout(given) if given is not None else default
    except UsageError:
        return default


class _Translator:
    """Maps host paths in the arguments to the paths the command sees inside."""

    def __init__(self, repo: Path, cwd: Path, staging: Path | None = None) -> None:
        self.repo, self.cwd, self.staging = repo, cwd, staging
        self.cwd_inside = self.inside(cwd) is not None
        self.files: list[WritableFile] = []
        self.outputs: list[tuple[Path, Path]] = []

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

    def writable(self, value: str, option: str) -> tuple[str, Path | None]:
        """Return the argument for the file ``value`` the caller named (bound read-write on its own) and its host path."""
        if value == "-":
            return value, None
        host = writable_path(self.cwd / value, self.repo, f"{option} {value}")
        if self.staging is not None and option in _STAGED:
            staged = self.staging / f"{len(self.outputs)}-{host.name}"
            self.outputs.append((staged, host))
            return self._bind(staged), host
        keep = self.cwd_inside and not Path(value).is_absolute() and self.repo in host.parents
        inside = self._bind(host)
        return (value if keep else inside), host

    def default_ledger(self, ledger: Path, folder: Path, chosen: str) -> tuple[str, Path]:
        """Return the inside path of the ledger the command uses without --ledger, which the repository chose.

        It must stay inside the claims folder (issue 13: a physverify.yaml naming
        ../.git/hooks/post-checkout made the sandbox bind a git hook read-write).
        """
        host = writable_path(ledger, self.repo, f"the ledger {ledger} ({chosen})")
        home = writable_path(folder, self.repo, f"the claims folder {folder}", kind="folder")
        if home not in host.parents:
            raise UsageError(f"sandbox: the ledger {ledger} ({chosen}) is outside the claims folder {folder}; "
                             "inside the sandbox a ledger elsewhere must be named on the command line with --ledger")
        return self._bind(host), host

    def _bind(self, host: Path) -> str:
        for known in self.files:
            if known.host == host:
                return known.inside
        mapped = self.inside(host)
        inside = mapped if mapped is not None else f"{OUT_MOUNT}/{len(self.files)}/{host.name}"
        self.files.append(WritableFile(host, inside))
        return inside


def control_character(text: str) -> str | None:
    """Return the first control character or line separator in ``text``, or None.

    Such a name in a path the runner writes into its own files ($GITHUB_OUTPUT, a log line)
    could start a line of its own there (issue 13).
    """
    return next((c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)


def writable_path(path: Path, repo: Path, what: str, *, kind: str = "file") -> Path:
    """Return the real path of ``path``, for a file the sandbox binds read-write (or its claims folder).

    Refused (UsageError): a symbolic link inside ``repo`` anywhere on the way or as the file
    itself, a ``.git`` folder on the way, a file that is not a regular file or has other hard
    links, a file whose folder does not exist, a name with a control character. A symbolic link outside the repository (the caller's own
    folders) is followed. Nothing is created here.
    """
    bad = control_character(str(path))
    if bad is not None:
        raise UsageError(f"sandbox: {what!r}: the name holds the control character U+{ord(bad):04X}; rename it")
    # Walked one name at a time, '..' taken physically, so no lexical shortcut skips a link.
    current, parts, hops = Path("/"), list(path.absolute().parts[1:]), 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            current = current.parent
            continue
        if part == ".git":
            raise UsageError(f"sandbox: {what}: a file inside a .git folder is never bound writable")
        step = current / part
        if step.is_symlink():
            if not parts or repo in step.parents or hops > 40:
                raise UsageError(f"sandbox: {what}: {step} is a symbolic link; the sandbox binds no file "
                                 "writable through a link, name the real path")
            hops += 1
            target = Path(os.readlink(step))
            current = Path("/") if target.is_absolute() else current
            parts = list(target.parts[1:] if target.is_absolute() else target.parts) + parts
            continue
        current = step
    if kind == "folder":
        if not current.is_dir():
            raise UsageError(f"sandbox: {what}: no such folder")
    elif not current.parent.is_dir() or (current.exists() and not current.is_file()):
        raise UsageError(f"sandbox: {what}: give a regular file in an existing folder for the ledger or output")
    elif current.exists() and current.lstat().st_nlink > 1:  # a hard link reaches the same file by another name
        raise UsageError(f"sandbox: {what}: the file has other hard links; the sandbox binds only a file with one name")
    return current
