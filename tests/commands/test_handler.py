"""handler.py: one error handler for the command line, the Action and the MCP server (issue 19)."""

from __future__ import annotations

import pytest

from physverify.commands import handler
from physverify.errors import ConfigError, UsageError
from physverify.verdict import EXIT_CRASH, EXIT_ERROR, ExitCode


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (UsageError("--jobs must be a whole number"), ExitCode.ERROR, "--jobs must be a whole number"),
        (ConfigError("x.yaml: bad\nline"), ExitCode.ERROR, "x.yaml: bad\\nline"),  # one line, always
        (BrokenPipeError(), ExitCode.ERROR, ""),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "interrupted"),
        (handler.Terminated(), ExitCode.TERMINATED, "terminated"),
    ],
)
def test_each_kind_of_failure_has_its_exit_code_and_one_line(exc: BaseException, code: ExitCode, message: str) -> None:
    failed = handler.failure(exc)
    assert failed is not None and failed.exit_code == code and failed.message == message and not failed.bug


def test_a_bug_is_exit_3_and_says_so_never_exit_1() -> None:
    failed = handler.failure(OverflowError("timestamp out of range"))
    assert failed is not None and failed.bug and failed.exit_code == EXIT_CRASH == 3
    assert "OverflowError: timestamp out of range" in failed.message and "bug in physverify" in failed.message


def test_what_no_entry_point_handles_is_left_to_propagate() -> None:
    assert handler.failure(SystemExit(0)) is None


def test_the_old_exit_names_are_the_enum() -> None:
    assert EXIT_ERROR is ExitCode.ERROR and int(EXIT_ERROR) == 2 and f"{EXIT_ERROR}" == "2"


def test_a_path_the_system_refuses_is_that_paths_one_line_at_exit_2_not_a_bug() -> None:
    """pathlib's is_dir() and exists() pass on ENAMETOOLONG: a name a person gave, refused wherever it is touched."""
    import errno

    long = "claims/" + "n" * 300 + ".py"
    failed = handler.failure(OSError(errno.ENAMETOOLONG, "File name too long", long))
    assert failed is not None and failed.exit_code == ExitCode.ERROR and not failed.bug
    assert failed.message.endswith("nnn.py: File name too long") and failed.message.startswith("claims/nnn")
    assert len(failed.message) < 120
    odd = handler.failure(OSError(errno.EACCES, "Permission denied", "a\nb"))
    assert odd is not None and odd.message == "a\\nb: Permission denied"  # one line whatever the name holds


def test_an_os_error_that_names_no_file_is_still_a_bug() -> None:
    failed = handler.failure(OSError(22, "Invalid argument"))
    assert failed is not None and failed.bug and failed.exit_code == EXIT_CRASH
