"""Binary cells by explicit (case, finding, condition) keys, and why cells are missing.

Cells come from one of two sources:

* **labels**: a reference label and a candidate label of the same (case, finding) are each
  mapped to presence/absence by the declared endpoint, and the pair gives TP / FN / FP / TN
  (coded 1 for TP and TN, 0 for FN and FP). Labels come as label rows
  (:mod:`provgraph.evidence.labelrows`). The candidate side is tied to its case and condition by
  explicit keys on the row, or through the file it labels: the call record that names the
  file as its output, and that record's planned call.
* **reported**: an archived confusion-cell matrix (the audit's historical route).

Every cell that cannot be formed is counted under a cause, per condition, so the matrix node
can carry a missingness table instead of silently shrinking.

The grid is held in arrays (blocks x conditions), never as one object per cell: a benchmark
of a million calls has fourteen million cells. :meth:`CellGrid.cell` gives any one cell with
the label rows it derives from.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

import numpy as np

from provgraph.evidence import labelrows
from provgraph.rdf.terms import mint
from provgraph.rdf.vocab import PG_NS, PROV_NS
from provgraph.store.base import Store

log = logging.getLogger(__name__)
PREFIXES = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <{PROV_NS}>\n"
_CHUNK = 400
CATEGORIES = ("TP", "TN", "FN", "FP")  # category codes 0..3; TP and TN are value 1


def key_of(iri: str, base: str, kind: str) -> str:
    """The scientific key a node IRI was minted from (inverse of :func:`provgraph.rdf.terms.mint`)."""
    prefix = f"{base}{kind}/"
    if not iri.startswith(prefix):
        return iri
    return "/".join(unquote(part) for part in iri[len(prefix) :].split("/"))


class _Keys:
    """Memoised :func:`key_of` for one kind (the same case IRI arrives many times)."""

    def __init__(self, base: str, kind: str) -> None:
        self.base, self.kind = base, kind
        self._seen: dict[str, str] = {}

    def __call__(self, iri: str) -> str:
        key = self._seen.get(iri)
        if key is None:
            key = self._seen[iri] = key_of(iri, self.base, self.kind)
        return key


@dataclass
class Cell:
    """One cell of a grid, as :meth:`CellGrid.cell` describes it."""

    case: str
    finding: str
    condition: str
    value: int
    category: str
    severity: str | None
    sources: tuple[str, ...]  # the label rows (or reported cell) the cell is derived from


@dataclass
class CellGrid:
    """Blocks (case, finding) x conditions, with a binary value or a missing-cause per position.

    ``values`` holds 0/1 (NaN where missing); ``category`` the TP/TN/FN/FP code (-1 where
    missing); ``cell_source`` and ``block_source`` index ``sources``: the candidate row (or
    reported cell) of each cell and the reference row of each block.
    """

    source: str  # "labels" or "reported"
    case_keys: list[str]
    finding_keys: list[str]
    condition_keys: list[str]
    block_case: np.ndarray  # case index of each block
    block_finding: np.ndarray  # finding index of each block
    values: np.ndarray  # float, NaN where missing
    category: np.ndarray  # int8, -1 where missing
    cell_source: np.ndarray  # int64 index into sources, -1
    block_source: np.ndarray  # int64 index into sources, -1 (labels: the reference row)
    sources: list[str]
    extra_sources: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)  # (case, cond)
    severity: dict[str, str | None] = field(default_factory=dict)  # finding -> FP severity
    missing: Counter[tuple[str, str]] = field(default_factory=Counter)  # (cause, condition key)
    notes: list[str] = field(default_factory=list)  # global issues (unresolved labels...)
    patients: dict[str, str] = field(default_factory=dict)  # case key -> patient IRI
    #: blocks with any label, by how many conditions labelled them (of ``labelled_conditions``)
    labelled: dict[int, int] = field(default_factory=dict)
    labelled_conditions: int = 0
    _lines: np.ndarray | None = None
    _rank: np.ndarray | None = None
    _keysets: dict[bytes, str] = field(default_factory=dict)

    @property
    def block_count(self) -> int:
        return int(self.block_case.size)

    @property
    def cell_count(self) -> int:
        return int(np.count_nonzero(self.category >= 0))

    def block(self, i: int) -> tuple[str, str]:
        """(case key, finding key) of block ``i``."""
        return self.case_keys[int(self.block_case[i])], self.finding_keys[int(self.block_finding[i])]

    @property
    def blocks(self) -> list[tuple[str, str]]:
        """Every block's (case, finding), in matrix order (builds a list: small grids only)."""
        return [self.block(i) for i in range(self.block_count)]

    def cell(self, case: str, finding: str, condition: str) -> Cell | None:
        """The cell of (case, finding, condition), or None when it is missing."""
        try:
            c, f, j = (
                self.case_keys.index(case),
                self.finding_keys.index(finding),
                self.condition_keys.index(condition),
            )
        except ValueError:
            return None
        hits = np.flatnonzero((self.block_case == c) & (self.block_finding == f))
        if not hits.size or self.category[hits[0], j] < 0:
            return None
        i = int(hits[0])
        category = CATEGORIES[int(self.category[i, j])]
        rows = self.extra_sources.get((c, j), (int(self.cell_source[i, j]),))
        refs = (int(self.block_source[i]),) if self.block_source[i] >= 0 else ()
        sources = tuple(self.sources[k] for k in (*refs, *sorted(set(rows), key=lambda k: self.sources[k])))
        severity = self.severity.get(finding) if category == "FP" else None
        return Cell(case, finding, condition, int(self.values[i, j]), category, severity, sources)

    def used_sources(self) -> list[str]:
        """Every label row (or reported cell) at least one cell derives from."""
        present = self.category >= 0
        used = set(np.unique(self.cell_source[present]).tolist())
        used |= set(np.unique(self.block_source[present.any(axis=1)]).tolist())
        for (c, j), rows in self.extra_sources.items():
            if present[self.block_case == c, j].any():
                used |= set(rows)
        used.discard(-1)
        return list(dict.fromkeys(self.sources[k] for k in sorted(used)))

    def keyset(self, rows: np.ndarray) -> str:
        """SHA-256 over the sorted ``case<TAB>finding`` lines of the blocks ``rows``."""
        if self._lines is None:
            case_rank = np.argsort(np.argsort(np.array(self.case_keys, dtype=object)))
            finding_rank = np.argsort(np.argsort(np.array(self.finding_keys, dtype=object)))
            sort_key = (
                case_rank[self.block_case] * max(1, len(self.finding_keys)) + finding_rank[self.block_finding]
            )
            order = np.argsort(sort_key, kind="stable")
            self._rank = np.empty_like(order)
            self._rank[order] = np.arange(order.size)
            lines = [
                f"{self.case_keys[int(c)]}\t{self.finding_keys[int(f)]}\n"
                for c, f in zip(self.block_case[order], self.block_finding[order], strict=True)
            ]
            self._lines = np.array(lines, dtype=object)
        positions = np.sort(self._rank[np.asarray(rows, dtype=np.int64)])  # type: ignore[index]
        token = positions.tobytes()
        digest = hashlib.sha256(token).digest()
        if digest not in self._keysets:
            text = "".join(self._lines[positions].tolist())
            self._keysets[digest] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self._keysets[digest]


