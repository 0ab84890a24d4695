"""The pytest plugin: the real pytest in a subprocess, on a real git repository in tmp_path (issue 38).

Each claim is one item judged as replay judges it (the committed ledger, expect pins), the
ledger is never written, and the item works with -k, -x, --junitxml and pytest-xdist.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import git
import pytest
from support.fixtures import DECAY_CLAIM, DECAY_DEFECT, DECAY_SOLVER, Ran, clean_env, init_repo

from physverify.gate import replay

DATA = Path(__file__).resolve().parent / "data"
SPEC = '''\
from physverify import FAIL, PASS, SKIP, Check, Result


def checks():
    return [Check("exact", "one is one", lambda: Result(PASS, "1 == 1")),
            Check("exact", "two is three", lambda: Result(FAIL, "2 != 3")),
            Check("exact", "needs a GPU", lambda: Result(SKIP, "no GPU here"))]
'''


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> git.Repo:
    """Two claims about decay.py, both rejected in the committed ledger; a test file of the project's own."""
    root = tmp_path / "project"
    (root / "claims").mkdir(parents=True)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "claim_rate.py").write_text(DECAY_CLAIM)
    (root / "claims" / "claim_twice.py").write_text(DECAY_CLAIM.replace("half the decay rate", "the rate, halved"))
    (root / "claims" / "helpers.py").write_text("X = 1\n")  # no CLAIM: a helper, never an item
    (root / "test_own.py").write_text("def test_own():\n    assert True\n")
    repository = init_repo(root)
    monkeypatch.chdir(root)
    replay.replay(["claims"], trusted=True, jobs=1)
    repository.index.add(["decay.py", "claims", "test_own.py"])
    repository.index.commit("two claims, rejected")
    return repository


