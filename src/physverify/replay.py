"""``physverify replay``: the claims gate (DESIGN.md, "Replay: the gate").

replay = discovery + baseline + ``confirm.evaluate`` for each claim (in parallel) +
transitions + ledger writes. Each claim goes through the same isolated child and the
same verdict rules as ``confirm``; nothing here runs a claim or decides a verdict itself.

The ledger, when no --ledger is given: the ``ledger`` key of the first claims folder's
physverify.yaml (relative to that folder), else ``confirm_ledger.jsonl`` inside the first
claims folder. Keeping it inside the claims folder keeps it a tracked file of the
repository, which the pre-commit flow needs: pre-commit only notices changes to tracked
files. timeout, jobs, ledger and fail_on come from the first folder's physverify.yaml;
exclude and expect apply to the folder whose file names them.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import git

from physverify import affected, claim, confirm, ledger
from physverify.config import (
    DECIDED, FIXED, NEW, REGRESSED, REMOVED, TRANSITIONS, UNCHANGED, UNDECIDABLE, Config, load_config,
)
from physverify.errors import UsageError
from physverify.verdict import CONFIRMED, EXIT_FINDING, EXIT_OK, NOT_DECIDABLE, REJECTED, VERDICTS

DEFAULT_CLAIMS_DIR = "claims"
# Folders that hold installed or generated code, never claims (one set, used only here).
SKIP_DIRS = frozenset({"venv", ".venv", "env", "site-packages", "build", "dist", "node_modules", "__pycache__"})

__all__ = [
    "TRANSITIONS", "ClaimRun", "ReplayResult", "default_ledger", "discover", "gate_failures", "in_shard",
    "is_skipped_dir", "load_baseline", "parse_shard", "replay", "transition",
]


@dataclass(frozen=True)
class ClaimRun:
    """One claim in a replay: its ledger object (None when removed), baseline, transition, gate failures."""

    key: str
    transition: str
    verdict: str | None
    baseline_verdict: str | None
    record: Mapping[str, Any] | None
    baseline: Mapping[str, Any] | None
    expected: str | None = None
    failures: tuple[str, ...] = ()  # why this claim fails the gate; empty when it does not
    target: str | None = None  # the claimed file, relative to the repository root when found
    line: int | None = None
    recorded: bool = False  # a ledger line was written for it in this run

    @property
    def location(self) -> str:
        """The claimed place as file:line (the claim file itself when the target is unknown)."""
        if self.target is None:
            return self.key
        return f"{self.target}:{self.line}" if self.line is not None else self.target

    @property
    def reason(self) -> str:
        """The verdict's one-sentence reason (or why a removed claim has none)."""
        if self.record is None:
            return "the claim file is gone; its last verdict was " + str(self.baseline_verdict)
        return str(self.record.get("reason") or "")

    def change(self) -> str:
        """The transition in words, with both verdicts: 'regressed: rejected -> confirmed'."""
        if self.transition in (NEW, UNCHANGED):
            return f"{self.transition}: {self.verdict}"
        return f"{self.transition}: {self.baseline_verdict or 'no verdict'} -> {self.verdict or 'removed'}"


@dataclass(frozen=True)
class ReplayResult:
    """Everything a replay found, for the renderers in report/, and its exit code."""

    claims: tuple[ClaimRun, ...]
    skipped: tuple[str, ...]  # claim keys not re-run because no input changed
    ledger: Path
    written: int
    fail_on: frozenset[str]
    exit_code: int
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    baseline_ref: str | None = None
    shard: str | None = None

    def counts(self) -> dict[str, int]:
        """How many claims had each transition, in the order of TRANSITIONS."""
        return {t: n for t in TRANSITIONS if (n := sum(run.transition == t for run in self.claims))}

    @property
    def gate_failed(self) -> bool:
        return any(run.failures for run in self.claims)

    def summary(self) -> str:
        """``3 claims: 2 unchanged, 1 new; 0 skipped as unaffected; 1 line written to LEDGER``."""
        counts = ", ".join(f"{n} {t}" for t, n in self.counts().items()) or "no claims run"
        return (
            f"{_plural(len(self.claims), 'claim')}: {counts}; {len(self.skipped)} skipped as unaffected; "
            f"{_plural(self.written, 'line')} written to {self.ledger}"
        )


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class _Planned:
    path: Path
    key: str
    root: Path
    config: Config


