"""The binary cell grid in arrays, and the array steps that form it; nothing here reads a graph.

A grid is blocks (case, finding) x conditions, held in arrays, never as one object per cell: a
benchmark of a million calls has fourteen million cells. :meth:`CellGrid.cell` gives any one
cell with the label rows (or reported cell) it derives from. Label states come in as the codes
of :data:`provgraph.evidence.labelrows.INDEX` (``-1`` no label), already decoded; the keys
(case, finding, condition) are plain strings. Reading them from the store is
:mod:`provgraph.stats.cells`' part.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from provgraph.evidence import labelrows
from provgraph.stats.core import keylines

CATEGORIES = ("TP", "TN", "FN", "FP")  # category codes 0..3; TP and TN are value 1
#: how a mapped state is coded while building: 1 positive, 0 negative, 2 exclude, 3 undeclared
_POS, _NEG, _EXCL, _UNDECL = 1, 0, 2, 3
_TARGET = {"positive": _POS, "negative": _NEG, "exclude": _EXCL, None: _UNDECL}
Slot = tuple[str, str, int]  # (case, condition, replicate)
#: a reported cell: (case, finding, condition, category, FP severity, cell IRI)
ReportedEntry = tuple[str, str, str, str, str | None, str]


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
    _lines: np.ndarray | None = None  # every block's line, sorted, as UTF-8 bytes
    _offsets: np.ndarray | None = None  # where each of those lines starts in ``_lines``
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
        """Every label row (or reported cell) at least one cell derives from, once each.

        Marked a condition at a time: the whole grid's masked source indices are as many
        int64s as cells (14 M at 10^6 calls, 0.3 GB with their sort)."""
        used = np.zeros(len(self.sources), dtype=bool)
        any_cell = np.zeros(self.block_count, dtype=bool)
        for j in range(self.category.shape[1]):
            present = self.category[:, j] >= 0
            rows = self.cell_source[present, j]
            used[rows[rows >= 0]] = True
            any_cell |= present
            for (c, jj), extra in self.extra_sources.items():
                if jj == j and present[self.block_case == c].any():
                    used[list(extra)] = True
        blocks = self.block_source[any_cell]
        used[blocks[blocks >= 0]] = True
        return list(dict.fromkeys(self.sources[k] for k in np.flatnonzero(used).tolist()))

    def keyset(self, rows: np.ndarray) -> str:
        """SHA-256 over the sorted ``case<TAB>finding`` lines of the blocks ``rows``."""
        if self._lines is None:
            self._rank, self._lines, self._offsets = keylines.sorted_lines(
                self.case_keys, self.finding_keys, self.block_case, self.block_finding
            )
        positions = np.sort(self._rank[np.asarray(rows, dtype=np.int64)])  # type: ignore[index]
        token = positions.tobytes()
        digest = hashlib.sha256(token).digest()
        if digest not in self._keysets:
            self._keysets[digest] = keylines.sha256_of(self._lines, self._offsets, positions)  # type: ignore[arg-type]
        return self._keysets[digest]


# --- the declared endpoint ----------------------------------------------------------------------


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
    """The declared severity of a false positive of ``finding`` (None without a severity rule)."""
    rule = (annotation or {}).get("severity")
    if not rule:
        return None
    return (rule.get("findings") or {}).get(finding, rule.get("default", "minor"))


def endpoint_findings(annotation: dict | None, seen: list[str]) -> tuple[list[str], list[str]]:
    """The endpoint's findings and the ones it leaves out (No Finding when not pooled)."""
    declared = list((annotation or {}).get("findings") or []) or sorted(set(seen))
    if annotation and not annotation.get("pool_no_finding", True):
        excluded = [f for f in declared if f == annotation.get("no_finding", "No Finding")]
        return [f for f in declared if f not in excluded], excluded
    return declared, []


def excluded_notes(excluded: list[str]) -> list[str]:
    return [f"finding {name} is left out of the endpoint (No Finding not pooled)" for name in excluded]


def grid_conditions(declared: list[str] | None, planned: list[str], seen: list[str]) -> list[str]:
    """The declared conditions, else the planned ones in plan order and then any others seen."""
    if declared:
        return list(declared)
    found = list(planned)
    for c in sorted(set(seen)):
        if c not in found:
            found.append(c)
    return found


def mapping_lut(mapping: dict[str, str | None]) -> np.ndarray:
    """State code (:data:`labelrows.INDEX`) -> mapped code; index 4 stands for 'no label'."""
    lut = np.full(5, -1, dtype=np.int8)
    for state, code in labelrows.INDEX.items():
        lut[code] = _TARGET[mapping[labelrows.STATE[state]]]
    return lut


# --- label states per slot ----------------------------------------------------------------------


