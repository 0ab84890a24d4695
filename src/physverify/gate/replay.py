"""``physverify replay``: the claims gate (DESIGN.md, "Replay: the gate").

replay = discovery + baseline + ``evaluate`` for each claim (in parallel) +
the rules of rules.py + ledger writes. Each claim goes through the same isolated child
and the same verdict rules as ``confirm``; nothing here runs a claim or decides a
verdict itself, and the transitions and the gate live in rules.py.

The baseline is the ledger as committed at --baseline REF (default HEAD); only outside
git, or before the ledger was ever committed, is it the working ledger as the run found
it. A line is written when a claim's verdict differs from the working ledger's latest
line for it, so re-running never adds a line and never clears a finding.

The ledger, when no --ledger is given: the ``ledger`` key of the first claims folder's
physverify.yaml (relative to that folder), else ``confirm_ledger.jsonl`` inside the first
claims folder. Keeping it inside the claims folder keeps it a tracked file of the
repository, which the pre-commit flow needs: pre-commit only notices changes to tracked
files. timeout, jobs, ledger and fail_on come from the first folder's physverify.yaml;
exclude and expect apply to the folder whose file names them.
"""

from __future__ import annotations

import gc
import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

from physverify.gate import affected, cache, claim, discovery, rules as gate, ledger, noop, repo, settings
from physverify.gate.config import CONFIG_NAME, PYPROJECT_NAME, Config, load_config
from physverify.gate.rules import REMOVED, TRANSITIONS
from physverify.isolation import guard
from physverify.gate.baseline import (NOT_STAGED, Baseline, baseline_note, change_memory, committed_blob,
                                       committed_ledger, edited_claims, load_baseline, memory_verdict,
                                       recorded_lines, staged_ledger, staged_memory)
from physverify.gate.discovery import DEFAULT_CLAIMS_DIR, discover, is_skipped_dir  # their home is discovery.py
from physverify.gate.settings import default_ledger  # its home is settings.py, with the ledger's option
from physverify.gate.results import ClaimRun, ReplayResult, exit_code, gate_failures  # their home is results.py

if TYPE_CHECKING:
    from concurrent.futures import Future

    from physverify.gate import evaluate as confirm


__all__ = [
    "DEFAULT_CLAIMS_DIR", "TRANSITIONS", "ClaimRun", "ReplayResult", "default_ledger", "discover", "gate_failures", "in_shard",
    "is_skipped_dir", "load_baseline", "parse_shard", "replay",
]


class _Planned(NamedTuple):
    path: Path
    key: str
    checkout: repo.Checkout
    config: Config
    reading: claim.ClaimReading
    real: Path  # path resolved (once, in planning)
    base: Path | None = None  # outside git: the folder ``key`` is relative to (``_KeyBases``); None: the checkout's root

    @property
    def root(self) -> Path:
        return self.checkout.root

    @property
    def root_key(self) -> str:
        """The claim's path relative to its checkout's root, which the change sets use (``key`` unless outside git)."""
        return self.key if self.base is None else self.checkout.key(self.real)


Progress = Callable[[ClaimRun, int, int], None]


# --- pure parts -------------------------------------------------------------------------
parse_shard = settings.parse_shard  # its home is settings.py, with the other options


