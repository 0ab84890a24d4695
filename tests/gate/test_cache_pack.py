"""A checkout's file of readings reuses the entries ``flush`` encoded (issue 19): the same bytes as encoding it whole.

With an empty cache a run writes each of 10,000 readings twice, into its shard and into the
checkout's file; the second now takes the first's text when the reading is the same. The
files must be byte for byte what one ``json.dumps`` of each gives, for any readings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physverify import __version__
from physverify.gate import cache
from physverify.gate.claim import StaticReading

ROOT = Path("/some/checkout/\u00e9t\u00e9")


def pack_as_one_dumps(root: Path, readings: dict[str, tuple[str, StaticReading]]) -> bytes:
    """The file as save_pack wrote it before: one json.dumps of the whole."""
    pack = {"format": cache.FORMAT, "pack": cache.PACK_FORMAT, "physverify": __version__, "root": str(root),
            "entries": {key: cache._packed_fields(key, sha, reading) for key, (sha, reading) in readings.items()}}
    return json.dumps(pack, allow_nan=True, separators=(",", ":")).encode("ascii")


def shard_as_one_dumps(prefix: str, entries: dict[str, list[Any]]) -> dict[str, Any]:
    return {"format": cache.FORMAT, "shard": cache.SHARD_FORMAT, "physverify": __version__, "prefix": prefix,
            "entries": entries}


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(["\ud800", "\"", "\\", "\n"]),
                max_size=12)
scalars = st.one_of(texts, st.integers(-10**30, 10**30), st.floats(allow_nan=True, allow_infinity=True))
readings = st.builds(
    StaticReading,
    st.booleans(),
    st.one_of(st.none(), st.dictionaries(texts, scalars, max_size=5)),
    st.one_of(st.none(), texts),
    st.lists(st.tuples(st.integers(0, 3), texts, st.lists(texts, max_size=3).map(tuple)), max_size=3).map(tuple),
    st.lists(texts, max_size=3).map(tuple),
)
keys = st.integers(0, 2**160 - 1).map(lambda n: f"{n:040x}")
runs = st.dictionaries(keys, st.tuples(st.sampled_from(["ab" * 32, "cd" * 32]), readings), min_size=0, max_size=12)


def written(store: cache.Cache, root: Path) -> bytes:
    return store._pack_path(root).read_bytes()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs, st.sets(st.integers(0, 11), max_size=4), st.booleans())
def test_the_files_are_what_one_dumps_of_each_gives(tmp_path_factory: Any, run: dict[str, tuple[str, StaticReading]],
                                                    changed: set[int], flushed: bool) -> None:
    """Also when some readings given to save_pack differ from those put (the pack then holds save_pack's)."""
    store = cache.Cache(tmp_path_factory.mktemp("c"))
    for key, (sha, reading) in run.items():
        store.put(key, sha, reading)
    if flushed:
        store.flush()
        for prefix in {key[:2] for key in run}:
            on_disk = json.loads(store._shard_path(prefix).read_bytes())
            assert on_disk == shard_as_one_dumps(prefix, on_disk["entries"])  # the header, and nothing else
            for key, raw in on_disk["entries"].items():
                sha, reading = run[key]
                assert json.dumps(raw, allow_nan=True, separators=(",", ":")) == json.dumps(
                    [raw[0], *cache._packed_fields(key, sha, reading)], allow_nan=True, separators=(",", ":"))
    given_readings = {key: (sha, StaticReading(not reading.binds, reading.claim, reading.problem, reading.imports,
                                               reading.notes) if i in changed else reading)
                      for i, (key, (sha, reading)) in enumerate(run.items())}
    store.save_pack(ROOT, given_readings)
    assert written(store, ROOT) == pack_as_one_dumps(ROOT, given_readings)


def test_a_shard_file_is_byte_for_byte_one_dumps_of_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = cache.Cache(tmp_path / "c")
    reading = StaticReading(True, {"file": "m\u00e9.py", "line": 3, "x": float("nan")}, None, ((0, "m", ("a",)),), ("n",))
    keys = [f"ab{i:038x}" for i in range(3)]
    for i, key in enumerate(keys):
        monkeypatch.setattr(cache, "_clock", lambda i=i: 10**18 + i)
        store.put(key, "ef" * 32, reading)
    store.flush()
    data = store._shard_path("ab").read_bytes()
    entries = {key: [10**18 + i, *cache._packed_fields(key, "ef" * 32, reading)] for i, key in reversed(list(enumerate(keys)))}
    assert data == json.dumps(shard_as_one_dumps("ab", entries), allow_nan=True, separators=(",", ":")).encode("ascii")


def test_a_reading_json_cannot_hold_leaves_the_pack_unwritten_as_before(tmp_path: Path) -> None:
    store = cache.Cache(tmp_path / "c")
    bad = StaticReading(True, {"x": 10**5000}, None, (), ())  # an integer too long for str()
    store.save_pack(ROOT, {"ab" * 20: ("cd" * 32, bad)})
    assert not store._pack_path(ROOT).exists()
