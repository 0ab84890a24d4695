"""The repository a claim lives in: root, claim key, commit, files at a ref, changed files.

Every question physverify asks git goes through this module (GitPython, never ``git``
through subprocess): confirm and replay for the root, key and commit of a ledger line,
replay for the ledger as committed at its baseline and the claim files that existed
there, affected for the changed files, the Action for a baseline it must fetch, the
sandbox for the checkout it mounts.

Inside a pre-commit hook, git exports variables that point at the commit being made:
``GIT_INDEX_FILE`` names a temporary index for ``git commit -a`` or a partial commit,
and hooks in submodules or worktrees also see ``GIT_DIR`` and ``GIT_WORK_TREE``. A
GitPython call inherits them, and so would a claim's child that runs git itself. So every
Repo opened here has those variables pinned to its own files, and ``child_env`` drops
them from the environment a claim runs in.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from types import SimpleNamespace
from typing import Any, NamedTuple

from physverify.errors import PhysverifyError, UsageError
from physverify.gate.settings import sandbox_commit, sandbox_repo
from physverify.text import short_repr

# The variables git itself treats as local to one repository: `git rev-parse --local-env-vars`
# prints this list (git 2.39). A child given any of them would work on the hook's repository.
LOCAL_GIT_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) without git's repository-local variables, for a claim's child."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if k not in LOCAL_GIT_VARS and not k.startswith("GIT_CONFIG_KEY_")
            and not k.startswith("GIT_CONFIG_VALUE_")}


def open_repo(folder: Path) -> Any:
    """The GitPython Repo holding ``folder`` (its git variables pinned to its own files), or None outside git."""
    try:
        import git  # imported here: without a git executable the import itself fails
    except ImportError:  # no git on this machine: nothing can be a checkout (spec: null)
        return None
    try:
        # GitPython reads GIT_DIR / GIT_OBJECT_DIRECTORY from os.environ while opening: a hook's
        # values would open the hook's repository instead of the one holding ``folder``.
        repo = git.Repo(folder, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, OSError):
        return None
    git_dir = Path(repo.git_dir)
    pinned = {"GIT_DIR": str(git_dir), "GIT_INDEX_FILE": str(git_dir / "index"),
              "GIT_COMMON_DIR": str(repo.common_dir), "GIT_OBJECT_DIRECTORY": str(Path(repo.common_dir) / "objects")}
    if repo.working_tree_dir is not None:
        pinned["GIT_WORK_TREE"] = str(repo.working_tree_dir)
    repo.git.update_environment(**pinned)
    return repo


def root_for(folder: Path) -> Path:
    """$PHYSVERIFY_REPO, else the git working tree holding ``folder``, else ``folder`` (spec section 3), resolved.

    Found without GitPython, as the nearest folder at or above ``folder`` that holds ``.git``
    (a folder, or the file of a worktree or submodule): replay reads the settings before it
    starts the fork server, whose start overlaps the run's own import of GitPython, and
    ``Checkouts`` finds a repository it opened already by this root before opening another.
    """
    inside = sandbox_repo()
    if inside is not None:
        return inside
    start = folder.resolve()
    for candidate in (start, *start.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return start


def claim_root(claim_path: Path, values: Mapping[str, Any] | None) -> Path:
    """The root of spec section 3 for a claim: CLAIM["repo"] (relative to the claim file), else its checkout."""
    folder = claim_path.resolve().parent
    given = values.get("repo") if values else None
    if isinstance(given, str) and given and sandbox_repo() is None:
        return root_for((folder / given).resolve())
    return root_for(folder)


def claim_key(claim_path: Path, root: Path) -> str:
    """The claim file's path relative to the repository root, POSIX separators (the ledger's key)."""
    return PurePath(os.path.relpath(claim_path.resolve(), root.resolve())).as_posix()


def relative_key(path: Path, root: Path) -> str | None:
    """``path`` relative to the repository root in POSIX form, or None when it is outside it."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def import_roots(claim_folder: Path, root: Path) -> tuple[Path, ...]:
    """Where a claim's child finds top-level modules: its folder, the repository root, src/ when present."""
    roots = [claim_folder, root]
    if (root / "src").is_dir():  # the src layout: an editable install would put it on sys.path
        roots.append(root / "src")
    return tuple(dict.fromkeys(r.resolve() for r in roots))


def commit(root: Path, *, untrusted: bool = False) -> str | None:
    """HEAD's sha (+"-dirty" when tracked files changed), $PHYSVERIFY_REPO_COMMIT, or None.

    ``untrusted``: the repository's own configuration may not make git run anything here
    (``untrusted_dirty``); the sandbox asks this on the host before the sandbox starts.
    """
    sandbox = sandbox_commit()
    if sandbox is not None:  # the container has the files but not the .git folder (sandbox/README.md)
        return sandbox
    return _commit_of(open_repo(root), untrusted=untrusted)


