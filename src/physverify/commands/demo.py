"""``physverify demo``: the worked examples of docs/confirm.md, confirmed and replayed in a temporary folder.

A first run that needs no claim of the user's and writes nothing of theirs: three example
claims are settled (one verdict of each kind), the defect of the confirmed one is fixed and
the gate replays (it passes, the claim is ``fixed``), the defect is put back and the gate
replays again (it fails, the claim ``regressed``), and the HTML report of the ledger is
written. Everything is written inside one new folder under the system's temporary folder,
which stays so the report can be opened; the claim readings' cache is off for the run and
matplotlib's configuration folder points inside it, so nothing else is written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from physverify.errors import PhysverifyError
from physverify.verdict import CONFIRMED, EXIT_FINDING, EXIT_OK, NOT_DECIDABLE, REJECTED

# The worked examples of docs/confirm.md (shipped with the package: commands/examples links to
# docs/examples/confirm), and the verdict each one gives there.
EXAMPLES: Mapping[str, str] = {"oscillator": CONFIRMED, "verlet": REJECTED, "decay": NOT_DECIDABLE}

# oscillator.py's defect (claim_oscillator.py): friction must oppose the velocity (Taylor, Classical
# Mechanics, sec. 5.4), so the damping term is -gamma v, not +gamma v.
SOLVER = "oscillator.py"
DEFECT = "-omega**2 * x + gamma * v"
FIX = "-omega**2 * x - gamma * v"


class Step(NamedTuple):
    """One step of the demo: the command a user would type (or what the demo did), and its output."""

    title: str
    text: str


class Demo(NamedTuple):
    """What the demo did: its folder, the report's path, its steps in order, and its exit code."""

    folder: Path
    report: Path
    steps: tuple[Step, ...]
    exit_code: int


def demo(parent: Path | None = None, on_step: Callable[[Step], None] | None = None) -> Demo:
    """Run the demo in a new folder under ``parent`` (default: the system's temporary folder).

    ``on_step`` is called with each step as it ends, so a caller can show the run as it goes.
    A step that does not come out as docs/confirm.md says raises PhysverifyError.
    """
    folder = Path(tempfile.mkdtemp(prefix="physverify-demo-", dir=parent))
    steps: list[Step] = []

    def show(title: str, text: str) -> None:
        steps.append(Step(title, text))
        if on_step is not None:
            on_step(steps[-1])

    with _writes_kept_in(folder):
        claims = _copy_examples(folder / "claims")
        _confirm_each(claims, show)
        _replay_after_edit(claims, FIX, EXIT_OK, "fixed", show)
        _replay_after_edit(claims, DEFECT, EXIT_FINDING, "regressed", show)
        report = _write_report(claims, folder / "report.html")
    return Demo(folder, report, tuple(steps), EXIT_OK)


def _copy_examples(claims: Path) -> Path:
    """The example claims and their solvers, copied into ``claims``."""
    source = resources.files("physverify.commands").joinpath("examples")
    claims.mkdir()
    for name in EXAMPLES:
        for file in (f"claim_{name}.py", f"{name}.py"):
            (claims / file).write_bytes(source.joinpath(file).read_bytes())
    return claims


def _confirm_each(claims: Path, show: Callable[[str, str], None]) -> None:
    from physverify.commands import confirm
    from physverify.gate.ledger import DEFAULT_LEDGER
    from physverify.report import text

    for name, expected in EXAMPLES.items():
        claim = claims / f"claim_{name}.py"
        evaluation = confirm.confirm(claim, ledger=claims / DEFAULT_LEDGER, trusted=True)
        _expect(evaluation.verdict.verdict == expected, f"{claim.name} gave {evaluation.verdict.verdict!r}, "
                f"not {expected!r} as in docs/confirm.md", claims)
        show(f"physverify confirm claims/{claim.name} --trusted", text.render_confirm(evaluation.record))


def _replay_after_edit(claims: Path, new: str, exit_code: int, transition: str,
                       show: Callable[[str, str], None]) -> None:
    from physverify.gate import replay
    from physverify import report

    old = FIX if new == DEFECT else DEFECT
    _swap(claims / SOLVER, old, new)
    done = "fixes the sign of" if new == FIX else "puts back the wrong sign of"
    result = replay.replay([claims], trusted=True)
    moved = [run.key for run in result.claims if run.transition == transition]
    _expect(result.exit_code == exit_code and moved == [f"claim_{SOLVER}"],
            f"the replay after the demo {done} the damping gave exit {result.exit_code} with {moved or 'no claim'} "
            f"{transition}, not exit {exit_code} with claim_{SOLVER}", claims)
    show(f"(the demo {done} the damping term in claims/{SOLVER}: {new})\nphysverify replay claims --trusted",
         report.render("text", result))


def _swap(solver: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the solver, and drop its compiled copy.

    Python trusts a .pyc whose recorded size and mtime (whole seconds) match the source; a
    one-character swap keeps the size, and two edits can fall in the same second.
    """
    source = solver.read_text(encoding="utf-8")
    _expect(source.count(old) == 1, f"{solver.name} does not hold {old!r} once", solver.parent)
    solver.write_text(source.replace(old, new), encoding="utf-8")
    shutil.rmtree(solver.parent / "__pycache__", ignore_errors=True)


def _write_report(claims: Path, path: Path) -> Path:
    from physverify.gate.ledger import DEFAULT_LEDGER
    from physverify.report import html

    page = html.from_ledger(claims / DEFAULT_LEDGER)
    path.write_text(html.render_report(page), encoding="utf-8")
    return path


def _expect(holds: bool, problem: str, folder: Path) -> None:
    if not holds:
        raise PhysverifyError(f"demo: {problem}; its files are in {folder}")


@contextmanager
def _writes_kept_in(folder: Path) -> Iterator[None]:
    """The cache off and matplotlib's configuration inside ``folder`` while the demo runs; the environment restored."""
    from physverify.gate.settings import CACHE_ENV

    changes = {CACHE_ENV: "off", "MPLCONFIGDIR": str(folder / ".matplotlib")}
    before = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
