"""``physverify replay``: the claims gate (DESIGN.md, "Replay: the gate").

replay = discovery + baseline + ``confirm.evaluate`` for each claim (in parallel) +
the rules of gate.py + ledger writes. Each claim goes through the same isolated child
and the same verdict rules as ``confirm``; nothing here runs a claim or decides a
verdict itself, and the transitions and the gate live in gate.py.

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

import fnmatch
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from physverify import affected, claim, confirm, gate, isolate, ledger, repo
from physverify.config import CONFIG_NAME, Config, ledger_setting, load_config
from physverify.errors import PhysverifyError, UsageError
from physverify.gate import REMOVED, TRANSITIONS, UNCHANGED
from physverify.verdict import EXIT_FINDING, EXIT_OK, evidence

DEFAULT_CLAIMS_DIR = "claims"
# Folders that hold installed or generated code, never claims (one set, used only here).
SKIP_DIRS = frozenset({"venv", ".venv", "env", "site-packages", "build", "dist", "node_modules", "__pycache__"})

__all__ = [
    "TRANSITIONS", "ClaimRun", "ReplayResult", "default_ledger", "discover", "gate_failures", "in_shard",
    "is_skipped_dir", "load_baseline", "parse_shard", "replay",
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

    @property
    def evidence(self) -> str | None:
        """The check that decided the verdict, 'check FAIL <label>: <message>' (None for an unchanged, passing claim)."""
        if self.transition == UNCHANGED and not self.failures:
            return None
        return evidence(self.record or self.baseline or {})

    def change(self) -> str:
        """The transition in words, with both verdicts: 'regressed: rejected -> confirmed'."""
        return gate.change(self.transition, self.baseline_verdict, self.verdict)


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
    checkout: repo.Checkout
    config: Config
    reading: claim.ClaimReading

    @property
    def root(self) -> Path:
        return self.checkout.root


@dataclass(frozen=True)
class Baseline:
    """The latest line per claim key the run is judged against, where it came from, and reader warnings."""

    latest: Mapping[str, Mapping[str, Any]]
    ref: str | None  # the commit it was read at; None: the working ledger (outside git, never committed)
    problems: tuple[str, ...] = ()
    source: repo.Committed | None = None  # the committed ledger it was read from
    path: Path | None = None  # where that ledger is in the tree (the baseline commit's own setting)
    followed: Mapping[str, str] = field(default_factory=dict)  # a renamed claim's key -> its key in the baseline


Progress = Callable[[ClaimRun, int, int], None]


# --- pure parts -------------------------------------------------------------------------
def gate_failures(run: ClaimRun, fail_on: frozenset[str]) -> tuple[str, ...]:
    """Why ``run`` fails the gate under ``fail_on`` (gate.failures applied to a ClaimRun)."""
    return gate.failures(run.transition, run.baseline_verdict, run.verdict, run.expected, fail_on)


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


def _regular(path: Path) -> bool:
    # Only regular files are read: a FIFO (or a device) named x.py would block the read forever.
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def discover(folder: Path, exclude: Sequence[str] = ()) -> list[Path]:
    """Claim files under ``folder``: regular *.py files binding CLAIM at top level (read statically), sorted."""
    return [reading.path for reading in read_claims(folder, exclude)]


def read_claims(folder: Path, exclude: Sequence[str] = (),
                read: Callable[[Path], claim.ClaimReading] = claim.read) -> Iterator[claim.ClaimReading]:
    """The reading of each claim file under ``folder`` (``read`` reads each candidate once), sorted by path.

    A generator, so the first claims can start while later ones are still being read.
    """
    for path in _candidates(folder, exclude):
        reading = read(path)
        if reading.binds:  # files without CLAIM are helpers
            yield reading


def _candidates(folder: Path, exclude: Sequence[str]) -> list[Path]:
    """Regular *.py files under ``folder`` that may hold a claim (not _private, not excluded), sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not is_skipped_dir(d)]  # pruned, so a trap in .venv is never read
        for name in filenames:
            path = Path(dirpath) / name
            relative = path.relative_to(folder).as_posix()
            if name.endswith(".py") and not name.startswith(("_", ".")) and not _excluded(relative, exclude):
                if _regular(path):
                    found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


