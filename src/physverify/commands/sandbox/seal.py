"""Every sandboxed run's result files (the Action's, and ``--output``, ``--report``, ``--json`` of the command
line), sealed by physverify inside with a key no claim can reach.

The replay inside the sandbox writes its JSON result into a file bound writable from the
host, and every claim inside can write that file too: it finds the path in its ancestor's
/proc/PID/cmdline, which the kernel shows to everyone. A claim wrote a result with no claims
and exit code 0, set physverify's RLIMIT_FSIZE to one byte with prlimit so that physverify
never wrote its own, and the host read the forged file: a regression passed the gate.

So the host decides only from a result that carries this run's seal: an HMAC-SHA256 of its
bytes under a key the host makes for the run. The key reaches physverify inside on its
standard input, a pipe the host closes at once; physverify reads it before anything of the
repository runs and is non-dumpable from its start (isolation/guard.py), so no claim can read
it from the pipe (empty by then), from /proc/PID/environ or /proc/PID/cmdline (it is in
neither), or from physverify's memory. The sealed file is the tag in hexadecimal, a newline,
and the result's bytes. The runner (run.sandbox) writes a result to the caller's file only when
its tag holds; a file without a valid tag, or none after a verdict, is exit 2 and, in the
Action, ``gate=error``.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping

from physverify.errors import PhysverifyError

SEAL_ENV = "PHYSVERIFY_RESULT_SEAL"  # set inside by the host: "stdin", the key comes on standard input
KEY_BYTES = 32
_TAG_CHARS = 64  # SHA-256, in hexadecimal
_held: list[bytes] = []  # the key inside, once received


def new_key() -> bytes:
    """A new key for one sandboxed run."""
    return secrets.token_bytes(KEY_BYTES)


def key_line(key: bytes) -> bytes:
    """What the host writes on the standard input of the command inside."""
    return key.hex().encode("ascii") + b"\n"


def receive(env: Mapping[str, str] | None = None, fd: int = 0) -> bool:
    """Inside: when the host asked for a seal, read the key from ``fd`` (standard input); whether it did.

    Called before anything of the repository runs. A missing or malformed key is an error:
    without it the result could not be told from a claim's.
    """
    if (os.environ if env is None else env).get(SEAL_ENV) != "stdin":
        return False
    line = b""
    while len(line) <= 2 * KEY_BYTES and not line.endswith(b"\n"):
        chunk = os.read(fd, 2 * KEY_BYTES + 1 - len(line))
        if not chunk:
            break
        line += chunk
    try:
        key = bytes.fromhex(line.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise PhysverifyError("sandbox: no key for the result's seal arrived on standard input; no verdict")
    _held[:] = [key]
    os.environ.pop(SEAL_ENV, None)  # nothing the claims need
    return True


def active() -> bool:
    """Whether this process holds a key (inside a sandboxed run of the Action)."""
    return bool(_held)


def seal(data: bytes, key: bytes | None = None) -> bytes:
    """``data`` with its tag in front, under ``key`` (default: the one received)."""
    tag = hmac.digest(key if key is not None else _held[0], data, "sha256").hex().encode("ascii")
    return tag + b"\n" + data


def opened(sealed: bytes, key: bytes, what: str) -> bytes:
    """The data of ``sealed`` when its tag holds under ``key``; PhysverifyError naming ``what`` otherwise."""
    tag, newline, data = sealed[:_TAG_CHARS], sealed[_TAG_CHARS : _TAG_CHARS + 1], sealed[_TAG_CHARS + 1 :]
    if newline != b"\n" or not hmac.compare_digest(tag, seal(data, key)[:_TAG_CHARS]):
        raise PhysverifyError(f"{what} does not carry this run's seal: something inside the sandbox other than "
                              "physverify wrote it (a claim can reach that file); no verdict")
    return data
