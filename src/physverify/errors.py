"""Expected failures: each carries one line the user can act on.

``cli.main`` catches PhysverifyError in one place, prints ``physverify: <message>`` on
stderr and exits 2 (EXIT_ERROR). Anything else that escapes is a bug and shows its
traceback.
"""

from __future__ import annotations


class PhysverifyError(Exception):
    """An expected failure (bad input, a refusal); the message names the file and the problem."""


class UsageError(PhysverifyError):
    """A command-line value that cannot be used (a zero --timeout, a bad --shard)."""


class RefusedError(PhysverifyError):
    """physverify will not run the code under test (spec section 5: no --trusted, no sandbox)."""


class ConfigError(PhysverifyError):
    """A physverify.yaml that cannot be used: unknown key, wrong type, unknown verdict."""