@dataclass
class CandidateStates:
    """Candidate states per (case, condition, finding) (-1 none, -2 conflicting), the first row
    of each (case, condition) and every further row of a slot labelled more than once."""

    state: np.ndarray  # int8, cases x conditions x findings
    row: np.ndarray  # int64 index into sources, cases x conditions
    extra: dict[tuple[int, int], tuple[int, ...]]
    other_replicates: int  # rows of other replicates, left out


def candidate_states(
    iris: list[str],
    slots: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    codes: np.ndarray,
    shape: tuple[int, int, int],
    replicate: int,
    sources: list[str],
) -> CandidateStates:
    """Place each candidate row (``codes``: rows x findings) at its slots; appends to ``sources``.

    ``slots``: per target, its row (into ``iris`` and ``codes``), case index, condition index
    (-1: a condition outside the grid, left out) and replicate, in the order the rows are
    placed; ``shape``: (cases, conditions, findings)."""
    row, case, cond, rep = slots
    out = CandidateStates(np.full(shape, -1, dtype=np.int8), np.full(shape[:2], -1, dtype=np.int64), {}, 0)
    other = rep != replicate
    out.other_replicates = int(np.count_nonzero(other))
    t = np.flatnonzero(~other & (cond >= 0))
    k, i, j = row[t], case[t], cond[t]
    start = len(sources)
    sources.extend(iris[x] for x in k.tolist())
    _, first = np.unique(i * shape[1] + j, return_index=True)
    out.row[i[first], j[first]] = start + first
    out.state[i[first], j[first]] = codes[k[first]]
    later = np.ones(t.size, dtype=bool)
    later[first] = False
    for p in np.flatnonzero(later).tolist():  # a slot labelled more than once (rare)
        ip, jp, source = int(i[p]), int(j[p]), start + p
        # equal states agree, different ones conflict
        out.extra[(ip, jp)] = (*out.extra.get((ip, jp), (int(out.row[ip, jp]),)), source)
        mine, prior = codes[k[p]], out.state[ip, jp]
        clash = (mine >= 0) & (prior >= 0) & (mine != prior)
        out.state[ip, jp] = np.where(clash, -2, np.where(prior == -1, mine, prior))
    return out


