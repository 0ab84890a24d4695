"""The sandbox command's defaults and its backends by name: what ``physverify sandbox --help`` shows.

Every command builds the whole parser (cli.py), the no-op pre-commit hook too; importing
sandbox.py for these few values cost each command 5-7 ms of module set-up (its plan's
dataclasses, its backends). run.py and plan.py take them from here.
"""

from __future__ import annotations

BACKEND_NAMES = ("docker", "podman", "bwrap")  # sandbox.BACKENDS builds each one's command line
IMAGE_ENV = "PHYSVERIFY_SANDBOX_IMAGE"
DEFAULT_IMAGE = "physverify-sandbox"
DEFAULT_MEMORY = "4g"
DEFAULT_PIDS = 512
GRACE_S = 60.0  # added once to every outer limit (start-up, ledger write)
