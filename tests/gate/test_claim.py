"""claim.py: the static load of a claim file (spec section 1) and the init template (section 6)."""

from __future__ import annotations

import ast
import hashlib
import os
import string
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.nesting import UNBRACKETED

from physverify import files
from physverify.gate import affected, claim as claim_module
from physverify.gate.claim import (
    FILL_IN,
    MAX_CLAIM_BYTES,
    REQUIRED_KEYS,
    ClaimFile,
    ClaimLoadError,
    binds_claim,
    read_claim,
)
from physverify.gate.templates import write_template
from physverify.errors import PhysverifyError

GOOD_CLAIM: dict[str, Any] = {
    "text": "integrate() advances the half step by h instead of h/2",
    "source": "reviewer: a person",
    "file": "solver.py",
    "line": 14,
    "reference": "Hairer, Norsett and Wanner, Solving ODEs I, sec. II.1",
    "impact": "used",
}
FUNCTIONS = "def control():\n    return None\n\n\ndef checks():\n    return []\n"


def claim_source(claim: object = None, functions: str = FUNCTIONS, claim_line: str | None = None) -> str:
    line = claim_line if claim_line is not None else f"CLAIM = {GOOD_CLAIM if claim is None else claim!r}"
    return f"import numpy as np\n\n{line}\n\n{functions}"


def write(tmp_path: Path, source: str | bytes, name: str = "claim_x.py") -> Path:
    path = tmp_path / name
    if isinstance(source, bytes):
        path.write_bytes(source)
    else:
        path.write_text(source, encoding="utf-8")
    return path


def load_error(path: Path) -> ClaimLoadError:
    with pytest.raises(ClaimLoadError) as info:
        read_claim(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return info.value


# --- what loads -----------------------------------------------------------------------
def test_a_complete_claim_loads_with_its_hash_and_values(tmp_path: Path) -> None:
    path = write(tmp_path, claim_source())
    loaded = read_claim(path)
    assert loaded == ClaimFile(path, loaded.sha256, GOOD_CLAIM)
    import hashlib

    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_annotated_claim_and_the_optional_repo_key_load(tmp_path: Path) -> None:
    claim = dict(GOOD_CLAIM, repo="../project")
    path = write(tmp_path, claim_source(claim_line=f"CLAIM: dict = {claim!r}"))
    assert read_claim(path).claim == claim


@pytest.mark.parametrize(
    "functions",
    [
        "from helpers import control, checks\n",
        "import helpers as control\nfrom helpers import make as checks\n",
        "control = checks = lambda: None\n",
        "class control: pass\nasync def checks(): pass\n",
        "import control, checks\n",
    ],
)
def test_control_and_checks_may_be_bound_by_any_top_level_statement(tmp_path: Path, functions: str) -> None:
    assert read_claim(write(tmp_path, claim_source(functions=functions))).claim == GOOD_CLAIM


def test_the_file_is_read_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').close()\nimport this_module_does_not_exist\n" + claim_source()
    read_claim(write(tmp_path, source))
    assert not marker.exists()


def test_the_last_top_level_binding_of_claim_wins(tmp_path: Path) -> None:
    first = write(tmp_path, claim_source() + "\nCLAIM = None\n", "a.py")
    assert "not a literal dict" in str(load_error(first))
    second = write(tmp_path, "CLAIM = make()\n" + claim_source(), "b.py")
    assert read_claim(second).claim == GOOD_CLAIM


def test_a_pep263_coding_line_is_honoured(tmp_path: Path) -> None:
    claim = dict(GOOD_CLAIM, source="Müller")
    source = "# -*- coding: latin-1 -*-\n" + claim_source(claim)
    assert read_claim(write(tmp_path, source.encode("latin-1"))).claim["source"] == "Müller"


# --- one test per load error of section 1 ---------------------------------------------
def test_a_claim_file_must_end_in_py(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source(), "claim.txt"))
    assert "must end in .py" in str(error) and error.sha256 is not None


def test_a_missing_file_is_a_load_error_without_hash(tmp_path: Path) -> None:
    error = load_error(tmp_path / "nowhere.py")
    assert "cannot be read" in str(error) and error.sha256 is None and error.claim is None


def test_a_folder_named_like_a_claim_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "folder.py").mkdir()
    assert "cannot be read" in str(load_error(tmp_path / "folder.py"))


