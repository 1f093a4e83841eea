"""Binary cells by explicit (case, finding, condition) keys, and why cells are missing.

Cells come from one of two sources:

* **labels**: a reference label and a candidate label of the same (case, finding) are each
  mapped to presence/absence by the declared endpoint, and the pair gives TP / FN / FP / TN
  (coded 1 for TP and TN, 0 for FN and FP). The candidate side is tied to its case and
  condition by explicit keys in the cache, or through the file it labels: the call record that
  names the file as its output, and that record's planned call.
* **reported**: an archived confusion-cell matrix (the audit's historical route).

Every cell that cannot be formed is counted under a cause, per condition, so the matrix node
can carry a missingness table instead of silently shrinking.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from urllib.parse import unquote

import numpy as np

from provgraph.store.base import Store
from provgraph.terms import IRI, mint
from provgraph.vocab import PG_NS, PROV_NS

log = logging.getLogger(__name__)
PREFIXES = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <{PROV_NS}>\n"
_CHUNK = 400


def key_of(iri: str, base: str, kind: str) -> str:
    """The scientific key a node IRI was minted from (inverse of :func:`provgraph.terms.mint`)."""
    prefix = f"{base}{kind}/"
    if not iri.startswith(prefix):
        return iri
    return "/".join(unquote(part) for part in iri[len(prefix) :].split("/"))


@dataclass
class Cell:
    iri: IRI
    value: int
    category: str
    severity: str | None
    sources: tuple[str, ...]  # the labels (or reported cell) the cell is derived from


@dataclass
class CellGrid:
    """Blocks x conditions, with a cell or a missing-cause per position."""

    source: str  # "labels" or "reported"
    case_keys: list[str]
    finding_keys: list[str]
    condition_keys: list[str]
    blocks: list[tuple[str, str]]  # (case key, finding key) in matrix order
    values: np.ndarray  # float, NaN where missing
    cells: dict[tuple[int, int], Cell]  # (block index, condition index) -> cell
    missing: Counter[tuple[str, str]] = field(default_factory=Counter)  # (cause, condition key)
    notes: list[str] = field(default_factory=list)  # global issues (unresolved labels...)
    patients: dict[str, str] = field(default_factory=dict)  # case key -> patient IRI


def _rows(store: Store, query: str):
    return store.select(PREFIXES + query)


def _val(term) -> str | None:
    return None if term is None else term.value


def _in_chunks(store: Store, query: str, var: str, iris: list[str]):
    """Run ``query`` (with a ``VALUES_PLACEHOLDER``) for chunks of IRIs bound to ``var``."""
    for i in range(0, len(iris), _CHUNK):
        values = " ".join(f"<{x}>" for x in iris[i : i + _CHUNK])
        yield from _rows(store, query.replace("VALUES_PLACEHOLDER", f"VALUES ?{var} {{ {values} }}"))


# --- mapping of label states ------------------------------------------------------------------


def state_map(annotation: dict | None, side: str) -> dict[str, str | None]:
    """Label state -> 'positive' / 'negative' / 'exclude', or None when undeclared."""
    declared = (annotation or {}).get(side) or {}
    return {
        "POSITIVE": "positive",
        "NEGATIVE": "negative",
        "UNCERTAIN": declared.get("uncertain"),
        "NOT_MENTIONED": declared.get("not_mentioned"),
    }


def severity_of(annotation: dict | None, finding: str) -> str | None:
    rule = (annotation or {}).get("severity")
    if not rule:
        return None
    return (rule.get("findings") or {}).get(finding, rule.get("default", "minor"))


def categorise(reference_present: bool, candidate_present: bool) -> tuple[str, int]:
    if reference_present:
        return ("TP", 1) if candidate_present else ("FN", 0)
    return ("FP", 0) if candidate_present else ("TN", 1)


# --- the universe of blocks -------------------------------------------------------------------


@dataclass
class Plan:
    """Planned calls by (case, condition, replicate) with what happened to each."""

    cases: list[str]
    conditions: list[str]
    outcome: dict[tuple[str, str, int], str]  # -> cause if the call gave no usable output


def read_plan(store: Store, base: str) -> Plan:
    rows = _rows(
        store,
        """SELECT ?case ?condition ?replicate ?line ?status ?size ?file WHERE {
             ?call a pg:PlannedCall ; pg:case ?case ; pg:condition ?condition .
             OPTIONAL { ?call pg:replicate ?replicate } OPTIONAL { ?call pg:sourceLine ?line }
             OPTIONAL { ?rec pg:forCall ?call ; pg:terminal true ; pg:status ?status .
                        OPTIONAL { ?rec pg:outputFile ?file . OPTIONAL { ?file pg:byteSize ?size } } }
           }""",
    )
    first_line: dict[str, int] = {}
    conditions: dict[str, int] = {}
    outcome: dict[tuple[str, str, int], str] = {}
    for r in rows:
        case = key_of(r["case"].value, base, "case")  # type: ignore[union-attr]
        cond = key_of(r["condition"].value, base, "condition")  # type: ignore[union-attr]
        rep = int(r["replicate"].value) if r["replicate"] else 1  # type: ignore[union-attr]
        line = int(r["line"].value) if r["line"] else 0  # type: ignore[union-attr]
        first_line[case] = min(first_line.get(case, line), line)
        conditions.setdefault(cond, line)
        status, file, size = _val(r["status"]), _val(r["file"]), _val(r["size"])
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
        prior = outcome.get((case, cond, rep))
        if prior is None or cause == "output not labelled":
            outcome[(case, cond, rep)] = cause
    cases = sorted(first_line, key=lambda c: (first_line[c], c))
    return Plan(cases, sorted(conditions, key=lambda c: (conditions[c], c)), outcome)


def read_patients(store: Store, base: str, case_keys: list[str]) -> dict[str, str]:
    """case key -> patient IRI, for cases the cohort linked to a (pseudonymous) patient."""
    iris = [mint(base, "case", c) for c in case_keys]
    out: dict[str, set[str]] = defaultdict(set)
    for r in _in_chunks(
        store, "SELECT ?case ?patient WHERE { VALUES_PLACEHOLDER ?case pg:patient ?patient }", "case", iris
    ):
        out[key_of(r["case"].value, base, "case")].add(r["patient"].value)  # type: ignore[union-attr]
    return {c: sorted(p)[0] for c, p in out.items() if len(p) == 1}


# --- candidate and reference labels -----------------------------------------------------------


@dataclass
class Candidate:
    label: str
    case: str
    finding: str
    condition: str
    replicate: int
    state: str


def read_candidates(store: Store, base: str) -> tuple[list[Candidate], Counter[str]]:
    """Candidate labels tied to (case, condition, replicate); counts of those that are not."""
    files: dict[str, set[tuple[str, str, int]]] = defaultdict(set)
    for r in _rows(
        store,
        """SELECT DISTINCT ?file ?case ?condition ?replicate WHERE {
             ?rec pg:outputFile ?file ; pg:forCall ?call .
             ?call pg:case ?case ; pg:condition ?condition . OPTIONAL { ?call pg:replicate ?replicate } }""",
    ):
        files[r["file"].value].add(  # type: ignore[union-attr]
            (
                key_of(r["case"].value, base, "case"),  # type: ignore[union-attr]
                key_of(r["condition"].value, base, "condition"),  # type: ignore[union-attr]
                int(r["replicate"].value) if r["replicate"] else 1,  # type: ignore[union-attr]
            )
        )
    rows = _rows(
        store,
        """SELECT ?label ?finding ?state ?case ?condition ?replicate ?file WHERE {
             ?label a pg:CandidateLabel ; pg:finding ?finding ; pg:labelState ?state .
             OPTIONAL { ?label pg:case ?case } OPTIONAL { ?label pg:condition ?condition }
             OPTIONAL { ?label pg:replicate ?replicate }
             OPTIONAL { ?label prov:wasGeneratedBy ?x . ?x a pg:Extraction .
               { ?x prov:used ?file } UNION { ?x pg:reportSha256 ?h . ?file pg:path ?p ; pg:sha256 ?h } }
           }""",
    )
    by_label: dict[str, list] = defaultdict(list)
    for r in rows:
        by_label[r["label"].value].append(r)  # type: ignore[union-attr]
    out: list[Candidate] = []
    unresolved: Counter[str] = Counter()
    for label, group in sorted(by_label.items()):
        first = group[0]
        finding = key_of(first["finding"].value, base, "finding")  # type: ignore[union-attr]
        state = first["state"].value  # type: ignore[union-attr]
        explicit_case = _val(first["case"])
        explicit_cond = _val(first["condition"])
        explicit_rep = int(first["replicate"].value) if first["replicate"] else None  # type: ignore[union-attr]
        targets: set[tuple[str, str, int]] = set()
        for r in group:
            if r["file"] is not None:
                targets |= files.get(r["file"].value, set())  # type: ignore[union-attr]
        if explicit_case and explicit_cond:
            targets = {
                (
                    key_of(explicit_case, base, "case"),
                    key_of(explicit_cond, base, "condition"),
                    explicit_rep or 1,
                )
            }
        elif explicit_case or explicit_cond:
            want_case = key_of(explicit_case, base, "case") if explicit_case else None
            want_cond = key_of(explicit_cond, base, "condition") if explicit_cond else None
            targets = {t for t in targets if want_case in (None, t[0]) and want_cond in (None, t[1])}
        if not targets:
            has_file = any(r["file"] is not None for r in group)
            unresolved[
                "candidate label whose report no call record names as its output"
                if has_file
                else "candidate label tied to no report file and no case/condition"
            ] += 1
            continue
        for case, cond, rep in sorted(targets):
            out.append(Candidate(label, case, finding, cond, rep, state))
    return out, unresolved


def read_references(
    store: Store, base: str, case_keys: list[str], files: list[str] | None
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(case, finding) -> [(label IRI, state)], only for the given cases (and files)."""
    iris = [mint(base, "case", c) for c in case_keys]
    out: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    query = """SELECT ?label ?case ?finding ?state ?path WHERE { VALUES_PLACEHOLDER
                 ?label a pg:ReferenceLabel ; pg:case ?case ; pg:finding ?finding ; pg:labelState ?state .
                 OPTIONAL { ?label pg:sourceFile/pg:path ?path } }"""
    for r in _in_chunks(store, query, "case", iris):
        if files is not None and _val(r["path"]) not in files:
            continue
        key = (key_of(r["case"].value, base, "case"), key_of(r["finding"].value, base, "finding"))  # type: ignore[union-attr]
        entry = (r["label"].value, r["state"].value)  # type: ignore[union-attr]
        if entry not in out[key]:
            out[key].append(entry)
    return out


