"""Label rows read from the store: candidate rows with the (case, condition, replicate) slots
they label, and reference rows by case.

A candidate row is tied to its slot by explicit keys on the row, or through the file it labels:
the call record that names the file as its output, and that record's planned call. Rows tied to
no slot are counted by cause, not dropped silently.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

import numpy as np

from provgraph.stats import scan
from provgraph.stats.query import Keys, stream
from provgraph.store.base import Store

log = logging.getLogger(__name__)


@dataclass
class Rows:
    """Candidate label rows tied to slots, as integer codes (a million rows held as Python lists
    of slot tuples was the statistics' largest object at 10^6 calls).

    Per row: its IRI, its finding order (an index into ``order_names``) and its state literal
    (decoded in bulk by :func:`provgraph.evidence.labelrows.decode_coded`). Per target, the row
    it belongs to and its (case, condition, replicate) slot, case and condition as indices into
    ``case_names`` and ``cond_names``; targets are ordered by row, and a row's targets by case
    name, condition name and replicate.
    """

    iris: list[str]
    order: np.ndarray
    order_names: list[str]
    states: list[str]
    target_row: np.ndarray
    target_case: np.ndarray
    target_cond: np.ndarray
    target_rep: np.ndarray
    case_names: list[str]
    cond_names: list[str]

    @property
    def orders(self) -> list[str]:
        """Each row's finding order (builds a list: small sets of rows only)."""
        return [self.order_names[c] for c in self.order.tolist()]

    @property
    def targets(self) -> list[list[tuple[str, str, int]]]:
        """Each row's (case, condition, replicate) slots (builds lists: small sets of rows only)."""
        out: list[list[tuple[str, str, int]]] = [[] for _ in self.iris]
        columns = (self.target_row, self.target_case, self.target_cond, self.target_rep)
        for k, c, d, r in zip(*(column.tolist() for column in columns), strict=True):
            out[k].append((self.case_names[c], self.cond_names[d], r))
        return out


def read_candidates(store: Store, base: str, ks: scan.KeyScans | None = None) -> tuple[Rows, Counter[str]]:
    """Candidate label rows tied to (case, condition, replicate); counts of rows that are not.
    ``ks``: the key scans when the caller already made them."""
    try:
        return _scanned_candidates(store, base, ks)
    except scan.CannotScan:
        log.info("two IRIs share a scan key: reading the candidate label rows by one join")
        return _joined_candidates(store, base)


_UNTIED = "candidate label row tied to no report file and no case/condition"
_UNNAMED = "candidate label row whose report no call record names as its output"


def _scanned_candidates(store: Store, base: str, ks: scan.KeyScans | None) -> tuple[Rows, Counter[str]]:
    """:func:`read_candidates` from one-pattern scans joined on integer keys (the same rows,
    targets and counts as the join; rows in the order the store lists them)."""
    rows, row_keys = scan.column(store, "SELECT ?row WHERE { ?row a pg:CandidateLabelRow }")
    distinct = np.sort(scan.Table(row_keys).first)
    rows = [rows[i] for i in distinct.tolist()]
    table, n = scan.Table(row_keys.take(distinct)), len(distinct)
    del row_keys
    order_codes = scan.Codes()
    subjects, order = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:findingOrder ?o }", order_codes)
    row_order = scan.first_value(table.find(subjects), order, n)  # type: ignore[arg-type]
    kept: list[str] = []

    def keep(value: str) -> int:
        kept.append(value)
        return len(kept) - 1

    subjects, state = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:labelStates ?o }", keep)
    row_state = scan.first_value(table.find(subjects), state, n)  # type: ignore[arg-type]
    del subjects, order, state
    ks = ks or scan.key_scans(store, Keys(base, "case"), Keys(base, "condition"))
    ecase, econd, erep = (
        scan.first_value(table.find(keys), codes, n) for keys, codes in (ks.case, ks.condition, ks.replicate)
    )
    row_ids, file_ids, files = _row_files(store, table)
    has_file = np.zeros(n, dtype=bool)
    has_file[row_ids] = True
    found = _file_slots(store, ks, row_ids, file_ids, files)
    labelled = (row_order >= 0) & (row_state >= 0)
    # a row naming both case and condition labels that slot; else the slots of its file's
    # call records, filtered by the part of the key it names
    both = labelled & (ecase >= 0) & (econd >= 0)
    k = np.flatnonzero(both)
    explicit = np.stack([k, ecase[k], econd[k], np.where(erep[k] > 0, erep[k], 1)], axis=1)
    fk, fcase, fcond = found[:, 0], found[:, 1], found[:, 2]
    fits = (
        labelled[fk]
        & ~both[fk]
        & ((ecase[fk] < 0) | (ecase[fk] == fcase))
        & ((econd[fk] < 0) | (econd[fk] == fcond))
    )
    targets = np.concatenate([explicit, found[fits]]) if found.size else explicit
    case_rank, cond_rank = _ranks(ks.cases.names), _ranks(ks.conditions.names)
    targets = targets[
        np.lexsort((targets[:, 3], cond_rank[targets[:, 2]], case_rank[targets[:, 1]], targets[:, 0]))
    ]
    tied = np.zeros(n, dtype=bool)
    tied[targets[:, 0]] = True
    unresolved: Counter[str] = Counter()
    for cause, count in ((_UNNAMED, labelled & ~tied & has_file), (_UNTIED, labelled & ~tied & ~has_file)):
        if count.any():
            unresolved[cause] = int(np.count_nonzero(count))
    resolved = np.flatnonzero(tied)
    position = np.full(n, -1, dtype=np.int64)
    position[resolved] = np.arange(resolved.size)
    out = Rows(
        [rows[i] for i in resolved.tolist()],
        row_order[resolved],
        order_codes.names,
        [kept[i] for i in row_state[resolved].tolist()],
        position[targets[:, 0]],
        targets[:, 1],
        targets[:, 2],
        targets[:, 3],
        ks.cases.names,
        ks.conditions.names,
    )
    return out, unresolved


