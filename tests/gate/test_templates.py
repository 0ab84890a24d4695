"""``confirm init --kind``, the examples of docs/real-code.md, and the stand-ins pattern (issue 18,
items 5 and 6): every kind's template, filled with the page's example ADAPTER block, runs through
``physverify confirm`` to the verdict the page names (in this process, through the cli fixture: the
claim runs in its own child; the usage errors, which argparse prints, come from a real process)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import Ran, run_process, verdict_line
from test_adapters import verdict

from physverify.gate.templates import ADAPTER_END, ADAPTER_START, KINDS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "real-code.md"
EXAMPLE = re.compile(r"<!-- template-example: ([\w-]+), solver: (\S+), verdict: ([\w ]+) -->\n```python\n(.*?)```",
                     re.DOTALL)
RUNS = re.compile(r"<!-- runs -->\n```python\n(.*?)```", re.DOTALL)
STAND_INS = re.compile(r"<!-- stand-ins -->\n```python\n(.*?)```", re.DOTALL)
ADAPTER = re.compile(re.escape(ADAPTER_START) + r".*?" + re.escape(ADAPTER_END), re.DOTALL)


def examples() -> dict[str, tuple[str, str, str]]:
    """kind -> (the example code's path, the documented verdict, the filled ADAPTER block)."""
    text = PAGE.read_text(encoding="utf-8")
    return {kind: (solver, word, block) for kind, solver, word, block in EXAMPLE.findall(text)}


def init(cli: Callable[..., Ran], tmp_path: Path, kind: str) -> Path:
    ran = cli("confirm", "init", "claim.py", "--kind", kind, "--text", "a claim about the code",
              "--file", "code.py", "--line", "3", cwd=tmp_path)
    assert ran.returncode == 0 and "fill in source, reference and impact, then the ADAPTER block" in ran.stdout
    return tmp_path / "claim.py"


def fill_claim(path: Path) -> None:
    text = path.read_text(encoding="utf-8").replace('"source": "FILL IN"', '"source": "a test"')
    text = text.replace('"reference": "FILL IN"', '"reference": "the book named in the ADAPTER block"')
    path.write_text(text.replace('"impact": "FILL IN"', '"impact": "used"'), encoding="utf-8")


def confirm(cli: Callable[..., Ran], tmp_path: Path) -> str:
    ran = cli("confirm", "claim.py", "--trusted", "--ledger", "ledger.jsonl", cwd=tmp_path)
    return verdict(ran) + "\n" + ran.stdout


def test_the_page_has_one_example_for_every_kind() -> None:
    assert set(examples()) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_template_of_each_kind_does_not_load_until_claim_is_filled_and_then_names_the_adapter_to_write(
        tmp_path: Path, kind: str, cli: Any) -> None:
    path = init(cli, tmp_path, kind)
    text = path.read_text(encoding="utf-8")
    assert f"kind {kind}" in text and "THE REFERENCE MUST COME FROM THE PHYSICS" in text
    assert "isolates the claimed effect" in text
    assert ("claim.py: CLAIM['source'], CLAIM['reference'] and CLAIM['impact'] are still 'FILL IN'; fill them in"
            in confirm(cli, tmp_path))
    fill_claim(path)
    out = confirm(cli, tmp_path)
    assert verdict_line(out).startswith("not decidable") and "NotImplementedError: FILL IN the adapter" in out, out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_filled_with_the_page_s_example_adapter_runs_to_its_documented_verdict(tmp_path: Path,
                                                                                       kind: str, cli: Any) -> None:
    solver, documented, block = examples()[kind]
    shutil.copy(ROOT / solver, tmp_path / Path(solver).name)
    path = init(cli, tmp_path, kind)
    fill_claim(path)
    text, count = ADAPTER.subn(lambda _: block.rstrip("\n"), path.read_text(encoding="utf-8"))
    assert count == 1
    path.write_text(text, encoding="utf-8")
    out = confirm(cli, tmp_path)
    assert out.split("\n", 1)[0] == documented, out
    assert "control PASS" in out or "control EXACT" in out, out


def test_confirm_init_refuses_an_unknown_kind_and_a_kind_without_init(tmp_path: Path) -> None:
    ran = run_process("confirm", "init", "claim.py", "--kind", "orbit", "--text", "t", "--file", "f.py",
                      "--line", "1", cwd=tmp_path)
    assert ran.returncode == 2 and "invalid choice: 'orbit'" in ran.stderr and not (tmp_path / "claim.py").exists()
    ran = run_process("confirm", "claim.py", "--kind", "identity", cwd=tmp_path)
    assert ran.returncode == 2 and "--kind belongs to 'confirm init CLAIM.py'" in ran.stderr


def test_the_plain_template_stays_the_default_and_its_study_example_takes_a_refinement_plan(tmp_path: Path) -> None:
    ran = run_process("confirm", "init", "claim.py", "--text", "t", "--file", "f.py", "--line", "1", cwd=tmp_path)
    text = (tmp_path / "claim.py").read_text(encoding="utf-8")
    assert ran.returncode == 0 and ADAPTER_START not in text
    assert "ns=refine(20, max_n=640)" in text and "--kind" in text


@pytest.mark.parametrize("block", RUNS.findall(PAGE.read_text(encoding="utf-8")),
                         ids=lambda block: block.splitlines()[-1][:60])
def test_each_example_on_the_page_runs(block: str) -> None:
    exec(compile(block, "docs/real-code.md", "exec"), {})  # noqa: S102 - the page's own examples


# --- the stand-ins pattern ------------------------------------------------------------------
KEPLER = ROOT / "docs" / "examples" / "real-code"
STALE = ("    v = v + 0.5 * dt * acceleration(r)\n    r = r + dt * v\n    v = v + 0.5 * dt * acceleration(r)",
         "    a = acceleration(r)\n    v = v + 0.5 * dt * a\n    r = r + dt * v\n    v = v + 0.5 * dt * a")


def kepler_claim(cli: Callable[..., Ran], tmp_path: Path, stale: bool = False, stand_ins: bool = True) -> str:
    code = (KEPLER / "kepler.py").read_text(encoding="utf-8")
    assert STALE[0] in code
    (tmp_path / "kepler.py").write_text(code.replace(*STALE) if stale else code, encoding="utf-8")
    claim = (KEPLER / "claim_kepler_standins.py").read_text(encoding="utf-8")
    if not stand_ins:
        claim = re.sub(r"^stand_in\(.*$", "", claim, flags=re.MULTILINE)
    (tmp_path / "claim.py").write_text(claim, encoding="utf-8")
    return confirm(cli, tmp_path)


def test_the_page_s_stand_ins_are_the_example_claim_s() -> None:
    (block,) = STAND_INS.findall(PAGE.read_text(encoding="utf-8"))
    assert block in (KEPLER / "claim_kepler_standins.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(("stale", "expected"), [(False, "rejected"), (True, "confirmed")],
                         ids=["leapfrog", "stale-acceleration"])
def test_a_code_compiled_with_numba_that_imports_astropy_for_a_constant_is_judged_through_stand_ins(
        tmp_path: Path, stale: bool, expected: str, cli: Any) -> None:
    assert kepler_claim(cli, tmp_path, stale).split("\n", 1)[0] == expected


def test_without_the_stand_ins_the_same_claim_cannot_even_import_the_code(tmp_path: Path, cli: Any) -> None:
    """Proves the stand-ins carry the two tests above: astropy is not installed here (numba is, for the
    framework tests, and its stand-in gives way to it)."""
    import importlib.util

    if importlib.util.find_spec("astropy") is not None:
        pytest.skip("astropy is installed: the claim imports the real package without its stand-in")
    out = kepler_claim(cli, tmp_path, stand_ins=False)
    assert verdict_line(out).startswith("not decidable") and "No module named 'astropy'" in out, out


def test_a_stand_in_gives_way_to_the_real_package_and_serves_a_dotted_one_that_is_missing() -> None:
    """The pattern's first rule: an installed package is used, never shadowed (json stands for one here)."""
    import json
    import sys

    namespace: dict = {}
    source = (KEPLER / "claim_kepler_standins.py").read_text(encoding="utf-8")
    start, end = source.index("def stand_in("), source.index("\n\n\ndef njit(")
    exec("import importlib.util, sys, types\n" + source[start:end], namespace)  # noqa: S102 - the pattern
    namespace["stand_in"]("json", dumps=None)
    assert sys.modules["json"] is json and json.dumps is not None
    try:
        namespace["stand_in"]("a_package_nobody_installed.constants", c=299_792_458.0)
        from a_package_nobody_installed.constants import c  # type: ignore[import-not-found]

        assert c == 299_792_458.0
    finally:
        sys.modules.pop("a_package_nobody_installed", None)
        sys.modules.pop("a_package_nobody_installed.constants", None)


@pytest.mark.parametrize("kind", [None, *sorted(KINDS)])
def test_every_command_a_template_names_is_one_physverify_has(tmp_path: Path, kind: str | None, cli: Any) -> None:
    """The templates told a new user a claim can come from `physverify scan`, a command this version does not have."""
    kinds = ["--kind", kind] if kind else []
    ran = cli("confirm", "init", "claim.py", *kinds, "--text", "t", "--file", "code.py", "--line", "3", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    named = set(re.findall(r"physverify (?!import )([a-z]+)", (tmp_path / "claim.py").read_text(encoding="utf-8")))
    commands = set(re.findall(r"^    ([a-z]+) ", run_process("--help", cwd=tmp_path).stdout, re.MULTILINE))
    assert named and named <= commands, named - commands
