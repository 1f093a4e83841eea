"""The consistency checks of one table row or one text line, and the check nodes they write.

A table row publishes a metric tuple for one condition (checked by :mod:`confusion`) and may
publish means of integer data (GRIM, :mod:`grim`); a line may write test reports (statistic,
df, p: :mod:`testreports`). Each check is a :class:`Finding`: which numbers it read (line,
text), whether they are consistent, the numbers a fix would change (the rule's focus) and a
message. :func:`emit` writes one ``pg:ConsistencyCheck`` per finding in the text's graph;
the rules ``release-metrics-inconsistent``, ``release-mean-grim-inconsistent`` and
``release-test-p-inconsistent`` read them.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from math import ceil, floor
from typing import TYPE_CHECKING, Any, Protocol

from provgraph.evidence.confusion import NAMES, RATE_FORMS, Result, Written, check
from provgraph.evidence.grim import grim
from provgraph.evidence.statnames import normal_name, stat_name
from provgraph.evidence.testreports import (
    DF_HEADERS,
    P_HEADERS,
    Report,
    cell_report,
    describe,
    judge,
    reports,
    test_of_header,
)
from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.evidence.claims import Number
    from provgraph.evidence.tables import Cell, Row, Table
    from provgraph.rdf.terms import IRI

#: (line, 0-based column or None, the number's text as written) of a number a check read; a
#: test report's numbers are found by text on their line (its markup shifts their columns)
Ref = tuple[int, int | None, str]
_LABELS = {
    "detection_rate": "DR",
    "false_positive_rate": "FPR",
    "specificity": "specificity",
    "precision": "precision",
    "npv": "NPV",
    "f1": "F1",
    "accuracy": "accuracy",
    "tp": "TP",
    "fn": "FN",
    "fp": "FP",
    "tn": "TN",
    "n_positive": "positives",
    "n_negative": "negatives",
    "n": "n",
}


class Writer(Protocol):
    """What :func:`emit` needs of an import context (``ingest.api.ImportContext`` is one)."""

    def iri(self, kind: str, *keys: object) -> IRI: ...

    def add(self, s: Any, p: Any, o: Any) -> None: ...


@dataclass(frozen=True)
class Finding:
    kind: str  # "metrics" | "grim" | "test-p"
    line: int
    reads: tuple[Ref, ...]
    focus: tuple[Ref, ...]
    consistent: bool
    message: str
    nearest: str | None = None


@dataclass(frozen=True)
class Bind:
    """The ``[release.bind]`` keys the checks read."""

    columns: Mapping[str, str]
    positives: int | None
    negatives: int | None
    integer_data: tuple[str, ...]

    @classmethod
    def of(cls, section: Mapping[str, Any] | None) -> Bind:
        bind = (section or {}).get("bind") or {}
        return cls(
            dict(bind.get("columns", {})),
            bind.get("positives"),
            bind.get("negatives"),
            tuple(_pattern(p) for p in bind.get("integer_data", ())),
        )

    def integer(self, header: str | None) -> bool:
        key = normal_name(header or "")
        return bool(key) and any(fnmatch.fnmatchcase(key, pattern) for pattern in self.integer_data)


def _pattern(glob: str) -> str:
    """A header glob in :func:`normal_name` form, its ``*`` and ``?`` kept (normal_name drops them)."""
    out = []
    for part in re.split(r"([*?])", glob.replace("**", "")):  # "**DR**" is bold, not a glob
        if part in ("*", "?") or not part.strip():
            out.append(part)
        else:
            lead, tail = part[: len(part) - len(part.lstrip())], part[len(part.rstrip()) :]
            out.append(lead[:1] + normal_name(part) + tail[:1])
    return "".join(out).strip()


def _written(name: str, number: Number, column_percent: bool, ref: Ref) -> Written:
    percent = number.unit == "percent"
    proportion = number.value <= 1 and number.resolution <= Decimal("0.01")
    if number.unit == "number" and column_percent and not proportion:
        percent = True  # "94" under "DR (%)"; "0.94" there is still written as a proportion
    if number.unit == "fraction" and name in RATE_FORMS:
        k, n = number.numerator, number.n
        return Written(name, number.value, Decimal(1), numerator=k, denominator=n, ref=ref)
    numerator = number.numerator if number.unit == "percent" else None
    denominator = number.n if number.unit == "percent" else None
    return Written(name, number.value, number.resolution, percent, numerator, denominator, ref)


def row_findings(table: Table, row: Row, bind: Bind) -> list[Finding]:
    """The metric-tuple check and the GRIM checks of one table row."""
    metrics: list[Written] = []
    means: list[tuple[Number, Ref]] = []
    names: list[str] = []
    line = row.cells[0].line if row.cells else table.line
    for j, cell in enumerate(row.cells):
        if not cell.numbers or j >= len(table.columns):
            continue
        header, number = table.columns[j], cell.numbers[0]
        ref = (cell.number_lines[0] if cell.number_lines else cell.line, number.column, number.text)
        if bind.integer(header) and number.unit == "number":
            means.append((number, ref))
            continue
        name = stat_name(header, dict(bind.columns))
        if name in NAMES:
            names.append(name)
            unit = table.units[j] if j < len(table.units) else None
            metrics.append(_written(name, number, unit == "percent", ref))
    if len(set(names)) < len(names):
        return []  # one statistic in two columns: the row holds more than one condition
    found = _row_report(table, row, line)
    n = next((int(w.value) for w in metrics if w.name == "n" and w.value == int(w.value)), None)
    for number, ref in means:
        found.append(_grim_finding(number, ref, n, line))
    found += _percent_findings(table, row, n, bind, line)
    if any(w.name in RATE_FORMS for w in metrics):  # counts alone are no metric tuple
        result = check(metrics, bind.positives, bind.negatives)
        checked = result.mode in ("counts", "positives only", "n-free")
        if checked and (len(metrics) > 1 or not result.consistent):
            found.append(_metrics_finding(metrics, result, line, row.label))
    return found


def _percent_findings(table: Table, row: Row, n: int | None, bind: Bind, line: int) -> list[Finding]:
    """Percentages the row states a denominator for that ``release-inconsistent-denominator``
    does not read: ``17 (8/45)`` in a % column (no % sign), and a percentage (with or without
    its sign) over the row's n. Rates of the metric tuple are left to it; a cell that writes
    ``17% (8/45)`` or ``17% of 45`` itself is the other rule's."""
    found = []
    for j, cell in enumerate(row.cells[: len(table.columns)]):
        if not cell.numbers or stat_name(table.columns[j], dict(bind.columns)) in NAMES:
            continue
        number, column_percent = cell.numbers[0], j < len(table.units) and table.units[j] == "percent"
        fraction = next((x for x in cell.numbers if x.unit == "fraction" and x.n), None)
        lead = _LEADING.match(cell.text) if column_percent and number is fraction else None
        if lead:  # "17 (8/45)": a bare integer before the fraction is no claim of its own
            text, value, half = (
                lead.group(1),
                Fraction(lead.group(1)),
                Fraction(_resolution(lead.group(1))) / 2,
            )
        elif (column_percent and number.unit == "number") or (number.unit == "percent" and number.n is None):
            text, value, half = (
                number.text.rstrip("%"),
                Fraction(number.value),
                Fraction(number.resolution) / 2,
            )
        else:
            continue
        k, over = (fraction.numerator, fraction.n) if fraction else (None, n)
        if not over:
            continue
        ref = _cell_ref(cell)
        shown = f"{text}%"
        if k is not None:
            exact = Fraction(100 * k, over)
            if abs(exact - value) <= half:
                continue
            message = f"{shown} does not equal {k}/{over} ({float(exact):.4g}%)"
        else:
            if ceil((value - half) * over / 100) <= floor((value + half) * over / 100):
                continue
            nearest = round(value * over / 100)
            message = f"{shown} of the row's n = {over}: no whole count out of {over} gives it "
            message += f"(nearest {nearest}/{over} = {float(Fraction(100 * nearest, over)):.4g}%)"
        found.append(Finding("percent", line, (ref,), (ref,), False, message))
    return found


