"""Export the graph as RDF (Turtle, N-Triples, N-Quads, TriG, JSON-LD) or PROV (PROV-N,
PROV-JSON, PROV-XML; the PROV formats are written by the prov package, see :mod:`.provdoc`).

The merged RDF formats (Turtle, N-Triples, JSON-LD) also assert, on every node, the PROV classes
its class is a subclass of (``prov:Entity``, ``prov:Activity``, ``prov:Agent`` and the PROV
subtypes such as ``prov:Plan`` or ``prov:SoftwareAgent``), so a PROV reader that does no RDFS
reasoning (``prov.read(format="rdf")``) still sees every node's kind. The per-graph formats
(N-Quads, TriG) are the store's graphs exactly as imported. RDF exports stream SELECT solutions
from the store (a CONSTRUCT collects its triples to drop duplicates): memory does not grow with
the graph.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Iterable, Iterator
from typing import IO

import pyoxigraph as ox

from provgraph.rdf.vocab import PREFIXES, PROV_NS, RDF_NS, RDFS_NS
from provgraph.store import catalog
from provgraph.store.base import Store

RDF_FORMATS = {
    "turtle": ox.RdfFormat.TURTLE,
    "nt": ox.RdfFormat.N_TRIPLES,
    "nquads": ox.RdfFormat.N_QUADS,
    "trig": ox.RdfFormat.TRIG,
    "jsonld": ox.RdfFormat.JSON_LD,
}
PROV_FORMATS = ("provn", "provjson", "provxml")
FORMATS = tuple(RDF_FORMATS) + PROV_FORMATS
#: The prefix the bundle's own base IRI is declared under.
BASE_PREFIX = "bundle"


def exported_graphs(store: Store, with_ontology: bool = False) -> list[str]:
    """Current data graphs (imports and checks), without the catalog and, by default, the ontology."""
    skip = {"ontology"} if not with_ontology else set()
    return [s.graph for s in catalog.slots(store) if s.key not in skip]


def _values(graphs: list[str]) -> str:
    return " ".join(f"<{g}>" for g in graphs)


def merged_triples(store: Store, graphs: list[str]) -> Iterator[ox.Triple]:
    """The triples of ``graphs``, streamed from the store: a triple held by two graphs comes
    twice (readers merge them; dropping duplicates here would hold every triple in memory)."""
    for g in graphs:
        yield from graph_triples(store, g)


def graph_triples(store: Store, graph: str) -> Iterator[ox.Triple]:
    """The triples of one graph, streamed."""
    for s, p, o in store.solutions(f"SELECT ?s ?p ?o WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}"):
        yield ox.Triple(s, p, o)


def prov_types(store: Store, graphs: list[str]) -> Iterator[ox.Triple]:
    """Explicit PROV classes (``prov:Entity``/``Activity``/``Agent`` and the PROV subtypes)
    inferred from the ontology's class hierarchy, for PROV tools that do no reasoning; streamed
    (a node with two classes of one PROV kind gets that kind twice)."""
    if not graphs:
        return
    values = _values(graphs)
    rdf_type = ox.NamedNode(RDF_NS + "type")
    for s, kind in store.solutions(
        f"""PREFIX prov: <{PROV_NS}> PREFIX rdfs: <{RDFS_NS}>
        SELECT ?s ?kind WHERE {{
          VALUES ?g {{ {values} }} GRAPH ?g {{ ?s a ?c }}
          ?c rdfs:subClassOf* ?kind . FILTER(STRSTARTS(STR(?kind), STR(prov:)))
          FILTER NOT EXISTS {{ VALUES ?h {{ {values} }} GRAPH ?h {{ ?s a ?kind }} }} }}"""
    ):
        yield ox.Triple(s, rdf_type, kind)


def primary_sources(store: Store, graphs: list[str]) -> Iterator[ox.Triple]:
    """Each ``prov:hadPrimarySource`` also in PROV-O's qualified form (a ``prov:PrimarySource``
    node): PROV-DM has no primary-source relation of its own, only a derivation of that type,
    and prov reads only the qualified form as one (the bare property would become an attribute)."""
    if not graphs:
        return iter(())
    return store.construct(
        f"""PREFIX prov: <{PROV_NS}>
        CONSTRUCT {{ ?s prov:qualifiedPrimarySource _:q . _:q a prov:PrimarySource ; prov:entity ?o }}
        WHERE {{ SELECT DISTINCT ?s ?o WHERE {{
          VALUES ?g {{ {_values(graphs)} }} GRAPH ?g {{ ?s prov:hadPrimarySource ?o }}
          FILTER(isIRI(?o)) }} }}"""
    )


def typed_triples(store: Store, graphs: list[str]) -> Iterator[ox.Triple]:
    """The merged graph followed by its inferred PROV types and qualified primary sources."""
    return itertools.chain(
        merged_triples(store, graphs), prov_types(store, graphs), primary_sources(store, graphs)
    )


def declared_prefixes(base_iri: str = "") -> dict[str, str]:
    """The prefixes an export declares: the vocabularies provgraph writes and the bundle's base
    IRI, under which every node provgraph mints lies. (Scanning the graph for other namespaces
    cost as much as the export itself; the PROV formats add a prefix for any other namespace
    as they meet it.)"""
    found = dict(PREFIXES)
    if base_iri:
        found[BASE_PREFIX] = base_iri
    return found


def prefix_for(ns: str, taken: dict[str, str]) -> str:
    """A prefix named after a namespace's last path segments (``dicom_tags``, ``ns``...)."""
    tail = "_".join(re.split(r"[/:]+", ns.rstrip("/#"))[-2:])
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", tail).strip("_").lower() or "ns"
    if not stem[0].isalpha():
        stem = "n" + stem
    prefix, k = stem, 1
    while prefix in taken:
        k += 1
        prefix = f"{stem}{k}"
    return prefix


