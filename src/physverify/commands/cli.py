"""The command line: parse, call one function per command, print, exit. Nothing else.

Every command lives in its own module and returns data carrying its exit code; the
renderers in ``report/`` turn it into text. Expected failures are PhysverifyError and
are caught once, in ``main``.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from physverify import __version__
from physverify.commands import handler
from physverify.errors import PhysverifyError, UsageError
from physverify.gate.ledger import DEFAULT_LEDGER
from physverify.isolation.modes import ISOLATION_MODES
from physverify.text import visible
from physverify.verdict import EXIT_ERROR, EXIT_OK


def _on_sigterm(signum: int, frame: object) -> None:
    raise handler.Terminated()


# --- flags that several commands share ---------------------------------------------
def _add_ledger_option(parser: argparse.ArgumentParser, default: str | None = DEFAULT_LEDGER) -> None:
    parser.add_argument("--ledger", default=default, metavar="FILE", help=f"the JSONL ledger (default: {default})")


def _add_timeout_option(parser: argparse.ArgumentParser, default: str | None, what: str) -> None:
    parser.add_argument("--timeout", default=default, metavar="S", help=f"{what} (default: {default} s)")


def _add_trusted_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trusted",
        action="store_true",
        help="the code under test is yours or reviewed: run it outside a sandbox (see sandbox/README.md)",
    )


def _add_isolation_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--isolation", choices=list(ISOLATION_MODES),
        help="fork: each child is forked from a warm server that imported numpy and the claims' libraries once; "
        "fresh: a new interpreter per child (default: physverify.yaml's isolation, else fork on Linux; docs/replay.md)",
    )


def _add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="-|FILE", help="write the result as JSON to FILE, or to stdout with -")


def _emit(text: str, output: str | None = None) -> None:
    """Write ``text`` to stdout, or to the file ``output`` (created or replaced).

    Inside the sandbox the file carries the run's seal (commands/sandbox/seal.py): the runner
    outside copies it to the caller's file only when the seal holds.
    """
    from physverify.commands.sandbox import seal

    if not text.endswith("\n"):
        text += "\n"
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        if seal.active():
            Path(output).write_bytes(seal.seal(text.encode("utf-8", errors="backslashreplace")))
        else:
            Path(output).write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise PhysverifyError(f"{output}: cannot be written: {exc.strerror or exc}") from None


def _check_output(output: str | None, flag: str) -> None:
    """Refuse an output file that cannot be written before anything runs (issue 13)."""
    if output is None or output == "-":
        return
    from physverify.gate.ledger import check_writable

    check_writable(Path(output), f"the {flag} file", regular=False)  # a pipe will do: --json >(jq .)


# --- the parser -----------------------------------------------------------------------
def _confirm_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    confirm = sub.add_parser(
        "confirm", allow_abbrev=False,
        help="settle one suspected defect: run its control and checks, record a verdict",
        description="Run one claim file's control and checks in a fresh process and record the verdict "
        "(exit 0 rejected, 1 confirmed, 2 not decidable, a load error or a refusal). "
        "'physverify confirm init CLAIM.py --text ... --file F --line N' writes a template.",
    )
    confirm.add_argument("claim", metavar="CLAIM.py", help="the claim file (or 'init' to write a template)")
    confirm.add_argument("init_path", nargs="?", metavar="NEW_CLAIM.py", help=argparse.SUPPRESS)
    _add_ledger_option(confirm)
    _add_timeout_option(confirm, "300", "the time limit for the whole run, control and checks together")
    _add_json_option(confirm)
    _add_trusted_option(confirm)
    _add_isolation_option(confirm)
    confirm.add_argument(
        "--allow-dependent-reference",
        metavar="REASON",
        help="run although the reference looks like it uses the code under test; the reason is recorded",
    )
    confirm.add_argument("--text", help="confirm init: the claim as it was stated")
    confirm.add_argument("--file", help="confirm init: the file the claim is about, relative to the repository root")
    confirm.add_argument("--line", help="confirm init: the line number in that file")
    confirm.add_argument("--defect", help="confirm init: the claimed mistake, as the whole line(s) of code (with --fix)")
    confirm.add_argument("--fix", help="confirm init: what those line(s) should be (with --defect)")
    from physverify.gate.templates import KINDS  # text only: no numpy at start-up

    confirm.add_argument("--kind", choices=list(KINDS),
                         help="confirm init: a template with the study for this kind of claim (docs/real-code.md)")


def _run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser(
        "run", allow_abbrev=False,
        help="run the checks() of spec files (verify_*.py) as a plain check suite",
        description="Run each spec file's checks() in a fresh process; one line per check. "
        "Exit 0 when no check is FAIL, ERROR or INCONCLUSIVE, 1 otherwise, 2 when a spec cannot be loaded.",
    )
    run.add_argument("specs", nargs="+", metavar="SPEC.py")
    _add_timeout_option(run, "600", "the time limit for each spec file")
    _add_json_option(run)
    _add_isolation_option(run)


def _mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser(
        "mcp", allow_abbrev=False,
        help="MCP server on stdio: run_checks, confirm_claim, replay_claims (docs/mcp.md)",
        description="Serve the MCP tools run_checks, confirm_claim and replay_claims over stdio for an AI "
        "client. Paths outside the project root are refused; running code needs trusted: true or the sandbox.",
    )
    mcp.add_argument("--root", default=".", metavar="DIR", help="the project root; no path outside it is used (default: .)")


def _replay_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from physverify.report import FORMATS

    replay = sub.add_parser(
        "replay", allow_abbrev=False,
        help="the claims gate: re-run a claims folder and fail when a verdict changes",
        description="Re-run every claim under each CLAIMS_DIR (default: claims) in fresh processes, compare each "
        "verdict with the ledger as committed at --baseline (default HEAD; the working ledger only outside git or "
        "before it was first committed), and append a line for each claim whose verdict differs from the working "
        "ledger's latest line. Exit 1 when a claim regressed or became undecidable, a new claim is not "
        "decidable, or a claim differs from its 'expect' entry in physverify.yaml (its fail_on changes the set); "
        "0 otherwise; 2 for a usage or config error. The ledger is --ledger, else the 'ledger' key of "
        "physverify.yaml (relative to the claims folder), else CLAIMS_DIR/confirm_ledger.jsonl: commit it, it is "
        "the gate's memory.",
    )
    replay.add_argument("paths", nargs="*", metavar="CLAIMS_DIR",
                        help="claims folders (default: claims); with --pre-commit, the staged files")
    replay.add_argument("--ledger", metavar="FILE",
                        help="the JSONL ledger (default: physverify.yaml's ledger, else CLAIMS_DIR/confirm_ledger.jsonl)")
    replay.add_argument("--jobs", metavar="N", help="claims run at once (default: physverify.yaml's jobs, else the CPUs)")
    replay.add_argument("--timeout", metavar="S",
                        help="the time limit for each claim (default: physverify.yaml's timeout, else 300 s)")
    _add_trusted_option(replay)
    _add_isolation_option(replay)
    replay.add_argument("--baseline", metavar="REF", help="compare with the ledger as committed at git REF (default: HEAD)")
    replay.add_argument("--changed-since", metavar="REF",
                        help="run only the claims whose inputs changed since git REF (working tree and untracked files)")
    replay.add_argument("--files", nargs="+", metavar="F", help="run only the claims these changed files affect")
    replay.add_argument("--pre-commit", action="store_true",
                        help="the pre-commit hook: positional arguments are the staged files, trust is implied, "
                        "and the run fails whenever it wrote to the ledger")
    replay.add_argument("--claims", metavar="DIR", help="with --pre-commit: the claims folder (default: claims)")
    replay.add_argument("--format", action=_Once, choices=sorted(FORMATS),
                        help="the output's format (default: text); given once")
    replay.add_argument("--output", metavar="F", help="write the output to F instead of stdout")
    replay.add_argument("--report", action="append", default=[], metavar="FORMAT=PATH",
                        help=f"also write the result as FORMAT ({', '.join(FORMATS)}) to PATH; repeatable, "
                        "from the same run, and the output above stays as it is")
    replay.add_argument("--shard", metavar="K/N", help="run only shard K of N (a stable split by claim path)")
    replay.add_argument("--record-all", action="store_true", help="append a ledger line for every claim run")
    replay.add_argument("--dry-run", action="store_true", help="run and judge the claims but write nothing to the ledger")


def _demo_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser(
        "demo", allow_abbrev=False,
        help="the worked examples confirmed and replayed in a temporary folder: a first run that writes nothing of yours",
        description="Copy three worked examples of docs/confirm.md into a new folder under the system's temporary "
        "folder, confirm each (one verdict of each kind), replay the gate after fixing the confirmed defect (it "
        "passes) and after putting it back (it fails), and write the HTML report there. The folder stays, so the "
        "report can be opened; nothing is written outside it. Exit 0 when every step came out as documented.",
    )


def _demo() -> int:
    from physverify.commands import demo

    def show(step: demo.Step) -> None:
        _emit(f"$ {step.title}\n{step.text}")
        sys.stdout.flush()  # each step as it ends: the whole demo takes several seconds

    done = demo.demo(on_step=show)
    _emit("demo done: one claim of each verdict, and the gate passed after the fix and failed when the defect came "
          f"back, as it should\nthe HTML report: {done.report}\n(the demo's files stay in {done.folder}, under the "
          "system's temporary folder; delete it when done)")
    return done.exit_code


class _Once(argparse.Action):
    """An option that may be given once: a second value is a usage error, never a silent last-wins."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"argument {option_string}: given twice; for several files from one run, "
                         "use --report FORMAT=PATH for each")
        setattr(namespace, self.dest, values)


