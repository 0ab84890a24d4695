"""``physverify mcp``: the MCP tools run_checks, confirm_claim, replay_claims and scan over stdio.

A thin adapter (STYLE.md, "State and formats"): each tool calls the function the command
line calls (run_specs.run_specs, confirm.confirm, replay.replay, scan.run.scan) and renders with the same
report modules, so a model sees what a person at the terminal sees. The SDK's MCPServer
does the framing; nothing here writes to stdout, which is the protocol stream.

Rules of the server's own: every path a tool uses is resolved (symlinks too) against the
project root given by ``--root`` and refused when it lands outside it: the paths a client
names, and the ones the repository chooses (a claim file found in a folder, the ledger
named by physverify.yaml, a claim's CLAIM["repo"] and the file it claims about, issue 13).
A refusal or bad input is raised as the SDK's ToolError, the one exception whose message
reaches the client. ``trusted`` is a JSON boolean, never a string that looks like one.
Everything sent back is cleaned of lone surrogates, which the protocol cannot carry.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from mcp.server import MCPServer
from mcp.server.mcpserver import Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, StrictBool, ValidationError

from physverify import __version__
from physverify.commands import handler
from physverify.errors import PhysverifyError, RefusedError, UsageError
from physverify.gate.ledger import DEFAULT_LEDGER
from physverify.text import clean_str, dumps, short_repr, visible

INSTRUCTIONS = (
    "physverify settles suspected defects in physics simulation code by running the code against "
    "references written from the physics (a book, a paper), never from the code under test. "
    "Every tool runs the project's Python code in a fresh child process; pass trusted: true only "
    "for code the user owns or has reviewed. Paths are relative to the project root."
)

RUN_CHECKS_DOC = """Run the checks() of spec files (verify_*.py) as a plain check suite and return one line per check.

What it runs: each spec file's checks() in a fresh Python process (the same isolated child as
confirm_claim), so an edit to the solver between two calls is always seen. Nothing is recorded.
When to use it: while writing or fixing a solver or a spec, to see which checks PASS, FAIL or are
INCONCLUSIVE. Give `specs` (paths under the project root), or none to run every verify_*.py found
under the root. `timeout` (seconds, default 600) is the limit per spec file; a spec stopped at the
limit is reported as a load error. Runs project code: needs trusted: true (or the sandbox).
Returns the text report, then the same result as JSON."""

CONFIRM_CLAIM_DOC = """Settle one suspected defect: run a claim file's control() and checks() and record a verdict.

What it runs: the claim file (a .py defining CLAIM, control() and checks(), see docs/confirm.md)
in a fresh Python process with a time limit, then applies the fixed verdict rules: confirmed (the
control passed and a check of the correct behaviour failed), rejected (everything passed) or not
decidable (the control failed, a timeout, a load error, a reference that uses the code under test).
It appends one JSON line to the ledger (default confirm_ledger.jsonl at the project root), exactly
like `physverify confirm`. When to use it: after writing a claim file for a suspected bug, to get a
recorded verdict. Runs project code: needs trusted: true (or the sandbox). `timeout` is seconds for
the whole run (default 300). `allow_dependent_reference` is a reason in words for running although
the reference looks like it calls the code under test. Returns the text verdict, then the ledger
line as JSON, then (when the deciding check measured an order) a PNG of its convergence plot."""

REPLAY_CLAIMS_DOC = """Replay a claims folder as a gate: re-run every claim and report how each verdict moved.

What it runs: every claim file under the folder (default claims/), each in its own fresh process,
with the same verdict rules as confirm_claim; compares each verdict with the ledger as committed
at git `baseline` (default HEAD; the working ledger only outside git) and names the transitions:
regressed (the defect is back), fixed, undecidable, decided, new, unchanged, removed. It appends a
ledger line for each claim whose verdict differs from the ledger's latest line (every claim with
record_all), like `physverify replay`.
When to use it: before committing a change to solver code, to see whether a known defect came back
or a fix holds. `changed_since` (a git ref) or `files` limit the run to the claims those changes
affect; `shard` is K/N. Runs project code: needs trusted: true (or the sandbox).
Returns the summary and every transition as text, then the result as JSON, then a PNG of the
deciding check's convergence plot for up to four claims whose verdict is not unchanged."""

