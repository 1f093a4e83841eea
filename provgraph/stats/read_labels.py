"""Label rows read from the store: candidate rows with the (case, condition, replicate) slots
they label, and reference rows by case.

A candidate row is tied to its slot by explicit keys on the row, or through the file it labels:
the call record that names the file as its output, and that record's planned call. Rows tied to
no slot are counted by cause, not dropped silently.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from provgraph.stats.query import Keys, stream
from provgraph.store.base import Store


@dataclass
class Rows:
    """Label rows read from the store: IRIs, their (case, condition, replicate) targets, and each
    row's finding-order and state literals (decoded in bulk by
    :func:`provgraph.evidence.labelrows.decode_matrix`)."""

    iris: list[str]
    orders: list[str]
    states: list[str]
    targets: list[list[tuple[str, str, int]]]


def read_candidates(store: Store, base: str) -> tuple[Rows, Counter[str]]:
    """Candidate label rows tied to (case, condition, replicate); counts of rows that are not."""
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
