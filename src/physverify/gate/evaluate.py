"""One claim, end to end (spec sections 2-6): read, check independence, run, decide, record.

``evaluate`` is the one path from a claim file to its ledger object; the confirm command
(commands/confirm.py), ``replay`` and the MCP tools call it. It never writes: the command
adds the trust rule, the timeout check and the ledger write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from physverify import __version__
from physverify.gate import affected, claim, ledger, repo, settings, variant_load
from physverify.isolation import isolate
from physverify.checks import ERROR
from physverify.text import clean
from physverify.verdict import Run, Verdict, decide, decide_fixed, settled, variant_name

DEFAULT_TIMEOUT_S = settings.DEFAULT_TIMEOUT_S
SANDBOX_HINT = settings.SANDBOX_HINT


class Finished(NamedTuple):
    """A control or check the child finished, told as it happens (for display; the record decides)."""

    role: str  # "control" or "check"
    outcome: Mapping[str, Any]  # label, family, status and message, as the child reported it
    run: str | None = None  # the second run of a claim that names its fix ("with the fix", ...), else None


OnFinished = Callable[[Finished], None]


class Evaluation(NamedTuple):
    """The ledger object of one run and the verdict it holds."""

    record: dict[str, Any]
    verdict: Verdict
    target: Path | None = None  # the claimed file as spec section 3 finds it (find_target), when found


parse_timeout = settings.parse_timeout  # its home is settings.py, with the other options


def evaluate(
    claim_path: Path,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    allow_dependent_reference: str | None = None,
    isolation: str | None = None,
    preload: Sequence[str] = (),
    reading: claim.ClaimReading | None = None,
    checkouts: repo.Checkouts | None = None,
    env: dict[str, str] | None = None,
    on_finished: OnFinished | None = None,
) -> Evaluation:
    """Run one claim and return its ledger object; never raises for a bad claim, never writes.

    ``reading`` is the claim as discovery read it (read here when not given), so the file
    is read once per run; ``checkouts`` the run's repositories, each resolved once (a new
    set when not given). The root is always spec section 3's (CLAIM["repo"], else the
    checkout holding the claim), so replay and confirm write the same fields.
    ``isolation`` and ``preload`` go to isolate.run_child; ``env`` is ``repo.child_env()``
    (computed here when not given; replay computes it once for the run). ``on_finished`` is told each
    control and check as a child finishes it.
    """
    claim_path = Path(claim_path)
    reading = reading if reading is not None else claim.read(claim_path)
    checkout = (checkouts or repo.Checkouts()).for_claim(claim_path, reading.claim)
    record = _base_record(claim_path, timeout_s, reading.sha256)
    fields, target = _claim_fields(reading.claim, checkout, claim_path)
    record.update(fields)
    if reading.problem is not None:
        record["stderr_tail"] = ""  # an error: a string, though nothing ran to write to stderr
        return _finish(record, decide(load_error=reading.problem), target)
    try:  # rule 0 too: a claim that names its fix must find one of the texts (issue 17)
        fixed = variant_load.prepare(reading.claim or {}, target, claim_path)
    except claim.ClaimLoadError as exc:
        record["stderr_tail"] = ""
        return _finish(record, decide(load_error=str(exc)), target)
    notes = list(reading.notes)  # rule 1, from the one parse of the file
    if allow_dependent_reference is not None:
        record["allow_dependent_reference"] = {"reason": allow_dependent_reference, "notes": notes}
        notes = []
    if notes:  # rule 1 is static: nothing runs
        return _finish(record, decide(dependent_notes=notes), target)
    # the claim's folder (run_child puts it first), the repository root, src/ when present
    roots = repo.import_roots(claim_path.resolve().parent, checkout.root)[1:]
    resolved = claim_path.resolve()
    root = roots[0].resolve() if roots else resolved.parent  # where the fork server's preload looks from

    def run(source: isolate.VariantSource | None = None) -> isolate.ChildOutcome:
        told = None if on_finished is None or fixed is None or source is None else variant_name(fixed.match.held)
        return isolate.run_child("claim", claim_path, timeout_s=settings.wait_limit(timeout_s), sys_path=roots,
                                 env=env if env is not None else repo.child_env(),
                                 isolation=isolation, preload=preload, variant=source,
                                 outside_imports=lambda: affected.outside_of(resolved, root, reading.imports),
                                 private_home=settings.sandbox_repo() is not None,
                                 progress=_telling(on_finished, told))

    child = run()
    code = _read_child(record, child, claim_path)
    record["control"], record["checks"] = code.control, code.checks
    if fixed is not None:
        decided = _decide_fixed(record, code, fixed, run, timeout_s, claim_path)
    else:
        decided = decide(load_error=code.load_error, timed_out=code.timed_out, timeout_s=timeout_s,
                         control=code.control, checks=code.checks)
    if code.timed_out and record.get("isolation_note"):  # the fork is a likely cause: the reason names it
        decided = decided._replace(reason=f"{decided.reason}; {record['isolation_note']}")
    return _finish(record, decided, target)


def _telling(on_finished: OnFinished | None, run: str | None) -> Callable[[dict[str, Any]], None] | None:
    """The child's progress lines as Finished values for ``on_finished`` (lines of another shape are dropped)."""
    if on_finished is None:
        return None
    tell = on_finished

    def progress(line: dict[str, Any]) -> None:
        role, outcome = line.get("role"), line.get("outcome")
        if role in ("control", "check") and isinstance(outcome, dict):
            tell(Finished(role, outcome, run))

    return progress