def _within_a_minute(work: Callable[[], object]) -> object:
    """Run ``work`` in a thread and return its result; fail (not hang) when it blocks."""
    box: list[object] = []
    thread = threading.Thread(target=lambda: box.append(work()), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "blocked: the reader waits on a file that never ends or never opens"
    return box[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("kind", ["FIFO", "device"])
def test_a_fifo_or_a_device_named_like_a_claim_is_a_load_error_at_once(tmp_path: Path, kind: str) -> None:
    """Issue 13: opening a FIFO waited for a writer for ever; a symlink to /dev/zero was read for ever."""
    path = tmp_path / "claim_x.py"
    if kind == "FIFO":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    error = _within_a_minute(lambda: pytest.raises(ClaimLoadError, read_claim, path).value)
    assert str(error) == f"{path}: cannot be read: it is {'a FIFO' if kind == 'FIFO' else 'a device or socket'}, not a regular file"
    assert _within_a_minute(lambda: binds_claim(path)) is False  # discovery skips it
    assert _within_a_minute(lambda: claim_module.reference_notes(path, GOOD_CLAIM)) == []


def test_bytes_that_are_not_utf8_are_a_load_error_with_the_hash(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source().encode() + b"\n# \xff\xfe\n"))
    assert "is not valid utf-8 text" in str(error) and error.sha256 is not None


def test_latin1_on_the_first_line_names_the_byte_and_says_how_to_fix_it(tmp_path: Path) -> None:
    """tokenize says only "invalid or missing encoding declaration" for bytes in the first two lines."""
    error = load_error(write(tmp_path, "# Schr\xf6dinger\n".encode("latin-1") + claim_source().encode()))
    assert "is not valid utf-8 text (bytes b'\\xf6' at offset 6, line 1); save it as UTF-8, or name its encoding" \
        in str(error), str(error)


def test_a_nul_byte_is_a_load_error_without_a_line_of_none(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source().encode() + b"\0\n"))
    assert str(error).endswith("is not valid Python: source code string cannot contain null bytes"), str(error)


def test_an_unknown_coding_line_is_a_load_error(tmp_path: Path) -> None:
    assert "cannot be decoded" in str(load_error(write(tmp_path, "# coding: klingon\n" + claim_source())))


@pytest.mark.parametrize(("name", "depth"), [("unary minus", 100_000), ("lambdas", 3000), ("attribute chain", 5000)])
def test_a_file_nested_too_deeply_to_parse_is_a_load_error_saying_so(tmp_path: Path, name: str, depth: int) -> None:
    """Issue 13, item 7: whatever ast raises on absurd nesting is a load error with a message."""
    source = claim_source(functions=FUNCTIONS + f"\n\ndef reference_x():\n    return {NESTINGS[name](depth)}\n")
    error = load_error(write(tmp_path, source))
    assert "is nested too deeply to be read (" in str(error) and error.sha256 is not None
    assert binds_claim(tmp_path / "claim_x.py")  # its CLAIM line still makes it a claim


@pytest.mark.parametrize("key", ["file", "repo"])
@pytest.mark.parametrize(("path", "problem"), [
    ("de\x00cay.py", "holds a NUL character, so it cannot be a path"),
    ("de\ud800cay.py", "holds a lone surrogate (a \\ud800-\\udfff escape), so it cannot be a path"),
    ("x" * 300 + ".py", "has a part longer than 255 bytes, which no file system allows"),
    ("a/" * 3000 + "x.py", "is 6,004 characters long; a path here has at most 1,024"),
])
def test_a_path_no_file_system_allows_is_a_load_error_left_out_of_the_readable_part(
    tmp_path: Path, key: str, path: str, problem: str
) -> None:
    """Issue 13, item 7: such a CLAIM['file'] or ['repo'] passed the load check, then confirm raised on it."""
    error = load_error(write(tmp_path, claim_source({**GOOD_CLAIM, key: path})))
    assert f"CLAIM[{key!r}] {problem}" in str(error)
    assert error.claim is not None and key not in error.claim and error.claim["text"] == GOOD_CLAIM["text"]


def test_a_claim_file_over_one_mebibyte_is_a_load_error_naming_its_size(tmp_path: Path) -> None:
    """Issue 13, item 26: a 50 MB list literal took 98 s and 6.2 GB to read; the file is refused unparsed."""
    data = claim_source(functions=FUNCTIONS + "\nTABLE = [" + "0, " * MAX_CLAIM_BYTES + "]\n").encode()
    path = write(tmp_path, data)
    error = load_error(path)
    assert f"is {len(data):,} bytes; a claim file may hold at most {MAX_CLAIM_BYTES:,} bytes (1 MiB)" in str(error)
    assert error.sha256 == hashlib.sha256(data).hexdigest()
    assert binds_claim(path)  # still found, so replay records its load error
    assert not binds_claim(write(tmp_path, b"# a large table, no claim\n" + b"0,\n" * MAX_CLAIM_BYTES, "table.py"))