def head_commit(repo: Any) -> Any:
    """HEAD's commit (a GitPython Commit), or None before the first commit; read from the refs alone.

    GitPython's ``head.is_valid()`` and ``head.commit`` ask the object database for the
    object's type, which starts a ``git cat-file`` process for every Repo object and kills it
    again when the object is dropped: about 10 ms each, three times in a no-op hook (issue
    19). The commit's own data is still read from the object database when it is needed.
    """
    import git

    try:
        hexsha = git.SymbolicReference.dereference_recursive(repo, "HEAD")
    except (ValueError, OSError):  # an unborn branch, or a HEAD that names nothing: no commit yet
        return None
    return _commit_named(repo, hexsha)


def _commit_named(repo: Any, hexsha: str) -> Any:
    """The Commit of ``hexsha``, which git already said names a commit (HEAD, ``rev-parse REF^{commit}``)."""
    import git

    return git.Commit(repo, bytes.fromhex(hexsha))


def _commit_of(repo: Any, *, untrusted: bool = False, known: Iterable[HeadCopy] = ()) -> str | None:
    found = head_commit(repo) if repo is not None else None
    if found is None:  # outside git, or no commit yet
        return None
    import git

    try:
        head = str(found.hexsha)
        # Untracked files do not count: a new scratch file does not change what HEAD's code does.
        if untrusted:
            dirty = untrusted_dirty(repo)
        else:
            dirty = _dirty(repo, [relative for copy in known if (relative := copy.relative_if_unchanged(repo, head))])
    except git.GitCommandError:  # e.g. git's "dubious ownership" refusal: the state is unknown, so null
        return None
    if dirty is None:
        return None
    return head + ("-dirty" if dirty else "")


def _dirty(repo: Any, same_as_head: Iterable[str]) -> bool:
    """GitPython's ``is_dirty(index=True, working_tree=True, untracked_files=False)``, its two ``git diff``s as it
    runs them, but the working tree's without the files ``same_as_head`` names (relative to the working tree).

    Those hold HEAD's bytes, this run hashed them: git would hash them again whenever the
    index's stat of one is stale (GitPython's own ``index.add`` leaves it so), 2.5 s for a
    230 MB ledger (issue 19). The index against HEAD is compared for every file, so a
    staged change to one of them is still dirt; in the working tree, holding HEAD's bytes,
    it can differ from the index only where the index differs from HEAD.
    """
    args = ["--abbrev=40", "--full-index", "--raw"]
    if os.path.isfile(repo.index.path) and len(repo.git.diff("--cached", *args)):
        return True
    skipped = [f":(top,exclude,literal){relative}" for relative in same_as_head]
    return bool(len(repo.git.diff(*args, *(["--", *skipped] if skipped else []))))


# A file whose ctime is this close to the moment a run began reading it may have changed again
# within the file system's clock grain without its stat showing it (git's "racily clean" case).
_RACY_NS = 2 * 10**9


class HeadCopy(NamedTuple):
    """A tracked file this run read and found to hold HEAD's bytes (its git blob id is HEAD's), as it was then.

    ``stat`` is (mtime_ns, ctime_ns, size, inode, device) of the file read, ``read_ns`` the
    clock just before the reading began, ``head`` the commit whose blob it matched. Any
    later change to the file sets its ctime to a later time than ``read_ns``, so while its
    stat is still ``stat`` (and that ctime was older than the reading by more than the clock's
    grain) the file still holds those bytes.
    """

    path: Path
    stat: IndexStat
    read_ns: int
    head: str

    def relative_if_unchanged(self, repo: Any, head: str) -> str | None:
        """The file relative to ``repo``'s working tree when it still holds ``head``'s bytes; else None."""
        if head != self.head or repo.working_tree_dir is None or self.stat[1] >= self.read_ns - _RACY_NS:
            return None
        try:
            st = os.lstat(self.path)  # the path itself, not a link put in its place
        except OSError:
            return None
        now = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
        if not stat.S_ISREG(st.st_mode) or now != self.stat:
            return None
        try:  # the file's own name, its folder resolved: a link in its place is not followed to another file
            return (self.path.parent.resolve() / self.path.name).relative_to(Path(repo.working_tree_dir).resolve()).as_posix()
        except (OSError, ValueError):
            return None


# Settings of a received .git/config that make `git diff` run a command of the repository's
# choosing on the host: the fsmonitor hook (run on every index refresh), hooks, an external
# diff, and the drivers .gitattributes names (filter.X.clean runs when git hashes a stat-dirty
# file; diff.X.command and diff.X.textconv). They are overridden at command-line scope, which
# outranks every file git reads (issue 21, item 7).
_NEUTRAL = {"core.fsmonitor": "false", "core.hooksPath": os.devnull, "diff.external": "", "core.pager": "cat",
            "core.untrackedCache": "false", "core.sshCommand": "false", "core.askPass": "", "credential.helper": ""}
_DRIVER_KEYS = {"filter": ("clean", "smudge", "process"), "diff": ("command", "textconv")}
# A received partial clone (extensions.partialClone, remote.X.promisor) makes git fetch an object
# missing from the store, HEAD's tree included: the fetch runs remote.X.uploadpack through the shell,
# or an ext:: URL its config allows. Environment variables outrank every configuration file here:
# GIT_ALLOW_PROTOCOL with no real name allows no transport at all, GIT_NO_LAZY_FETCH (git 2.44)
# stops the fetch before it starts.
_NO_FETCH = {"GIT_ALLOW_PROTOCOL": "none", "GIT_NO_LAZY_FETCH": "1"}
_GIT_LIMIT_S = 60  # a config that includes a FIFO would block git's read for ever


