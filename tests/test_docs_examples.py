"""The transcripts in docs/confirm.md are what `physverify confirm` really prints (issue 3, spec section 8).

Each worked example in docs/confirm.md is a ```text block whose first line is
``$ physverify confirm docs/examples/confirm/claim_X.py --trusted``. The test runs that
command as a real process from the repository root (with a ledger in tmp_path) and
compares stdout with the rest of the block, line by line, whitespace-normalised. Only
round-off digits are masked: decimal numbers in the message part of a control or check
line. Verdict lines, statuses, labels, claim and reference lines are compared exactly, so
a message change must update the golden text in the same commit.

docs/troubleshooting.md quotes every message of check_order; the last test drives each
branch and checks that the page still has its words.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from physverify.checks import OrderResult
from physverify.order import check_exact, check_order
from physverify.verdict import CONFIRMED, EXIT_ERROR, EXIT_FINDING, EXIT_FOR_VERDICT, EXIT_OK, NOT_DECIDABLE, REJECTED

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "confirm.md"
EXAMPLES = REPO / "docs" / "examples" / "confirm"

# Spec section 8: one worked example for each verdict.
EXPECTED = {
    "claim_oscillator.py": (CONFIRMED, EXIT_FINDING),
    "claim_verlet.py": (REJECTED, EXIT_OK),
    "claim_decay.py": (NOT_DECIDABLE, EXIT_ERROR),
    # section 9, claims that name their fix (issue 17): a blind check, and one that sees the defect
    "claim_burgers_order.py": (NOT_DECIDABLE, EXIT_ERROR),
    "claim_burgers_copy.py": (CONFIRMED, EXIT_FINDING),
}

_BLOCK = re.compile(r"^```text\n\$ physverify confirm (?P<claim>\S+) --trusted\n(?P<output>.*?)^```$", re.M | re.S)
_REFUSAL = re.compile(r"^```text\n\$ physverify confirm (?P<claim>\S+)\n(?P<output>.*?)^```$", re.M | re.S)
# A decimal number: 0.802, 2.00, 3.4, 1e-12, 1.97e-02. Integers (an expected order, "1 of 1",
# a line number) are not round-off and stay.
_DECIMAL = re.compile(r"[-+]?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)")
_OUTCOME = re.compile(r"^(?P<head>(?:with the fix: |with the defect put back: )?(?:control|check) [A-Z]+ .*?): "
                      r"(?P<message>.*)$")


class Run(NamedTuple):
    stdout: str
    stderr: str
    returncode: int
    ledger: list[dict[str, object]]


def normalise(line: str) -> str:
    """The line with runs of whitespace collapsed and the ends stripped."""
    return " ".join(line.split())


def mask(line: str) -> str:
    """The normalised line, with decimal numbers after a control or check line's first ': ' replaced by <num>.

    The role, status and label before that colon stay exact (a label with a colon of its
    own keeps its first part exact and is masked the same way on both sides).
    """
    line = normalise(line)
    match = _OUTCOME.match(line)
    if match is None:
        return line
    return f"{match['head']}: {_DECIMAL.sub('<num>', match['message'])}"


def comparable(text: str) -> list[str]:
    """The non-empty lines of ``text``, normalised and masked."""
    return [mask(line) for line in text.splitlines() if line.strip()]


def documented_examples() -> dict[str, str]:
    """Claim path (as written in the doc) -> the golden output under its command line."""
    doc = DOC.read_text(encoding="utf-8")
    return {match["claim"]: match["output"] for match in _BLOCK.finditer(doc)}


def run_confirm(claim: str, ledger: Path, *extra: str) -> Run:
    """``python -m physverify confirm CLAIM --ledger LEDGER ...`` from the repository root, outside the sandbox."""
    env = {k: v for k, v in os.environ.items() if k not in ("PHYSVERIFY_REPO", "PHYSVERIFY_REPO_COMMIT")}
    proc = subprocess.run(
        [sys.executable, "-m", "physverify", "confirm", claim, "--ledger", str(ledger), *extra],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=240,
    )
    lines = ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []
    return Run(proc.stdout, proc.stderr, proc.returncode, [json.loads(line) for line in lines])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Each documented example run once, keyed by the claim path written in the doc."""
    folder = tmp_path_factory.mktemp("ledgers")
    return {
        claim: run_confirm(claim, folder / f"{Path(claim).stem}.jsonl", "--trusted")
        for claim in documented_examples()
    }