def _reports(values: Sequence[str]) -> list[tuple[str, str]]:
    """Each --report FORMAT=PATH as (format, path); a UsageError for an unknown format or a missing path."""
    from physverify.report import FORMATS

    reports: list[tuple[str, str]] = []
    for value in values:
        fmt, eq, path = value.partition("=")
        if not eq or not path or fmt not in FORMATS:
            raise UsageError(f"--report {value!r}: give FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}, "
                             "e.g. --report junit=replay.xml")
        if path == "-":
            raise UsageError(f"--report {value!r}: a report goes to a file; the output (--format) is stdout's")
        if any(os.path.abspath(path) == os.path.abspath(seen) for _, seen in reports):
            raise UsageError(f"--report {value!r}: {path} is named by another --report already")
        reports.append((fmt, path))
    return reports


def _sandbox_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from physverify.commands.sandbox import defaults as sandbox  # the defaults alone: every command builds this parser

    box = sub.add_parser(
        "sandbox", allow_abbrev=False,
        help="run confirm or replay inside a sandbox, for code you do not trust (sandbox/README.md)",
        description="Run 'physverify confirm|replay ARGS' with no network, the repository read-only at /repo, "
        "only the ledger and output files writable, the home folder hidden, and memory and process limits. "
        "--trusted is not needed inside. Exit code: the inner command's 0, 1 or 2; 2 with one line when the outer "
        "limit ended the run, physverify inside was killed, or it cannot be imported inside.",
    )
    box.add_argument("--backend", default="auto", choices=["auto", *sandbox.BACKEND_NAMES],
                     help="auto: docker or podman when an engine answers, else bwrap (default: auto)")
    box.add_argument("--memory", default=sandbox.DEFAULT_MEMORY, metavar="SIZE",
                     help=f"memory limit, e.g. 512m, 2g (default: {sandbox.DEFAULT_MEMORY})")
    box.add_argument("--pids", type=int, default=sandbox.DEFAULT_PIDS, metavar="N",
                     help=f"process (and thread) limit; 0: none (default: {sandbox.DEFAULT_PIDS})")
    box.add_argument("--repo", metavar="DIR", help="the repository to mount (default: the git checkout holding .)")
    box.add_argument("--image", metavar="IMAGE", help=f"docker/podman image (default: ${sandbox.IMAGE_ENV}, "
                     f"else {sandbox.DEFAULT_IMAGE})")
    box.add_argument("--timeout", metavar="S", help="outer limit for the whole sandbox run (default: a confirm's "
                     f"--timeout + {sandbox.GRACE_S:g} s; for replay, from its claims, --jobs and --timeout)")
    box.add_argument("inner", nargs=argparse.REMAINDER, metavar="-- confirm|replay ARGS")


