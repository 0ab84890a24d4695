"""The baseline a replay is judged against, and the change's own memory of verdicts (DESIGN.md, "Replay: the gate").

The baseline is the ledger as committed at --baseline REF (default HEAD): the latest line per
claim, read once before anything runs; only outside git, or before the ledger was ever
committed, is it the working ledger as the run found it. Where the baseline commit keeps the
ledger is that commit's own setting (``committed_ledger``). A change's own ledger (the one its
commit holds, or the one staged in the hook) is read too, so a line the change edited or
dropped is judged (``rules.edited_memory``, ``rules.staged_line``) instead of trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from physverify.errors import PhysverifyError, UsageError
from physverify.gate import ledger, repo, rules as gate
from physverify.gate.config import CONFIG_NAME, Config, ledger_setting, pyproject_ledger_setting


@dataclass(frozen=True)
class Baseline:
    """The latest line per claim key the run is judged against, where it came from, and reader warnings."""

    latest: Mapping[str, Mapping[str, Any]]
    ref: str | None  # the commit it was read at; None: the working ledger (outside git, never committed)
    problems: tuple[str, ...] = ()
    source: repo.Committed | None = None  # the committed ledger it was read from
    path: Path | None = None  # where that ledger is in the tree (the baseline commit's own setting)
    followed: Mapping[str, str] = field(default_factory=dict)  # a renamed claim's key -> its key in the baseline
    working: Mapping[str, Mapping[str, Any]] | None = None  # the working ledger's latest lines, when read already
    working_id: str | None = None  # git's blob id of the working ledger's bytes ``working`` was read from
    head_copy: repo.HeadCopy | None = None  # the working ledger, found to hold HEAD's bytes (for the dirty flag)


Blob = tuple[repo.Committed | None, str | None]  # a committed ledger and the ref it was read at (committed_blob)


@dataclass(frozen=True)
class LedgerSource:
    """Where the baseline commit keeps the ledger, its blob there, and why that commit's setting was not used."""

    path: Path
    blob: Blob
    warnings: tuple[str, ...] = ()


def locate_ledger(first: Config, target: Path, explicit: bool, ref: str | None,
                  checkouts: repo.Checkouts | None = None) -> LedgerSource:
    """The committed ledger a run is judged against: ``committed_ledger``'s place, and its blob there."""
    path, warnings = committed_ledger(first, target, explicit, ref, checkouts)
    return LedgerSource(path, committed_blob(path, ref, checkouts), tuple(warnings))


def committed_blob(at: Path, ref: str | None, checkouts: repo.Checkouts | None = None) -> Blob:
    """The ledger file ``at`` as committed at ``ref`` (default HEAD), and the ref it was read at.

    ``ref`` given: a UsageError when it names no commit; the blob is None when that commit
    has no file there. No ref: (None, None) outside git, before the first commit, or when
    HEAD has no ledger there (the baseline is then the working ledger).
    """
    if ref is not None:
        return repo.blob_at(at, ref, checkouts), ref
    found = repo.blob_at_head(at, checkouts)
    return found, ("HEAD" if found is not None else None)


def load_baseline(ledger_path: Path, ref: str | None, committed_path: Path | None = None, *,
                  blob: Blob | None = None, checkouts: repo.Checkouts | None = None) -> Baseline:
    """The ledger the run is judged against, read once before anything runs.

    ``ref`` given: the ledger as committed there (none there: every claim is new). No
    ref: as committed at HEAD, or the working ledger outside git or before it was ever
    committed. ``committed_path`` is where the ledger is in the commit (default: where
    this run writes it); the committed blob is streamed, and only the latest line per
    claim is kept (issue 21, item 11). When the ledger stays where it was committed, the
    working file is read first, its blob id computed in the same pass: holding the
    committed bytes (the usual case), it is the baseline, and git's copy is not read at all
    (issue 19); otherwise it is what ``recorded_lines`` needs, and the blob is read as well.
    ``blob`` is ``committed_blob(at, ref)`` when the caller looked it up already.
    """
    at = committed_path or ledger_path
    found, used = blob if blob is not None else committed_blob(at, ref, checkouts)
    if used is None:
        read = ledger.read_latest(ledger_path)
        return Baseline(read.latest, None, tuple(read.problems))
    name = f"{at}@{used}"
    working = None
    if found is not None and at == ledger_path:
        working = ledger.read_latest(ledger_path, name, object_hash=found.object_hash)
        if working.object_id == found.hexsha:  # the same bytes: the same lines, the same problems, the same names
            copy = None
            if ref is None and found.commit is not None and working.file_stat is not None:
                copy = repo.HeadCopy(ledger_path.absolute(), working.file_stat, working.read_ns, found.commit)
            return Baseline(working.latest, used, tuple(working.problems), found, at, working=working.latest,
                            working_id=working.object_id, head_copy=copy)
    read = ledger.latest_of_chunks(found.chunks if found is not None else tuple, name)  # the one tolerant reader
    return Baseline(read.latest, used, tuple(read.problems), found, at,
                    working=working.latest if working is not None else None,
                    working_id=working.object_id if working is not None else None)