# --- the page itself (no process) ------------------------------------------------------
def test_every_worked_example_in_the_examples_folder_has_a_transcript_in_the_doc() -> None:
    documented = {Path(claim).name for claim in documented_examples()}
    on_disk = {path.name for path in EXAMPLES.glob("claim_*.py")}
    assert documented == on_disk == set(EXPECTED)
    assert all(Path(claim).parent == Path("docs/examples/confirm") for claim in documented_examples())


def test_masking_hides_round_off_digits_but_keeps_status_label_and_expected_order() -> None:
    line = "  check FAIL rule with gamma = 0.5 (damping on): about 0.802 at the finest level, 1.97e-02 (expected 2)"
    assert mask(line) == "check FAIL rule with gamma = 0.5 (damping on): about <num> at the finest level, <num> (expected 2)"
    assert mask("rejected (impact: used): the control passed and the check passed") == (
        "rejected (impact: used): the control passed and the check passed"
    )
    assert mask("  check PASS x: observed order 2.00") != mask("  check FAIL x: observed order 2.00")


# --- the real runs ------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_worked_example_prints_what_docs_confirm_md_shows(name: str, runs: dict[str, Run]) -> None:
    claim = f"docs/examples/confirm/{name}"
    golden = documented_examples()[claim]
    run = runs[claim]
    assert comparable(run.stdout) == comparable(golden), f"docs/confirm.md is out of date for {claim}:\n{run.stdout}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_worked_example_gives_its_documented_verdict_and_exit_code(name: str, runs: dict[str, Run]) -> None:
    run = runs[f"docs/examples/confirm/{name}"]
    verdict, exit_code = EXPECTED[name]
    assert run.returncode == exit_code == EXIT_FOR_VERDICT[verdict], run.stdout + run.stderr
    # the control and check lines come first, printed as the child finishes each; then the verdict line
    assert next(line for line in run.stdout.splitlines() if not line.startswith(" ")).startswith(f"{verdict} (impact: ")
    assert [record["verdict"] for record in run.ledger] == [verdict]
    assert run.ledger[0]["claim_file"] == f"docs/examples/confirm/{name}"


def test_the_refusal_shown_in_the_doc_is_what_confirm_prints_without_trusted(tmp_path: Path) -> None:
    doc = DOC.read_text(encoding="utf-8")
    shown = [m for m in _REFUSAL.finditer(doc) if m["claim"].startswith("docs/examples/confirm/")]
    assert len(shown) == 1, "docs/confirm.md section 5 shows one refused run"
    ledger = tmp_path / "ledger.jsonl"
    run = run_confirm(shown[0]["claim"], ledger)
    assert run.returncode == EXIT_ERROR
    assert run.stdout == ""
    assert comparable(run.stderr) == comparable(shown[0]["output"])
    assert not ledger.exists()


# --- the check_order messages quoted in docs/troubleshooting.md ---------------------------
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_HS = [0.1 / 2**k for k in range(5)]


def errors_with_pairwise_orders(orders: list[float], first: float = 1e-2) -> list[float]:
    """Errors at the step sizes _HS whose order between consecutive resolutions is ``orders``."""
    errors = [first]
    for order in orders:
        errors.append(errors[-1] / 2**order)
    return errors