def _sandbox(args: argparse.Namespace) -> int:
    from physverify.commands.sandbox import run as sandbox

    raw = args.inner[1:] if args.inner[:1] == ["--"] else args.inner
    parsed = build_parser().parse_args(raw)  # the inner command's own parser: a usage error stops here
    folders = _replay_dirs_and_files(parsed)[0] if parsed.command == "replay" else []
    inner = sandbox.Inner(tuple(raw), parsed.command, folders=tuple(folders), timeout=getattr(parsed, "timeout", None),
                          jobs=getattr(parsed, "jobs", None))
    # The code inside can write to the inner physverify's streams: every line reaches ours through visible.
    run = sandbox.sandbox(inner, backend=args.backend, memory=args.memory, pids=args.pids,
                          repo=Path(args.repo) if args.repo else None, image=args.image, timeout=args.timeout,
                          relay=(_flushed(sys.stdout), _flushed(sys.stderr)))
    for note in run.notes:
        sys.stderr.write(f"physverify sandbox ({run.backend}): {visible(note)}\n")
    if run.problem:
        sys.stderr.write(f"physverify: {visible(run.problem)}\n")
    return run.exit_code


def _flushed(stream: TextIO) -> Callable[[str], None]:
    """A writer of whole lines to ``stream`` that flushes each, so the relayed run reads as it goes."""
    def write(text: str) -> None:
        stream.write(text)
        stream.flush()

    return write


