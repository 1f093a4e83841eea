"""Binary cells by explicit (case, finding, condition) keys, read from the graph, and why cells
are missing.

Cells come from one of two sources:

* **labels**: a reference label and a candidate label of the same (case, finding) are each
  mapped to presence/absence by the declared endpoint, and the pair gives TP / FN / FP / TN
  (coded 1 for TP and TN, 0 for FN and FP). Labels come as label rows
  (:mod:`provgraph.evidence.labelrows`, read by :mod:`provgraph.stats.read_labels`).
* **reported**: an archived confusion-cell matrix (the audit's historical route).

Every cell that cannot be formed is counted under a cause, per condition, so the matrix node
can carry a missingness table instead of silently shrinking. This module reads the plan, the
calls' outcomes, the reported cells and patients; the arrays are :mod:`provgraph.stats.core.grid`.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from provgraph.evidence import labelrows
from provgraph.rdf.terms import mint
from provgraph.stats import scan
from provgraph.stats.core import grid as cellgrid
from provgraph.stats.core.grid import CellGrid, ReportedEntry, Slot
from provgraph.stats.query import CHUNK, PREFIXES, Keys, in_chunks, key_of, stream
from provgraph.stats.read_labels import read_candidates, read_references
from provgraph.store.base import Store

log = logging.getLogger(__name__)


# --- the plan and the calls' outcomes ------------------------------------------------------------


@dataclass
class Plan:
    """Planned calls: cases and conditions in plan order, and the planned (case, condition,
    replicate) slots, as sorted integer keys over the plan's own vocabularies (a set of a
    million slot tuples was the largest Python object of the refresh). Why a slot gave no
    usable output is looked up on demand (:func:`causes`)."""

    cases: list[str]
    conditions: list[str]
    case_code: dict[str, int]
    cond_code: dict[str, int]
    replicates: np.ndarray  # distinct planned replicate numbers, sorted
    slot_keys: np.ndarray  # sorted distinct keys of the planned slots

    def planned(self, wanted: list[Slot]) -> np.ndarray:
        """Whether each (case, condition, replicate) slot is planned."""
        if not wanted or not self.slot_keys.size:
            return np.zeros(len(wanted), dtype=bool)
        case = np.array([self.case_code.get(c, -1) for c, _, _ in wanted], dtype=np.int64)
        cond = np.array([self.cond_code.get(d, -1) for _, d, _ in wanted], dtype=np.int64)
        rep = np.array([r for _, _, r in wanted], dtype=np.int64)
        at = np.minimum(np.searchsorted(self.replicates, rep), self.replicates.size - 1)
        known = (case >= 0) & (cond >= 0) & (self.replicates[at] == rep)
        key = self._key(case, cond, at)
        pos = np.minimum(np.searchsorted(self.slot_keys, key), self.slot_keys.size - 1)
        return known & (self.slot_keys[pos] == key)

    def _key(self, case: np.ndarray, cond: np.ndarray, rep_rank: np.ndarray) -> np.ndarray:
        return (case * len(self.cond_code) + cond) * self.replicates.size + rep_rank


def read_plan(store: Store, base: str, ks: scan.KeyScans | None = None) -> Plan:
    """Cases and conditions in the order the plan first names them, and its planned slots."""
    # hashed a batch at a time: the planned calls' IRIs are not kept
    keys, lines = scan.scan(
        store,
        "SELECT ?call (COALESCE(?line, 0) AS ?l) WHERE { ?call a pg:PlannedCall . "
        "OPTIONAL { ?call pg:sourceLine ?line } }",
        lambda line: int(line) if line else 0,
    )
    try:
        table = scan.Table(keys)
        first_line = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_line, table.find(keys), lines)  # type: ignore[arg-type]
        ks = ks or scan.key_scans(store, Keys(base, "case"), Keys(base, "condition"))
        ids, case, cond, rep = scan.slots_of(ks, table, len(keys))
        return _plan(ks.cases.names, ks.conditions.names, case, cond, rep, first_line[ids])
    except scan.CannotScan:
        return _joined_plan(store, base)


def _joined_plan(store: Store, base: str) -> Plan:
    """:func:`read_plan` by one SPARQL join (the engine holds every sub-select)."""
    cases, conds = scan.Codes(Keys(base, "case")), scan.Codes(Keys(base, "condition"))
    columns: list[list[int]] = [[], [], [], []]
    # Big joins are written as joins of sub-selects, which Oxigraph evaluates as hash joins over
    # index scans; plain patterns become one index lookup per row (ten times slower on disk).
    for case_iri, cond_iri, rep, line in stream(
        store,
        """SELECT ?case ?condition ?replicate ?line WHERE {
             { SELECT ?call ?line WHERE { ?call a pg:PlannedCall . OPTIONAL { ?call pg:sourceLine ?line } } }
             { SELECT ?call ?case WHERE { ?call pg:case ?case } }
             { SELECT ?call ?condition WHERE { ?call pg:condition ?condition } }
             OPTIONAL { { SELECT ?call ?replicate WHERE { ?call pg:replicate ?replicate } } } }""",
    ):
        for column, value in zip(
            columns,
            (cases(case_iri), conds(cond_iri), int(rep) if rep else 1, int(line) if line else 0),  # type: ignore[arg-type]
            strict=True,
        ):
            column.append(value)
    case, cond, rep, line = (np.asarray(c, dtype=np.int64) for c in columns)
    return _plan(cases.names, conds.names, case, cond, rep, line)


def _plan(
    case_names: list[str],
    cond_names: list[str],
    case: np.ndarray,
    cond: np.ndarray,
    rep: np.ndarray,
    line: np.ndarray,
) -> Plan:
    """The plan of slot rows (case and condition codes into the name lists): cases and
    conditions ordered by their first line, then by name."""
    order: list[list[str]] = []
    for codes, names in ((case, case_names), (cond, cond_names)):
        first = np.full(len(names), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, codes, line)
        used = sorted(np.unique(codes).tolist(), key=lambda c, f=first, n=names: (int(f[c]), n[c]))
        order.append([names[c] for c in used])
    cases, conditions = order
    case_code = {c: i for i, c in enumerate(cases)}
    cond_code = {c: j for j, c in enumerate(conditions)}
    replicates = np.unique(rep)
    plan = Plan(cases, conditions, case_code, cond_code, replicates, np.empty(0, dtype=np.int64))
    by_case = np.array([case_code.get(n, -1) for n in case_names], dtype=np.int64)
    by_cond = np.array([cond_code.get(n, -1) for n in cond_names], dtype=np.int64)
    if case.size:
        plan.slot_keys = np.unique(plan._key(by_case[case], by_cond[cond], np.searchsorted(replicates, rep)))
    return plan


def causes(store: Store, base: str, wanted: list[Slot]) -> dict[Slot, str]:
    """Why each planned (case, condition, replicate) slot gave no usable output."""
    out: dict[Slot, str] = {}
    for i in range(0, len(wanted), CHUNK):
        chunk = wanted[i : i + CHUNK]
        values = " ".join(
            f"(<{mint(base, 'case', c)}> <{mint(base, 'condition', d)}> {r})" for c, d, r in chunk
        )
        rows = stream(
            store,
            f"""SELECT ?case ?condition ?rep ?status ?size ?file WHERE {{
                 VALUES (?case ?condition ?rep) {{ {values} }}
                 ?call a pg:PlannedCall ; pg:case ?case ; pg:condition ?condition .
                 OPTIONAL {{ ?call pg:replicate ?r }} FILTER (COALESCE(?r, 1) = ?rep)
                 OPTIONAL {{ ?rec pg:forCall ?call ; pg:terminal true ; pg:status ?status .
                            OPTIONAL {{ ?rec pg:outputFile ?file .
                                       OPTIONAL {{ ?file pg:byteSize ?size }} }} }} }}""",
        )
        for case_iri, cond_iri, rep, status, size, file in rows:
            slot = (key_of(case_iri, base, "case"), key_of(cond_iri, base, "condition"), int(rep))  # type: ignore[arg-type]
            if status is None:
                cause = "call has no terminal record"
            elif status != "ok":
                cause = f"call ended {status}"
            elif file is None:
                cause = "call names no output file"
            elif size is None:
                cause = "output file missing"
            elif int(size) == 0:
                cause = "output file empty (0 bytes)"
            else:
                cause = "output not labelled"
            # one good record is enough: keep the most favourable cause
            if slot not in out or cause == "output not labelled":
                out[slot] = cause
    return out


def read_patients(store: Store, base: str, case_keys: list[str]) -> dict[str, str]:
    """case key -> patient IRI, for cases the cohort linked to a (pseudonymous) patient."""
    iris = [mint(base, "case", c) for c in case_keys]
    out: dict[str, set[str]] = defaultdict(set)
    case_key = Keys(base, "case")
    for case, patient in in_chunks(
        store, "SELECT ?case ?patient WHERE { VALUES_PLACEHOLDER ?case pg:patient ?patient }", "case", iris
    ):
        out[case_key(case)].add(patient)  # type: ignore[arg-type,union-attr]
    return {c: sorted(p)[0] for c, p in out.items() if len(p) == 1}


def _count_absent(
    grid: CellGrid, store: Store, base: str, plan: Plan, replicate: int, per_slot: Counter, unplanned: str
) -> None:
    """Count missing cells of (case, condition) slots without a cell by why the call gave none
    (looked up for planned slots only); ``unplanned`` names the cause of the others."""
    if not per_slot:
        return
    conds = grid.condition_keys
    wanted = [(grid.case_keys[c], conds[j], replicate) for c, j in per_slot]
    planned = plan.planned(wanted).tolist()
    found = causes(store, base, [w for w, p in zip(wanted, planned, strict=True) if p])
    for ((_, j), count), slot, is_planned in zip(per_slot.items(), wanted, planned, strict=True):
        cause = found.get(slot, "output not labelled") if is_planned else unplanned
        grid.missing[(cause, conds[j])] += count


# --- grids ----------------------------------------------------------------------------------------


def _seen_findings(orders: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for order in set(orders):
        for f in labelrows.findings_of(order):
            seen.setdefault(f)
    return list(seen)


def grid_from_labels(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid:
    """The binary matrix of reference x candidate label rows, blocks in (case, finding) order."""
    try:  # one scan of the case, condition and replicate statements for both readers
        ks: scan.KeyScans | None = scan.key_scans(store, Keys(base, "case"), Keys(base, "condition"))
    except scan.CannotScan:
        ks = None
    plan = read_plan(store, base, ks)
    cand, unresolved = read_candidates(store, base, ks)
    replicate = int(analysis.get("replicate", 1))
    used_orders = [cand.order_names[c] for c in np.unique(cand.order).tolist()]
    findings, excluded = cellgrid.endpoint_findings(annotation, _seen_findings(used_orders))
    target_cases = [cand.case_names[c] for c in np.unique(cand.target_case).tolist()]
    seen_conditions = [cand.cond_names[c] for c in np.unique(cand.target_cond).tolist()]
    conditions = cellgrid.grid_conditions(analysis.get("conditions"), plan.conditions, seen_conditions)
    cases = list(plan.cases)
    cases += sorted(set(target_cases) - set(cases))
    case_index = {c: i for i, c in enumerate(cases)}
    cond_index = {c: j for j, c in enumerate(conditions)}
    notes = cellgrid.excluded_notes(excluded)
    for cause, count in sorted(unresolved.items()):
        notes.append(f"{count} {cause}{'s' if count != 1 else ''}")

    sources: list[str] = []
    codes = labelrows.decode_coded(cand.order, cand.order_names, cand.states, findings)
    case_of = np.array([case_index.get(c, -1) for c in cand.case_names], dtype=np.int64)
    cond_of = np.array([cond_index.get(c, -1) for c in cand.cond_names], dtype=np.int64)
    slots = (cand.target_row, case_of[cand.target_case], cond_of[cand.target_cond], cand.target_rep)
    cand_states = cellgrid.candidate_states(
        cand.iris, slots, codes, (len(cases), len(conditions), len(findings)), replicate, sources
    )
    if cand_states.other_replicates:
        notes.append(
            f"{cand_states.other_replicates} candidate label rows of replicates other than {replicate} "
            "are not in the matrix"
        )
    ref_iris, ref_cases, ref_orders, ref_states = read_references(
        store, base, (annotation or {}).get("reference_files")
    )
    ref_codes = labelrows.decode_matrix(ref_orders, ref_states, findings)
    ref_state, ref_row = cellgrid.reference_states(
        ref_iris, ref_cases, ref_codes, case_index, len(findings), sources
    )

    grid, blocks = cellgrid.label_grid(
        annotation, cases, findings, conditions, cand_states, ref_state, ref_row, sources, notes
    )
    absent = cellgrid.absent_slots(grid, cellgrid.count_label_causes(grid, blocks))
    _count_absent(grid, store, base, plan, replicate, absent, "no candidate label")
    # complete means scored (a cell) under every condition; a block any label names still counts
    cellgrid.count_labelled(grid, grid.category >= 0, blocks.labelled)
    return grid


def read_reported_cells(store: Store, base: str, replicate: int) -> list[ReportedEntry]:
    """Reported cells of ``replicate`` in file order: (case, finding, condition, category,
    FP severity, cell IRI)."""
    case_key, find_key, cond_key = Keys(base, "case"), Keys(base, "finding"), Keys(base, "condition")
    entries = []
    for node, case, finding, cond, category, severity, _line, rep in stream(
        store,
        """SELECT ?cell ?case ?finding ?condition ?category ?severity ?line ?replicate WHERE {
             ?cell a pg:ReportedCell ; pg:case ?case ; pg:finding ?finding ; pg:condition ?condition ;
                   pg:cellCategory ?category .
             OPTIONAL { ?cell pg:fpSeverity ?severity } OPTIONAL { ?cell pg:sourceLine ?line }
             OPTIONAL { ?cell pg:replicate ?replicate } } ORDER BY ?line""",
    ):
        if (int(rep) if rep else 1) != replicate:
            continue
        entries.append((case_key(case), find_key(finding), cond_key(cond), category, severity, node))  # type: ignore[arg-type]
    return entries  # type: ignore[return-value]


def grid_from_reported(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid:
    """The binary matrix of an archived confusion-cell matrix, blocks in file order."""
    replicate = int(analysis.get("replicate", 1))
    plan = read_plan(store, base)
    entries = read_reported_cells(store, base, replicate)
    findings, excluded = cellgrid.endpoint_findings(annotation, [e[1] for e in entries])
    seen_conditions = [e[2] for e in entries]
    conditions = cellgrid.grid_conditions(analysis.get("conditions"), plan.conditions, seen_conditions)
    notes = cellgrid.excluded_notes(excluded)
    grid = cellgrid.reported_grid(list(plan.cases), findings, conditions, entries, notes)
    absent = cellgrid.absent_slots(grid, np.isnan(grid.values))
    _count_absent(grid, store, base, plan, replicate, absent, "no reported cell")
    return grid


def build_grid(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid | None:
    """The cell grid the contract asks for, or None when there is nothing to build it from."""
    source = analysis.get("cells", "auto")
    has_labels = store.ask(PREFIXES + "ASK { ?l a pg:CandidateLabelRow }")
    has_reported = store.ask(PREFIXES + "ASK { ?c a pg:ReportedCell }")
    if source == "auto":
        source = "labels" if has_labels else "reported" if has_reported else None
    if source == "labels" and has_labels:
        grid = grid_from_labels(store, base, annotation, analysis)
    elif source == "reported" and has_reported:
        grid = grid_from_reported(store, base, annotation, analysis)
    else:
        return None
    grid.patients = read_patients(store, base, grid.case_keys)
    return grid