# --- settings ---------------------------------------------------------------------------
def _folders(claims_dirs: Sequence[Path | str]) -> list[Path]:
    """The claims folders, each once: a folder named twice, or inside another named one, is dropped."""
    folders = [Path(d) for d in (claims_dirs or [DEFAULT_CLAIMS_DIR])]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such claims folder")
    kept: list[Path] = []
    for folder in sorted(folders, key=lambda f: len(f.resolve().parts)):
        if not any(folder.resolve().is_relative_to(k.resolve()) for k in kept):
            kept.append(folder)
    return sorted(kept, key=folders.index)  # the order given: the first folder's settings count


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
def load_baseline(ledger_path: Path, ref: str | None, committed_path: Path | None = None) -> Baseline:
    """The ledger the run is judged against, read once before anything runs.

    ``ref`` given: the ledger as committed there (none there: every claim is new). No
    ref: as committed at HEAD, or the working ledger outside git or before it was ever
    committed. ``committed_path`` is where the ledger is in the commit (default: where
    this run writes it); the committed blob is streamed, and only the latest line per
    claim is kept (issue 21, item 11).
    """
    at = committed_path or ledger_path
    if ref is not None:
        found = repo.blob_at(at, ref)
        used: str | None = ref
    else:
        found = repo.blob_at_head(at)
        used = "HEAD" if found is not None else None
    if used is None:
        read = ledger.read_latest(ledger_path)
        return Baseline(read.latest, None, tuple(read.problems))
    name = f"{at}@{used}"
    read = ledger.latest_of_chunks(found.chunks if found is not None else tuple, name)  # the one tolerant reader
    return Baseline(read.latest, used, tuple(read.problems), found, at)


def committed_ledger(first: Config, target: Path, explicit: bool, ref: str | None) -> tuple[Path, list[str]]:
    """Where the baseline commit keeps the ledger: its own physverify.yaml's ``ledger``, else its default.

    A change that moves the ledger in physverify.yaml must not move the gate's memory with
    it (issue 21, item 9), so the commit's copy decides. A --ledger the caller gives is
    the caller's choice, kept. A copy that cannot be read gives a warning and ``target``.
    """
    if explicit:
        return target, []
    where = first.folder / CONFIG_NAME
    try:
        found = repo.blob_at(where, ref) if ref is not None else repo.blob_at_head(where)
        if found is None:  # no settings in that commit: its default place
            return first.folder / ledger.DEFAULT_LEDGER, []
        if found.size > (1 << 20):
            raise PhysverifyError(f"{where}@{found.ref}: larger than 1 MiB")
        text = b"".join(found.chunks()).decode("utf-8")
        setting = ledger_setting(first.folder, text, Path(f"{where}@{found.ref}"))
    except UsageError:
        raise  # a ref that names no commit: the same error the ledger's reading gives
    except (PhysverifyError, UnicodeDecodeError) as exc:
        return target, [f"{where}: its committed copy cannot give the baseline's ledger ({exc}); reading the "
                        f"baseline from {target}"]
    return (setting if setting is not None else first.folder / ledger.DEFAULT_LEDGER), []


def _recorded(ledger_path: Path, baseline: Baseline) -> Mapping[str, Mapping[str, Any]]:
    """The working ledger's latest line per claim: what a line is compared with before it is written.

    Read once: when the working ledger holds the committed bytes (the usual case), it is
    the baseline already read (issue 21, item 11).
    """
    if baseline.source is not None and baseline.path == ledger_path and baseline.source.same_as(ledger_path):
        return baseline.latest
    return ledger.read_latest(ledger_path).latest