def _order_cases() -> list[tuple[str, OrderResult, str]]:
    """(name, the result of one branch of check_order/check_exact, the status that branch gives)."""
    rising = errors_with_pairwise_orders
    return [
        ("same everywhere", check_order(_HS, [0.46 + 1e-4 * h for h in _HS], 2), "FAIL"),
        ("levels off", check_order(_HS, [h**2 + 0.01 for h in _HS], 2), "FAIL"),
        ("flat after a zero", check_order([0.0941 / 2**k for k in range(5)],
                                          [0.0941 / 2**k * abs(1 - 7.227 * (0.0941 / 2**k) ** 0.5) for k in range(5)],
                                          1), "INCONCLUSIVE"),
        ("short span", check_order([0.1 / 1.1**k for k in range(5)], [(0.1 / 1.1**k) ** 2 for k in range(5)], 2),
         "INCONCLUSIVE"),
        ("round-off", check_order(_HS, [1.6e-9, 4e-10, 1e-10, 9e-11, 9e-11], 2), "INCONCLUSIVE"),
        ("pre-asymptotic, moving", check_order(_HS, rising([0.6, 1.0, 1.4, 1.9]), 2), "INCONCLUSIVE"),
        ("pre-asymptotic, climbing", check_order(_HS, rising([0.5, 1.4, 1.5, 1.58]), 2), "INCONCLUSIVE"),
        ("clean lower order", check_order(_HS, [3 * h for h in _HS], 2), "FAIL"),
        ("too low", check_order(_HS, [h**1.5 for h in _HS], 2), "FAIL"),
        ("clean higher order", check_order(_HS, [h**4 for h in _HS], 2), "INCONCLUSIVE"),
        ("too high", check_order(_HS, [h**3.5 for h in _HS], 2), "INCONCLUSIVE"),
        ("falling", check_order(_HS, rising([2.6, 2.2, 1.95, 1.79]), 2), "INCONCLUSIVE"),
        ("two usable", check_order(_HS, [50.0, 20.0, 9.0, 4e-3, 1e-3], 2), "INCONCLUSIVE"),
        ("one flat pair", check_order(_HS, [1e-2, 2.5e-3, 6e-4, 1.5e-4, 1.5e-4], 2), "INCONCLUSIVE"),
        ("far too coarse", check_order(_HS, [50.0, 20.0, 9.0, 4.0, 0.5], 2), "INCONCLUSIVE"),
        ("blow-up", check_order(_HS, [1e-4, 2.5e-5, 6e-6, 1e-4, 3e-3], 2), "INCONCLUSIVE"),
        ("coarse blow-up left out", check_order(_HS, [float("inf"), 1e-2, 2.5e-3, 6.25e-4, 1.5625e-4], 2),
         "PASS"),
        ("not finite", check_order(_HS, [1e-2, 1e-3, float("nan"), 1e-5, 1e-6], 2), "FAIL"),
        ("one usable resolution", check_order(_HS, [1e-11, 1e-13, 1e-13, 1e-13, 1e-13], 2), "INCONCLUSIVE"),
        ("atol missed", check_order(_HS, [1e3 * h**2 for h in _HS], 2, atol=1e-3), "FAIL"),
        ("exact", check_order(_HS, [1e-14] * 5, 2), "EXACT"),
        ("not exact", check_exact(_HS, [1e-14, 1e-14, 1e-9, 1e-14, 1e-14]), "FAIL"),
    ]


ORDER_CASES = _order_cases()


@pytest.mark.parametrize("name, result, status", ORDER_CASES, ids=[case[0] for case in ORDER_CASES])
def test_each_check_order_message_is_quoted_in_the_docs_as_check_order_words_it(
    name: str, result: OrderResult, status: str
) -> None:
    docs = normalise((REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8"))
    assert result.status == status, result.message
    # The words between the numbers must appear in the page; the numbers are placeholders there.
    fragments = [part.strip() for part in _NUMBER.split(result.message) if len(part.strip()) >= 12]
    missing = [fragment for fragment in fragments if normalise(fragment) not in docs]
    assert not missing, f"docs/troubleshooting.md does not quote this {status} message of check_order: {missing}"
