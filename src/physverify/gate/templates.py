"""Claim templates, for ``physverify confirm init CLAIM.py [--kind KIND]`` (spec section 6).

Each kind is a claim file that runs once two things are filled in: the "FILL IN"s of CLAIM
(the load check refuses the file until then) and the ADAPTER block, which connects the code
under test to the study the kind uses. Everything else (the study, the control, the checks)
is written, and the comments say which control isolates the claimed effect. docs/real-code.md
has a filled ADAPTER block for every kind, and tests/gate/test_templates.py runs each one.

``render`` takes the CLAIM values already written as Python literals (write_template
quotes them), so it only lays out text; ``write_template`` checks the flags and writes the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from physverify.errors import PhysverifyError
from physverify.gate import variant
from physverify.gate.claim import FILL_IN
from physverify.text import short_repr


class Kind(NamedTuple):
    """One kind of claim: what it is for, what it imports, its ADAPTER stub and its study, control and checks."""

    summary: str
    imports: str
    adapter: str
    body: str


# The CLAIM dictionary every template starts with, the plain one and each kind's: its values are
# Python literals already (write_template quotes them), FILL_IN where the user must write.
_CLAIM = """CLAIM = {{
    # the claim as it was stated, unedited
    "text": {text},
    # who made the claim: a person, a static analysis tool, or an AI model named by its name
    "source": {source},
    # the file the claim is about (relative to the repository root) and the line in it
    "file": {file},
    "line": {line},
    # where the correct behaviour comes from: a book and section, a paper and equation number,
    # e.g. "Taylor, Classical Mechanics, sec. 5.4: ..."
    "reference": {reference},
    # used, latent or unknown: do the repository's own scripts or defaults reach this code?
    "impact": {fill},
}}"""


def _claim(*, text: str, file: str, line: int, fill: str, source: str | None = None,
           reference: str | None = None) -> str:
    """The CLAIM dictionary of a template, its values Python literals (source and reference default to ``fill``)."""
    return _CLAIM.format(text=text, file=file, line=line, fill=fill, source=source or fill,
                         reference=reference or fill)


_HEAD = '''"""Claim file for physverify confirm, kind {kind}: {summary}.

THE REFERENCE MUST COME FROM THE PHYSICS: a book and section, a paper and equation
number, or the project's README. Never take it from the code under test, or the
check can only agree with the code it is meant to judge.

