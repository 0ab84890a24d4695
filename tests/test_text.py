"""physverify.text: strings from claims made encodable (clean) and inert on a line (visible, dumps). Issue 13."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from physverify.text import clean, clean_str, dumps, json_safe, visible

anything = st.text(st.characters(exclude_categories=()))
# Text that holds the runner's legacy command prefix "##[" often, in every overlap ("###[", "##[##[").
with_hashes = st.lists(st.one_of(st.sampled_from(["#", "##", "[", "##[", "\n", "\x1b", "]"]), anything), max_size=8).map("".join)


def test_a_lone_surrogate_becomes_its_escape_and_nothing_else_changes() -> None:
    assert clean_str("a\ud800b\udcff\U0001f600\x1b") == "a\\ud800b\\udcff\U0001f600\x1b"
    assert clean({"k\udfff": ["\ud800", ("x",), 3, None]}) == {"k\\udfff": ["\\ud800", ["x"], 3, None]}


def test_visible_shows_controls_bidi_and_line_breaks_as_escapes() -> None:
    assert visible("a\nb\r\tc\x00\x1b[2J\x7f\x85\x9b\u2028\u202e\u2066\ud800\ufffe") == (
        "a\\nb\\r\\tc\\x00\\x1b[2J\\x7f\\x85\\x9b\\u2028\\u202e\\u2066\\ud800\\ufffe"
    )
    assert visible("keep\nthis\x1b", keep="\n") == "keep\nthis\\x1b"
    assert visible("µ → ∂u/∂t, 日本, \U0001f600") == "µ → ∂u/∂t, 日本, \U0001f600"


@given(anything)
def test_visible_text_is_one_encodable_line(text: str) -> None:
    shown = visible(text)
    shown.encode("utf-8")
    assert shown.splitlines() in ([], [shown])
    assert not [c for c in shown if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u061c\u200e\u200f\u202a\u202b"
                "\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]


@given(st.dictionaries(anything, st.lists(anything, max_size=3), max_size=3))
def test_dumps_is_one_line_of_utf8_json_that_reads_back_to_the_cleaned_value(value: dict[str, list[str]]) -> None:
    text = dumps(value)
    text.encode("utf-8")
    assert text.splitlines() == [text]
    assert json.loads(text) == clean(value)


def test_clean_takes_a_result_nested_deeper_than_the_recursion_limit() -> None:
    deep: object = "\ud800"
    for _ in range(5000):
        deep = [deep]
    cleaned = clean({"control": deep})["control"]
    for _ in range(5000):
        cleaned = cleaned[0]
    assert cleaned == "\\ud800"


def test_the_runners_legacy_command_prefix_is_never_shown_whole() -> None:
    """actions/runner reads "##[name]data" anywhere in a log line (ActionCommand.TryParse): "##[stop-commands]t"
    in a label printed mid-line switched every later workflow command of the step off."""
    assert visible("x ##[stop-commands]tok") == "x #\\x23[stop-commands]tok"
    assert visible("###[error]a ##[##[") == "##\\x23[error]a #\\x23[#\\x23["
    assert "##[" not in dumps({"##[k": "##[error]forged"})
    assert json.loads(dumps({"##[k": "##[error]forged"})) == {"##[k": "##[error]forged"}


@given(with_hashes)
def test_no_shown_or_dumped_text_holds_the_legacy_prefix(text: str) -> None:
    for keep in ("", "\n", "\r\n"):
        assert "##[" not in visible(text, keep=keep)
    assert "##[" not in dumps([text]) and json.loads(dumps([text])) == clean([text])


@given(st.dictionaries(anything, with_hashes, max_size=3))
def test_json_safe_reads_back_to_the_same_value_with_no_line_separator_bidi_mark_or_prefix(value: dict[str, str]) -> None:
    body = json_safe(json.dumps(clean(value), ensure_ascii=False))
    assert json.loads(body) == clean(value)
    assert body.splitlines() == [body] and "##[" not in body
    assert not [c for c in body if 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\u202e\u2066\u200f"]