def _rows(store: Store, query: str):
    return store.select(PREFIXES + query)


def _stream(store: Store, query: str, bindings=None) -> Iterator[tuple[str | None, ...]]:
    return store.stream(PREFIXES + query, bindings)


def _val(term) -> str | None:
    return None if term is None else term.value


def _in_chunks(store: Store, query: str, var: str, iris: list[str]):
    """Run ``query`` (with a ``VALUES_PLACEHOLDER``) for chunks of IRIs bound to ``var``."""
    for i in range(0, len(iris), _CHUNK):
        values = " ".join(f"<{x}>" for x in iris[i : i + _CHUNK])
        yield from _stream(store, query.replace("VALUES_PLACEHOLDER", f"VALUES ?{var} {{ {values} }}"))


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
    """Planned calls: cases and conditions in plan order, and the planned (case, condition,
    replicate) slots. Why a slot gave no usable output is looked up on demand (:func:`causes`)."""

    cases: list[str]
    conditions: list[str]
    slots: set[tuple[str, str, int]]


def read_plan(store: Store, base: str) -> Plan:
    case_key, cond_key = _Keys(base, "case"), _Keys(base, "condition")
    first_line: dict[str, int] = {}
    conditions: dict[str, int] = {}
    slots: set[tuple[str, str, int]] = set()
    # Big joins are written as joins of sub-selects, which Oxigraph evaluates as hash joins over
    # index scans; plain patterns become one index lookup per row (ten times slower on disk).
    for case_iri, cond_iri, rep, line in _stream(
        store,
        """SELECT ?case ?condition ?replicate ?line WHERE {
             { SELECT ?call ?line WHERE { ?call a pg:PlannedCall . OPTIONAL { ?call pg:sourceLine ?line } } }
             { SELECT ?call ?case WHERE { ?call pg:case ?case } }
             { SELECT ?call ?condition WHERE { ?call pg:condition ?condition } }
             OPTIONAL { { SELECT ?call ?replicate WHERE { ?call pg:replicate ?replicate } } } }""",
    ):
        case, cond = case_key(case_iri), cond_key(cond_iri)  # type: ignore[arg-type]
        n = int(line) if line else 0
        if n < first_line.get(case, n + 1):
            first_line[case] = n
        if n < conditions.get(cond, n + 1):
            conditions[cond] = n
        slots.add((case, cond, int(rep) if rep else 1))
    cases = sorted(first_line, key=lambda c: (first_line[c], c))
    return Plan(cases, sorted(conditions, key=lambda c: (conditions[c], c)), slots)