To finish it (a filled example of this kind: docs/real-code.md, "{kind}"):
1. fill in every "FILL IN" in CLAIM (the file will not load until you do);
2. replace the ADAPTER block with the code under test, adapted as its comments say;
3. run it:  physverify confirm THIS_FILE.py --trusted
"""

import numpy as np  # noqa: F401  (most adapters need it)

from physverify import Check  # noqa: F401
from physverify import {imports}  # noqa: F401

{claim}

# ---- ADAPTER: the code under test, adapted to what the study needs (FILL IN) ----
{adapter}
# ---- END OF ADAPTER ----
'''

_ODE_ORDER = Kind(
    "the order of an ODE integrator, from its step routine, on a manufactured solution",
    "ManufacturedODE, from_second_order_step, from_step, mms_order_study",
    '''# import solver  # the code under test: this file's folder and the repository root are on sys.path

EXPECTED_ORDER = None  # FILL IN: the method's order from its reference (4 for classical RK4, 2 for Verlet)
T_END = 1.0
NS = [10, 20, 40, 80]  # step counts, each twice the last; four or more


def integrator(effect_on):
    """The code's step routine on the integrate contract (the same routine with the effect on or off).

    from_step(solver.step, solver.rhs) for a step(f, t, y, h) -> y_next;
    from_second_order_step(solver.step, solver.accel) for a step(x, v, t, h, accel) -> (x, v).
    """
    raise NotImplementedError("FILL IN the adapter: integrator(effect_on)")


def manufactured(effect_on):
    """ManufacturedODE(u, rhs_ref): a smooth u(t) and the right-hand side written from the physics."""
    raise NotImplementedError("FILL IN the adapter: manufactured(effect_on)")''',
    '''

def study(effect_on):
    return mms_order_study(integrator(effect_on), manufactured(effect_on), T_END, NS, EXPECTED_ORDER)


def control():
    # The control isolates the claimed effect: the same study on a case where the claimed
    # mistake cannot matter. A stage at the wrong time changes nothing on an autonomous
    # problem whose manufactured forcing is zero (u solves the code's own equation); a wrong
    # coefficient changes nothing where it multiplies zero; an old acceleration is the new
    # one for a free particle. effect_on=False is that case.
    return Check("mms", "the method has its order where the claimed effect cannot act", lambda: study(False))


def checks():
    # The same study where the effect acts: a time-dependent forcing (any u that does not
    # solve the code's own equation), the coefficient switched on. If the claim is right,
    # the order drops and this check FAILs.
    return [Check("mms", "the method has its order where the claimed effect acts", lambda: study(True))]
''')

_ODE_ENERGY = Kind(
    "a conserved energy of a stepper over long runs (bounded, not drifting)",
    "drift_study, exact_steps",
    '''# import solver  # the code under test: this file's folder and the repository root are on sys.path

DT = None  # FILL IN: the step the code runs with, small against the period of the motion
T_ENDS = (10.0, 20.0, 40.0, 80.0)  # end times, long against the period; three or more


def case(effect_on):
    """(step, energy, y0): step(y, t, h) -> y on the flat state, energy(y) written from the physics, the start.

    For a step(x, v, t, h, accel) -> (x, v): step = lambda y, t, h: np.concatenate(solver.step(y[:1], y[1:], t, h,
    accel)) with y = [x..., v...].
    """
    raise NotImplementedError("FILL IN the adapter: case(effect_on) -> (step, energy, y0)")''',
    '''

def largest_deviation(step, energy, y0, t_end):
    """max |E(t) - E(0)| over a run of about t_end / DT steps at the exact times k * t_end / n."""
    n = max(1, round(t_end / DT))
    y, start, worst = np.array(y0, dtype=float), energy(np.array(y0, dtype=float)), 0.0
    for t in exact_steps(t_end, n)[:-1]:
        y = step(y, float(t), t_end / n)
        worst = max(worst, abs(energy(y) - start))
    return worst


def study(effect_on):
    step, energy, y0 = case(effect_on)
    return drift_study(lambda t_end: largest_deviation(step, energy, y0, t_end), T_ENDS, expect="bounded")


def control():
    # The control isolates the claimed effect: the same runs where it cannot act. A free
    # particle (no force) keeps its kinetic energy exactly under any ordering of the kicks;
    # a force without the claimed velocity dependence or time dependence leaves only the
    # part the claim is not about. effect_on=False is that case.
    return Check("drift", "the energy stays bounded where the claimed effect cannot act", lambda: study(False))


def checks():
    # A symplectic method keeps the energy error bounded over long times; a drift that grows
    # with T is what the claim predicts (Hairer, Lubich and Wanner, GNI, ch. IX).
    return [Check("drift", "the energy stays bounded where the claimed effect acts", lambda: study(True))]
''')

_PDE_TIME = Kind(
    "the time order of a PDE code at a fixed grid, from differences of consecutive step counts",
    "self_convergence_study",
    '''# import solver  # the code under test: this file's folder and the repository root are on sys.path

EXPECTED_ORDER = None  # FILL IN: the time order from the scheme's reference (2 for Crank-Nicolson)
STEPS = (4, 8, 16, 32, 64)  # time step counts, each twice the last; four or more


def solve(effect_on, nt):
    """The code's solution at its end time after nt time steps, on ONE fixed grid for every nt."""
    raise NotImplementedError("FILL IN the adapter: solve(effect_on, nt)")''',
    '''

def study(effect_on):
    return self_convergence_study(lambda nt: solve(effect_on, nt), STEPS, EXPECTED_ORDER)


def control():
    # The control isolates the claimed effect: a source or coefficient that is constant in
    # time, where the time at which the code evaluates it cannot matter. effect_on=False is
    # that case. The fixed grid isolates the time order in both: the space error is the same
    # at every step count and cancels in the differences of consecutive levels.
    return Check("self-convergence", "the time order holds where the claimed effect cannot act",
                 lambda: study(False))


def checks():
    return [Check("self-convergence", "the time order holds where the claimed effect acts", lambda: study(True))]
''')

_PDE_SPACE = Kind(
    "a discrete spatial operator against the exact derivative, where the code stores the result",
    "operator_study",
    '''# import solver  # the code under test: this file's folder and the repository root are on sys.path

