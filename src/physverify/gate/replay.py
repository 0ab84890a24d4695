"""``physverify replay``: the claims gate (DESIGN.md, "Replay: the gate").

``replay`` reads as its steps, each a function here with its own test: ``read_settings``
(the Request: every option resolved once) -> ``plan_change`` (the change set, the staged
ledger, the no-op memo) -> ``read_baseline`` (baseline.py) -> ``run_claims`` (the planning
stream of pipeline.py, over discovery.py's readings, each claim through ``evaluate`` and
``judge_claim``) -> ``write_lines`` -> ``conclude``. One ``repo.Checkouts`` goes down every
step, so a run opens each repository once. Each claim goes through the same isolated child
and the same verdict rules as ``confirm``; nothing here runs a claim or decides a verdict
itself, and the transitions and the gate live in rules.py.

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

import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physverify.gate import cache, discovery, noop, pipeline, repo, settings
from physverify.gate.baseline import (NOT_STAGED, Baseline, LedgerSource, baseline_note, change_memory, edited_claims,
                                      load_baseline, locate_ledger, memory_verdict, recorded_lines, staged_ledger,
                                      staged_memory)
from physverify.gate.config import CONFIG_NAME, PYPROJECT_NAME, Config, load_config
from physverify.gate.discovery import DEFAULT_CLAIMS_DIR, discover, is_skipped_dir  # their home is discovery.py
from physverify.gate.ledger import append_records, check_writable
from physverify.gate.pipeline import Progress, in_shard  # their home is pipeline.py
from physverify.gate.results import ClaimRun, ReplayResult, exit_code, gate_failures  # their home is results.py
from physverify.gate.rules import TRANSITIONS, judge
from physverify.gate.settings import default_ledger  # its home is settings.py, with the ledger's option
from physverify.isolation import guard

if TYPE_CHECKING:

    from physverify.gate import evaluate as confirm


__all__ = [
    "DEFAULT_CLAIMS_DIR", "TRANSITIONS", "ClaimRun", "ReplayResult", "default_ledger", "discover", "gate_failures", "in_shard",
    "is_skipped_dir", "load_baseline", "replay",
]



# --- settings ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """What one replay was asked, its settings resolved once (``read_settings``); every later step reads it."""

    configs: tuple[Config, ...]  # each claims folder's settings, the first one's options counting
    run: settings.RunSettings
    baseline: str | None = None  # --baseline REF; None: HEAD, or the working ledger outside git
    explicit_ledger: bool = False  # --ledger given: the caller's place, also for the baseline
    changed_since: str | None = None
    files: tuple[str, ...] | None = None
    pre_commit: bool = False
    record_all: bool = False
    dry_run: bool = False
    shard: str | None = None  # --shard as given, which the result repeats (``run.shard`` is its value)
    only: frozenset[Path] | None = None  # these claim files alone (resolved): the pytest plugin's one item

    @property
    def first(self) -> Config:
        return self.configs[0]

    @property
    def target(self) -> Path:
        """The ledger this run writes."""
        return self.run.ledger

    @property
    def fail_on(self) -> frozenset[str]:
        return self.first.fail_on

    @property
    def has_change_set(self) -> bool:
        """Whether only the claims a change reaches run (--changed-since, --files, --pre-commit)."""
        return self.changed_since is not None or self.files is not None or self.pre_commit

    @property
    def files_alone(self) -> bool:
        """Whether the change set is the files given (the hook's staged files), without asking git for one."""
        return self.changed_since is None and (self.files is not None or self.pre_commit)


def read_settings(claims_dirs: Sequence[Path | str], *, ledger: Path | str | None = None,
                  jobs: int | str | None = None, timeout_s: float | str | None = None, trusted: bool = False,
                  baseline: str | None = None, changed_since: str | None = None, files: Sequence[str] | None = None,
                  pre_commit: bool = False, shard: str | None = None, record_all: bool = False,
                  dry_run: bool = False, isolation: str | None = None,
                  only: Collection[Path | str] | None = None) -> Request:
    """The run's request: trust checked, each folder's settings read, every option resolved (flag over
    physverify.yaml over default), the ledger found writable; a RefusedError or UsageError before anything runs."""
    settings.require_trust(trusted or pre_commit, "replay")  # a repository's own hook runs its own code
    configs = tuple(load_config(folder) for folder in discovery.claims_folders(claims_dirs))
    run = settings.resolve({"timeout_s": timeout_s, "jobs": jobs, "isolation": isolation, "shard": shard,
                            "ledger": ledger}, configs[0])
    if not dry_run:
        check_writable(run.ledger)  # found before the claims run, not after
    return Request(configs, run, baseline, ledger is not None, changed_since, None if files is None else tuple(files),
                   pre_commit, record_all, dry_run, shard,
                   None if only is None else frozenset(Path(path).resolve() for path in only))


def _forks(request: Request) -> bool:
    """Whether any claims folder runs its claims in fork mode."""
    from physverify.isolation import isolate

    return any(isolate.resolve_isolation(request.run.isolation_for(cfg)) == isolate.FORK for cfg in request.configs)


def _warm_up() -> None:
    """Start the fork server in the background now, so the first claim finds it ready (the one place that does)."""
    from physverify.isolation import forkclient

    threading.Thread(target=forkclient.start, name="physverify-warm-up", daemon=True).start()


def _python_file(paths: Iterable[str]) -> bool:
    """Whether a changed file is a Python file: then a claim probably runs (a guess for speed; the plan decides)."""
    return any(path.endswith(".py") for path in paths)


# --- plan -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChangePlan:
    """What a change set decides before planning (``plan_change``); the empty plan runs every claim."""

    changes: pipeline.Changes | None = None  # the changed files of each checkout; None: every claim runs
    staged: bool = False  # the hook was given the ledger as staged, with other content than HEAD's
    staged_blob: repo.Committed | None = None  # that content (None: staged as deleted)
    key_material: str | None = None  # what a no-op memo of this run is kept under (noop.py)
    memo_problem: str | None = None  # why the memo kept there could not be used
    watch: noop.Recorder | None = None  # told what planning looks at, when this run may keep a memo
    kept: tuple[str, ...] | None = None  # the remembered plan's skipped claims: nothing to run at all


def plan_change(request: Request, source: LedgerSource, checkouts: repo.Checkouts, store: cache.Cache | None,
                recorder: noop.Recorder) -> ChangePlan:
    """The change set of each checkout, the ledger as staged (the hook), and the no-op memo's answer."""
    if not request.has_change_set:
        return ChangePlan()
    changes = pipeline.Changes(request.changed_since, request.files or (), checkouts)
    folders = [checkouts.for_folder(cfg.folder) for cfg in request.configs]
    for checkout in folders:  # a bad --changed-since is a usage error before anything runs
        changes.of(checkout.root)
    head = source.blob[0]
    plan = ChangePlan(changes, *_staged(request, folders[0], changes, head))
    if store is not None and head is not None and not source.warnings and not plan.staged:
        plan = _recall(plan, request, folders, source, store, recorder)
    if plan.kept is None and request.files_alone and _python_file(request.files or ()) and _forks(request):
        _warm_up()  # past the memo, a changed Python file is likely some claim's: the server starts while planning
    return plan


def _staged(request: Request, first: repo.Checkout, changes: pipeline.Changes,
            head: repo.Committed | None) -> tuple[bool, repo.Committed | None]:
    """In the hook, whether the ledger is staged with other content than HEAD's, and that content
    (``baseline.staged_ledger``); not asked with --baseline, or without a committed ledger."""
    if not request.pre_commit or request.baseline is not None or head is None:
        return NOT_STAGED
    return staged_ledger(request.target, first, changes.of(first.root), head)


def _recall(plan: ChangePlan, request: Request, folders: Sequence[repo.Checkout], source: LedgerSource,
            store: cache.Cache, recorder: noop.Recorder) -> ChangePlan:
    """``plan`` with the no-op memo's key and answer: the claims it skips when nothing planning looks at changed."""
    key_material = _material(request, folders, source)
    memo, problem = noop.recall(store, key_material)
    changes = plan.changes
    kept = memo.skipped({str(c.real_root): changes.of(c.root) for c in folders}) if memo and changes else None
    return replace(plan, key_material=key_material, memo_problem=problem, watch=recorder,
                   kept=tuple(kept) if kept is not None else None)


def _material(request: Request, folders: Sequence[repo.Checkout], source: LedgerSource) -> str:
    """What a remembered no-op is kept under: the folders, checkouts and ledger as this run resolves them."""
    found, used = source.blob
    shard = request.run.shard
    return noop.material([[str(cfg.folder.resolve()) for cfg in request.configs], [str(c.real_root) for c in folders],
                          os.path.abspath(request.target), os.path.abspath(source.path),
                          found.hexsha if found is not None else None, used, list(shard) if shard else None])


def _nothing_to_run(request: Request, source: LedgerSource, kept: tuple[str, ...]) -> ReplayResult:
    """The result of a run the no-op memo answered: every claim skipped, nothing written."""
    return ReplayResult(claims=(), skipped=kept, ledger=request.target, written=0, fail_on=request.fail_on,
                        exit_code=exit_code([], pre_commit=request.pre_commit, written=0), warnings=(), notes=(),
                        baseline_ref=source.blob[1], shard=request.shard)


@dataclass(frozen=True)
class Judging:
    """What each claim is judged against (``read_baseline``)."""

    baseline: Baseline  # its ``latest`` and ``followed`` grow as ``renames`` follows renamed claims
    recorded: Mapping[str, Mapping[str, Any]]  # the working ledger's latest lines: a line is written when it differs
    renames: pipeline.Renames
    memory: Mapping[str, Mapping[str, Any]] | None  # the change's own ledger, when it differs from the baseline's
    edited: frozenset[str]  # the claims whose verdict that ledger moved: run whatever the change set
    warnings: tuple[str, ...]  # the settings', the ledger readers', and where the baseline came from


def read_baseline(request: Request, source: LedgerSource, change: ChangePlan, checkouts: repo.Checkouts) -> Judging:
    """The baseline, the working ledger and the change's own ledger, each read once, and their warnings."""
    target = request.target
    loaded = load_baseline(target, request.baseline, source.path, blob=source.blob, checkouts=checkouts)
    warnings = [line for cfg in request.configs for line in cfg.warnings] + list(loaded.problems)
    warnings += [*source.warnings, *baseline_note(loaded, target, checkouts)]
    if loaded.path is not None and loaded.path != target:
        warnings.append(f"the baseline is the ledger as committed at {loaded.ref} in {loaded.path}, where that "
                        f"commit's {CONFIG_NAME} or {PYPROJECT_NAME} keeps it; this run writes {target}")
    recorded = loaded.latest if loaded.ref is None else recorded_lines(target, loaded)  # the working ledger, read once
    if loaded.head_copy is not None:
        checkouts.know((loaded.head_copy,))
    memory = (staged_memory(change.staged_blob, loaded) if change.staged
              else change_memory(target, request.baseline, source.blob, loaded, checkouts))
    edited = frozenset(edited_claims(memory, loaded.latest))  # before any rename is followed: the commit's own keys
    renames = pipeline.Renames(loaded, checkouts)
    return Judging(renames.baseline, recorded, renames, memory, edited, tuple(warnings))


# --- run and judge ----------------------------------------------------------------------
def run_claims(request: Request, judging: Judging, change: ChangePlan, discovered: Iterable[pipeline.Planned],
               freezing: pipeline.Freezing, checkouts: repo.Checkouts,
               progress: Progress | None = None) -> tuple[list[ClaimRun], pipeline.Seen]:
    """Each claim planning yields that the change reaches, run and judged as it comes; and what planning saw."""
    seen = pipeline.Seen(progress)
    run_one = _runner(request, judging, seen, checkouts, staged=change.staged)
    # Renames are followed over every claim, the shard chosen after: a claim renamed into another shard
    # is that shard's to judge, and this one must not report its old key as removed.
    planned = pipeline.frozen_while(pipeline.in_shard_only(judging.renames.follow(discovered), request.run.shard),
                                    freezing)
    stream = pipeline.selected(planned, judging.baseline.latest, change.changes, seen, change.watch, judging.edited)
    with guard.watching():  # a claim that changes physverify's limits leaves the run without a verdict
        return pipeline.run_all(run_one, stream, request.run.jobs), seen


def _runner(request: Request, judging: Judging, seen: pipeline.Seen, checkouts: repo.Checkouts, *,
            staged: bool = False) -> Callable[[pipeline.Planned], ClaimRun]:
    from physverify.gate import evaluate as confirm  # imported once a claim may run: a no-op hook never needs them
    from physverify.isolation import isolate

    env = repo.child_env()  # the environment every claim's child starts from, once for the run
    run, baseline, recorded = request.run, judging.baseline, judging.recorded

    def run_one(item: pipeline.Planned) -> ClaimRun:
        start = time.monotonic()
        # the reading and checkout discovery resolved: the commit (and its dirty flag) is
        # looked up once per repository for the whole run, each lookup starts git processes
        evaluation = confirm.evaluate(item.path, timeout_s=run.timeout_s, reading=item.reading, checkouts=checkouts,
                                      isolation=run.isolation_for(item.config), preload=item.config.preload,
                                      env=env)
        isolate.refuse_if_stopping()  # killed on the way out (Ctrl-C): no verdict, no progress line
        if item.base is not None:  # outside git: the line is written under the key planning gave, not confirm's
            evaluation.record["claim_key"] = item.key
        judged = judge_claim(item, evaluation, baseline.latest.get(item.key), recorded.get(item.key),
                             request.fail_on, request.record_all,
                             memory_verdict(judging.memory, item.key, baseline.followed), staged)
        judged = replace(judged, seconds=time.monotonic() - start)
        seen.finished(judged)
        return judged

    return run_one


def judge_claim(item: pipeline.Planned, evaluation: confirm.Evaluation, base: Mapping[str, Any] | None,
                recorded: Mapping[str, Any] | None, fail_on: frozenset[str], record_all: bool,
                memory: str | None = None, staged: bool = False) -> ClaimRun:
    """One claim's evaluation judged against its baseline line ``base`` and its working ledger line ``recorded``
    (rules.judge), as the ClaimRun reports render. ``memory``: the claim's verdict in the change's own ledger (``memory_verdict``), the ledger as staged
    when ``staged``."""
    record = evaluation.record
    before = base.get("verdict") if base is not None else None
    expected = item.config.expect.get(item.path.resolve())
    in_commit, in_index = (None, memory) if staged else (memory, None)
    judged = judge(before, record["verdict"], recorded.get("verdict") if recorded else None, expected, fail_on,
                        record_all=record_all, committed=in_commit, staged=in_index)
    line = record.get("line")
    return ClaimRun(
        key=item.key, transition=judged.transition, verdict=record["verdict"], baseline_verdict=before,
        record=record, baseline=base, expected=expected, failures=judged.failures,
        target=_target(record, item, evaluation.target), line=line if isinstance(line, int) else None, recorded=judged.write,
        committed=in_commit, staged=in_index,
    )


def _target(record: Mapping[str, Any], item: pipeline.Planned, found: Path | None) -> str | None:
    """The claimed file relative to the root when ``found`` (confirm.find_target's answer), else as CLAIM names it."""
    file = record.get("file")
    if not isinstance(file, str):
        return None
    return (item.checkout.relative(found) or file) if found is not None else file


# --- write and conclude -----------------------------------------------------------------
def write_lines(runs: list[ClaimRun], ledger_path: Path, dry_run: bool) -> list[ClaimRun]:
    """Append the line of each claim the gate said to write, in discovery order (none with --dry-run)."""
    if dry_run:
        return [replace(run, recorded=False) for run in runs]
    append_records(ledger_path, [dict(run.record) for run in runs if run.recorded and run.record is not None])
    return runs


def conclude(request: Request, judging: Judging, change: ChangePlan, runs: Sequence[ClaimRun], seen: pipeline.Seen,
             checkouts: repo.Checkouts, store: cache.Cache | None, problems: Sequence[str] = ()) -> ReplayResult:
    """The gate's result: the claims run, the baseline's removed ones, every step's warnings (``problems``: the
    readers'); and the plan kept as the next identical run's no-op memo when it ran nothing and warned of nothing."""
    before, shard = judging.baseline, request.run.shard
    warnings = [*judging.warnings, *problems, *_rename_warnings(judging), *_empty_folders(request, seen)]
    claims = list(runs)
    if request.only is None:
        claims += pipeline.removed(request.configs, before, [*seen.keys, *judging.renames.superseded], shard,
                                   request.fail_on, checkouts)
    if store is not None:
        if not claims and not warnings:
            _remember(store, request, change, before, seen.keys, checkouts)
        if change.memo_problem is not None:  # given once the new memo is kept (it replaces the bad one)
            store.warn(change.memo_problem)
            warnings += [line for line in store.problems if line not in warnings]
    written = sum(run.recorded for run in claims)
    return ReplayResult(
        claims=tuple(claims), skipped=tuple(seen.skipped), ledger=request.target, written=written,
        fail_on=request.fail_on, exit_code=exit_code(claims, pre_commit=request.pre_commit, written=written),
        warnings=tuple(warnings), notes=_notes(claims, written, request.target, request.pre_commit),
        baseline_ref=before.ref, shard=request.shard,
    )


def _empty_folders(request: Request, seen: pipeline.Seen) -> list[str]:
    """A warning per claims folder without a claim: a gate over an empty folder passes vacuously, most likely a
    wrong path (not said of a shard or of chosen claims, which may leave a folder out)."""
    if request.run.shard is not None or request.only is not None:
        return []
    return [f"{cfg.folder}: no claim files here (no *.py whose top level binds CLAIM)"
            for cfg in request.configs if id(cfg) not in seen.folders]


def _rename_warnings(judging: Judging) -> list[str]:
    """One line per renamed claim this run followed to its old key's history."""
    before, bare = judging.baseline, judging.renames.bare
    return [f"{new}: renamed from {old} since {before.ref or 'the ledger'}; judged against {old}'s last line"
            if new not in bare else
            f"{new}: its history is under the key {old} (outside git, keys began at each claim's own folder "
            f"until now); judged against that line, and recorded as {new} from now on"
            for new, old in before.followed.items()]


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


def _remember(store: cache.Cache, request: Request, change: ChangePlan, before: Baseline, planned: Sequence[str],
              checkouts: repo.Checkouts) -> None:
    """Keep this run's plan (it ran nothing and warned of nothing) for the next identical replay (noop.py).

    Not kept when the baseline has a claim under the folders that was not planned (an
    excluded or removed file: whether it is gone is not a stat of this plan) or a claim
    was followed from another key.
    """
    recorder, configs, shard = change.watch, request.configs, request.run.shard
    if recorder is None or change.key_material is None or change.changes is None:
        return
    seen = set(planned)
    bases = pipeline.KeyBases(configs, checkouts)
    if before.followed or any(pipeline.unplanned(cfg, bases.for_folder(cfg), before, seen, shard) for cfg in configs):
        return
    recorder.paths.update(os.fspath(cfg.path) for cfg in configs if cfg.path is not None)
    # the working ledger: a full plan reads it, so one it cannot read (its mode changed) is an error there
    recorder.paths.add(os.fspath(request.target))
    # the repository's pyproject.toml kept as a lookup of its own path, found or not: a [tool.physverify] added
    # later is seen, and another new file in the root does not count
    tables = {cfg.pyproject: os.path.lexists(cfg.pyproject) for cfg in configs if cfg.pyproject is not None}
    noop.remember(store, change.key_material, recorder, {**change.changes.closures.probed, **tables})


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
    request = read_settings(claims_dirs, ledger=ledger, jobs=jobs, timeout_s=timeout_s, trusted=trusted,
                            baseline=baseline, changed_since=changed_since, files=files, pre_commit=pre_commit,
                            shard=shard, record_all=record_all, dry_run=dry_run, isolation=isolation, only=only)
    if not request.files_alone and _forks(request):
        # The server's start (an interpreter importing physverify) overlaps all the run does before its
        # first claim: importing GitPython, the committed ledger, git's change set, discovery. A run that
        # then has no claim to run kills it at exit (forkclient.shutdown) instead of waiting for it. The
        # hook waits for the memo: a start on a guess cost its no-op 15 ms, and 80 ms on a busy machine.
        _warm_up()
    checkouts = repo.Checkouts()
    source = locate_ledger(request.first, request.target, request.explicit_ledger, request.baseline, checkouts)
    store = cache.open_cache()
    change = plan_change(request, source, checkouts, store, recorder)
    if change.kept is not None:  # nothing planning looks at changed, and the change reaches no claim
        return _nothing_to_run(request, source, change.kept)
    readings = cache.Readings(store, checkouts)
    # What the run has made so far lives to its end (pipeline.frozen_while); discovery reads while the baseline
    # is, and reads no further once the run ends, however it ends.
    with pipeline.Freezing() as freezing, closing(pipeline.Ahead(pipeline.plan(
            request.configs, checkouts, readings.read_each, change.watch, request.only))) as discovered:
        judging = read_baseline(request, source, change, checkouts)
        runs, seen = run_claims(request, judging, change, discovered, freezing, checkouts, progress)
        runs = write_lines(runs, request.target, request.dry_run)
        readings.close()
        return conclude(request, judging, change, runs, seen, checkouts, store, readings.problems)