def _scan_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scan = sub.add_parser(
        "scan", allow_abbrev=False,
        help="read Python files statically, run nothing, and list suspects (docs/scan.md)",
        description="Read Python files (folders recursively) without importing or running them and print one "
        "finding per line: Runge-Kutta tables and stages without their stated order, grid spacings that do not "
        "match their grid, near-miss physical constants, inverse function pairs. Exit 0 with no findings, 1 with "
        "findings, 2 on a usage error.",
    )
    scan.add_argument("paths", nargs="+", metavar="PATH")
    scan.add_argument("--format", default="text", choices=["text", "json", "sarif", "github"],
                      help="how the findings are written (default: text)")
    scan.add_argument("--output", metavar="FILE", help="write the findings to FILE instead of stdout")
    scan.add_argument("--sarif", metavar="FILE", help="also write the findings as SARIF 2.1.0 to FILE (one reading)")
    scan.add_argument("--jobs", type=int, default=None, metavar="N",
                      help="worker processes for a large tree (default: one per core, up to 4, from 500 files)")
    scan.add_argument("--claims", metavar="DIR",
                      help="write a claim template per finding into DIR (never overwriting a file); its "
                      "physverify.yaml's ignore list applies (default for the list: claims/)")


def _ledger_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ledger = sub.add_parser(
        "ledger", allow_abbrev=False,
        help="read and join confirm ledgers: a claim's history (log), its latest verdict (show), shard ledgers "
        "into one (merge)",
        description="'ledger log' shows the ledger one line per run; 'ledger show CLAIM' a claim's latest verdict "
        "with its control and check lines; 'ledger merge' joins the ledgers of a CI matrix in date order.",
    )
    actions = ledger.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    log = actions.add_parser("log", help="a claim's history, one row per ledger line, oldest first",
                             allow_abbrev=False)
    _add_replay_ledger_options(log)
    log.add_argument("--claim", metavar="PATH", help="only this claim file's lines (as given or relative to its repository)")
    _add_json_option(log)
    show = actions.add_parser("show", help="a claim's latest verdict with its control and check lines",
                              allow_abbrev=False)
    show.add_argument("claim", metavar="CLAIM", help="the claim file (as given or relative to its repository)")
    _add_replay_ledger_options(show)
    _add_json_option(show)
    merge = actions.add_parser(
        "merge", allow_abbrev=False,
        help="join ledgers in date order, dropping exact duplicate lines and losing none",
        description="Join shard ledgers into OUT in date order (the same for any order of the inputs). Exact "
        "duplicate lines are kept once; a bad line is reported and copied to the end. OUT must not exist yet.",
    )
    merge.add_argument("inputs", nargs="+", metavar="LEDGER.jsonl")
    merge.add_argument("-o", "--output", required=True, metavar="OUT", help="the merged ledger (a new file)")