EXPECTED_ORDER = None  # FILL IN: the operator's order from its reference (2 for centred differences)
NXS = (16, 32, 64, 128)  # cells, each twice the last; four or more
SAMPLE = "cells"  # where the code takes its input: "cells", "nodes", "faces" or a callable f(nx) -> coordinates
WHERE = "cells"  # where the code stores its result (cell centres, faces...), the same choices


def case(effect_on):
    """(apply, field, exact): apply(values, dx) the code's operator, field(x) a smooth manufactured field,
    exact(x) the exact result of the operator on it (the derivative written out by hand)."""
    raise NotImplementedError("FILL IN the adapter: case(effect_on) -> (apply, field, exact)")''',
    '''

def study(effect_on):
    apply, field, exact = case(effect_on)
    return operator_study(apply, field, exact, NXS, EXPECTED_ORDER, sample=SAMPLE, where=WHERE)


def control():
    # The control isolates the claimed effect: a constant coefficient (its value at a face and
    # at a cell centre agree, so a coefficient taken at the wrong point cannot matter), or a
    # field on which the faulty term vanishes. effect_on=False is that case.
    return Check("operator", "the operator has its order where the claimed effect cannot act", lambda: study(False))


def checks():
    return [Check("operator", "the operator has its order where the claimed effect acts", lambda: study(True))]
''')

_IDENTITY = Kind(
    "an identity that holds at any resolution: a symmetry, a periodic copy, a total conserved to round-off",
    "identity_check",
    '''# import solver  # the code under test: this file's folder and the repository root are on sys.path


def case(effect_on):
    """(values, expected, scale): what must equal expected exactly, e.g. u - u[::-1] for a mirror symmetry,
    u[0] - u[-1] for a periodic end point; scale is the size of the quantities compared (sets round-off)."""
    raise NotImplementedError("FILL IN the adapter: case(effect_on) -> (values, expected, scale)")''',
    '''

def study(effect_on):
    values, expected, scale = case(effect_on)
    return identity_check(values, expected, scale=scale)


def control():
    # The control isolates the claimed effect: the same identity where the claimed mistake
    # cannot act (before the solution reaches the boundary the claim is about, with the
    # faulty term switched off). effect_on=False is that case. No step size is involved:
    # the result is EXACT, PASS (within a stated rtol/atol) or FAIL.
    return Check("identity", "the identity holds where the claimed effect cannot act", lambda: study(False))


def checks():
    return [Check("identity", "the identity holds where the claimed effect acts", lambda: study(True))]
''')

_REFERENCE = Kind(
    "the order of a solver with a fixed right-hand side, against an independent reference solver",
    "reference_study",
    '''# import solver  # the code under test: this file's folder and the repository root are on sys.path

EXPECTED_ORDER = None  # FILL IN: the method's order from its reference
T_END = 1.0
NS = [10, 20, 40, 80]  # step counts, each twice the last; four or more


def case(effect_on):
    """(integrate, rhs, y0): integrate(source, y0, t_end, n_steps) runs the code (it may ignore source: the
    study passes zero), rhs(t, y) the right-hand side written from the physics, y0 the start."""
    raise NotImplementedError("FILL IN the adapter: case(effect_on) -> (integrate, rhs, y0)")''',
    '''

def study(effect_on):
    integrate, rhs, y0 = case(effect_on)
    return reference_study(integrate, rhs, y0, T_END, NS, EXPECTED_ORDER)


def control():
    # The control isolates the claimed effect: the same comparison with the faulty term
    # multiplied by zero (its coefficient off), so only the rest of the code is tested.
    # The reference is scipy's DOP853 at tight tolerance on rhs, independent of the code.
    return Check("reference", "the code converges to the reference where the claimed effect cannot act",
                 lambda: study(False))


def checks():
    return [Check("reference", "the code converges to the reference where the claimed effect acts",
                  lambda: study(True))]
