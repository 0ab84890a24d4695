"""gate/ledger.py: locked appends, the tolerant reader, the latest line per claim (spec section 3, issue 4)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.fixtures import ledger_record as record

from physverify.errors import PhysverifyError
from physverify.gate.ledger import (
    LogResult,
    append_record,
    append_records,
    latest_by_claim,
    log_rows,
    parse_ledger,
    read_ledger,
)
from physverify.report.ledger_text import render_log

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
json_records = st.dictionaries(st.text(), json_values, max_size=6)


# --- appending ----------------------------------------------------------------------------
def test_append_creates_the_ledger_and_adds_one_line_per_record(tmp_path: Path) -> None:
    ledger = tmp_path / "confirm_ledger.jsonl"
    append_record(ledger, record(verdict="confirmed"))
    append_record(ledger, record(verdict="rejected", text="é ∂ \u2028 line\nbreak"))
    lines = ledger.read_bytes().split(b"\n")
    assert len(lines) == 3 and lines[2] == b""
    assert [json.loads(line)["verdict"] for line in lines[:2]] == ["confirmed", "rejected"]
    assert read_ledger(ledger).records[1]["text"] == "é ∂ \u2028 line\nbreak"


# Each writer waits for the "go" file, so all eight append at the same time rather than
# one after another as they finish starting up.
WRITER = """
import sys, time
from pathlib import Path
from physverify.gate.ledger import append_record
while not Path(sys.argv[1] + ".go").exists():
    time.sleep(0.002)
for i in range(50):
    append_record(Path(sys.argv[1]), {"writer": int(sys.argv[2]), "i": i, "pad": "x" * 9000})
"""


@pytest.mark.slow
def test_eight_processes_appending_fifty_lines_each_give_four_hundred_whole_lines(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(ledger), str(w)]) for w in range(8)]
    time.sleep(0.5)
    Path(f"{ledger}.go").touch()
    assert [w.wait(timeout=120) for w in writers] == [0] * 8
    read = read_ledger(ledger)
    assert read.problems == []
    assert sorted((r["writer"], r["i"]) for r in read.records) == [(w, i) for w in range(8) for i in range(50)]
    assert ledger.read_bytes().count(b"\n") == 400


def test_a_torn_last_line_is_reported_and_the_next_append_removes_it(tmp_path: Path) -> None:
    """A writer killed mid-line leaves part of a line; the next append cuts it off, so no partial line stays."""
    ledger = tmp_path / "confirm_ledger.jsonl"
    append_record(ledger, record(verdict="rejected"))
    whole = ledger.read_bytes()
    with ledger.open("ab") as handle:  # a writer killed mid-line
        handle.write(b'{"verdict": "confi')
    read = read_ledger(ledger)
    assert [r["verdict"] for r in read.records] == ["rejected"]
    assert read.problems == [f"{ledger}:2: the last line was cut off mid-write (no newline, not complete JSON); "
                             "line skipped, and the next append removes it"]

    append_record(ledger, record(verdict="confirmed"))
    after = ledger.read_bytes()
    assert after == whole + json.dumps(record(verdict="confirmed"), ensure_ascii=False).encode() + b"\n"
    read = read_ledger(ledger)
    assert [r["verdict"] for r in read.records] == ["rejected", "confirmed"] and read.problems == []


@pytest.mark.parametrize("tail", [b'{"verdict": "rejected"}', b"[1, 2]", b'"a string"'])
def test_a_complete_last_line_without_its_newline_is_never_removed(tmp_path: Path, tail: bytes) -> None:
    ledger = tmp_path / "confirm_ledger.jsonl"
    ledger.write_bytes(b'{"verdict": "confirmed"}\n' + tail)
    append_record(ledger, record(verdict="confirmed"))
    assert ledger.read_bytes().startswith(b'{"verdict": "confirmed"}\n' + tail + b"\n{")


def test_a_cut_off_line_longer_than_one_read_back_is_removed_whole(tmp_path: Path) -> None:
    ledger = tmp_path / "confirm_ledger.jsonl"
    ledger.write_bytes(b'{"verdict": "confirmed"}\n{"pad": "' + b"x" * (3 * (1 << 16) + 5))
    append_record(ledger, record(verdict="rejected"))
    assert ledger.read_bytes() == b'{"verdict": "confirmed"}\n' + json.dumps(record(verdict="rejected")).encode() + b"\n"
    ledger.write_bytes(b"\xef\xbb\xbf" + b'{"pad": "' + b"x" * (1 << 17))  # the only line, behind a byte order mark
    append_record(ledger, record(verdict="rejected"))
    assert ledger.read_bytes() == json.dumps(record(verdict="rejected")).encode() + b"\n"


# A child that fills the disk for real under a ledger with a torn last line (so the fix-up
# newline is part of the write), leaves ROOM bytes, appends a 20 kB line, reports what the
# append said and whether the ledger kept its bytes, then frees the disk and appends again.
# "size limit": RLIMIT_FSIZE, the kernel refuses the rest of a write with EFBIG (SIGXFSZ
# ignored so the write fails instead of killing the process). "full tmpfs": a 64 KiB tmpfs
# from bubblewrap, filled until ENOSPC.
_FULL_DISK_CHILD = """
import json, os, resource, signal, sys
from pathlib import Path
from physverify.errors import PhysverifyError
from physverify.gate.ledger import append_record, read_ledger
ledger, how, room = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
append_record(ledger, {"verdict": "rejected"})
with ledger.open("ab") as handle:
    handle.write(b'{"verdict": "confi')