def untrusted_dirty(repo: Any) -> bool | None:
    """Whether tracked files differ from HEAD, asked of git so that the repository's configuration runs nothing.

    None when git could not answer within its limit. Submodules count by the commit recorded
    (``--ignore-submodules=dirty``): looking inside one would read its own configuration.
    """
    import git

    drivers = _driver_names(repo)
    if drivers is None:
        return None
    env = _neutral_env(drivers)
    options = ["--quiet", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"]
    for staged in (["--cached"], []):
        status, _, _ = repo.git.execute(["git", "diff", *staged, *options], with_exceptions=False,
                                        with_extended_output=True, env=env, kill_after_timeout=_GIT_LIMIT_S)
        if status == 1:
            return True
        if status != 0:
            raise git.GitCommandError(["git", "diff", *staged], status)
    return False


def readable_credentials(workspace: Path) -> list[str]:
    """The keys of the checkout's own git configuration (``.git/config``, readable inside the sandbox) that hold an
    HTTP header git sends with every request: actions/checkout keeps the job's token there (``persist-credentials``).

    Names only, never a value; empty outside git or when git cannot answer.
    """
    found = open_repo(workspace)
    if found is None:
        return []
    status, keys = _config_names(found, r"^http\..*extraheader$", "--local")
    return keys if status == 0 else []


def _config_names(repo: Any, pattern: str, *scope: str) -> tuple[int, list[str]]:
    """git's exit status and the names (never the values) of the configuration keys matching ``pattern``, asked so
    that the repository's configuration runs nothing; status 1 is git's "no such key"."""
    status, out, _ = repo.git.execute(["git", "config", *scope, "--null", "--name-only", "--get-regexp", pattern],
                                      with_exceptions=False, with_extended_output=True, env=_neutral_env({}),
                                      kill_after_timeout=_GIT_LIMIT_S, strip_newline_in_stdout=False)
    return status, [key for key in (out or "").split("\0") if key]


def _driver_names(repo: Any) -> dict[str, set[str]] | None:
    """The filter and diff driver names every configuration file git reads defines (includes too), as git
    lists them; None when git could not list them (then nothing else is asked of it)."""
    status, keys = _config_names(repo, r"^(filter|diff)\.")
    names: dict[str, set[str]] = {"filter": set(), "diff": set()}
    for key in keys:
        section, _, rest = key.partition(".")
        name, dot, _ = rest.rpartition(".")
        if section in names and dot and name:
            names[section].add(name)
    return names if status in (0, 1) else None  # 1: no such key


def _neutral_env(drivers: Mapping[str, set[str]]) -> dict[str, str]:
    """GIT_CONFIG_COUNT/KEY/VALUE for _NEUTRAL and every driver's command keys (no quoting can break them)."""
    pairs = list(_NEUTRAL.items())
    pairs += [(f"{section}.{name}.{key}", "") for section, keys in _DRIVER_KEYS.items()
              for name in sorted(drivers.get(section, ())) if name for key in keys]
    pairs += [(f"filter.{name}.required", "false") for name in sorted(drivers.get("filter", ())) if name]
    env = {"GIT_CONFIG_COUNT": str(len(pairs)), "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", **_NO_FETCH}
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def _opened(folder: Path, checkouts: Checkouts | None) -> Any:
    """The Repo holding ``folder``: its checkout's in this run (each repository opened once), else opened now."""
    return open_repo(folder) if checkouts is None else checkouts.for_folder(folder).repo


def _require_repo(folder: Path, flag: str, ref: str, checkouts: Checkouts | None = None) -> Any:
    repo = _opened(folder, checkouts)
    if repo is None or repo.working_tree_dir is None:
        raise UsageError(f"{flag} {ref}: {folder} is not in a git repository")
    return repo


def resolve(repo: Any, ref: str, flag: str) -> Any:
    """The commit ``ref`` names in ``repo``; a one-line UsageError when it names none.

    ``rev-parse --verify`` settles every spelling git knows (HEAD~1 in a shallow clone,
    HEAD@{999} past the reflog) as git does, instead of GitPython's own ref parser, which
    raises a different exception for each.
    """
    import git

    if ref == "HEAD":  # the usual ref, read from the refs without a git process
        head = head_commit(repo)
        if head is not None:
            return head
    try:
        sha = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        return _commit_named(repo, sha.strip())
    except (git.GitCommandError, ValueError):
        shallow = " (this clone is shallow: fetch more history, e.g. fetch-depth: 0)" if _shallow(repo) else ""
        raise UsageError(f"{flag}: {short_repr(ref)} is not a commit in {repo.working_tree_dir}{shallow}") from None


def _shallow(repo: Any) -> bool:
    return (Path(repo.common_dir) / "shallow").is_file()


# The modes of a file in a tree: a regular file, an executable one. A link (120000) is a blob
# too, whose bytes are the link's target; a gitlink (160000) is a commit of another repository.
_FILE_MODES = (0o100644, 0o100755)
_CHUNK = 1 << 20


class Committed:
    """A regular file as committed at a ref: its blob, read a block at a time."""

    def __init__(self, blob: Any, ref: str, commit: str | None = None) -> None:
        self.blob = blob
        self.ref = ref
        self.commit = commit  # the sha of the commit ``ref`` named, when known

    @property
    def size(self) -> int:
        return int(self.blob.size)

    @property
    def hexsha(self) -> str:
        """git's object id of the blob (known from the tree: reading it costs nothing)."""
        return str(self.blob.hexsha)

    @property
    def object_hash(self) -> str:
        """The hash git names its objects with in this repository: "sha1", or "sha256"."""
        return _hash_name(self.hexsha)

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes, a block at a time: a large ledger is never one bytes object (issue 21, item 11)."""
        stream = self.blob.data_stream
        while chunk := stream.read(_CHUNK):
            yield bytes(chunk)


def _hash_name(hexsha: str) -> str:
    return "sha256" if len(hexsha) == 64 else "sha1"


def blob_at(path: Path, ref: str, checkouts: Checkouts | None = None) -> Committed | None:
    """``path`` as committed at ``ref`` (None when absent); UsageError outside git or for a ref that names no
    commit, PhysverifyError when the entry there is not a regular file (a gitlink, a link, a folder).
    ``checkouts``: the run's, whose repositories are opened once (the same for every function below)."""
    repo = _require_repo(path.parent, "--baseline", ref, checkouts)
    found = resolve(repo, ref, "--baseline")
    relative = relative_key(path, Path(repo.working_tree_dir))
    if relative is None:
        raise UsageError(f"--baseline {ref}: {path} is not inside the repository {repo.working_tree_dir}")
    return _committed(found, relative, ref)


def blob_at_head(path: Path, checkouts: Checkouts | None = None) -> Committed | None:
    """``path`` as committed at HEAD; None outside git, before the first commit, or when HEAD lacks it."""
    repo = _opened(path.parent, checkouts)
    head = head_commit(repo) if repo is not None and repo.working_tree_dir is not None else None
    if head is None:
        return None
    relative = relative_key(path, Path(repo.working_tree_dir))
    return None if relative is None else _committed(head, relative, "HEAD")


def blob_staged(repo: Any, relative: str) -> Committed | None:
    """The file at ``relative`` as the index of the commit being made holds it; None when that index has no
    regular file there (no entry, a link, a gitlink) or holds it in conflict. One ``git ls-files``.

    The index is the one git gives its pre-commit hook in ``$GIT_INDEX_FILE`` when that file
    is this repository's own (`git commit -a` stages into ``index.lock``, and ``.git/index``
    still lacks what it staged), else ``.git/index``.
    """
    import git

    env = {"GIT_INDEX_FILE": index} if (index := _hook_index(repo)) is not None else None
    out = bytes(repo.git.execute(["git", "--literal-pathspecs", "ls-files", "--stage", "-z", "--", relative],
                                 stdout_as_string=False, strip_newline_in_stdout=False, env=env))
    records = [record for record in out.split(b"\0") if record]
    if len(records) != 1:  # none, or the stages of a conflict: nothing staged to judge
        return None
    head, tab, name = records[0].partition(b"\t")
    fields = head.split()
    if not tab or len(fields) != 3 or fields[2] != b"0" or os.fsdecode(name) != relative:
        return None
    mode = int(fields[0], 8)
    if mode not in _FILE_MODES:
        return None
    return Committed(git.Blob(repo, bytes.fromhex(fields[1].decode("ascii")), mode, relative), "the index")


def _hook_index(repo: Any) -> str | None:
    """``$GIT_INDEX_FILE`` (relative to the top of the working tree, where git runs hooks) when it names a file
    inside ``repo``'s own git folder, else None: an index of another repository is never read for this one."""
    given = os.environ.get("GIT_INDEX_FILE")
    if not given or repo.working_tree_dir is None:
        return None
    path = Path(repo.working_tree_dir, given).resolve()  # an absolute ``given`` stays itself
    return str(path) if path.is_relative_to(Path(repo.git_dir).resolve()) and path.is_file() else None


def _committed(commit: Any, relative: str, ref: str) -> Committed | None:
    """The regular file at ``relative`` in ``commit``'s tree, None when the tree has nothing there.

    Anything else there is refused: read as a file, a gitlink or a link gave an empty or
    foreign ledger, so every claim was new and a regression passed (issue 21, item 9).
    """
    entry = _tree_entry(commit, relative)
    if entry is None:
        return None
    if entry.type != "blob" or entry.mode not in _FILE_MODES:
        kind = {"submodule": "a gitlink", "commit": "a gitlink",
                "tree": "a folder"}.get(entry.type, "a symbolic link")
        raise PhysverifyError(f"{relative}@{ref}: is {kind} in that commit, not a file; the committed ledger cannot "
                              "be read from it")
    return Committed(entry, ref, str(commit.hexsha))


def _tree_entry(commit: Any, relative: str) -> Any:
    """The entry at ``relative`` in ``commit``'s tree (a Blob, Tree or Submodule object), None when there is none.

    One ``git ls-tree`` rather than GitPython's walk of each tree on the way, which parses
    a folder of 10,000 claims in Python (issue 19).
    """
    import git

    out = commit.repo.git.execute(["git", "--literal-pathspecs", "ls-tree", "-z", "--full-tree", commit.hexsha, "--",
                                   relative], stdout_as_string=False, strip_newline_in_stdout=False)
    for record in bytes(out).split(b"\0"):
        head, tab, name = record.partition(b"\t")
        fields = head.split()
        if not tab or len(fields) != 3 or os.fsdecode(name) != relative:
            continue  # another entry the pattern matched (never, with literal pathspecs), or the end
        mode, kind, sha = int(fields[0], 8), fields[1].decode("ascii"), fields[2].decode("ascii")
        if kind == "commit":  # a gitlink: the submodule's commit, not an object of this repository
            return SimpleNamespace(type="commit", mode=mode)
        binsha = bytes.fromhex(sha)
        return git.Blob(commit.repo, binsha, mode, relative) if kind == "blob" else git.Tree(commit.repo, binsha, mode,
                                                                                             relative)
    return None


def renamed_since(root: Path, ref: str, checkouts: Checkouts | None = None) -> dict[str, str]:
    """Files renamed between ``ref`` and the working tree (git's rename detection): new key -> old key,
    both relative to ``root``. Staged and committed renames count; an untracked new file is not in git's view."""
    repo = _opened(root, checkouts)
    if repo is None or repo.working_tree_dir is None:
        return {}
    found = resolve(repo, ref, "--baseline")
    git_root = Path(repo.working_tree_dir)
    # NUL-separated, so any file name comes back as it is (GitPython's diff parser split a name holding a newline)
    out = bytes(repo.git.execute(["git", "diff", "--name-status", "-z", "-M", "--no-color", "--no-ext-diff",
                                  found.hexsha, "--"], stdout_as_string=False, strip_newline_in_stdout=False))
    renames: dict[str, str] = {}
    for was, now in _renamed(out.split(b"\0")):
        new, old = relative_key(git_root / now, root), relative_key(git_root / was, root)
        if new is not None and old is not None:
            renames[new] = old
    return renames


def _renamed(fields: list[bytes]) -> Iterator[tuple[str, str]]:
    """(old, new) of each rename in ``git diff --name-status -z`` output: a status, then one path, or two for R and C."""
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[:1] in (b"R", b"C"):
            if status[:1] == b"R" and i + 2 < len(fields):
                yield os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + 2])
            i += 3
        else:
            i += 2