''')

KINDS: dict[str, Kind] = {
    "ode-order": _ODE_ORDER,
    "ode-energy": _ODE_ENERGY,
    "pde-time": _PDE_TIME,
    "pde-space": _PDE_SPACE,
    "identity": _IDENTITY,
    "reference": _REFERENCE,
}
ADAPTER_START = "# ---- ADAPTER:"
ADAPTER_END = "# ---- END OF ADAPTER ----"


_ORDER_LINE = re.compile(r"^EXPECTED_ORDER = None  # FILL IN:.*$", re.MULTILINE)


def render(kind: str, *, text: str, file: str, line: int, fill: str, source: str | None = None,
           reference: str | None = None, expected_order: int | None = None) -> str:
    """The claim template of ``kind``; text, file, fill, source and reference are Python string literals (source
    and reference default to ``fill``), line an int. ``expected_order`` fills EXPECTED_ORDER where the kind has it."""
    spec = KINDS[kind]
    adapter = spec.adapter
    if expected_order is not None:  # a scan read it from the method's name; the person checks it against the book
        adapter = _ORDER_LINE.sub(f"EXPECTED_ORDER = {int(expected_order)}  # the order the method states, filled by "
                                  "physverify scan: check it against the reference", adapter, count=1)
    claim = _claim(text=text, file=file, line=line, fill=fill, source=source, reference=reference)
    return _HEAD.format(kind=kind, summary=spec.summary, imports=spec.imports, claim=claim, adapter=adapter) + spec.body


# --- confirm init (section 6) ---------------------------------------------------------
def write_template(path: Path, *, text: str | None, file: str | None, line: str | int | None,
                   kind: str | None = None, defect: str | None = None, fix: str | None = None,
                   filled: Mapping[str, str | int] | None = None) -> Path:
    """Write a claim template to ``path`` (the plain one, or that of ``kind``) and return the path; refuse to
    overwrite anything. ``defect`` and ``fix`` (both or neither) go into CLAIM as given (issue 17). ``filled``
    (a kind's template only) gives ``source``, ``reference`` and ``expected_order`` when a tool knows them."""
    if path.name == "init":
        raise PhysverifyError(f"{path}: a claim file cannot be called 'init' (it is the subcommand's name)")
    if path.suffix != ".py":
        raise PhysverifyError(f"{path}: a claim file must end in .py")
    values = {"--text": text, "--file": file, "--line": line}
    missing = [flag for flag, value in values.items() if value is None or str(value).strip() == ""]
    if missing:
        raise PhysverifyError(f"confirm init: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    number = _line_number(line)
    if kind is not None and kind not in KINDS:
        raise PhysverifyError(f"confirm init: --kind {kind!r} is not one of {', '.join(KINDS)}")
    fixed = _fix_keys(defect, fix)
    _make_folder(path)
    try:
        with path.open("x", encoding="utf-8") as handle:  # "x": never overwrite, even in a race
            handle.write(_with_fix_keys(_template(str(text), str(file), number, kind, filled or {}), fixed))
    except FileExistsError:
        raise PhysverifyError(f"{path}: already exists; confirm init never overwrites a file") from None
    except OSError as exc:
        raise PhysverifyError(f"{path}: cannot be written: {exc.strerror or exc}") from None
    return path


def _make_folder(path: Path) -> None:
    """Create the claim's folder when it is missing: the first claim of a repository starts its claims/ folder."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # mkdir's "File exists" for a folder would read as the claim file existing
        raise PhysverifyError(f"{path}: its folder {path.parent} cannot be created: a file is in the way") from None
    except OSError as exc:  # no permission, a read-only file system: say which folder
        raise PhysverifyError(f"{path}: its folder {path.parent} cannot be created: {exc.strerror or exc}") from None


def _line_number(line: str | int | None) -> int:
    try:
        number = int(str(line).strip())
    except ValueError:
        raise PhysverifyError(f"confirm init: --line must be an integer line number, not {short_repr(line)}") from None
    if number < 1:
        raise PhysverifyError(f"confirm init: --line is {number}; line numbers start at 1")
    return number


def _fix_keys(defect: str | None, fix: str | None) -> str:
    """The CLAIM lines of ``defect`` and ``fix`` for the template ("" without them); PhysverifyError when broken."""
    if defect is None and fix is None:
        return ""
    if defect is None or fix is None:
        raise PhysverifyError("confirm init: --defect and --fix go together (the claimed mistake and what it should "
                              "be); give both or neither")
    problem = variant.key_problem({key: value for key, value in (("defect", defect), ("fix", fix)) if value is not None})
    if problem is None and any(not str(value).strip() for value in (defect, fix)):
        problem = "--defect and --fix must each name a line of code"
    if problem is not None:
        for key in variant.KEYS:  # the flags' names, not the keys they become
            problem = problem.replace(f"CLAIM[{key!r}]", f"--{key}").replace(repr(key), f"--{key}")
        raise PhysverifyError(f"confirm init: {problem}")
    return _FIX_KEYS.format(defect=_py_string(str(defect)), fix=_py_string(str(fix)))


_FIX_KEYS = """\
    # the claimed mistake and what it should be, each as the whole line(s) of code: the checks
    # run on the code and on the code with one swapped for the other (docs/confirm.md)
    "defect": {defect},
    "fix": {fix},
"""


def _with_fix_keys(template: str, fixed: str) -> str:
    """``template`` with the two keys' lines as CLAIM's last entries (every template ends CLAIM with impact)."""
    end = f'    "impact": {_py_string(FILL_IN)},\n}}'
    return template.replace(end, end[:-1] + fixed + "}", 1) if fixed else template


def _template(text: str, file: str, line: int, kind: str | None = None,
              filled: Mapping[str, str | int] | None = None) -> str:
    literals = {"text": _py_string(text), "file": _py_string(file), "fill": _py_string(FILL_IN)}
    if kind is not None:
        known = filled or {}
        order = known.get("expected_order")
        return render(kind, line=line, **literals, expected_order=int(order) if order is not None else None,
                                **{key: _py_string(str(known[key])) for key in ("source", "reference") if known.get(key)})
    return _TEMPLATE.format(claim=_claim(line=line, **literals))


def _py_string(value: str) -> str:
    """Return a double-quoted Python literal for ``value`` (a JSON string is one)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from undecodable argv bytes: keep it escaped
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


_TEMPLATE = '''"""Claim file for physverify confirm (docs/confirm.md).

THE REFERENCE MUST COME FROM THE PHYSICS: a book and section, a paper and equation
number, or the project's README. Never take it from the code under test, or the
check can only agree with the code it is meant to judge.

Fill in every "FILL IN" below (the file will not load until you do), then write
control() and checks(). Run it with:  physverify confirm THIS_FILE.py --trusted
For a template with the study already written, give --kind (docs/real-code.md).
"""

