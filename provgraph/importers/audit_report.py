"""The reviewer harness's ``audit_results/audit_report.md``: its figures as reported values.

Shape: jheuer/replication-trap ``score_audit.py`` ``generate_report`` (the Markdown tables it
writes). The figures provgraph recomputes from the reviews and the answer key become
``pg:ReportedValue`` nodes of the report's condition (the results key of the
``audit_results/reviews.json`` beside it, see :func:`provgraph.importers.reviews.results_key`),
each at its line, with the precision it is written to:

* "Categories detected" -> ``category_detection_rate``;
* "Overall accuracy", "Detection rate", "False positive rate", "Precision", "F1 score" ->
  ``accuracy``, ``detection_rate``, ``false_positive_rate``, ``precision``, ``f1`` of the single run;
* each row of "Confidence Calibration" -> ``accuracy`` at that confidence tier.

The bootstrap intervals are not read: ``score_audit.py`` draws them with Python's
``random.Random(42)``, which provgraph's bootstrap does not reproduce draw for draw, so they are
not comparable value for value. "Categories with FP" is not a statistic provgraph recomputes.
"""

from __future__ import annotations

import re
from pathlib import Path

from provgraph.importers.reported import number_literal, parse_value
from provgraph.importers.reviews import results_key
from provgraph.ingest.api import (
    CERTAIN,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    Source,
    sniff_text,
)

TITLE = "# Adversarial Skill Audit"
#: table row label -> statistic name
ROWS = {
    "Categories detected": "category_detection_rate",
    "Overall accuracy": "accuracy",
    "Detection rate": "detection_rate",
    "False positive rate": "false_positive_rate",
    "Precision": "precision",
    "F1 score": "f1",
}
_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|")
#: "6/6 (100.0%)" or "77.3%" or "0.850": the count's denominator and the value
_VALUE = re.compile(r"^(?:(\d+)\s*/\s*(\d+)\s*\(([^)]+)\)|([-0-9.]+%?))$")
_TIER = re.compile(r"^\|\s*(HIGH|MEDIUM|LOW)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*([0-9.]+%)\s*\|")
MAX_LINE = 1024 * 1024


class AuditReportImporter(Importer):
    name = "audit-report"
    version = "1"
    description = "reviewer harness audit_results/audit_report.md (score_audit.py): its figures, reported"
    handles = "file"
    suffixes = frozenset({".md"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.name != "audit_report.md" or results_key(path, bundle.root) is None:
            return NO
        return CERTAIN if sniff_text(path, 512).lstrip().startswith(TITLE) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        key = results_key(source.path, ctx.bundle.root) or "audit"
        try:
            text = source.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(source.rel, f"cannot read as UTF-8 text: {err}") from err
        section = ""
        found = 0
        for line_no, line in enumerate(text.splitlines(), start=1):
            if len(line) > MAX_LINE:
                ctx.problem(line_no, "a line over 1 MiB; not read")
                continue
            if line.startswith("#"):
                section = line.lstrip("#").strip()
                continue
            if section == "Confidence Calibration":
                tier = _TIER.match(line)
                if tier:
                    found += self._write(
                        ctx, key, "accuracy", tier.group(4), int(tier.group(2)), line_no, tier.group(1)
                    )
                continue
            row = _ROW.match(line)
            if not row or row.group(1) not in ROWS:
                continue
            match = _VALUE.match(row.group(2))
            if not match:
                ctx.problem(line_no, f"{row.group(1)}: value {row.group(2)!r} is not a number or k/n (x%)")
                continue
            written = match.group(3) or match.group(4)
            n = int(match.group(2)) if match.group(2) else None
            found += self._write(ctx, key, ROWS[row.group(1)], written, n, line_no, None)
        if not found:
            ctx.problem(None, "no figures found (expected score_audit.py's tables)")

    def _write(
        self,
        ctx: ImportContext,
        key: str,
        name: str,
        written: str,
        n: int | None,
        line: int,
        tier: str | None,
    ) -> int:
        parsed = parse_value(written)
        if isinstance(parsed, str):
            ctx.problem(line, f"{name}: {parsed}")
            return 0
        value, tolerance = parsed
        node = ctx.iri("reported", ctx.source.rel, f"name={name}", *([f"confidence={tier}"] if tier else []))
        add = ctx.add
        add(node, RDF_TYPE, PG.ReportedValue)
        add(node, PG.statName, name)
        add(node, PG.value, number_literal(value))
        add(node, PG.tolerance, number_literal(tolerance))
        add(node, PG.n, n)
        add(node, PG.condition, ctx.iri("condition", key))
        if tier:
            add(node, PG.testVariant, "by-confidence")
            add(node, PG.confidence, tier)
        else:  # the harness scores one run per reviews.json
            add(node, PG.testVariant, "single-run")
            add(node, PG.replicate, 1)
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)
        ctx.record()
        return 1
