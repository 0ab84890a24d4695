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

import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physverify.gate import cache, discovery, ledger, noop, pipeline, repo, rules as gate, settings
from physverify.gate.config import CONFIG_NAME, PYPROJECT_NAME, Config, load_config
from physverify.gate.rules import TRANSITIONS
from physverify.isolation import guard
from physverify.gate.baseline import (NOT_STAGED, Baseline, baseline_note, change_memory, committed_blob,
                                       committed_ledger, edited_claims, load_baseline, memory_verdict,
                                       recorded_lines, staged_ledger, staged_memory)
from physverify.gate.pipeline import Progress, in_shard  # their home is pipeline.py
from physverify.gate.discovery import DEFAULT_CLAIMS_DIR, discover, is_skipped_dir  # their home is discovery.py
from physverify.gate.settings import default_ledger  # its home is settings.py, with the ledger's option
from physverify.gate.results import ClaimRun, ReplayResult, exit_code, gate_failures  # their home is results.py

if TYPE_CHECKING:

    from physverify.gate import evaluate as confirm


__all__ = [
    "DEFAULT_CLAIMS_DIR", "TRANSITIONS", "ClaimRun", "ReplayResult", "default_ledger", "discover", "gate_failures", "in_shard",
    "is_skipped_dir", "load_baseline", "parse_shard", "replay",
]



parse_shard = settings.parse_shard  # its home is settings.py, with the other options


def _target(record: Mapping[str, Any], item: pipeline.Planned, found: Path | None) -> str | None:
    """The claimed file relative to the root when ``found`` (confirm.find_target's answer), else as CLAIM names it."""
    file = record.get("file")
    if not isinstance(file, str):
        return None
    return (item.checkout.relative(found) or file) if found is not None else file


def _judge(item: pipeline.Planned, evaluation: confirm.Evaluation, base: Mapping[str, Any] | None,
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
            record_all: bool, seen: pipeline.Seen, checkouts: repo.Checkouts,
            run: settings.RunSettings,
            memory: Mapping[str, Mapping[str, Any]] | None = None, *,
            staged: bool = False) -> Callable[[pipeline.Planned], ClaimRun]:
    from physverify.gate import evaluate as confirm  # imported once a claim may run: a no-op hook never needs them
    from physverify.isolation import isolate

    env = repo.child_env()  # the environment every claim's child starts from, once for the run

    def run_one(item: pipeline.Planned) -> ClaimRun:
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
              changes: pipeline.Changes, target: Path) -> None:
    """Keep this run's plan (it ran nothing and warned of nothing) for the next identical replay (noop.py).

    Not kept when the baseline has a claim under the folders that was not planned (an
    excluded or removed file: whether it is gone is not a stat of this plan) or a claim
    was followed from another key.
    """
    seen = set(planned)
    bases = pipeline.KeyBases(configs, checkouts)
    if before.followed or any(pipeline.unplanned(cfg, bases.for_folder(cfg), before, seen, shard) for cfg in configs):
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
        changes = pipeline.Changes(changed_since, files or ())
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
    # What the run has made so far lives to its end (pipeline.frozen_while); discovery reads while the baseline is, and
    # reads no further once the run ends, however it ends.
    with pipeline.Freezing() as freezing, \
            closing(pipeline.Ahead(pipeline.plan(configs, checkouts, readings.read_each, watch, chosen))) as discovered:
        before = loaded = load_baseline(target, baseline, committed, blob=blob)
        warnings = [line for cfg in configs for line in cfg.warnings] + list(before.problems) + moved
        warnings += baseline_note(before, target)
        if before.path is not None and before.path != target:
            warnings.append(f"the baseline is the ledger as committed at {before.ref} in {before.path}, where that "
                            f"commit's {CONFIG_NAME} or {PYPROJECT_NAME} keeps it; this run writes {target}")
        recorded = before.latest if before.ref is None else recorded_lines(target, before)  # the working ledger, read once
        if before.head_copy is not None:
            checkouts.know((before.head_copy,))
        renames = pipeline.Renames(before)
        before = renames.baseline
        seen = pipeline.Seen(progress)
        memory = staged_memory(staged_blob, loaded) if staged else change_memory(target, baseline, blob, loaded)
        edited = edited_claims(memory, before.latest)  # before any rename is followed: the baseline commit's own keys
        run_one = _runner(seconds, before, recorded, first.fail_on, record_all, seen, checkouts, run, memory,
                          staged=staged)
        # Renames are followed over every claim, the shard chosen after: a claim renamed into another shard
        # is that shard's to judge, and this one must not report its old key as removed.
        planned = pipeline.frozen_while(pipeline.in_shard_only(renames.follow(discovered), shard_kn), freezing)
        stream = pipeline.selected(planned, before.latest, changes, seen, watch, edited)
        with guard.watching():  # a claim that changes physverify's limits leaves the run without a verdict
            runs = pipeline.run_all(run_one, stream, workers)
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
            runs += pipeline.removed(configs, before, [*seen.keys, *renames.superseded], shard_kn, first.fail_on, checkouts)
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

