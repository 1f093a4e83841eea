"""The status of every number of a text in one pass, with the reason that decides it.

:func:`claim_statuses` gives each ``pg:Claim`` of one text (or of every text) the status
:func:`provgraph.lineage.trace.trace` would give it, and why, without one trace per claim:

1. the lineage edges upstream of all the claims are read together, a batch of nodes per
   query (the walk of :mod:`~provgraph.lineage.trace`, hubs sampled the same way);
2. the nodes are described once (violations, whether an import describes them, registry
   status, class);
3. the status flows down the graph: each strongly connected component of the lineage takes
   the worst limitation found in it or upstream of it, and the nearest evidence (a statistic
   before a registry value before a build record); a claim whose lineage reaches none is
   unverifiable, with the binding's note when the binding left it unbound.

Every claim of a text shares the text's upstream (its file, the import, the statistics), so
that upstream is read once, not once per number (49x on 10,000 numbers: bench/README.md).
A claim whose lineage exceeds ``max_nodes`` nodes is at least unverifiable, as in a trace;
here its whole lineage is still examined, so a withdrawal upstream of the cut is not missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from provgraph.lineage.hubs import big_hubs, hub_classes, hub_reasons, sample_sources
from provgraph.lineage.model import (
    STATUSES,
    ClaimStatus,
    Node,
    Reason,
    inverse_properties,
    lineage_properties,
)
from provgraph.lineage.trace import (
    DEFAULT_MAX_NODES,
    EVIDENCE,
    NO_EVIDENCE,
    describe,
    global_reasons,
    inferred_statistics,
    node_reasons,
)
from provgraph.rdf.vocab import PG_NS
from provgraph.stats.bind import bind_settings
from provgraph.store.base import Store

_BATCH = 400
#: Evidence classes in the order a retained number's reason prefers them.
_EVIDENCE_RANK = {c: i for i, c in enumerate(EVIDENCE)}
_FIELDS = {
    "text": "text",
    "value": "value",
    "statName": "statistic",
    "sourceLine": "line",
    "sourceColumn": "column",
    "rowLabel": "row",
    "rowGroup": "group",
    "columnLabel": "column_label",
    "bindingNote": "binding_note",
    "boundStatName": "bound_statistic",
    "boundCondition": "bound_condition",
}


@dataclass
class NumberStatus:
    """One number of a text: where it is, how it is written, its status and why."""

    iri: str
    path: str | None
    line: int | None
    column: int | None  # 1-based character column (pg:sourceColumn), when the import gives it
    text: str
    value: str | None
    statistic: str | None  # pg:statName, the statistic the number is taken to be
    row: str | None  # table row label
    group: str | None  # the section row above it
    column_label: str | None  # table column header
    binding_note: str | None  # why the binding left it unbound
    status: ClaimStatus
    reason: str  # the limitation that decides the status, or the evidence it is retained on
    rule: str | None = None  # the rule whose violation decides it
    evidence: str | None = None  # the statistic, registry value or build record it reaches

    @property
    def location(self) -> str:
        where = self.path or "?"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return where

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``provgraph lineage FILE --format json``)."""
        return {
            "iri": self.iri,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "text": self.text,
            "value": self.value,
            "statistic": self.statistic,
            "row": self.row,
            "group": self.group,
            "column_label": self.column_label,
            "status": self.status,
            "reason": self.reason,
            "rule": self.rule,
            "evidence": self.evidence,
        }