Progress = Callable[[ClaimRun, int, int], None]


# --- pure parts -------------------------------------------------------------------------
def transition(before: str | None, after: str) -> str:
    """The transition from a baseline verdict (None: no line yet) to this run's verdict."""
    if before not in VERDICTS:  # no line yet, or a line without a verdict we know: nothing to compare with
        return NEW
    if before == after:
        return UNCHANGED
    if after == NOT_DECIDABLE:
        return UNDECIDABLE
    if before == NOT_DECIDABLE:
        return DECIDED
    return FIXED if (before, after) == (CONFIRMED, REJECTED) else REGRESSED


def gate_failures(run: ClaimRun, fail_on: frozenset[str]) -> tuple[str, ...]:
    """Why ``run`` fails the gate: its transition is in fail_on, or its verdict is not the expected one."""
    reasons = []
    if run.transition in fail_on:
        reasons.append(run.change())
    if run.expected is not None and run.verdict != run.expected:
        reasons.append(f"expected {run.expected} (physverify.yaml), got {run.verdict or 'removed'}")
    return tuple(reasons)


def parse_shard(text: str) -> tuple[int, int]:
    """K/N as (K, N) with 1 <= K <= N; UsageError otherwise."""
    k, sep, n = text.partition("/")
    if not (sep and k.strip().isdigit() and n.strip().isdigit()) or not 1 <= int(k) <= int(n):
        raise UsageError(f"--shard must be K/N with 1 <= K <= N (for example 2/3), not {text!r}")
    return int(k), int(n)


def in_shard(key: str, k: int, n: int) -> bool:
    """True when claim ``key`` belongs to shard K of N: sha256 of the key, so every machine agrees."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % n == k - 1


def is_skipped_dir(name: str) -> bool:
    """True for hidden folders and folders of installed or generated code (venv, build, ...)."""
    return name.startswith(".") or name in SKIP_DIRS


def _excluded(relative: str, globs: Sequence[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(relative, g) or fnmatch.fnmatchcase(name, g) for g in globs)


def discover(folder: Path, exclude: Sequence[str] = ()) -> list[Path]:
    """Claim files under ``folder``: *.py binding CLAIM at top level (read statically), sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not is_skipped_dir(d)]  # pruned, so a trap in .venv is never read
        for name in filenames:
            path = Path(dirpath) / name
            relative = path.relative_to(folder).as_posix()
            if name.endswith(".py") and not name.startswith(("_", ".")) and not _excluded(relative, exclude):
                if claim.binds_claim(path):  # files without CLAIM are helpers
                    found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


# --- settings ---------------------------------------------------------------------------
def _folders(claims_dirs: Sequence[Path | str]) -> list[Path]:
    folders = [Path(d) for d in (claims_dirs or [DEFAULT_CLAIMS_DIR])]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such claims folder")
    return folders


def _jobs(value: int | str | None, configured: int | None) -> int:
    if value is None:
        return configured or os.cpu_count() or 1
    try:
        jobs = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"--jobs must be a whole number of at least 1, not {value!r}") from None
    if jobs < 1:
        raise UsageError(f"--jobs must be a whole number of at least 1, not {value!r}")
    return jobs


def default_ledger(first: Config) -> Path:
    """The ledger replay uses without --ledger: physverify.yaml's ``ledger``, else claims/confirm_ledger.jsonl."""
    return first.ledger if first.ledger is not None else first.folder / ledger.DEFAULT_LEDGER


# --- baseline ---------------------------------------------------------------------------
def _ledger_at(ref: str, ledger_path: Path, root: Path) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The ledger file as committed at ``ref`` (empty when it did not exist there)."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
        commit = repo.commit(ref)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(f"--baseline {ref}: {root} is not in a git repository") from None
    except (git.BadName, git.BadObject, ValueError, git.GitCommandError):
        raise UsageError(f"--baseline: {ref!r} is not a commit in {repo.working_tree_dir}") from None
    relative = affected.relative_key(ledger_path, Path(repo.working_tree_dir or root))
    if relative is None:
        raise UsageError(f"--baseline {ref}: the ledger {ledger_path} is not inside the repository")
    try:
        data = (commit.tree / relative).data_stream.read()
    except KeyError:  # no ledger at that commit: every claim is new
        return [], []
    read = ledger.parse_ledger(data, f"{relative}@{ref}")  # the one tolerant reader, as for the file
    return list(read.records), list(read.problems)