def committed_ledger(first: Config, target: Path, explicit: bool, ref: str | None,
                     checkouts: repo.Checkouts | None = None) -> tuple[Path, list[str]]:
    """Where the baseline commit keeps the ledger: its own settings' ``ledger``, else its default.

    A change that moves the ledger in physverify.yaml (or [tool.physverify]) must not move the
    gate's memory with it (issue 21, item 9), so the commit's copies decide, in the order of
    the settings: physverify.yaml, then pyproject.toml. A --ledger the caller gives is the
    caller's choice, kept. A copy that cannot be read gives a warning and ``target``.
    """
    if explicit:
        return target, []
    yaml_copy = first.folder / CONFIG_NAME
    readers = [(yaml_copy, lambda text, name: ledger_setting(first.folder, text, name))]
    if first.pyproject is not None:
        root = first.pyproject.parent
        readers.append((first.pyproject, lambda text, name: pyproject_ledger_setting(root, text, name)))
    for where, read in readers:
        try:
            setting = _committed_setting(where, ref, read, checkouts)
        except UsageError:
            raise  # a ref that names no commit: the same error the ledger's reading gives
        except (PhysverifyError, UnicodeDecodeError) as exc:
            return target, [f"{where}: its committed copy cannot give the baseline's ledger ({exc}); reading the "
                            f"baseline from {target}"]
        if setting is not None:
            return setting, []
    return first.folder / ledger.DEFAULT_LEDGER, []  # no setting in that commit: its default place


def _committed_setting(where: Path, ref: str | None, read: Callable[[str, Path], Path | None],
                       checkouts: repo.Checkouts | None) -> Path | None:
    """What ``read`` finds in the copy of ``where`` that commit ``ref`` (default HEAD) holds; None without one."""
    found = repo.blob_at(where, ref, checkouts) if ref is not None else repo.blob_at_head(where, checkouts)
    if found is None:
        return None
    if found.size > (1 << 20):
        raise PhysverifyError(f"{where}@{found.ref}: larger than 1 MiB")
    return read(b"".join(found.chunks()).decode("utf-8"), Path(f"{where}@{found.ref}"))


def change_memory(target: Path, ref: str | None, blob: Blob, baseline: Baseline,
                  checkouts: repo.Checkouts | None = None) -> Mapping[str, Mapping[str, Any]] | None:
    """The latest line per claim in the ledger the checked-out commit holds, when --baseline names another
    commit whose ledger differs (a pull request against its base; empty when that commit deleted it); else None.

    That ledger is the change's own addition to the gate's memory: merged, it is the next
    change's baseline, so a line in it that this run does not reproduce is judged
    (``gate.edited_memory``). Read only when its blob differs from the baseline's, and not
    read again when the working ledger ``load_baseline`` read holds the same bytes (a CI
    checkout: the usual case).
    """
    if ref is None:
        return None
    try:
        head = repo.blob_at_head(target, checkouts)
    except PhysverifyError:  # not a file at HEAD: the next run's baseline refuses it, nothing to compare here
        return None
    if head is None:  # deleted: every baseline line is dropped
        return {} if blob[0] is not None else None
    if blob[0] is not None and head.hexsha == blob[0].hexsha:
        return None
    return _latest_lines(head, baseline, f"{target}@HEAD")