def paths_at(root: Path, ref: str, keys: Iterable[str], checkouts: Checkouts | None = None) -> frozenset[str]:
    """Those of ``keys`` (relative to ``root``) that were files at ``ref``; every key outside git.

    One ``git ls-tree -r`` of the folders holding them, whatever their number: a look-up per
    key (GitPython's walk of the tree, a ``git cat-file`` each) took 93 s and 1.47 GB for a
    committed ledger naming 200,000 claims that are gone. A key is placed in the tree as a
    string (no system call per key); one leading out of the working tree was never there.
    """
    wanted = list(keys)
    if not wanted:  # every replay asks (no claim file gone, the usual case): no repository to open, no git to start
        return frozenset()
    repo = _opened(root, checkouts)
    if repo is None or repo.working_tree_dir is None or head_commit(repo) is None:
        return frozenset(wanted)
    found = resolve(repo, ref, "--baseline")
    inside = relative_key(root, Path(repo.working_tree_dir))
    if inside is None:
        return frozenset()
    in_tree = {key: place for key in wanted if (place := _tree_path(inside, key)) is not None}
    files = _files_in_tree(repo, found.hexsha, _covering_folders(in_tree.values()))
    return frozenset(key for key, place in in_tree.items() if place in files)


def _tree_path(inside: str, key: str) -> str | None:
    """``key`` (relative to the folder ``inside``, itself relative to the working tree) as a path in git's tree."""
    if not key or key.startswith("/") or "\0" in key:
        return None
    place = posixpath.normpath(posixpath.join(inside, key))
    return None if place in (".", "..") or place.startswith(("../", "/")) else place