def _read_child(record: dict[str, Any], child: isolate.ChildOutcome, claim_path: Path) -> Run:
    """The run as the verdict rules read it; the stderr tail goes into ``record`` after an error or a timeout."""
    payload = child.payload or {}
    control = payload.get("control")
    checks = payload.get("checks") or []
    problem = payload.get("load_error") or child.failure()
    load_error = f"{claim_path}: {problem}" if problem else None
    statuses = [o["status"] for o in ([control] if control else []) + checks]
    if child.note and (child.payload is not None or child.timed_out) and not record.get("isolation_note"):
        record["isolation_note"] = child.note  # a failed run names it in its load error already
    if (child.timed_out or load_error or ERROR in statuses) and not record.get("stderr_tail"):
        record["stderr_tail"] = child.stderr_tail or ""  # a string after every error or timeout, never null
    return Run(control, checks, load_error, child.timed_out)


def _decide_fixed(record: dict[str, Any], code: Run, fixed: variant_load.Prepared,
                  run: Callable[[isolate.VariantSource], isolate.ChildOutcome], timeout_s: float,
                  claim_path: Path) -> Verdict:
    """Issue 17: when the code's run passed rules 0-3, run the variant; record both and apply the table."""
    side: dict[str, Any] = {"held": fixed.match.held, "line": fixed.match.line, "control": None, "checks": []}
    record["variant"] = side
    held = fixed.match.held
    if settled(code, timeout_s) is not None:  # the variant cannot change a verdict of rules 0-3
        return decide_fixed(held=held, code=code, variant=None, timeout_s=timeout_s)
    other = run(fixed.source)
    variant_run = _read_child(record, other, claim_path)
    side["control"], side["checks"] = variant_run.control, variant_run.checks
    served = bool((other.payload or {}).get("variant_served"))
    return decide_fixed(held=held, code=code, variant=variant_run, file=str(record.get("file")), served=served,
                        timeout_s=timeout_s)


def _finish(record: dict[str, Any], verdict: Verdict, target: Path | None = None) -> Evaluation:
    record["verdict"], record["reason"] = verdict.verdict, verdict.reason
    # Labels, messages, reasons and CLAIM values are the claim's: a lone surrogate in one
    # would make every write of the record raise (issue 13), so it becomes its escape here.
    # The two paths stay as they are: an undecodable file name is a surrogate escape that
    # the ledger stores with \u escapes and reads back unchanged, and replay matches
    # claims by it; every renderer cleans what it shows.
    cleaned = {key: value if key in _PATH_FIELDS else clean(value) for key, value in record.items()}
    return Evaluation(ledger.ordered(cleaned), verdict, target)


_PATH_FIELDS = ("claim_file", "claim_key")


def _base_record(claim_path: Path, timeout_s: float, sha256: str | None) -> dict[str, Any]:
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record = ledger.new_record(str(claim_path), date, __version__, timeout_s)
    record["claim_sha256"] = sha256
    return record


def _claim_fields(
    values: Mapping[str, Any] | None, checkout: repo.Checkout, claim_path: Path
) -> tuple[dict[str, Any], Path | None]:
    """The CLAIM fields, the claim's key, the target file's hash and the commit; and the target file."""
    fields: dict[str, Any] = {"claim_key": checkout.key(claim_path.resolve()), "repo_commit": checkout.commit}
    if values is None:
        return fields, None  # the file could not be read at all: no CLAIM fields (spec section 3)
    for key in claim.REQUIRED_KEYS:
        if key in values:
            fields[key] = values[key]
    target = find_target(checkout.root, claim_path, values.get("file"), real_root=checkout.real_root)
    fields["file_sha256"] = claim.sha256_or_none(target) if target is not None else None
    return fields, target


def find_target(root: Path, claim_path: Path, file: object, *, real_root: Path | None = None) -> Path | None:
    """The file the claim is about: from the root, else next to the claim file; never outside both.

    CLAIM["file"] is the claim's to choose: an absolute path, "..", or a symlink leading
    out of the repository would have the sha256 of any file recorded (issue 13), so the
    file must resolve inside the root or the claim's own folder.
    """
    if not isinstance(file, str) or not file:
        return None
    folder = claim_path.resolve().parent
    tops = (real_root if real_root is not None else root.resolve(), folder)  # ``real_root``: root resolved already
    for base in (root, folder):
        candidate = base / file
        try:
            inside = any(candidate.resolve().is_relative_to(top) for top in tops)
            if inside and candidate.is_file():
                return candidate
        except (OSError, RuntimeError, ValueError):  # unreadable, a symlink loop, a NUL byte: not the target
            continue
    return None