def _ranks(names: list[str]) -> np.ndarray:
    """Each name's rank in sorted order (the order Python sorts the slot tuples in)."""
    rank = np.empty(len(names), dtype=np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return rank


def _row_files(store: Store, rows: scan.Table) -> tuple[np.ndarray, np.ndarray, scan.Table]:
    """(row, file) pairs: the report files the rows' extractions used, or whose hash the
    extraction recorded; files as ids of the table returned third."""
    gen_s, gen_x = scan.scan(store, "SELECT ?s ?o WHERE { ?s prov:wasGeneratedBy ?o }")
    _, ext_keys = scan.column(store, "SELECT ?x WHERE { ?x a pg:Extraction }")
    extractions = scan.Table(ext_keys)
    row_of, ext_of = rows.find(gen_s), extractions.find(gen_x)  # type: ignore[arg-type]
    link = np.flatnonzero((row_of >= 0) & (ext_of >= 0))
    kx_row, kx_ext = row_of[link], ext_of[link]
    used_x, used_f = scan.scan(store, "SELECT ?s ?o WHERE { ?s prov:used ?o }")
    used_ext = extractions.find(used_x)
    by_use = np.flatnonzero(used_ext >= 0)
    sha_x, sha_h = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:reportSha256 ?o }")
    sha_ext = extractions.find(sha_x)
    file_s, file_h = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:sha256 ?o }")
    hashes = scan.Table(file_h)  # type: ignore[arg-type]
    by_hash = np.where(sha_ext >= 0, hashes.find(sha_h), -1)  # type: ignore[arg-type]
    i, j = scan.pairs(by_hash, hashes.find(file_h))  # type: ignore[arg-type]
    ext = np.concatenate([used_ext[by_use], sha_ext[i]])
    file_keys = scan.Keys(
        np.concatenate([used_f.a[by_use], file_s.a[j]]),  # type: ignore[union-attr]
        np.concatenate([used_f.b[by_use], file_s.b[j]]),  # type: ignore[union-attr]
    )
    files = scan.Table(file_keys)
    a, b = scan.pairs(kx_ext, ext)
    pair = np.unique(np.stack([kx_row[a], files.find(file_keys)[b]], axis=1), axis=0)
    return pair[:, 0], pair[:, 1], files


