"""One self-contained HTML file of the evidence: per claim its verdict, the claim, the control
and checks, a log-log convergence plot for each check that recorded its numbers, and the
claim's history from the ledger (issue 12).

A fixed, regressed or decided claim draws its baseline run beside the latest one in each
check's plot (issue 18); a check with no step size (an identity check) is a sentence and a
table, never a log-log plot; a check whose errors are all exactly 0 says so. The page is
robust to what a ledger holds (issue 21): a plot that cannot be drawn is a note on its
check, and the plots stop at a time budget and a count, after which the numbers are tables.

Two sources give the same page: a replay (``replay --format html``: ``render``) and a
ledger alone (``physverify report``: ``from_ledger`` then ``render_report``). The page
loads nothing: the style is inline and the plots are matplotlib SVG inlined, or, without
the ``report`` extra, tables of the same numbers. Every string from a ledger or a claim
is escaped; the page is well-formed XML as well as HTML, so a strict parser reads it too.
"""

from __future__ import annotations

import html
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physverify.gate import ledger
from physverify import verdict
from physverify.errors import PhysverifyError
from physverify.gate.rules import DECIDED, FIXED, REGRESSED
from physverify import plot as _plot
from physverify.report import MAX_PLOTS, _interval
from physverify.text import clip, visible
from physverify.verdict import CONFIRMED, EXIT_OK

if TYPE_CHECKING:
    from physverify.gate.results import ClaimRun, ReplayResult

# Seconds the page may spend drawing plots (issue 21, item 3): host-side work after the claims ran
# is bounded by no timeout and no sandbox limit, so past this the remaining checks are tables.
PLOT_BUDGET_S = 20.0
# Rows of numbers shown per check, and values per field of other data: a check may report
# 100,000 levels, and the ledger line keeps every one of them.
MAX_ROWS = 1000
_MAX_VALUES = 50
# The transitions whose plots show the baseline run beside the latest: the verdict moved, and
# the reader wants to see what changed in the numbers.
OVERLAY_TRANSITIONS = frozenset({FIXED, REGRESSED, DECIDED})


@dataclass(frozen=True)
class Report:
    """What one page shows: the claims (as a replay sees them), each claim's ledger history, and
    for a claim whose verdict moved the baseline ledger line to draw beside the latest (``baselines``)."""

    title: str
    claims: tuple[ClaimRun, ...]
    history: Mapping[str, Sequence[ledger.LogRow]]
    from_replay: bool
    notes: tuple[str, ...] = ()
    exit_code: int = EXIT_OK
    baselines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


# --- the two sources ---------------------------------------------------------------------
def render(result: ReplayResult) -> str:
    """A replay as the HTML page (``replay --format html``); the history is read from its ledger."""
    notes: tuple[str, ...] = ()
    try:
        records = ledger.read_ledger(Path(result.ledger)).records
    except PhysverifyError as exc:  # a --dry-run's ledger that was never written: the page, without history
        records, notes = [], (f"no history: {exc}",)
    grouped = _records_by_claim(records, None)
    baselines = {run.key: found for run in result.claims if run.transition in OVERLAY_TRANSITIONS
                 and (found := _baseline(run, grouped.get(run.key, []))) is not None}
    headline = "gate failed" if result.gate_failed else "gate passed"
    report = Report(f"physverify replay: {headline}", result.claims,
                    {key: [row for row, _ in pairs] for key, pairs in grouped.items()}, True,
                    (result.summary(), *result.warnings, *result.notes, *notes), result.exit_code, baselines)
    return render_report(report)


def _baseline(run: ClaimRun, lines: Sequence[tuple[ledger.LogRow, Mapping[str, Any]]]) -> Mapping[str, Any] | None:
    """The ledger line a replay's transition was judged against, with its checks: the baseline record
    itself when it has them, else the line of the claim's history with the baseline's date and verdict
    (the sandbox's JSON document carries only those two), else None."""
    base = run.baseline
    if base is None:
        return None
    if _checks(base) or isinstance(base.get("control"), Mapping):
        return base
    matches = [record for row, record in lines if row.verdict == str(base.get("verdict"))
               and row.date == str(base.get("date") or "") and record is not run.record]
    return matches[-1] if matches else None


