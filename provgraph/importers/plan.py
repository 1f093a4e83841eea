"""The canonical call plan: ``plan.csv`` with call_id, case, condition, replicate.

Each row is a planned call, one cell of the case x condition x replicate matrix. Its IRI is
minted from the call id; case and condition nodes are minted from their keys.
"""

from __future__ import annotations

from pathlib import Path

from provgraph.bundle.contract.sections.plan import plan_file
from provgraph.ingest.api import (
    CERTAIN,
    LIKELY,
    NO,
    PG,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Source,
    csv_header,
    read_csv,
)

REQUIRED = ("call_id", "case", "condition")


class PlanImporter(Importer):
    name = "plan"
    version = "1"
    description = "call plan CSV (call_id, case, condition[, replicate])"
    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        header = csv_header(path)
        if not all(c in header for c in REQUIRED):
            return NO
        if bundle.relpath(path) == plan_file(bundle.contract.section("plan")):
            return CERTAIN
        return LIKELY

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add = ctx.add
        plan = ctx.iri("plan", "main")
        seen_ids: dict[str, int] = {}
        seen_cells: dict[tuple[str, str, int], int] = {}
        cases: set[str] = set()
        conditions: set[str] = set()
        design = ctx.bundle.contract.section("factors")
        # a factorial design names every condition: a row outside it is a typo, not a new cell
        designed = set(ctx.bundle.contract.section("conditions") or {}) if design is not None else None
        replicates = (design or {}).get("replicates")
        for line, row, error in read_csv(source.path, REQUIRED, source.rel, ctx.advance):
            if error:
                ctx.problem(line, error)
                continue
            call_id, case, condition = row["call_id"], row["case"], row["condition"]
            empty = [c for c in REQUIRED if not row[c]]
            if empty:
                ctx.problem(line, f"empty {', '.join(empty)}")
                continue
            text = row.get("replicate", "") or "1"
            try:
                replicate = int(text)
            except ValueError:
                ctx.problem(line, f"replicate must be a whole number, got {text!r}")
                continue
            if replicate < 1:
                ctx.problem(line, f"replicate must be at least 1, got {replicate}")
                continue
            if designed is not None and condition not in designed:
                ctx.problem(line, f"condition {condition!r} is not a cell of [factors] ({_some(designed)})")
                continue
            if replicates is not None and replicate > replicates:
                ctx.problem(line, f"replicate {replicate} is beyond the {replicates} of [factors]")
                continue
            if call_id in seen_ids:
                ctx.problem(line, f"duplicate call_id {call_id!r} (first on line {seen_ids[call_id]})")
                continue
            cell = (case, condition, replicate)
            if cell in seen_cells:
                ctx.problem(
                    line,
                    f"case {case!r}, condition {condition!r}, replicate {replicate} is planned "
                    f"twice (first on line {seen_cells[cell]})",
                )
                continue
            seen_ids[call_id] = line
            seen_cells[cell] = line
            node = ctx.iri("call", call_id)
            case_node = ctx.iri("case", case)
            condition_node = ctx.iri("condition", condition)
            add(node, RDF_TYPE, PG.PlannedCall)
            add(node, PG.callId, call_id)
            add(node, PG.case, case_node)
            add(node, PG.condition, condition_node)
            add(node, PG.replicate, replicate)
            add(node, PG.inPlan, plan)
            add(node, PG.sourceFile, ctx.source_iri)
            add(node, PG.sourceLine, line)
            if case not in cases:
                cases.add(case)
                add(case_node, RDF_TYPE, PG.Case)
                add(case_node, PG.key, case)
            if condition not in conditions:
                conditions.add(condition)
                add(condition_node, RDF_TYPE, PG.Condition)
                add(condition_node, PG.key, condition)
            ctx.record()


def _some(keys: set[str]) -> str:
    """A few of the design's condition keys, for a message of one line."""
    shown = sorted(keys)[:4]
    return ", ".join(shown) + (f", ... {len(keys)} in all" if len(keys) > len(shown) else "")
