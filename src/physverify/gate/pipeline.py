"""The planning and run pipeline of a replay (DESIGN.md, "Replay: the gate").

Planning is a stream: discovery reads each claim (discovery.py), the claim gets its checkout,
root and key (``plan``), renamed claims take their old key's line (``Renames``), the shard is
chosen (``in_shard_only``), and with a change set only the affected claims go on
(``selected``). ``Ahead`` runs that stream in a thread of its own while the caller reads the
baseline; ``run_all`` runs the claims as they come. Baseline claims this run did not plan and
whose file is gone are ``removed``.
"""

from __future__ import annotations

import gc
import hashlib
import os
import queue
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

from physverify.gate import affected, claim, discovery, noop, repo, settings
from physverify.gate.baseline import Baseline
from physverify.gate.config import Config
from physverify.gate.results import ClaimRun, gate_failures
from physverify.gate.rules import REMOVED

if TYPE_CHECKING:
    from concurrent.futures import Future


class Planned(NamedTuple):
    path: Path
    key: str
    checkout: repo.Checkout
    config: Config
    reading: claim.ClaimReading
    real: Path  # path resolved (once, in planning)
    base: Path | None = None  # outside git: the folder ``key`` is relative to (``KeyBases``); None: the checkout's root

    @property
    def root(self) -> Path:
        return self.checkout.root

    @property
    def root_key(self) -> str:
        """The claim's path relative to its checkout's root, which the change sets use (``key`` unless outside git)."""
        return self.key if self.base is None else self.checkout.key(self.real)


Progress = Callable[[ClaimRun, int, int], None]

def in_shard(key: str, k: int, n: int) -> bool:
    """True when claim ``key`` belongs to shard K of N: sha256 of the key, so every machine agrees."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % n == k - 1


class Renames:
    """Renamed claims followed as the planning stream goes by, so moving a file keeps its history.

    A claim whose key has no baseline line takes the line of a key whose file is gone: the
    one git's rename detection names (between the baseline commit and the working tree),
    else the only one recorded with the same content hash (issue 21, item 9). ``baseline``
    shares its ``latest`` and ``followed`` with this object, so the runner and the removed
    claims see each rename as soon as it is found.
    """

    def __init__(self, baseline: Baseline, checkouts: repo.Checkouts | None = None) -> None:
        self._latest: dict[str, Mapping[str, Any]] = dict(baseline.latest)
        self._followed: dict[str, str] = {}
        self.bare: set[str] = set()  # the new keys among ``_followed`` that took a line of an old bare-name key
        self.superseded: set[str] = set()  # old bare-name keys whose line is a claim's of this run: never "removed"
        self._original = baseline.latest
        self._git: dict[Path, dict[str, str]] = {}
        self._checkouts = checkouts
        self._by_hash: dict[str, list[str]] | None = None
        self.baseline = replace(baseline, latest=self._latest, followed=self._followed)

    def follow(self, items: Iterable[Planned]) -> Iterator[Planned]:
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

    def _bare_key(self, item: Planned) -> str | None:
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

    def _old_key(self, item: Planned) -> str | None:
        if self.baseline.ref is not None and item.root not in self._git:
            self._git[item.root] = repo.renamed_since(item.root, self.baseline.ref, self._checkouts)
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


def claim_inputs(item: Planned, closures: affected.Closures) -> frozenset[str]:
    found = closures.inputs(item.path, item.root, item.reading.target, item.config.path,
                            imports=item.reading.imports, real_path=item.real, own_key=item.root_key)
    # the repository's pyproject.toml, [tool.physverify] or not: staging a table added there is a settings change
    table = repo.relative_key(item.config.pyproject, item.root) if item.config.pyproject is not None else None
    return found | {table} if table is not None else found


class Changes:
    """The changed files of each repository, looked up once per root (--changed-since, --files, --pre-commit)."""

    def __init__(self, ref: str | None, files: Sequence[str], checkouts: repo.Checkouts | None = None) -> None:
        self.ref, self.files, self._checkouts = ref, tuple(files), checkouts
        self._by_root: dict[Path, frozenset[str]] = {}
        self._lock = threading.Lock()
        self.closures = affected.Closures()  # the claims' import closures share their lookups

    def of(self, root: Path) -> frozenset[str]:
        with self._lock:
            if root not in self._by_root:
                self._by_root[root] = affected.changed_files([root], self.ref, self.files, self._checkouts)
            return self._by_root[root]


@dataclass
class Seen:
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


def plan(configs: Sequence[Config], checkouts: repo.Checkouts, read: discovery.Reader,
          recorder: noop.Recorder | None = None, only: Collection[Path] | None = None) -> Iterator[Planned]:
    """Each claim to consider, as soon as it is read: discovery, reading, root and key (the shard is
    chosen later, ``in_shard_only``, once renames are followed over every claim)."""
    planned: set[Path] = set()
    bases = KeyBases(configs, checkouts)
    for cfg in configs:
        for reading, real in discovery.claim_readings(cfg.folder, cfg.exclude, read, recorder, only):
            path = reading.path
            # the same root confirm gives the claim (CLAIM["repo"], else its checkout); its key from there in git
            checkout = checkouts.for_claim(path, reading.claim, real)
            base = bases.outside_git(cfg, checkout)
            key = checkout.key(real) if base is None else key_from(base, real)
            if real not in planned:
                planned.add(real)
                yield Planned(path, key, checkout, cfg, reading, real, base)


class KeyBases:
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
        """The folder the keys of ``cfg``'s claims start from (the baseline's keys under it: ``unplanned``)."""
        checkout = self._checkouts.for_folder(cfg.folder)
        base = self.outside_git(cfg, checkout)
        return checkout.root if base is None else base


def key_from(base: Path, real: Path) -> str:
    """The ledger's key of the claim at ``real`` (resolved) from the folder ``base`` (resolved), POSIX separators."""
    return PurePath(os.path.relpath(real, base)).as_posix()


