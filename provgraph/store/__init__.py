"""Store backends behind one interface (:class:`provgraph.store.base.Store`)."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pyoxigraph as ox

from provgraph.rdf.resources import ontology_path
from provgraph.store import catalog
from provgraph.store.base import Row, Rows, Store, Term
from provgraph.store.catalog import recover
from provgraph.store.endpoint import is_server, parse_endpoint

__all__ = ["Row", "Rows", "Store", "Term", "open_store"]


def open_store(location: str | Path | None) -> Store:
    """Open a store: ``None`` or ``":memory:"`` in memory, a folder path on disk, or a SPARQL
    1.1 server URL (``[preset+]http(s)://...``, see :mod:`provgraph.store.endpoint`).

    The store is recovered on open: graphs that no catalog entry points to (left behind by an
    import that was killed before it switched) are removed, so readers only ever see
    complete imports. A server is also checked to keep unfinished imports out of queries.
    """
    if location is None or str(location) == ":memory:":
        # Backends load on demand: every module that names the Store type imports this
        # package, and most never open a server (http) or any store at all.
        from provgraph.store.oxigraph import OxigraphStore

        store: Store = OxigraphStore(None)
    elif is_server(str(location)):
        from provgraph.store.http import SparqlStore  # on demand, as above

        server = SparqlStore(parse_endpoint(str(location)))
        recover(server)
        ensure_ontology(server)
        server.verify()
        return server
    else:
        from provgraph.store.oxigraph import OxigraphStore  # on demand, as above

        store = OxigraphStore(Path(location))
    recover(store)
    ensure_ontology(store)
    return store


def ensure_ontology(store: Store) -> None:
    """Keep the vocabulary in its own graph, so rules and views can use class metadata."""

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