def follow_renames(baseline: Baseline, planned: Sequence[_Planned]) -> Baseline:
    """``baseline`` with each renamed claim's line under its new key too, so moving a file keeps its history.

    A claim whose key has no baseline line takes the line of a key whose file is gone: the
    one git's rename detection names (between the baseline commit and the working tree),
    else the only one recorded with the same content hash (issue 21, item 9).
    """
    missing = [item for item in planned if item.key not in baseline.latest]
    if not missing:
        return baseline
    current = {item.key for item in planned}
    gone = {key for key in baseline.latest if key not in current}
    if not gone:
        return baseline
    renames: dict[Path, dict[str, str]] = {}
    if baseline.ref is not None:
        for root in {item.root for item in missing}:
            renames[root] = repo.renamed_since(root, baseline.ref)
    by_hash: dict[str, list[str]] = {}
    for key in sorted(gone):
        digest = baseline.latest[key].get("claim_sha256")
        if isinstance(digest, str):
            by_hash.setdefault(digest, []).append(key)
    followed: dict[str, str] = {}
    for item in missing:
        old = renames.get(item.root, {}).get(item.key)
        if old not in gone:
            same = by_hash.get(item.reading.sha256 or "", [])  # the hash discovery read once
            old = same[0] if len(same) == 1 else None
        if old is not None and old not in followed.values() and _gone(item.root / old):
            followed[item.key] = old
    if not followed:
        return baseline
    latest = {**baseline.latest, **{new: baseline.latest[old] for new, old in followed.items()}}
    return replace(baseline, latest=latest, followed=followed)


# --- planning ---------------------------------------------------------------------------
def _affected(item: _Planned, changed: frozenset[str]) -> bool:
    inputs = affected.claim_inputs(item.path, item.root, item.reading.target, item.config.path,
                                   imports=item.reading.imports)
    return affected.is_affected(inputs, changed)


def _select(planned: list[_Planned], before: Mapping[str, Any], changed: frozenset[str]) -> tuple[list[_Planned], list[str]]:
    """The claims to run (affected, or with no line in the baseline yet) and the keys skipped."""
    # with nothing changed, no import closure needs reading (the common no-change run)
    keep = {p.key for p in planned if p.key not in before or (changed and _affected(p, changed))}
    return [p for p in planned if p.key in keep], [p.key for p in planned if p.key not in keep]


def _plan(configs: Sequence[Config], shard: tuple[int, int] | None, checkouts: repo.Checkouts,
          read: Callable[[Path], claim.ClaimReading] = claim.read) -> list[_Planned]:
    planned: dict[Path, _Planned] = {}
    for cfg in configs:
        for reading in read_claims(cfg.folder, cfg.exclude, read):
            path = reading.path
            # the same root and key confirm gives the claim (CLAIM["repo"], else its checkout)
            checkout = checkouts.for_claim(path, reading.claim)
            key = repo.claim_key(path, checkout.root)
            if (shard is None or in_shard(key, *shard)) and path.resolve() not in planned:
                planned[path.resolve()] = _Planned(path, key, checkout, cfg, reading)
    return list(planned.values())


def _removed(configs: Sequence[Config], baseline: Baseline, planned: Iterable[str], shard: tuple[int, int] | None,
             fail_on: frozenset[str], checkouts: repo.Checkouts) -> list[ClaimRun]:
    """Baseline claims under the replayed folders whose file is gone, and that existed at the baseline commit.

    A claim renamed in this run is followed (``follow_renames``), not removed.
    """
    runs = []
    seen = set(planned) | set(baseline.followed.values())
    for cfg in configs:
        root = checkouts.for_folder(cfg.folder).root
        prefix = repo.relative_key(cfg.folder, root) or ""
        keys = [key for key in baseline.latest if key not in seen and (prefix in ("", ".") or key.startswith(prefix + "/"))
                and _gone(root / key) and (shard is None or in_shard(key, *shard))]
        existed = repo.paths_at(root, baseline.ref, keys) if baseline.ref is not None else frozenset(keys)
        for key in sorted(existed):
            seen.add(key)
            base = baseline.latest[key]
            line = base.get("line")
            run = ClaimRun(key, REMOVED, None, base.get("verdict"), None, base, target=base.get("file"),
                           line=line if isinstance(line, int) else None)
            runs.append(replace(run, failures=gate_failures(run, fail_on)))
    return sorted(runs, key=lambda r: r.key)