def claim_statuses(
    store: Store, path: str | None = None, max_nodes: int = DEFAULT_MAX_NODES
) -> list[NumberStatus]:
    """Every claim of the text at ``path`` (a bundle path or ``ARCHIVE!/MEMBER``; None: of
    every text), in file, line and column order, with its status and deciding reason."""
    claims = _claims(store, path)
    if not claims:
        return []
    graph, nodes, own = _walk(store, list(claims))
    order = list(nodes)
    index = {n: i for i, n in enumerate(order)}
    comps = _components(order, graph, index)
    flow = _flow(store, comps, graph, own, nodes, index)
    sizes = _closure_sizes(comps, graph, index) if len(order) > max_nodes else {}
    shared = global_reasons(store)
    declared = bind_settings(store)
    out = []
    for iri, facts in claims.items():
        found: list[Reason] = list(shared)
        worst_reason, evidence = flow[index[iri]]
        if worst_reason is not None:
            found.append(worst_reason)
        if evidence is None:
            found.append(Reason("unverifiable", _unbound(facts, declared), iri))
        if sizes.get(index[iri], 0) > max_nodes:
            found.append(
                Reason("unverifiable", f"the lineage has more than {max_nodes:,} nodes; a trace cuts it")
            )
        out.append(_row(iri, facts, found, evidence, nodes))
    return out


def _row(
    iri: str, facts: dict[str, Any], found: list[Reason], evidence: str | None, nodes: dict[str, Node]
) -> NumberStatus:
    status: ClaimStatus = max((r.status for r in found), key=STATUSES.index, default="retained")
    deciding = next((r for r in found if r.status == status), None)
    if deciding is not None:
        reason, rule = deciding.text, deciding.rule
    else:
        reason, rule = _agrees(nodes[evidence]) if evidence else "", None
    line = facts.get("line")
    column = facts.get("column")
    return NumberStatus(
        iri,
        facts.get("path"),
        int(line) if line is not None else None,
        int(column) if column is not None else None,
        facts.get("text") or "?",
        facts.get("value"),
        facts.get("statistic"),
        facts.get("row"),
        facts.get("group"),
        facts.get("column_label"),
        facts.get("binding_note"),
        status,
        reason,
        rule,
        evidence,
    )


def _unbound(facts: dict[str, Any], declared: dict[str, Any]) -> str:
    """Why a number reaching no evidence has none: the binding's note, else what its table cell
    lacks (a column naming no statistic, a row naming no condition, or ``[release.bind]``
    leaving either unbound), else the general reason."""
    if facts.get("binding_note"):
        return f"not bound to a recomputation: {facts['binding_note']}"
    column, row = facts.get("column_label"), facts.get("row")
    for key, label in (("columns", column), ("rows", row)):
        if label is not None and (declared.get(key) or {}).get(label) == "":
            what = "column" if key == "columns" else "row"
            return f"[release.bind] leaves {what} {label!r} unbound: no recomputation is declared for it"
    if column is not None and not facts.get("bound_statistic"):
        return f"column {column!r} names no statistic the cell could be bound to; {NO_EVIDENCE}"
    if row is not None and not facts.get("bound_condition") and facts.get("bound_statistic"):
        return f"row {row!r} names no condition the cell could be bound to; {NO_EVIDENCE}"
    return NO_EVIDENCE


def _agrees(node: Node) -> str:
    kind = node.classes[0] if node.classes else "node"
    if kind == "statistic":
        return f"agrees with its recomputation: {node.label}"
    if kind == "registry value":
        return f"matches {node.label} (no recomputation is recorded for it)"
    if kind == "analysis plan":
        return "the significance level the contract's analysis plan declares (alpha)"
    return f"made by {node.label}" + (f" [{node.location}]" if node.location else "")