before = ledger.read_bytes()
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
if how == "size limit":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + room, hard))
else:
    fd = os.open(ledger.parent / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, bytes(4096))
    except OSError:
        os.ftruncate(fd, os.fstat(fd).st_size - room)
    os.close(fd)
try:
    append_record(ledger, {"verdict": "confirmed", "reason": "x" * 20000})
    message = "appended"
except PhysverifyError as exc:
    message = str(exc)
unchanged = ledger.read_bytes() == before
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
(ledger.parent / "filler").unlink(missing_ok=True)
append_record(ledger, {"verdict": "confirmed"})
verdicts = [r["verdict"] for r in read_ledger(ledger).records]
print(json.dumps({"message": message, "unchanged": unchanged, "verdicts": verdicts}))
"""


@pytest.mark.parametrize(("how", "room"), [
    ("size limit", 0), ("size limit", 1), ("size limit", 100), ("full tmpfs", 0), ("full tmpfs", 8192),
])
def test_an_append_the_disk_cannot_take_leaves_the_ledger_as_it_was(tmp_path: Path, how: str, room: int) -> None:
    """Issue 13, item 13: a full disk left a partial line that the next append buried mid-ledger."""
    disk = tmp_path / "disk"
    disk.mkdir()
    child = [sys.executable, "-c", _FULL_DISK_CHILD, str(disk / "l.jsonl"), how, str(room)]
    if how == "full tmpfs":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
        child = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                 "--size", str(64 * 1024), "--tmpfs", str(disk), "--", *child]
    done = subprocess.run(child, capture_output=True, text=True, timeout=120, check=False)
    if how == "full tmpfs" and done.returncode != 0 and done.stderr.startswith("bwrap:"):
        pytest.skip(f"bubblewrap cannot mount a tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    error = "File too large" if how == "size limit" else "No space left on device"
    assert outcome["message"] == f"{disk / 'l.jsonl'}: cannot append to the ledger: {error}; the ledger is as it was"
    assert outcome["unchanged"] and outcome["verdicts"] == ["rejected", "confirmed"]


def test_a_complete_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(json.dumps(record(verdict="rejected")))  # a hand edit
    append_record(ledger, record(verdict="confirmed"))
    read = read_ledger(ledger)
    assert [r["verdict"] for r in read.records] == ["rejected", "confirmed"] and read.problems == []


def test_non_finite_numbers_are_written_as_null_and_paths_as_text(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    append_record(ledger, {"fitted": math.nan, "errors": [1.0, math.inf, -math.inf], "claim_file": tmp_path / "c.py"})
    assert read_ledger(ledger).records == [{"fitted": None, "errors": [1.0, None, None], "claim_file": str(tmp_path / "c.py")}]
    assert b"NaN" not in ledger.read_bytes() and b"Infinity" not in ledger.read_bytes()


def test_a_lone_surrogate_round_trips(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    append_record(ledger, {"text": "bad byte \udcff here"})
    assert read_ledger(ledger).records == [{"text": "bad byte \udcff here"}]


def test_a_ledger_in_a_missing_folder_is_an_error_naming_the_file(tmp_path: Path) -> None:
    ledger = tmp_path / "no" / "such" / "l.jsonl"
    with pytest.raises(PhysverifyError, match=str(ledger)):
        append_record(ledger, record())


def test_a_folder_in_place_of_the_ledger_is_an_error_for_writer_and_reader(tmp_path: Path) -> None:
    with pytest.raises(PhysverifyError, match="cannot open the ledger"):
        append_record(tmp_path, record())
    with pytest.raises(PhysverifyError, match="cannot read the ledger"):
        read_ledger(tmp_path)


@pytest.mark.parametrize("kind", ["FIFO", "device"])
def test_a_fifo_or_a_device_in_place_of_the_ledger_is_an_error_at_once(tmp_path: Path, kind: str) -> None:
    """Issue 13: a repository's ledger that is a FIFO waited for a writer for ever; /dev/zero never ended."""
    ledger = tmp_path / "l.jsonl"
    if kind == "FIFO":
        os.mkfifo(ledger)
    else:
        ledger.symlink_to("/dev/zero")
    what = "a FIFO" if kind == "FIFO" else "a device or socket"
    code = ("import sys; from pathlib import Path; from physverify.errors import PhysverifyError\n"
            "from physverify.gate.ledger import append_record, read_ledger\n"
            "for act in (lambda: read_ledger(Path(sys.argv[1])), lambda: append_record(Path(sys.argv[1]), {})):\n"
            "    try:\n        act()\n    except PhysverifyError as exc:\n        print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(ledger)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stdout.splitlines() == [
        f"{ledger}: cannot read the ledger: it is {what}, not a regular file",
        f"{ledger}: cannot append to the ledger: it is {what}, not a regular file",
    ], done.stderr