def _records_by_claim(records: Iterable[Mapping[str, Any]],
                      wanted: set[str] | None) -> dict[str, list[tuple[ledger.LogRow, Mapping[str, Any]]]]:
    """Each claim's (history row, ledger line) pairs in ledger order, only ``wanted``'s keys when given."""
    grouped: dict[str, list[tuple[ledger.LogRow, Mapping[str, Any]]]] = {}
    for record in records:
        for row in ledger.log_rows([record], wanted):
            grouped.setdefault(row.claim, []).append((row, record))
    return grouped


def from_ledger(path: Path, claim: str | None = None) -> Report:
    """``physverify report``: the latest line of each claim in the ledger at ``path`` (only ``claim``'s when given).

    The transition shown is the last change the ledger records (the claim's two latest
    lines), judged by replay's own gate rule with the default fail_on.
    """
    from physverify.gate import rules as gate, results

    if not path.is_file():
        raise PhysverifyError(f"{path}: no such ledger file; give the ledger with --ledger")
    read = ledger.read_ledger(path)  # once: the latest lines and the history both come from it
    grouped = _records_by_claim(read.records, ledger.claim_keys(claim))
    history = {key: [row for row, _ in pairs] for key, pairs in grouped.items()}
    if claim is not None and not history:
        raise PhysverifyError(f"{path}: no line for the claim {claim}")
    latest = {key: record for key, record in ledger.latest_by_claim(read.records).items() if key in history}
    runs, baselines = [], {}
    for key, record in latest.items():
        previous = grouped[key][-2][1] if len(grouped[key]) > 1 else None
        before = history[key][-2].verdict if previous is not None else None
        run = _claim_run(key, gate.transition(before, str(record.get("verdict"))), record, before, previous)
        runs.append(replace(run, failures=results.gate_failures(run, gate.DEFAULT_FAIL_ON)))
        if previous is not None and run.transition in OVERLAY_TRANSITIONS:
            baselines[key] = previous
    return Report(f"physverify report: {path}", tuple(runs), history, False, tuple(read.problems), EXIT_OK, baselines)


def _claim_run(key: str, transition: str, record: Mapping[str, Any], before: str | None,
               previous: Mapping[str, Any] | None) -> ClaimRun:
    from physverify.gate.results import ClaimRun

    line = record.get("line")
    target = record.get("file")
    return ClaimRun(key, transition, record.get("verdict"), before, record,
                    None if before is None else (previous if previous is not None else {}),
                    target=str(target) if target is not None else None, line=line if isinstance(line, int) else None)


# --- which claims first, which check decided ---------------------------------------------
def ordered(claims: Iterable[ClaimRun]) -> list[ClaimRun]:
    """Claims that fail the gate first, then confirmed, then the rest; the given order within each."""
    return sorted(claims, key=lambda run: 0 if run.failures else 1 if run.verdict == CONFIRMED else 2)


