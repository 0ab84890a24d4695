"""One self-contained HTML file of the evidence: per claim its verdict, the claim, the control
and checks, a log-log convergence plot for each check that recorded its numbers, and the
claim's history from the ledger (issue 12).

Two sources give the same page: a replay (``replay --format html``: ``render``) and a
ledger alone (``physverify report``: ``from_ledger`` then ``render_report``). The page
loads nothing: the style is inline and the plots are matplotlib SVG inlined, or, without
the ``report`` extra, tables of the same numbers. Every string from a ledger or a claim
is escaped; the page is well-formed XML as well as HTML, so a strict parser reads it too.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physverify import ledger, verdict
from physverify.errors import PhysverifyError
from physverify.report import MAX_PLOTS, _plot
from physverify.text import visible
from physverify.verdict import CONFIRMED, EXIT_OK

if TYPE_CHECKING:
    from physverify.results import ClaimRun, ReplayResult



@dataclass(frozen=True)
class Report:
    """What one page shows: the claims (as a replay sees them) and each claim's ledger history."""

    title: str
    claims: tuple[ClaimRun, ...]
    history: Mapping[str, Sequence[ledger.LogRow]]
    from_replay: bool
    notes: tuple[str, ...] = ()
    exit_code: int = EXIT_OK


# --- the two sources ---------------------------------------------------------------------
def render(result: ReplayResult) -> str:
    """A replay as the HTML page (``replay --format html``); the history is read from its ledger."""
    notes: tuple[str, ...] = ()
    try:
        rows = ledger.log_rows(ledger.read_ledger(Path(result.ledger)).records, None)
    except PhysverifyError as exc:  # a --dry-run's ledger that was never written: the page, without history
        rows, notes = [], (f"no history: {exc}",)
    headline = "gate failed" if result.gate_failed else "gate passed"
    report = Report(f"physverify replay: {headline}", result.claims, _by_claim(rows), True,
                    (result.summary(), *result.warnings, *result.notes, *notes), result.exit_code)
    return render_report(report)


def from_ledger(path: Path, claim: str | None = None) -> Report:
    """``physverify report``: the latest line of each claim in the ledger at ``path`` (only ``claim``'s when given).

    The transition shown is the last change the ledger records (the claim's two latest
    lines), judged by replay's own gate rule with the default fail_on.
    """
    from physverify import gate, results

    if not path.is_file():
        raise PhysverifyError(f"{path}: no such ledger file; give the ledger with --ledger")
    read = ledger.read_ledger(path)  # once: the latest lines and the history both come from it
    history = _by_claim(ledger.log_rows(read.records, ledger.claim_keys(claim)))
    if claim is not None and not history:
        raise PhysverifyError(f"{path}: no line for the claim {claim}")
    latest = {key: record for key, record in ledger.latest_by_claim(read.records).items() if key in history}
    runs = []
    for key, record in latest.items():
        before = history[key][-2].verdict if len(history[key]) > 1 else None
        run = _claim_run(key, gate.transition(before, str(record.get("verdict"))), record, before)
        runs.append(replace(run, failures=results.gate_failures(run, gate.DEFAULT_FAIL_ON)))
    return Report(f"physverify report: {path}", tuple(runs), history, False, tuple(read.problems))


def _claim_run(key: str, transition: str, record: Mapping[str, Any], before: str | None) -> ClaimRun:
    from physverify.results import ClaimRun

    line = record.get("line")
    target = record.get("file")
    return ClaimRun(key, transition, record.get("verdict"), before, record, None if before is None else {},
                    target=str(target) if target is not None else None, line=line if isinstance(line, int) else None)


def _by_claim(rows: Iterable[ledger.LogRow]) -> dict[str, list[ledger.LogRow]]:
    grouped: dict[str, list[ledger.LogRow]] = {}
    for row in rows:
        grouped.setdefault(row.claim, []).append(row)
    return grouped


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
    """The convergence plot of the check that decided ``record``, as PNG; None without numbers or matplotlib."""
    chosen = decisive(record)
    numbers = None if chosen is None else _plot.convergence(chosen.get("data"))
    return _plot.png(numbers) if numbers is not None and _plot.available() else None


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
    and gives the others' numbers as tables."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit if _plot.available() else 0
        self.skipped = 0

    def take(self) -> bool:
        if self.left is not None and self.left <= 0:
            self.skipped += 1
            return False
        if self.left is not None:
            self.left -= 1
        return True


