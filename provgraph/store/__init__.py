"""Store backends behind one interface (:class:`provgraph.store.base.Store`)."""

from __future__ import annotations

from pathlib import Path

from provgraph.store.base import Row, Rows, Store, Term

__all__ = ["Row", "Rows", "Store", "Term", "open_store"]


def open_store(location: str | Path | None) -> Store:
    """Open a store: ``None`` or ``":memory:"`` in memory, a folder path on disk, or a SPARQL
    1.1 server URL (``[preset+]http(s)://...``, see :mod:`provgraph.store.endpoint`).

    The store is recovered on open: graphs that no catalog entry points to (left behind by an
    import that was killed before it switched) are removed, so readers only ever see
    complete imports. A server is also checked to keep unfinished imports out of queries.
    """
    from provgraph.store.catalog import recover
    from provgraph.store.endpoint import is_server

    if location is None or str(location) == ":memory:":
        from provgraph.store.oxigraph import OxigraphStore

        store: Store = OxigraphStore(None)
    elif is_server(str(location)):
        from provgraph.store.endpoint import parse_endpoint
        from provgraph.store.http import SparqlStore

        server = SparqlStore(parse_endpoint(str(location)))
        recover(server)
        ensure_ontology(server)
        server.verify()
        return server
    else:
        from provgraph.store.oxigraph import OxigraphStore

        store = OxigraphStore(Path(location))
    recover(store)
    ensure_ontology(store)
    return store


def ensure_ontology(store: Store) -> None:
    """Keep the vocabulary in its own graph, so rules and views can use class metadata."""
    import hashlib
    import tempfile

    import pyoxigraph as ox

    from provgraph.rdf.resources import ontology_path
    from provgraph.store import catalog

    path = ontology_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    slot = catalog.current(store, "ontology")
    if slot is not None and slot.fingerprint == digest:
        return
    with tempfile.TemporaryDirectory(prefix="provgraph-") as tmp:
        nt = Path(tmp) / "ontology.nt"
        triples = ox.parse(path=str(path), format=ox.RdfFormat.TURTLE)
        ox.serialize(triples, str(nt), format=ox.RdfFormat.N_TRIPLES)
        catalog.replace(store, "ontology", digest, nt)