def in_shard_only(items: Iterable[Planned], shard: tuple[int, int] | None) -> Iterator[Planned]:
    """The items of shard K of N (every one without a shard)."""
    for item in items:
        if shard is None or in_shard(item.key, *shard):
            yield item


FREEZE_EVERY = 256  # claims planned between two gc.freeze() calls


class Freezing:
    """Planning's long-lived objects out of the collector's full passes, given back when the run ends, however it ends.

    Only where nothing froze objects before (the command line, the MCP server): ``gc.freeze``
    and ``gc.unfreeze`` act on the whole process, so a program that froze its own (a server
    before it forks) keeps them frozen, and this run is not made faster.
    """

    def __init__(self) -> None:
        self.on = gc.get_freeze_count() == 0

    def __enter__(self) -> Freezing:
        self.now()
        return self

    def now(self) -> None:
        if self.on:
            gc.freeze()

    def __exit__(self, *_: object) -> None:
        if self.on:
            gc.unfreeze()  # planning is over: the collector looks at everything again


def frozen_while(items: Iterable[Planned], freezing: Freezing) -> Iterator[Planned]:
    """``items``, with what exists so far moved out of the collector's sight every FREEZE_EVERY of them.

    Planning makes objects that live to the run's end (the baseline's records, each claim's
    reading, the cache's entries: a few hundred thousand at 10,000 claims) and no cycles;
    each full collection walked them all, 0.4 s of a cold 10,000-claim no-op (issue 19).
    ``gc.freeze`` costs nothing and leaves the collector on (a cycle made meanwhile is still
    found among the younger objects); ``Freezing`` unfreezes them once the run is done.
    """
    for count, item in enumerate(items, 1):
        if count % FREEZE_EVERY == 0:
            freezing.now()
        yield item


class Ahead(Iterator[Planned]):
    """``items``, produced from now on by a thread of their own, in order; its exception is raised to the consumer.

    Discovery reads the claims and hands them to the parse workers while the caller reads
    the committed ledger: the workers waited for the baseline before (0.3 s of a cold
    10,000-claim no-op, one core idle). The thread only reads (claim.py, cache.py and repo.py
    lock what they share). It stops at its next claim once ``close`` is called (``replay`` closes
    it as the run ends, so a run that ends with an error reads no further).
    """

    def __init__(self, items: Iterator[Planned]) -> None:
        # (0, item), (1, None) at the end, (2, exception)
        self._found: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._done = False
        threading.Thread(target=_produce, args=(items, self._found, self._stop), name="physverify-discovery",
                         daemon=True).start()

    def __next__(self) -> Planned:
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


def _produce(items: Iterator[Planned], found: queue.SimpleQueue[tuple[int, Any]], stop: threading.Event) -> None:
    """``Ahead``'s thread: each item into ``found`` until ``stop`` is set, then the end or the exception."""
    try:
        for item in items:
            if stop.is_set():
                return
            found.put((0, item))
        found.put((1, None))
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
        found.put((2, exc))


def selected(items: Iterable[Planned], before: Mapping[str, Any], changes: Changes | None,
              seen: Seen, recorder: noop.Recorder | None = None,
              edited: Collection[str] = ()) -> Iterator[Planned]:
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
        inputs = claim_inputs(item, changes.closures) if changed else None
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


def removed(configs: Sequence[Config], baseline: Baseline, planned: Iterable[str], shard: tuple[int, int] | None,
             fail_on: frozenset[str], checkouts: repo.Checkouts) -> list[ClaimRun]:
    """Baseline claims under the replayed folders whose file is gone, and that existed at the baseline commit.

    A claim renamed in this run is followed (``follow_renames``), not removed.
    """
    seen = set(planned) | set(baseline.followed.values())
    gone: dict[Path, dict[str, None]] = {}  # by root, in order: the keys whose file is gone
    bases = KeyBases(configs, checkouts)
    for cfg in configs:
        root = bases.for_folder(cfg)
        keys, text = gone.setdefault(root, {}), os.fspath(root)
        keys.update((key, None) for key in unplanned(cfg, root, baseline, seen, shard) if key not in keys
                    and discovery.gone(os.path.join(text, key)))  # a string: a Path per key cost more than its stat
    runs = []
    for root, keys in gone.items():  # one git call per repository, whatever the number of keys
        existed = repo.paths_at(root, baseline.ref, keys, checkouts) if baseline.ref is not None else frozenset(keys)
        for key in sorted(existed - seen):
            seen.add(key)
            base = baseline.latest[key]
            line = base.get("line")
            run = ClaimRun(key, REMOVED, None, base.get("verdict"), None, base, target=base.get("file"),
                           line=line if isinstance(line, int) else None)
            runs.append(replace(run, failures=gate_failures(run, fail_on)))
    return sorted(runs, key=lambda r: r.key)


def unplanned(cfg: Config, root: Path, baseline: Baseline, seen: set[str] | frozenset[str],
               shard: tuple[int, int] | None) -> list[str]:
    """Baseline claims under ``cfg``'s folder (and in the shard) that this run did not plan (``seen``)."""
    prefix = repo.relative_key(cfg.folder, root) or ""
    return [key for key in baseline.latest if key not in seen and (prefix in ("", ".") or key.startswith(prefix + "/"))
            and (shard is None or in_shard(key, *shard))]


# --- running ----------------------------------------------------------------------------
def run_all(run_one: Callable[[Planned], ClaimRun], planned: Iterable[Planned], jobs: int) -> list[ClaimRun]:
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