# More folders than this are not named one by one on git's command line: the whole tree is listed instead.
_MOST_FOLDERS = 64


def _covering_folders(places: Iterable[str]) -> list[str]:
    """The fewest folders whose listing holds every path of ``places``: [] for the whole tree."""
    folders = sorted({posixpath.dirname(place) for place in places})
    kept: list[str] = []
    for folder in folders:  # sorted: a folder's subfolders follow it, so one test against the last kept will do
        if not folder:
            return []
        if kept and folder.startswith(kept[-1] + "/"):
            continue
        kept.append(folder)
    return [] if len(kept) > _MOST_FOLDERS else kept


def _files_in_tree(repo: Any, commit: str, folders: list[str]) -> set[str]:
    """The paths of the blobs (files and links) under ``folders`` (all, when empty) in ``commit``'s tree: one
    ``git ls-tree``, asked so that nothing is fetched and the repository's configuration runs nothing."""
    out = bytes(repo.git.execute(["git", "--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", commit, "--",
                                  *folders], stdout_as_string=False, strip_newline_in_stdout=False,
                                 env=_neutral_env({}), kill_after_timeout=_GIT_LIMIT_S))
    found = set()
    for record in out.split(b"\0"):
        head, tab, name = record.partition(b"\t")
        if tab and head.split(b" ")[1:2] == [b"blob"]:
            found.add(os.fsdecode(name))
    return found


