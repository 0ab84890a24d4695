"""physverify: settle suspected defects in physics simulation code against references
written from the physics, and keep the verdicts honest as a gate.

The public names are loaded on first use (PEP 562), so ``import physverify`` and
``physverify --version`` do not pay for numpy (issue 11, item 4); ``from physverify import
Check`` in a claim file works as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The one place the version is written (pyproject.toml reads it from here). 1.0.0, above every release
# published under the name (another project's 0.6.0 on the index, 0.7 to 0.10 elsewhere), so that
# `pip install -U physverify` never replaces this tool with an older, different one.
__version__ = "1.0.0"

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
    "convergence_study": "physverify.studies",
    "self_convergence_study": "physverify.studies",
    "refinement_path": "physverify.studies",
    "path_steps": "physverify.studies",
    "drift_study": "physverify.studies",
    "Refinement": "physverify.refine",
    "refine": "physverify.refine",
    "exact_steps": "physverify.adapters",
    "from_second_order_step": "physverify.adapters",
    "from_step": "physverify.adapters",
    "identity_check": "physverify.operators",
    "operator_study": "physverify.operators",
    "reversibility_study": "physverify.operators",
    "StochasticResult": "physverify.stochastic",
    "distribution_study": "physverify.stochastic",
    "mean_study": "physverify.stochastic",
    "weak_order_study": "physverify.stochastic",
    "jax_key": "physverify.seeding",
    "seeded": "physverify.seeding",
    "ode_checks": "physverify.studies",  # from physverify 0.6.0: claim files written for it run unchanged
    "zero_source": "physverify.mms",  # from physverify 0.6.0
}

__all__ = ["__version__", *sorted(_LAZY)]  # noqa: PLE0604 - _LAZY is the one list of the public names

# The function refine shares its module's name: the first ``import physverify.refine`` anywhere (a study
# taking a plan) would set this package's attribute ``refine`` to the module, so ``from physverify import
# refine`` would give the module. Binding the function here, after that import, settles it; refine.py
# imports only the standard library, so ``physverify --version`` stays fast.
from physverify.refine import Refinement as Refinement  # noqa: E402
from physverify.refine import refine as refine  # noqa: E402


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


if TYPE_CHECKING:  # for mypy and editors: the names as if imported eagerly (``X as X`` re-exports them)
    from physverify.checks import ERROR as ERROR
    from physverify.checks import EXACT as EXACT
    from physverify.checks import FAIL as FAIL
    from physverify.checks import INCONCLUSIVE as INCONCLUSIVE
    from physverify.checks import PASS as PASS
    from physverify.checks import SKIP as SKIP
    from physverify.checks import STATUSES as STATUSES
    from physverify.checks import Check as Check
    from physverify.checks import CheckOutcome as CheckOutcome
    from physverify.checks import OrderResult as OrderResult
    from physverify.checks import Result as Result
    from physverify.checks import SkipCheck as SkipCheck
    from physverify.checks import requires as requires
    from physverify.checks import run_check as run_check
    from physverify.mms import ManufacturedODE as ManufacturedODE
    from physverify.mms import mms_order_study as mms_order_study
    from physverify.mms import mms_trajectory_study as mms_trajectory_study
    from physverify.order import check_exact as check_exact
    from physverify.order import check_order as check_order
    from physverify.order import fit_order as fit_order
    from physverify.order import pairwise_orders as pairwise_orders
    from physverify.studies import invariant_study as invariant_study
    from physverify.studies import patch_study as patch_study
    from physverify.studies import reference_study as reference_study
    from physverify.studies import convergence_study as convergence_study
    from physverify.studies import self_convergence_study as self_convergence_study
    from physverify.studies import path_steps as path_steps
    from physverify.studies import refinement_path as refinement_path
    from physverify.studies import drift_study as drift_study
    from physverify.adapters import exact_steps as exact_steps
    from physverify.adapters import from_second_order_step as from_second_order_step
    from physverify.adapters import from_step as from_step
    from physverify.operators import identity_check as identity_check
    from physverify.operators import operator_study as operator_study
    from physverify.operators import reversibility_study as reversibility_study
    from physverify.stochastic import StochasticResult as StochasticResult
    from physverify.stochastic import distribution_study as distribution_study
    from physverify.stochastic import mean_study as mean_study
    from physverify.stochastic import weak_order_study as weak_order_study
    from physverify.seeding import jax_key as jax_key, seeded as seeded
    from physverify.studies import ode_checks as ode_checks
    from physverify.mms import zero_source as zero_source
