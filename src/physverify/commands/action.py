"""The GitHub Action's run step (action.yml): ``python -m physverify.commands.action``.

It reads the action's inputs from INPUT_* variables (action.yml passes them through the
environment, never through the shell line), calls ``replay.replay`` once, and writes what
the runner reads: the Markdown summary to $GITHUB_STEP_SUMMARY, annotations (workflow
commands) to stdout, SARIF when asked, and the outputs to $GITHUB_OUTPUT. The exit code is
the replay's, so the step fails when the gate fails. Like cli.py, this is an entry point:
``main`` is the only function here that prints.

Two more modes serve a CI matrix (docs/github-action.md, "A large claims folder"): with
``shard: K/N`` the step replays one shard and leaves its result and ledger in a folder of
its own for the upload; with ``merge-shards: DIR`` it replays nothing, joins the shards'
ledgers with ``ledger.merge`` and renders their results as one summary, SARIF and page.

Every file the step writes for the runner (the HTML report, a shard's result, the merged
ledger) goes into a folder it creates under $RUNNER_TEMP, never into the workspace, whose
entries the repository under test chose (issue 21, item 1).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from physverify.commands import handler
from physverify.gate import results
from physverify.errors import PhysverifyError, UsageError
from physverify.gate.rules import TRANSITIONS, fail_on_problem
from physverify.gate.replay import DEFAULT_CLAIMS_DIR
from physverify.report import github
from physverify.verdict import VERDICTS

if TYPE_CHECKING:
    from physverify.gate.results import ReplayResult

# A push that creates a branch has no previous commit: GitHub sends forty zeros as `before`.
NULL_SHA = "0" * 40
# The HTML report (input `report`), in the step's own folder under $RUNNER_TEMP (issue 21, item 1).
REPORT_FILE = "physverify-report.html"
REPORT_NOTE = (f"\n\nThe convergence plots and each claim's history are in `{REPORT_FILE}`, in this job's artifact "
               "`physverify-report-<job>-<attempt>` (on the run's summary page).\n")
# What a shard job leaves for the merge job, in its folder (uploaded as one artifact per shard).
SHARD_RESULT = "physverify-shard.json"
SHARD_LEDGER = "ledger.jsonl"
# The merged ledger the merge job writes and uploads.
MERGED_LEDGER = "confirm_ledger.jsonl"
# An object name as git prints it: SHA-1 or SHA-256, nothing an option or a ref could be (issue 21, item 12).
OBJECT_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SHARD = re.compile(r"([0-9]{1,6})/([0-9]{1,6})")


@dataclass(frozen=True)
class Inputs:
    """The action's inputs, as action.yml declares them; an empty string means "not given"."""

    claims: tuple[str, ...]
    ledger: str | None
    baseline: str | None
    jobs: str | None
    timeout: str | None
    fail_on: frozenset[str] | None
    sarif: str | None
    sandbox: bool
    report: bool = True
    shard: tuple[int, int] | None = None  # replay only shard K of N
    merge_shards: str | None = None  # join the shard results in this folder instead of replaying


def read_inputs(env: Mapping[str, str]) -> Inputs:
    """The inputs from INPUT_* variables; UsageError for a sandbox or fail-on value that cannot be used."""

    def given(name: str) -> str | None:
        return env.get(f"INPUT_{name}", "").strip() or None

    return Inputs(
        claims=tuple((given("CLAIMS") or DEFAULT_CLAIMS_DIR).split()),
        ledger=given("LEDGER"),
        baseline=given("BASELINE"),
        jobs=given("JOBS"),
        timeout=given("TIMEOUT"),
        fail_on=_fail_on(given("FAIL_ON")),
        sarif=given("SARIF"),
        sandbox=_boolean("sandbox", given("SANDBOX") or "false"),
        report=_boolean("report", given("REPORT") or "true"),
        shard=_shard(given("SHARD")),
        merge_shards=_merge_folder(given("MERGE_SHARDS"), given("SHARD")),
    )


def _shard(text: str | None) -> tuple[int, int] | None:
    """``K/N`` as (K, N); only ASCII digits, so a value such as '²/³' is this usage error, not a traceback."""
    if text is None:
        return None
    match = _SHARD.fullmatch(text)
    if match is None or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"shard: must be K/N with 1 <= K <= N (for example 2/3), not {text!r}")
    return int(match.group(1)), int(match.group(2))


def _merge_folder(folder: str | None, shard: str | None) -> str | None:
    if folder is not None and shard is not None:
        raise UsageError("merge-shards and shard: a step either replays one shard or merges them, not both")
    return folder


