"""The GitHub Action's run step (action.yml): ``python -m physverify.action``.

It reads the action's inputs from INPUT_* variables (action.yml passes them through the
environment, never through the shell line), calls ``replay.replay`` once, and writes what
the runner reads: the Markdown summary to $GITHUB_STEP_SUMMARY, annotations (workflow
commands) to stdout, SARIF when asked, and the outputs to $GITHUB_OUTPUT. The exit code is
the replay's, so the step fails when the gate fails. Like cli.py, this is an entry point:
``main`` is the only function here that prints.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from physverify import handler, results
from physverify.errors import PhysverifyError, UsageError
from physverify.gate import TRANSITIONS
from physverify.replay import DEFAULT_CLAIMS_DIR
from physverify.report import github
from physverify.verdict import VERDICTS

if TYPE_CHECKING:
    from physverify.results import ReplayResult

# A push that creates a branch has no previous commit: GitHub sends forty zeros as `before`.
NULL_SHA = "0" * 40
# The HTML report (input `report`), at the workspace root so the artifact holds it beside the ledger's folder.
REPORT_FILE = "physverify-report.html"
REPORT_NOTE = (f"\n\nThe convergence plots and each claim's history are in `{REPORT_FILE}`, uploaded with the ledger "
               "in this job's artifact `physverify-ledger-<job>-<attempt>` (on the run's summary page).\n")


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
    )


def _fail_on(text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    names = frozenset(name.strip() for name in text.replace(",", " ").split())
    unknown = sorted(names - set(TRANSITIONS))
    if unknown:
        raise UsageError(f"fail-on: unknown transition {', '.join(unknown)} (known: {', '.join(TRANSITIONS)})")
    return names


def _boolean(name: str, text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise UsageError(f"{name}: must be true or false, not {text!r}")
    return text.lower() == "true"


def default_baseline(event_name: str | None, event: Mapping[str, object]) -> str | None:
    """The pull request's base sha, else the push's ``before`` (none for a new branch), else None."""
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


def run(inputs: Inputs, baseline: str | None, log: list[str] | None = None) -> Written:
    """Replay once (inside the sandbox when asked), apply fail-on, and render every format the runner reads.

    In the sandbox, what the run wrote on stdout and stderr is appended to ``log`` as lines
    that cannot be workflow commands (``neutralise``), even when the run fails.
    """
    from physverify import report

    result = _sandboxed(inputs, baseline, [] if log is None else log) if inputs.sandbox else _direct(inputs, baseline)
    if inputs.fail_on is not None:
        result = with_fail_on(result, inputs.fail_on)
    page = report.render("html", result) if inputs.report else None
    return Written(
        annotations=report.render("github", result),
        summary=report.render("markdown", result) + (REPORT_NOTE if page is not None else ""),
        outputs={**outputs(result), "report": REPORT_FILE if page is not None else ""},
        exit_code=result.exit_code,
        sarif=report.render("sarif", result) if inputs.sarif else None,
        html=page,
    )


def _direct(inputs: Inputs, baseline: str | None) -> ReplayResult:
    from physverify import replay

    return replay.replay(
        list(inputs.claims),
        ledger=inputs.ledger,
        jobs=inputs.jobs,
        timeout_s=inputs.timeout,
        trusted=True,  # a repository's own workflow runs its own code, as its test job does (docs/github-action.md)
        baseline=baseline,
    )


def _sandboxed(inputs: Inputs, baseline: str | None, log: list[str]) -> ReplayResult:
    """The same replay run by ``physverify sandbox``; its JSON report is read back into a ReplayResult.

    The ledger reported (and uploaded by action.yml) is the file the sandbox checked and
    bound, never a path read from the repository under test (issue 13).
    """
    import tempfile

    from physverify import sandbox
    from physverify.report import json as report_json

    options = {"--ledger": inputs.ledger, "--jobs": inputs.jobs, "--timeout": inputs.timeout, "--baseline": baseline}
    args = ["replay", *inputs.claims, *(x for k, v in options.items() if v is not None for x in (k, v))]
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "replay.json"
        inner = sandbox.Inner((*args, "--format", "json", "--output", str(report_path)), "replay",
                              folders=inputs.claims, timeout=inputs.timeout, jobs=inputs.jobs)
        ran = sandbox.sandbox(inner, capture=True)  # the code inside must not reach the runner's stdout
        log += neutralise(ran.output)
        if ran.problem or ran.ledger is None or not report_path.is_file() or not report_path.stat().st_size:
            why = ran.problem or "; ".join(ran.notes) or "see the log above"
            raise PhysverifyError(f"sandbox ({ran.backend}): the replay inside wrote no result (exit {ran.exit_code}): {why}")
        data = json.loads(report_path.read_text(encoding="utf-8"))
    return report_json.from_dict(data, ledger=_shown(ran.ledger, Path.cwd()))


def neutralise(text: str) -> list[str]:
    """``text`` as log lines the runner cannot read as workflow commands (neither ``::cmd::`` nor ``##[cmd]``)."""
    return [f"sandbox| {line.replace('##[', '# #[')}" for line in text.splitlines()]


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
    from physverify.sandbox import control_character

    bad = control_character(text)
    if bad is not None:
        raise UsageError(f"{what} {text!r} holds the control character U+{ord(bad):04X}; rename it")


def _ledger_of(inputs: Inputs) -> Path:
    """The ledger replay names: the input, else its default for the first claims folder (checked before any run)."""
    from physverify.config import load_config
    from physverify.replay import default_ledger

    return Path(inputs.ledger) if inputs.ledger else default_ledger(load_config(Path(inputs.claims[0])))


def _baseline(inputs: Inputs, env: Mapping[str, str], workspace: Path) -> tuple[str | None, str | None]:
    """The baseline input, else the one the workflow event gives (if the checkout has it), and a warning.

    Without a reachable base the run falls back to replay's own default, the ledger as
    committed at HEAD, so a regression committed with --no-verify still fails.
    """
    from physverify import repo

    if inputs.baseline is not None:
        return inputs.baseline, None
    found = default_baseline(env.get("GITHUB_EVENT_NAME"), _read_event(env))
    return repo.reachable(found, workspace) if found else (None, None)


def _deliver(written: Written, inputs: Inputs, env: Mapping[str, str]) -> None:
    """Write the SARIF file, the step summary and the outputs; print the annotations."""
    if written.html is not None:  # the HTML report, uploaded with the ledger (action.yml)
        Path(REPORT_FILE).write_text(written.html, encoding="utf-8")
    if written.sarif is not None and inputs.sarif is not None:
        Path(inputs.sarif).write_text(written.sarif, encoding="utf-8")
    _append(env.get("GITHUB_STEP_SUMMARY"), written.summary)
    _append(env.get("GITHUB_OUTPUT"), output_lines(written.outputs))
    if written.annotations:
        sys.stdout.write(written.annotations.rstrip("\n") + "\n")


def main(env: Mapping[str, str] | None = None) -> int:
    """The run step: replay, write the runner's files, print the annotations, return the exit code."""
    env = os.environ if env is None else env
    log: list[str] = []
    try:
        inputs = read_inputs(env)
        workspace = Path(env.get("GITHUB_WORKSPACE") or ".").resolve()
        os.chdir(workspace)  # claims, ledger and sarif paths are relative to the repository, as in a workflow
        baseline, warning = _baseline(inputs, env, workspace)
        if warning:
            sys.stdout.write(github.command("warning", warning) + "\n")
        # Before anything is written there. In the sandbox the runner checks the ledger it binds
        # (physverify.yaml is not read here, outside its checks, issue 13).
        refuse_control_characters("ledger", (inputs.ledger or "") if inputs.sandbox else str(_ledger_of(inputs)))
        written = run(inputs, baseline, log)
    except Exception as exc:  # the one handler (handler.py): one ::error line, the outputs say error, the step fails
        failed = handler.failure(exc)
        if failed is None or (failed.bug and handler.debugging()):
            raise
        sys.stdout.write("".join(f"{line}\n" for line in log))
        sys.stdout.write(github.command("error", f"physverify: {failed.message}") + "\n")
        _append(env.get("GITHUB_OUTPUT"), output_lines({"gate": "error", "exit-code": str(int(failed.exit_code))}))
        return failed.exit_code
    sys.stdout.write("".join(f"{line}\n" for line in log))
    _deliver(written, inputs, env)
    return written.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
