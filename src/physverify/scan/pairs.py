"""The inverse-pair rule: two functions of one module or class that look like each other's inverse.

to_x/from_x, x_to_y/y_to_x, cart2sph/sph2cart, forward/inverse, encode/decode and their
kin. Not a defect: a suggestion that a round trip g(f(x)) == x is a cheap claim (the
``identity`` kind) which catches a sign or a factor that one side lost.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from physverify.scan.findings import Finding

_OPPOSITES = (("forward", "inverse"), ("forward", "backward"), ("encode", "decode"), ("compress", "decompress"),
              ("serialize", "deserialize"), ("pack", "unpack"), ("to", "from"), ("push", "pull"),
              ("transform", "inverse_transform"), ("fft", "ifft"), ("rfft", "irfft"), ("dumps", "loads"),
              ("encrypt", "decrypt"), ("scatter", "gather"), ("restrict", "prolong"), ("flatten", "unflatten"))
_ARROW = re.compile(r"^(?P<pre>.*?)(?P<a>[a-z0-9]+?)(?P<sep>2|_to_)(?P<b>[a-z0-9]+)(?P<post>.*)$")
REFERENCE = "a round trip g(f(x)) == x (physverify confirm init --kind identity)"


# (the word as a regex, its opposite), both ways round, compiled once: a scan asks every function's name
_SWAPS = tuple((re.compile(rf"(^|_){x}(_|$)"), y) for one, other in _OPPOSITES for x, y in ((one, other), (other, one)))


def _partner_names(name: str) -> set[str]:
    low = name.lower()
    partners: set[str] = set()
    for word, opposite in _SWAPS:
        if word.search(low):
            partners.add(word.sub(rf"\g<1>{opposite}\g<2>", low, count=1))
    match = _ARROW.match(low)
    if match and match.group("a") != match.group("b"):
        partners.add(f"{match.group('pre')}{match.group('b')}{match.group('sep')}{match.group('a')}{match.group('post')}")
    partners.discard(low)
    if "euler" in low or "diff" in low:  # forward/backward Euler or differences: two schemes, not inverses
        partners = {p for p in partners if "backward" not in p and "forward" not in p}
    return partners


def check(body: Sequence[ast.stmt], file: str, owner: str = "") -> list[Finding]:
    """One finding per pair of functions defined in one body that look like inverses, at the first one's line."""
    functions = {node.name.lower(): node for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found, seen = [], set()
    for low, node in functions.items():
        for partner in sorted(_partner_names(low)):
            other = functions.get(partner)
            if other is None or frozenset((low, partner)) in seen:
                continue
            seen.add(frozenset((low, partner)))
            first, second = sorted((node, other), key=lambda n: n.lineno)
            where = f"{owner}." if owner else ""
            found.append(Finding("inverse-pair", file, first.lineno,
                                 f"{where}{first.name} (line {first.lineno}) and {where}{second.name} "
                                 f"(line {second.lineno}) look like inverses: worth a round-trip claim, "
                                 f"{REFERENCE}", name=f"{where}{first.name}", reference=REFERENCE))
    return found
