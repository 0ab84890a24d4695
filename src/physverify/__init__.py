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
from physverify.mms import ManufacturedODE, mms_order_study, mms_trajectory_study
from physverify.order import check_exact, check_order, fit_order, pairwise_orders
from physverify.studies import (
    convergence_study,
    drift_study,
    invariant_study,
    patch_study,
    reference_study,
    refinement_path,
    self_convergence_study,
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
    "ManufacturedODE",
    "OrderResult",
    "Result",
    "SkipCheck",
    "__version__",
    "check_exact",
    "check_order",
    "convergence_study",
    "drift_study",
    "fit_order",
    "invariant_study",
    "mms_order_study",
    "mms_trajectory_study",
    "pairwise_orders",
    "patch_study",
    "reference_study",
    "refinement_path",
    "requires",
    "run_check",
    "self_convergence_study",
]
