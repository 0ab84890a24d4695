"""``python -m physverify``: the command line, with the working directory taken off sys.path first."""

import os
import sys

# `python -m` puts the working directory first on sys.path (unless -P or -I is given), and physverify
# is run from the root of the repository it checks: a `signal.py`, `random.py` or `json.py` there
# would be imported in place of the standard library's from here on. This process never imports the
# repository's code (claims run in their own processes, each with its own sys.path), so the entry
# goes. What `import physverify` itself loaded came earlier, and a `physverify/` folder in the
# working directory is found before this file: for a checkout you did not write, run the `physverify`
# console script or `python -I -m physverify` (sandbox/README.md, "Starting physverify itself").
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from physverify.commands.cli import command  # noqa: E402 - after the working directory left sys.path

raise SystemExit(command())
