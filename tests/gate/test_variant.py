"""Claims that name their fix (issue 17): the keys, the matching, the variant in the child, the verdict table.

The pure part (variant.py) is tested with plain strings; everything about running goes
through ``python -m physverify confirm`` as a process, on solvers written for these tests
(tests/fix_claims.py), and every run checks that the solver's bytes are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fix_claims import (
    BURGERS,
    BURGERS_DEFECT,
    BURGERS_DEFECT_LINE,
    BURGERS_FIX_AT,
    BURGERS_FIX_LINE,
    BURGERS_IDENTITY_CHECKS,
    BURGERS_ORDER_CHECKS,
    DECAY_RIGHT_LINE,
    DECAY_WRONG_FIX,
    LEAPFROG,
    LEAPFROG_CLAIM,
    LEAPFROG_DEFECT,
    burgers_claim,
)
from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, Ran, clean_env, init_repo, verdict_line
from hypothesis import given
from hypothesis import strategies as st

from physverify.gate import variant
from physverify.gate.variant import DEFECT, FIX, Match, VariantError

# --- the keys (load rules) ------------------------------------------------------------------
BASE = {"text": "t", "source": "s", "file": "f.py", "line": 1, "reference": "r", "impact": "used"}


@pytest.mark.parametrize(("keys", "words"), [
    ({"defect": "x = 1"}, "has 'defect' but not 'fix'"),
    ({"fix": "x = 1"}, "has 'fix' but not 'defect'"),
    ({"defect": "x = 1", "fix": "  x = 1  "}, "are the same lines"),
    ({"defect": "x = 1\x00", "fix": "x = 2"}, "control character '\\x00'"),
    ({"defect": "x = 1", "fix": "x = 2\x1b[2J"}, "control character '\\x1b'"),
    ({"defect": "x = 1\r", "fix": "x = 2"}, "control character '\\r'"),
    ({"defect": "x = 1", "fix": "\n\n"}, "has no line of code"),
    ({"defect": "y = 0\n" * 300, "fix": "x = 2"}, "has 300 lines"),
    ({"defect": "x" * 1_000_000, "fix": "x = 2"}, "is 1,000,000 characters long"),
])
def test_broken_keys_say_what_is_wrong(keys: dict[str, str], words: str) -> None:
    problem = variant.key_problem({**BASE, **keys})
    assert problem is not None and words in problem


def test_no_keys_and_two_good_keys_are_no_problem() -> None:
    assert variant.key_problem(BASE) is None
    assert variant.key_problem({**BASE, "defect": "x = a[-1]", "fix": "x = a[0]\n    y = 2\n"}) is None


# --- matching -------------------------------------------------------------------------------
SOURCE = "def f(a):\n    b = a[-1]\n    c = b * 2\n    return c\n"


def test_the_text_at_the_line_is_used() -> None:
    assert variant.locate(SOURCE, "b = a[-1]", "b = a[0]", 2) == Match(DEFECT, 2, 1)
    assert variant.locate(SOURCE, "b = a[0]", "b = a[-1]", 2) == Match(FIX, 2, 1)


def test_lines_are_compared_stripped_and_a_text_may_span_lines() -> None:
    assert variant.locate(SOURCE, "  b = a[-1]\nc = b * 2   ", "b = a[0]", 2) == Match(DEFECT, 2, 2)


def test_a_moved_line_is_found_once_anywhere_and_its_line_recorded() -> None:
    assert variant.locate(SOURCE, "c = b * 2", "c = b * 3", 1) == Match(DEFECT, 3, 1)


def test_neither_text_is_a_load_error_that_says_so() -> None:
    with pytest.raises(VariantError, match=r"neither the defect nor the fix is in f\.py, at line 2 or anywhere"):
        variant.locate(SOURCE, "b = a[1]", "b = a[2]", 2, file="f.py")


def test_a_fragment_of_a_line_is_not_a_text_and_the_message_says_give_the_whole_line() -> None:
    with pytest.raises(VariantError, match=r"the defect is part of line 2, not the whole line: give the whole line"):
        variant.locate(SOURCE, "a[-1]", "a[0]", 2)


def test_both_texts_in_the_file_is_a_load_error_naming_their_lines() -> None:
    source = SOURCE + "x = a[0]\n"
    with pytest.raises(VariantError, match=r"both the defect and the fix are in .* \(the defect at line 2 and the fix at line 5\)"):
        variant.locate(source, "b = a[-1]", "x = a[0]", 1)


def test_several_occurrences_are_a_load_error_naming_them() -> None:
    source = SOURCE + SOURCE
    with pytest.raises(VariantError, match=r"the defect occurs 2 times in the file \(lines 2, 6\) and none starts at line 1"):
        variant.locate(source, "b = a[-1]", "b = a[0]", 1)
    assert variant.locate(source, "b = a[-1]", "b = a[0]", 6) == Match(DEFECT, 6, 1)  # at the line: no ambiguity


def test_both_starting_at_the_line_is_a_load_error() -> None:
    with pytest.raises(VariantError, match="both the defect and the fix start at"):
        variant.locate(SOURCE, "b = a[-1]", "b = a[-1]\nc = b * 2", 2)


# --- building -------------------------------------------------------------------------------
def test_the_replacement_is_dedented_then_indented_as_the_first_matched_line() -> None:
    match, built = variant.variant_source(SOURCE, "b = a[-1]", "if a:\n    b = a[0]\nelse:\n    b = 0", 2)
    assert match == Match(DEFECT, 2, 1)
    assert built == "def f(a):\n    if a:\n        b = a[0]\n    else:\n        b = 0\n    c = b * 2\n    return c\n"


def test_the_swap_keeps_crlf_line_ends_and_a_last_line_without_one() -> None:
    source = "x = 1\r\nif x:\r\n\ty = x[-1]"
    _, built = variant.variant_source(source, "y = x[-1]", "y = x[0]\nz = 1", 3)
    assert built == "x = 1\r\nif x:\r\n\ty = x[0]\r\n\tz = 1"


lines = st.lists(st.sampled_from(["a = 1", "b = a + 2", "", "if a:", "return b", "c = f(a, b)"]), min_size=1,
                 max_size=6)


@given(before=lines, after=lines, indent=st.sampled_from(["", "    ", "\t", "        "]))
def test_swapping_twice_gives_the_file_back(before: list[str], after: list[str], indent: str) -> None:
    defect, fix = "q = defect()\nq = q + 1", "q = fixed()"
    source = "".join(f"{indent}{text}\n" if text else "\n" for text in before + defect.split("\n") + after)
    match, built = variant.variant_source(source, defect, fix, len(before) + 1)
    assert match.held == DEFECT and fix.split("\n")[0] in built
    back, again = variant.variant_source(built, defect, fix, len(before) + 1)
    assert back.held == FIX and again == source


# --- through the command line -------------------------------------------------------------
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _project(tmp_path: Path, solver_name: str, solver: str, claim: str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / solver_name).write_text(solver)
    (root / "claim.py").write_text(claim)
    return root


# confirm runs in this process through the ``cli`` fixture: these tests read its verdict, its ledger line
# and the files it leaves; the claim and its variant still run in the claim's own child. What only a
# process shows (SIGKILL of physverify during the variant run) starts a real one below.
def _confirm(cli: Callable[..., Ran], root: Path, *extra: str, claim: str = "claim.py") -> tuple[int, dict, str]:
    """Run confirm with --json - and return the exit code, the ledger line and stderr."""
    done = cli("confirm", claim, "--trusted", "--json", "-", *extra, cwd=root)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def _text(cli: Callable[..., Ran], root: Path, claim: str = "claim.py") -> tuple[int, str]:
    done = cli("confirm", claim, "--trusted", "--ledger", "text.jsonl", cwd=root)
    return done.returncode, done.stdout + done.stderr


def test_an_identity_check_confirms_the_slip_behind_a_first_order_scheme(tmp_path: Path, cli: Any) -> None:
    root = _project(tmp_path, "burgers.py", BURGERS_DEFECT, burgers_claim(BURGERS_IDENTITY_CHECKS))
    before = _sha(root / "burgers.py")
    code, output = _text(cli, root)
    assert code == 1, output
    assert verdict_line(output).startswith("confirmed (impact: used): the checks fail, and the claimed fix makes them pass"), output
    assert "  check FAIL the copies agree for a sine wave: u(0) and u(1) differ by" in output
    assert "  the file holds the defect at line 16; the second run is with the fix" in output
    assert "  with the fix: check EXACT the copies agree for a sine wave" in output
    record = json.loads((root / "text.jsonl").read_text())
    assert record["variant"]["held"] == "defect" and record["variant"]["line"] == BURGERS_FIX_AT
    assert [c["status"] for c in record["variant"]["checks"]] == ["EXACT"]
    assert _sha(root / "burgers.py") == before and not (root / "__pycache__").exists()


def test_the_identity_check_rejects_the_claim_on_the_fixed_code(tmp_path: Path, cli: Any) -> None:
    root = _project(tmp_path, "burgers.py", BURGERS, burgers_claim(BURGERS_IDENTITY_CHECKS))
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"]) == (0, "rejected"), record["reason"]
    assert record["reason"].startswith("the checks pass, and fail with the claimed defect put back")
    assert record["variant"]["held"] == "fix" and record["variant"]["checks"][0]["status"] == "FAIL"


def test_an_order_check_is_blind_to_the_slip_and_gives_not_decidable(tmp_path: Path, cli: Any) -> None:
    root = _project(tmp_path, "burgers.py", BURGERS_DEFECT, burgers_claim(BURGERS_ORDER_CHECKS))
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"]) == (2, "not decidable")
    assert "the checks cannot tell the code from the variant" in record["reason"]
    assert record["checks"][0]["status"] == record["variant"]["checks"][0]["status"] == "PASS"
    # the same claim without the keys gives today's verdict: a false "rejected"
    plain = "\n".join(line for line in burgers_claim(BURGERS_ORDER_CHECKS).splitlines()
                      if not line.lstrip().startswith(('"defect"', '"fix"')))
    (root / "plain.py").write_text(plain + "\n")
    code, record, _ = _confirm(cli, root, claim="plain.py")
    assert (code, record["verdict"]) == (0, "rejected") and "variant" not in record


@pytest.mark.parametrize("solver", [LEAPFROG, LEAPFROG_DEFECT], ids=["fixed", "defect"])
def test_the_backward_leapfrog_with_a_frictionless_control_is_never_confirmed(tmp_path: Path, solver: str,
                                                                               cli: Any) -> None:
    root = _project(tmp_path, "leapfrog.py", solver, LEAPFROG_CLAIM)
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"]) == (2, "not decidable"), record["reason"]
    assert "the checks fail with and without the change" in record["reason"]
    assert "a wrong expected order" in record["reason"]


def test_a_wrong_suspicion_whose_fix_breaks_correct_code_is_rejected(tmp_path: Path, cli: Any) -> None:
    claim = DECAY_CLAIM.replace('    "impact": "used",\n', f'    "impact": "used",\n    "defect": "{DECAY_RIGHT_LINE}",\n'
                                f'    "fix": "{DECAY_WRONG_FIX}",\n')
    root = _project(tmp_path, "decay.py", DECAY_SOLVER, claim)
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"]) == (0, "rejected"), record["reason"]
    assert record["reason"].startswith("the checks pass, and the suggested change breaks them")
    assert record["variant"] == {**record["variant"], "held": "defect", "line": 6}


def test_fork_and_fresh_give_the_same_ledger_line(tmp_path: Path, cli: Any) -> None:
    root = _project(tmp_path, "burgers.py", BURGERS_DEFECT, burgers_claim(BURGERS_IDENTITY_CHECKS))
    lines = []
    for mode in ("fork", "fresh"):
        _, record, _ = _confirm(cli, root, "--isolation", mode)
        for outcome in [record["control"], *record["checks"], record["variant"]["control"], *record["variant"]["checks"]]:
            outcome.pop("seconds")
        record.pop("date")
        lines.append(record)
    assert lines[0] == lines[1] and lines[0]["verdict"] == "confirmed"


HELPER = '''\
import pkg.burgers as imported_first  # imported by a helper, before the claim file and by a package name
'''


def test_the_variant_is_served_under_any_name_also_when_a_helper_imports_it_first(tmp_path: Path, cli: Any) -> None:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "claims").mkdir()
    init_repo(root)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "burgers.py").write_text(BURGERS_DEFECT)
    (root / "claims" / "helper.py").write_text(HELPER)
    claim = burgers_claim(BURGERS_IDENTITY_CHECKS).replace('"file": "burgers.py"', '"file": "pkg/burgers.py"')
    claim = claim.replace("import burgers\n", "import helper  # noqa: F401\nfrom pkg import burgers\n")
    claim += f'''

def where():
    import pkg.burgers
    import sys
    assert pkg.burgers.__file__ == {str(root / "pkg" / "burgers.py")!r}, pkg.burgers.__file__
    assert sys.modules["pkg.burgers"] is helper.imported_first
    if type(pkg.burgers.__loader__).__module__ == "physverify.isolation.variant_import":  # the run with the fix
        assert pkg.burgers.__cached__ is None
'''
    claim = claim.replace("def checks():\n    return [", "def checks():\n    where()\n    return [")
    (root / "claims" / "claim.py").write_text(claim)
    before = _sha(root / "pkg" / "burgers.py")
    code, record, stderr = _confirm(cli, root, claim="claims/claim.py")
    assert (code, record["verdict"]) == (1, "confirmed"), record["reason"] + stderr
    assert _sha(root / "pkg" / "burgers.py") == before
    assert not list(root.rglob("*.pyc")) and not list(root.rglob("__pycache__"))


def test_a_claim_that_never_imports_its_file_is_not_decidable(tmp_path: Path, cli: Any) -> None:
    root = _project(tmp_path, "burgers.py", BURGERS_DEFECT, "")
    (root / "copy_of_burgers.py").write_text(BURGERS_DEFECT)
    (root / "claim.py").write_text(burgers_claim(BURGERS_IDENTITY_CHECKS).replace("import burgers\n",
                                                                                 "import copy_of_burgers as burgers\n"))
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"]) == (2, "not decidable")
    assert "the claim never imported burgers.py" in record["reason"]


# --- hostile and broken keys: a load error with a ledger line, or as documented; the file unchanged
@pytest.mark.parametrize(("change", "words"), [
    ({"defect": "new[-1] = new[1]"}, "neither the defect nor the fix is in burgers.py"),
    ({"defect": "new[-2]", "fix": "new[0]"}, "the defect is part of line 16, not the whole line"),
    ({"defect": "x = 1\\u0000", "fix": "x = 2"}, "holds the control character '\\x00'"),
    ({"defect": "x = 1\\u001b]0;pwned\\u0007", "fix": "x = 2"}, "holds the control character '\\x1b'"),
    ({"file": "../outside.py"}, "is not a file inside the repository or next to the claim"),
])
def test_hostile_keys_are_load_errors_and_the_file_is_unchanged(tmp_path: Path, change: dict[str, str],
                                                                words: str, cli: Any) -> None:
    claim = burgers_claim(BURGERS_IDENTITY_CHECKS, defect=change.get("defect", BURGERS_DEFECT_LINE),
                          fix=change.get("fix", BURGERS_FIX_LINE))
    if "file" in change:
        claim = claim.replace('"file": "burgers.py"', f'"file": "{change["file"]}"')
        (tmp_path / "outside.py").write_text(BURGERS_DEFECT)  # holds the defect, outside the root
    root = _project(tmp_path, "burgers.py", BURGERS_DEFECT, claim)
    _assert_load_error(cli, root, words)


def _assert_load_error(cli: Callable[..., Ran], root: Path, words: str) -> None:
    before = _sha(root / "burgers.py")
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"]) == (2, "not decidable")
    assert words in record["reason"], record["reason"]
    assert record["control"] is None and "variant" not in record  # nothing ran
    assert _sha(root / "burgers.py") == before
    assert len((root / "confirm_ledger.jsonl").read_text().splitlines()) == 1  # the load error is recorded


def test_a_symlink_to_a_file_outside_the_root_is_not_looked_into(tmp_path: Path, cli: Any) -> None:
    outside = tmp_path / "elsewhere" / "burgers.py"
    outside.parent.mkdir()
    outside.write_text(BURGERS_DEFECT)
    root = _project(tmp_path, "real.py", "x = 1\n", burgers_claim(BURGERS_IDENTITY_CHECKS))
    (root / "burgers.py").symlink_to(outside)
    before = _sha(outside)
    code, record, _ = _confirm(cli, root)
    assert code == 2 and "is not a file inside the repository or next to the claim" in record["reason"]
    assert _sha(outside) == before and record["control"] is None


def test_a_text_present_twice_is_a_load_error_naming_both_lines(tmp_path: Path, cli: Any) -> None:
    solver = BURGERS_DEFECT + "\n\ndef other(new):\n    return new\n"  # a second function with the same last line
    claim = burgers_claim(BURGERS_IDENTITY_CHECKS, line=1, defect="return new", fix="return new.copy()")
    first = BURGERS_DEFECT.splitlines().index("    return new") + 1
    _assert_load_error(cli, _project(tmp_path, "burgers.py", solver, claim),
                       f"the defect occurs 2 times in burgers.py (lines {first}, {len(solver.splitlines())}) "
                       "and none starts at line 1")


def test_a_1_mb_key_is_a_load_error(tmp_path: Path, cli: Any) -> None:
    claim = burgers_claim(BURGERS_IDENTITY_CHECKS, defect="x" * 1_000_000)
    _assert_load_error(cli, _project(tmp_path, "burgers.py", BURGERS_DEFECT, claim),
                       "CLAIM['defect'] is 1,000,000 characters long")


def test_a_moved_line_works_and_records_where_the_text_was_found(tmp_path: Path, cli: Any) -> None:
    root = _project(tmp_path, "burgers.py", BURGERS_DEFECT, burgers_claim(BURGERS_IDENTITY_CHECKS, line=3))
    code, record, _ = _confirm(cli, root)
    assert (code, record["verdict"], record["line"]) == (1, "confirmed", 3)
    assert record["variant"]["line"] == BURGERS_FIX_AT


# --- SIGKILL of physverify during the variant run -------------------------------------------
SLOW_SOLVER = '''\
"""Sleeps in the variant: DELAY is the line the claim swaps."""
DELAY = 0


def value():
    return 1.0
'''
SLOW_CLAIM = '''\
import os
import time

import slow
from physverify import PASS, Check, Result

CLAIM = {
    "text": "DELAY should be long", "source": "a test", "file": "slow.py", "line": 2,
    "reference": "none needed", "impact": "unknown", "defect": "DELAY = 0", "fix": "DELAY = 600",
}


def wait():
    if slow.DELAY:
        open(os.environ["VARIANT_MARK"], "w").close()
        time.sleep(slow.DELAY)
    return Result(PASS, "done")


def control():
    return Check("x", "control", lambda: Result(PASS, "ok"))


def checks():
    return [Check("x", "waits in the variant", wait)]
'''


@pytest.mark.parametrize("mode", ["fork", "fresh"])
def test_sigkill_during_the_variant_run_leaves_the_file_byte_identical(tmp_path: Path, mode: str) -> None:
    root = _project(tmp_path, "slow.py", SLOW_SOLVER, SLOW_CLAIM)
    mark = tmp_path / "variant-running"
    before = {path: path.read_bytes() for path in root.rglob("*")}
    proc = subprocess.Popen([sys.executable, "-m", "physverify", "confirm", "claim.py", "--trusted",
                             "--isolation", mode], cwd=root, env=clean_env({"VARIANT_MARK": str(mark)}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), "the variant run never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert {path: path.read_bytes() for path in root.rglob("*")} == before  # nothing added, nothing changed