def _gone(path: Path) -> bool:
    return not _regular(path) or not claim.binds_claim(path)


# --- running ----------------------------------------------------------------------------
def _run_all(run_one: Callable[[_Planned], ClaimRun], planned: Sequence[_Planned], jobs: int) -> list[ClaimRun]:
    """``run_one`` over the claims: a plain loop for one job, a thread pool otherwise (each claim is its own process).

    On Ctrl-C or SIGTERM (any BaseException) nothing new starts, every running claim's
    process group is killed (isolate.stopping, in either isolation mode), and once every
    worker has returned the exception goes on to cli.main. With one job the interrupted
    wait kills its own claim.
    """
    if jobs == 1:
        return [run_one(item) for item in planned]
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures: list[Future[ClaimRun]] = [pool.submit(run_one, item) for item in planned]
    try:
        runs = [future.result() for future in futures]
    except BaseException:  # clean up: stop queued claims, kill running ones, refuse new ones, then re-raise
        with isolate.stopping():
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return runs


def _target(record: Mapping[str, Any], item: _Planned) -> str | None:
    file = record.get("file")
    if not isinstance(file, str):
        return None
    found = confirm.find_target(item.root, item.path, file)  # spec section 3's lookup, as confirm does it
    return (repo.relative_key(found, item.root) or file) if found is not None else file


def _judge(item: _Planned, record: Mapping[str, Any], base: Mapping[str, Any] | None,
           recorded: Mapping[str, Any] | None, fail_on: frozenset[str], record_all: bool) -> ClaimRun:
    before = base.get("verdict") if base is not None else None
    expected = item.config.expect.get(item.path.resolve())
    judged = gate.judge(before, record["verdict"], recorded.get("verdict") if recorded else None, expected, fail_on,
                        record_all=record_all)
    line = record.get("line")
    return ClaimRun(
        key=item.key, transition=judged.transition, verdict=record["verdict"], baseline_verdict=before,
        record=record, baseline=base, expected=expected, failures=judged.failures,
        target=_target(record, item), line=line if isinstance(line, int) else None, recorded=judged.write,
    )


def _runner(timeout_s: float, baseline: Baseline, recorded: Mapping[str, Mapping[str, Any]], fail_on: frozenset[str],
            record_all: bool, total: int, progress: Progress | None, checkouts: repo.Checkouts,
            isolation: str | None = None) -> Callable[[_Planned], ClaimRun]:
    lock = threading.Lock()
    done = [0]

    def run_one(item: _Planned) -> ClaimRun:
        # the reading and checkout discovery resolved: the commit (and its dirty flag) is
        # looked up once per repository for the whole run, each lookup starts git processes
        evaluation = confirm.evaluate(item.path, timeout_s=timeout_s, reading=item.reading, checkouts=checkouts,
                                      isolation=isolation or item.config.isolation, preload=item.config.preload)
        isolate.refuse_if_stopping()  # killed on the way out (Ctrl-C): no verdict, no progress line
        run = _judge(item, evaluation.record, baseline.latest.get(item.key), recorded.get(item.key), fail_on,
                     record_all)
        if progress is not None:
            with lock:  # one progress line at a time, numbered in the order claims finish
                done[0] += 1
                progress(run, done[0], total)
        return run

    return run_one