def in_shard(key: str, k: int, n: int) -> bool:
    """True when claim ``key`` belongs to shard K of N: sha256 of the key, so every machine agrees."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % n == k - 1


class _Renames:
    """Renamed claims followed as the planning stream goes by, so moving a file keeps its history.

    A claim whose key has no baseline line takes the line of a key whose file is gone: the
    one git's rename detection names (between the baseline commit and the working tree),
    else the only one recorded with the same content hash (issue 21, item 9). ``baseline``
    shares its ``latest`` and ``followed`` with this object, so the runner and the removed
    claims see each rename as soon as it is found.
    """

    def __init__(self, baseline: Baseline) -> None:
        self._latest: dict[str, Mapping[str, Any]] = dict(baseline.latest)
        self._followed: dict[str, str] = {}
        self.bare: set[str] = set()  # the new keys among ``_followed`` that took a line of an old bare-name key
        self.superseded: set[str] = set()  # old bare-name keys whose line is a claim's of this run: never "removed"
        self._original = baseline.latest
        self._git: dict[Path, dict[str, str]] = {}
        self._by_hash: dict[str, list[str]] | None = None
        self.baseline = replace(baseline, latest=self._latest, followed=self._followed)

    def follow(self, items: Iterable[_Planned]) -> Iterator[_Planned]:
        for item in items:
            bare = self._bare_key(item)
            if bare is not None:
                self.superseded.add(bare)
            if item.key not in self._latest:
                old = bare if bare is not None and bare not in self._followed.values() else None
                if old is not None:
                    self.bare.add(item.key)
                else:
                    old = self._old_key(item)
                if old is not None:
                    self._followed[item.key] = old
                    self._latest[item.key] = self._original[old]
            yield item

    def _bare_key(self, item: _Planned) -> str | None:
        """The key outside git before keys started at the folder the run was given: the path from the claim's own
        folder (its bare file name, as a rule), when the baseline's line under it was written for this very file.

        Two claims of one name in two folders wrote under one such key; its last line is this
        claim's only when the file it names (``claim_file``, as that run was given it) ends with
        this claim's new key, so the other claim starts as new rather than from a stranger's verdict.
        """
        if item.base is None:
            return None
        old = item.root_key
        line = self._original.get(old)
        if old == item.key or line is None:
            return None
        named = line.get("claim_file")
        if not isinstance(named, str):
            return None
        named = PurePath(named.replace("\\", "/")).as_posix()
        return old if named == item.key or named.endswith("/" + item.key) else None

    def _old_key(self, item: _Planned) -> str | None:
        if self.baseline.ref is not None and item.root not in self._git:
            self._git[item.root] = repo.renamed_since(item.root, self.baseline.ref)
        old = self._git.get(item.root, {}).get(item.key)
        if old is None or old not in self._original:
            same = self._hashes().get(item.reading.sha256 or "", [])  # the hash discovery read once
            old = same[0] if len(same) == 1 else None
        if old is None or old in self._followed.values() or not discovery.gone((item.base or item.root) / old):
            return None
        if item.base is not None and self._still_there(self._original[old], item.real):
            return None  # outside git a bare-name key is no file; the file its line names is, and it is not this one
        return old

    @staticmethod
    def _still_there(line: Mapping[str, Any], real: Path) -> bool:
        """Whether the claim file ``line`` names (as its run was given it) is still a claim, and not ``real``."""
        named = line.get("claim_file")
        if not isinstance(named, str) or not named or "\0" in named:
            return False
        try:
            return os.path.realpath(named) != os.fspath(real) and not discovery.gone(named)
        except (OSError, ValueError):
            return False

    def _hashes(self) -> dict[str, list[str]]:
        if self._by_hash is None:
            self._by_hash = {}
            for key in sorted(self._original):
                digest = self._original[key].get("claim_sha256")
                if isinstance(digest, str):
                    self._by_hash.setdefault(digest, []).append(key)
        return self._by_hash


# --- planning ---------------------------------------------------------------------------
def _inputs(item: _Planned, closures: affected.Closures) -> frozenset[str]:
    found = closures.inputs(item.path, item.root, item.reading.target, item.config.path,
                            imports=item.reading.imports, real_path=item.real, own_key=item.root_key)
    # the repository's pyproject.toml, [tool.physverify] or not: staging a table added there is a settings change
    table = repo.relative_key(item.config.pyproject, item.root) if item.config.pyproject is not None else None
    return found | {table} if table is not None else found


class _Changes:
    """The changed files of each repository, looked up once per root (--changed-since, --files, --pre-commit)."""

    def __init__(self, ref: str | None, files: Sequence[str]) -> None:
        self.ref, self.files = ref, tuple(files)
        self._by_root: dict[Path, frozenset[str]] = {}
        self._lock = threading.Lock()
        self.closures = affected.Closures()  # the claims' import closures share their lookups

    def of(self, root: Path) -> frozenset[str]:
        with self._lock:
            if root not in self._by_root:
                self._by_root[root] = affected.changed_files([root], self.ref, self.files)
            return self._by_root[root]


@dataclass
class _Plan:
    """What the planning stream saw (keys planned and skipped, folders with claims), and the progress lines.

    A progress line gives the total of claims to run, which is known only once discovery is
    done; lines of claims that end before then wait for it (discovery is quick next to a run).
    """

    progress: Progress | None = None
    keys: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    folders: set[int] = field(default_factory=set)  # id() of each Config that had a claim
    complete: bool = False
    done: int = 0
    waiting: list[tuple[ClaimRun, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def total(self) -> int:
        return len(self.keys) - len(self.skipped)

    def finished(self, run: ClaimRun) -> None:
        """One progress line for ``run``, numbered in the order claims finish (one line at a time)."""
        if self.progress is None:
            return
        with self.lock:
            self.done += 1
            if self.complete:
                self.progress(run, self.done, self.total)
            else:
                self.waiting.append((run, self.done))

    def planned(self) -> None:
        """Discovery is done: the total is known, and the lines that waited for it are given."""
        with self.lock:
            self.complete = True
            for run, done in self.waiting:
                if self.progress is not None:
                    self.progress(run, done, self.total)
            self.waiting.clear()


def _plan(configs: Sequence[Config], checkouts: repo.Checkouts, read: discovery.Reader,
          recorder: noop.Recorder | None = None, only: Collection[Path] | None = None) -> Iterator[_Planned]:
    """Each claim to consider, as soon as it is read: discovery, reading, root and key (the shard is
    chosen later, ``_in_shard_only``, once renames are followed over every claim)."""
    planned: set[Path] = set()
    bases = _KeyBases(configs, checkouts)
    for cfg in configs:
        for reading, real in discovery.claim_readings(cfg.folder, cfg.exclude, read, recorder, only):
            path = reading.path
            # the same root confirm gives the claim (CLAIM["repo"], else its checkout); its key from there in git
            checkout = checkouts.for_claim(path, reading.claim, real)
            base = bases.outside_git(cfg, checkout)
            key = checkout.key(real) if base is None else _key_from(base, real)
            if real not in planned:
                planned.add(real)
                yield _Planned(path, key, checkout, cfg, reading, real, base)


class _KeyBases:
    """Where the claims' keys start: the checkout's root in git (and in the sandbox), else the folder the run was given.

    Outside git the checkout's root is the claim's own folder (spec section 3), so keyed from
    there, ``before/claim_x.py`` and ``after/claim_x.py`` were both ``claim_x.py`` and shared one
    history. Keyed from the folder the run was given they are ``before/claim_x.py`` and
    ``after/claim_x.py``, as git would key them from a root there; a run given several folders
    outside git keys all of them from their closest common folder, so none can meet another.
    """

    def __init__(self, configs: Sequence[Config], checkouts: repo.Checkouts) -> None:
        self._checkouts = checkouts
        self._sandbox = settings.sandbox_repo() is not None
        outside = [os.path.realpath(cfg.folder) for cfg in configs if self._outside(checkouts.for_folder(cfg.folder))]
        self.common = Path(os.path.commonpath(outside)) if outside else None

    def _outside(self, checkout: repo.Checkout) -> bool:
        return checkout.repo is None and not self._sandbox

    def outside_git(self, cfg: Config, checkout: repo.Checkout) -> Path | None:
        """The folder a claim of ``cfg`` in ``checkout`` is keyed from outside git; None in git (its root)."""
        if not self._outside(checkout):
            return None
        return self.common if self.common is not None else cfg.folder.resolve()

    def for_folder(self, cfg: Config) -> Path:
        """The folder the keys of ``cfg``'s claims start from (the baseline's keys under it: ``_unplanned``)."""
        checkout = self._checkouts.for_folder(cfg.folder)
        base = self.outside_git(cfg, checkout)
        return checkout.root if base is None else base


def _key_from(base: Path, real: Path) -> str:
    """The ledger's key of the claim at ``real`` (resolved) from the folder ``base`` (resolved), POSIX separators."""
    return PurePath(os.path.relpath(real, base)).as_posix()


