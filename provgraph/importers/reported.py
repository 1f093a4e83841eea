"""Reported analysis outputs: statistics and confusion-cell matrices as an analysis wrote them.

* ``reported-stats``: statistics as JSON (``{"statistics": [...]}`` or a list) or CSV, one
  record per value: ``name`` and ``value`` (required), ``n``, ``cohort_rule``,
  ``test_variant``, ``condition`` (or ``conditions: [a, b]`` / CSV ``condition_b`` for a
  pair), ``family``, ``adjustment``, ``family_size``, ``replicate``, ``confidence``,
  ``cluster``, ``df``; ``x_*`` are free. Values keep their written precision: JSON numbers
  are read as decimals, ``pg:value`` is ``xsd:decimal`` (``xsd:double`` for values written
  with an exponent beyond the store's 18 decimal places) and ``pg:tolerance`` is half a unit
  in the last written digit. ``39%`` is read as 0.39 with tolerance 0.005.
* ``reported-cells``: a confusion-cell matrix CSV ``case, finding, condition, cell`` with
  ``cell`` one of TP, TN, FN, FP, optionally with a severity (``FP_minor``, or a ``severity``
  column); a blank cell is a missing cell and writes nothing.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from provgraph.ingest.api import (
    LIKELY,
    MAYBE,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    XSD_NS,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    Lit,
    RecordError,
    Source,
    csv_header,
    document_bytes,
    loads_checked,
    lone_surrogate,
    read_csv,
    record_problem,
    sniff_text,
)

FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "value": (int, Decimal, str),
    "n": (int, type(None)),
    "cohort_rule": (str, type(None)),
    "test_variant": (str, type(None)),
    "condition": (str, type(None)),
    "conditions": (list, type(None)),
    "family": (str, type(None)),
    "adjustment": (str, type(None)),
    "family_size": (int, type(None)),
    "replicate": (int, type(None)),
    "confidence": (str, type(None)),
    "cluster": (str, type(None)),
    "df": (int, type(None)),
}
CSV_COLUMNS = (*(k for k in FIELDS if k != "conditions"), "condition_b")
#: identifying fields, in the order they enter the node IRI
KEY_FIELDS = ("test_variant", "adjustment", "cohort_rule", "family", "replicate", "confidence", "cluster")
#: Oxigraph's xsd:decimal keeps 18 fractional digits
_MAX_PLACES = 18
_CELL = re.compile(r"^(TP|TN|FN|FP)(?:[ _:(-]+([A-Za-z]+)\)?)?$", re.IGNORECASE)


def parse_value(written: Any) -> tuple[Decimal, Decimal] | str:
    """``(value, tolerance)`` of a written number, or a reason it is not one."""
    if isinstance(written, bool):
        return "value must be a number, got a boolean"
    scale = Decimal(1)
    if isinstance(written, (int, Decimal)):
        text = str(written)
    else:
        text = written.strip().replace("\u2212", "-")
        if text.endswith("%"):
            text, scale = text[:-1].strip(), Decimal("0.01")
    try:
        number = Decimal(text)
    except InvalidOperation:
        return f"value {written!r} is not a number"
    if not number.is_finite():
        return f"value {written!r} is not a finite number"
    exponent = number.as_tuple().exponent
    tolerance = Decimal(5).scaleb(int(exponent) - 1) * scale  # type: ignore[arg-type]
    return number * scale, tolerance


def number_literal(value: Decimal) -> Lit:
    """``xsd:decimal`` when the store can hold it exactly, else ``xsd:double``."""
    places = -int(value.as_tuple().exponent)  # type: ignore[arg-type]
    if places <= _MAX_PLACES and abs(value) < Decimal("1e20"):
        return Lit(format(value, "f"), XSD_NS + "decimal")
    return Lit(format(value, "e"), XSD_NS + "double")


class ReportedStatsImporter(Importer):
    name = "reported-stats"
    version = "1"
    description = (
        "reported statistics JSON or CSV (name, value, n, cohort_rule, test_variant, conditions, family...)"
    )
    handles = "file"
    suffixes = frozenset({".json", ".csv"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        suffix = path.suffix.lower()
        if suffix == ".json":
            head = sniff_text(path, 4096).lstrip()
            return LIKELY if head.startswith(("{", "[")) and '"statistics"' in head else NO
        if suffix == ".csv":
            header = csv_header(path)
            if {"name", "value"} <= set(header):
                extra = {"n", "cohort_rule", "test_variant", "condition", "family", "adjustment"}
                return LIKELY if extra & set(header) else MAYBE
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        seen: dict[str, str] = {}
        for where, line, record in self._records(source, ctx):
            reason = check(record)
            if reason:
                ctx.problem(line, f"{where}{reason}")
                continue
            parsed = parse_value(record["value"])
            if isinstance(parsed, str):
                ctx.problem(line, f"{where}{parsed}")
                continue
            conditions = record.get("conditions") or (
                [record["condition"]] if record.get("condition") else []
            )
            keys = [f"name={record['name']}", *(f"condition={c}" for c in conditions)]
            keys += [f"{k}={record[k]}" for k in KEY_FIELDS if record.get(k) is not None]
            node = ctx.iri("reported", ctx.source.rel, *keys)
            if node in seen:
                ctx.problem(line, f"{where}the same statistic is reported twice (first at {seen[node]})")
                continue
            seen[node] = where.rstrip(": ") or f"line {line}"
            self._write(ctx, node, record, conditions, parsed, line)
            ctx.record()

    def _records(self, source: Source, ctx: ImportContext):
        if source.path.suffix.lower() == ".csv":
            for line, row, error in read_csv(source.path, ("name", "value"), source.rel):
                if error:
                    ctx.problem(line, error)
                    continue
                record: dict[str, Any] = {}
                for key in CSV_COLUMNS:
                    text = row.get(key, "")
                    if text == "":
                        continue
                    kinds = FIELDS.get(key, (str,))
                    if int in kinds and key != "value":
                        try:
                            record[key] = int(text)
                        except ValueError:
                            record[key] = text  # check() names the bad field
                    else:
                        record[key] = text
                if "condition_b" in record:
                    record["conditions"] = [record.pop("condition", ""), record.pop("condition_b")]
                record.update({k: v for k, v in row.items() if k.startswith("x_")})
                yield "", line, record
            return
        try:
            text = document_bytes(source.path, source.rel).decode("utf-8")
            data = loads_checked(text, parse_float=Decimal, surrogates=False)
        except (UnicodeDecodeError, json.JSONDecodeError, RecordError) as err:
            line = getattr(err, "lineno", None)
            raise InputError(source.rel, f"not a JSON document: {err}", line) from err
        items = data.get("statistics") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise InputError(source.rel, 'expected {"statistics": [...]} or a JSON list of statistics')
        if not items:
            ctx.problem(None, "no records")
        for i, item in enumerate(items):
            bad = lone_surrogate(item)
            if bad:
                ctx.problem(None, f"statistics[{i}]: {bad}")
                continue
            yield f"statistics[{i}]: ", None, item

    def _write(self, ctx: ImportContext, node, record, conditions, parsed, line) -> None:
        add = ctx.add
        value, tolerance = parsed
        add(node, RDF_TYPE, PG.ReportedValue)
        add(node, PG.statName, record["name"])
        add(node, PG.value, number_literal(value))
        add(node, PG.tolerance, number_literal(tolerance))
        add(node, PG.n, record.get("n"))
        add(node, PG.cohortRule, record.get("cohort_rule"))
        add(node, PG.testVariant, record.get("test_variant"))
        add(node, PG.adjustment, record.get("adjustment"))
        add(node, PG.familySize, record.get("family_size"))
        add(node, PG.replicate, record.get("replicate"))
        add(node, PG.confidence, record.get("confidence"))
        add(node, PG.cluster, record.get("cluster"))
        add(node, PG.df, record.get("df"))
        if record.get("family"):
            add(node, PG.testFamily, ctx.iri("family", record["family"]))
        if len(conditions) == 1:
            add(node, PG.condition, ctx.iri("condition", conditions[0]))
        elif len(conditions) == 2:
            add(node, PG.firstCondition, ctx.iri("condition", conditions[0]))
            add(node, PG.secondCondition, ctx.iri("condition", conditions[1]))
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)


def check(record: Any) -> str | None:
    reason = record_problem(record, FIELDS, ("name", "value"), "an object")
    if reason:
        return reason
    if not record["name"].strip():
        return "empty name"
    conditions = record.get("conditions")
    if conditions is not None:
        if record.get("condition"):
            return "give either condition or conditions, not both"
        if len(conditions) not in (1, 2) or not all(isinstance(c, str) and c for c in conditions):
            return "conditions must list one or two condition names"
    for key in ("n", "family_size"):
        if record.get(key) is not None and record[key] < 0:
            return f"{key} must not be negative"
    return None


class ReportedCellsImporter(Importer):
    name = "reported-cells"
    version = "1"
    description = "reported confusion-cell matrix CSV (case, finding, condition, cell TP/TN/FN/FP[_severity])"
    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file
    required = ("case", "finding", "condition", "cell")

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        return LIKELY if set(self.required) <= set(csv_header(path)) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add = ctx.add
        seen: dict[tuple[str, ...], int] = {}
        for line, row, error in read_csv(source.path, self.required, source.rel):
            if error:
                ctx.problem(line, error)
                continue
            empty = [c for c in ("case", "finding", "condition") if not row[c]]
            if empty:
                ctx.problem(line, f"empty {', '.join(empty)}")
                continue
            if not row["cell"]:
                continue  # a missing cell, as the matrix recorded it
            match = _CELL.match(row["cell"])
            if not match:
                ctx.problem(line, f"unknown cell {row['cell']!r} (TP, TN, FN, FP or FP_<severity>)")
                continue
            category, severity = match.group(1).upper(), match.group(2) or row.get("severity") or None
            if severity and category != "FP":
                ctx.problem(line, f"a severity belongs to FP cells only, got {row['cell']!r}")
                continue
            replicate = row.get("replicate") or ""
            if replicate and not replicate.isdigit():
                ctx.problem(line, f"replicate must be a whole number, got {replicate!r}")
                continue
            key = (row["case"], row["finding"], row["condition"], *([replicate] if replicate else []))
            if key in seen:
                ctx.problem(
                    line,
                    f"case {key[0]}, finding {key[1]}, condition {key[2]} appears twice "
                    f"(first on line {seen[key]})",
                )
                continue
            seen[key] = line
            node = ctx.iri("reported-cell", source.rel, *key)
            add(node, RDF_TYPE, PG.ReportedCell)
            add(node, PG.case, ctx.iri("case", key[0]))
            add(node, PG.finding, ctx.iri("finding", key[1]))
            add(node, PG.condition, ctx.iri("condition", key[2]))
            add(node, PG.replicate, int(replicate) if replicate else None)
            add(node, PG.cellCategory, category)
            add(node, PG.fpSeverity, severity.lower() if severity else None)
            add(node, PROV.wasDerivedFrom, ctx.source_iri)
            add(node, PG.sourceFile, ctx.source_iri)
            add(node, PG.sourceLine, line)
            ctx.record()
