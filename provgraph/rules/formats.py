"""Check reports as text, JSON, JUnit XML, SARIF 2.1.0 (drawn by :mod:`provgraph.rules.sarif`) and
Markdown."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from provgraph.rules.runner import CheckReport, Outcome
from provgraph.rules.sarif import SarifPlace, to_sarif

FORMATS = ("text", "json", "junit", "sarif", "markdown", "shacl")
_MARK: dict[Outcome, str] = {
    "pass": "pass",
    "violated": "VIOLATED",
    "error": "ERROR",
    "skipped": "skipped",
    "not-applicable": "n/a",
}
#: What an empty gate tells the user to add.
EMPTY_HINT = (
    "no rule ran, so nothing was shown to hold: declare the clauses of your benchmark in "
    "provgraph.toml ([plan], [cohort], [pixel], [conditions], [models], [annotation], [analysis], "
    '[release]; the README\'s "The contract" section describes each)'
)


def gate_line(report: CheckReport) -> str:
    c = report.counts()
    blocking = [r for r in report.results if r.blocks_gate]
    if report.empty:
        return f"gate: EMPTY ({EMPTY_HINT})"
    if report.passed:
        verdict = "PASS"
        detail = f"{c['pass']} rules passed"
        restricted = sum(1 for r in report.results if r.outcome == "violated")
        if restricted:
            detail += f", {restricted} non-blocking rules fired"
        if report.strict:
            detail += " (strict)"
    else:
        verdict = "FAIL"
        errors = sum(1 for r in blocking if r.outcome == "error")
        violated = len(blocking) - errors
        parts = []
        if violated:
            parts.append(f"{violated} blocking rule{'s' if violated != 1 else ''} violated")
        if errors:
            parts.append(f"{errors} rule{'s' if errors != 1 else ''} could not run")
        detail = ", ".join(parts)
    if c["skipped"]:
        detail += f", {c['skipped']} skipped (clause not in the contract)"
    if c["not-applicable"]:
        detail += f", {c['not-applicable']} not applicable (evidence the contract says the benchmark lacks)"
    return f"gate: {verdict} ({detail}; {c['violations']} violations)"


def to_json(report: CheckReport) -> str:
    return json.dumps(as_dict(report), indent=2)


def as_dict(report: CheckReport) -> dict[str, Any]:
    return {
        "project": report.project,
        "gate": "empty" if report.empty else "pass" if report.passed else "fail",
        "strict": report.strict,
        "started": report.started.isoformat(),
        "clauses_in_force": report.clauses_in_force,
        "counts": report.counts(),
        "rules": [
            {
                "id": r.rule.id,
                "clause": r.rule.clause,
                "severity": r.rule.severity,
                "title": r.rule.title,
                "remedy": r.rule.remedy,
                "outcome": r.outcome,
                "error": r.error,
                "seconds": round(r.seconds, 4),
                "violations": [
                    {"focus": v.focus, "message": v.message, "path": v.path, "line": v.line}
                    for v in r.violations
                ],
            }
            for r in report.results
        ],
    }


def to_junit(report: CheckReport) -> str:
    suites = ET.Element("testsuites", name="provgraph check")
    for clause, results in report.by_clause().items():
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=clause,
            tests=str(len(results)),
            failures=str(sum(1 for r in results if r.outcome == "violated" and r.blocks_gate)),
            errors=str(sum(1 for r in results if r.outcome == "error")),
            skipped=str(sum(1 for r in results if r.outcome in ("skipped", "not-applicable"))),
            time=f"{sum(r.seconds for r in results):.3f}",
        )
        for r in results:
            case = ET.SubElement(
                suite, "testcase", classname=f"provgraph.{clause}", name=r.rule.id, time=f"{r.seconds:.3f}"
            )
            body = "\n".join(_violation_line(report, v) for v in r.violations)
            if r.outcome == "error":
                ET.SubElement(case, "error", message=r.error or "rule could not run").text = r.error
            elif r.outcome in ("skipped", "not-applicable"):
                ET.SubElement(case, "skipped", message=r.error or r.outcome)
            elif r.outcome == "violated" and r.blocks_gate:
                ET.SubElement(
                    case,
                    "failure",
                    type=r.rule.severity,
                    message=f"{r.rule.title} ({len(r.violations)} violations)",
                ).text = f"{body}\nremedy: {r.rule.remedy}"
            elif r.outcome == "violated":
                # restrict/info rules do not block the gate: report without failing the case.
                ET.SubElement(case, "system-out").text = f"[{r.rule.severity}] {r.rule.title}\n{body}"
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


def to_markdown(report: CheckReport) -> str:
    out = [f"# provgraph check: {report.project}", "", f"**{gate_line(report)}**", ""]
    for clause, results in report.by_clause().items():
        out += [
            f"## {clause}",
            "",
            "| rule | severity | outcome | violations | title |",
            "|---|---|---|---|---|",
        ]
        for r in results:
            out.append(
                f"| `{r.rule.id}` | {r.rule.severity} | {_MARK[r.outcome]} | "
                f"{len(r.violations)} | {_md(r.rule.title)} |"
            )
        out.append("")
        for r in results:
            if r.outcome == "error":
                out += [f"- **`{r.rule.id}` could not run:** {_md(r.error or '')}", ""]
            if r.violations:
                out.append(f"### `{r.rule.id}`: {_md(r.rule.title)}")
                out.append("")
                out += [f"- `{report.short(v.focus)}`{_md_loc(v)}: {_md(v.message)}" for v in r.violations]
                out += ["", f"Remedy: {_md(r.rule.remedy)}", ""]
    return "\n".join(out).rstrip() + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_loc(v: Any) -> str:
    return f" ({v.location})" if v.location else ""


def _violation_line(report: CheckReport, v: Any) -> str:
    loc = f" [{v.location}]" if v.location else ""
    return f"{report.short(v.focus)}{loc}: {v.message}"


def render(report: CheckReport, fmt: str, place: SarifPlace | None = None) -> str:
    """The report in a machine format (``text`` is drawn by the CLI with rich).

    ``place`` says where the bundle lies in the repository (SARIF uris only)."""
    if fmt == "json":
        return to_json(report)
    if fmt == "junit":
        return to_junit(report)
    if fmt == "sarif":
        return to_sarif(report, place)
    if fmt == "markdown":
        return to_markdown(report)
    if fmt == "shacl":
        # lazy: the SHACL writer is its own module, loaded only for this format
        from provgraph.rules.shacl import to_shacl

        return to_shacl(report)
    if fmt == "text":
        return to_text(report)
    raise ValueError(f"unknown format {fmt!r}")


def to_text(report: CheckReport) -> str:
    """Plain text, grouped by clause (what the CLI's table shows, without colour)."""
    out = [f"provgraph check: {report.project}"]
    for clause, results in report.by_clause().items():
        out.append(f"\n[{clause}]")
        for r in results:
            out.append(
                f"  {_MARK[r.outcome]:<9} {r.rule.severity:<8} {r.rule.id}"
                f"  ({len(r.violations)})  {r.rule.title}"
            )
            if r.outcome == "error":
                out.append(f"      error: {r.error}")
            out += [f"      - {_violation_line(report, v)}" for v in r.violations]
    out += ["", gate_line(report)]
    return "\n".join(out) + "\n"