def _fail_on(text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    names = frozenset(name.strip() for name in text.replace(",", " ").split())
    problem = fail_on_problem(sorted(names))
    if problem is not None:
        raise UsageError(f"fail-on: {problem}")
    return names


def _boolean(name: str, text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise UsageError(f"{name}: must be true or false, not {text!r}")
    return text.lower() == "true"


def default_baseline(event_name: str | None, event: Mapping[str, object]) -> str | None:
    """The pull request's base sha, else the push's ``before`` (none for a new branch), else None.

    The value is the event's, as the runner wrote it; whether it is an object name is
    ``_baseline``'s question, before git sees it.
    """
    pull_request = event.get("pull_request")
    if isinstance(pull_request, Mapping):
        base = pull_request.get("base")
        if isinstance(base, Mapping) and isinstance(base.get("sha"), str):
            return str(base["sha"])
    before = event.get("before")
    if event_name == "push" and isinstance(before, str) and before and before != NULL_SHA:
        return before
    return None


def _read_event(env: Mapping[str, str]) -> Mapping[str, object]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    event = json.loads(Path(path).read_text(encoding="utf-8"))
    return event if isinstance(event, dict) else {}


@dataclass(frozen=True)
class Written:
    """What the run step produces: annotations for stdout, the summary, the outputs, the exit code."""

    annotations: str
    summary: str
    outputs: dict[str, str]
    exit_code: int
    sarif: str | None
    html: str | None = None  # the HTML report, when the report input is true
    shard_result: str | None = None  # a shard job's result (JSON) for the merge job
    text: str = ""  # the text report, for the log's group of claims


def run(inputs: Inputs, baseline: str | None, log: list[str] | None = None) -> Written:
    """Replay once (inside the sandbox when asked), apply fail-on, and render every format the runner reads.

    In the sandbox, what the run wrote on stdout and stderr is appended to ``log`` as lines
    that cannot be workflow commands (``neutralise``), even when the run fails.
    """
    result = _sandboxed(inputs, baseline, [] if log is None else log) if inputs.sandbox else _direct(inputs, baseline)
    if inputs.fail_on is not None:
        result = with_fail_on(result, inputs.fail_on)
    if inputs.shard is not None:
        return _shard_written(result)
    return rendered(result, inputs)


def rendered(result: ReplayResult, inputs: Inputs) -> Written:
    """Every format the runner reads, for one replay or for the shards merged into one."""
    from physverify import report

    page = report.render("html", result) if inputs.report else None
    return Written(
        annotations=report.render("github", result),
        summary=report.render("markdown", result) + hidden_note(result) + (REPORT_NOTE if page is not None else ""),
        outputs={**outputs(result), "report": ""},  # the report's path is known once it is written (_deliver)
        exit_code=result.exit_code,
        sarif=report.render("sarif", result) if inputs.sarif else None,
        html=page,
        text=report.render("text", result),
    )


def hidden_note(result: ReplayResult) -> str:
    """The summary's word on annotations GitHub's cap per kind hides, with their count ('' when none is hidden)."""
    over = github.hidden(result)
    if not over:
        return ""
    counts = " and ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in over.items())
    return (f"\n\n> GitHub shows {github.SHOWN_PER_KIND} annotations of each kind per step: {counts} of this run "
            "are not shown on the files (claims that moved or fail the gate come first). The table above lists every "
            "claim, and the step's log has every annotation.\n")


def _shard_written(result: ReplayResult) -> Written:
    """A shard job: its result for the merge job, its outputs and the gate's exit code.

    The summary, SARIF, annotations and page are the merge job's, so a pull request shows
    each finding once; the log says how the shard went in one line.
    """
    from physverify import report
    from physverify.text import visible

    gate = "gate failed" if result.exit_code else "gate holds"
    # The summary names the ledger, a path physverify.yaml chose: shown like every other value from the repository.
    line = f"physverify replay, shard {result.shard}: {gate}; {visible(result.summary())}; the merge job reports each claim"
    return Written(annotations=line, summary="", outputs={**outputs(result), "report": ""},
                   exit_code=result.exit_code, sarif=None, shard_result=report.render("json", result))


def _direct(inputs: Inputs, baseline: str | None) -> ReplayResult:
    import time

    from physverify.gate import replay
    from physverify.report.text import CountedProgress

    return replay.replay(
        list(inputs.claims),
        ledger=inputs.ledger,
        jobs=inputs.jobs,
        timeout_s=inputs.timeout,
        trusted=True,  # a repository's own workflow runs its own code, as its test job does (docs/github-action.md)
        baseline=baseline,
        shard=_shard_text(inputs),
        progress=CountedProgress(_log, time.monotonic()),  # the log is not silent while claims run
    )


def _log(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


def _shard_text(inputs: Inputs) -> str | None:
    return None if inputs.shard is None else f"{inputs.shard[0]}/{inputs.shard[1]}"


def _sandboxed(inputs: Inputs, baseline: str | None, log: list[str]) -> ReplayResult:
    """The same replay run by ``physverify sandbox``; its sealed JSON report is read back into a ReplayResult.

    The ledger reported (and uploaded by action.yml) is the file the sandbox checked and
    bound, never a path read from the repository under test (issue 13). The report reaches
    ``report_path`` only through the run's seal (commands/sandbox/seal.py): sandbox() writes
    it there only when the seal holds, and it is read only when physverify inside ended with
    the exit code it reports; anything else is an error, never a pass.
    """
    import tempfile

    from physverify.commands.sandbox import run as sandbox

    options = {"--ledger": inputs.ledger, "--jobs": inputs.jobs, "--timeout": inputs.timeout, "--baseline": baseline,
               "--shard": _shard_text(inputs)}
    args = ["replay", *inputs.claims, *(x for k, v in options.items() if v is not None for x in (k, v))]
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "replay.json"
        # the result as a report file; the inner run's usual text and progress go to the log
        inner = sandbox.Inner((*args, "--report", f"json={report_path}"), "replay",
                              folders=inputs.claims, timeout=inputs.timeout, jobs=inputs.jobs)
        ran = sandbox.sandbox(inner, capture=True)  # the code inside must not reach the runner's stdout
        log += neutralise(ran.output)
        written = report_path.is_file() and report_path.stat().st_size > 0
        if ran.problem or ran.ledger is None or not written:
            why = ran.problem or "; ".join(ran.notes) or "see the log above"
            raise PhysverifyError(f"sandbox ({ran.backend}): the replay inside wrote no result (exit {ran.exit_code}): {why}")
        result = result_of(_read_regular(report_path), report_path, ledger=_shown(ran.ledger, Path.cwd()))
    if result.exit_code != ran.exit_code:
        raise PhysverifyError(f"sandbox ({ran.backend}): physverify inside ended with exit {ran.exit_code}, but its "
                              f"result says {result.exit_code}; no verdict")
    return result


# --- the merge job: the shards' results and ledgers as one ----------------------------------
def merge_shards(folder: Path, into: Path) -> ReplayResult:
    """The shard results under ``folder`` (one artifact folder each) as one result; their ledgers merged into ``into``.

    Every shard K of N must be there exactly once: a shard whose job failed before it
    wrote its result would otherwise leave its claims out of the gate without a word.
    """
    from physverify.commands import ledger

    found = sorted(folder.glob(f"*/{SHARD_RESULT}")) + sorted(folder.glob(SHARD_RESULT))
    if not found:
        raise UsageError(f"merge-shards: {folder} holds no {SHARD_RESULT} (download the shard jobs' artifacts there)")
    read = [(path, result_of(_read_regular(path), path, ledger=into)) for path in found]
    _require_every_shard(read)
    ledgers = [path.parent / SHARD_LEDGER for path, _ in read if (path.parent / SHARD_LEDGER).is_file()]
    if ledgers:
        ledger.merge(ledgers, into)
    return combine([result for _, result in read], into)


def _require_every_shard(results: list[tuple[Path, ReplayResult]]) -> None:
    seen: dict[tuple[int, int], Path] = {}
    for path, result in results:
        match = _SHARD.fullmatch(result.shard or "")
        if match is None:
            raise PhysverifyError(f"{path}: not the result of a shard (no shard K/N in it)")
        shard = (int(match.group(1)), int(match.group(2)))
        if shard in seen:
            raise PhysverifyError(f"{path}: shard {shard[0]}/{shard[1]} again (also in {seen[shard]})")
        seen[shard] = path
    counts = {n for _, n in seen}
    if len(counts) != 1:
        raise PhysverifyError(f"merge-shards: the shards disagree on their number ({', '.join(map(str, sorted(counts)))})")
    total = counts.pop()
    missing = [k for k in range(1, total + 1) if (k, total) not in seen]
    if missing:
        raise PhysverifyError(f"merge-shards: no result from shard {', '.join(f'{k}/{total}' for k in missing)} "
                              "(its job failed before it wrote one, or its artifact was not downloaded)")


def combine(shards: list[ReplayResult], ledger_path: Path) -> ReplayResult:
    """The shards' results as the one result an unsharded replay gives: its claims in key order, removed ones last."""
    from physverify.gate.rules import REMOVED
    from physverify.gate.results import ReplayResult

    runs = [run for shard in shards for run in shard.claims]
    ordered_runs = (sorted((r for r in runs if r.transition != REMOVED), key=lambda r: r.key)
                    + sorted((r for r in runs if r.transition == REMOVED), key=lambda r: r.key))
    return ReplayResult(
        claims=tuple(ordered_runs), skipped=tuple(sorted({k for r in shards for k in r.skipped})),
        ledger=ledger_path, written=sum(r.written for r in shards), fail_on=shards[0].fail_on,
        exit_code=results.exit_code(runs),
        warnings=tuple(dict.fromkeys(w for r in shards for w in r.warnings)),
        notes=tuple(dict.fromkeys(n for r in shards for n in r.notes)), baseline_ref=shards[0].baseline_ref,
    )


_MAX_RESULT = 256 * 1024 * 1024  # a shard result larger than this is not one of ours


def result_of(data: bytes, path: Path, *, ledger: Path) -> ReplayResult:
    """The replay result a JSON report holds (a shard's, or the sandboxed run's); one-line PhysverifyError otherwise.

    The one reader of a result that came from outside this process: whatever the bytes are
    (not UTF-8, nested 200,000 levels deep, not an object, fields of the wrong kind), the
    step ends with one line and ``gate=error``, never with an internal error.
    """
    from physverify.report import json as report_json

    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PhysverifyError(f"{path}: not a replay result: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise PhysverifyError(f"{path}: not a replay result: its JSON is nested too deeply to read") from None
    except ValueError as exc:
        raise PhysverifyError(f"{path}: not a replay result: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise PhysverifyError(f"{path}: not a replay result: a JSON {type(value).__name__}, not an object")
    try:
        return report_json.from_dict(value, ledger=ledger)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # recorded: a field of the wrong kind
        raise PhysverifyError(f"{path}: not a replay result: {type(exc).__name__} reading its fields") from None


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path`` when it is a regular file reached without a link; PhysverifyError otherwise."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot be read: {exc.strerror or exc} (a link is never followed)") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_RESULT:
            raise PhysverifyError(f"{path}: not a regular file of at most {_MAX_RESULT} bytes")
        return handle.read()


# --- the files the step writes, in a folder the runner chose ---------------------------------
def runner_folder(env: Mapping[str, str]) -> Path:
    """A new folder of this step's own under $RUNNER_TEMP (the system's temporary folder outside a runner).

    mkdtemp creates it exclusively and private, so no entry the repository committed, and
    no other step, decides what is in it (issue 21, item 1).
    """
    parent = env.get("RUNNER_TEMP") or None
    try:
        return Path(tempfile.mkdtemp(prefix="physverify-", dir=parent))
    except OSError as exc:
        raise PhysverifyError(f"{parent or tempfile.gettempdir()}: cannot create the step's folder: "
                              f"{exc.strerror or exc}") from None


def create_file(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to the new file ``folder/name``: created exclusively, never through a link."""
    return _write_file(folder / name, data, os.O_EXCL)


def _write_file(path: Path, data: bytes, mode: int) -> Path:
    """Write ``path`` opened with ``mode`` added to O_CREAT and O_NOFOLLOW; a one-line PhysverifyError on failure."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | mode, 0o644)
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot be written: {exc.strerror or exc} (never through a link)") from None
    with os.fdopen(fd, "wb") as handle:
        import stat

        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise PhysverifyError(f"{path}: not a regular file; nothing written")
        os.ftruncate(handle.fileno(), 0)
        handle.write(data)
    return path


RUN_GROUP = "physverify replay: running the claims"


def _group(title: str, lines: list[str]) -> str:
    """``lines`` folded under ``title`` in the log; each is text a renderer made safe (``visible``), so none is
    a workflow command, and an ``::endgroup::`` cannot come from the repository."""
    return f"::group::{title}\n" + "".join(f"{line}\n" for line in lines) + "::endgroup::\n"


def neutralise(text: str) -> list[str]:
    """``text`` as log lines the runner cannot read as workflow commands (neither ``::cmd::`` nor ``##[cmd]``),
    with no control character or bidi mark left raw: the code inside wrote it, so ``visible`` shows it."""
    from physverify.text import visible

    return [f"sandbox| {visible(line)}" for line in text.splitlines()]


def _shown(path: Path, workspace: Path) -> Path:
    """``path`` relative to the workspace when it lies inside it, as the direct run reports it."""
    return path.relative_to(workspace) if workspace in path.parents else path


with_fail_on = results.with_fail_on  # the gate's own rule, in results.py (kept under its old name here)


def outputs(result: ReplayResult) -> dict[str, str]:
    """Every output action.yml declares: counts per verdict and per transition, the gate, the ledger."""
    by_verdict = {v.replace(" ", "-"): sum(run.verdict == v for run in result.claims) for v in VERDICTS}
    by_transition = {t: result.counts().get(t, 0) for t in TRANSITIONS}
    return {
        **{k: str(n) for k, n in {**by_verdict, **by_transition}.items()},
        "gate": "fail" if result.exit_code else "pass",
        "exit-code": str(result.exit_code),
        "ledger": result.ledger.as_posix(),
    }


def _append(path: str | None, text: str) -> None:
    """Append ``text`` to a runner file ($GITHUB_STEP_SUMMARY, $GITHUB_OUTPUT); nothing when unset."""
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")


def output_lines(outputs: Mapping[str, str]) -> str:
    """``outputs`` in $GITHUB_OUTPUT's ``name<<DELIMITER`` form, each with a fresh random delimiter.

    The plain ``name=value`` form let a value with a newline (a ledger folder named
    "x\ngate=pass") add outputs of its own (issue 13); a delimiter the value cannot know
    ends each value where physverify says.
    """
    import secrets

    lines = []
    for name, value in outputs.items():
        delimiter = f"physverify_{secrets.token_hex(16)}"
        while delimiter in value:  # practically never; a value may not hold its own end mark
            delimiter = f"physverify_{secrets.token_hex(16)}"
        lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(lines)


def refuse_control_characters(what: str, text: str) -> None:
    """UsageError when ``text`` holds a control character or a line separator (a path written into the runner's files)."""
    from physverify.commands.sandbox.run import control_character

    bad = control_character(text)
    if bad is not None:
        raise UsageError(f"{what} {text!r} holds the control character U+{ord(bad):04X}; rename it")


def _ledger_of(inputs: Inputs) -> Path:
    """The ledger replay names: the input, else its default for the first claims folder (checked before any run)."""
    from physverify.gate.config import load_config
    from physverify.gate.replay import default_ledger

    return Path(inputs.ledger) if inputs.ledger else default_ledger(load_config(Path(inputs.claims[0])))


def _baseline(inputs: Inputs, env: Mapping[str, str], workspace: Path) -> tuple[str | None, str | None]:
    """The baseline input, else the one the workflow event gives (if the checkout has it), and a warning.

    Without a reachable base the run falls back to replay's own default, the ledger as
    committed at HEAD, so a regression committed with --no-verify still fails. The event's
    value reaches git only when it is a hexadecimal object name (issue 21, item 12): the
    fetch would read anything else as a ref or an option.
    """
    from physverify.gate import repo
    from physverify.text import visible

    if inputs.baseline is not None:
        return inputs.baseline, None
    found = default_baseline(env.get("GITHUB_EVENT_NAME"), _read_event(env))
    if found is None:
        return None, None
    if OBJECT_NAME.fullmatch(found) is None:
        return None, (f"baseline '{visible(found)[:80]}': the event's base is not a hexadecimal object name; "
                      "comparing with the ledger as committed at HEAD")
    return repo.reachable(found, workspace)


def _credentials_inside(workspace: Path) -> list[str]:
    """A warning per credential the checkout's .git/config holds: the sandbox shows the repository, .git included,
    to the code under test, which can copy it into the ledger this job uploads."""
    from physverify.gate import repo
    from physverify.text import visible

    return [f"sandbox: .git/config holds {visible(key)[:120]}, which the code under test can read inside the sandbox "
            "and write into the uploaded ledger; check out with persist-credentials: false (docs/github-action.md)"
            for key in repo.readable_credentials(workspace)]


def _deliver(written: Written, inputs: Inputs, env: Mapping[str, str], folder: Callable[[], Path]) -> None:
    """Write the report or the shard's files into the step's folder, the SARIF file, the step summary and
    the outputs; print the annotations."""
    outputs_ = {**written.outputs, "shard-folder": "", "shard-name": ""}  # every output declared, set
    if written.html is not None:  # uploaded by action.yml from the step's folder, never from the workspace
        outputs_["report"] = str(create_file(folder(), REPORT_FILE, written.html.encode("utf-8")))
    if written.shard_result is not None and inputs.shard is not None:
        outputs_.update(_shard_files(written.shard_result, Path(written.outputs["ledger"]), inputs.shard, folder()))
    if written.sarif is not None and inputs.sarif is not None:
        # the workflow names this path; a link the repository committed there is not followed
        _write_file(Path(inputs.sarif), written.sarif.encode("utf-8"), os.O_NONBLOCK)
    if written.summary:
        _append(env.get("GITHUB_STEP_SUMMARY"), written.summary)
    _append(env.get("GITHUB_OUTPUT"), output_lines(outputs_))
    if written.text:
        sys.stdout.write(_group("physverify replay: each claim", written.text.rstrip("\n").split("\n")))
    if written.annotations:
        sys.stdout.write(written.annotations.rstrip("\n") + "\n")


def _shard_files(result: str, ledger_path: Path, shard: tuple[int, int], folder: Path) -> dict[str, str]:
    """A shard's result and a copy of its ledger in the step's folder, and the outputs naming them."""
    from physverify.gate import ledger

    create_file(folder, SHARD_RESULT, result.encode("utf-8"))
    data = ledger.read_bytes(ledger_path)  # the one reader that refuses a FIFO or a device
    if data:
        create_file(folder, SHARD_LEDGER, data)
    return {"shard-folder": str(folder), "shard-name": f"{shard[0]}-of-{shard[1]}"}


def _replayed(inputs: Inputs, env: Mapping[str, str], workspace: Path, log: list[str],
              folder: Callable[[], Path]) -> Written:
    """The step's work: merge the shards, or replay (the whole folder or one shard)."""
    if inputs.merge_shards is not None:
        result = merge_shards(Path(inputs.merge_shards), folder() / MERGED_LEDGER)
        if inputs.fail_on is not None:
            result = with_fail_on(result, inputs.fail_on)
        written = rendered(result, inputs)
        if not result.ledger.is_file():  # no shard had a ledger: nothing to upload
            written = replace(written, outputs={**written.outputs, "ledger": ""})
        return written
    baseline, warning = _baseline(inputs, env, workspace)
    for line in [warning] + (_credentials_inside(workspace) if inputs.sandbox else []):
        if line:
            sys.stdout.write(github.command("warning", line) + "\n")
    # Before anything is written there. In the sandbox the runner checks the ledger it binds
    # (physverify.yaml is not read here, outside its checks, issue 13).
    refuse_control_characters("ledger", (inputs.ledger or "") if inputs.sandbox else str(_ledger_of(inputs)))
    return run(inputs, baseline, log)


def main(env: Mapping[str, str] | None = None) -> int:
    """The run step: replay, write the runner's files, print the annotations, return the exit code."""
    env = os.environ if env is None else env
    log: list[str] = []
    made: list[Path] = []
    grouped: list[bool] = []  # the run's group is open

    def folder() -> Path:  # created when the first file needs it, once
        if not made:
            made.append(runner_folder(env))
        return made[0]

    try:
        inputs = read_inputs(env)
        workspace = Path(env.get("GITHUB_WORKSPACE") or ".").resolve()
        os.chdir(workspace)  # claims, ledger and sarif paths are relative to the repository, as in a workflow
        _log(f"::group::{RUN_GROUP}\n")  # the claims' progress, and the sandbox's log, folded
        grouped.append(True)
        written = _replayed(inputs, env, workspace, log, folder)
        sys.stdout.write("".join(f"{line}\n" for line in log) + "::endgroup::\n")
        log.clear()
        grouped.clear()
        _deliver(written, inputs, env, folder)
    except Exception as exc:  # the one handler (handler.py): one ::error line, the outputs say error, the step fails
        failed = handler.failure(exc)
        if failed is None or (failed.bug and handler.debugging()):
            raise
        sys.stdout.write("".join(f"{line}\n" for line in log) + ("::endgroup::\n" if grouped else ""))
        sys.stdout.write(github.command("error", f"physverify: {failed.message}") + "\n")
        _append(env.get("GITHUB_OUTPUT"), output_lines({"gate": "error", "exit-code": str(int(failed.exit_code))}))
        return failed.exit_code
    return written.exit_code


if __name__ == "__main__":
    from physverify.isolation import guard

    guard.protect()  # before any claim runs: none may open this process's descriptors or memory
    raise SystemExit(main())