def export(store: Store, fmt: str, out: IO[bytes], with_ontology: bool = False, base_iri: str = "") -> int:
    """Write the graph in ``fmt`` to ``out``; returns the number of triples or quads written."""
    if not store.shared:
        return _export(store, fmt, out, with_ontology, base_iri)
    # On a server, write nothing until the snapshot is known to be one consistent state.
    buffer = io.BytesIO()
    with store.snapshot():
        n = _export(store, fmt, buffer, with_ontology, base_iri)
    out.write(buffer.getvalue())
    return n


def _export(store: Store, fmt: str, out: IO[bytes], with_ontology: bool, base_iri: str) -> int:
    graphs = exported_graphs(store, with_ontology)
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    prefixes = declared_prefixes(base_iri)
    if fmt in PROV_FORMATS:
        # lazy: prov and rdflib load only for the PROV formats (start-up time)
        from provgraph.export.provdoc import write_prov

        return write_prov(typed_triples(store, graphs), fmt, out, prefixes)
    counter = _Counter()
    if fmt in ("nquads", "trig"):
        quads = (
            ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(g))
            for g in graphs
            for t in graph_triples(store, g)
        )
        kwargs = {"prefixes": prefixes} if fmt == "trig" else {}  # N-Quads has no prefixes
        ox.serialize(counter.count(quads), out, format=RDF_FORMATS[fmt], **kwargs)
        return counter.n
    kwargs = {"prefixes": prefixes} if fmt == "turtle" else {}
    ox.serialize(counter.count(typed_triples(store, graphs)), out, format=RDF_FORMATS[fmt], **kwargs)
    return counter.n


class _Counter:
    """Counts what streams through it (the export never holds the graph to count it)."""

    def __init__(self) -> None:
        self.n = 0

    def count(self, items: Iterable) -> Iterator:
        for item in items:
            self.n += 1
            yield item