# --- building the grid ------------------------------------------------------------------------


def _findings(annotation: dict | None, seen: list[str]) -> tuple[list[str], list[str]]:
    """The endpoint's findings and the ones it leaves out (No Finding when not pooled)."""
    declared = list((annotation or {}).get("findings") or []) or sorted(set(seen))
    if annotation and not annotation.get("pool_no_finding", True):
        excluded = [f for f in declared if f == annotation.get("no_finding", "No Finding")]
        return [f for f in declared if f not in excluded], excluded
    return declared, []


def _conditions(analysis: dict, plan: Plan, seen: list[str]) -> list[str]:
    declared = analysis.get("conditions")
    if declared:
        return list(declared)
    found = list(plan.conditions)
    for c in sorted(set(seen)):
        if c not in found:
            found.append(c)
    return found


def grid_from_labels(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid:
    plan = read_plan(store, base)
    candidates, unresolved = read_candidates(store, base)
    replicate = int(analysis.get("replicate", 1))
    findings, excluded = _findings(annotation, [c.finding for c in candidates])
    conditions = _conditions(analysis, plan, [c.condition for c in candidates])
    cases = list(plan.cases)
    for c in sorted({c.case for c in candidates}):
        if c not in cases:
            cases.append(c)
    grid = _empty_grid("labels", cases, findings, conditions)
    for name in excluded:
        grid.notes.append(f"finding {name} is left out of the endpoint (No Finding not pooled)")
    for cause, count in sorted(unresolved.items()):
        grid.notes.append(f"{count} {cause}{'s' if count != 1 else ''}")
    files = (annotation or {}).get("reference_files")
    references = read_references(store, base, cases, files)
    ref_map, cand_map = state_map(annotation, "reference"), state_map(annotation, "candidate")
    by_slot: dict[tuple[str, str, str], list[Candidate]] = defaultdict(list)
    other_replicates = 0
    for c in candidates:
        if c.replicate != replicate:
            other_replicates += 1
            continue
        by_slot[(c.case, c.finding, c.condition)].append(c)
    if other_replicates:
        grid.notes.append(
            f"{other_replicates} candidate labels of replicates other than {replicate} are not in the matrix"
        )
    index = {b: i for i, b in enumerate(grid.blocks)}
    cond_index = {c: j for j, c in enumerate(conditions)}
    for (case, finding), i in index.items():
        refs = references.get((case, finding), [])
        ref_cause, ref_present, ref_label = _reference_value(refs, ref_map)
        for cond, j in cond_index.items():
            if ref_cause:  # a block without a usable reference is missing in every condition
                grid.missing[(ref_cause, cond)] += 1
                continue
            cands = by_slot.get((case, finding, cond), [])
            if not cands:
                cause = plan.outcome.get((case, cond, replicate), "no candidate label")
                grid.missing[(cause, cond)] += 1
                continue
            if len({c.state for c in cands}) > 1:
                grid.missing[("conflicting candidate labels", cond)] += 1
                continue
            state = cands[0].state
            target = cand_map.get(state)
            if target is None:
                grid.missing[(f"candidate {state} has no declared mapping", cond)] += 1
                continue
            if target == "exclude":
                grid.missing[(f"candidate {state} excluded by the declared mapping", cond)] += 1
                continue
            category, value = categorise(bool(ref_present), target == "positive")
            sources = (ref_label, *sorted({c.label for c in cands}))
            grid.cells[(i, j)] = Cell(
                mint(base, "cell", case, finding, cond),
                value,
                category,
                severity_of(annotation, finding) if category == "FP" else None,
                sources,  # type: ignore[arg-type]
            )
            grid.values[i, j] = value
    return grid


def _reference_value(refs: list[tuple[str, str]], mapping: dict[str, str | None]):
    """(cause if unusable, presence, label IRI) of a block's reference side."""
    if not refs:
        return "no reference label", None, None
    states = {s for _, s in refs}
    if len(states) > 1:
        return "conflicting reference labels", None, None
    state = refs[0][1]
    target = mapping.get(state)
    if target is None:
        return f"reference {state} has no declared mapping", None, None
    if target == "exclude":
        return f"reference {state} excluded by the declared mapping", None, None
    return None, target == "positive", refs[0][0]


def grid_from_reported(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid:
    """The binary matrix of an archived confusion-cell matrix, blocks in file order."""
    rows = _rows(
        store,
        """SELECT ?cell ?case ?finding ?condition ?category ?severity ?line ?replicate WHERE {
             ?cell a pg:ReportedCell ; pg:case ?case ; pg:finding ?finding ; pg:condition ?condition ;
                   pg:cellCategory ?category .
             OPTIONAL { ?cell pg:fpSeverity ?severity } OPTIONAL { ?cell pg:sourceLine ?line }
             OPTIONAL { ?cell pg:replicate ?replicate } } ORDER BY ?line""",
    )
    replicate = int(analysis.get("replicate", 1))
    plan = read_plan(store, base)
    entries = []
    for r in rows:
        rep = int(r["replicate"].value) if r["replicate"] else 1  # type: ignore[union-attr]
        if rep != replicate:
            continue
        entries.append(
            (
                key_of(r["case"].value, base, "case"),  # type: ignore[union-attr]
                key_of(r["finding"].value, base, "finding"),  # type: ignore[union-attr]
                key_of(r["condition"].value, base, "condition"),  # type: ignore[union-attr]
                r["category"].value,  # type: ignore[union-attr]
                _val(r["severity"]),
                r["cell"].value,  # type: ignore[union-attr]
            )
        )
    findings, excluded = _findings(annotation, [e[1] for e in entries])
    conditions = _conditions(analysis, plan, [e[2] for e in entries])
    cases = list(plan.cases)
    order: list[tuple[str, str]] = []
    seen_blocks = set()
    for case, finding, *_ in entries:
        if case not in cases:
            cases.append(case)
        if (case, finding) not in seen_blocks and finding in findings:
            seen_blocks.add((case, finding))
            order.append((case, finding))
    grid = _empty_grid("reported", cases, findings, conditions, order)
    for name in excluded:
        grid.notes.append(f"finding {name} is left out of the endpoint (No Finding not pooled)")
    index = {b: i for i, b in enumerate(grid.blocks)}
    cond_index = {c: j for j, c in enumerate(conditions)}
    for case, finding, cond, category, severity, node in entries:
        if (case, finding) not in index or cond not in cond_index:
            continue
        i, j = index[(case, finding)], cond_index[cond]
        value = 1 if category in ("TP", "TN") else 0
        grid.cells[(i, j)] = Cell(mint(base, "cell", case, finding, cond), value, category, severity, (node,))
        grid.values[i, j] = value
    for i, j in np.argwhere(np.isnan(grid.values)):
        case = grid.blocks[i][0]
        cond = conditions[j]
        grid.missing[(plan.outcome.get((case, cond, replicate), "no reported cell"), cond)] += 1
    return grid


def _empty_grid(
    source: str,
    cases: list[str],
    findings: list[str],
    conditions: list[str],
    order: list[tuple[str, str]] | None = None,
) -> CellGrid:
    blocks = list(order or [])
    present = set(blocks)
    for case in cases:
        for finding in findings:
            if (case, finding) not in present:
                blocks.append((case, finding))
    values = np.full((len(blocks), len(conditions)), np.nan)
    return CellGrid(source, cases, findings, conditions, blocks, values, {})


def build_grid(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid | None:
    """The cell grid the contract asks for, or None when there is nothing to build it from."""
    source = analysis.get("cells", "auto")
    has_labels = store.ask(PREFIXES + "ASK { ?l a pg:CandidateLabel }")
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