_LEADING = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*\(")


def _resolution(text: str) -> Decimal:
    return Decimal(1).scaleb(-len(text.split(".")[1])) if "." in text else Decimal(1)


def _row_report(table: Table, row: Row, line: int) -> list[Finding]:
    """A test report written across a row's cells: a statistic column (Q, chi2, t, F, z), df, p."""
    roles: dict[str, tuple[str, Cell]] = {}
    for j, cell in enumerate(row.cells[: len(table.columns)]):
        header = normal_name(table.columns[j])
        role = "df" if header in DF_HEADERS else "p" if header in P_HEADERS else test_of_header(header)
        if role and cell.numbers and role not in roles:
            roles[role] = (cell.text, cell)
    tests = [r for r in roles if r not in ("df", "p")]
    if len(tests) != 1 or "p" not in roles:
        return []
    stat_cell, p_cell = roles[tests[0]][1], roles["p"][1]
    df_text = roles["df"][0] if "df" in roles else None
    report = cell_report(tests[0], stat_cell.text, df_text, p_cell.text)
    if report is None:
        return []
    refs = tuple(_cell_ref(c) for c in (p_cell, stat_cell))
    return [_report_finding(report, line, refs[::-1], refs)]


def _cell_ref(cell: Cell) -> Ref:
    number = cell.numbers[0]
    return (cell.number_lines[0] if cell.number_lines else cell.line, number.column, number.text)


def _report_finding(report: Report, line: int, reads: tuple[Ref, ...], focus: tuple[Ref, ...]) -> Finding:
    verdict = judge(report)
    if not verdict.inconsistent:
        message = f"{report.text}: consistent (recomputed p = {verdict.computed:.4g})"
        return Finding("test-p", line, reads, reads, True, message)
    kind = "decision error" if verdict.decision_error else "inconsistent"
    return Finding("test-p", line, reads, focus, False, describe(report, verdict), kind)


def _grim_finding(number: Number, ref: Ref, n: int | None, line: int) -> Finding:
    if n is None:
        n = number.n
    if n is None:
        message = f"mean {number.text}: no n stated, GRIM not applicable"
        return Finding("grim", line, (ref,), (ref,), True, message)
    result = grim(number.value, number.resolution, n)
    if result.consistent:
        return Finding("grim", line, (ref,), (ref,), True, f"mean {number.text} of {n} integers: consistent")
    message = (
        f"mean {number.text} of {n} integer values: no whole total over {n} gives it "
        f"(nearest {result.total}/{n} = {result.nearest})"
    )
    return Finding("grim", line, (ref,), (ref,), False, message, result.nearest)


def _metrics_finding(metrics: Sequence[Written], result: Result, line: int, label: str | None) -> Finding:
    reads = tuple(w.ref for w in metrics)
    shown = ", ".join(f"{_LABELS[w.name]} {w.ref[2]}" for w in metrics)
    who = f"{label}: " if label else ""
    if result.consistent:
        return Finding("metrics", line, reads, reads, True, f"{who}{shown}: consistent ({result.mode})")
    over = _sizes(metrics, result)
    if result.counts is None:
        focus = tuple(w.ref for w in result.changed) or reads
        message = f"{who}{shown}{over}: inconsistent; {result.note or 'no integer counts give them'}"
        if result.prints:
            message += " (" + ", ".join(f"{_LABELS[k]} would be {v}" for k, v in result.prints.items()) + ")"
        return Finding("metrics", line, reads, focus, False, message)
    tp, fn, fp, tn = result.counts
    nearest = f"TP={tp} FN={fn} FP={fp}" + (f" TN={tn}" if tn >= 0 else "")
    changes = ", ".join(f"{_LABELS[w.name]} {result.prints[w.name]} for {w.ref[2]}" for w in result.changed)
    message = (
        f"{who}{shown}{over}: no integer TP, FN, FP, TN gives all of them at their written precision; "
        f"the nearest consistent counts {nearest} print {changes}"
    )
    focus = tuple(w.ref for w in result.changed) or reads
    return Finding("metrics", line, reads, focus, False, message, nearest)


def _sizes(metrics: Sequence[Written], result: Result) -> str:
    if result.counts is None:
        return ""
    tp, fn, fp, tn = result.counts
    return f" over {tp + fn} positive" + (f" / {fp + tn} negative" if tn >= 0 else "")


def line_findings(
    line_no: int, line: str, written: Sequence[Number] = (), bind: Bind | None = None
) -> list[Finding]:
    """The statcheck-style checks of the test reports written on one line, and GRIM for a mean
    named by ``[release.bind] integer_data`` written with its n (``mean rating = 5.19, n = 28``).
    ``written`` are the line's numbers as :func:`claims.numbers` reads them."""
    found = []
    if bind is not None and bind.integer_data:
        sizes = [k for k in written if k.label in ("n", "N") and k.relation == "=" and k.unit == "number"]
        for number in written:
            n = number.n or (int(sizes[0].value) if sizes else None)
            before = normal_name(line[max(0, number.column - 60) : number.column].rstrip(" =:"))
            named = any(fnmatch.fnmatchcase(before, "*" + pattern) for pattern in bind.integer_data)
            if number.label and number.relation == "=" and number.unit == "number" and n and named:
                found.append(_grim_finding(number, (line_no, number.column, number.text), n, line_no))
    for report in reports(line):
        reads: tuple[Ref, ...] = ((line_no, None, str(report.statistic)), (line_no, None, str(report.p)))
        found.append(_report_finding(report, line_no, reads, reads[::-1]))
    return found


def emit(
    ctx: Writer,
    findings: Sequence[Finding],
    claim: Callable[[Ref], IRI | None],
    file_node: IRI,
    keys: tuple[str, ...],
    seen: dict[tuple[int, str], int] | None = None,
) -> int:
    """One ``pg:ConsistencyCheck`` per finding; ``claim`` maps a read number to its claim node.
    ``seen`` counts the checks of each (line, kind) across calls for one text (unique IRIs)."""
    add = ctx.add
    seen = {} if seen is None else seen
    for finding in findings:
        index = seen[(finding.line, finding.kind)] = seen.get((finding.line, finding.kind), 0) + 1
        node = ctx.iri("consistency", *keys, str(finding.line), finding.kind, str(index))
        add(node, RDF_TYPE, PG.ConsistencyCheck)
        add(node, PG.checkKind, finding.kind)
        add(node, PG.consistent, finding.consistent)
        add(node, PG.checkMessage, finding.message)
        add(node, PG.nearestConsistent, finding.nearest)
        add(node, PG.sourceFile, file_node)
        add(node, PG.sourceLine, finding.line)
        for ref in finding.reads:
            target = claim(ref)
            if target is not None:
                add(node, PG.readsClaim, target)
        focus = [c for c in (claim(ref) for ref in finding.focus) if c is not None]
        for target in focus[:1] if finding.kind == "test-p" else focus:
            add(node, PG.focusClaim, target)
    return len(findings)