def _in_shard_only(items: Iterable[_Planned], shard: tuple[int, int] | None) -> Iterator[_Planned]:
    """The items of shard K of N (every one without a shard)."""
    for item in items:
        if shard is None or in_shard(item.key, *shard):
            yield item


FREEZE_EVERY = 256  # claims planned between two gc.freeze() calls


class _Freezing:
    """Planning's long-lived objects out of the collector's full passes, given back when the run ends, however it ends.

    Only where nothing froze objects before (the command line, the MCP server): ``gc.freeze``
    and ``gc.unfreeze`` act on the whole process, so a program that froze its own (a server
    before it forks) keeps them frozen, and this run is not made faster.
    """

    def __init__(self) -> None:
        self.on = gc.get_freeze_count() == 0

    def __enter__(self) -> _Freezing:
        self.now()
        return self

    def now(self) -> None:
        if self.on:
            gc.freeze()

    def __exit__(self, *_: object) -> None:
        if self.on:
            gc.unfreeze()  # planning is over: the collector looks at everything again


def _frozen_while(items: Iterable[_Planned], freezing: _Freezing) -> Iterator[_Planned]:
    """``items``, with what exists so far moved out of the collector's sight every FREEZE_EVERY of them.

    Planning makes objects that live to the run's end (the baseline's records, each claim's
    reading, the cache's entries: a few hundred thousand at 10,000 claims) and no cycles;
    each full collection walked them all, 0.4 s of a cold 10,000-claim no-op (issue 19).
    ``gc.freeze`` costs nothing and leaves the collector on (a cycle made meanwhile is still
    found among the younger objects); ``_Freezing`` unfreezes them once the run is done.
    """
    for count, item in enumerate(items, 1):
        if count % FREEZE_EVERY == 0:
            freezing.now()
        yield item


