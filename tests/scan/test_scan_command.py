"""``physverify scan`` end to end: the folder, the formats, the exit codes, hostile names, unreadable files,
silencing, and the path from a finding to a claim that ``physverify confirm`` settles."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import Ran, init_repo

ROOT = Path(__file__).resolve().parents[2]
RK4 = ROOT / "docs" / "examples" / "real-code" / "rk4_step.py"  # k3 at t + h instead of t + h/2
RK4_FINDING = ("rk4_step.py:17: rk-order: rk4_step states order 4, but the order conditions hold only up to order 1 "
               "when f depends on t (order 4 when it does not): stage 3 is evaluated at t + h")
Cli = Callable[..., Ran]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "solver").mkdir(parents=True)
    shutil.copy(RK4, root / "solver" / "rk4_step.py")
    (root / "solver" / "fine.py").write_text("import numpy as np\nx = np.linspace(0, 1, 11)\ndx = 1 / 10\n")
    (root / ".venv").mkdir()
    (root / ".venv" / "trap.py").write_text("G = 6.764e-11\n")  # skipped as replay's discovery skips it
    return root


def test_a_folder_with_an_rk4_whose_third_stage_is_at_t_plus_h_is_found(project: Path, cli: Cli) -> None:
    ran = cli("scan", ".", cwd=project)
    assert ran.returncode == 1, ran
    assert ran.stdout.splitlines()[0].startswith("solver/" + RK4_FINDING)
    assert "Butcher, Numerical Methods for ODEs, sec. 31x: order conditions" in ran.stdout
    assert ran.stdout.splitlines()[-1] == "physverify scan: 1 finding, 0 suggestions, 0 silenced, 0 notes in 2 files"
    assert "trap" not in ran.stdout


def test_json_lists_the_findings_with_posix_paths_as_found_under_the_path_given(project: Path, cli: Cli) -> None:
    ran = cli("scan", "solver", "--format", "json", cwd=project)
    data = json.loads(ran.stdout)
    (finding,) = data["findings"]
    assert {k: finding[k] for k in ("rule", "file", "line", "expected_order")} == {
        "rule": "rk-order", "file": "solver/rk4_step.py", "line": 17, "expected_order": 4}
    assert data["summary"] == {"files": 2, "findings": 1, "silenced": 0, "notes": 0, "exit_code": 1}


def test_sarif_and_github_formats_place_the_finding_at_its_line(project: Path, cli: Cli) -> None:
    sarif = json.loads(cli("scan", "solver", "--format", "sarif", cwd=project).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "rk-order" and result["level"] == "warning"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "solver/rk4_step.py"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 17}
    github = cli("scan", "solver", "--format", "github", cwd=project).stdout
    assert github.startswith("::warning file=solver/rk4_step.py,line=17,title=physverify scan%3A rk-order::rk4_step")


def test_no_findings_exit_0_and_usage_errors_exit_2(project: Path, cli: Cli, physverify: Cli) -> None:
    assert cli("scan", "solver/fine.py", cwd=project).returncode == 0
    missing = cli("scan", "nowhere", cwd=project)
    assert missing.returncode == 2 and missing.stderr == "physverify: scan: nowhere: no such file or folder\n"
    bad = physverify("scan", "--format", "xml", ".", cwd=project)
    assert bad.returncode == 2 and "invalid choice: 'xml'" in bad.stderr and bad.stdout == ""
    assert physverify("scan", cwd=project).returncode == 2


def test_files_that_cannot_be_read_are_one_note_each_never_a_traceback(tmp_path: Path, physverify: Cli) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02G = 6.764e-11\n")
    (tmp_path / "huge.py").write_text("x = 1\n" * 200_000)
    (tmp_path / "parens.py").write_text("x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    (tmp_path / "chain.py").write_text("G = " + "+".join(["1"] * 100_000) + "\n")
    (tmp_path / "unary.py").write_text("G = " + "-" * 100_000 + "1\n")
    (tmp_path / "deep.py").write_text("def f():\n" + "".join("    " * (i + 1) + "if x:\n" for i in range(120)))
    (tmp_path / "latin1.py").write_bytes(b"s = '\xe9'\n")
    ran = physverify("scan", ".", cwd=tmp_path)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr + ran.stdout, ran
    notes = [line for line in ran.stdout.splitlines() if ": note: " in line]
    assert sorted(line.split(":")[0] for line in notes) == sorted(
        ["binary.py", "broken.py", "chain.py", "deep.py", "huge.py", "latin1.py", "parens.py", "unary.py"])
    assert "binary.py: note: skipped: a binary file" in ran.stdout
    assert "huge.py: note: skipped: larger than 1 MiB" in ran.stdout
    assert "broken.py: note: skipped: not valid Python (line 1)" in ran.stdout


def test_hostile_file_names_and_code_reach_no_output_unescaped(tmp_path: Path, cli: Cli) -> None:
    name = "x\x1b]0;owned\x07\u202e##[stop-commands]\n.py"
    (tmp_path / name).write_text("G = 6.764e-11\n")
    for fmt in ("text", "json", "sarif", "github"):
        out = cli("scan", ".", "--format", fmt, cwd=tmp_path).stdout
        assert not re.search("[\x1b\x07\u202e]", out) and "##[" not in out, fmt
        assert len([line for line in out.splitlines() if "6.764" in line or "rule" in line]) >= 1
    text = cli("scan", ".", cwd=tmp_path).stdout
    assert text.startswith("x\\x1b]0;owned\\x07\\u202e#\\x23[stop-commands]\\n.py:1: constant:")
    data = json.loads(cli("scan", ".", "--format", "json", cwd=tmp_path).stdout)
    assert data["findings"][0]["file"] == name  # JSON escapes, and reads back to the name itself


def test_an_ignore_comment_with_a_reason_silences_its_line_and_is_counted(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "c.py").write_text("G = 6.764e-11  # physverify: ignore[constant] copied from the 1970 paper\n"
                                   "g = 9.18  # physverify: ignore[constant]\n"
                                   "hbar = 1.0456e-34  # physverify: ignore[grid-spacing] wrong rule\n")
    ran = cli("scan", ".", "--format", "json", cwd=tmp_path)
    data = json.loads(ran.stdout)
    assert [f["line"] for f in data["findings"]] == [2, 3]  # no reason, and another rule: both stand
    assert [(f["line"], f["silenced"]) for f in data["silenced"]] == [(1, "copied from the 1970 paper")]
    assert data["notes"] == [{"file": "c.py", "message": "line 2: 'physverify: ignore[constant]' has no reason, so "
                                                         "it silences nothing; write why after the bracket"}]
    text = cli("scan", ".", cwd=tmp_path).stdout
    assert text.splitlines()[-1] == "physverify scan: 2 findings, 0 suggestions, 1 silenced, 1 note in 1 file"


def test_the_config_s_ignore_list_silences_with_a_reason_and_refuses_an_entry_without_one(tmp_path: Path,
                                                                                          cli: Cli) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "c.py").write_text("G = 6.764e-11\ng = 9.18\n")
    (tmp_path / "claims").mkdir()
    config = tmp_path / "claims" / "physverify.yaml"
    config.write_text("ignore:\n  - {rule: constant, file: src/c.py, line: 1, reason: the paper's value}\n")
    data = json.loads(cli("scan", "src", "--format", "json", cwd=tmp_path).stdout)
    assert [f["line"] for f in data["findings"]] == [2]
    assert data["silenced"][0]["silenced"] == "the paper's value"
    config.write_text("ignore:\n  - {rule: constant, file: 'src/*.py'}\n")
    ran = cli("scan", "src", cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr == (f"physverify: {config.relative_to(tmp_path)}: ignore entry 1: reason must be a non-empty "
                          "string (every silenced finding says why)\n")


def _fill(template: Path) -> None:
    """What the person does with the scan's template: the impact, and the ADAPTER block (docs/real-code.md's)."""
    from test_templates import ADAPTER, examples

    _, documented, block = examples()["ode-order"]
    assert documented == "confirmed"
    text = template.read_text(encoding="utf-8").replace('"impact": "FILL IN"', '"impact": "used"')
    text = ADAPTER.sub(lambda _: block.rstrip("\n"), text)
    template.write_text(text.replace("import rk4_step as solver", "from solver import rk4_step as solver"),
                        encoding="utf-8")


@pytest.mark.slow
def test_claims_writes_a_template_that_once_its_adapter_is_filled_confirm_confirms(project: Path, cli: Cli,
                                                                                    physverify: Cli) -> None:
    init_repo(project)
    ran = cli("scan", "solver", "--claims", "claims", cwd=project)
    assert ran.returncode == 1 and "wrote claims/scan_rk4_step_rk4_step_17.py" in ran.stdout
    template = project / "claims" / "scan_rk4_step_rk4_step_17.py"
    text = template.read_text(encoding="utf-8")
    assert '"source": "physverify scan",' in text and '"file": "solver/rk4_step.py",' in text
    assert '"line": 17,' in text and '"reference": "Butcher, Numerical Methods for ODEs, sec. 31x' in text
    assert "EXPECTED_ORDER = 4  # the order the method states, filled by physverify scan" in text
    assert "kind ode-order" in text
    (project / "solver" / "__init__.py").write_text("")
    _fill(template)
    again = cli("scan", "solver", "--claims", "claims", cwd=project)  # never overwrites the filled claim
    assert "already exists; confirm init never overwrites a file" in again.stdout
    assert template.read_text(encoding="utf-8").count('"impact": "used"') == 1
    confirmed = physverify("confirm", "claims/scan_rk4_step_rk4_step_17.py", "--trusted", cwd=project)
    assert confirmed.returncode == 1 and confirmed.stdout.startswith("confirmed (impact: used)"), confirmed
    assert "observed order 1.0" in confirmed.stdout


def test_informational_findings_do_not_fail_the_scan(tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "t.py").write_text("def cart2sph(p): ...\ndef sph2cart(p): ...\n")
    ran = cli("scan", ".", cwd=tmp_path)
    assert ran.returncode == 0 and "inverse-pair" in ran.stdout and "1 suggestion" in ran.stdout


def test_scan_reads_nothing_it_would_have_to_run(tmp_path: Path, cli: Cli, monkeypatch: Any) -> None:
    (tmp_path / "boom.py").write_text("raise SystemExit('imported')\nimport os\nos.remove(__file__)\n")
    assert cli("scan", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / "boom.py").exists()


def test_worker_processes_give_the_same_result_as_one_process(tmp_path: Path) -> None:
    from physverify.scan import run

    for i in range(30):
        (tmp_path / f"m{i:02d}.py").write_text("G = 6.764e-11\n" if i % 3 == 0 else f"x{i} = {i}\n")
    (tmp_path / "bad.py").write_text("def (:\n")
    one, two = run.scan([str(tmp_path)], jobs=1), run.scan([str(tmp_path)], jobs=2)
    assert one == two and len(one.findings) == 10 and len(one.notes) == 1


def test_claims_for_other_rules_are_identity_templates_and_suggestions_or_silenced_findings_get_none(
        tmp_path: Path, cli: Cli) -> None:
    (tmp_path / "units.py").write_text("G = 6.764e-11\ng = 9.18  # physverify: ignore[constant] the exercise's value\n"
                                       "def to_si(x): ...\ndef from_si(x): ...\n")
    ran = cli("scan", ".", "--claims", "claims", cwd=tmp_path)
    assert ran.returncode == 1 and ran.stdout.count("wrote ") == 1, ran.stdout
    (template,) = (tmp_path / "claims").iterdir()
    text = template.read_text(encoding="utf-8")
    assert template.name == "scan_units_G_1.py" and "kind identity" in text
    assert '"source": "physverify scan",' in text and '"reference": "CODATA 2022 via scipy.constants",' in text
    assert '"file": "units.py",' in text and '"line": 1,' in text and '"impact": "FILL IN"' in text


def test_the_sarif_log_is_valid_sarif_2_1_0(project: Path, cli: Cli) -> None:
    import jsonschema

    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0-excerpt.json").read_text(encoding="utf-8"))
    (project / "solver" / "units.py").write_text("G = 6.764e-11\ndef to_si(x): ...\ndef from_si(x): ...\n")
    log = json.loads(cli("scan", ".", "--format", "sarif", cwd=project).stdout)
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    levels = {result["ruleId"]: result["level"] for result in log["runs"][0]["results"]}
    assert levels == {"rk-order": "warning", "constant": "warning", "inverse-pair": "note"}


def test_the_page_s_examples_are_what_the_scan_prints_and_its_ignore_list_loads(tmp_path: Path, cli: Cli) -> None:
    from physverify.gate.config import load_config

    page = (ROOT / "docs" / "scan.md").read_text(encoding="utf-8")
    shutil.copy(RK4, tmp_path / "rk4_step.py")
    (tmp_path / "units.py").write_text("import numpy\n\nG = 6.764e-11\n")
    printed = cli("scan", ".", cwd=tmp_path).stdout.splitlines()
    assert "src/integrators/" + printed[0] in page
    assert "src/" + printed[1] in page
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL) if "ignore:" in b]
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "physverify.yaml").write_text(block)
    (entry,) = load_config(tmp_path / "claims").ignore
    assert entry.rule == "constant" and entry.line == 12 and entry.reason.startswith("values of the 1986")
