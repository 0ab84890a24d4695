"""physverify: settle suspected defects in physics simulation code against references
written from the physics, and keep the verdicts honest as a gate."""

from __future__ import annotations

from physverify.checks import (
    ERROR,
    EXACT,
    FAIL,
    INCONCLUSIVE,
    PASS,
    SKIP,
    STATUSES,
    Check,
    CheckOutcome,
    OrderResult,
    Result,
    SkipCheck,
    requires,
    run_check,
)

__version__ = "0.1.0"

__all__ = [
    "ERROR",
    "EXACT",
    "FAIL",
    "INCONCLUSIVE",
    "PASS",
    "SKIP",
    "STATUSES",
    "Check",
    "CheckOutcome",
    "OrderResult",
    "Result",
    "SkipCheck",
    "__version__",
    "requires",
    "run_check",
]