class _Ahead(Iterator[_Planned]):
    """``items``, produced from now on by a thread of their own, in order; its exception is raised to the consumer.

    Discovery reads the claims and hands them to the parse workers while the caller reads
    the committed ledger: the workers waited for the baseline before (0.3 s of a cold
    10,000-claim no-op, one core idle). The thread only reads (claim.py, cache.py and repo.py
    lock what they share). It stops at its next claim once ``close`` is called (``replay`` closes
    it as the run ends, so a run that ends with an error reads no further).
    """

    def __init__(self, items: Iterator[_Planned]) -> None:
        # (0, item), (1, None) at the end, (2, exception)
        self._found: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._done = False
        threading.Thread(target=_produce, args=(items, self._found, self._stop), name="physverify-discovery",
                         daemon=True).start()

    def __next__(self) -> _Planned:
        if self._done:
            raise StopIteration
        kind, value = self._found.get()
        if kind == 0:
            return value
        self._done = True
        self._stop.set()
        if kind == 2:
            raise value
        raise StopIteration

    def close(self) -> None:
        """Stop reading ahead (at the thread's next claim)."""
        self._stop.set()


def _produce(items: Iterator[_Planned], found: queue.SimpleQueue[tuple[int, Any]], stop: threading.Event) -> None:
    """``_Ahead``'s thread: each item into ``found`` until ``stop`` is set, then the end or the exception."""
    try:
        for item in items:
            if stop.is_set():
                return
            found.put((0, item))
        found.put((1, None))
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
        found.put((2, exc))


def _selected(items: Iterable[_Planned], before: Mapping[str, Any], changes: _Changes | None,
              seen: _Plan, recorder: noop.Recorder | None = None,
              edited: Collection[str] = ()) -> Iterator[_Planned]:
    """The claims to run (every one, or with ``changes`` the affected ones, those new to the baseline, and those
    whose verdict the change's own ledger moved, ``edited``: a ledger edit alone touches no claim's inputs).

    ``recorder`` is told each skipped claim, with its inputs when they were read.
    """
    targets: dict[tuple[str, str, str], tuple[str, str]] = {}  # the paths a target resolves by, per folder
    for item in items:
        seen.folders.add(id(item.config))
        seen.keys.append(item.key)
        if changes is None or item.key not in before or item.key in edited:
            yield item
            continue
        changed = changes.of(item.root)
        # with nothing changed, no import closure needs reading (the common no-change run)
        inputs = _inputs(item, changes.closures) if changed else None
        if inputs is not None and affected.is_affected(inputs, changed):
            yield item
            continue
        seen.skipped.append(item.key)
        if recorder is not None:
            if item.reading.claim is not None and "repo" in item.reading.claim:
                recorder.refused = True  # its checkout depends on folders the plan does not list
            recorder.claim(item.key, item.real, item.checkout.real_root, inputs)
            target = item.reading.target
            if inputs is not None and target:  # how its target resolved decided its key
                # claims of one folder name the same target: its two paths are made once (10,000 claims)
                where = (os.fspath(item.root), os.path.dirname(item.real), target)
                found = targets.get(where)
                if found is None:
                    found = targets[where] = (os.fspath(item.root / target), os.fspath(item.real.parent / target))
                recorder.paths.update(found)
    seen.planned()


