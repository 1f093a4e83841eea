"""Views of given nodes, one box each: node display names, :func:`subgraph` for any node set,
and :func:`lineage_view`, the lineage of one number or node drawn as a subgraph.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from provgraph.errors import UsageError
from provgraph.lineage.resolve import resolve
from provgraph.lineage.trace import trace_many
from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.vocab import PG_NS, RDFS_NS
from provgraph.store import catalog
from provgraph.store.base import Store
from provgraph.views.model import Arrow, Box, Mark, View, recorded_violations
from provgraph.views.vocabulary import ClassInfo, short_pred, vocabulary

log = logging.getLogger(__name__)

#: Properties that name a node in a picture, in order of preference.
NAME_PROPERTIES = (
    PG_NS + "path",
    PG_NS + "name",
    PG_NS + "callId",
    PG_NS + "key",
    PG_NS + "ruleId",
    PG_NS + "statName",
    RDFS_NS + "label",
)

CHUNK = 500  # nodes per VALUES block when a query asks about a given set of nodes


def value_blocks(iris: Sequence[str]) -> Iterator[str]:
    """The IRIs as the bodies of SPARQL ``VALUES`` blocks, :data:`CHUNK` at a time."""
    for i in range(0, len(iris), CHUNK):
        yield " ".join(f"<{x}>" for x in iris[i : i + CHUNK])


def node_names(store: Store, iris: Sequence[str]) -> dict[str, str]:
    """A short display name per node: its path, name, call id or key, else its IRI tail."""
    base = catalog.base_iri(store)
    names: dict[str, str] = {}
    rank: dict[str, int] = {}
    plain = [i for i in iris if plain_iri(i)]
    # FILTER IN, not a second VALUES block: Oxigraph evaluates ``VALUES ?s .. VALUES ?p ..
    # ?s ?p ?v`` by scanning the store (7 s per block at 10^5 calls, 0.02 s so)
    props = ", ".join(f"<{p}>" for p in NAME_PROPERTIES)
    for values in value_blocks(plain):
        for r in store.select(
            f"SELECT ?s ?p ?v WHERE {{ VALUES ?s {{ {values} }} ?s ?p ?v FILTER(?p IN ({props})) }}"
        ):
            s, p = r["s"].value, r["p"].value  # type: ignore[union-attr]
            order = NAME_PROPERTIES.index(p)
            if order < rank.get(s, 99):
                rank[s], names[s] = order, r["v"].value  # type: ignore[union-attr]
    for iri in iris:
        if iri not in names:
            names[iri] = iri[len(base) :] if base and iri.startswith(base) else iri
    return names


def subgraph(
    store: Store,
    iris: Sequence[str],
    edges: Iterable[tuple[str, str, str]],
    marks: Sequence[Mark] | None = None,
    focus: str | Sequence[str] | None = None,
    title: str = "",
    status: str | None = None,
) -> View:
    """A picture of the given nodes, one box each, and the given (subject, predicate, object)
    edges between them. Used by the lineage view; violations as in
    :func:`provgraph.views.whole.whole_graph`."""
    vocab = vocabulary(store)
    notes: list[str] = []
    foci = {focus} if isinstance(focus, str) else set(focus or ())
    if marks is None:
        marks = recorded_violations(store) or []
    plain = [i for i in dict.fromkeys(iris) if plain_iri(i)]
    types, overrides = _types_and_states(store, plain, {c.iri: c for c in vocab.classes.values()})
    names = node_names(store, plain)
    boxes: dict[str, Box] = {}
    for n, iri in enumerate(plain):
        info = max(types[iri], key=lambda c: (c.depth, c.iri)) if types[iri] else None
        label = info.label if info else "not in the graph"
        boxes[iri] = Box(
            f"n{n}",
            info.iri if info else None,
            info.kind if info else None,
            overrides.get(iri) or (info.state if info else None),
            f"{label}\n{names[iri]}",
            iri=iri,
            absent=info is None,
            focus=iri in foci,
        )
    by_focus: dict[str, dict[str, int]] = defaultdict(dict)
    for m in marks:
        if m.focus in boxes:
            by_focus[m.focus][m.rule_id] = 1
    for iri, rules in by_focus.items():
        boxes[iri].violations = dict(sorted(rules.items()))
    arrows = []
    for s, p, o in dict.fromkeys(tuple(e) for e in edges):
        if s in boxes and o in boxes:
            arrows.append(Arrow(boxes[s].id, boxes[o].id, p, short_pred(vocab, p)))
    by_id = {b.id: b for b in boxes.values()}
    return View(title, by_id, arrows, vocab.states, notes, status)


def _types_and_states(
    store: Store, plain: list[str], drawn: dict[str, ClassInfo]
) -> tuple[dict[str, list[ClassInfo]], dict[str, str]]:
    """Each node's classes (those in ``drawn``) and the ``pg:state`` it states itself."""
    types: dict[str, list[ClassInfo]] = defaultdict(list)
    overrides: dict[str, str] = {}
    for values in value_blocks(plain):
        for r in store.select(
            f"""SELECT ?s ?c ?st WHERE {{ VALUES ?s {{ {values} }}
                {{ ?s a ?c }} UNION {{ ?s <{PG_NS}state> ?st }} }}"""
        ):
            s = r["s"].value  # type: ignore[union-attr]
            if r["c"] is not None and r["c"].value in drawn:
                types[s].append(drawn[r["c"].value])
            if r["st"] is not None:
                overrides[s] = r["st"].value
    return types, overrides


def lineage_view(store: Store, target: str, marks: Sequence[Mark] | None = None) -> View:
    """The lineage of one number or node (TARGET as ``provgraph lineage`` accepts it).

    A thin adapter over :mod:`provgraph.lineage` (``resolve(store, target) -> list[str]``,
    ``trace(store, iri) -> Lineage`` whose ``nodes`` are keyed by IRI and whose ``edges`` have
    ``source``, ``prop`` and ``target``, plus a ``status``): the traversal lives there, the
    drawing here (:func:`subgraph`). A target that matches several nodes (a number written in
    several places) draws all their lineages in one picture, each match outlined as a focus,
    and lists the matches in ``View.matches``, as ``provgraph lineage`` lists them.
    """
    matches = resolve(store, target)
    if not matches:
        raise UsageError(f"{target!r} matches no node or reported number in the graph")
    traces = trace_many(store, matches)
    iris = list(dict.fromkeys(iri for t in traces for iri in t.nodes))
    edges = [(e.source, e.prop, e.target) for t in traces for e in t.edges]
    several = len(traces) > 1
    view = subgraph(
        store,
        iris,
        edges,
        marks,
        focus=matches,
        title=f"lineage of {target}" + (f" ({len(matches)} matches)" if several else ""),
        status=None if several else getattr(traces[0], "status", None),
    )
    if several:
        for t in traces:
            node = t.nodes[t.root]
            loc = f" [{node.location}]" if node.location else ""
            view.matches.append((t.status, f"{node.label}{loc}"))
    return view
