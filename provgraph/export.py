"""Export the graph as RDF (Turtle, N-Triples, N-Quads, TriG, JSON-LD) or PROV (PROV-N, PROV-JSON)."""

from __future__ import annotations

import io
import logging
import warnings
from typing import IO

import pyoxigraph as ox

from provgraph.errors import MissingExtraError
from provgraph.rdf.vocab import PREFIXES, PROV_NS, RDFS_NS
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

RDF_FORMATS = {
    "turtle": ox.RdfFormat.TURTLE,
    "nt": ox.RdfFormat.N_TRIPLES,
    "nquads": ox.RdfFormat.N_QUADS,
    "trig": ox.RdfFormat.TRIG,
    "jsonld": ox.RdfFormat.JSON_LD,
}
PROV_FORMATS = ("provn", "provjson")
FORMATS = tuple(RDF_FORMATS) + PROV_FORMATS


def exported_graphs(store: Store, with_ontology: bool = False) -> list[str]:
    """Current data graphs (imports and checks), without the catalog and, by default, the ontology."""
    skip = {"ontology"} if not with_ontology else set()
    return [s.graph for s in catalog.slots(store) if s.key not in skip]


def _values(graphs: list[str]) -> str:
    return " ".join(f"<{g}>" for g in graphs)


def merged_triples(store: Store, graphs: list[str]) -> list[ox.Triple]:
    """The union of ``graphs`` as a set of triples (duplicates across graphs collapse)."""
    if not graphs:
        return []
    return list(
        store.construct(
            f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ VALUES ?g {{ {_values(graphs)} }} GRAPH ?g {{ ?s ?p ?o }} }}"
        )
    )


def prov_types(store: Store, graphs: list[str]) -> list[ox.Triple]:
    """Explicit prov:Entity/Activity/Agent types inferred from the ontology's class hierarchy,
    so PROV tools that do no reasoning still see every node's PROV kind."""
    if not graphs:
        return []
    return list(
        store.construct(
            f"""PREFIX prov: <{PROV_NS}> PREFIX rdfs: <{RDFS_NS}>
        CONSTRUCT {{ ?s a ?kind }} WHERE {{
          VALUES ?g {{ {_values(graphs)} }} GRAPH ?g {{ ?s a ?c }}
          ?c rdfs:subClassOf* ?kind . VALUES ?kind {{ prov:Entity prov:Activity prov:Agent }} }}"""
        )
    )


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
    if fmt in ("nquads", "trig"):
        named: list[ox.Quad] = []
        for g in graphs:  # CONSTRUCT yields triples: put each graph's name back on them
            node = ox.NamedNode(g)
            named += [
                ox.Quad(t.subject, t.predicate, t.object, node)
                for t in store.construct(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{g}> {{ ?s ?p ?o }} }}")
            ]
        kwargs = {"prefixes": PREFIXES} if fmt == "trig" else {}
        ox.serialize(named, out, format=RDF_FORMATS[fmt], **kwargs)
        return len(named)
    triples = merged_triples(store, graphs)
    if fmt in RDF_FORMATS:
        kwargs = {"prefixes": PREFIXES} if fmt == "turtle" else {}
        ox.serialize(triples, out, format=RDF_FORMATS[fmt], **kwargs)
        return len(triples)
    if fmt in PROV_FORMATS:
        return _export_prov(triples + prov_types(store, graphs), fmt, out, base_iri)
    raise ValueError(f"unknown export format {fmt!r}")


def _export_prov(triples: list[ox.Triple], fmt: str, out: IO[bytes], base_iri: str) -> int:
    try:
        from prov.model import ProvDocument
        from prov.serializers.provrdf import ProvRDFSerializer
        from rdflib import Graph, URIRef
    except ImportError as err:  # pragma: no cover - both are hard dependencies
        raise MissingExtraError("PROV export needs `prov` and `rdflib`: pip install prov rdflib") from err
    nt = ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES).decode()
    data = Graph(bind_namespaces="none")
    data.parse(data=nt, format="nt")
    # prov only writes qualified names whose namespace is declared: declare one per IRI folder.
    for prefix, ns in prov_namespaces(data.triples((None, None, None)), base_iri).items():
        data.bind(prefix, URIRef(ns))
    doc = ProvDocument()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ProvRDFSerializer(doc).decode_document(data, doc)
    for w in caught:  # prov drops what PROV cannot express; say so once, on the log
        log.info("PROV export: %s", str(w.message)[:500])
    text = doc.get_provn() if fmt == "provn" else doc.serialize(format="json", indent=2)
    out.write(text.encode("utf-8"))
    return len(triples)


def prov_namespaces(triples, base_iri: str = "") -> dict[str, str]:
    """A prefix for every IRI 'folder' (up to the last '/' or '#'), named after its path
    below the project's base IRI (``call``, ``record_calls.jsonl_C3``...)."""
    import re

    from rdflib import URIRef

    found: dict[str, str] = {}
    taken = {p: ns for p, ns in PREFIXES.items()}
    by_ns = {ns: p for p, ns in taken.items()}
    for triple in triples:
        for term in triple:
            if not isinstance(term, URIRef):
                continue
            iri = str(term)
            cut = max(iri.rfind("/"), iri.rfind("#"))
            ns = iri[: cut + 1]
            if not ns or ns in by_ns:
                continue
            if base_iri and ns.startswith(base_iri) and ns != base_iri:
                tail = ns[len(base_iri) :]
            else:
                tail = "_".join(ns.rstrip("/#").rsplit("/", 2)[-2:])
            stem = re.sub(r"[^A-Za-z0-9_-]+", "_", tail).strip("_-") or "ns"
            if not stem[0].isalpha():
                stem = "n" + stem
            prefix, k = stem, 1
            while prefix in taken:
                k += 1
                prefix = f"{stem}{k}"
            taken[prefix] = ns
            by_ns[ns] = prefix
            found[prefix] = ns
    return {**{p: ns for p, ns in PREFIXES.items()}, **found}