def _removed(configs: Sequence[Config], baseline: Baseline, planned: Iterable[str], shard: tuple[int, int] | None,
             fail_on: frozenset[str], checkouts: repo.Checkouts) -> list[ClaimRun]:
    """Baseline claims under the replayed folders whose file is gone, and that existed at the baseline commit.

    A claim renamed in this run is followed (``follow_renames``), not removed.
    """
    seen = set(planned) | set(baseline.followed.values())
    gone: dict[Path, dict[str, None]] = {}  # by root, in order: the keys whose file is gone
    bases = _KeyBases(configs, checkouts)
    for cfg in configs:
        root = bases.for_folder(cfg)
        keys, text = gone.setdefault(root, {}), os.fspath(root)
        keys.update((key, None) for key in _unplanned(cfg, root, baseline, seen, shard) if key not in keys
                    and discovery.gone(os.path.join(text, key)))  # a string: a Path per key cost more than its stat
    runs = []
    for root, keys in gone.items():  # one git call per repository, whatever the number of keys
        existed = repo.paths_at(root, baseline.ref, keys) if baseline.ref is not None else frozenset(keys)
        for key in sorted(existed - seen):
            seen.add(key)
            base = baseline.latest[key]
            line = base.get("line")
            run = ClaimRun(key, REMOVED, None, base.get("verdict"), None, base, target=base.get("file"),
                           line=line if isinstance(line, int) else None)
            runs.append(replace(run, failures=gate_failures(run, fail_on)))
    return sorted(runs, key=lambda r: r.key)


def _unplanned(cfg: Config, root: Path, baseline: Baseline, seen: set[str] | frozenset[str],
               shard: tuple[int, int] | None) -> list[str]:
    """Baseline claims under ``cfg``'s folder (and in the shard) that this run did not plan (``seen``)."""
    prefix = repo.relative_key(cfg.folder, root) or ""
    return [key for key in baseline.latest if key not in seen and (prefix in ("", ".") or key.startswith(prefix + "/"))
            and (shard is None or in_shard(key, *shard))]


# --- running ----------------------------------------------------------------------------
def _run_all(run_one: Callable[[_Planned], ClaimRun], planned: Iterable[_Planned], jobs: int) -> list[ClaimRun]:
    """``run_one`` over the claims as planning yields them: a plain loop for one job, a thread pool otherwise.

    Claims start while later ones are still being read (each claim is its own process).
    On Ctrl-C or SIGTERM (any BaseException) nothing new starts, every running claim's
    process group is killed (isolate.stopping, in either isolation mode), and once every
    worker has returned the exception goes on to cli.main. With one job the interrupted
    wait kills its own claim.
    """
    from concurrent.futures import ThreadPoolExecutor  # here, with the logging it imports: after the server started

    from physverify.isolation import isolate  # imported once a claim may run: a no-op hook never needs it

    if jobs == 1:  # one claim at a time: nothing to overlap, so plan first and every progress line is live
        return [run_one(item) for item in list(planned)]
    pool = ThreadPoolExecutor(max_workers=jobs)  # threads start as claims come, at most ``jobs``
    futures: list[Future[ClaimRun]] = []
    try:
        for item in planned:
            futures.append(pool.submit(run_one, item))
        runs = [future.result() for future in futures]
    except BaseException:  # clean up: stop queued claims, kill running ones, refuse new ones, then re-raise
        with isolate.stopping():
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return runs


def _target(record: Mapping[str, Any], item: _Planned, found: Path | None) -> str | None:
    """The claimed file relative to the root when ``found`` (confirm.find_target's answer), else as CLAIM names it."""
    file = record.get("file")
    if not isinstance(file, str):
        return None
    return (item.checkout.relative(found) or file) if found is not None else file


def _judge(item: _Planned, evaluation: confirm.Evaluation, base: Mapping[str, Any] | None,
           recorded: Mapping[str, Any] | None, fail_on: frozenset[str], record_all: bool,
           memory: str | None = None, staged: bool = False) -> ClaimRun:
    """``memory``: the claim's verdict in the change's own ledger (``memory_verdict``), the ledger as staged
    when ``staged``."""
    record = evaluation.record
    before = base.get("verdict") if base is not None else None
    expected = item.config.expect.get(item.path.resolve())
    in_commit, in_index = (None, memory) if staged else (memory, None)
    judged = gate.judge(before, record["verdict"], recorded.get("verdict") if recorded else None, expected, fail_on,
                        record_all=record_all, committed=in_commit, staged=in_index)
    line = record.get("line")
    return ClaimRun(
        key=item.key, transition=judged.transition, verdict=record["verdict"], baseline_verdict=before,
        record=record, baseline=base, expected=expected, failures=judged.failures,
        target=_target(record, item, evaluation.target), line=line if isinstance(line, int) else None, recorded=judged.write,
        committed=in_commit, staged=in_index,
    )