def changed_since(root: Path, ref: str, checkouts: Checkouts | None = None) -> frozenset[str]:
    """Paths (POSIX, relative to ``root``) that differ between ``ref`` and the working tree, plus untracked files."""
    repo = _require_repo(root, "--changed-since", ref, checkouts)
    found = resolve(repo, ref, "--changed-since")
    status = _status(repo)  # a claim being written is usually still untracked, so those count too
    head = head_commit(repo)
    if head is not None and found.hexsha == head.hexsha:  # the usual ref: the one git status says it all
        paths = {path for _, path in status}
    else:  # the commit against the working tree: staged and unstaged edits both count
        paths = {path for code, path in status if code == "??"}
        out = repo.git.execute(["git", "diff", "--name-only", "-z", "--no-renames", "--ignore-submodules=none",
                                found.hexsha, "--"], stdout_as_string=False, strip_newline_in_stdout=False)
        paths.update(os.fsdecode(name) for name in bytes(out).split(b"\0") if name)
    git_root = Path(repo.working_tree_dir)
    if git_root.resolve() == root.resolve():
        return frozenset(paths)
    return frozenset(rel for p in paths if (rel := relative_key(git_root / p, root)) is not None)


def _status(repo: Any) -> list[tuple[str, str]]:
    """(code, path) of every path `git status` names: changed between HEAD and the index or the index and the
    working tree, and untracked ("??", each file of an untracked folder). A file staged and then set back counts
    too: that errs towards re-running. NUL-separated, so any file name comes back as it is (issue 19: one git
    process where GitPython's diff and untracked files took two, and split a name holding a newline)."""
    out = bytes(repo.git.execute(["git", "--no-optional-locks", "status", "--porcelain=v1", "-z",
                                  "--untracked-files=all", "--no-renames", "--ignore-submodules=none"],
                                 stdout_as_string=False, strip_newline_in_stdout=False))
    return [(record[:2].decode("ascii", "replace"), os.fsdecode(record[3:]))
            for record in out.split(b"\0") if len(record) > 3]


def files_as_keys(files: Iterable[str], root: Path, cwd: Path) -> frozenset[str]:
    """The given file names (relative to ``cwd``, as pre-commit passes them) as repository keys."""
    keys = (relative_key(cwd / name, root) for name in files)
    return frozenset(key for key in keys if key is not None)


def reachable(ref: str, workspace: Path) -> tuple[str | None, str | None]:
    """``ref`` when the checkout has it (fetching that one commit if missing), else None and a warning.

    actions/checkout fetches one commit by default, so a pull request's base is usually absent.
    The fetch takes only a hexadecimal object name, after ``--end-of-options``: the event's
    value as an option (``--upload-pack=...``) would run a command (issue 21, item 12).
    """
    import re

    import git

    if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", ref) is None:
        return None, f"baseline {ref!r}: not a hexadecimal object name; comparing with the ledger as committed at HEAD"
    repo = open_repo(workspace)
    if repo is None:
        return None, f"baseline {ref}: {workspace} is not a git checkout; comparing with the ledger at HEAD"
    try:
        resolve(repo, ref, "baseline")
        return ref, None
    except UsageError:
        pass
    try:
        repo.git.fetch("--no-tags", "--depth=1", "--end-of-options", "origin", ref)
        resolve(repo, ref, "baseline")
        return ref, None
    except (git.GitCommandError, UsageError):
        return None, (
            f"baseline {ref}: not in the checkout and could not be fetched (use actions/checkout with "
            "fetch-depth: 0); comparing with the ledger as committed at HEAD"
        )


# --- one checkout per repository per run ------------------------------------------------
IndexStat = tuple[int, int, int, int, int]  # (mtime_ns, ctime_ns, size, inode, device) as git's index keeps them