def pytest_run(root: Path, *args: str) -> Ran:
    """The real pytest as a process in ``root`` (no cache folder left behind)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=root,
                          capture_output=True, text=True, env=clean_env(), timeout=600)
    return Ran(done.returncode, done.stdout, done.stderr)


def cases(report: Path) -> dict[str, str]:
    """Each testcase of a JUnit file by classname::name, with its outcome (passed, failed, skipped)."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = "failed" if case.find("failure") is not None or case.find("error") is not None else (
            "skipped" if case.find("skipped") is not None else "passed")
        found[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return found


def test_a_clean_repository_passes_one_item_per_claim(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    done = pytest_run(root, "--claims", "claims", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "claims/claim_rate.py::claim_rate PASSED" in done.stdout
    assert "claims/claim_twice.py::claim_twice PASSED" in done.stdout
    assert "test_own.py::test_own PASSED" in done.stdout and "helpers" not in done.stdout
    assert "3 passed" in done.stdout


def test_a_regression_fails_with_the_transition_and_the_evidence_and_writes_nothing(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    ledger = (root / "claims" / "confirm_ledger.jsonl").read_bytes()
    (root / "decay.py").write_text(DECAY_DEFECT)
    done = pytest_run(root, "--claims", "claims")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED claims/claim_rate.py::claim_rate - regressed: rejected -> confirmed" in done.stdout
    assert "check FAIL at t = 1 the amount follows exp(-rate t): 1.40938 against 0.993171" in done.stdout
    assert "2 failed, 1 passed" in done.stdout
    assert (root / "claims" / "confirm_ledger.jsonl").read_bytes() == ledger, "a pytest run never writes the ledger"
    again = pytest_run(root, "--claims", "claims")  # so it never clears its own finding either
    assert again.returncode == 1 and "2 failed" in again.stdout


def test_a_defect_pinned_with_expect_passes_as_the_gate_lets_it(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    (root / "decay.py").write_text(DECAY_DEFECT)
    (root / "claims" / "physverify.yaml").write_text("expect:\n  claim_rate.py: confirmed\n")
    done = pytest_run(root, "--claims", "claims", "-rA")
    assert done.returncode == 1 and "1 failed, 2 passed" in done.stdout, done.stdout
    assert "PASSED claims/claim_rate.py::claim_rate" in done.stdout
    assert "confirmed      regressed    claims/claim_rate.py" in done.stdout  # the -rA section: judged, let through


def test_junitxml_lists_one_case_per_claim_and_validates(project: git.Repo) -> None:
    import xmlschema

    root = Path(project.working_tree_dir or "")
    (root / "decay.py").write_text(DECAY_DEFECT)
    done = pytest_run(root, "--claims", "claims", "--junitxml", "report.xml", "test_own.py")
    assert done.returncode == 1, done.stdout + done.stderr
    xmlschema.XMLSchema(DATA / "junit.xsd").validate(str(root / "report.xml"))
    assert cases(root / "report.xml") == {"claims.claim_rate::claim_rate": "failed",
                                          "claims.claim_twice::claim_twice": "failed", "test_own::test_own": "passed"}
    text = (root / "report.xml").read_text()
    assert 'name="transition" value="regressed"' in text and 'name="verdict" value="confirmed"' in text


def test_xdist_with_two_workers_gives_the_same_outcomes(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    (root / "decay.py").write_text(DECAY_DEFECT)
    (root / "claims" / "physverify.yaml").write_text("expect:\n  claim_rate.py: confirmed\n")
    serial = pytest_run(root, "--claims", "claims", "--junitxml", "serial.xml")
    parallel = pytest_run(root, "--claims", "claims", "--junitxml", "parallel.xml", "-n", "2")
    assert serial.returncode == parallel.returncode == 1, parallel.stdout + parallel.stderr
    assert "2 workers" in parallel.stdout
    assert cases(root / "serial.xml") == cases(root / "parallel.xml") == {
        "claims.claim_rate::claim_rate": "passed", "claims.claim_twice::claim_twice": "failed",
        "test_own::test_own": "passed"}


def test_k_selects_claims_and_x_stops_at_the_first_failure(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    (root / "decay.py").write_text(DECAY_DEFECT)
    selected = pytest_run(root, "--claims", "claims", "-k", "twice")
    assert selected.returncode == 1 and "1 failed, 2 deselected" in selected.stdout, selected.stdout
    stopped = pytest_run(root, "--claims", "claims", "-x", "-v")
    assert stopped.returncode == 1 and "1 failed" in stopped.stdout and "claim_twice" not in stopped.stdout.split(
        "short test summary")[0].split("FAILED")[-1], stopped.stdout


def test_a_spec_file_is_one_item_per_check(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    (root / "verify_arithmetic.py").write_text(SPEC)
    done = pytest_run(root, "--verify-specs", "verify_arithmetic.py", "-v", "-rfs")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verify_arithmetic.py::one is one PASSED" in done.stdout
    assert "FAILED verify_arithmetic.py::two is three - FAIL exact two is three: 2 != 3" in done.stdout
    assert "SKIPPED" in done.stdout and "no GPU here" in done.stdout


def test_without_the_option_the_plugin_loads_nothing_of_physverify(project: git.Repo) -> None:
    """Installed, the plugin is in every pytest run: it must not import the runner, GitPython or numpy there."""
    root = Path(project.working_tree_dir or "")
    (root / "test_own.py").write_text(
        "import sys\n\n\ndef test_nothing_loaded():\n"
        "    assert 'physverify.pytest_plugin' in sys.modules\n"
        "    loaded = {'physverify.gate.replay', 'physverify.gate.config', 'git', 'numpy'} & set(sys.modules)\n"
        "    assert not loaded, loaded\n")
    done = pytest_run(root, "test_own.py")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_a_claims_folder_that_is_not_there_is_a_usage_error(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    done = pytest_run(root, "--claims", "nope")
    assert done.returncode == 4 and "--claims" in done.stderr and "nope: not a claims folder" in done.stderr


def test_a_bad_physverify_yaml_is_one_usage_error_naming_it(project: git.Repo) -> None:
    root = Path(project.working_tree_dir or "")
    (root / "claims" / "physverify.yaml").write_text("timeout: soon\n")
    done = pytest_run(root, "--claims", "claims")
    assert done.returncode == 4 and "physverify.yaml" in done.stderr and "Traceback" not in done.stderr, done.stderr
