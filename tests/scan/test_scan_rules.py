"""grid-spacing, constant and inverse-pair: found where they should be, silent on the look-alikes."""

from __future__ import annotations

import ast

import pytest

from physverify.scan import constants
from physverify.scan.reading import findings_in


def scan(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in findings_in(ast.parse(source), "x.py")]


def messages(source: str) -> list[str]:
    return [f.message for f in findings_in(ast.parse(source), "x.py")]


# --- grid-spacing -----------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "x = np.linspace(a, b, N)\ndx = (b - a) / N\n",
    "x = np.linspace(0, L, n)\nh = L / n\n",
    "x = np.linspace(0.0, 2*np.pi, N, endpoint=True)\ndx = 2*np.pi/N\n",
    "x = np.linspace(0, L, N, endpoint=False)\ndx = L / (N - 1)\n",
    "x = np.arange(a, b, step)\ndx = (b - a) / (len(x) - 1)\n",
    "def grid(N):\n    x = numpy.linspace(-1, 1, num=N)\n    dx = 2 / N\n    return x, dx\n",
])
def test_a_spacing_that_does_not_match_its_grid_is_found(source: str) -> None:
    assert [rule for _, rule in scan(source)] == ["grid-spacing"]


@pytest.mark.parametrize("source", [
    "x = np.linspace(a, b, N)\ndx = (b - a) / (N - 1)\n",
    "x = np.linspace(0, L, N + 1)\ndx = L / N\n",
    "x = np.linspace(0, L, N, endpoint=False)\ndx = L / N\n",  # periodic: right
    "x = np.linspace(0, 2*np.pi, N, endpoint=False)\ndk = 2*np.pi / N\n",
    "x = np.arange(a, b, dx)\nh = (b - a) / len(x)\n",
    "x = np.linspace(a, b, N)\ndx = x[1] - x[0]\n",
    "x = np.linspace(a, b, N)\nratio = (c - a) / N\n",  # another length: not this grid's spacing
    "x = np.linspace(a, b, N, endpoint=periodic)\ndx = (b - a) / N\n",  # decided at run time
])
def test_matching_spacings_and_look_alikes_are_silent(source: str) -> None:
    assert scan(source) == []


def test_a_grid_between_two_different_square_roots_is_silent_not_a_crash() -> None:
    """sqrt(3) - sqrt(2) has no exact form of one root: the rule says nothing rather than raising."""
    source = "x = np.linspace(np.sqrt(2), np.sqrt(3), 0)\ndx = (np.sqrt(3) - np.sqrt(2)) / 0\n"
    assert scan(source) == []


def test_the_grid_message_says_what_the_spacing_should_be() -> None:
    (message,) = messages("x = np.linspace(a, b, N)\ndx = (b - a) / N\n")
    assert "includes both end points" in message and "(b - a)/(N - 1)" in message and "numpy.linspace" in message


# --- constant ---------------------------------------------------------------------------
@pytest.mark.parametrize(("source", "why"), [
    ("G = 6.764e-11\n", "swapped"),
    ("G = 6.674e-10\n", "off by one"),
    ("g = 9.18\n", "swapped"),
    ("g = 9.71\n", "differs"),
    ("hbar = 1.0456e-34\n", "swapped"),
    ("k_B = 1.83e-23\n", "swapped"),
    ("m_e = 9.019e-31\n", "swapped"),
    ("m_e = 9.209e-31\n", "differs"),
    ("N_A = 6.202e23\n", "swapped"),
    ("R = 8.413\n", "differs"),
    ("c = 2.998e7\n", "off by one"),
    ("class Units:\n    eps0 = 8.845e-12\n", "swapped"),
    ("def f():\n    G: float = 6.674e-12\n    return G\n", "off by one"),
])
def test_a_near_miss_of_a_constant_is_found(source: str, why: str) -> None:
    (message,) = messages(source)
    assert why in message and "CODATA 2022 via scipy.constants" in message


@pytest.mark.parametrize("source", [
    "c = 3e8\n", "c = 299792458\n", "g = 9.81\n", "g = 9.8\n", "g = 10.0\n", "G = 6.674e-11\n", "G = 6.67e-11\n",
    "G = 6.67408e-11\n", "G = 6.673e-11\n",  # CODATA 2014 and 1998: older values, within ten uncertainties
    "G = 1\n", "G = 1.0\n",  # a unit system
    "h = 0.01\n", "e = 2.718\n", "sigma = 0.05\n", "R = 8.0\n", "c = 0.5\n",  # other quantities by those names
    "c = 2.998e10\n", "G = 6.674e-8\n",  # cgs: a unit change, not a typo
    "hbar = 1.0546e-34\n", "k_B = 1.380649e-23\n", "e = 1.602e-19\n", "m_p = 1.673e-27\n", "mu_0 = 1.2566e-6\n",
    "speed = 2.9e8\n",  # not a constant's name
])
def test_rounded_values_unit_systems_and_other_quantities_are_silent(source: str) -> None:
    assert scan(source) == []


def test_constants_come_from_scipy() -> None:
    import scipy.constants

    assert constants.codata("Newtonian constant of gravitation") == scipy.constants.G
    assert constants.codata("standard acceleration of gravity") == scipy.constants.g


# --- inverse-pair -----------------------------------------------------------------------
@pytest.mark.parametrize("source", [
    "def cart2sph(x): ...\ndef sph2cart(x): ...\n",
    "def to_lab(x): ...\ndef from_lab(x): ...\n",
    "def encode(x): ...\ndef decode(x): ...\n",
    "class T:\n    def forward(self, x): ...\n    def inverse(self, x): ...\n",
    "def xyz_to_latlon(p): ...\ndef latlon_to_xyz(p): ...\n",
])
def test_functions_that_look_like_inverses_are_a_suggestion(source: str) -> None:
    found = findings_in(ast.parse(source), "x.py")
    assert [f.rule for f in found] == ["inverse-pair"] and found[0].informational
    assert "worth a round-trip claim" in found[0].message


@pytest.mark.parametrize("source", [
    "def to_lab(x): ...\n",
    "def forward_euler(f): ...\ndef backward_euler(f): ...\n",  # two schemes, not inverses
    "def top(x): ...\ndef fromage(x): ...\n",
    "def f():\n    def encode(x): ...\n    def decode(x): ...\n",  # local helpers: not the module's interface
    "class A:\n    def encode(self): ...\nclass B:\n    def decode(self): ...\n",  # different owners
])
def test_single_functions_and_near_names_are_silent(source: str) -> None:
    assert scan(source) == []


def test_a_grid_with_a_long_decimal_is_read_in_floats() -> None:
    source = "x = np.linspace(0, 6.43369157032015e-09, N)\ndx = 6.43369157032015e-09 / N\n"
    assert [rule for _, rule in scan(source)] == ["grid-spacing"]
