"""The constant rule: a literal bound to a constant's name that is near its CODATA value but not it.

The values are scipy.constants' (CODATA 2022 in SciPy 1.15 and later; the release's own
table otherwise). A literal is right when it is the constant rounded to the digits it
shows (c = 3e8, g = 9.81, G = 6.674e-11) or an older CODATA value (within 1e-4, or ten
standard uncertainties where that is more, as for G). It is a suspect when it misses by up
to 5e-2 beyond that and beyond its rounding, is off by one power
of ten, or shows two neighbouring digits swapped. A value far away is another quantity
that shares the name (G = 1 in units where it is one, h = 0.01 a step, e = 2.718), and
powers of ten of two or more are left alone: they are unit changes (cgs, km/s).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Sequence
from functools import lru_cache

from physverify.scan.findings import CODATA, Finding

# Names that mean a constant (exact spelling for one letter, lower-case otherwise) -> scipy.constants key.
_NAMES = {
    "G": "Newtonian constant of gravitation", "big_g": "Newtonian constant of gravitation",
    "grav_const": "Newtonian constant of gravitation", "gravitational_constant": "Newtonian constant of gravitation",
    "hbar": "reduced Planck constant", "h_bar": "reduced Planck constant",
    "h": "Planck constant", "planck": "Planck constant", "h_planck": "Planck constant",
    "c": "speed of light in vacuum", "c0": "speed of light in vacuum", "c_light": "speed of light in vacuum",
    "speed_of_light": "speed of light in vacuum",
    "k_b": "Boltzmann constant", "kb": "Boltzmann constant", "boltzmann": "Boltzmann constant",
    "e": "elementary charge", "q_e": "elementary charge", "qe": "elementary charge",
    "elementary_charge": "elementary charge",
    "m_e": "electron mass", "me": "electron mass", "electron_mass": "electron mass",
    "m_p": "proton mass", "mp": "proton mass", "proton_mass": "proton mass",
    "m_n": "neutron mass", "neutron_mass": "neutron mass",
    "n_a": "Avogadro constant", "na": "Avogadro constant", "avogadro": "Avogadro constant",
    "R": "molar gas constant", "r_gas": "molar gas constant", "gas_constant": "molar gas constant",
    "sigma": "Stefan-Boltzmann constant", "sigma_sb": "Stefan-Boltzmann constant",
    "stefan_boltzmann": "Stefan-Boltzmann constant",
    "epsilon_0": "vacuum electric permittivity", "epsilon0": "vacuum electric permittivity",
    "eps0": "vacuum electric permittivity", "eps_0": "vacuum electric permittivity",
    "mu_0": "vacuum mag. permeability", "mu0": "vacuum mag. permeability",
    "g": "standard acceleration of gravity", "g0": "standard acceleration of gravity",
    "g_0": "standard acceleration of gravity", "gravity": "standard acceleration of gravity",
    "a_0": "Bohr radius", "a0": "Bohr radius", "bohr_radius": "Bohr radius",
    "alpha_fs": "fine-structure constant", "fine_structure": "fine-structure constant",
}
LOW, HIGH = 1e-4, 5e-2


@lru_cache(maxsize=None)
def codata(key: str) -> float:
    """scipy.constants' value of ``key`` (imported on first use: a scan of files without constants never pays for it)."""
    from scipy.constants import physical_constants

    return float(physical_constants[key][0])


@lru_cache(maxsize=None)
def tolerance(key: str) -> float:
    """The relative difference that is still the constant: 1e-4, or ten standard uncertainties where G's is larger
    (the values of earlier CODATA adjustments, G = 6.673e-11 of 1998, lie within them)."""
    from scipy.constants import physical_constants

    value, _, uncertainty = physical_constants[key]
    return max(LOW, 10.0 * float(uncertainty) / abs(float(value)))


def constant_for(name: str) -> str | None:
    bare = name.lstrip("_")
    if len(bare) == 1:
        return _NAMES.get(bare)
    return _NAMES.get(bare.lower())


def _literal(node: ast.AST) -> tuple[float, str] | None:
    """A literal number and its digits as written (mantissa without sign, point or exponent)."""
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1.0, node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        value = float(node.value)
        return sign * value, _digits(repr(node.value))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.right, ast.BinOp) \
            and isinstance(node.right.op, ast.Pow):  # 6.674 * 10**-11
        mantissa, power = _literal(node.left), _literal(node.right.right)
        base = node.right.left
        if mantissa and power and isinstance(base, ast.Constant) and base.value == 10 and power[0].is_integer() \
                and abs(power[0]) < 300:
            return mantissa[0] * 10.0 ** power[0], mantissa[1]
    return None


def _digits(text: str) -> str:
    """The significant digits a literal shows: "6.674e-11" -> "6674", "300000000.0" -> "3", "9.81" -> "981"."""
    mantissa = text.lower().split("e")[0].replace("_", "")
    digits = mantissa.replace(".", "").lstrip("0")
    if "." not in mantissa or mantissa.endswith(".0"):
        digits = digits.rstrip("0") if "." not in mantissa or mantissa.endswith(".0") else digits
    return digits or "0"


def _rounded(value: float, digits: int) -> float:
    if value == 0:
        return 0.0
    return float(f"{value:.{max(digits, 1) - 1}e}")


def _swapped(shown: str, true: str) -> bool:
    return len(shown) == len(true) and shown != true and any(
        shown == true[:i] + true[i + 1] + true[i] + true[i + 2:] for i in range(len(true) - 1))


def _near(value: float, true: float, digits: int, tol: float) -> bool:
    """The constant, rounded to the digits shown, or an older CODATA value (within ``tol``)."""
    return _rounded(true, digits) == _rounded(value, digits) or abs(value - true) <= tol * true


def judge(name: str, value: float, digits: str) -> str | None:
    """Why ``value`` bound to ``name`` is a near miss of its constant, or None."""
    key = constant_for(name)
    if key is None or value <= 0 or not math.isfinite(value):
        return None
    true = codata(key)
    n = len(digits)
    tol = tolerance(key)
    if _near(value, true, n, tol):
        return None
    shown_true = f"{true:.{n - 1}e}".split("e")[0].replace(".", "")
    if _swapped(digits, shown_true):
        return f"two neighbouring digits of {key} are swapped ({digits} where it is {shown_true})"
    ratio = value / true
    if not math.isfinite(ratio) or ratio == 0:
        return None  # 1e308 is no near miss of anything
    power = round(math.log10(ratio))
    if abs(power) == 1 and _near(value / 10.0 ** power, true, n, tol):
        return f"it is {key} times 10**{power}: the exponent is off by one"
    off = abs(value - true) / true
    if tol < off <= HIGH and n >= 3:
        return f"it differs from {key} by {off:.2%}, more than the rounding of the {n} digits it shows"
    return None


def _bindings(body: Sequence[ast.stmt]) -> Iterator[tuple[str, ast.expr, int]]:
    for node in body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value, node.lineno
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            yield node.target.id, node.value, node.lineno


def check(body: Sequence[ast.stmt], file: str) -> list[Finding]:
    found = []
    for name, value, line in _bindings(body):
        if constant_for(name) is None:
            continue
        literal = _literal(value)
        if literal is None:
            continue
        why = judge(name, *literal)
        if why is not None:
            key = constant_for(name)
            found.append(Finding("constant", file, line,
                                 f"{name} = {literal[0]:.10g}: {why}; CODATA gives {codata(key or ''):.10g}. "
                                 f"Reference: {CODATA}", name=name, reference=CODATA))
    return found