@FUZZ
@given(st.lists(json_records, max_size=6))
def test_write_then_read_round_trips_any_records(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    ledger = tmp_path / "roundtrip.jsonl"
    ledger.unlink(missing_ok=True)
    for item in records:
        append_record(ledger, item)
    assert read_ledger(ledger) == type(read_ledger(ledger))(records, [])


# --- reading ------------------------------------------------------------------------------
def test_a_missing_ledger_reads_as_empty(tmp_path: Path) -> None:
    read = read_ledger(tmp_path / "none.jsonl")
    assert read.records == [] and read.problems == []


def is_garbage(line: bytes) -> bool:
    try:
        return line.strip() != b"" and not isinstance(json.loads(line.decode("utf-8")), dict)
    except (ValueError, UnicodeDecodeError):
        return True


garbage_lines = (st.text().map(lambda s: s.encode("utf-8")) | st.binary()).map(lambda b: b.replace(b"\n", b" ")).filter(is_garbage)


@FUZZ
@given(
    st.lists(st.one_of(json_records.map(lambda r: ("good", r)), garbage_lines.map(lambda g: ("bad", g))), max_size=10),
    st.booleans(),
    st.one_of(st.none(), st.tuples(json_records, st.floats(min_value=0, max_value=1, exclude_max=True))),
)
def test_garbage_lines_leave_the_good_lines_in_order_and_are_reported_by_number(
    tmp_path: Path, lines: list[tuple[str, Any]], bom: bool, torn: tuple[dict[str, Any], float] | None
) -> None:
    """Also with an editor's byte order mark in front and a last line cut off mid-write (issue 13, item 12)."""
    ledger = tmp_path / "mixed.jsonl"
    data = b"".join(json.dumps(v).encode() + b"\n" if k == "good" else v + b"\n" for k, v in lines)
    if torn is not None:  # a proper, non-empty prefix of a JSON object is never complete JSON
        whole = json.dumps(torn[0]).encode()
        data += whole[: 1 + int(torn[1] * (len(whole) - 1))]
    ledger.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    for read in (read_ledger(ledger), parse_ledger(ledger.read_bytes(), str(ledger))):
        assert read.records == [v for k, v in lines if k == "good"]
        bad_numbers = [n for n, (k, _) in enumerate(lines, start=1) if k == "bad"]
        bad_numbers += [len(lines) + 1] if torn is not None else []
        assert [int(p.removeprefix(f"{ledger}:").split(":")[0]) for p in read.problems] == bad_numbers


def test_a_byte_order_mark_in_front_of_the_ledger_keeps_the_first_line(tmp_path: Path) -> None:
    """Issue 13, item 12: an editor's BOM made the first line unreadable, so its claim lost its baseline."""
    ledger = tmp_path / "l.jsonl"
    ledger.write_bytes(b"\xef\xbb\xbf" + json.dumps(record(verdict="rejected")).encode() + b"\n")
    assert read_ledger(ledger) == parse_ledger(ledger.read_bytes(), str(ledger))
    assert [r["verdict"] for r in read_ledger(ledger).records] == ["rejected"] and read_ledger(ledger).problems == []
    append_record(ledger, record(verdict="confirmed"))
    assert [r["verdict"] for r in read_ledger(ledger).records] == ["rejected", "confirmed"]


# --- keys ---------------------------------------------------------------------------------
def test_the_latest_record_of_each_claim_wins_and_keys_are_normalised() -> None:
    records = [
        record("claims/a.py", "confirmed"),
        record("claims/b.py", "rejected"),
        record("./claims/a.py", "rejected"),
        record("/elsewhere/claims/a.py", "not decidable", claim_key="claims/a.py"),
        {"verdict": "rejected"},  # no claim at all: not counted
    ]
    latest = latest_by_claim(records)
    assert {key: r["verdict"] for key, r in latest.items()} == {"claims/a.py": "not decidable", "claims/b.py": "rejected"}


# --- ledger log ---------------------------------------------------------------------------
def test_log_rows_give_one_claims_history_in_ledger_order() -> None:
    records = [
        record("claims/a.py", "confirmed", date="d1", repo_commit="aaa"),
        record("claims/b.py", "rejected", date="d2"),
        record("claims/a.py", "rejected", date="d3", repo_commit="bbb-dirty"),
    ]
    rows = log_rows(records, "./claims/a.py")
    assert [(r.date, r.verdict, r.repo_commit) for r in rows] == [("d1", "confirmed", "aaa"), ("d3", "rejected", "bbb-dirty")]
    assert len(log_rows(records, None)) == 3


def test_the_log_table_shortens_commits_and_trims_long_reasons() -> None:
    long_reason = "the control passed and 1 of 1 check failed: " + "x" * 200
    rows = log_rows([record(date="2026-01-01T00:00:00Z", repo_commit="0123456789abcdef0123-dirty", reason=long_reason)], None)
    text = render_log(LogResult(rows, [], None))
    header, line = text.splitlines()
    assert header.split() == ["date", "verdict", "commit", "claim", "reason"]
    assert "0123456789ab-dirty" in line and line.endswith("...") and len(line) < 200
    assert render_log(LogResult([], [], "claims/z.py")) == "no ledger lines for claims/z.py"


# --- the latest line per claim, streamed (issue 21, item 11) -------------------------------
keys = st.sampled_from(["claims/a.py", "claims/b.py", "./claims/a.py", "claims/é.py", ""])
streamed_lines = st.one_of(
    st.builds(lambda k, v, n: json.dumps({"ledger_version": 1, "claim_key": k, "verdict": v, "n": n},
                                         ensure_ascii=False).encode(), keys, st.sampled_from(["confirmed", "rejected"]),
              st.integers(0, 9)),
    st.builds(lambda k: json.dumps({"claim_file": k, "verdict": "rejected"}).encode(), keys),
    st.builds(lambda k, j: ('{"ledger_version": 1, "\\"claim_key": "%s", "claim_file": "claims/c.py", "verdict": "x"}'
                            % k).encode() if j else ('{"control": {"claim_key": "%s"}, "claim_file": "claims/d.py", '
                                                     '"verdict": "y"}' % k).encode(), keys, st.booleans()),
    st.builds(lambda k: b'{"claim_key": "' + k.encode() + b'", "verdict": "bad\xff"}', keys),
    st.builds(lambda k: b'{"claim_key": "' + k.encode() + b'", "verdict": broken}', keys),
    st.builds(lambda k: b'{"claim_key": "' + k.encode() + b'", "claim_key": "claims/z.py", "verdict": "twice"}', keys),
    garbage_lines,
)


@FUZZ
@given(st.lists(streamed_lines, max_size=12), st.integers(1, 64), st.booleans())
def test_the_streamed_latest_lines_are_those_of_the_full_reader(lines: list[bytes], size: int, bom: bool) -> None:
    """Hand-made and hostile lines among physverify's: the shortcut never changes which line is a claim's latest."""
    from physverify.gate.ledger import latest_by_claim, latest_of_chunks

    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if lines and size % 2 else b"")
    full = parse_ledger(data, "L")
    streamed = latest_of_chunks(lambda: [data[i:i + size] for i in range(0, len(data), size)], "L")
    assert streamed.latest == latest_by_claim(full.records)
    assert set(streamed.problems) <= set(full.problems)


