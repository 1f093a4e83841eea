"""An in-memory rdflib backend behind provgraph's Store interface, for comparison only.

``bench/scale.py`` runs the same importers, rules, statistics, lineage, views and report on it
as on the embedded Oxigraph store. Queries go to rdflib's own SPARQL engine over a
``Dataset`` whose default graph is the union of the named graphs (what Oxigraph's
``use_default_graph_as_union`` gives); answers are converted to pyoxigraph terms so callers see
the same types. The harness compares the rule outcomes of both backends wherever rdflib
finishes, so a semantic difference shows up as a mismatch instead of a silent speed-up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

import pyoxigraph as ox
import rdflib
import rdflib.plugins.sparql.sparql
from rdflib.term import BNode, Literal, URIRef

from provgraph.errors import StoreError
from provgraph.rdf.sparql import inject_values
from provgraph.store.base import Rows, Store, Term

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def to_ox(term) -> Term | None:
    if term is None:
        return None
    if isinstance(term, URIRef):
        return ox.NamedNode(str(term))
    if isinstance(term, BNode):
        return ox.BlankNode(str(term))
    if isinstance(term, Literal):
        if term.language:
            return ox.Literal(str(term), language=term.language)
        if term.datatype is not None and str(term.datatype) != _XSD_STRING:
            return ox.Literal(str(term), datatype=ox.NamedNode(str(term.datatype)))
        return ox.Literal(str(term))
    raise TypeError(f"unexpected rdflib term {term!r}")


class RdflibStore(Store):
    """rdflib ``Dataset`` in memory, default graph = union of all named graphs."""

    def __init__(self) -> None:
        self.location = "rdflib (memory)"
        self._ds = rdflib.Dataset(default_union=True)

    def _query(self, query: str, bindings: Mapping[str, Term] | None) -> object:
        return self._ds.query(inject_values(query, bindings))

    def select(self, query: str, bindings: Mapping[str, Term] | None = None) -> Rows:
        result = self._query(query, bindings)
        if result.type != "SELECT":  # type: ignore[attr-defined]
            raise SyntaxError("expected a SELECT query")
        names = [str(v) for v in result.vars]  # type: ignore[attr-defined]
        try:  # rdflib evaluates lazily: its own errors surface here, and fail the rule closed
            rows = [{n: to_ox(row[i]) for i, n in enumerate(names)} for row in result]  # type: ignore[attr-defined]
        except rdflib.plugins.sparql.sparql.SPARQLError as err:
            raise StoreError(f"rdflib could not evaluate the query: {type(err).__name__}: {err}") from err
        return Rows(names, rows)

    def stream(
        self, query: str, bindings: Mapping[str, Term] | None = None
    ) -> Iterator[tuple[str | None, ...]]:
        rows = self.select(query, bindings)
        names = rows.variables
        for row in rows:
            yield tuple(None if (t := row[n]) is None else t.value for n in names)

    def ask(self, query: str, bindings: Mapping[str, Term] | None = None) -> bool:
        result = self._query(query, bindings)
        if result.type != "ASK":  # type: ignore[attr-defined]
            raise SyntaxError("expected an ASK query")
        return bool(result.askAnswer)  # type: ignore[attr-defined]

    def construct(self, query: str, bindings: Mapping[str, Term] | None = None) -> Iterator[ox.Triple]:
        result = self._query(query, bindings)
        if result.type not in ("CONSTRUCT", "DESCRIBE"):  # type: ignore[attr-defined]
            raise SyntaxError("expected a CONSTRUCT or DESCRIBE query")
        return iter([ox.Triple(to_ox(s), to_ox(p), to_ox(o)) for s, p, o in result])  # type: ignore[arg-type,attr-defined]

    def update(self, update: str) -> None:
        self._ds.update(update)

    def bulk_load(self, ntriples: Path, graph: str) -> None:
        self._ds.graph(URIRef(graph)).parse(str(ntriples), format="nt")

    def within(self, graphs):
        return RdflibWithin(self, graphs)

    def drop_graph(self, graph: str) -> None:
        self._ds.remove_graph(URIRef(graph))

    def named_graphs(self) -> list[str]:
        return [
            str(g.identifier)
            for g in self._ds.graphs()
            if isinstance(g.identifier, URIRef)
            and str(g.identifier) != str(rdflib.graph.DATASET_DEFAULT_GRAPH_ID)
        ]

    def dump(self, out: IO[bytes], fmt: ox.RdfFormat, graph: str | None = None) -> None:
        source = self._ds.graph(URIRef(graph)) if graph else self._ds
        out.write(source.serialize(format="nquads" if graph is None else "nt", encoding="utf-8"))

    def quad_count(self, graph: str | None = None) -> int:
        if graph is not None:
            return len(self._ds.graph(URIRef(graph)))
        return sum(len(g) for g in self._ds.graphs())


class RdflibWithin(RdflibStore):
    """``Store.within`` on rdflib: the merge of some graphs (Oxigraph's ``default_graph``), with
    the attributes of :class:`provgraph.store.base.Within` (the whole store, the graphs)."""

    def __init__(self, store: RdflibStore, graphs) -> None:
        self.store, self.graphs, self.location = store, list(graphs), store.location
        self._ds = rdflib.graph.ReadOnlyGraphAggregate([store._ds.graph(URIRef(g)) for g in self.graphs])


def open_rdflib_store() -> RdflibStore:
    """A fresh rdflib store, set up like :func:`provgraph.store.open_store` (ontology loaded)."""
    from provgraph.store import ensure_ontology
    from provgraph.store.catalog import recover

    store = RdflibStore()
    recover(store)
    ensure_ontology(store)
    return store
