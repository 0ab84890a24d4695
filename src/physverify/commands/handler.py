"""The one error handler of every entry point: the command line, the Action and the MCP server (issue 19).

``failure`` maps what an entry point caught to the exit code and the one line a person
reads, as pre-commit's ``error_handler()`` does for its commands. An expected failure
(PhysverifyError) is its own message; Ctrl-C and SIGTERM are their shell codes; anything
else is a bug in physverify, reported as such and never as exit 1, which means
"confirmed" or "the gate failed". Each entry point only says where the line goes.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from physverify.errors import PhysverifyError
from physverify.text import visible
from physverify.verdict import ExitCode

DEBUG_ENV = "PHYSVERIFY_DEBUG"


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so replay kills its claims' process groups on the way out."""


class Failure(NamedTuple):
    """What an entry point reports for an exception: the exit code and one line (empty: say nothing)."""

    exit_code: ExitCode
    message: str
    bug: bool = False  # a bug in physverify: with $PHYSVERIFY_DEBUG the traceback is shown too


def failure(exc: BaseException) -> Failure | None:
    """The report for ``exc``; None for what no entry point handles (SystemExit, GeneratorExit): re-raise it."""
    if isinstance(exc, PhysverifyError):
        return Failure(ExitCode.ERROR, visible(exc))  # one line, whatever a path or value held
    if isinstance(exc, BrokenPipeError):  # `physverify ... | head`: the reader left, nothing to report
        return Failure(ExitCode.ERROR, "")
    if isinstance(exc, KeyboardInterrupt):  # replay has killed its claims on the way here
        return Failure(ExitCode.INTERRUPTED, "interrupted")
    if isinstance(exc, Terminated):
        return Failure(ExitCode.TERMINATED, "terminated")
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        # The system refused a path a person or the repository gave (a name longer than the file system
        # allows, a folder that cannot be entered): bad input wherever it was first touched, not a bug.
        return Failure(ExitCode.ERROR, f"{_shortened(visible(exc.filename))}: {visible(exc.strerror)}")
    if isinstance(exc, Exception):
        return Failure(ExitCode.CRASH, f"internal error ({type(exc).__name__}: {visible(exc)}); this is a bug in "
                       "physverify, please report it with the command you ran (set PHYSVERIFY_DEBUG=1 for the "
                       "traceback)", bug=True)
    return None


def _shortened(path: str, limit: int = 80) -> str:
    """``path`` cut in the middle to at most ``limit`` characters: its start and its file name both show."""
    if len(path) <= limit:
        return path
    tail = (limit - 3) // 2
    return f"{path[: limit - 3 - tail]}...{path[-tail:]}"


def debugging() -> bool:
    """Whether $PHYSVERIFY_DEBUG asks for the traceback of a bug."""
    return bool(os.environ.get(DEBUG_ENV))
