"""Claim: the leapfrog step of kepler.py is not time-reversible (a physverify example, docs/real-code.md).

Run it with:  physverify confirm docs/examples/real-code/claim_kepler_standins.py --trusted

kepler.py is compiled with numba and imports astropy only for two constants. Neither is
needed to judge the claim, so where they are not installed the claim serves stand-ins
before importing the code: a numba.njit that returns the function uncompiled, and an
astropy.constants that holds the two values, taken from their published sources (never
from the code under test). Where the real packages are installed, they are used.

The reference: the kick-drift-kick leapfrog (Stormer-Verlet) is a symmetric method, so a
step forward followed by the same step with -dt returns to the start up to round-off
(Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. V.1 and sec. I.1.4).
"""

import importlib.util
import sys
import types

import numpy as np

from physverify import Check, reversibility_study


# --- stand-ins for the heavy dependencies, before the code under test is imported ---------
def stand_in(name, **attributes):
    """Serve a stand-in module ``name`` (and its parents) holding ``attributes``, unless the real package exists."""
    top = name.partition(".")[0]
    if top in sys.modules and not getattr(sys.modules[top], "STAND_IN", False):
        return  # the real package is already imported
    if top not in sys.modules and importlib.util.find_spec(top) is not None:
        return  # the real package is installed: use it
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        module = sys.modules.setdefault(".".join(parts[:depth]), types.ModuleType(".".join(parts[:depth])))
        module.STAND_IN = True
        if depth > 1:
            setattr(sys.modules[".".join(parts[:depth - 1])], parts[depth - 1], module)
    vars(sys.modules[name]).update(attributes)


def njit(*args, **options):
    """numba.njit without compiling: @njit, @njit(cache=True) and njit(f) all give f itself."""
    if len(args) == 1 and callable(args[0]) and not options:
        return args[0]
    return lambda function: function


G = 6.67430e-11  # m**3 / (kg s**2), CODATA 2018 recommended value
GM_SUN = 1.3271244e20  # m**3 / s**2, IAU 2015 Resolution B3, nominal solar mass parameter
stand_in("numba", njit=njit, jit=njit)
stand_in("astropy.constants", G=types.SimpleNamespace(value=G), M_sun=types.SimpleNamespace(value=GM_SUN / G))

import kepler  # noqa: E402  (the code under test, after its stand-ins)

CLAIM = {
    "text": "the leapfrog step is not time-reversible",
    "source": "a person reading the code (example)",
    "file": "kepler.py",
    "line": 23,
    "reference": "Hairer, Lubich and Wanner, Geometric Numerical Integration, sec. V.1: Stormer-Verlet is symmetric",
    "impact": "used",
}

AU, YEAR = 1.495978707e11, 3.15576e7  # m (IAU 2012 Resolution B2), s (a Julian year)


def round_trip(r0, v0, t_end):
    forward = lambda y, t, h: np.concatenate(kepler.step(y[:2], y[2:], h))  # noqa: E731
    backward = lambda y, t, h: np.concatenate(kepler.step(y[:2], y[2:], -h))  # noqa: E731
    return reversibility_study(forward, backward, [*r0, *v0], t_end, [100, 200, 400, 800], 2, require_exact=True)


def control():
    # Far from the Sun the acceleration hardly changes over a step, so how a step uses it
    # cannot show; the round trip must return to round-off.
    return Check("reversibility", "a slow flyby at 1000 AU returns to its start",
                 lambda: round_trip([1000 * AU, 0.0], [0.0, 300.0], YEAR / 4))


def checks():
    return [Check("reversibility", "a quarter of the Earth's orbit returns to its start",
                  lambda: round_trip([AU, 0.0], [0.0, 29_780.0], YEAR / 4))]
