"""physverify.yaml (config.py): every setting, and a clear exit-2 error for every mistake."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physverify.gate.config import KNOWN_KEYS, load_config
from physverify.gate.rules import DEFAULT_FAIL_ON, FIXED, REGRESSED
from physverify.errors import ConfigError
from physverify.verdict import EXIT_ERROR


def write(folder: Path, text: str) -> Path:
    (folder / "physverify.yaml").write_text(text)
    return folder


def test_a_folder_without_physverify_yaml_gets_the_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.path is None and config.fail_on == DEFAULT_FAIL_ON and config.expect == {}


def test_every_setting_is_read_and_resolved_against_the_claims_folder(tmp_path: Path) -> None:
    (tmp_path / "rk4_claim.py").write_text("CLAIM = {}\n")
    config = load_config(write(tmp_path, """
timeout: 30
jobs: 3
ledger: ../ledger.jsonl
fail_on: [regressed, fixed]
exclude: ["slow_*.py"]
expect:
  rk4_claim.py: rejected
"""))
    assert (config.timeout, config.jobs, config.exclude) == (30.0, 3, ("slow_*.py",))
    assert config.ledger == tmp_path / "../ledger.jsonl"
    assert config.fail_on == frozenset({REGRESSED, FIXED})
    assert config.expect == {(tmp_path / "rk4_claim.py").resolve(): "rejected"}


def test_an_empty_file_means_the_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing set yet\n")).fail_on == DEFAULT_FAIL_ON


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timout: 5\n", "unknown key 'timout' (known: timeout, jobs, ledger, fail_on, exclude, expect, isolation, preload, ignore)"),
        ("timeout: fast\n", "timeout must be a positive number of seconds, not 'fast'"),
        ("timeout: 0\n", "timeout must be a positive number of seconds"),
        ("timeout: yes\n", "timeout must be a positive number of seconds, not True"),
        ("jobs: 1.5\n", "jobs must be a whole number of at least 1"),
        ("jobs: 0\n", "jobs must be a whole number of at least 1"),
        ("ledger: 3\n", "ledger must be a file path"),
        ("fail_on: regressed\n", "fail_on must be a list of strings"),
        ("fail_on: [regresed]\n", "fail_on: unknown transition 'regresed' (known: new, unchanged, fixed"),
        ("exclude: [1]\n", "exclude must be a list of strings"),
        ("expect: [a.py]\n", "expect must be a mapping"),
        ("expect:\n  a.py: confirmd\n", "expect: 'a.py': 'confirmd' is not a verdict (known: confirmed, rejected"),
        ("expect:\n  missing.py: rejected\n", "expect: 'missing.py' is not a file"),
        ("- a\n- b\n", "must be a mapping of settings"),
        ("timeout: [\n", "is not valid YAML"),
        # issue 13, item 25: YAML 1.1 reads an exponent without a dot and a sign as text
        ("timeout: 1e3\n", "not '1e3' (YAML reads 1e3 as a string; write 1000 or 1.0e+3)"),
        ("jobs: 1e1\n", "not '1e1' (YAML reads 1e1 as a string; write 10)"),
        ("timeout: 30\njobs: 2\ntimeout: 60\n", "line 3: the key 'timeout' is given twice"),
        ("expect:\n  a.py: rejected\n  a.py: confirmed\n", "line 3: the key 'a.py' is given twice"),
        # issue 13, item 18: unknown keys of different types cannot be sorted together
        ("1: a\nb: 2\n", "unknown keys 'b', 1 (known: timeout"),
        ("timeout: &t 30\njobs: *t\n", "line 1: anchors and aliases (&t) are not allowed"),
        pytest.param("[" * 5000 + "\n", "nested too deeply", id="5000 nested lists"),
        # issue 13, item 7: a key or path no file system allows raised OSError or ValueError later
        pytest.param("expect:\n  " + "x" * 300 + ".py: rejected\n", "is not a file in", id="over-long expect key"),
        ('ledger: "a\\0b"\n', "ledger must be a file path (relative to the claims folder), not 'a\\x00b'"),
        # PyYAML's constructors raise IndexError, AttributeError or ValueError on these
        ("timeout: !!float\n", "line 1: tags ('tag:yaml.org,2002:float') are not allowed"),
        ("timeout: !!timestamp x\n", "line 1: tags ('tag:yaml.org,2002:timestamp') are not allowed"),
        ("timeout: 2001-13-45\n", "line 1: '2001-13-45' cannot be read (month must be in 1..12)"),
        # an int no float holds: math.isfinite raised OverflowError, an internal error at exit 3
        pytest.param("timeout: " + "9" * 400 + "\n", "timeout must be a positive number of seconds, not 99999",
                     id="a timeout of 400 digits"),
        # PyYAML's own message spans two lines and names "<unicode string>" rather than the file
        ("jobs: 2\ntimeout: \"\x1b[2J\"\n", "line 2 holds the character U+001B, which YAML does not allow in a file"),
    ],
)
def test_each_mistake_is_a_config_error_naming_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "a.py").write_text("CLAIM = {}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text))
    assert str(raised.value).startswith(str(tmp_path / "physverify.yaml"))
    assert message in str(raised.value)


def test_the_command_line_exits_two_on_a_config_typo(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    write(claims, "fail_on: [regresed]\n")
    out = subprocess.run([sys.executable, "-m", "physverify", "replay", "claims", "--trusted"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == EXIT_ERROR
    assert out.stderr.startswith("physverify: claims/physverify.yaml: fail_on: unknown transition 'regresed'")


def test_a_yaml_alias_bomb_is_refused_before_anything_expands(tmp_path: Path) -> None:
    """Issue 13, item 9: 334 bytes of nested aliases cost 52 s and 3.2 GB when the message repr()ed them."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(5)]
    lines.append("timeout: *f")  # 9**6 strings once expanded (the file had 9**9)
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, "\n".join(lines) + "\n"))
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'physverify.yaml'}: line 1: anchors and aliases (&a) are not allowed")
    assert len(message) < len(str(tmp_path)) + 200