def _runner(timeout_s: float, baseline: Baseline, recorded: Mapping[str, Mapping[str, Any]], fail_on: frozenset[str],
            record_all: bool, seen: _Plan, checkouts: repo.Checkouts,
            run: settings.RunSettings,
            memory: Mapping[str, Mapping[str, Any]] | None = None, *,
            staged: bool = False) -> Callable[[_Planned], ClaimRun]:
    from physverify.gate import evaluate as confirm  # imported once a claim may run: a no-op hook never needs them
    from physverify.isolation import isolate

    env = repo.child_env()  # the environment every claim's child starts from, once for the run

    def run_one(item: _Planned) -> ClaimRun:
        start = time.monotonic()
        # the reading and checkout discovery resolved: the commit (and its dirty flag) is
        # looked up once per repository for the whole run, each lookup starts git processes
        evaluation = confirm.evaluate(item.path, timeout_s=timeout_s, reading=item.reading, checkouts=checkouts,
                                      isolation=run.isolation_for(item.config), preload=item.config.preload,
                                      env=env)
        isolate.refuse_if_stopping()  # killed on the way out (Ctrl-C): no verdict, no progress line
        if item.base is not None:  # outside git: the line is written under the key planning gave, not confirm's
            evaluation.record["claim_key"] = item.key
        judged = _judge(item, evaluation, baseline.latest.get(item.key), recorded.get(item.key), fail_on,
                        record_all, memory_verdict(memory, item.key, baseline.followed), staged)
        judged = replace(judged, seconds=time.monotonic() - start)
        seen.finished(judged)
        return judged

    return run_one


def _forks(configs: Sequence[Config], run: settings.RunSettings) -> bool:
    """Whether any claims folder runs its claims in fork mode."""
    from physverify.isolation import isolate

    return any(isolate.resolve_isolation(run.isolation_for(cfg)) == isolate.FORK for cfg in configs)


def _warm_up() -> None:
    """Start the fork server in the background now, so the first claim finds it ready (the one place that does)."""
    from physverify.isolation import forkclient

    threading.Thread(target=forkclient.start, name="physverify-warm-up", daemon=True).start()


def _python_file(paths: Iterable[str]) -> bool:
    """Whether a changed file is a Python file: then a claim probably runs (a guess for speed; the plan decides)."""
    return any(path.endswith(".py") for path in paths)


def _write(runs: list[ClaimRun], ledger_path: Path, dry_run: bool) -> list[ClaimRun]:
    """Append the line of each claim the gate said to write, in discovery order (none with --dry-run)."""
    if dry_run:
        return [replace(run, recorded=False) for run in runs]
    ledger.append_records(ledger_path, [dict(run.record) for run in runs if run.recorded and run.record is not None])
    return runs


def _notes(runs: Sequence[ClaimRun], written: int, ledger_path: Path, pre_commit: bool) -> tuple[str, ...]:
    """The hook's note on the lines it wrote: stage them and commit again, unless the gate failed (then staging
    them only records the verdicts, and the commit stops until what the failures above name is done)."""
    if not (pre_commit and written):
        return ()
    shown = ledger_path.as_posix()
    changed = f"the ledger changed ({written} new line{'s' if written != 1 else ''} in {shown}): review it with " \
              f"'git diff {shown}'"
    if any(run.failures for run in runs):
        return (f"{changed}; staging it with 'git add {shown}' records the verdicts, and the commit stops until "
                "the gate's failures above are dealt with",)
    return (f"{changed}, stage it with 'git add {shown}', and commit again",)


def _check_ledger(path: Path) -> None:
    ledger.check_writable(path)  # here, because replay()'s ``ledger`` keyword hides the module inside it


def _material(configs: Sequence[Config], folders: Sequence[repo.Checkout], target: Path, committed: Path,
              blob: tuple[repo.Committed | None, str | None], shard: tuple[int, int] | None) -> str:
    """What a remembered no-op is kept under: the folders, checkouts and ledger as this run resolves them."""
    found, used = blob
    return noop.material([[str(cfg.folder.resolve()) for cfg in configs], [str(c.real_root) for c in folders],
                          os.path.abspath(target), os.path.abspath(committed),
                          found.hexsha if found is not None else None, used, list(shard) if shard else None])


