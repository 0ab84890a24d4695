"""A scan's result as text, JSON, SARIF 2.1.0 or GitHub workflow commands, each ``render(result) -> str``.

File names and code come from the repository, so every string goes out through the
project's escaping: ``text.visible`` for the terminal, ``text.dumps`` for JSON and SARIF,
``report.github.command`` for workflow commands (percent-encoding and no ``##[``), and
``report.sarif.uri`` for a location. Nothing unescaped reaches the reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from physverify.report import github, sarif
from physverify.scan.findings import RULES, Finding, ScanResult
from physverify.text import dumps, plural, visible


def summary(result: ScanResult) -> str:
    suspects = sum(1 for f in result.findings if not f.informational)
    suggestions = len(result.findings) - suspects
    parts = [plural(suspects, "finding"), plural(suggestions, "suggestion"), f"{len(result.silenced)} silenced",
             plural(len(result.notes), "note")]
    if result.claims_written:
        parts.append(f"{plural(len(result.claims_written), 'claim template')} written")
    return f"physverify scan: {', '.join(parts)} in {plural(result.files, 'file')}"


def render_text(result: ScanResult) -> str:
    lines = [f"{visible(f.file)}:{f.line}: {f.rule}: {visible(f.message)}" for f in result.findings]
    lines += [f"{visible(n.file)}: note: {visible(n.message)}" for n in result.notes]
    lines += [f"wrote {visible(path)}" for path in result.claims_written]
    lines.append(summary(result))
    return "\n".join(lines)


def _finding(f: Finding) -> dict[str, Any]:
    data: dict[str, Any] = {"rule": f.rule, "file": f.file, "line": f.line, "message": f.message, "name": f.name,
                            "reference": f.reference, "informational": f.informational}
    if f.expected_order is not None:
        data["expected_order"] = f.expected_order
    if f.silenced is not None:
        data["silenced"] = f.silenced
    return data


def to_dict(result: ScanResult) -> dict[str, Any]:
    return {
        "findings": [_finding(f) for f in result.findings],
        "silenced": [_finding(f) for f in result.silenced],
        "notes": [{"file": n.file, "message": n.message} for n in result.notes],
        "claims_written": list(result.claims_written),
        "summary": {"files": result.files, "findings": len(result.findings), "silenced": len(result.silenced),
                    "notes": len(result.notes), "exit_code": int(result.exit_code)},
    }


def render_json(result: ScanResult) -> str:
    return dumps(to_dict(result), indent=2)


_LEVEL = {True: "note", False: "warning"}


def _sarif_result(f: Finding, index: int) -> dict[str, Any]:
    return {
        "ruleId": f.rule, "ruleIndex": index, "level": _LEVEL[f.informational], "message": {"text": f.message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": sarif.uri(f.file), "uriBaseId": "%SRCROOT%"},
                                            "region": {"startLine": f.line}}}],
        "partialFingerprints": {"physverifyScan/v1": f"{f.rule}:{f.file}:{f.name}"},
        "properties": {"reference": f.reference, "name": f.name},
    }


def render_sarif(result: ScanResult) -> str:
    rules = list(RULES)
    log = {
        "$schema": sarif.SCHEMA_URI, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "physverify scan", "rules": [
                {"id": rule, "shortDescription": {"text": text},
                 "defaultConfiguration": {"level": _LEVEL[rule == "inverse-pair"]}} for rule, text in RULES.items()]}},
            "invocations": [{"executionSuccessful": True, "exitCode": int(result.exit_code)}],
            "results": [_sarif_result(f, rules.index(f.rule)) for f in result.findings],
        }],
    }
    return dumps(log, indent=2)


def render_github(result: ScanResult) -> str:
    lines = [github.command("notice" if f.informational else "warning", f.message, file=f.file, line=f.line,
                            title=f"physverify scan: {f.rule}") for f in result.findings]
    lines += [github.command("notice", n.message, file=n.file, title="physverify scan: note") for n in result.notes]
    lines.append(visible(summary(result)))
    return "\n".join(lines)


FORMATS: dict[str, Callable[[ScanResult], str]] = {
    "text": render_text, "json": render_json, "sarif": render_sarif, "github": render_github,
}
