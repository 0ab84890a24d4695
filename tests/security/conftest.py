"""tests/security builds its projects from tests/support/fixtures.py, one folder up."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest puts this folder (the first one without __init__.py) on sys.path, not tests/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
