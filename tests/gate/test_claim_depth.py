"""claim.py does not walk a short text's tree for the depth bound (issue 19): why that is exact.

A text of fewer than ``claim.SHALLOW_BELOW`` characters is taken to be no deeper than
``claim.MAX_NESTING`` levels without a walk. That holds because each level of a tree takes
a character of the text, but for the module, the statement and a last ctx or operator;
these tests hold every construct that nests to it, and show that the shortest text that
does pass the bound is longer than the shortcut's limit, and still refused.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest
from support.nesting import UNBRACKETED
from test_specscan_walk import depth_of

from physverify.gate import claim

# The constructs that nest at the fewest characters per level, brackets included (the
# tokenizer stops those at 200 open brackets, so they are checked below that).
BRACKETED: dict[str, Callable[[int], str]] = {
    "unary operators mixed": lambda n: "-+~" * (n // 3) + "-" * (n % 3) + "x",
    "lists": lambda n: "[" * n + "]" * n,
    "sets": lambda n: "{" * n + "1" + "}" * n,
    "starred in lists": lambda n: "[*" * n + "x" + "]" * n,
    "starred unary in lists": lambda n: "[*-" * n + "x" + "]" * n,
    "slices": lambda n: "a[" * n + "1:" + "]" * n,
    "keyword calls": lambda n: "f(a=" * n + "x" + ")" * n,
    "f-string format specs": lambda n: "-" * n + "f'{x:{y}}'",
    "match sequences": lambda n: "match x:\n case " + "[" * n + "1" + "]" * n + ":\n  pass",
    "match values": lambda n: "match x:\n case " + "[" * n + "-1" + "]" * n + ":\n  pass",
    "annotations": lambda n: "def f(a:" + "[" * n + "x" + "]" * n + "): pass",
}
CONSTRUCTS = {**UNBRACKETED, **BRACKETED}


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_no_construct_nests_more_than_three_levels_beyond_its_length(name: str) -> None:
    limit = 190 if name in BRACKETED else 1200
    for n in (1, 2, 3, 10, 50, limit):
        source = CONSTRUCTS[name](n)
        tree = ast.parse(source)
        assert depth_of(tree) <= len(source) + 3, (n, depth_of(tree), len(source))


def test_the_deepest_text_below_the_limit_is_within_the_bound_and_the_shortest_past_it_is_refused() -> None:
    # a chain of unary minus signs is the deepest per character: one level each, and 3 more
    below = "-" * (claim.SHALLOW_BELOW - 2) + "x"
    assert len(below) == claim.SHALLOW_BELOW - 1
    assert depth_of(claim._parse_bounded(below, "<t>")) == len(below) + 3 <= claim.MAX_NESTING
    past = "-" * (claim.MAX_NESTING - 3) + "x"  # MAX_NESTING + 1 levels: the shortest text that passes the bound
    assert depth_of(ast.parse(past)) == claim.MAX_NESTING + 1
    assert len(past) >= claim.SHALLOW_BELOW  # so the shortcut never takes it: it is walked, and refused
    with pytest.raises(RecursionError, match="more than 2,000 levels"):
        claim._parse_bounded(past, "<t>")


def test_bytes_are_always_walked() -> None:
    """A coding line decides how many characters bytes are, so their length vouches for nothing."""
    deep = ("-" * (claim.MAX_NESTING - 2) + "x").encode("ascii")
    with pytest.raises(RecursionError):
        claim.parse_module(deep, "<t>")


def test_a_deep_claim_file_is_still_a_load_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "deep.py"
    path.write_text('CLAIM = {}\nx = ' + "-" * claim.MAX_NESTING + "1\n", encoding="utf-8")
    reading = claim.read(path)
    assert reading.binds
    assert reading.problem == f"{path}: is nested too deeply to be read (more than 2,000 levels of nesting)"