def _add_replay_ledger_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ledger", metavar="FILE", help="the JSONL ledger (default: the one replay writes: "
                        "physverify.yaml's ledger in the claims folder, else CLAIMS/confirm_ledger.jsonl, "
                        f"else ./{DEFAULT_LEDGER})")
    parser.add_argument("--claims", metavar="DIR", help="the claims folder whose ledger to read (default: claims)")


def _ledger_path(ledger: str | None, claims: str | None) -> Path:
    """--ledger, else the ledger replay writes for the claims folder, else confirm's default (as replay resolves it)."""
    from physverify.gate.config import load_config
    from physverify.gate.discovery import DEFAULT_CLAIMS_DIR
    from physverify.gate.settings import default_ledger

    if ledger is not None:
        return Path(ledger)
    folder = Path(claims or DEFAULT_CLAIMS_DIR)
    if folder.is_dir():
        replays = default_ledger(load_config(folder))
        # confirm's own default is ./confirm_ledger.jsonl (spec section 3): before the first replay
        # it is the only ledger there is, and "no ledger lines" would hide the claim's history
        confirms = Path(DEFAULT_LEDGER)
        return confirms if not os.path.lexists(replays) and claims is None and confirms.is_file() else replays
    if claims is not None:
        if os.path.lexists(folder):  # a claim file, say, given for its folder
            raise UsageError(f"{folder}: not a folder; --claims takes the claims folder whose ledger to read"
                             f" (--claims {folder.parent.as_posix()})")
        raise UsageError(f"{folder}: no such claims folder")
    return Path(DEFAULT_LEDGER)


def _ledger(args: argparse.Namespace) -> int:
    from physverify.commands import ledger
    from physverify.report import ledger_text, text

    if args.ledger_command == "merge":
        merged = ledger.merge([Path(p) for p in args.inputs], Path(args.output))
        _warn(merged.problems)
        _emit(ledger_text.render_merge(merged))
        return merged.exit_code
    from physverify.gate.discovery import DEFAULT_CLAIMS_DIR  # _ledger_path imports it too

    path = _ledger_path(args.ledger, args.claims)
    folder = Path(args.claims or DEFAULT_CLAIMS_DIR)  # outside git replay keys claims from it
    if args.ledger is not None and not os.path.lexists(path):  # a typo in --ledger is not "no lines yet"
        raise UsageError(f"{path}: no such ledger file")
    _check_output(args.json, "--json")
    if args.ledger_command == "show":
        shown = ledger.show(path, args.claim, folder)
        _warn(shown.problems)
        _emit_json_or_text(shown.record, args.json, lambda: text.render_confirm(shown.record))
        return shown.exit_code
    history = ledger.log(path, claim=args.claim, folder=folder)
    _warn(history.problems)
    rows = [row._asdict() for row in history.rows]
    _emit_json_or_text(rows, args.json,
                       lambda: ledger_text.render_log(history, path, missing=not os.path.lexists(path)))
    return history.exit_code