def decisive(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The outcome that decided the verdict, by verdict.decisive's rule (the one every format names)."""
    found = verdict.decisive(record)
    return None if found is None else found[1]


def _checks(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The record's check entries; anything else a hand-edited ledger holds there is ignored."""
    checks = record.get("checks")
    return [c for c in checks if isinstance(c, Mapping)] if isinstance(checks, list) else []


def decisive_png(record: Mapping[str, Any]) -> bytes | None:
    """The convergence plot of the check that decided ``record``, as PNG; None without numbers or matplotlib,
    or when the numbers cannot be drawn (the text answer goes out without the image, issue 21)."""
    chosen = decisive(record)
    numbers = None if chosen is None else _plot.convergence(chosen.get("data"))
    if numbers is None or not _plot.available() or not _plot.drawable([_plot.Series("latest", numbers)]):
        return None
    try:
        return _plot.png(numbers)
    except Exception:  # noqa: BLE001 - an image that fails is left out, never a failed tool call
        return None


# --- the page ------------------------------------------------------------------------------
def _e(value: object) -> str:
    """``value`` as escaped text for an element or an attribute, on one line (issue 13: no line of the
    page may start with a workflow command, and no control character reaches it).

    ``visible`` already shows every character XML 1.0 forbids (controls, lone surrogates,
    U+FFFE, U+FFFF) as an escape, so the page stays well-formed whatever a ledger line holds.
    """
    return html.escape(visible(value), quote=True)


def _class(value: object) -> str:
    """A CSS class from a verdict or status ("not decidable" -> "not-decidable"), letters only."""
    return re.sub(r"[^a-z]+", "-", str(value).lower()).strip("-") or "none"


class _Plots:
    """How many plots the page may still draw: matplotlib takes tens of milliseconds per plot, so a
    page of hundreds of claims draws the first ``limit`` (the failing and confirmed claims come first)
    and gives the others' numbers as tables; past ``budget_s`` seconds of the page, every further
    check is a table too, however few plots were drawn (a check of 100,000 levels, a slow machine)."""

    def __init__(self, limit: int | None, budget_s: float | None) -> None:
        self.left = limit if _plot.available() else 0
        self.skipped = 0  # by the count
        self.late = 0  # by the time budget
        self.deadline = None if budget_s is None else time.monotonic() + budget_s

    def take(self) -> bool:
        if self.left is not None and self.left <= 0:
            self.skipped += 1
            return False
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.late += 1
            return False
        if self.left is not None:
            self.left -= 1
        return True


def render_report(report: Report, max_plots: int | None = MAX_PLOTS, budget_s: float | None = PLOT_BUDGET_S) -> str:
    """The whole page as one string; at most ``max_plots`` plots (None: every one), drawn within
    ``budget_s`` seconds from the start (None: no time limit)."""
    plots = _Plots(max_plots, budget_s)
    runs = ordered(report.claims)
    sections = [_section(i, run, report, plots) for i, run in enumerate(runs)]
    body = [f"<h1>{_e(report.title)}</h1>", _counts(runs)]
    body += [f'<p class="note">{_e(note)}</p>' for note in report.notes]
    if not _plot.available():
        body.append(f'<p class="hint">The convergence plots need matplotlib: {_e(_plot.INSTALL_HINT)}. '
                    "The tables give the same numbers.</p>")
    else:
        if plots.skipped:
            body.append(f'<p class="hint">Plots are drawn for the first {max_plots} checks; the other {plots.skipped} '
                        "give their numbers as tables (physverify report --claim PATH, or --max-plots, draws them).</p>")
        if plots.late:
            body.append(f'<p class="hint">The page spent its time budget for plots ({budget_s:g} s); the other '
                        f"{plots.late} checks give their numbers as tables (physverify report --claim PATH draws "
                        "one claim's).</p>")
    body += sections
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8"/>\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>\n'
        f"<title>{_e(report.title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body) + "\n</body>\n</html>\n"
    )


def _counts(runs: Sequence[ClaimRun]) -> str:
    failing = sum(bool(run.failures) for run in runs)
    verdicts: dict[str, int] = {}
    for run in runs:
        verdicts[str(run.verdict or "removed")] = verdicts.get(str(run.verdict or "removed"), 0) + 1
    parts = [f"{len(runs)} claim{'s' if len(runs) != 1 else ''}", f"{failing} failing the gate",
             *(f"{n} {v}" for v, n in verdicts.items())]
    return f'<p class="counts">{_e(", ".join(parts))}</p>'


def _section(index: int, run: ClaimRun, report: Report, plots: _Plots) -> str:
    record = run.record or {}
    verdict = run.verdict or "removed"
    head = (f'<section class="claim" id="claim-{index}">\n<h2><span class="verdict v-{_class(verdict)}">'
            f"{_e(verdict)}</span> <code>{_e(run.key)}</code></h2>")
    parts = [head, _transition(run, report.from_replay)]
    parts += [f'<p class="gate">fails the gate: {_e(failure)}</p>' for failure in run.failures]
    parts.append(_facts(run, record))
    parts.append(_history(report.history.get(run.key, ())))
    parts.append(_outcomes(index, record, plots, report.baselines.get(run.key)))
    return "\n".join(p for p in parts if p) + "\n</section>"


def _transition(run: ClaimRun, from_replay: bool) -> str:
    label = "transition" if from_replay else "last change in the ledger"
    return f'<p class="transition t-{_class(run.transition)}">{_e(label)}: {_e(run.change())}</p>'


def _facts(run: ClaimRun, record: Mapping[str, Any]) -> str:
    facts = [("reason", run.reason), ("evidence", run.evidence), ("claim", record.get("text")), ("source", record.get("source")),
             ("reference", record.get("reference")), ("file:line", run.location), ("impact", record.get("impact")),
             ("date", record.get("date")), ("commit", record.get("repo_commit"))]
    items = "".join(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>" for name, value in facts if value not in (None, ""))
    return f'<dl class="facts">{items}</dl>'


def _roles(record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    control = record.get("control")
    roles: list[tuple[str, Mapping[str, Any]]] = [("control", control)] if isinstance(control, Mapping) else []
    return roles + [("check", c) for c in _checks(record)]


def _counterparts(latest: Sequence[tuple[str, Mapping[str, Any]]],
                  baseline: Mapping[str, Any] | None) -> list[Mapping[str, Any] | None]:
    """For each of the latest run's outcomes, the baseline's outcome of the same role and label (the
    k-th of that label for the k-th), or None: a check renamed or added since has nothing to overlay."""
    if baseline is None:
        return [None] * len(latest)
    pool: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for role, outcome in _roles(baseline):
        pool.setdefault((role, str(outcome.get("label"))), []).append(outcome)
    found: list[Mapping[str, Any] | None] = []
    for role, outcome in latest:
        same = pool.get((role, str(outcome.get("label"))))
        found.append(same.pop(0) if same else None)
    return found


def _outcomes(index: int, record: Mapping[str, Any], plots: _Plots, baseline: Mapping[str, Any] | None) -> str:
    roles = _roles(record)
    if not roles:
        return ""
    chosen = decisive(record)
    rows = "".join(
        f'<tr class="s-{_class(o.get("status"))}"><td>{_e(role)}{" (decisive)" if o is chosen else ""}</td>'
        f'<td class="status">{_e(o.get("status"))}</td><td>{_e(o.get("label"))}</td><td>{_e(o.get("message"))}</td></tr>'
        for role, o in roles + _variant_roles(record)
    )
    table = f'<table class="outcomes"><tr><th>role</th><th>status</th><th>what was tested</th><th>message</th></tr>{rows}</table>'
    before = None if baseline is None else f"{baseline.get('verdict')}, {baseline.get('date')}"
    seconds = _variant_counterparts(record, roles)
    evidence = "".join(_evidence(f"c{index}-{j}", o, plots, before, other, second)
                       for j, ((_, o), other, second) in enumerate(zip(roles, _counterparts(roles, baseline), seconds)))
    return table + (f'<div class="evidence">{evidence}</div>' if evidence else "")


def _variant_roles(record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The second run of a claim that names its fix (issue 17), as rows 'control with the fix', 'check with the fix'."""
    side = record.get("variant")
    if not isinstance(side, Mapping):
        return []
    name = verdict.variant_name(str(side.get("held")))
    control, checks = side.get("control"), side.get("checks")
    roles = [(f"control {name}", control)] if isinstance(control, Mapping) else []
    return roles + [(f"check {name}", c) for c in (checks if isinstance(checks, list) else []) if isinstance(c, Mapping)]


def _variant_counterparts(record: Mapping[str, Any], roles: Sequence[tuple[str, Mapping[str, Any]]],
                          ) -> list[tuple[str, Mapping[str, Any]] | None]:
    """For each outcome of the run on the code, the variant run's (issue 17) by position, with the run's name."""
    variant = _variant_roles(record)
    if not variant:
        return [None] * len(roles)
    name = verdict.variant_name(str(record["variant"].get("held")))
    pool = {role: [o for r, o in variant if r == f"{role} {name}"] for role in ("control", "check")}
    return [(name, pool[role].pop(0)) if pool.get(role) else None for role, _ in roles]


def _evidence(salt: str, outcome: Mapping[str, Any], plots: _Plots, before: str | None,
              other: Mapping[str, Any] | None, second: tuple[str, Mapping[str, Any]] | None = None) -> str:
    """The plot and the table of one check's numbers; nothing when it recorded none.

    With a baseline outcome of the same check (``other``) that has numbers, the plot draws both
    runs, the latest in the main style (``before`` names the baseline's verdict and date in words
    above the plot; the legend says only "latest" and "baseline"); a check with no step size is a
    sentence and a table. ``second`` is the same check's run on the variant of a claim that
    names its fix (issue 17), drawn as "variant", with the run's name in the note.
    """
    data = outcome.get("data")
    numbers = _plot.convergence(data)
    caption = f"<figcaption>{_e(outcome.get('label'))}</figcaption>"
    try:
        stochastic = _interval.figure(data, caption)  # an estimate and its interval against expected +- tol
    except Exception as exc:  # noqa: BLE001 - as for a convergence plot: a note on the check, never a failed page
        return f'<figure class="data">{caption}{_failed(exc)}{_data_list(data) if isinstance(data, Mapping) else ""}</figure>'
    if stochastic is not None:
        return stochastic
    if numbers is None:
        if not isinstance(data, Mapping) or not data:
            return ""
        return f'<figure class="data">{caption}{_no_step_size(data)}{_data_list(data)}</figure>'
    base = _plot.convergence(other.get("data")) if other is not None else None
    series = [_plot.Series("latest", numbers)] + ([_plot.Series("baseline", base)] if base is not None else [])
    variant = _plot.convergence(second[1].get("data")) if second is not None else None
    series += [_plot.Series("variant", variant)] if variant is not None else []
    words = []
    if numbers.dropped:
        words.append(f"{numbers.dropped} level{'s' if numbers.dropped != 1 else ''} left out: the step size is not "
                     "a positive finite number.")
    if _plot.all_zero(numbers):
        words.append(f"Every error is exactly 0, at all {len(numbers.errors)} step sizes: the check reproduced "
                     "the expected values exactly, so there is no slope to see on a log scale.")
    if base is not None and before is not None:
        words.append(f"Drawn beside the baseline run ({before}).")
    if variant is not None and second is not None:
        words.append(f"The variant line is the same check in the run {second[0]}.")
    note = "".join(f'<p class="plot-note">{_e(w)}</p>' for w in words)
    table = _table(numbers)
    if not _plot.drawable(series) or not plots.take():
        return f'<figure class="convergence">{caption}{note}{table}</figure>'
    try:
        drawn = _plot.svg(series, salt)
    # Whatever the drawing raises for numbers a ledger holds (an overflow in matplotlib, a value it
    # cannot place), the check keeps its note and table and the page goes on (issue 21, item 2).
    except Exception as exc:  # noqa: BLE001
        return f'<figure class="convergence">{caption}{note}{_failed(exc)}{table}</figure>'
    return (f'<figure class="convergence">{caption}{note}<div class="plot">{drawn}</div>'
            f"<details><summary>the numbers</summary>{table}</details></figure>")


def _failed(exc: Exception) -> str:
    """The note that stands for a plot that raised: the error's type and (escaped, cut) message."""
    return f'<p class="plot-note">The plot could not be drawn ({_e(type(exc).__name__)}: {_e(str(exc)[:200])}).</p>'


def _fmt(value: float | None, spec: str) -> str:
    return "not finite" if value is None else format(value, spec)


def _table(numbers: _plot.Convergence) -> str:
    levels = _plot.rows(numbers)
    shown = levels if len(levels) <= MAX_ROWS else levels[: MAX_ROWS // 2] + levels[-MAX_ROWS // 2:]
    cells = [f"<tr><td>{_fmt(h, '.4g')}</td><td>{_fmt(e, '.4g')}</td><td>{'' if q is None else _plot.order_text(q)}</td></tr>"
             for h, e, q in shown]
    if len(shown) < len(levels):
        cells.insert(MAX_ROWS // 2, f'<tr><td colspan="3">{len(levels) - len(shown):,} levels not shown '
                                    f"(the ledger line holds all {len(levels):,})</td></tr>")
    summary = [f"expected order {_plot.order_text(numbers.expected, 'g')}" if numbers.expected is not None else "",
               f"fitted order {_plot.order_text(numbers.fitted)}" if numbers.fitted is not None else "",
               f"round-off floor {numbers.floor:.1e}" if numbers.floor is not None else ""]
    line = f'<p class="orders">{_e(", ".join(s for s in summary if s))}</p>'
    return f'<table class="numbers"><tr><th>h</th><th>error</th><th>pairwise order</th></tr>{"".join(cells)}</table>{line}'


# The fields an identity check (no step size) may keep its deviations under, in this order.
DEVIATION_FIELDS = ("deviations", "errors", "values")


def _no_step_size(data: Mapping[str, Any]) -> str:
    """A check with no step size (an identity check: a symmetry, a periodic copy, a total conserved
    to round-off) as a sentence: how many values, the largest deviation and where, or that all are
    exactly 0. Never a log-log plot: it has no h axis."""
    for name in DEVIATION_FIELDS:
        values = data.get(name)
        if isinstance(values, (int, float)) and not isinstance(values, bool):
            values = [values]
        if not isinstance(values, list) or not values:
            continue
        numbers = [_plot.number(v) for v in values]
        expected = _plot.number(data.get("expected")) if name == "values" else 0.0
        sizes = [abs(v - (expected or 0.0)) if v is not None else None for v in numbers]
        if all(size == 0.0 for size in sizes):
            return f'<p class="plot-note">No step size: every one of the {len(sizes)} {_e(name)} is exactly 0.</p>'
        finite = [(size, i) for i, size in enumerate(sizes) if size is not None and math.isfinite(size)]
        if not finite:
            return f'<p class="plot-note">No step size: none of the {len(sizes)} {_e(name)} is a finite number.</p>'
        largest, where = max(finite)
        missing = len(sizes) - len(finite)
        extra = f"; {missing} not finite" if missing else ""
        return (f'<p class="plot-note">No step size, so no convergence plot: the largest of the {len(sizes)} '
                f"{_e(name)} is {largest:.3g} in size, at index {where}{extra}.</p>")
    return ""


def _data_list(data: Mapping[str, Any]) -> str:
    """Numbers a check recorded that are not an order study (another study's fields), as a list:
    the first values of each field, nested lists to a depth of three."""
    def text(value: Any, depth: int = 0) -> str:
        if isinstance(value, list):
            if depth >= 3:
                return "[...]"
            shown = ", ".join(text(v, depth + 1) for v in value[:_MAX_VALUES])
            more = f", ... ({len(value) - _MAX_VALUES:,} more)" if len(value) > _MAX_VALUES else ""
            return (shown + more) if depth == 0 else f"[{shown}{more}]"
        if isinstance(value, float):
            return format(value, ".4g")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
            return f"an integer of {len(str(abs(value)))} digits"
        return clip(str(value)) if isinstance(value, str) else str(value)

    items = "".join(f"<dt>{_e(key)}</dt><dd>{_e(text(value))}</dd>" for key, value in list(data.items())[:_MAX_VALUES])
    return f'<dl class="facts">{items}</dl>'


def _history(rows: Sequence[ledger.LogRow]) -> str:
    if not rows:
        return ""
    items = "".join(
        f'<li class="v-{_class(row.verdict)}" title="{_e(row.reason)}"><span class="when">{_e(row.date)}</span> '
        f'{_e(row.verdict)} <code>{_e(row.repo_commit[:12] or "no commit")}</code></li>'
        for row in rows
    )
    return f'<div class="history"><h3>history ({len(rows)} line{"s" if len(rows) != 1 else ""})</h3><ol>{items}</ol></div>'


# No "<" and no "&" below: the style element is parsed as text by HTML and as XML by a strict reader.
_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;max-width:70rem;color:#1b1b1b;padding:0 1rem}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin:0 0 .4rem}h3{font-size:.9rem;margin:.8rem 0 .3rem}
section.claim{border:1px solid #ccc;border-radius:6px;padding:.8rem 1rem;margin:1rem 0}
.verdict{display:inline-block;padding:.1rem .5rem;border-radius:4px;color:#fff;background:#666}
.v-confirmed,.history li.v-confirmed{background:#b3261e}.v-rejected,.history li.v-rejected{background:#2e7d32}
.v-not-decidable,.history li.v-not-decidable{background:#8a6d00}
.gate{color:#b3261e;font-weight:bold;margin:.2rem 0}.transition{margin:.2rem 0;color:#333}
.note,.hint,.counts{color:#444}.hint{border-left:4px solid #8a6d00;padding-left:.5rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;margin:.5rem 0}
dl.facts dt{font-weight:bold}dl.facts dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}
td.status{font-weight:bold}.s-fail td.status{color:#b3261e}.s-pass td.status,.s-exact td.status{color:#2e7d32}
.s-inconclusive td.status,.s-error td.status,.s-skip td.status{color:#8a6d00}
figure{margin:.8rem 0}figcaption{font-style:italic;margin-bottom:.3rem}
.plot svg{max-width:100%;height:auto;width:30rem}
.history ol{list-style:none;display:flex;flex-wrap:wrap;gap:.3rem;padding:0;margin:0}
.history li{border-radius:4px;padding:.15rem .45rem;color:#fff;background:#666;font-size:.8rem}
.evidence{display:flex;flex-wrap:wrap;gap:0 1.5rem}.evidence figure{flex:0 1 30rem;min-width:0;margin:.8rem 0}
.history .when{opacity:.85}
"""