def render_report(report: Report, max_plots: int | None = MAX_PLOTS) -> str:
    """The whole page as one string; at most ``max_plots`` plots (None: every one)."""
    plots = _Plots(max_plots)
    runs = ordered(report.claims)
    sections = [_section(i, run, report, plots) for i, run in enumerate(runs)]
    body = [f"<h1>{_e(report.title)}</h1>", _counts(runs)]
    body += [f'<p class="note">{_e(note)}</p>' for note in report.notes]
    if not _plot.available():
        body.append(f'<p class="hint">The convergence plots need matplotlib: {_e(_plot.INSTALL_HINT)}. '
                    "The tables give the same numbers.</p>")
    elif plots.skipped:
        body.append(f'<p class="hint">Plots are drawn for the first {max_plots} checks; the other {plots.skipped} '
                    "give their numbers as tables (physverify report --claim PATH, or --max-plots, draws them).</p>")
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
    parts.append(_outcomes(index, record, plots))
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


def _outcomes(index: int, record: Mapping[str, Any], plots: _Plots) -> str:
    control = record.get("control")
    roles = [("control", control)] if isinstance(control, Mapping) else []
    roles += [("check", c) for c in _checks(record)]
    if not roles:
        return ""
    chosen = decisive(record)
    rows = "".join(
        f'<tr class="s-{_class(o.get("status"))}"><td>{_e(role)}{" (decisive)" if o is chosen else ""}</td>'
        f'<td class="status">{_e(o.get("status"))}</td><td>{_e(o.get("label"))}</td><td>{_e(o.get("message"))}</td></tr>'
        for role, o in roles
    )
    table = f'<table class="outcomes"><tr><th>role</th><th>status</th><th>what was tested</th><th>message</th></tr>{rows}</table>'
    evidence = "".join(_evidence(f"c{index}-{j}", o, plots) for j, (_, o) in enumerate(roles))
    return table + (f'<div class="evidence">{evidence}</div>' if evidence else "")


def _evidence(salt: str, outcome: Mapping[str, Any], plots: _Plots) -> str:
    """The plot and the table of one check's numbers; nothing when it recorded none."""
    data = outcome.get("data")
    numbers = _plot.convergence(data)
    caption = f"<figcaption>{_e(outcome.get('label'))}</figcaption>"
    if numbers is None:
        return "" if not isinstance(data, Mapping) or not data else f'<figure class="data">{caption}{_data_list(data)}</figure>'
    table = _table(numbers)
    if not plots.take():
        return f'<figure class="convergence">{caption}{table}</figure>'
    return (f'<figure class="convergence">{caption}<div class="plot">{_plot.svg(numbers, salt)}</div>'
            f"<details><summary>the numbers</summary>{table}</details></figure>")


def _fmt(value: float | None, spec: str) -> str:
    return "not finite" if value is None else format(value, spec)


def _table(numbers: _plot.Convergence) -> str:
    rows = "".join(f"<tr><td>{_fmt(h, '.4g')}</td><td>{_fmt(e, '.4g')}</td><td>{'' if q is None else f'{q:.2f}'}</td></tr>"
                   for h, e, q in _plot.rows(numbers))
    summary = [f"expected order {numbers.expected:g}" if numbers.expected is not None else "",
               f"fitted order {numbers.fitted:.2f}" if numbers.fitted is not None else "",
               f"round-off floor {numbers.floor:.1e}" if numbers.floor is not None else ""]
    line = f'<p class="orders">{_e(", ".join(s for s in summary if s))}</p>'
    return f'<table class="numbers"><tr><th>h</th><th>error</th><th>pairwise order</th></tr>{rows}</table>{line}'


def _data_list(data: Mapping[str, Any]) -> str:
    """Numbers a check recorded that are not an order study (another study's fields), as a list."""
    def text(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(text(v) for v in value)
        return format(value, ".4g") if isinstance(value, float) else str(value)

    items = "".join(f"<dt>{_e(key)}</dt><dd>{_e(text(value))}</dd>" for key, value in data.items())
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