def _latest_lines(found: repo.Committed, baseline: Baseline, name: str) -> Mapping[str, Mapping[str, Any]]:
    """The latest line per claim of the ledger blob ``found``: the working ledger's reading when it holds the
    same bytes (``load_baseline`` read it already; a CI checkout, or the hook under pre-commit, which stashes
    what is not staged), else ``found`` streamed from git."""
    if baseline.working is not None and baseline.working_id == found.hexsha:
        return baseline.working
    return ledger.latest_of_chunks(found.chunks, name).latest


NOT_STAGED: tuple[bool, repo.Committed | None] = (False, None)


def staged_ledger(target: Path, checkout: repo.Checkout, changed: Collection[str],
                  head: repo.Committed) -> tuple[bool, repo.Committed | None]:
    """Whether the hook was given the ledger as staged with content other than HEAD's, and that content (None:
    staged as deleted, or as something that is not a file). ``changed``: the files of the
    change in ``checkout`` (the hook's staged files).

    Its lines are what the commit would record. A hook-stopped `git commit -am` leaves the
    line it wrote in the working ledger and the code unstaged, so the next commit can hold
    the line without the code it was written from (``gate.staged_line``).
    """
    key = checkout.relative(target)
    if key is None or key not in changed or checkout.repo is None:
        return NOT_STAGED
    inside = checkout.repo.working_tree_dir and repo.relative_key(target, Path(checkout.repo.working_tree_dir))
    if not inside:
        return NOT_STAGED
    found = repo.blob_staged(checkout.repo, inside)
    return NOT_STAGED if found is not None and found.hexsha == head.hexsha else (True, found)


def staged_memory(staged: repo.Committed | None, baseline: Baseline) -> Mapping[str, Mapping[str, Any]]:
    """The latest line per claim in the staged ledger (``staged_ledger``; none when staged as deleted)."""
    return {} if staged is None else _latest_lines(staged, baseline, f"{staged.blob.path}@index")


def edited_claims(memory: Mapping[str, Mapping[str, Any]] | None, baseline: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The claims whose latest verdict the change's own ledger (``change_memory``) moved from the baseline's,
    or whose baseline line it dropped."""
    if memory is None:
        return set()
    moved = {key for key, line in memory.items() if line.get("verdict") != (baseline.get(key) or {}).get("verdict")}
    return moved | {key for key in baseline if key not in memory}


def memory_verdict(memory: Mapping[str, Mapping[str, Any]] | None, key: str, followed: Mapping[str, str]) -> str | None:
    """The claim's latest verdict in the change's own ledger (under its key, or the key it was renamed from);
    ``gate.DROPPED`` when that ledger has no line for it; None when there is no such ledger."""
    if memory is None:
        return None
    line = memory.get(key)
    if line is None and key in followed:
        line = memory.get(followed[key])
    if line is None:
        return gate.DROPPED
    verdict = line.get("verdict")
    return verdict if isinstance(verdict, str) else None


def recorded_lines(ledger_path: Path, baseline: Baseline) -> Mapping[str, Mapping[str, Any]]:
    """The working ledger's latest line per claim: what a line is compared with before it is written.

    Read once: ``load_baseline`` read it already whenever a committed ledger is where this
    run writes (and when it holds the committed bytes, it is the baseline itself, issue 21,
    item 11); only a ledger never committed there is read here.
    """
    if baseline.working is not None:
        return baseline.working
    return ledger.read_latest(ledger_path).latest


def baseline_note(baseline: Baseline, target: Path, checkouts: repo.Checkouts | None = None) -> list[str]:
    """The note that a ledger in git but never committed is no memory yet (the gate judges against nothing)."""
    opened = repo.open_repo(target.parent) if checkouts is None else checkouts.for_folder(target.parent).repo
    if baseline.ref is None and opened is not None:
        return [f"{target}: not committed yet, so the baseline is the ledger as this run found it; "
                "commit it: the committed ledger is the gate's memory"]
    return []