@dataclass
class Checkout:
    """One repository as a run sees it: resolved once, asked many times (issue 19).

    ``root`` is spec section 3's root (the working tree, $PHYSVERIFY_REPO, or the folder
    outside git); ``repo`` the GitPython Repo (None outside git). The commit, dirty state
    and the index's object ids are looked up on first use, once, whichever thread asks.
    """

    root: Path
    repo: Any = field(default=None, repr=False, compare=False)
    real_root: Path = field(default=Path(), repr=False, compare=False)  # root.resolve(), computed once
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _commit: tuple[str | None] | None = field(default=None, repr=False, compare=False)
    _index: dict[str, tuple[IndexStat, str]] | None = field(default=None, repr=False, compare=False)
    _index_mtime_ns: int = field(default=0, repr=False, compare=False)
    known: tuple[HeadCopy, ...] = field(default=(), repr=False, compare=False)  # files this run found as at HEAD

    @property
    def commit(self) -> str | None:
        """HEAD's sha (+"-dirty"), $PHYSVERIFY_REPO_COMMIT, or None: as ``commit`` gives it, computed once."""
        with self._lock:
            if self._commit is None:
                sandbox = sandbox_commit()
                self._commit = (sandbox if sandbox is not None else _commit_of(self.repo, known=self.known),)
            return self._commit[0]

    def __post_init__(self) -> None:
        if self.real_root == Path():
            self.real_root = self.root.resolve()

    def key(self, real_path: Path) -> str:
        """``claim_key`` for a path that is already resolved: the ledger's key, relative to this root."""
        inside = self.relative_real(real_path)
        return inside if inside is not None else PurePath(os.path.relpath(real_path, self.real_root)).as_posix()

    def relative(self, path: Path) -> str | None:
        """``relative_key(path, root)``, with the root resolved once for the run."""
        return self.relative_real(path.resolve())

    def relative_real(self, real_path: Path) -> str | None:
        """``relative`` for a path that is already resolved: string work, no system call (10,000 claims)."""
        text, root = str(real_path), str(self.real_root)
        if text == root:
            return "."
        prefix = root if root.endswith(os.sep) else root + os.sep
        if not text.startswith(prefix):
            return None
        return PurePath(text[len(prefix):]).as_posix() if os.sep != "/" else text[len(prefix):]

    def blob_id(self, path: Path, key: str | None = None) -> str | None:
        """The object id git's index holds for ``path`` when the file is as the index saw it; else None.

        The index is read once per run (``git ls-files --debug``, else GitPython's
        ``index.entries``), not one hash per file. A file whose stat differs from its entry (mtime, ctime, size, inode, device),
        or whose mtime is not older than the index itself (git's "racily clean" case: an
        edit to the same size in the same second as ``git add``), gets no id, so the
        caller hashes its bytes instead.
        """
        index = self._entries()
        if not index:
            return None
        key = key if key is not None else self.relative(path)
        entry = index.get(key) if key is not None else None
        if entry is None:
            return None
        try:
            st = os.lstat(path)  # a symbolic link's entry holds the link, not the file it leads to
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        seen = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
        if not _same_stat(seen, entry[0]) or st.st_mtime_ns // 10**9 >= self._index_mtime_ns // 10**9:
            return None
        return entry[1]

    def _entries(self) -> dict[str, tuple[IndexStat, str]]:
        with self._lock:
            if self._index is None:
                self._index, self._index_mtime_ns = _read_index(self.repo, self.root)
            return self._index