SCAN_DOC = """Read Python files statically and list suspects; runs nothing, so it needs no trust.

What it runs: nothing. It parses every *.py file under `paths` (default: the project root; hidden, venv and build
folders skipped) without importing or running any of them, and reports one finding per suspect:
rk-order (a Runge-Kutta table or written-out stages whose order conditions miss the order its name,
`order` attribute or docstring states), rk-consistency (nodes that are not the row sums of A, weights
not summing to 1), grid-spacing (a spacing that does not match its linspace/arange grid), constant (a
literal near a CODATA constant bound to its name but not equal to it within its rounding), and
inverse-pair (functions that look like inverses: a suggestion for a round-trip claim). A finding is a
suspicion, not a verdict. When to use it: first, on code you have not read, to find what to claim.
`claims` (a folder under the root) writes one claim template per finding there, never overwriting a
file; fill in its ADAPTER block, then settle it with confirm_claim. Returns the findings as text
(file:line: rule: message), then the result as JSON."""

_T = TypeVar("_T")
# At most this many plots beside a replay's text: the claims that moved come first, and a
# large folder must not flood the client with images.
MAX_IMAGES = 4


def build_server(root: Path) -> MCPServer:
    """The server with its four tools, confined to the project ``root``."""
    root = root.resolve()
    if not root.is_dir():
        raise PhysverifyError(f"{root}: the project root given by --root is not a folder")
    tools = [
        _checked_tool(_run_checks_tool(root), "run_checks", RUN_CHECKS_DOC),
        _checked_tool(_confirm_claim_tool(root), "confirm_claim", CONFIRM_CLAIM_DOC),
        _checked_tool(_replay_claims_tool(root), "replay_claims", REPLAY_CLAIMS_DOC),
        _checked_tool(_scan_tool(root), "scan", SCAN_DOC),
    ]
    return MCPServer("physverify", instructions=INSTRUCTIONS, version=__version__, tools=tools)


class _CheckedTool(Tool):
    """A tool whose arguments are checked strictly, each mistake named in one line.

    The SDK's own check lets an argument it does not know pass unseen ("timout": 5 ran with
    the default 300 s), turns true into 1 and "2" into 2, and reports a mistake in
    pydantic's several lines with a link; a misspelled setting in physverify.yaml is an
    error for the same reason (config.py).
    """

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:  # `from exc`: the SDK logs the field names of a ValidationError, not values
            raise ToolError(_arguments_problem(self.name, sorted(self.parameters.get("properties", {})), exc)) from exc
        return await super().run(arguments, context, convert_result)


def _checked_tool(fn: Callable[..., Any], name: str, description: str) -> Tool:
    """``fn`` as a _CheckedTool: no argument it does not name, no value of another JSON type."""
    tool = _CheckedTool.from_function(fn, name=name, description=description, structured_output=False)
    lenient = tool.fn_metadata.arg_model
    strict = cast(type[ArgModelBase],
                  type(lenient.__name__, (lenient,), {"model_config": ConfigDict(extra="forbid", strict=True)}))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)  # the published schema says so: additionalProperties
    return tool