def reference_states(
    iris: list[str],
    cases: list[str],
    codes: np.ndarray,
    case_index: dict[str, int],
    n_find: int,
    sources: list[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Reference states per (case, finding) (-1 none, -2 conflicting) and the row each came
    from; appends the rows that label anything to ``sources``."""
    state = np.full((len(case_index), n_find), -1, dtype=np.int8)
    row = np.full((len(case_index), n_find), -1, dtype=np.int64)
    for k, case in enumerate(cases):
        i = case_index.get(case)
        if i is None:
            continue
        mine = codes[k]
        labelled = mine >= 0
        if not labelled.any():
            continue
        source = len(sources)
        sources.append(iris[k])
        prior = state[i]
        clash = labelled & (prior >= 0) & (prior != mine) | labelled & (prior == -2)
        fresh = labelled & (prior == -1)
        row[i] = np.where(fresh, source, row[i])
        state[i] = np.where(clash, -2, np.where(fresh, mine, prior))
    return state, row


# --- cells from label states ---------------------------------------------------------------------


@dataclass
class Blocks:
    """Both sides per block in (case, finding) order: raw state codes and mapped codes (blocks
    for the reference side, blocks x conditions for the candidate side)."""

    ref_state: np.ndarray
    ref_mapped: np.ndarray
    cand_state: np.ndarray
    cand_mapped: np.ndarray
    ref_ok: np.ndarray  # blocks x 1: the reference maps to positive or negative

    @property
    def labelled(self) -> np.ndarray:
        """Blocks any label names (a usable cell or not)."""
        return (self.ref_state != -1) | (self.cand_state != -1).any(axis=1)


def label_grid(
    annotation: dict | None,
    cases: list[str],
    findings: list[str],
    conditions: list[str],
    cand: CandidateStates,
    ref_state: np.ndarray,
    ref_row: np.ndarray,
    sources: list[str],
    notes: list[str],
) -> tuple[CellGrid, Blocks]:
    """Map both sides by the declared endpoint and categorise every (block, condition)."""
    n_cases, n_find, n_cond = len(cases), len(findings), len(conditions)
    # map both sides; 4 in the lookup stands for "no label"
    ref_lut = mapping_lut(state_map(annotation, "reference"))
    cand_lut = mapping_lut(state_map(annotation, "candidate"))
    ref_mapped = np.where(ref_state >= 0, ref_lut[np.clip(ref_state, 0, 3)], -1)  # n_cases x n_find
    cand_mapped = np.where(cand.state >= 0, cand_lut[np.clip(cand.state, 0, 3)], -1)  # cases x conds x finds

    # blocks in (case, finding) order; arrays below are blocks x conditions
    block_case = np.repeat(np.arange(n_cases), n_find)
    block_finding = np.tile(np.arange(n_find), n_cases)
    ref_m = ref_mapped.reshape(-1)
    # explicit shapes: with no condition (no plan) -1 cannot be inferred from size 0
    cand_m = cand_mapped.transpose(0, 2, 1).reshape(n_cases * n_find, n_cond)
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
    grid = CellGrid(
        "labels",
        cases,
        findings,
        conditions,
        block_case,
        block_finding,
        values,
        category,
        np.where(present, cand.row[block_case], -1),
        ref_row.reshape(-1),
        sources,
        cand.extra,
        {f: severity_of(annotation, f) for f in findings},
        notes=notes,
    )
    cand_b = cand.state.transpose(0, 2, 1).reshape(n_cases * n_find, n_cond)
    return grid, Blocks(ref_state.reshape(-1), ref_m, cand_b, cand_m, ref_ok)


def count_labelled(grid: CellGrid, labelled: np.ndarray, other: np.ndarray) -> None:
    """How many of the conditions that scored anything scored each block (``labelled``: blocks x
    conditions with a cell); blocks with only ``other`` evidence (a label but no cell) count at 0."""
    active = labelled.any(axis=0)
    k = labelled[:, active].sum(axis=1)
    counted = (k > 0) | other
    grid.labelled_conditions = int(active.sum())
    values, counts = np.unique(k[counted], return_counts=True)
    grid.labelled = {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def _state_causes(side: str, state: np.ndarray, mapped: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """Masks of the labels of one side that the declared mapping leaves without a cell."""
    out: list[tuple[np.ndarray, str]] = []
    for letter, code in labelrows.INDEX.items():
        name = labelrows.STATE[letter]
        at = state == code
        out.append((at & (mapped == _UNDECL), f"{side} {name} has no declared mapping"))
        out.append((at & (mapped == _EXCL), f"{side} {name} excluded by the declared mapping"))
    return out


def count_label_causes(grid: CellGrid, blocks: Blocks) -> np.ndarray:
    """Count the missing cells whose cause the labels tell (into ``grid.missing``); returns the
    blocks x conditions mask of cells without a candidate label, whose cause the calls tell."""
    conds = grid.condition_keys
    ref_b, cand_b = blocks.ref_state, blocks.cand_state
    # the reference side decides first: a block without a usable reference is missing everywhere
    ref_causes = [
        (ref_b == -1, "no reference label"),
        (ref_b == -2, "conflicting reference labels"),
        *_state_causes("reference", ref_b, blocks.ref_mapped),
    ]
    for mask, cause in ref_causes:
        count = int(np.count_nonzero(mask))
        if count:
            for cond in conds:
                grid.missing[(cause, cond)] += count
    usable = blocks.ref_ok[:, 0]
    # then the candidate side
    cand_causes = [
        (cand_b == -2, "conflicting candidate labels"),
        *_state_causes("candidate", cand_b, blocks.cand_mapped),
    ]
    for mask, cause in cand_causes:
        counts = np.count_nonzero(mask & usable[:, None], axis=0)
        for j in range(len(conds)):
            if counts[j]:
                grid.missing[(cause, conds[j])] += int(counts[j])
    return (cand_b == -1) & usable[:, None]


def absent_slots(grid: CellGrid, absent: np.ndarray) -> Counter[tuple[int, int]]:
    """Missing cells per (case index, condition index), from a blocks x conditions mask."""
    blocks, js = np.nonzero(absent)
    return Counter(zip(grid.block_case[blocks].tolist(), js.tolist(), strict=True))


# --- cells of a reported matrix ------------------------------------------------------------------


def reported_grid(
    cases: list[str],
    findings: list[str],
    conditions: list[str],
    entries: list[ReportedEntry],
    notes: list[str],
) -> CellGrid:
    """The grid of reported cells ``(case, finding, condition, category, severity, source)``:
    blocks in file order, then every other (case, finding) of ``cases`` x ``findings``. Cases
    the entries name beyond ``cases`` are appended to it."""
    order = _reported_blocks(cases, findings, entries)
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
        sources.append(node)
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
        notes=notes,
    )
    count_labelled(grid, category >= 0, np.zeros(n, dtype=bool))
    return grid


def _reported_blocks(
    cases: list[str], findings: list[str], entries: list[ReportedEntry]
) -> list[tuple[str, str]]:
    """Blocks in the order the entries first name them, then the rest; extends ``cases``."""
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
    return order