def test_thousands_of_unknown_keys_are_named_five_and_counted(tmp_path: Path) -> None:
    """A file of 50,000 keys made one message line of every key, about 500 kB."""
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, "".join(f"key{i:05d}: 1\n" for i in range(50_000))))
    message = str(raised.value)
    assert "unknown keys 'key00000', 'key00001', 'key00002', 'key00003', 'key00004' and 49,995 more (known: " in message
    assert len(message) < len(str(tmp_path)) + 300


def test_a_huge_wrong_value_is_shown_shortened(tmp_path: Path) -> None:
    """Issue 13, item 9: a message never holds a whole value, however large."""
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, "timeout: [" + ", ".join(["'" + "x" * 1000 + "'"] * 1000) + "]\n"))
    assert "timeout must be a positive number of seconds, not ['xxx" in str(raised.value)
    assert len(str(raised.value)) < len(str(tmp_path)) + 200


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([
    *KNOWN_KEYS, ": ", "\n", "  ", "- ", "[", "]", "{", "}", ", ", "? ", "!!float ", "!!set ", "&a ", "*a", "<<: ",
    "1e3", "0x1F", ".nan", "~", "yes", "2001-13-45", "'x'", '"\\0"', "a.py", "regressed", "rejected", "|\n",
    "#", "---\n", "\t", "é",
]), max_size=25))
def test_any_settings_text_gives_settings_or_a_config_error(tmp_path: Path, parts: list[str]) -> None:
    """Issue 13: whatever physverify.yaml holds, the result is a Config or one ConfigError line naming the file."""
    try:
        load_config(write(tmp_path, "".join(parts)))
    except ConfigError as error:
        assert str(error).startswith(str(tmp_path / "physverify.yaml")) and "\n" not in str(error)


def test_the_suggested_spelling_of_a_number_is_read_as_a_number(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "timeout: 1.0e+3\n")).timeout == 1000.0


def test_a_physverify_yaml_that_is_a_fifo_a_device_or_huge_is_an_error_at_once(tmp_path: Path) -> None:
    """Issue 13: a repository's physverify.yaml may be a FIFO (reading waits for ever) or a link to /dev/zero."""
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "physverify.yaml")
    with pytest.raises(ConfigError, match=r"physverify.yaml: cannot be read \(.*a FIFO, not a regular file"):
        load_config(fifo)  # returns at once: the test would hang here before
    device = tmp_path / "device"
    device.mkdir()
    (device / "physverify.yaml").symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="a device or socket, not a regular file"):
        load_config(device)
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "physverify.yaml").write_text("# padding\n" * 200_000)
    with pytest.raises(ConfigError, match=r"physverify.yaml: is larger than 1,048,576 bytes"):
        load_config(huge)
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "physverify.yaml").symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(dangling)