def _file_slots(
    store: Store, ks: scan.KeyScans, row_ids: np.ndarray, file_ids: np.ndarray, files: scan.Table
) -> np.ndarray:
    """Distinct (row, case, condition, replicate) rows, sorted: the slots of the call records
    that name one of a row's files as their output (through the records' planned calls); case
    and condition as codes of ``ks``."""
    rec_s, rec_f = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:outputFile ?o }")
    rec_file = files.find(rec_f)  # type: ignore[arg-type]
    named = np.flatnonzero(rec_file >= 0)
    recs = scan.Table(rec_s.take(named))
    rec_id, rec_file = recs.find(rec_s.take(named)), rec_file[named]
    call_s, call_o = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:forCall ?o }")
    call_rec = recs.find(call_s)
    known = np.flatnonzero(call_rec >= 0)
    call_keys = call_o.take(known)  # type: ignore[union-attr]
    calls = scan.Table(call_keys)
    call_id, call_rec = calls.find(call_keys), call_rec[known]
    slot_call, case, cond, rep = scan.slots_of(ks, calls, len(call_keys))
    a, b = scan.pairs(file_ids, rec_file)
    row, rec = row_ids[a], rec_id[b]
    c, d = scan.pairs(rec, call_rec)
    row, call = row[c], call_id[d]
    e, f = scan.pairs(call, slot_call)
    found = np.stack([row[e], case[f], cond[f], rep[f]], axis=1)
    return np.unique(found, axis=0) if found.size else np.empty((0, 4), dtype=np.int64)


def _joined_candidates(store: Store, base: str) -> tuple[Rows, Counter[str]]:
    """:func:`read_candidates` by one SPARQL join (the engine holds every sub-select)."""
    case_key, cond_key = Keys(base, "case"), Keys(base, "condition")
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
    for row, order, st, ecase, econd, erep, file, case, cond, rep in stream(
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
    return _resolved(iris, orders, states, explicit, found, has_file)


def _resolved(
    iris: list[str],
    orders: list[str],
    states: list[str],
    explicit: list[tuple[str, str, int] | None],
    found: list[list[tuple[str, str, int]]],
    has_file: list[bool],
) -> tuple[Rows, Counter[str]]:
    """The joined rows resolved one by one (the reference the scans' array form is tested
    against), packed as :class:`Rows`."""
    order_codes, case_codes, cond_codes = scan.Codes(), scan.Codes(), scan.Codes()
    kept: list[int] = []
    columns: list[list[int]] = [[], [], [], []]
    unresolved: Counter[str] = Counter()
    for k in range(len(iris)):
        resolved = _resolve(explicit[k], found[k])
        if not resolved:
            unresolved[_UNNAMED if has_file[k] else _UNTIED] += 1
            continue
        for case, cond, rep in resolved:
            values = (len(kept), case_codes(case), cond_codes(cond), rep)
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        kept.append(k)
    row, case, cond, rep = (np.asarray(c, dtype=np.int64) for c in columns)
    out = Rows(
        [iris[k] for k in kept],
        np.asarray([order_codes(orders[k]) for k in kept], dtype=np.int64),
        order_codes.names,
        [states[k] for k in kept],
        row,
        case,
        cond,
        rep,
        case_codes.names,
        cond_codes.names,
    )
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
    case_key = Keys(base, "case")
    iris, cases, orders, states = [], [], [], []
    for row, case, order, st, path in stream(
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
