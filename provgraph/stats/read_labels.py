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
    """Label rows read from the store: IRIs, their (case, condition, replicate) targets, and each
    row's finding-order and state literals (decoded in bulk by
    :func:`provgraph.evidence.labelrows.decode_matrix`)."""

    iris: list[str]
    orders: list[str]
    states: list[str]
    targets: list[list[tuple[str, str, int]]]


def read_candidates(store: Store, base: str, ks: scan.KeyScans | None = None) -> tuple[Rows, Counter[str]]:
    """Candidate label rows tied to (case, condition, replicate); counts of rows that are not.
    ``ks``: the key scans when the caller already made them."""
    try:
        return _scanned_candidates(store, base, ks)
    except scan.CannotScan:
        log.info("two IRIs share a scan key: reading the candidate label rows by one join")
        return _joined_candidates(store, base)


def _scanned_candidates(store: Store, base: str, ks: scan.KeyScans | None) -> tuple[Rows, Counter[str]]:
    """:func:`read_candidates` from one-pattern scans joined on integer keys (the same rows,
    targets and counts as the join; rows in the order the store lists them)."""
    rows, row_keys = scan.column(store, "SELECT ?row WHERE { ?row a pg:CandidateLabelRow }")
    distinct = np.sort(scan.Table(row_keys).first)
    rows = [rows[i] for i in distinct.tolist()]
    table, n = scan.Table(row_keys.take(distinct)), len(distinct)
    order_codes = scan.Codes()
    subjects, order = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:findingOrder ?o }", order_codes)
    row_order = scan.first_value(table.find(subjects), order, n)  # type: ignore[arg-type]
    kept: list[str] = []

    def keep(value: str) -> int:
        kept.append(value)
        return len(kept) - 1

    subjects, state = scan.scan(store, "SELECT ?s ?o WHERE { ?s pg:labelStates ?o }", keep)
    row_state = scan.first_value(table.find(subjects), state, n)  # type: ignore[arg-type]
    ks = ks or scan.key_scans(store, Keys(base, "case"), Keys(base, "condition"))
    explicit = [
        scan.first_value(table.find(keys), codes, n) for keys, codes in (ks.case, ks.condition, ks.replicate)
    ]
    row_ids, file_ids, files = _row_files(store, table)
    has_file = np.zeros(n, dtype=bool)
    has_file[row_ids] = True
    found = _file_slots(store, ks, row_ids, file_ids, files)
    iris, orders, states, explicit_keys, found_lists, files = [], [], [], [], [], []
    for k in np.flatnonzero((row_order >= 0) & (row_state >= 0)).tolist():
        iris.append(rows[k])
        orders.append(order_codes.names[row_order[k]])
        states.append(kept[row_state[k]])
        ecase, econd, erep = (int(e[k]) for e in explicit)
        keys = (
            ks.cases.names[ecase] if ecase >= 0 else "",
            ks.conditions.names[econd] if econd >= 0 else "",
            erep if erep >= 0 else 0,
        )
        explicit_keys.append(keys if ecase >= 0 or econd >= 0 else None)
        found_lists.append(found.get(k, []))
        files.append(bool(has_file[k]))
    return _resolved(iris, orders, states, explicit_keys, found_lists, files)


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
) -> dict[int, list[tuple[str, str, int]]]:
    """Per row, the (case, condition, replicate) slots of the call records that name one of
    its files as their output (through the records' planned calls)."""
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
    found = np.unique(np.stack([row[e], case[f], cond[f], rep[f]], axis=1), axis=0)
    out: dict[int, list[tuple[str, str, int]]] = {}
    case_names, cond_names = ks.cases.names, ks.conditions.names
    for k, ci, di, r in found.tolist():
        out.setdefault(k, []).append((case_names[ci], cond_names[di], r))
    return out


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
