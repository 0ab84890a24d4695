"""Any text a repository holds gives findings or notes, never an exception: the readers meet hostile numbers
(huge, tiny, infinite, irrational, divisions by zero, powers) in every shape the rules read."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from physverify.scan.reading import read

_PLAIN = st.one_of(
    st.integers(-10**30, 10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e308", "1e-320", "0.3333333333333", "float('inf')", "float('nan')", "-0.0", "0"]),
)
NUMBER = st.recursive(_PLAIN, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "**"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    inner.map(lambda x: f"np.sqrt({x})"),
    st.tuples(inner, inner).map(lambda t: f"Fraction({t[0]}, {t[1]})"),
), max_leaves=4)

TEMPLATES = [
    "A = [[{0}, {1}], [{2}, {3}]]\nb = [{4}, {5}]\nc = [{0}, {2}]\n",
    "class RK4:\n    order = 4\n    A = [[], [{0}], [{1}, {2}]]\n    b = [{3}, {4}, {5}]\n    b_hat = [{0}, {1}, {2}]\n",
    "r = {0}\nA = [[{1}, r], [r, {2}]]\nb = [{3}, {4}]\nc = [r, {5}]\n",
    "x = np.linspace({0}, {1}, {2})\ndx = ({1} - {0}) / {3}\ny = np.arange({0}, {1}, {4})\nh = ({1} - {0}) / (len(y) - 1)\n",
    "G = {0}\ng = {1}\nhbar = {2} * 10**{3}\nc = -{4}\nk_B: float = {5}\n",
    "def rk4_step(f, t, y, h):\n    k1 = f(t, y)\n    k2 = f(t + {0}*h, y + {1}*h*k1)\n"
    "    k3 = f(t + {2}*h, y + h*({3}*k1 + {4}*k2))\n    return y + h*({5}*k1 + {0}*k2 + {1}*k3)\n",
    "def heun(f, t, y, h):\n    k1 = h * f(t, y)\n    k2 = h * f(t + h / {0}, y + k1 / {1})\n    y += ({2}*k1 + {3}*k2) ** {4}\n"
    "    return y\n",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TEMPLATES), st.lists(NUMBER, min_size=6, max_size=6))
# A grid's length as a float beside a spacing's exact Fraction too large for any float.
@example(TEMPLATES[3], ["0", "0", "1.0000000000000002e+16", "Fraction(1, 1e-320)", "0", "0"])
def test_hostile_numbers_in_every_shape_give_findings_or_nothing_never_an_exception(template: str,
                                                                                     numbers: list[str]) -> None:
    source = "import numpy as np\nfrom fractions import Fraction\n" + template.format(*numbers)
    findings, notes = read(source.encode(), "x.py")
    assert all(f.file == "x.py" and f.line >= 1 for f in findings) and len(notes) <= 1


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_give_findings_or_one_note(data: bytes) -> None:
    findings, notes = read(data, "x.py")
    assert len(notes) <= 1 and (not notes or not findings)
