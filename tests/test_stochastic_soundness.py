"""benchmarks/stochastic_soundness.py --quick meets the targets of issue 20 (docs/soundness.md).

The quick run uses seeds 0 to 19 of every case, so its counts are fixed for a given numpy: the
test is deterministic, and it fails when a change to the studies moves any of them past a target
(false alarms <= 1.5 %, false passes <= 1 %, right decisions >= 90 % of each kind).
"""

from __future__ import annotations

from types import ModuleType

import pytest
from support import benchmarks



def load_benchmark() -> ModuleType:
    return benchmarks.load("stochastic_soundness")


@pytest.mark.slow
def test_the_stochastic_studies_meet_the_soundness_targets_on_the_quick_benchmark() -> None:
    bench = load_benchmark()
    cases = bench.suite()
    assert sum(c.correct for c in cases) >= 5 and all(c.correct or c.effect > 1 for c in cases)
    t = bench.totals(bench.measure(cases, 20))
    assert t["false alarms"] <= 0.015 and t["false passes"] <= 0.01
    assert t["right, correct"] >= 0.9 and t["right, defective"] >= 0.9
