"""``physverify confirm CLAIM.py``: one claim run, recorded (spec section 2).

The command adds to one claim's evaluation (gate/evaluate.py) what a command adds: the
trust rule, the timeout's check, the folder's settings, and the ledger line written.
"""

from __future__ import annotations

from pathlib import Path

from physverify.gate import evaluate, ledger as ledger_file, settings
from physverify.gate.config import load_config
from physverify.isolation import guard


def confirm(
    claim_path: Path,
    *,
    ledger: Path,
    timeout_s: object = settings.DEFAULT_TIMEOUT_S,
    trusted: bool = False,
    allow_dependent_reference: str | None = None,
    isolation: str | None = None,
    on_finished: evaluate.OnFinished | None = None,
) -> evaluate.Evaluation:
    """``physverify confirm``: refuse or run the claim, append its line to the ledger, return it.

    ``on_finished`` is told each control and check as the child finishes it.
    """
    settings.require_trust(trusted)  # before anything is read, run or written
    seconds = settings.parse_timeout(timeout_s)
    reason = settings.parse_reason(allow_dependent_reference)
    destination = Path(ledger)
    ledger_file.check_writable(destination)  # found before the run, not after minutes of it
    folder = load_config(Path(claim_path).parent)  # isolation and preload of the claim's folder (docs/replay.md)
    run = settings.resolve({"timeout_s": seconds, "isolation": isolation}, folder)
    with guard.watching():  # a claim that changes physverify's limits gets no verdict and no ledger line
        evaluation = evaluate.evaluate(Path(claim_path), timeout_s=run.timeout_s, allow_dependent_reference=reason,
                              isolation=run.isolation, preload=run.preload, on_finished=on_finished)
    ledger_file.append_record(destination, evaluation.record)
    return evaluation