def load_baseline(ledger_path: Path, ref: str | None, folder: Path) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    """The latest line per claim key, read once before anything runs, and the reader's warnings."""
    root = ledger.repo_root_for(folder)
    records: list[Mapping[str, Any]]
    if ref is None:
        read = ledger.read_ledger(ledger_path)
        records, problems = list(read.records), [str(p) for p in read.problems]
    else:
        records, problems = _ledger_at(ref, ledger_path, root)
    return dict(ledger.latest_by_claim(records)), problems


# --- planning ---------------------------------------------------------------------------
def _affected(item: _Planned, changed: frozenset[str]) -> bool:
    inputs = affected.claim_inputs(item.path, item.root, affected.target_of(item.path), item.config.path)
    return affected.is_affected(inputs, changed)


def _select(planned: list[_Planned], before: Mapping[str, Any], changed: frozenset[str]) -> tuple[list[_Planned], list[str]]:
    """The claims to run (affected, or with no line in the baseline yet) and the keys skipped."""
    # with nothing changed, no import closure needs reading (the common no-change run)
    keep = {p.key for p in planned if p.key not in before or (changed and _affected(p, changed))}
    return [p for p in planned if p.key in keep], [p.key for p in planned if p.key not in keep]


def _plan(configs: Sequence[Config], shard: tuple[int, int] | None) -> list[_Planned]:
    planned: list[_Planned] = []
    for cfg in configs:
        root = ledger.repo_root_for(cfg.folder)
        for path in discover(cfg.folder, cfg.exclude):
            key = ledger.claim_key(path, root)
            if shard is None or in_shard(key, *shard):
                planned.append(_Planned(path, key, root, cfg))
    return planned


def _removed(configs: Sequence[Config], before: Mapping[str, Mapping[str, Any]], shard: tuple[int, int] | None,
             fail_on: frozenset[str]) -> list[ClaimRun]:
    """Baseline claims under the replayed folders whose file is gone (or no longer binds CLAIM)."""
    runs = []
    for cfg in configs:
        root = ledger.repo_root_for(cfg.folder)
        prefix = affected.relative_key(cfg.folder, root) or ""
        for key, base in before.items():
            under = prefix in ("", ".") or key.startswith(prefix + "/")
            if under and _gone(root / key) and (shard is None or in_shard(key, *shard)):
                line = base.get("line")
                run = ClaimRun(key, REMOVED, None, base.get("verdict"), None, base, target=base.get("file"),
                               line=line if isinstance(line, int) else None)
                runs.append(replace(run, failures=gate_failures(run, fail_on)))
    return sorted(runs, key=lambda r: r.key)


def _gone(path: Path) -> bool:
    return not path.is_file() or not claim.binds_claim(path)


# --- running ----------------------------------------------------------------------------
@contextmanager
def _mapper(jobs: int) -> Iterator[Callable[..., Iterator[Any]]]:
    """``map`` for one job, a thread pool's map otherwise: the same function runs either way.

    Threads suffice because each claim runs in its own child process (isolate.py)."""
    if jobs == 1:
        yield map
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            yield pool.map


def _target(record: Mapping[str, Any], item: _Planned) -> str | None:
    file = record.get("file")
    if not isinstance(file, str):
        return None
    found = confirm.find_target(item.root, item.path, file)  # spec section 3's lookup, as confirm does it
    return (affected.relative_key(found, item.root) or file) if found is not None else file


def _judge(item: _Planned, record: Mapping[str, Any], base: Mapping[str, Any] | None, fail_on: frozenset[str]) -> ClaimRun:
    before = base.get("verdict") if base is not None else None
    run = ClaimRun(
        key=item.key, transition=transition(before, record["verdict"]), verdict=record["verdict"],
        baseline_verdict=before, record=record, baseline=base,
        expected=item.config.expect.get(item.path.resolve()),
        target=_target(record, item), line=record.get("line") if isinstance(record.get("line"), int) else None,
    )
    return replace(run, failures=gate_failures(run, fail_on))