def test_parse_ledger_names_problems_after_the_given_source() -> None:
    read = parse_ledger(b'{"verdict": "rejected"}\nnot json\n', "claims/l.jsonl@HEAD~1")
    assert read.records == [{"verdict": "rejected"}]
    assert len(read.problems) == 1 and read.problems[0].startswith("claims/l.jsonl@HEAD~1:2: not valid JSON")


def test_records_appended_together_land_in_order_after_a_torn_line_or_not_at_all(tmp_path: Path) -> None:
    """replay appends its lines in one locked write and one fsync (issue 19); all of them, or none."""
    path = tmp_path / "confirm_ledger.jsonl"
    path.write_bytes(b'{"claim_key": "a.py", "verdict": "confirmed"}\n{"claim_key": "b.py", "verd')  # torn
    records = [{"claim_key": f"c{i}.py", "verdict": "rejected"} for i in range(3)]
    append_records(path, records)
    lines = path.read_bytes().split(b"\n")
    assert lines[0] == b'{"claim_key": "a.py", "verdict": "confirmed"}'  # the torn line removed, the whole one kept
    assert [json.loads(line) for line in lines[1:4]] == records and lines[4] == b""
    before = path.read_bytes()
    with pytest.raises(TypeError):
        append_records(path, [{"claim_key": "d.py"}, {"claim_key": "e.py", "bad": object()}])
    assert path.read_bytes() == before  # the first record was not written without the second
    append_records(tmp_path / "never.jsonl", [])
    assert not (tmp_path / "never.jsonl").exists()