import numpy as np  # noqa: F401  (most references need it)

from physverify import Check  # noqa: F401
# The checks and studies, with their arguments and an example each: docs/api.md
# from physverify import ManufacturedODE, mms_order_study, reference_study, invariant_study, refine
# from physverify import from_step, from_second_order_step, exact_steps, identity_check, operator_study
# from physverify import convergence_study, self_convergence_study, refinement_path, drift_study

# import solver  # the code under test: this file's folder and the repository root are on sys.path

{claim}


# Write the reference again from the physics, e.g. for a damped oscillator
# (m x'' + b x' + k x = 0, Taylor sec. 5.4):
#
# def reference_rhs(t, y):
#     return np.array([y[1], -OMEGA**2 * y[0] - GAMMA * y[1]])


def control():
    """One Check that must PASS: the same check where the claimed effect is absent."""
    # Typical controls (docs/confirm.md, section 1, `control()`): the faulty term multiplied by zero, the bad
    # branch not taken, or the reference run on an independent solver
    # (scipy.integrate.solve_ivp at tight tolerance). For an order-of-accuracy claim:
    #
    # mms = ManufacturedODE(u=lambda t: np.array([np.cos(t), -np.sin(t)]), rhs_ref=reference_rhs)
    # integrate = from_step(solver.midpoint_step, solver.rhs)  # a step(f, t, y, h) -> y_next of the code
    # return Check("mms", "midpoint rule is second order with the effect switched off",
    #              lambda: mms_order_study(integrate, mms, t_end=1.0, ns=refine(20, max_n=640), expected_order=2))
    raise NotImplementedError("write control(): one Check that must pass")


def checks():
    """A non-empty list of Checks of the correct behaviour where the claimed effect is present."""
    # If the claim is right, at least one of them FAILs; if the code is right, all PASS.
    # Each check must test the claim's own property (docs/ai-review.md): a claim about
    # long-time energy needs drift_study, not an order at one end time.
    # return [Check("mms", "midpoint rule is second order with the effect on", lambda: ...)]
    raise NotImplementedError("write checks(): the correct behaviour, where the claimed effect is present")
'''