def _report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from physverify.report import MAX_PLOTS

    report = sub.add_parser(
        "report",
        help="an HTML page of the evidence in a ledger: verdicts, checks, convergence plots, history",
        description="Write one self-contained HTML file from a ledger: for each claim its latest verdict, the "
        "control and checks, a log-log plot of error against step size for each check that recorded its numbers "
        "(with the extra physverify[report]; tables without it), and its history.",
    )
    _add_replay_ledger_options(report)
    report.add_argument("--claim", metavar="PATH", help="only this claim (as given or relative to its repository)")
    report.add_argument("-o", "--output", default="-", metavar="FILE", help="the HTML file to write (default: stdout)")
    report.add_argument("--max-plots", type=int, default=MAX_PLOTS, metavar="N",
                        help=f"draw at most N plots, failing and confirmed claims first; the rest as tables "
                        f"(default: {MAX_PLOTS}; 0: tables only)")


def _report(args: argparse.Namespace) -> int:
    from physverify.report import html

    _check_output(args.output, "--output")
    page = html.from_ledger(_ledger_path(args.ledger, args.claims), args.claim)
    _warn(page.notes)
    _emit(html.render_report(page, max(args.max_plots, 0)), args.output)
    return page.exit_code


def _warn(problems: Sequence[str]) -> None:
    for problem in problems:
        sys.stderr.write(f"physverify: warning: {visible(problem)}\n")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line as every other error (its own is the usage block, then the error)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument --") and message.endswith(": expected one argument"):
            flag = message.removeprefix("argument ").split(":")[0].split("/")[0]  # "--shard -1/2": argparse saw a flag
            message += f" (for a value that starts with '-', write {flag}=VALUE)"
        self.exit(EXIT_ERROR, f"{self.prog}: {visible(message)} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
        prog="physverify", allow_abbrev=False,
        description="Settle suspected defects in physics simulation code against references written from the "
        "physics, and keep the verdicts as a gate.",
    )
    parser.add_argument("--version", action="version", version=f"physverify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _confirm_parser(sub)
    _run_parser(sub)
    _replay_parser(sub)
    _mcp_parser(sub)
    _sandbox_parser(sub)
    _scan_parser(sub)
    _ledger_parser(sub)
    _report_parser(sub)
    _demo_parser(sub)
    return parser


# --- the commands ---------------------------------------------------------------------
def _confirm(args: argparse.Namespace) -> int:
    from physverify.commands import confirm
    from physverify.gate import evaluate, templates
    from physverify.report import text
    from physverify.text import dumps

    if args.claim != "init" and (args.text, args.file, args.line, args.defect, args.fix) != (None,) * 5:
        raise UsageError("--text, --file, --line, --defect and --fix belong to 'confirm init CLAIM.py'; "
                         "a claim file keeps them in CLAIM")
    if args.claim != "init" and args.kind is not None:
        raise UsageError("--kind belongs to 'confirm init CLAIM.py'")
    if args.claim == "init":
        if args.init_path is None:
            raise PhysverifyError("confirm init: name the claim file to write: physverify confirm init CLAIM.py ...")
        written = templates.write_template(Path(args.init_path), text=args.text, file=args.file, line=args.line,
                                           kind=args.kind, defect=args.defect, fix=args.fix)
        todo = "control() and checks()" if args.kind is None else "the ADAPTER block"
        run = f"physverify confirm {shlex.quote(str(written))} --trusted"  # the next command, ready to paste
        sys.stdout.write(f"wrote {written}: fill in source, reference and impact, then {todo}; then run '{run}'\n")
        return EXIT_OK
    if args.init_path is not None:
        raise PhysverifyError(f"confirm takes one claim file; {args.init_path!r} is extra")
    _check_output(args.json, "--json")
    # stdout holds the spec's transcript (section 2: the verdict line first, then the control and the checks),
    # so scripts, docs and the ledger's readers see one shape. While the child runs, each control and check line
    # is shown as it finishes, so a long claim is not silent: on stdout at a terminal, where the transcript
    # follows it, and on stderr otherwise (a CI log, a pipe, --json -), where stdout's shape must not change.
    live = sys.stdout if args.json != "-" and sys.stdout.isatty() else sys.stderr

    def show(finished: evaluate.Finished) -> None:
        live.write(text.finished_line(*finished) + "\n")
        live.flush()

    evaluation = confirm.confirm(
        Path(args.claim),
        ledger=Path(args.ledger),
        timeout_s=args.timeout,
        trusted=args.trusted,
        allow_dependent_reference=args.allow_dependent_reference,
        isolation=args.isolation,
        on_finished=show,
    )
    if args.json is not None:  # spec section 7: only --json - replaces the text verdict
        _emit(dumps(evaluation.record, indent=None if args.json == "-" else 2), args.json)
    if args.json != "-":
        _emit(text.render_confirm(evaluation.record))
    return evaluation.verdict.exit_code


def _run(args: argparse.Namespace) -> int:
    from physverify.commands import run_specs
    from physverify.report import text

    outcome = run_specs.run_specs([Path(p) for p in args.specs], timeout_s=args.timeout, isolation=args.isolation)
    _emit_json_or_text(outcome.to_dict(), args.json, lambda: text.render_run(outcome))
    return outcome.exit_code


MCP_MISSING = "physverify mcp needs the MCP SDK, which the base install leaves out: pip install 'physverify[mcp]'"


def _mcp(args: argparse.Namespace) -> int:
    import importlib.util

    # The SDK is an extra (pyproject.toml says why); found before mcp_server imports it, so its absence
    # is one line, not an ImportError's traceback.
    if importlib.util.find_spec("mcp") is None:
        raise PhysverifyError(MCP_MISSING)
    from physverify.commands import mcp_server

    mcp_server.serve(Path(args.root))  # stdout is the protocol stream: nothing else is printed
    return EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    from physverify.gate import replay
    from physverify import report

    dirs, files = _replay_dirs_and_files(args)
    fmt = args.format or "text"
    reports = _reports(args.report)
    for _, path in reports:  # every file is checked before anything runs
        _check_output(path, "--report")
    _check_output(args.output, "--output")
    progress = _replay_progress(fmt, sys.stderr.isatty(), args.pre_commit)
    result = replay.replay(
        dirs, ledger=args.ledger, jobs=args.jobs, timeout_s=args.timeout, trusted=args.trusted,
        baseline=args.baseline, changed_since=args.changed_since, files=files, pre_commit=args.pre_commit,
        shard=args.shard, record_all=args.record_all, dry_run=args.dry_run, progress=progress, isolation=args.isolation,
    )
    for name, path in reports:
        _emit(report.render(name, result), path)
    _emit(report.render(fmt, result), args.output)
    return result.exit_code


def _scan(args: argparse.Namespace) -> int:
    from physverify.scan import render, run

    _check_output(args.output, "--output")
    _check_output(args.sarif, "--sarif")
    result = run.scan(args.paths, config_dir=args.claims, claims=Path(args.claims) if args.claims else None,
                      jobs=args.jobs)
    if args.sarif is not None:
        _emit(render.FORMATS["sarif"](result), args.sarif)
    _emit(render.FORMATS[args.format](result), args.output)
    return result.exit_code


def _replay_dirs_and_files(args: argparse.Namespace) -> tuple[list[str], list[str] | None]:
    """Return replay's claims folders and changed files; with --pre-commit the positional arguments are files."""
    if args.pre_commit:
        return [args.claims] if args.claims else [], list(args.paths) + list(args.files or [])
    return list(args.paths) + ([args.claims] if args.claims else []), args.files


def _replay_progress(fmt: str, terminal: bool, pre_commit: bool) -> Callable[[Any, int, int], None] | None:
    """Progress on stderr: on a terminal each claim's line as it ends (text output); elsewhere (a CI log) a
    count at most every PROGRESS_EVERY_S and at the end; none for the hook, whose log pre-commit shows."""
    from physverify.report.text import CountedProgress

    if terminal:
        return _claim_progress if fmt == "text" else None
    return None if pre_commit else CountedProgress(_flushed(sys.stderr), time.monotonic())


def _claim_progress(run: Any, done: int, total: int) -> None:
    from physverify.report import text

    sys.stderr.write(f"[{done}/{total}] {text.replay_line(run)}\n")
    sys.stderr.flush()


def _emit_json_or_text(obj: object, json_target: str | None, render_text: Callable[[], str]) -> None:
    from physverify.text import dumps

    if json_target is None:
        _emit(render_text())
    else:
        _emit(dumps(obj, indent=None if json_target == "-" else 2), json_target)


def _writes_cannot_raise() -> None:
    """Let stdout and stderr write any str: a character the encoding lacks becomes its escape (issue 13).

    Text from claims is cleaned where it enters, but an exit code must never depend on
    whether the terminal's encoding can show a character.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def command() -> int:
    """The ``physverify`` command and ``python -m physverify``: ``main()``, then what it leaves is frozen.

    The interpreter collects every tracked object as it exits, only to free memory the exit
    frees anyway: a replay's readings, plans and records made that 15-30 ms of every command
    (benchmarks/exit_bench.py). Frozen objects are still freed by their reference counts,
    finalizers included, as the modules are torn down; only reference cycles among them are
    left to the process's end, and no physverify object needs its cycle collected (every
    file, the ledger first, is closed where it is written).
    """
    from physverify.commands.sandbox import seal
    from physverify.isolation import guard, privatetmp

    guard.protect()  # before any claim runs: none may open this process's descriptors or memory
    try:
        seal.receive()  # inside the Action's sandbox: the key of the result's seal, before anything else runs
        shared = privatetmp.probe()  # inside the sandbox: whether each claim gets its own /tmp; one line if not
        if shared is not None:
            sys.stderr.write(shared + "\n")
        return main()
    except PhysverifyError as exc:  # only receive's: main reports its own
        sys.stderr.write(f"physverify: {exc}\n")
        return EXIT_ERROR
    finally:  # also after argparse's own exits (--help, --version, a usage error)
        gc.freeze()


def main(argv: Sequence[str] | None = None) -> int:
    _writes_cannot_raise()
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = _install_sigterm()
    try:
        return _dispatch(parser, args)
    except BaseException as exc:  # the one handler (handler.py): report and exit, or re-raise what is not ours
        failed = handler.failure(exc)
        if failed is None or (failed.bug and handler.debugging()):
            raise
        if failed.message:
            sys.stderr.write(f"physverify: {failed.message}\n")
        return failed.exit_code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _install_sigterm() -> Any:
    """SIGTERM raises in the main thread, so running claims are killed as for Ctrl-C; the old handler to restore."""
    import threading

    if threading.current_thread() is not threading.main_thread():  # signal.signal works only there
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "confirm":
        return _confirm(args)
    elif args.command == "run":
        return _run(args)
    elif args.command == "replay":
        return _replay(args)
    elif args.command == "mcp":
        return _mcp(args)
    elif args.command == "sandbox":
        return _sandbox(args)
    elif args.command == "scan":
        return _scan(args)
    elif args.command == "ledger":
        return _ledger(args)
    elif args.command == "report":
        return _report(args)
    elif args.command == "demo":
        return _demo()
    elif args.command is None:
        parser.print_help()
        return EXIT_ERROR
    raise NotImplementedError(args.command)