def _remember(store: cache.Cache, key_material: str, recorder: noop.Recorder, configs: Sequence[Config],
              before: Baseline, planned: Sequence[str], shard: tuple[int, int] | None, checkouts: repo.Checkouts,
              changes: _Changes, target: Path) -> None:
    """Keep this run's plan (it ran nothing and warned of nothing) for the next identical replay (noop.py).

    Not kept when the baseline has a claim under the folders that was not planned (an
    excluded or removed file: whether it is gone is not a stat of this plan) or a claim
    was followed from another key.
    """
    seen = set(planned)
    bases = _KeyBases(configs, checkouts)
    if before.followed or any(_unplanned(cfg, bases.for_folder(cfg), before, seen, shard) for cfg in configs):
        return
    recorder.paths.update(os.fspath(cfg.path) for cfg in configs if cfg.path is not None)
    # the working ledger: a full plan reads it, so one it cannot read (its mode changed) is an error there
    recorder.paths.add(os.fspath(target))
    # the repository's pyproject.toml kept as a lookup of its own path, found or not: a [tool.physverify] added
    # later is seen, and another new file in the root does not count
    tables = {cfg.pyproject: os.path.lexists(cfg.pyproject) for cfg in configs if cfg.pyproject is not None}
    noop.remember(store, key_material, recorder, {**changes.closures.probed, **tables})


