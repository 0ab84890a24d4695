"""Python constructs that nest as deep as one likes: the hostile trees of issue 13, item 7, and of the depth bound."""

from __future__ import annotations

from collections.abc import Callable

# Each nests without brackets, so the tokenizer's limit of 200 open brackets does not stop it:
# thousands of levels parse, and a recursive walk of the tree fails (issue 13, item 7).
# ``n`` is the number of links; the tree's depth grows with it.
UNBRACKETED: dict[str, Callable[[int], str]] = {
    "attribute chain": lambda n: "a" + ".b" * n,
    "additions": lambda n: "+".join(["1"] * (n + 1)),
    "unary minus": lambda n: "-" * n + "1",
    "calls": lambda n: "f" + "()" * n,
    "subscripts": lambda n: "a" + "[0]" * n,
    "not": lambda n: "not " * n + "x",
    "conditionals": lambda n: "1 if c else " * n + "0",
    "lambdas": lambda n: "lambda: " * n + "0",
}