def _runner(timeout_s: float, before: Mapping[str, Mapping[str, Any]], fail_on: frozenset[str], total: int,
            progress: Progress | None, isolation: str | None = None) -> Callable[[_Planned], ClaimRun]:
    lock = threading.Lock()
    done = [0]
    # The commit (and its dirty flag) is looked up once per repository for the whole run,
    # not once per claim: each lookup starts git processes (benchmarks/replay_bench.py).
    commit_of = functools.lru_cache(maxsize=None)(ledger.repo_commit)

    def run_one(item: _Planned) -> ClaimRun:
        evaluation = confirm.evaluate(item.path, timeout_s=timeout_s, repo_root=item.root, commit_of=commit_of,
                                      isolation=isolation or item.config.isolation, preload=item.config.preload)
        run = _judge(item, evaluation.record, before.get(item.key), fail_on)
        if progress is not None:
            with lock:  # one progress line at a time, numbered in the order claims finish
                done[0] += 1
                progress(run, done[0], total)
        return run

    return run_one


def _write(runs: list[ClaimRun], ledger_path: Path, record_all: bool) -> list[ClaimRun]:
    """Append a line for each new or changed claim (every claim with record_all), in discovery order."""
    written = []
    for run in runs:
        if run.record is not None and (record_all or run.transition != UNCHANGED):
            ledger.append_record(ledger_path, dict(run.record))
            run = replace(run, recorded=True)
        written.append(run)
    return written


def _notes(written: int, ledger_path: Path, pre_commit: bool) -> tuple[str, ...]:
    if not (pre_commit and written):
        return ()
    shown = ledger_path.as_posix()
    return (
        f"the ledger changed ({written} new line{'s' if written != 1 else ''} in {shown}): review it with "
        f"'git diff {shown}', stage it with 'git add {shown}', and commit again",
    )


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
    progress: Progress | None = None,
    isolation: str | None = None,
) -> ReplayResult:
    """Replay the claims folders against their baseline, append the ledger lines, return the gate's result."""
    confirm.require_trust(trusted or pre_commit)  # a repository's own hook runs its own code
    configs = [load_config(folder) for folder in _folders(claims_dirs)]
    first = configs[0]
    seconds = confirm.parse_timeout(timeout_s if timeout_s is not None else first.timeout or confirm.DEFAULT_TIMEOUT_S)
    workers = _jobs(jobs, first.jobs)
    shard_kn = parse_shard(shard) if shard is not None else None
    target = Path(ledger) if ledger is not None else default_ledger(first)
    if not target.parent.is_dir():  # found before the claims run, not after
        raise UsageError(f"{target}: the ledger's folder does not exist")
    before, warnings = load_baseline(target, baseline, first.folder)
    planned = _plan(configs, shard_kn)
    if shard_kn is None:  # a gate over an empty folder passes vacuously: most likely a wrong path
        warnings += [f"{cfg.folder}: no claim files here (no *.py whose top level binds CLAIM)"
                     for cfg in configs if not any(item.config is cfg for item in planned)]
    skipped: list[str] = []
    if changed_since is not None or files is not None or pre_commit:
        changed = affected.changed_files({p.root for p in planned}, changed_since, files or ())
        planned, skipped = _select(planned, before, changed)
    run_one = _runner(seconds, before, first.fail_on, len(planned), progress, isolation)
    with _mapper(min(workers, max(len(planned), 1))) as mapper:
        runs = list(mapper(run_one, planned))
    runs = _write(runs, target, record_all)
    runs += _removed(configs, before, shard_kn, first.fail_on)
    written = sum(run.recorded for run in runs)
    failed = any(run.failures for run in runs) or (pre_commit and written > 0)
    return ReplayResult(
        claims=tuple(runs), skipped=tuple(skipped), ledger=target, written=written, fail_on=first.fail_on,
        exit_code=EXIT_FINDING if failed else EXIT_OK, warnings=tuple(warnings),
        notes=_notes(written, target, pre_commit), baseline_ref=baseline, shard=shard,
    )