def replay(
    claims_dirs: Sequence[Path | str] = (DEFAULT_CLAIMS_DIR,),
    *,
    ledger: Path | str | None = None,
    jobs: int | str | None = None,
    timeout_s: float | str | None = None,
    trusted: bool = False,
    baseline: str | None = None,
    changed_since: str | None = None,
    files: Sequence[str] | None = None,
    pre_commit: bool = False,
    shard: str | None = None,
    record_all: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    isolation: str | None = None,
    only: Collection[Path | str] | None = None,
) -> ReplayResult:
    """Replay the claims folders against their baseline, append the changed lines, return the gate's result.

    ``only``: these claim files of the folders alone are run and judged, and no other claim is
    reported (none as removed): the pytest plugin's one item, judged as the whole replay judges it.
    """
    recorder = noop.Recorder()  # its clock starts before anything is read
    chosen = None if only is None else frozenset(Path(path).resolve() for path in only)
    settings.require_trust(trusted or pre_commit, "replay")  # a repository's own hook runs its own code
    configs = [load_config(folder) for folder in discovery.claims_folders(claims_dirs)]
    first = configs[0]
    run = settings.resolve({"timeout_s": timeout_s, "jobs": jobs, "isolation": isolation, "shard": shard,
                            "ledger": ledger}, first)
    seconds, workers, shard_kn, target = run.timeout_s, run.jobs, run.shard, run.ledger
    if not dry_run:
        _check_ledger(target)  # found before the claims run, not after
    files_alone = changed_since is None and (files is not None or pre_commit)  # the change set: the files given
    if not files_alone and _forks(configs, run):
        # The server's start (an interpreter importing physverify) overlaps all the run does before its
        # first claim: importing GitPython, the committed ledger, git's change set, discovery. A run that
        # then has no claim to run kills it at exit (forkclient.shutdown) instead of waiting for it. The
        # hook waits for the memo: a start on a guess cost its no-op 15 ms, and 80 ms on a busy machine.
        _warm_up()
    committed, moved = committed_ledger(first, target, ledger is not None, baseline)
    blob = committed_blob(committed, baseline)
    store = cache.open_cache()
    checkouts = repo.Checkouts()
    changes = None
    staged, staged_blob = NOT_STAGED  # the ledger as staged, in the hook, when it differs from HEAD's
    key_material = None
    memo_problem = None
    if changed_since is not None or files is not None or pre_commit:
        changes = _Changes(changed_since, files or ())
        folders = [checkouts.for_folder(cfg.folder) for cfg in configs]
        for checkout in folders:  # a bad --changed-since is a usage error before anything runs
            changes.of(checkout.root)
        if pre_commit and baseline is None and blob[0] is not None:
            staged, staged_blob = staged_ledger(target, folders[0], changes.of(folders[0].root), blob[0])
        if store is not None and blob[0] is not None and not moved and not staged:
            key_material = _material(configs, folders, target, committed, blob, shard_kn)
            memo, memo_problem = noop.recall(store, key_material)
            kept = memo.skipped({str(c.real_root): changes.of(c.root) for c in folders}) if memo else None
            if kept is not None:  # nothing planning looks at changed, and the change reaches no claim
                return ReplayResult(claims=(), skipped=kept, ledger=target, written=0, fail_on=first.fail_on,
                                    exit_code=exit_code([], pre_commit=pre_commit, written=0), warnings=(),
                                    notes=(), baseline_ref=blob[1], shard=shard)
        if files_alone and _python_file(files or ()) and _forks(configs, run):
            _warm_up()  # past the memo, a changed Python file is likely some claim's: the server starts while planning
    readings = cache.Readings(store, checkouts)
    watch = recorder if key_material is not None else None
    # What the run has made so far lives to its end (_frozen_while); discovery reads while the baseline is, and
    # reads no further once the run ends, however it ends.
    with _Freezing() as freezing, \
            closing(_Ahead(_plan(configs, checkouts, readings.read_each, watch, chosen))) as discovered:
        before = loaded = load_baseline(target, baseline, committed, blob=blob)
        warnings = [line for cfg in configs for line in cfg.warnings] + list(before.problems) + moved
        warnings += baseline_note(before, target)
        if before.path is not None and before.path != target:
            warnings.append(f"the baseline is the ledger as committed at {before.ref} in {before.path}, where that "
                            f"commit's {CONFIG_NAME} or {PYPROJECT_NAME} keeps it; this run writes {target}")
        recorded = before.latest if before.ref is None else recorded_lines(target, before)  # the working ledger, read once
        if before.head_copy is not None:
            checkouts.know((before.head_copy,))
        renames = _Renames(before)
        before = renames.baseline
        seen = _Plan(progress)
        memory = staged_memory(staged_blob, loaded) if staged else change_memory(target, baseline, blob, loaded)
        edited = edited_claims(memory, before.latest)  # before any rename is followed: the baseline commit's own keys
        run_one = _runner(seconds, before, recorded, first.fail_on, record_all, seen, checkouts, run, memory,
                          staged=staged)
        # Renames are followed over every claim, the shard chosen after: a claim renamed into another shard
        # is that shard's to judge, and this one must not report its old key as removed.
        planned = _frozen_while(_in_shard_only(renames.follow(discovered), shard_kn), freezing)
        stream = _selected(planned, before.latest, changes, seen, watch, edited)
        with guard.watching():  # a claim that changes physverify's limits leaves the run without a verdict
            runs = _run_all(run_one, stream, workers)
        runs = _write(runs, target, dry_run)
        readings.close()
        warnings += readings.problems
        warnings += [f"{new}: renamed from {old} since {before.ref or 'the ledger'}; judged against {old}'s last line"
                     for new, old in before.followed.items() if new not in renames.bare]
        warnings += [f"{new}: its history is under the key {old} (outside git, keys began at each claim's own folder "
                     f"until now); judged against that line, and recorded as {new} from now on"
                     for new, old in before.followed.items() if new in renames.bare]
        if shard_kn is None and chosen is None:  # a gate over an empty folder passes vacuously: most likely a wrong path
            warnings += [f"{cfg.folder}: no claim files here (no *.py whose top level binds CLAIM)"
                         for cfg in configs if id(cfg) not in seen.folders]
        skipped = seen.skipped
        if chosen is None:
            runs += _removed(configs, before, [*seen.keys, *renames.superseded], shard_kn, first.fail_on, checkouts)
        if watch is not None and key_material and changes is not None and store is not None and not runs and not warnings:
            _remember(store, key_material, watch, configs, before, seen.keys, shard_kn, checkouts, changes, target)
        if memo_problem is not None and store is not None:  # given once the new memo is kept (it replaces the bad one)
            store.warn(memo_problem)
            warnings += [line for line in store.problems if line not in warnings]
        written = sum(run.recorded for run in runs)
        return ReplayResult(
            claims=tuple(runs), skipped=tuple(skipped), ledger=target, written=written, fail_on=first.fail_on,
            exit_code=exit_code(runs, pre_commit=pre_commit, written=written), warnings=tuple(warnings),
            notes=_notes(runs, written, target, pre_commit), baseline_ref=before.ref, shard=shard,
        )