def _claims(store: Store, path: str | None) -> dict[str, dict[str, Any]]:
    """Claim IRI -> its facts (text, value, line, column, table labels, binding note)."""
    where = "?c pg:sourceFile ?f . ?f pg:path ?path ." if path is not None else ""
    optional = " ".join(f"OPTIONAL {{ ?c pg:{p} ?{p} }}" for p in _FIELDS)
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT ?c ?p {" ".join(f"?{p}" for p in _FIELDS)} WHERE {{
          ?c a pg:Claim . {where} {optional} OPTIONAL {{ ?c pg:sourceFile/pg:path ?p }} }}""",
        {"path": ox.Literal(path)} if path is not None else None,
    )
    found: dict[str, dict[str, Any]] = {}
    for r in rows:
        facts = found.setdefault(r["c"].value, {})  # type: ignore[union-attr]
        for prop, key in (*_FIELDS.items(), ("p", "path")):
            if r[prop] is not None and key not in facts:
                facts[key] = r[prop].value  # type: ignore[union-attr]

    def place(item: tuple[str, dict[str, Any]]) -> tuple:
        facts = item[1]
        return (
            facts.get("path") or "",
            int(facts.get("line") or 0),
            int(facts.get("column") or 0),
            item[0],
        )

    return dict(sorted(found.items(), key=place))


def _walk(
    store: Store, roots: list[str]
) -> tuple[dict[str, list[str]], dict[str, Node], dict[str, list[Reason]]]:
    """The lineage upstream of ``roots``: edges, described nodes, each node's own limitations."""
    props = lineage_properties(store)
    prop_list = ", ".join(f"<{p}>" for p in props)
    inverse = inverse_properties(store)
    classes = hub_classes(store)
    graph: dict[str, list[str]] = {}
    seen = dict.fromkeys(roots)
    frontier = list(roots)
    sampled = []
    while frontier:
        found: list[tuple[str, str]] = []
        for i in range(0, len(frontier), _BATCH):
            batch = frontier[i : i + _BATCH]
            big = big_hubs(store, batch, classes, prop_list)
            for hub in big:
                for x in sample_sources(store, hub, props):
                    sampled.append(x)
                    found += [(hub, o) for o in x.shown]
            walk = " ".join(f"<{n}>" for n in batch if n not in big)
            if walk:
                rows = store.select(
                    f"""SELECT DISTINCT ?s ?o WHERE {{ VALUES ?s {{ {walk} }}
                          ?s ?p ?o . FILTER(isIRI(?o) && ?p IN ({prop_list})) }}"""
                )
                found += [(r["s"].value, r["o"].value) for r in rows]  # type: ignore[union-attr]
            found += [(s, o) for s, _, o, _ in inferred_statistics(store, batch)]
            values = " ".join(f"<{n}>" for n in batch)
            for p in inverse:  # one query per property, written out (see trace)
                rows = store.select(
                    f"""SELECT DISTINCT ?s ?o WHERE {{ VALUES ?s {{ {values} }}
                          ?o <{p}> ?s . FILTER(isIRI(?o)) }}"""
                )
                found += [(r["s"].value, r["o"].value) for r in rows]  # type: ignore[union-attr]
        frontier = []
        for s, o in found:
            graph.setdefault(s, []).append(o)
            if o not in seen:
                seen[o] = None
                frontier.append(o)
    nodes = describe(store, list(seen), {x.source for x in sampled})
    own: dict[str, list[Reason]] = {}
    for r in node_reasons(store, nodes):
        own.setdefault(r.node or "", []).append(r)
    for hub in dict.fromkeys(x.source for x in sampled):
        # what lies upstream of a sampled hub (as the check recorded it) is the hub's own: its
        # foci were not walked
        own.setdefault(hub, []).extend(hub_reasons(store, nodes, [x for x in sampled if x.source == hub]))
    return {s: list(dict.fromkeys(t)) for s, t in graph.items()}, nodes, own