# --- [tool.physverify] in the repository's pyproject.toml -------------------------------------
def _project(root: Path, pyproject: str | None = None, yaml: str | None = None) -> Path:
    """A git repository at ``root`` with the decay claim in claims/, and the settings given."""
    from support.fixtures import DECAY_CLAIM, DECAY_SOLVER, init_repo

    (root / "claims").mkdir(parents=True)
    init_repo(root)
    (root / "decay.py").write_text(DECAY_SOLVER)
    (root / "claims" / "claim_decay.py").write_text(DECAY_CLAIM)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject)
    if yaml is not None:
        (root / "claims" / "physverify.yaml").write_text(yaml)
    return root


def _ledger_lines(path: Path) -> list[dict[str, object]]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_timeout_in_tool_physverify_reaches_the_ledger_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    root = _project(tmp_path / "p", pyproject="[project]\nname = 'solver'\n\n[tool.physverify]\ntimeout = 7\n")
    ran = cli("replay", "claims", "--trusted", cwd=root)
    assert ran.returncode == 0, ran.stderr
    (line,) = _ledger_lines(root / "claims" / "confirm_ledger.jsonl")
    assert line["timeout_s"] == 7.0


def test_the_order_is_flag_then_physverify_yaml_then_tool_physverify_then_the_default(tmp_path: Path) -> None:
    from physverify.gate.settings import DEFAULT_TIMEOUT_S, resolve

    root = _project(tmp_path / "p", pyproject="[tool.physverify]\ntimeout = 7\njobs = 3\n", yaml="timeout: 11\n")
    config = load_config(root / "claims")
    run = resolve({"jobs": None, "timeout_s": None}, config)
    assert (run.timeout_s, run.jobs) == (11.0, 3)  # physverify.yaml over the table; the table over the default
    assert run.sources["timeout_s"] == str(root / "claims" / "physverify.yaml")
    assert run.sources["jobs"] == str(root / "pyproject.toml")
    assert resolve({"timeout_s": "5"}, config).timeout_s == 5.0  # the flag over both
    (root / "claims" / "physverify.yaml").unlink()
    assert resolve({}, load_config(root / "claims")).timeout_s == 7.0
    (root / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")  # a pyproject.toml without the table
    assert resolve({}, load_config(root / "claims")).timeout_s == DEFAULT_TIMEOUT_S


def test_paths_in_tool_physverify_start_from_the_repository_root(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", pyproject='[tool.physverify]\nledger = "claims/gate.jsonl"\n'
                    'expect = {"claims/claim_decay.py" = "rejected"}\n')
    config = load_config(root / "claims")
    assert config.ledger == root / "claims" / "gate.jsonl"
    assert config.expect == {(root / "claims" / "claim_decay.py").resolve(): "rejected"}


def test_a_key_both_files_set_differently_gives_one_warning_line_naming_both(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    root = _project(tmp_path / "p", pyproject="[tool.physverify]\ntimeout = 7\njobs = 2\n", yaml="timeout: 9\njobs: 2\n")
    (warning,) = load_config(root / "claims").warnings  # jobs agrees: no warning for it
    assert warning == (f"timeout: {root / 'claims' / 'physverify.yaml'} sets 9, {root / 'pyproject.toml'} "
                       "[tool.physverify] sets 7; physverify.yaml wins")
    ran = cli("replay", "claims", "--trusted", cwd=root)  # the folder as given: claims/physverify.yaml
    assert ran.returncode == 0
    assert (f"\nwarning: timeout: claims/physverify.yaml sets 9, {root / 'pyproject.toml'} [tool.physverify] sets 7; "
            "physverify.yaml wins\n") in ran.stdout
    assert _ledger_lines(root / "claims" / "confirm_ledger.jsonl")[0]["timeout_s"] == 9.0


@pytest.mark.parametrize(("table", "message"), [
    ("timout = 5", "pyproject.toml [tool.physverify]: unknown key 'timout' (known: timeout, jobs, ledger, fail_on, "
     "exclude, expect, isolation, preload, ignore)"),
    ("timeout = 'fast'", "pyproject.toml [tool.physverify]: timeout must be a positive number of seconds, not 'fast'"),
    ("jobs = true", "pyproject.toml [tool.physverify]: jobs must be a whole number of at least 1, not True"),
    ("fail_on = ['regresed']", "pyproject.toml [tool.physverify]: fail_on: unknown transition 'regresed'"),
    ("timeout = ", "pyproject.toml: is not valid TOML (Invalid value (at line 2, column 11))"),
])
def test_a_bad_tool_physverify_is_one_line_naming_pyproject_toml_and_exit_2(
        tmp_path: Path, cli, table: str, message: str) -> None:  # type: ignore[no-untyped-def]
    root = _project(tmp_path / "p", pyproject=f"[tool.physverify]\n{table}\n")
    ran = cli("replay", "claims", "--trusted", cwd=root)
    assert ran.returncode == EXIT_ERROR and ran.stdout == ""
    assert ran.stderr.startswith(f"physverify: {root / message}") and ran.stderr.count("\n") == 1
    assert not (root / "claims" / "confirm_ledger.jsonl").exists()


def test_tool_physverify_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", pyproject='tool = {physverify = "fast"}\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.physverify\] must be a table of settings"):
        load_config(root / "claims")


def test_the_baseline_ledger_is_where_the_committed_tool_physverify_keeps_it(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from support.fixtures import DECAY_DEFECT

    root = _project(tmp_path / "p", pyproject='[tool.physverify]\nledger = "claims/gate.jsonl"\n')
    assert cli("replay", "claims", "--trusted", cwd=root).returncode == 0
    repository = __import__("git").Repo(root)
    repository.index.add(["decay.py", "claims/claim_decay.py", "claims/gate.jsonl", "pyproject.toml"])
    repository.index.commit("the decay claim, rejected")
    # a change that moves the ledger does not move the gate's memory: the commit's own table says where it is
    (root / "pyproject.toml").write_text('[tool.physverify]\nledger = "claims/moved.jsonl"\n')
    (root / "decay.py").write_text(DECAY_DEFECT)
    ran = cli("replay", "claims", "--trusted", cwd=root)
    assert ran.returncode == 1 and "confirmed      regressed    claims/claim_decay.py" in ran.stdout
    assert f"the baseline is the ledger as committed at HEAD in {root / 'claims' / 'gate.jsonl'}, where" in ran.stdout
@pytest.mark.parametrize(("text", "message"), [
    ("ignore: {rule: constant}\n", "ignore must be a list of {rule: RULE, file: GLOB, reason: TEXT, line: N (optional)}"),
    ("ignore:\n  - {rule: constant, file: a.py}\n", "ignore entry 1: reason must be a non-empty string"),
    ("ignore:\n  - {rule: constant, file: a.py, reason: '  '}\n", "ignore entry 1: reason must be a non-empty string"),
    ("ignore:\n  - {rule: constant, file: a.py, reason: why, line: 0}\n", "ignore entry 1: line must be a line number"),
    ("ignore:\n  - {rule: constant, file: a.py, reason: why, lines: 3}\n", "ignore entry 1 must be a list of"),
])
def test_the_scan_s_ignore_list_names_each_bad_entry(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text))
    assert message in str(raised.value)


def test_the_scan_s_ignore_entries_are_read_with_their_reasons(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "ignore:\n  - {rule: rk-order, file: 'src/*.py', reason: the paper's, line: 4}\n"))
    assert [tuple(entry) for entry in config.ignore] == [("rk-order", "src/*.py", "the paper's", 4)]


def test_reading_the_settings_imports_no_gitpython(tmp_path: Path) -> None:
    """The replay starts its fork server after reading them, so the server's start overlaps GitPython's import."""
    root = _project(tmp_path / "p", pyproject="[tool.physverify]\ntimeout = 7\n")
    code = "import sys; from pathlib import Path; from physverify.gate.config import load_config; " \
           f"c = load_config(Path({str(root / 'claims')!r})); print(c.timeout, 'git' in sys.modules)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.stdout == "7.0 False\n", ran.stderr
