"""commands/ledger.py: ledger log, show and merge (spec section 3, issue 4), as functions and on the command line."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import git
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fixtures import Ran, ledger_record as record, write_ledger

from physverify.commands.ledger import log, merge
from physverify.errors import PhysverifyError
from physverify.gate.ledger import append_record, read_ledger
from physverify.report.ledger_text import render_merge
from physverify.verdict import EXIT_ERROR, EXIT_OK

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_log_finds_a_claim_given_by_a_path_from_another_folder(small_repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(small_repo.working_tree_dir)
    ledger = root / "confirm_ledger.jsonl"
    append_record(ledger, record("claims/a.py", claim_key="claims/a.py"))
    monkeypatch.chdir(root / "claims")
    result = log(ledger, "a.py")
    assert [row.claim for row in result.rows] == ["claims/a.py"] and result.problems == []




# --- ledger merge -------------------------------------------------------------------------
def test_merge_orders_by_date_drops_exact_duplicates_and_keeps_bad_lines(tmp_path: Path) -> None:
    shared = record("claims/s.py", date="2026-01-02T00:00:00+00:00")
    a = write_ledger(tmp_path / "a.jsonl", [record("claims/a.py", date="2026-01-03T00:00:00Z"), shared])
    b = write_ledger(tmp_path / "b.jsonl", [record("claims/b.py", date="2026-01-01T00:00:00"), shared], tail=b'{"cut')
    result = merge([a, b], tmp_path / "out.jsonl")
    out = read_ledger(tmp_path / "out.jsonl")
    assert [r["claim_file"] for r in out.records] == ["claims/b.py", "claims/s.py", "claims/a.py"]
    assert (result.lines_in, result.lines_out, result.duplicates) == (5, 4, 1)
    assert result.problems == [f"{b}:3: the last line was cut off mid-write (no newline, not complete JSON); line skipped, "
                               f"and the next append removes it (copied to the end of {tmp_path / 'out.jsonl'})"]
    assert (tmp_path / "out.jsonl").read_bytes().endswith(b'{"cut\n')
    assert render_merge(result) == f"merged 2 ledgers (5 lines) into {tmp_path / 'out.jsonl'}: 4 lines, 1 exact duplicate dropped"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "out.jsonl"]  # no temporary left


dates = st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", "2026-01-02T00:00:00Z", "not a date", None])
small_records = st.builds(lambda d, c, v: {"date": d, "claim_file": c, "verdict": v}, dates, st.sampled_from("ab"), st.sampled_from(["confirmed", "rejected"]))


@FUZZ
@given(st.lists(st.lists(small_records, min_size=1, max_size=5), min_size=1, max_size=3))
def test_merge_gives_the_same_output_for_any_input_order_and_loses_no_line(
    tmp_path: Path, shards: list[list[dict[str, Any]]]
) -> None:
    inputs = [write_ledger(tmp_path / f"shard{i}.jsonl", shard) for i, shard in enumerate(shards)]
    outputs = set()
    for n, order in enumerate(itertools.permutations(inputs)):
        out = tmp_path / f"out{n}.jsonl"
        out.unlink(missing_ok=True)
        result = merge(list(order), out)
        outputs.add(out.read_bytes())
        assert result.lines_in == result.lines_out + result.duplicates == sum(map(len, shards))
        out.unlink()
    assert len(outputs) == 1
    merged_lines = set(outputs.pop().splitlines())
    assert merged_lines == {line for path in inputs for line in path.read_bytes().splitlines()}


def test_merge_refuses_to_overwrite_an_input_or_any_existing_file(tmp_path: Path) -> None:
    a = write_ledger(tmp_path / "a.jsonl", [record()])
    other = write_ledger(tmp_path / "other.jsonl", [record("claims/z.py")])
    with pytest.raises(PhysverifyError, match="it is one of the inputs"):
        merge([a], a)
    with pytest.raises(PhysverifyError, match="its lines would be lost"):
        merge([a], other)
    with pytest.raises(PhysverifyError, match="no such ledger"):
        merge([a, tmp_path / "missing.jsonl"], tmp_path / "out.jsonl")
    assert a.read_bytes() == json.dumps(record()).encode() + b"\n" and not (tmp_path / "out.jsonl").exists()


# --- merge inputs from a job that ran code under test (issue 21, item 8) --------------------
def test_merge_refuses_a_shard_linked_to_a_file_outside_and_writes_nothing(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$hash:19000:0:99999:7:::\n")
    good = write_ledger(tmp_path / "shard1.jsonl", [record("claims/a.py")])
    (tmp_path / "shard2.jsonl").symlink_to(secret)
    with pytest.raises(PhysverifyError, match="shard2.jsonl: a symbolic link; ledger merge reads only regular files"):
        merge([good, tmp_path / "shard2.jsonl"], tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_merge_refuses_a_fifo_a_folder_and_a_device_without_waiting(tmp_path: Path) -> None:
    good = write_ledger(tmp_path / "shard1.jsonl", [record("claims/a.py")])
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    for bad, what in ((tmp_path / "fifo.jsonl", "a FIFO"), (tmp_path / "folder.jsonl", "a folder"),
                      (Path("/dev/zero"), "a device or socket")):
        with pytest.raises(PhysverifyError, match=f"it is {what}, not a regular file"):
            merge([good, bad], tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("content", [b"root:$6$hash:19000:0:99999:7:::\n", b"", b"\n\n", b'{"a": 1}\n[1, 2]\n',
                                     b'{"verdict": "confirmed"}\n'])
def test_merge_refuses_an_input_that_holds_no_ledger_record(tmp_path: Path, content: bytes) -> None:
    good = write_ledger(tmp_path / "shard1.jsonl", [record("claims/a.py")])
    (tmp_path / "shard2.jsonl").write_bytes(content)
    with pytest.raises(PhysverifyError, match="shard2.jsonl: no ledger record in it"):
        merge([good, tmp_path / "shard2.jsonl"], tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_line_dated_after_the_merge_is_flagged_and_never_outranks_a_real_run(tmp_path: Path) -> None:

    from physverify.gate.ledger import latest_by_claim

    forged = record("claims/a.py", "confirmed", date="9999-12-31T23:59:59+00:00")
    real = record("claims/a.py", "rejected", date="2026-06-01T00:00:00+00:00")
    a = write_ledger(tmp_path / "shard1.jsonl", [forged])
    b = write_ledger(tmp_path / "shard2.jsonl", [real])
    now = datetime(2026, 6, 2, tzinfo=timezone.utc)
    result = merge([a, b], tmp_path / "out.jsonl", now=now)
    merged = read_ledger(tmp_path / "out.jsonl").records
    assert [r["date"] for r in merged] == [forged["date"], real["date"]]  # the forged line first, kept
    assert latest_by_claim(merged)["claims/a.py"]["verdict"] == "rejected"
    assert result.problems == [f"{a}:1: dated 9999-12-31T23:59:59+00:00, after the merge time 2026-06-02T00:00:00+00:00; "
                               "sorted first, with the undated lines, so it never outranks a real run"]


def test_ledger_merge_on_the_command_line_refuses_a_link_with_exit_2(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    write_ledger(tmp_path / "a.jsonl", [record("claims/a.py")])
    (tmp_path / "b.jsonl").symlink_to("/etc/passwd")
    done = cli("ledger", "merge", "a.jsonl", "b.jsonl", "-o", "all.jsonl", cwd=tmp_path)
    assert done.returncode == EXIT_ERROR and done.stdout == ""
    assert done.stderr == ("physverify: b.jsonl: a symbolic link; ledger merge reads only regular files, never "
                           "through a link\n")
    assert not (tmp_path / "all.jsonl").exists()


# --- the command line ---------------------------------------------------------------------
def test_ledger_log_prints_the_history_and_warns_about_bad_lines(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    write_ledger(tmp_path / "confirm_ledger.jsonl", [record("claims/a.py", "confirmed"), record("claims/b.py")], tail=b"{\n")
    done = cli("ledger", "log", "--claim", "claims/a.py", cwd=tmp_path)
    assert done.returncode == EXIT_OK
    assert done.stdout.splitlines()[1].split()[:2] == ["2026-01-01T00:00:00+00:00", "confirmed"]
    assert len(done.stdout.splitlines()) == 2
    assert done.stderr == "physverify: warning: confirm_ledger.jsonl:3: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)); line skipped\n"


def test_ledger_merge_writes_the_output_and_refuses_an_existing_one(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    write_ledger(tmp_path / "a.jsonl", [record("claims/a.py")])
    write_ledger(tmp_path / "b.jsonl", [record("claims/b.py")])
    done = cli("ledger", "merge", "a.jsonl", "b.jsonl", "-o", "all.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (EXIT_OK, "merged 2 ledgers (2 lines) into all.jsonl: 2 lines, 0 exact duplicates dropped\n")
    again = cli("ledger", "merge", "a.jsonl", "-o", "all.jsonl", cwd=tmp_path)
    assert again.returncode == EXIT_ERROR and again.stderr.startswith("physverify: all.jsonl: already exists")


def test_merging_a_ledger_with_itself_keeps_each_line_once(tmp_path: Path) -> None:
    a = write_ledger(tmp_path / "a.jsonl", [record("claims/a.py"), record("claims/b.py")])
    result = merge([a, a], tmp_path / "out.jsonl")
    assert (result.lines_in, result.lines_out, result.duplicates) == (4, 2, 2)
    assert (tmp_path / "out.jsonl").read_bytes() == a.read_bytes()


def test_ledger_log_reads_the_ledger_replay_writes_in_the_claims_folder(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    """Issue 10: without --ledger, log resolves the ledger as replay does (physverify.yaml, the claims folder)."""
    (tmp_path / "claims").mkdir()
    write_ledger(tmp_path / "claims" / "confirm_ledger.jsonl", [record("claims/a.py", "rejected")])
    write_ledger(tmp_path / "confirm_ledger.jsonl", [record("claims/a.py", "confirmed")])  # confirm's, not replay's
    assert cli("ledger", "log", cwd=tmp_path).stdout.splitlines()[1].split()[1] == "rejected"
    (tmp_path / "claims" / "physverify.yaml").write_text("ledger: ../history.jsonl\n")
    write_ledger(tmp_path / "history.jsonl", [record("claims/a.py", "not decidable")])
    assert "not decidable" in cli("ledger", "log", "--claims", "claims", cwd=tmp_path).stdout
    missing = cli("ledger", "log", "--claims", "nope", cwd=tmp_path)
    assert missing.returncode == EXIT_ERROR and missing.stderr == "physverify: nope: no such claims folder\n"
    (tmp_path / "claims" / "a.py").write_text("")
    a_file = cli("ledger", "log", "--claims", "claims/a.py", cwd=tmp_path)
    assert a_file.returncode == EXIT_ERROR and a_file.stdout == "" and a_file.stderr == (
        "physverify: claims/a.py: not a folder; --claims takes the claims folder whose ledger to read (--claims claims)\n")


def test_ledger_log_reads_confirms_ledger_until_a_replay_has_written_one(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    """A new user runs `confirm` (ledger ./confirm_ledger.jsonl), then `ledger log`: it said "no ledger lines"."""
    (tmp_path / "claims").mkdir()
    missing = cli("ledger", "log", "--claim", "claims/a.py", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (EXIT_OK, "")
    assert missing.stdout == (f"no ledger lines for claims/a.py in {Path('claims/confirm_ledger.jsonl')}: there is "
                              "no such file yet (a replay writes it; give --ledger FILE to read another ledger)\n")
    write_ledger(tmp_path / "confirm_ledger.jsonl", [record("claims/a.py", "confirmed")])  # what confirm wrote
    done = cli("ledger", "log", "--claim", "claims/a.py", cwd=tmp_path)
    assert done.stdout.splitlines()[1].split()[:2] == ["2026-01-01T00:00:00+00:00", "confirmed"], done.stdout
    assert cli("ledger", "show", "claims/a.py", cwd=tmp_path).stdout.startswith("confirmed")
    other = cli("ledger", "log", "--claim", "claims/b.py", cwd=tmp_path)
    assert other.stdout == "no ledger lines for claims/b.py in confirm_ledger.jsonl\n"


def test_ledger_show_prints_the_latest_verdict_with_its_control_and_checks(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    check = {"label": "order of the midpoint rule", "family": "mms", "status": "FAIL",
             "message": "observed order 1.02 (expected 2)"}
    control = {"label": "exact for a constant", "family": "exact", "status": "PASS", "message": "error 0"}
    write_ledger(tmp_path / "confirm_ledger.jsonl", [
        record("claims/a.py", "rejected"),
        record("claims/a.py", "confirmed", reason="the control passed and 1 of 1 check failed", control=control,
               checks=[check]),
        record("claims/b.py", "rejected"),
    ])
    shown = cli("ledger", "show", "claims/a.py", cwd=tmp_path)
    assert shown.returncode == EXIT_OK, shown.stderr
    assert shown.stdout.splitlines()[:3] == [
        "confirmed: the control passed and 1 of 1 check failed",
        "  control PASS exact for a constant: error 0",
        "  check FAIL order of the midpoint rule: observed order 1.02 (expected 2)",
    ]
    unknown = cli("ledger", "show", "claims/zzz.py", cwd=tmp_path)
    assert unknown.returncode == EXIT_ERROR and "no line for the claim claims/zzz.py" in unknown.stderr


def test_the_variant_field_is_optional_and_old_lines_read_and_show_as_before(tmp_path: Path,
                                                                            cli: Callable[..., Ran]) -> None:
    """Issue 17: only a claim that names its fix carries `variant`; a line without it is read as always."""
    from physverify.gate.ledger import FIELDS, new_record, ordered

    assert "variant" not in new_record("c.py", "2026-01-01T00:00:00+00:00", "0.1", 60.0)
    check = {"label": "k", "family": "mms", "status": "FAIL", "message": "order 1"}
    control = {"label": "c", "family": "exact", "status": "PASS", "message": "0"}
    variant = {"held": "defect", "line": 9, "control": control, "checks": [{**check, "status": "PASS"}]}
    assert list(ordered({"checks": [], "variant": variant, "control": None})) == ["control", "checks", "variant"]
    assert FIELDS.index("variant") == FIELDS.index("checks") + 1
    write_ledger(tmp_path / "confirm_ledger.jsonl", [
        record("claims/a.py", "confirmed", control=control, checks=[check]),  # written before issue 17
        record("claims/b.py", "confirmed", control=control, checks=[check], variant=variant),
    ])
    old = cli("ledger", "show", "claims/a.py", cwd=tmp_path)
    assert old.returncode == EXIT_OK and "second run" not in old.stdout, old.stderr
    new = cli("ledger", "show", "claims/b.py", cwd=tmp_path)
    assert "  the file holds the defect at line 9; the second run is with the fix" in new.stdout.splitlines()
    assert "  with the fix: check PASS k: order 1" in new.stdout.splitlines()