def test_a_claim_file_is_parsed_once_for_all_its_static_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13, item 26: discovery, the load check, the reference scan and the import closure share one parse."""
    parses: list[str] = []
    real_parse = ast.parse

    def counting_parse(source: str | bytes, *args: Any, **kwargs: Any) -> ast.AST:
        parses.append(str(kwargs.get("filename", args[0] if args else "")))
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    path = write(tmp_path, claim_source() + f"# {tmp_path}\n")  # content no other test has parsed
    assert binds_claim(path)
    claim_file = read_claim(path)
    assert claim_module.reference_notes(path, claim_file.claim) == []
    assert claim_module.read(path).target == "solver.py"
    assert affected.import_closure(path, tmp_path) == {path.resolve()}
    assert binds_claim(path) and read_claim(path) == claim_file
    assert len(parses) == 1, parses


def test_a_syntax_error_is_a_load_error_naming_the_line(tmp_path: Path) -> None:
    assert "is not valid Python" in str(load_error(write(tmp_path, claim_source() + "\ndef (:\n")))


def test_a_file_without_claim_is_a_load_error(tmp_path: Path) -> None:
    assert "CLAIM is not defined at the top level" in str(load_error(write(tmp_path, FUNCTIONS)))


@pytest.mark.parametrize("wrapper", ["if True:\n    {}", "def make():\n    {}", "try:\n    {}\nexcept Exception:\n    pass"])
def test_a_claim_bound_only_inside_a_block_is_not_seen(tmp_path: Path, wrapper: str) -> None:
    source = wrapper.format(f"CLAIM = {GOOD_CLAIM!r}") + "\n\n" + FUNCTIONS
    assert "CLAIM is not defined at the top level" in str(load_error(write(tmp_path, source)))


def test_an_annotation_without_a_value_does_not_bind_claim(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source(claim_line="CLAIM: dict")))
    assert "CLAIM is not defined at the top level" in str(error)


@pytest.mark.parametrize(
    "claim_line", ["CLAIM = dict(text='x')", "CLAIM = {'text': TEXT}", "CLAIM = [1, 2]", "CLAIM, other = {}, 1"]
)
def test_a_claim_that_is_not_a_literal_dict_is_a_load_error(tmp_path: Path, claim_line: str) -> None:
    error = load_error(write(tmp_path, claim_source(claim_line=claim_line)))
    assert "CLAIM is not a literal dict" in str(error) and error.claim is None


def test_a_claim_key_that_is_not_a_string_is_a_load_error(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source({**GOOD_CLAIM, 3: "x"})))
    assert "CLAIM keys must be strings" in str(error) and error.claim == GOOD_CLAIM


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, None, True, (1,), 1j])
def test_a_claim_value_that_is_not_a_string_or_number_is_a_load_error(tmp_path: Path, value: object) -> None:
    error = load_error(write(tmp_path, claim_source({**GOOD_CLAIM, "text": value})))
    assert "CLAIM['text'] must be a string or a number" in str(error)


@pytest.mark.parametrize("key", REQUIRED_KEYS)
def test_each_missing_key_is_a_load_error_naming_it(tmp_path: Path, key: str) -> None:
    claim = {k: v for k, v in GOOD_CLAIM.items() if k != key}
    error = load_error(write(tmp_path, claim_source(claim)))
    assert f"CLAIM is missing the key {key!r}" in str(error)
    assert error.claim == claim  # the incomplete CLAIM still goes to the ledger (section 3)


def test_an_unknown_key_is_a_load_error_naming_it(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source({**GOOD_CLAIM, "severity": "high"})))
    assert "unknown key 'severity'" in str(error)


@pytest.mark.parametrize("key", [k for k in REQUIRED_KEYS if k != "line"])
@pytest.mark.parametrize("value", ["", "   ", FILL_IN, f" {FILL_IN} "])
def test_an_empty_or_fill_in_string_is_a_load_error(tmp_path: Path, key: str, value: str) -> None:
    error = load_error(write(tmp_path, claim_source({**GOOD_CLAIM, key: value})))
    assert f"CLAIM[{key!r}]" in str(error)


@pytest.mark.parametrize("line", [14.0, "14", True, 0, -3])
def test_a_line_that_is_not_a_positive_integer_is_a_load_error(tmp_path: Path, line: object) -> None:
    assert "CLAIM['line']" in str(load_error(write(tmp_path, claim_source({**GOOD_CLAIM, "line": line}))))


@pytest.mark.parametrize("key", ["text", "source", "file", "reference", "impact", "repo"])
def test_a_number_where_a_string_belongs_is_a_load_error(tmp_path: Path, key: str) -> None:
    assert "must be a string" in str(load_error(write(tmp_path, claim_source({**GOOD_CLAIM, key: 7}))))


def test_an_impact_outside_the_three_values_is_a_load_error(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, claim_source({**GOOD_CLAIM, "impact": "minor"})))
    assert "it must be one of used, latent, unknown" in str(error)


@pytest.mark.parametrize("name", ["control", "checks"])
@pytest.mark.parametrize("how", ["missing", "inside an if", "inside a function", "deleted"])
def test_control_or_checks_not_bound_at_top_level_is_a_load_error(tmp_path: Path, name: str, how: str) -> None:
    other = "checks" if name == "control" else "control"
    body = {
        "missing": "",
        "inside an if": f"if True:\n    def {name}(): pass\n",
        "inside a function": f"def setup():\n    global {name}\n    {name} = 1\n",
        "deleted": f"def {name}(): pass\ndel {name}\n",
    }[how]
    source = claim_source(functions=f"def {other}(): pass\n{body}")
    error = load_error(write(tmp_path, source))
    assert f"{name}() is not defined at the top level" in str(error) and error.claim == GOOD_CLAIM


# --- hypothesis: no input gives anything but a claim or a ClaimLoadError ----------------
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
scalars = st.one_of(st.text(max_size=20), st.integers(), st.floats(), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
keys = st.one_of(st.sampled_from(REQUIRED_KEYS + ("repo", "extra")), st.text(max_size=8), st.integers())


def loads_or_load_error(path: Path) -> ClaimFile | ClaimLoadError:
    try:
        return read_claim(path)
    except ClaimLoadError as error:
        assert str(error).startswith(f"{path}: ") and "\n" not in str(error)
        assert str(error)[len(f"{path}: "):].strip(), "a load error says what is wrong"
        return error


# Constructs that nest deep (support/nesting.py), and brackets (the tokenizer stops them at 200).
# Each goes into a function the reference scan reads.
NESTINGS = {**UNBRACKETED, "brackets": lambda n: "(" * n + "0" + ")" * n}
deep_files = st.builds(
    lambda name, depth: (claim_source(functions=FUNCTIONS + f"\n\ndef reference_x():\n    return {NESTINGS[name](depth)}\n")).encode(),
    st.sampled_from(sorted(NESTINGS)),
    st.integers(min_value=0, max_value=6000),
)


@FUZZ
@given(st.one_of(st.binary(max_size=300), deep_files))
def test_any_bytes_give_a_claim_or_a_load_error(tmp_path: Path, data: bytes) -> None:
    """Also a tree thousands of levels deep: every static reader gives a value, never an exception."""
    outcome = loads_or_load_error(write(tmp_path, data))
    assert isinstance(binds_claim(tmp_path / "claim_x.py"), bool)
    if isinstance(outcome, ClaimFile):
        assert isinstance(claim_module.reference_notes(outcome.path, outcome.claim), list)
    assert affected.import_closure(tmp_path / "claim_x.py", tmp_path) >= {(tmp_path / "claim_x.py").resolve()}


@FUZZ
@given(st.text(alphabet=string.printable + "{}:=é\x00\u2028", max_size=200))
def test_any_text_after_a_claim_prefix_gives_a_claim_or_a_load_error(tmp_path: Path, text: str) -> None:
    loads_or_load_error(write(tmp_path, "CLAIM = {" + text))


@FUZZ
@given(st.dictionaries(keys, values, max_size=9))
def test_random_claim_dicts_load_only_when_complete_and_well_typed(tmp_path: Path, claim: dict[Any, Any]) -> None:
    outcome = loads_or_load_error(write(tmp_path, claim_source(claim)))
    if isinstance(outcome, ClaimFile):
        assert outcome.claim == claim and set(REQUIRED_KEYS) <= set(claim)


@FUZZ
@given(st.sampled_from(REQUIRED_KEYS), st.booleans(), st.dictionaries(st.sampled_from(("repo",)), st.text(min_size=1)))
def test_a_claim_missing_a_key_or_holding_fill_in_is_always_refused(
    tmp_path: Path, key: str, drop: bool, extra: dict[str, str]
) -> None:
    claim = {**GOOD_CLAIM, **extra}
    if drop:
        del claim[key]
    else:
        claim[key] = FILL_IN
    assert isinstance(loads_or_load_error(write(tmp_path, claim_source(claim))), ClaimLoadError)


# --- discovery --------------------------------------------------------------------------
def test_binds_claim_sees_only_top_level_claim_bindings(tmp_path: Path) -> None:
    assert binds_claim(write(tmp_path, claim_source(), "a.py"))
    assert binds_claim(write(tmp_path, "CLAIM: dict = {'text': 1}\n", "b.py"))  # incomplete: a load error later
    assert not binds_claim(write(tmp_path, "import numpy\ndef helper(): return 'CLAIM'\n", "c.py"))
    assert not binds_claim(write(tmp_path, "if True:\n    CLAIM = {}\n", "d.py"))


def test_a_broken_file_that_starts_a_line_with_claim_counts_as_a_claim(tmp_path: Path) -> None:
    assert binds_claim(write(tmp_path, "CLAIM = {\n  'text': 'unfinished'\n", "a.py"))
    assert binds_claim(write(tmp_path, b"CLAIM = {}\n# \xff\n", "b.py"))
    assert not binds_claim(write(tmp_path, "def broken(:\n  pass\n", "c.py"))


# --- confirm init -----------------------------------------------------------------------
def test_the_template_fails_the_load_until_filled_in_and_then_loads(tmp_path: Path) -> None:
    path = write_template(tmp_path / "claim_k3.py", text='k3 uses "t + h"', file="src/rk4.py", line="22")
    error = load_error(path)
    assert "'FILL IN'" in str(error)
    assert error.claim is not None and error.claim["line"] == 22 and error.claim["text"] == 'k3 uses "t + h"'
    filled = path.read_text(encoding="utf-8").replace(
        '"source": "FILL IN"', '"source": "a person"'
    ).replace('"reference": "FILL IN"', '"reference": "Butcher, sec. 23"').replace('"impact": "FILL IN"', '"impact": "latent"')
    path.write_text(filled, encoding="utf-8")
    assert read_claim(path).claim["impact"] == "latent"


def test_a_fresh_template_names_every_key_left_to_fill_in_at_once(tmp_path: Path) -> None:
    """A new user filled in source, ran, filled in reference, ran, filled in impact: three runs for one message."""
    path = write_template(tmp_path / "claim_k3.py", text="t", file="f.py", line=3)
    assert str(load_error(path)).endswith(
        "CLAIM['source'], CLAIM['reference'] and CLAIM['impact'] are still 'FILL IN'; fill them in")
    path.write_text(path.read_text(encoding="utf-8").replace('"source": "FILL IN"', '"source": "a person"'),
                    encoding="utf-8")
    assert str(load_error(path)).endswith("CLAIM['reference'] and CLAIM['impact'] are still 'FILL IN'; fill them in")
    path.write_text(path.read_text(encoding="utf-8").replace('"impact": "FILL IN"', '"impact": "used"'),
                    encoding="utf-8")
    assert str(load_error(path)).endswith("CLAIM['reference'] is still 'FILL IN'; fill it in")


def test_the_template_says_the_reference_comes_from_the_physics(tmp_path: Path) -> None:
    head = write_template(tmp_path / "c.py", text="t", file="f.py", line=3).read_text(encoding="utf-8")[:400]
    assert "REFERENCE MUST COME FROM THE PHYSICS" in head and "never take it from the code under test" in head.lower()


def test_init_refuses_to_overwrite_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "keep me\n", "c.py")
    with pytest.raises(PhysverifyError, match="never overwrites"):
        write_template(path, text="t", file="f.py", line=3)
    assert path.read_text() == "keep me\n"


@pytest.mark.parametrize("missing", ["text", "file", "line"])
def test_init_names_each_missing_flag(tmp_path: Path, missing: str) -> None:
    values: dict[str, Any] = {"text": "t", "file": "f.py", "line": 3, missing: None}
    with pytest.raises(PhysverifyError, match=f"--{missing} is required"):
        write_template(tmp_path / "c.py", **values)
    assert not (tmp_path / "c.py").exists()


@pytest.mark.parametrize("line", ["x", "1.5", "0", "-2"])
def test_init_refuses_a_line_that_is_not_a_positive_integer(tmp_path: Path, line: str) -> None:
    with pytest.raises(PhysverifyError, match="--line"):
        write_template(tmp_path / "c.py", text="t", file="f.py", line=line)


@pytest.mark.parametrize("name", ["init", "claim.txt", "claim"])
def test_init_refuses_a_name_that_cannot_be_a_claim_file(tmp_path: Path, name: str) -> None:
    with pytest.raises(PhysverifyError, match=name):
        write_template(tmp_path / name, text="t", file="f.py", line=3)



def test_init_writes_defect_and_fix_into_claim_and_they_load(tmp_path: Path) -> None:
    """Issue 17: `confirm init --defect --fix`; the template is a claim once its FILL INs are filled."""
    path = write_template(tmp_path / "c.py", text="t", file="f.py", line=3, defect='x = a["k"][-1]', fix="x = a[0]")
    text = path.read_text(encoding="utf-8")
    assert '    "defect": "x = a[\\"k\\"][-1]",\n    "fix": "x = a[0]",\n}' in text
    path.write_text(text.replace('"FILL IN"', '"used"'), encoding="utf-8")
    assert read_claim(path).claim["fix"] == "x = a[0]"


@pytest.mark.parametrize(("keys", "words"), [
    ({"defect": "x = 1"}, "--defect and --fix go together"),
    ({"defect": "x = 1", "fix": "x = 1"}, "are the same lines"),
    ({"defect": "x = 1\x07", "fix": "x = 2"}, "--defect holds the control character"),
])
def test_init_refuses_broken_defect_and_fix(tmp_path: Path, keys: dict[str, str], words: str) -> None:
    with pytest.raises(PhysverifyError, match=words):
        write_template(tmp_path / "c.py", text="t", file="f.py", line=3, **keys)
    assert not (tmp_path / "c.py").exists()


def test_a_claim_with_one_of_defect_and_fix_is_a_load_error(tmp_path: Path) -> None:
    path = tmp_path / "c.py"
    path.write_text('CLAIM = {"text": "t", "source": "s", "file": "f.py", "line": 1, "reference": "r", '
                    '"impact": "used", "fix": "x = 1"}\ndef control(): pass\ndef checks(): pass\n')
    with pytest.raises(ClaimLoadError, match="CLAIM has 'fix' but not 'defect'; give both"):
        read_claim(path)


def test_how_deep_a_claim_may_nest_does_not_depend_on_the_recursion_limit(tmp_path: Path) -> None:
    """A library that raises sys.setrecursionlimit (jedi sets 3000) must not turn a refused file into a claim."""
    import sys

    source = claim_source(functions=FUNCTIONS + f"\n\ndef reference_x():\n    return {NESTINGS['attribute chain'](5000)}\n")
    path = write(tmp_path, source)
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(20_000)
        raised = load_error(path)
    finally:
        sys.setrecursionlimit(before)
    assert "is nested too deeply to be read (" in str(raised)


@pytest.mark.parametrize("size", [0, 1, 1600, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, MAX_CLAIM_BYTES - 1,
                                  MAX_CLAIM_BYTES, MAX_CLAIM_BYTES + 1, 3 * MAX_CLAIM_BYTES])
def test_contents_reads_what_a_file_object_reads_at_every_size(tmp_path: Path, size: int) -> None:
    """claim.contents reads the descriptor itself (issue 19): the same bytes, hashes and too-large reading."""
    import hashlib as digests

    data = (b"# x\n" * (size // 4 + 1))[:size]
    path = tmp_path / "claim_x.py"
    path.write_bytes(data)
    found = claim_module.contents(path)
    with files.open_regular(path) as handle:
        head = handle.read(MAX_CLAIM_BYTES + 1)
    if size <= MAX_CLAIM_BYTES:
        assert isinstance(found, claim_module.Contents) and found.data == head == data
        assert (found.sha256, found.blob) == (digests.sha256(data).hexdigest(), claim_module.git_blob_id(data))
    else:
        assert isinstance(found, claim_module.ClaimReading) and found.sha256 == digests.sha256(data).hexdigest()
        assert found.problem is not None and f"is {size:,} bytes" in found.problem and not found.binds


def test_contents_of_a_file_that_grows_past_its_stat_is_read_to_its_end(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The stat's size is only where the reads start: a file longer than it says is still read whole."""
    path = tmp_path / "claim_x.py"
    data = claim_source().encode() * 30
    path.write_bytes(data)
    monkeypatch.setattr(files, "regular_size", lambda fd: 10)
    found = claim_module.contents(path)
    assert isinstance(found, claim_module.Contents) and found.data == data
