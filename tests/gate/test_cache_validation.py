"""cache._valid_packed, written as loops (issue 19: it checks 10,000 worker answers), accepts exactly what the
helper-per-field version accepted: the same reading, or None, for any value whatever.

A worker answer and an entry read from disk go through it; a poisoned one must never become
a reading, so the rule is compared with the one it replaced on generated values, hostile ones
included (bools where numbers go, subclasses of str and int, lists where tuples go, NaN).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from physverify.gate import cache
from physverify.gate.claim import StaticReading

KEY = "ab" * 20
SHA = "cd" * 32


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _claim_values(value: object) -> bool:
    if value is None:
        return True
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool) for k, v in value.items())


def _imports(value: object) -> tuple[Any, ...] | None:
    if not isinstance(value, list):
        return None
    found = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3):
            return None
        level, module, names = item
        if not (isinstance(level, int) and not isinstance(level, bool) and level >= 0 and isinstance(module, str)
                and _strings(names)):
            return None
        found.append((level, module, tuple(names)))
    return tuple(found)


def before(entry: object, key: str) -> tuple[str, StaticReading] | None:
    """The rule as it was: one helper per field."""
    if not (isinstance(entry, list) and len(entry) == 7 and entry[0] == key):
        return None
    _, sha256, binds, values, problem, listed, notes = entry
    if not (cache._is_hex(sha256, 64) and isinstance(binds, bool) and (problem is None or isinstance(problem, str))
            and _claim_values(values) and _strings(notes)):
        return None
    imports = _imports(listed)
    if imports is None:
        return None
    return sha256, StaticReading(binds, values, problem, imports, tuple(notes))


class Text(str):
    pass


class Number(int):
    pass


scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=4),
                    st.builds(Text, st.text(max_size=3)), st.builds(Number, st.integers(0, 3)), st.just(1j),
                    st.just(b"b"), st.just(()))
anything = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.one_of(st.text(max_size=3), st.integers(0, 3), st.booleans()), inner, max_size=4), max_leaves=10)
names = st.one_of(st.lists(st.one_of(st.text(max_size=3), st.builds(Text, st.text(max_size=2))), max_size=3),
                 st.lists(st.one_of(st.text(max_size=3), scalars), max_size=3), st.text(max_size=3), scalars)
import_items = st.one_of(
    st.tuples(st.one_of(st.integers(-1, 2), st.booleans(), st.builds(Number, st.integers(0, 2)), scalars),
              st.one_of(st.text(max_size=2), st.builds(Text, st.text(max_size=2)), scalars), names).map(list),
    st.lists(st.integers(0, 2), max_size=4), anything)
imports = st.one_of(st.lists(import_items, max_size=4), anything)
values = st.one_of(st.none(), st.dictionaries(st.one_of(st.text(max_size=5), st.builds(Text, st.text(max_size=2)),
                                                        st.integers(0, 2)), scalars, max_size=5),
                   st.dictionaries(st.text(max_size=3), st.one_of(st.text(max_size=3), st.integers(), st.floats()),
                                   max_size=4), anything)
notes = st.one_of(st.lists(st.text(max_size=3), max_size=3), st.lists(st.one_of(st.text(max_size=3), scalars), max_size=3),
                  anything)
GOOD = [KEY, SHA, True, {"file": "m.py", "line": 3, "x": 1.5}, None, [[0, "math", []], [1, "", ["a"]]], ["n"]]
# each field's values: random ones, and the near misses (a bool for a number, a string for a list) among them
FIELDS = [st.sampled_from([KEY, "ef" * 20, Text(KEY), 1]), st.sampled_from([SHA, "CD" * 32, SHA[:-1], 5, Text(SHA)]),
          st.one_of(st.booleans(), scalars),
          st.one_of(values, st.sampled_from([{"line": True}, {"a": "x", "b": False}, {"f": 1.5, "g": Number(2)},
                                             {"t": Text("x")}, {Text("k"): 1}, {"n": None}, {}])),
          st.one_of(st.none(), st.text(max_size=3), scalars),
          st.one_of(imports, st.sampled_from([[[True, "m", []]], [[0, "m", "ab"]], [[Number(1), Text("m"), [Text("a")]]],
                                              [[0, "m", ["a", 1]]], [[-1, "m", []]], [(0, "m", [])], [[0.0, "m", []]],
                                              []])),
          st.one_of(notes, st.sampled_from(["ab", ["a", None], [Text("a")], ("a",), []]))]


def _changed(changes: dict[int, object]) -> list[object]:
    entry: list[object] = list(GOOD)
    for at, value in changes.items():
        entry[at] = value
    return entry


# a good entry with one to three fields replaced (each field's own hostile values), or anything at all
entries = st.one_of(
    st.integers(0, 6).flatmap(lambda at: FIELDS[at].map(lambda value: _changed({at: value}))),
    st.tuples(*FIELDS).map(list),
    st.lists(st.integers(0, 6), min_size=2, max_size=3, unique=True).flatmap(
        lambda ats: st.tuples(*(FIELDS[at] for at in ats)).map(lambda found: _changed(dict(zip(ats, found))))),
    anything,
)


@settings(max_examples=800, deadline=None)
@given(entries)
def test_the_loops_accept_exactly_what_the_helpers_accepted(entry: object) -> None:
    assert cache._valid_packed(entry, KEY) == before(entry, KEY)


def test_a_plain_answer_is_accepted_and_each_poisoned_field_refused() -> None:
    good = list(GOOD)
    assert cache._valid_packed(good, KEY) == (SHA, StaticReading(True, {"file": "m.py", "line": 3, "x": 1.5}, None,
                                                                 ((0, "math", ()), (1, "", ("a",))), ("n",)))
    poisoned = [(3, {"line": True}), (3, {"file": ["m.py"]}), (3, {1: "x"}), (5, [[-1, "m", []]]), (5, [[True, "m", []]]),
                (5, [[0, "m", [1]]]), (5, [[0, "m"]]), (6, ["n", 2]), (6, "n"), (2, 1), (4, 0), (1, "cd" * 31 + "CD")]
    for at, value in poisoned:
        entry = list(good)
        entry[at] = value
        assert cache._valid_packed(entry, KEY) is None, (at, value)