def _arguments_problem(tool: str, known: Sequence[str], exc: ValidationError) -> str:
    """One line naming each bad argument of a call to ``tool`` and what is wrong with it."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "the arguments"
        if error["type"] == "missing":
            problems.append(f"{where} is required")
        elif error["type"] == "extra_forbidden":
            problems.append(f"{where} is not one of its arguments ({', '.join(known)})")
        else:
            problems.append(f"{where}: {error['msg'].lower()}, not {short_repr(error.get('input'))}")
    return visible(f"Error executing tool {tool}: {'; '.join(problems)}")  # the SDK's start of every tool error


def serve(root: Path) -> None:
    """Change into the project root and run the server on stdio until the client closes the stream."""
    server = build_server(root)
    os.chdir(root)  # a relative ledger or claims path means root/path, as at the terminal
    server.run("stdio")


# --- the tools: each one line of argument handling around the CLI's function ---------------
def _run_checks_tool(root: Path) -> Callable[..., str]:
    def run_checks(specs: list[str] | None = None, trusted: StrictBool = False, timeout: float = 600.0) -> str:
        from physverify.commands import run_specs
        from physverify.gate import settings
        from physverify.report import text

        def call() -> str:
            settings.require_trust(trusted)  # before anything is found or run (spec section 5)
            paths = [_as_given(inside_root(root, p)) for p in specs] if specs else discover_specs(root)
            if not paths:
                raise PhysverifyError(f"{root}: no verify_*.py spec files under the project root; name them in specs")
            outcome = run_specs.run_specs(paths, timeout_s=timeout)
            return _text_then_json(text.render_run(outcome), outcome.to_dict())

        return _as_tool_error(call)

    return run_checks


def _confirm_claim_tool(root: Path) -> Callable[..., str | list[str | Image]]:
    def confirm_claim(
        claim: str,
        trusted: StrictBool = False,
        ledger: str = DEFAULT_LEDGER,
        timeout: float = 300.0,
        allow_dependent_reference: str | None = None,
    ) -> str | list[str | Image]:
        from physverify.commands import confirm
        from physverify.gate import settings
        from physverify.report import text

        def call() -> str | list[str | Image]:
            settings.require_trust(trusted)  # nothing is read, run or written on a refusal
            evaluation = confirm.confirm(
                _as_given(claim_inside_root(root, claim)),
                ledger=_as_given(inside_root(root, ledger)),
                timeout_s=timeout,
                trusted=trusted,
                allow_dependent_reference=allow_dependent_reference,
            )
            return _with_plots(_text_then_json(text.render_confirm(evaluation.record), evaluation.record),
                               [evaluation.record])

        return _as_tool_error(call)

    return confirm_claim


def _replay_claims_tool(root: Path) -> Callable[..., str | list[str | Image]]:
    def replay_claims(
        claims: list[str] | None = None,
        trusted: StrictBool = False,
        ledger: str | None = None,
        jobs: int | None = None,
        timeout: float | None = None,
        baseline: str | None = None,
        changed_since: str | None = None,
        files: list[str] | None = None,
        shard: str | None = None,
        record_all: StrictBool = False,
    ) -> str | list[str | Image]:
        from physverify.gate import discovery, replay, settings
        from physverify import report

        def call() -> str | list[str | Image]:
            settings.require_trust(trusted)
            given = [_as_given(inside_root(root, c)) for c in claims or [discovery.DEFAULT_CLAIMS_DIR]]
            result = replay.replay(
                given,
                ledger=replay_ledger_inside_root(root, given, ledger),
                jobs=jobs,
                timeout_s=timeout,
                trusted=trusted,
                baseline=baseline,
                changed_since=changed_since,
                files=None if files is None else [str(_as_given(inside_root(root, f))) for f in files],
                shard=shard,
                record_all=record_all,
            )
            moved = [run.record for run in result.claims if run.record is not None and run.transition != "unchanged"]
            return _with_plots(_text_then_json(report.render("text", result), json.loads(report.render("json", result))),
                               moved)

        return _as_tool_error(call)

    return replay_claims


def _scan_tool(root: Path) -> Callable[..., str]:
    def scan(paths: list[str] | None = None, claims: str | None = None) -> str:
        from physverify.scan import render, run

        def call() -> str:
            given = [str(_as_given(inside_root(root, p))) for p in paths or ["."]]
            folder = _as_given(inside_root(root, claims)) if claims is not None else None
            result = run.scan(given, config_dir=None if folder is None else str(folder), claims=folder, confine=root)
            return _text_then_json(render.render_text(result), render.to_dict(result))

        return _as_tool_error(call)

    return scan


# --- the server's own rules ---------------------------------------------------------------
def inside_root(root: Path, path: str, what: str = "") -> Path:
    """``path`` resolved against ``root`` (symlinks too); ToolError when it lands outside it.

    ``what`` names who chose the path when it was not the client ("CLAIM['file'] of x.py: ").
    """
    shown = visible(path)
    if "\x00" in path:
        raise ToolError(f"{what}{shown}: a path cannot hold a NUL byte")
    try:
        resolved = (root / Path(path).expanduser()).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a name the file system cannot encode
        raise ToolError(f"{what}{shown}: cannot be resolved: {visible(exc)}") from None
    if resolved != root and root not in resolved.parents:
        raise ToolError(
            f"{what}{shown}: outside the project root {root} (resolves to {visible(resolved)}); "
            "this server only reads and runs files under it"
        )
    return resolved


def claim_inside_root(root: Path, path: str | Path) -> Path:
    """The claim file ``path`` resolved under ``root``; ToolError when it, its CLAIM["repo"] or its target is outside.

    Read statically, as confirm reads it: the repository a claim names goes on the child's
    sys.path, and the file it claims about is hashed into the ledger.
    """
    from physverify.gate import claim, repo

    resolved = inside_root(root, str(path))
    try:
        values = claim.read_claim(resolved).claim
    except claim.ClaimLoadError as exc:  # confirm records the load error; what could be read is still checked
        values = exc.claim or {}
    given = values.get("repo")
    if isinstance(given, str) and given:
        inside_root(root, str(resolved.parent / given), what=f"CLAIM['repo'] of {visible(path)}: ")
    file = values.get("file")
    if isinstance(file, str) and file:  # both places confirm.find_target looks, before it confines the lookup
        for base in (repo.claim_root(resolved, values), resolved.parent):
            if _exists(base / file):
                inside_root(root, str(base / file), what=f"CLAIM['file'] of {visible(path)}: ")
    return resolved


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a NUL byte, an unencodable name: nothing there to hash
        return False


def replay_ledger_inside_root(root: Path, folders: Sequence[Path], ledger: str | None) -> Path | None:
    """The ledger replay_claims writes, checked to be under ``root``, and every claim it will run.

    Without a ``ledger`` argument it is the one physverify.yaml names (or the default in the
    first folder), which the repository chose; every claim file discovery finds is checked
    with ``claim_inside_root`` before anything runs. None when a folder is missing, so that
    replay reports it in its own words.
    """
    from physverify.gate import discovery, settings
    from physverify.gate.config import load_config

    if not all(folder.is_dir() for folder in folders):
        return None if ledger is None else _as_given(inside_root(root, ledger))
    configs = [load_config(folder) for folder in folders]
    for cfg in configs:
        for path in discovery.discover(cfg.folder, cfg.exclude):
            claim_inside_root(root, path)
    if ledger is not None:
        return _as_given(inside_root(root, ledger))
    first = configs[0]
    named = first.origin("ledger")
    how = f"named by {named.name}" if named is not None else "the default"  # physverify.yaml or pyproject.toml
    chosen = settings.default_ledger(first)
    return _as_given(inside_root(root, str(chosen), what=f"the ledger of {visible(first.folder)} ({how}): "))


def discover_specs(root: Path) -> list[Path]:
    """Every verify_*.py under ``root``, skipping the folders claim discovery skips, in a stable order.

    ToolError when one is a symlink that leads outside the root (issue 13).
    """
    from physverify.gate.discovery import is_skipped_dir  # one skip rule for claims and specs (STYLE.md, section 4)

    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not is_skipped_dir(d))  # pruned, so a .venv is never walked
        found.extend(Path(folder) / f for f in sorted(files) if f.startswith("verify_") and f.endswith(".py"))
    return [_as_given(inside_root(root, str(path))) for path in found]


def _as_given(path: Path) -> Path:
    """``path`` relative to the working directory when it is under it, as a person would type it.

    The ledger keeps claim_file as given (spec section 3); ``serve`` starts in the root,
    so a claim reads ``claims/x.py`` there, as it does from the command line.
    """
    cwd = Path.cwd().resolve()
    return path.relative_to(cwd) if path.is_relative_to(cwd) else path  # the root itself is '.'


def _text_then_json(text: str, obj: Any) -> str:
    """The text a person would read, a blank line, then the same result as indented JSON."""
    return f"{clean_str(text.rstrip())}\n\n{dumps(obj, indent=2)}\n"


def _with_plots(text: str, records: Sequence[Any]) -> str | list[str | Image]:
    """The text, then a PNG of each record's decisive convergence plot (issue 12), for clients that show images."""
    from physverify.report.html import decisive_png

    images = [Image(data=png, format="png") for png in map(decisive_png, records[:MAX_IMAGES]) if png is not None]
    return [text, *images] if images else text


def _as_tool_error(call: Callable[[], _T]) -> _T:
    """Run ``call``; an expected failure becomes a ToolError so its one line reaches the client."""
    try:
        return call()
    except RefusedError as exc:  # the same refusal, in the words of this interface: an argument, not a flag
        raise ToolError(visible(exc).replace("pass --trusted", "pass trusted: true")) from exc
    except ToolError as exc:  # the server's own refusals: sent as they are, cleaned
        raise ToolError(visible(exc)) from exc
    except UsageError as exc:  # a value the command line takes as a flag is an argument here: name it so
        raise ToolError(_FLAG.sub(lambda m: m.group(1).replace("-", "_"), visible(exc), count=1)) from exc
    except Exception as exc:  # the one handler (handler.py): the client gets the reason, a bug says it is one
        failed = handler.failure(exc)
        if failed is None or (failed.bug and handler.debugging()):
            raise
        raise ToolError(failed.message) from exc


# A UsageError starts with the flag it is about ("--changed-since: ..."); the tool's argument is changed_since.
_FLAG = re.compile(r"^--([a-z][a-z-]*)")


__all__: Sequence[str] = (
    "build_server", "claim_inside_root", "discover_specs", "inside_root", "replay_ledger_inside_root", "serve",
)
