"""physverify: settle suspected defects in physics simulation code against references
written from the physics, and keep the verdicts honest as a gate.

The public names are loaded on first use (PEP 562), so ``import physverify`` and
``physverify --version`` do not pay for numpy (issue 11, item 4); ``from physverify import
Check`` in a claim file works as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it; one line per name, so adding one is one line
_LAZY: dict[str, str] = {
    "ERROR": "physverify.checks",
    "EXACT": "physverify.checks",
    "FAIL": "physverify.checks",
    "INCONCLUSIVE": "physverify.checks",
    "PASS": "physverify.checks",
    "SKIP": "physverify.checks",
    "STATUSES": "physverify.checks",
    "Check": "physverify.checks",
    "CheckOutcome": "physverify.checks",
    "OrderResult": "physverify.checks",
    "Result": "physverify.checks",
    "SkipCheck": "physverify.checks",
    "requires": "physverify.checks",
    "run_check": "physverify.checks",
    "ManufacturedODE": "physverify.mms",
    "mms_order_study": "physverify.mms",
    "mms_trajectory_study": "physverify.mms",
    "check_exact": "physverify.order",
    "check_order": "physverify.order",
    "fit_order": "physverify.order",
    "pairwise_orders": "physverify.order",
    "invariant_study": "physverify.studies",
    "patch_study": "physverify.studies",
    "reference_study": "physverify.studies",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    """Import the module defining ``name`` on first use and keep the value here."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'physverify' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # for mypy and editors: the names as if imported eagerly
    from physverify.checks import (
        ERROR, EXACT, FAIL, INCONCLUSIVE, PASS, SKIP, STATUSES, Check, CheckOutcome, OrderResult, Result,
        SkipCheck, requires, run_check,
    )
    from physverify.mms import ManufacturedODE, mms_order_study, mms_trajectory_study
    from physverify.order import check_exact, check_order, fit_order, pairwise_orders
    from physverify.studies import invariant_study, patch_study, reference_study