def causes(store: Store, base: str, wanted: list[tuple[str, str, int]]) -> dict[tuple[str, str, int], str]:
    """Why each planned (case, condition, replicate) slot gave no usable output."""
    out: dict[tuple[str, str, int], str] = {}
    for i in range(0, len(wanted), _CHUNK):
        chunk = wanted[i : i + _CHUNK]
        values = " ".join(
            f"(<{mint(base, 'case', c)}> <{mint(base, 'condition', d)}> {r})" for c, d, r in chunk
        )
        rows = _stream(
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
    case_key = _Keys(base, "case")
    for case, patient in _in_chunks(
        store, "SELECT ?case ?patient WHERE { VALUES_PLACEHOLDER ?case pg:patient ?patient }", "case", iris
    ):
        out[case_key(case)].add(patient)  # type: ignore[arg-type,union-attr]
    return {c: sorted(p)[0] for c, p in out.items() if len(p) == 1}


# --- candidate and reference label rows --------------------------------------------------------


@dataclass
class Rows:
    """Label rows read from the store: IRIs, their (case, condition, replicate) targets and a
    rows x findings matrix of state codes (:data:`provgraph.evidence.labelrows.INDEX`, -1 unlabelled)."""

    iris: list[str]
    orders: list[str]
    states: list[str]
    targets: list[list[tuple[str, str, int]]]


def read_candidates(store: Store, base: str) -> tuple[Rows, Counter[str]]:
    """Candidate label rows tied to (case, condition, replicate); counts of rows that are not."""
    case_key, cond_key = _Keys(base, "case"), _Keys(base, "condition")
    iris: list[str] = []
    orders: list[str] = []
    states: list[str] = []
    explicit: list[tuple[str, str, int] | None] = []
    found: list[list[tuple[str, str, int]]] = []
    has_file: list[bool] = []
    by_row: dict[str, int] = {}
    seen_orders: dict[str, str] = {}
    # row -> extraction -> report file (by path, or by the hash of the text it labelled) ->
    # the call records naming that file as output -> their planned calls; all hash joins
    for row, order, st, ecase, econd, erep, file, case, cond, rep in _stream(
        store,
        """SELECT ?row ?order ?states ?ecase ?econd ?erep ?file ?case ?condition ?replicate WHERE {
             { SELECT ?row WHERE { ?row a pg:CandidateLabelRow } }
             { SELECT ?row ?order WHERE { ?row pg:findingOrder ?order } }
             { SELECT ?row ?states WHERE { ?row pg:labelStates ?states } }
             OPTIONAL { { SELECT ?row ?ecase WHERE { ?row pg:case ?ecase } } }
             OPTIONAL { { SELECT ?row ?econd WHERE { ?row pg:condition ?econd } } }
             OPTIONAL { { SELECT ?row ?erep WHERE { ?row pg:replicate ?erep } } }
             OPTIONAL { { SELECT ?row ?file ?case ?condition ?replicate WHERE {
               { SELECT ?row ?x WHERE { ?row prov:wasGeneratedBy ?x } }
               { SELECT ?x WHERE { ?x a pg:Extraction } }
               { { SELECT ?x ?file WHERE { ?x prov:used ?file } }
                 UNION { { SELECT ?x ?h WHERE { ?x pg:reportSha256 ?h } }
                         { SELECT ?file ?h WHERE { ?file pg:sha256 ?h } } } }
               OPTIONAL { { SELECT ?file ?case ?condition ?replicate WHERE {
                 { SELECT ?rec ?file WHERE { ?rec pg:outputFile ?file } }
                 { SELECT ?rec ?call WHERE { ?rec pg:forCall ?call } }
                 { SELECT ?call ?case WHERE { ?call pg:case ?case } }
                 { SELECT ?call ?condition WHERE { ?call pg:condition ?condition } }
                 OPTIONAL { { SELECT ?call ?replicate WHERE { ?call pg:replicate ?replicate } } } } } } } } }
           }""",
    ):
        k = by_row.get(row)  # type: ignore[arg-type]
        if k is None:
            k = by_row[row] = len(iris)  # type: ignore[index]
            iris.append(row)  # type: ignore[arg-type]
            orders.append(seen_orders.setdefault(order, order))  # type: ignore[arg-type]  # one copy each
            states.append(st)  # type: ignore[arg-type]
            keys = (
                case_key(ecase) if ecase else "",
                cond_key(econd) if econd else "",
                int(erep) if erep else 0,
            )
            explicit.append(keys if ecase or econd else None)
            found.append([])
            has_file.append(False)
        if file is not None:
            has_file[k] = True
            if case is not None and cond is not None:
                target = (case_key(case), cond_key(cond), int(rep) if rep else 1)
                if target not in found[k]:
                    found[k].append(target)
    out = Rows([], [], [], [])
    unresolved: Counter[str] = Counter()
    for k in range(len(iris)):
        resolved = _resolve(explicit[k], found[k])
        if not resolved:
            unresolved[
                "candidate label row whose report no call record names as its output"
                if has_file[k]
                else "candidate label row tied to no report file and no case/condition"
            ] += 1
            continue
        out.iris.append(iris[k])
        out.orders.append(orders[k])
        out.states.append(states[k])
        out.targets.append(resolved)
    return out, unresolved


def _resolve(
    explicit: tuple[str, str, int] | None, found: list[tuple[str, str, int]]
) -> list[tuple[str, str, int]]:
    """The (case, condition, replicate) slots a row labels: its explicit keys when it names both
    case and condition, else the slots of its file's call records (filtered by a partial key)."""
    if explicit is None:
        return sorted(set(found))
    case, cond, rep = explicit
    if case and cond:
        return [(case, cond, rep or 1)]
    return sorted({t for t in found if case in ("", t[0]) and cond in ("", t[1])})


def read_references(
    store: Store, base: str, files: list[str] | None
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Reference label rows: (IRIs, case keys, finding orders, states), only from ``files``
    when given (bundle paths)."""
    case_key = _Keys(base, "case")
    iris, cases, orders, states = [], [], [], []
    for row, case, order, st, path in _stream(
        store,
        """SELECT ?row ?case ?order ?states ?path WHERE {
             ?row a pg:ReferenceLabelRow ; pg:case ?case ; pg:findingOrder ?order ; pg:labelStates ?states .
             OPTIONAL { ?row pg:sourceFile/pg:path ?path } }""",
    ):
        if files is not None and path not in files:
            continue
        iris.append(row)
        cases.append(case_key(case))  # type: ignore[arg-type]
        orders.append(order)
        states.append(st)
    return iris, cases, orders, states  # type: ignore[return-value]


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


def _seen_findings(orders: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for order in set(orders):
        for f in labelrows.findings_of(order):
            seen.setdefault(f)
    return list(seen)


#: how a mapped state is coded while building: 1 positive, 0 negative, 2 exclude, 3 undeclared
_POS, _NEG, _EXCL, _UNDECL = 1, 0, 2, 3
_TARGET = {"positive": _POS, "negative": _NEG, "exclude": _EXCL, None: _UNDECL}


def _mapping_lut(mapping: dict[str, str | None]) -> np.ndarray:
    """State code (:data:`labelrows.INDEX`) -> mapped code; index 4 stands for 'no label'."""
    lut = np.full(5, -1, dtype=np.int8)
    for state, code in labelrows.INDEX.items():
        lut[code] = _TARGET[mapping[labelrows.STATE[state]]]
    return lut


def grid_from_labels(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid:
    plan = read_plan(store, base)
    cand, unresolved = read_candidates(store, base)
    replicate = int(analysis.get("replicate", 1))
    findings, excluded = _findings(annotation, _seen_findings(cand.orders))
    conditions = _conditions(analysis, plan, [t[1] for targets in cand.targets for t in targets])
    cases = list(plan.cases)
    known = set(cases)
    for c in sorted({t[0] for targets in cand.targets for t in targets} - known):
        cases.append(c)
    case_index = {c: i for i, c in enumerate(cases)}
    cond_index = {c: j for j, c in enumerate(conditions)}
    n_cases, n_find, n_cond = len(cases), len(findings), len(conditions)
    notes = [f"finding {name} is left out of the endpoint (No Finding not pooled)" for name in excluded]
    for cause, count in sorted(unresolved.items()):
        notes.append(f"{count} {cause}{'s' if count != 1 else ''}")

    # candidate states per (case, condition, finding): -1 none, -2 conflicting
    sources: list[str] = []
    cand_state = np.full((n_cases, n_cond, n_find), -1, dtype=np.int8)
    cand_row = np.full((n_cases, n_cond), -1, dtype=np.int64)
    extra: dict[tuple[int, int], tuple[int, ...]] = {}
    codes = labelrows.decode_matrix(cand.orders, cand.states, findings)
    other_replicates = 0
    for k, targets in enumerate(cand.targets):
        for case, cond, rep in targets:
            if rep != replicate:
                other_replicates += 1
                continue
            j = cond_index.get(cond)
            if j is None:
                continue
            i = case_index[case]
            source = len(sources)
            sources.append(cand.iris[k])
            if cand_row[i, j] < 0:
                cand_row[i, j] = source
                cand_state[i, j] = codes[k]
                continue
            # a second row for the same slot: equal states agree, different ones conflict
            extra[(i, j)] = (*extra.get((i, j), (int(cand_row[i, j]),)), source)
            mine, prior = codes[k], cand_state[i, j]
            clash = (mine >= 0) & (prior >= 0) & (mine != prior)
            cand_state[i, j] = np.where(clash, -2, np.where(prior == -1, mine, prior))
    if other_replicates:
        notes.append(
            f"{other_replicates} candidate label rows of replicates other than {replicate} "
            "are not in the matrix"
        )

    # reference states per (case, finding): -1 none, -2 conflicting
    ref_files = (annotation or {}).get("reference_files")
    ref_iris, ref_cases, ref_orders, ref_states = read_references(store, base, ref_files)
    ref_codes = labelrows.decode_matrix(ref_orders, ref_states, findings)
    ref_state = np.full((n_cases, n_find), -1, dtype=np.int8)
    ref_row = np.full((n_cases, n_find), -1, dtype=np.int64)
    for k, case in enumerate(ref_cases):
        i = case_index.get(case)
        if i is None:
            continue
        mine = ref_codes[k]
        labelled = mine >= 0
        if not labelled.any():
            continue
        source = len(sources)
        sources.append(ref_iris[k])
        prior = ref_state[i]
        clash = labelled & (prior >= 0) & (prior != mine) | labelled & (prior == -2)
        fresh = labelled & (prior == -1)
        ref_row[i] = np.where(fresh, source, ref_row[i])
        ref_state[i] = np.where(clash, -2, np.where(fresh, mine, prior))

    # map both sides; 4 in the lookup stands for "no label"
    ref_lut, cand_lut = (
        _mapping_lut(state_map(annotation, "reference")),
        _mapping_lut(state_map(annotation, "candidate")),
    )
    ref_mapped = np.where(ref_state >= 0, ref_lut[np.clip(ref_state, 0, 3)], -1)  # n_cases x n_find
    cand_mapped = np.where(cand_state >= 0, cand_lut[np.clip(cand_state, 0, 3)], -1)  # cases x conds x finds

    # blocks in (case, finding) order; arrays below are blocks x conditions
    block_case = np.repeat(np.arange(n_cases), n_find)
    block_finding = np.tile(np.arange(n_find), n_cases)
    ref_b = ref_state.reshape(-1)
    ref_m = ref_mapped.reshape(-1)
    cand_b = cand_state.transpose(0, 2, 1).reshape(-1, n_cond)
    cand_m = cand_mapped.transpose(0, 2, 1).reshape(-1, n_cond)
    ref_ok = ref_m.reshape(-1, 1) >= 0
    ref_ok = ref_ok & (ref_m.reshape(-1, 1) <= _POS)
    cand_ok = (cand_m == _POS) | (cand_m == _NEG)
    present = ref_ok & cand_ok
    ref_pos = ref_m.reshape(-1, 1) == _POS
    cand_pos = cand_m == _POS
    category = np.full(present.shape, -1, dtype=np.int8)
    category[present & ref_pos & cand_pos] = 0  # TP
    category[present & ~ref_pos & ~cand_pos] = 1  # TN
    category[present & ref_pos & ~cand_pos] = 2  # FN
    category[present & ~ref_pos & cand_pos] = 3  # FP
    values = np.where(present, (category <= 1).astype(np.float64), np.nan)
    cell_source = np.where(present, cand_row[block_case], -1)
    block_source = ref_row.reshape(-1)

    grid = CellGrid(
        "labels",
        cases,
        findings,
        conditions,
        block_case,
        block_finding,
        values,
        category,
        cell_source,
        block_source,
        sources,
        extra,
        {f: severity_of(annotation, f) for f in findings},
        notes=notes,
    )
    _count_missing(grid, store, base, plan, replicate, ref_b, ref_m, cand_b, cand_m, ref_ok)
    # complete means scored (a cell) under every condition; a block any label names still counts
    _count_labelled(grid, present, (ref_b != -1) | (cand_b != -1).any(axis=1))
    return grid


def _count_labelled(grid: CellGrid, labelled: np.ndarray, other: np.ndarray) -> None:
    """How many of the conditions that scored anything scored each block (``labelled``: blocks x
    conditions with a cell); blocks with only ``other`` evidence (a label but no cell) count at 0."""
    active = labelled.any(axis=0)
    k = labelled[:, active].sum(axis=1)
    counted = (k > 0) | other
    grid.labelled_conditions = int(active.sum())
    values, counts = np.unique(k[counted], return_counts=True)
    grid.labelled = {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def _count_missing(grid, store, base, plan, replicate, ref_b, ref_m, cand_b, cand_m, ref_ok) -> None:
    """The missingness table: every cell that could not be formed, by cause and condition."""
    conds = grid.condition_keys
    n_cond = len(conds)
    # the reference side decides first: a block without a usable reference is missing everywhere
    ref_causes: list[tuple[np.ndarray, str]] = [
        (ref_b == -1, "no reference label"),
        (ref_b == -2, "conflicting reference labels"),
    ]
    for state, code in labelrows.INDEX.items():
        name = labelrows.STATE[state]
        at = ref_b == code
        ref_causes.append((at & (ref_m == _UNDECL), f"reference {name} has no declared mapping"))
        ref_causes.append((at & (ref_m == _EXCL), f"reference {name} excluded by the declared mapping"))
    for mask, cause in ref_causes:
        count = int(np.count_nonzero(mask))
        if count:
            for cond in conds:
                grid.missing[(cause, cond)] += count
    usable = ref_ok[:, 0]
    # then the candidate side
    cand_causes: list[tuple[np.ndarray, str]] = [(cand_b == -2, "conflicting candidate labels")]
    for state, code in labelrows.INDEX.items():
        name = labelrows.STATE[state]
        at = cand_b == code
        cand_causes.append((at & (cand_m == _UNDECL), f"candidate {name} has no declared mapping"))
        cand_causes.append((at & (cand_m == _EXCL), f"candidate {name} excluded by the declared mapping"))
    for mask, cause in cand_causes:
        counts = np.count_nonzero(mask & usable[:, None], axis=0)
        for j in range(n_cond):
            if counts[j]:
                grid.missing[(cause, conds[j])] += int(counts[j])
    # no candidate label: why did the call give none? (looked up for those slots only)
    absent = (cand_b == -1) & usable[:, None]
    if absent.any():
        blocks, js = np.nonzero(absent)
        slot_cases = grid.block_case[blocks]
        per_slot = Counter(zip(slot_cases.tolist(), js.tolist(), strict=True))
        wanted = [(grid.case_keys[c], conds[j], replicate) for c, j in per_slot]
        planned = [w for w in wanted if w in plan.slots]
        found = causes(store, base, planned)
        for (c, j), count in per_slot.items():
            slot = (grid.case_keys[c], conds[j], replicate)
            cause = found.get(slot, "output not labelled") if slot in plan.slots else "no candidate label"
            grid.missing[(cause, conds[j])] += count


def grid_from_reported(store: Store, base: str, annotation: dict | None, analysis: dict) -> CellGrid:
    """The binary matrix of an archived confusion-cell matrix, blocks in file order."""
    replicate = int(analysis.get("replicate", 1))
    case_key, find_key, cond_key = _Keys(base, "case"), _Keys(base, "finding"), _Keys(base, "condition")
    plan = read_plan(store, base)
    entries = []
    for node, case, finding, cond, category, severity, _line, rep in _stream(
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
    findings, excluded = _findings(annotation, [e[1] for e in entries])
    conditions = _conditions(analysis, plan, [e[2] for e in entries])
    cases = list(plan.cases)
    known = set(cases)
    order: list[tuple[str, str]] = []
    seen_blocks = set()
    finding_set = set(findings)
    for case, finding, *_ in entries:
        if case not in known:
            known.add(case)
            cases.append(case)
        if (case, finding) not in seen_blocks and finding in finding_set:
            seen_blocks.add((case, finding))
            order.append((case, finding))
    for case in cases:
        for finding in findings:
            if (case, finding) not in seen_blocks:
                order.append((case, finding))
    case_index = {c: i for i, c in enumerate(cases)}
    find_index = {f: i for i, f in enumerate(findings)}
    block_case = np.array([case_index[c] for c, _ in order], dtype=np.int64)
    block_finding = np.array([find_index[f] for _, f in order], dtype=np.int64)
    index = {b: i for i, b in enumerate(order)}
    cond_index = {c: j for j, c in enumerate(conditions)}
    n = len(order)
    category = np.full((n, len(conditions)), -1, dtype=np.int8)
    cell_source = np.full((n, len(conditions)), -1, dtype=np.int64)
    sources: list[str] = []
    severity: dict[str, str | None] = {}
    for case, finding, cond, cat, sev, node in entries:
        if (case, finding) not in index or cond not in cond_index:
            continue
        i, j = index[(case, finding)], cond_index[cond]
        category[i, j] = CATEGORIES.index(cat) if cat in CATEGORIES else (0 if cat in ("TP", "TN") else 2)
        cell_source[i, j] = len(sources)
        sources.append(node)  # type: ignore[arg-type]
        if cat == "FP" and sev:
            severity.setdefault(finding, sev)
    values = np.where(category >= 0, (category <= 1).astype(np.float64), np.nan)
    grid = CellGrid(
        "reported",
        cases,
        findings,
        conditions,
        block_case,
        block_finding,
        values,
        category,
        cell_source,
        np.full(n, -1, dtype=np.int64),
        sources,
        severity=severity,
        notes=[f"finding {name} is left out of the endpoint (No Finding not pooled)" for name in excluded],
    )
    _count_labelled(grid, category >= 0, np.zeros(n, dtype=bool))
    absent = np.argwhere(np.isnan(values))
    if absent.size:
        per_slot = Counter((int(grid.block_case[i]), int(j)) for i, j in absent)
        planned = [
            (cases[c], conditions[j], replicate)
            for c, j in per_slot
            if (cases[c], conditions[j], replicate) in plan.slots
        ]
        found = causes(store, base, planned)
        for (c, j), count in per_slot.items():
            slot = (cases[c], conditions[j], replicate)
            cause = found.get(slot, "output not labelled") if slot in plan.slots else "no reported cell"
            grid.missing[(cause, conditions[j])] += count
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