def _write(runs: list[ClaimRun], ledger_path: Path, dry_run: bool) -> list[ClaimRun]:
    """Append the line of each claim the gate said to write, in discovery order (none with --dry-run)."""
    if dry_run:
        return [replace(run, recorded=False) for run in runs]
    for run in runs:
        if run.recorded and run.record is not None:
            ledger.append_record(ledger_path, dict(run.record))
    return runs


def _notes(written: int, ledger_path: Path, pre_commit: bool) -> tuple[str, ...]:
    if not (pre_commit and written):
        return ()
    shown = ledger_path.as_posix()
    return (
        f"the ledger changed ({written} new line{'s' if written != 1 else ''} in {shown}): review it with "
        f"'git diff {shown}', stage it with 'git add {shown}', and commit again",
    )


def _check_ledger(path: Path) -> None:
    ledger.check_writable(path)  # here, because replay()'s ``ledger`` keyword hides the module inside it


def _baseline_note(baseline: Baseline, target: Path) -> list[str]:
    if baseline.ref is None and repo.open_repo(target.parent) is not None:
        return [f"{target}: not committed yet, so the baseline is the ledger as this run found it; "
                "commit it: the committed ledger is the gate's memory"]
    return []


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
) -> ReplayResult:
    """Replay the claims folders against their baseline, append the changed lines, return the gate's result."""
    confirm.require_trust(trusted or pre_commit)  # a repository's own hook runs its own code
    configs = [load_config(folder) for folder in _folders(claims_dirs)]
    first = configs[0]
    seconds = confirm.parse_timeout(timeout_s if timeout_s is not None else first.timeout or confirm.DEFAULT_TIMEOUT_S)
    workers = _jobs(jobs, first.jobs)
    shard_kn = parse_shard(shard) if shard is not None else None
    target = Path(ledger) if ledger is not None else default_ledger(first)
    if not dry_run:
        _check_ledger(target)  # found before the claims run, not after
    committed, moved = committed_ledger(first, target, ledger is not None, baseline)
    before = load_baseline(target, baseline, committed)
    warnings = list(before.problems) + moved + _baseline_note(before, target)
    if before.path is not None and before.path != target:
        warnings.append(f"the baseline is the ledger as committed at {before.ref} in {before.path}, where that "
                        f"commit's {CONFIG_NAME} keeps it; this run writes {target}")
    recorded = before.latest if before.ref is None else _recorded(target, before)  # the working ledger, read once
    checkouts = repo.Checkouts()
    planned = _plan(configs, shard_kn, checkouts)
    before = follow_renames(before, planned)
    warnings += [f"{new}: renamed from {old} since {before.ref or 'the ledger'}; judged against {old}'s last line"
                 for new, old in before.followed.items()]
    if shard_kn is None:  # a gate over an empty folder passes vacuously: most likely a wrong path
        warnings += [f"{cfg.folder}: no claim files here (no *.py whose top level binds CLAIM)"
                     for cfg in configs if not any(item.config is cfg for item in planned)]
    skipped: list[str] = []
    if changed_since is not None or files is not None or pre_commit:
        changed = affected.changed_files({p.root for p in planned}, changed_since, files or ())
        planned, skipped = _select(planned, before.latest, changed)
    run_one = _runner(seconds, before, recorded, first.fail_on, record_all, len(planned), progress, checkouts,
                      isolation)
    runs = _write(_run_all(run_one, planned, min(workers, max(len(planned), 1))), target, dry_run)
    runs += _removed(configs, before, [p.key for p in planned] + skipped, shard_kn, first.fail_on, checkouts)
    written = sum(run.recorded for run in runs)
    failed = any(run.failures for run in runs) or (pre_commit and written > 0)
    return ReplayResult(
        claims=tuple(runs), skipped=tuple(skipped), ledger=target, written=written, fail_on=first.fail_on,
        exit_code=EXIT_FINDING if failed else EXIT_OK, warnings=tuple(warnings),
        notes=_notes(written, target, pre_commit), baseline_ref=before.ref, shard=shard,
    )