def _same_stat(seen: IndexStat, kept: IndexStat) -> bool:
    """Whether a file's stat matches its index entry, compared as git stores it (32-bit fields, seconds + ns)."""
    mask = 0xFFFFFFFF
    return all(a == b for a, b in zip(
        ((seen[0] // 10**9) & mask, seen[0] % 10**9, (seen[1] // 10**9) & mask, seen[1] % 10**9,
         seen[2] & mask, seen[3] & mask, seen[4] & mask),
        ((kept[0] // 10**9) & mask, kept[0] % 10**9, (kept[1] // 10**9) & mask, kept[1] % 10**9,
         kept[2] & mask, kept[3] & mask, kept[4] & mask)))


def _read_index(repo: Any, root: Path) -> tuple[dict[str, tuple[IndexStat, str]], int]:
    """Every stage-0 index entry under ``root`` as key -> (stat, hex object id), and the index file's mtime."""
    if repo is None or repo.working_tree_dir is None:
        return {}, 0
    index_path = Path(repo.git_dir) / "index"
    try:
        mtime_ns = os.stat(index_path).st_mtime_ns
        entries = _listed_entries(repo)
        if entries is None:
            entries = _gitpython_entries(repo)
    except Exception:  # noqa: BLE001 - recorded by its absence: no ids, every file is hashed itself
        return {}, 0
    base = Path(repo.working_tree_dir)
    inside = base.resolve() == root.resolve()
    found: dict[str, tuple[IndexStat, str]] = {}
    for name, stage, mode, hexsha, entry_stat in entries:
        if stage != 0 or not stat.S_ISREG(mode):  # a conflict, a link or a submodule: the file is read itself
            continue
        key = name if inside else relative_key(base / name, root)
        if key is not None:
            found[key] = (entry_stat, hexsha)
    return found, mtime_ns


_Entry = tuple[str, int, int, str, IndexStat]  # (path, stage, mode, hex object id, stat)

# One entry of `git ls-files --stage --debug -z`: "mode id stage<TAB>path<NUL>" and five lines of its stat.
_LISTED = re.compile(
    rb"([0-7]{6}) ([0-9a-f]{40}|[0-9a-f]{64}) ([0-3])\t([^\0]*)\0"
    rb"  ctime: (\d+):(\d+)\n  mtime: (\d+):(\d+)\n  dev: (\d+)\tino: (\d+)\n"
    rb"  uid: \d+\tgid: \d+\n  size: (\d+)\tflags: [0-9a-f]+\n")


def _listed_entries(repo: Any) -> list[_Entry] | None:
    """The index's entries as ``git ls-files --debug`` lists them (git reads the index in C), or None.

    git calls that listing's format one for people, free to change; so every byte of it
    must match the expected form, else the caller reads the index with GitPython instead
    (slower: 10,000 entries took most of a no-op hook's index time).
    """
    out = bytes(repo.git.execute(["git", "ls-files", "--stage", "--debug", "-z"], stdout_as_string=False,
                                 strip_newline_in_stdout=False))
    entries: list[_Entry] = []
    covered = 0
    for match in _LISTED.finditer(out):
        if match.start() != covered:
            return None
        covered = match.end()
        mode, sha, stage, name, c_s, c_ns, m_s, m_ns, dev, ino, size = match.groups()
        entries.append((os.fsdecode(name), int(stage), int(mode, 8), sha.decode("ascii"),
                        (int(m_s) * 10**9 + int(m_ns), int(c_s) * 10**9 + int(c_ns), int(size), int(ino), int(dev))))
    return entries if covered == len(out) else None


def _gitpython_entries(repo: Any) -> list[_Entry]:
    found: list[_Entry] = []
    for (name, stage), entry in repo.index.entries.items():
        (m_s, m_ns), (c_s, c_ns) = entry.mtime, entry.ctime
        found.append((name, stage, entry.mode, entry.hexsha,
                      (m_s * 10**9 + m_ns, c_s * 10**9 + c_ns, entry.size, entry.inode, entry.dev)))
    return found


class Checkouts:
    """The checkouts of one run, by folder: each repository is opened once, whatever the number of claims."""

    def __init__(self, known: Iterable[HeadCopy] = ()) -> None:
        """``known``: files the run read and found to hold HEAD's bytes (the ledger), for the commit lookups."""
        self._lock = threading.Lock()
        self._by_folder: dict[Path, Checkout] = {}
        self._by_root: dict[Path, Checkout] = {}
        self._known = tuple(known)
        self._by_text: dict[str, Checkout] = {}  # by a resolved folder's string (for_claim)

    def know(self, copies: Iterable[HeadCopy]) -> None:
        """Add files the run found to hold HEAD's bytes (the ledger); before any commit is looked up."""
        with self._lock:
            self._known += tuple(copies)
            for checkout in self._by_root.values():
                checkout.known = self._known

    def for_folder(self, folder: Path) -> Checkout:
        """The checkout holding ``folder`` (spec section 3: $PHYSVERIFY_REPO, else git's working tree, else the folder)."""
        with self._lock:
            found = self._by_folder.get(folder)  # as given first: resolving costs a system call per part
        if found is not None:
            return found
        given, folder = folder, folder.resolve()
        with self._lock:
            found = self._by_folder.get(folder)
        if found is not None:
            with self._lock:
                self._by_folder[given] = found
            return found
        with self._lock:  # a folder of a repository opened already (physverify.yaml's and pyproject.toml's)
            found = self._by_root.get(root_for(folder))
            if found is not None:
                self._by_folder[folder] = self._by_folder[given] = found
        if found is not None:
            return found
        sandbox = sandbox_repo()
        repo = open_repo(folder if sandbox is None else sandbox)
        if sandbox is not None:
            root = sandbox
        elif repo is None or repo.working_tree_dir is None:  # not in git, or a bare repository
            root, repo = folder, None
        else:
            root = Path(repo.working_tree_dir)
        with self._lock:
            checkout = self._by_root.setdefault(root, Checkout(root, repo, known=self._known))
            self._by_folder[folder] = self._by_folder[given] = checkout
        return checkout

    def for_claim(self, claim_path: Path, values: Mapping[str, Any] | None, real_path: Path | None = None) -> Checkout:
        """The checkout of spec section 3 for a claim: CLAIM["repo"] (relative to the claim file), else its folder's.

        ``real_path`` is the claim file resolved, when the caller has it (no system call then).
        """
        given = values.get("repo") if values else None
        if isinstance(given, str) and given and sandbox_repo() is None:
            real = real_path if real_path is not None else claim_path.resolve()
            return self.for_folder((real.parent / given).resolve())
        if real_path is not None:  # the folder the file really is in: its own, or where a link leads
            folder = os.path.dirname(str(real_path))  # a string key: hashing a new Path costs more than the rest
            found = self._by_text.get(folder)
            if found is None:
                found = self._by_text[folder] = self.for_folder(real_path.parent)
            return found
        # the folder of the file itself, unless the claim is a link into another folder
        return self.for_folder(claim_path.resolve().parent if _is_link(claim_path) else claim_path.parent)


def _is_link(path: Path) -> bool:
    """Whether ``path`` is a symlink; False for a name the system refuses (too long, a folder that cannot be
    entered): such a claim is recorded as one that cannot be read (spec section 3)."""
    try:
        return path.is_symlink()
    except OSError:
        return False