def _components(order: list[str], graph: dict[str, list[str]], index: dict[str, int]) -> list[list[int]]:
    """Strongly connected components (iterative Tarjan), sources before what derives from them."""
    low = [0] * len(order)
    num = [-1] * len(order)
    on_stack = [False] * len(order)
    stack: list[int] = []
    comps: list[list[int]] = []
    counter = 0
    succ = [[index[t] for t in graph.get(n, ())] for n in order]
    for start in range(len(order)):
        if num[start] >= 0:
            continue
        work = [(start, 0)]
        num[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack[start] = True
        while work:
            v, i = work[-1]
            if i < len(succ[v]):
                work[-1] = (v, i + 1)
                w = succ[v][i]
                if num[w] < 0:
                    num[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], num[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == num[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
    return comps  # Tarjan emits a component after every component it reaches


def _flow(
    store: Store,
    comps: list[list[int]],
    graph: dict[str, list[str]],
    own: dict[str, list[Reason]],
    nodes: dict[str, Node],
    index: dict[str, int],
) -> list[tuple[Reason | None, str | None]]:
    """Per node: the worst limitation in or upstream of it, and its nearest evidence."""
    order = list(nodes)
    evidence_rank = _evidence(store, order)
    result: list[tuple[Reason | None, str | None]] = [(None, None)] * len(order)
    best: list[tuple[int, int, str] | None] = [None] * len(order)
    for comp in comps:
        members = {order[i] for i in comp}
        worst: Reason | None = None
        near: tuple[int, int, str] | None = None
        for i in comp:
            for r in own.get(order[i], ()):
                if worst is None or _rank(r) > _rank(worst):
                    worst = r
            if order[i] in evidence_rank:
                cand = (evidence_rank[order[i]], 0, order[i])
                near = cand if near is None or cand < near else near
        for i in comp:
            for t in graph.get(order[i], ()):
                if t in members:
                    continue
                j = index[t]
                up, _ = result[j]
                if up is not None and (worst is None or _rank(up) > _rank(worst)):
                    worst = up
                if best[j] is not None:
                    rank, depth, iri = best[j]  # type: ignore[misc]
                    cand = (rank, depth + 1, iri)
                    near = cand if near is None or cand < near else near
        for i in comp:
            result[i] = (worst, near[2] if near else None)
            best[i] = near
    return result


def _evidence(store: Store, order: list[str]) -> dict[str, int]:
    """The nodes of an evidence class (as a trace asks: the class itself, not a subclass), and
    the rank of the best class each has."""
    classes = ", ".join(f"<{c}>" for c in EVIDENCE)
    found: dict[str, int] = {}
    for i in range(0, len(order), _BATCH):
        values = " ".join(f"<{n}>" for n in order[i : i + _BATCH])
        query = f"SELECT ?n ?c WHERE {{ VALUES ?n {{ {values} }} ?n a ?c FILTER(?c IN ({classes})) }}"
        for r in store.select(query):
            n, rank = r["n"].value, _EVIDENCE_RANK[r["c"].value]  # type: ignore[union-attr]
            found[n] = min(rank, found.get(n, rank))
    return found


def _rank(reason: Reason) -> int:
    return STATUSES.index(reason.status)


def _closure_sizes(
    comps: list[list[int]], graph: dict[str, list[str]], index: dict[str, int]
) -> dict[int, int]:
    """Per node: how many nodes its lineage holds (itself included), as bit sets over the
    components; a component's set is dropped once every component deriving from it has used
    it, so what is held is the frontier of the walk, not one set per node."""
    order = [""] * len(index)
    for iri, i in index.items():
        order[i] = iri
    comp_of = {i: k for k, comp in enumerate(comps) for i in comp}
    below = [
        {comp_of[index[t]] for i in comp for t in graph.get(order[i], ())} - {k}
        for k, comp in enumerate(comps)
    ]
    users = [0] * len(comps)
    for kids in below:
        for c in kids:
            users[c] += 1
    reach: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for k, comp in enumerate(comps):
        bits = 0
        for i in comp:
            bits |= 1 << i
        for c in below[k]:
            bits |= reach[c]
            users[c] -= 1
            if not users[c]:
                del reach[c]
        count = bits.bit_count()
        for i in comp:
            sizes[i] = count
        if users[k]:
            reach[k] = bits
    return sizes


def text_paths(store: Store) -> list[str]:
    """The paths of the texts that write numbers (bundle paths, ``ARCHIVE!/MEMBER``), sorted."""
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?path WHERE {{ ?c a pg:Claim ; pg:sourceFile ?f . ?f pg:path ?path }}
        ORDER BY ?path"""
    )
    return [r["path"].value for r in rows]  # type: ignore[union-attr]


def is_text(store: Store, path: str) -> bool:
    """Whether ``path`` names a text that writes numbers (a claim cites it as its source file)."""
    return store.ask(
        f"PREFIX pg: <{PG_NS}>\nASK {{ ?f pg:path ?path . ?c pg:sourceFile ?f ; a pg:Claim }}",
        {"path": ox.Literal(path)},
    )
