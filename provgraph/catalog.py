"""Which named graph is current for each source, and atomic replacement of that graph.

Oxigraph's bulk loader is the fast path but writes in batches, so it is not atomic. A
replacement therefore loads into a fresh graph that no catalog entry points to yet, then
switches the catalog entry in one SPARQL UPDATE (a single transaction), and only then drops
the old graph. A process killed at any point leaves either the old entry or the new one;
:func:`recover`, run whenever a store is opened, removes the orphan graph that the kill left.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from provgraph.store.base import Store
from provgraph.terms import escape_key, literal
from provgraph.vocab import PG_NS

log = logging.getLogger(__name__)

CATALOG = "urn:provgraph:catalog"
_SLOT = "urn:provgraph:slot:"
_GRAPH = "urn:provgraph:graph:"


@dataclass(frozen=True)
class Slot:
    """A catalog entry: the current graph for one source key."""

    key: str
    graph: str
    fingerprint: str


def slot_iri(key: str) -> str:
    return _SLOT + escape_key(key)


def slots(store: Store) -> list[Slot]:
    """All catalog entries, sorted by key."""
    rows = store.select(
        f"""SELECT ?key ?graph ?fp WHERE {{ GRAPH <{CATALOG}> {{
              ?slot <{PG_NS}sourceKey> ?key ; <{PG_NS}graph> ?graph ; <{PG_NS}sha256> ?fp }} }}
            ORDER BY ?key"""
    )
    return [Slot(r["key"].value, r["graph"].value, r["fp"].value) for r in rows]  # type: ignore[union-attr]


def current(store: Store, key: str) -> Slot | None:
    rows = store.select(
        f"""SELECT ?slot ?graph ?fp WHERE {{ GRAPH <{CATALOG}> {{
              ?slot <{PG_NS}graph> ?graph ; <{PG_NS}sha256> ?fp }} }}""",
        {"slot": ox.NamedNode(slot_iri(key))},
    )
    if not rows:
        return None
    return Slot(key, rows[0]["graph"].value, rows[0]["fp"].value)  # type: ignore[union-attr]


def new_graph_iri() -> str:
    return _GRAPH + uuid.uuid4().hex


def replace(store: Store, key: str, fingerprint: str, ntriples: Path) -> str:
    """Make the triples in ``ntriples`` the current graph for ``key``; returns its IRI."""
    graph = new_graph_iri()
    store.bulk_load(ntriples, graph)
    old = current(store, key)
    switch(store, key, graph, fingerprint)
    if old is not None:
        store.drop_graph(old.graph)
    store.flush()
    return graph


def switch(store: Store, key: str, graph: str, fingerprint: str) -> None:
    """Point the catalog entry for ``key`` at ``graph`` in one transaction."""
    slot = slot_iri(key)
    store.update(
        f"""DELETE {{ GRAPH <{CATALOG}> {{ <{slot}> ?p ?o }} }}
            WHERE {{ GRAPH <{CATALOG}> {{ <{slot}> ?p ?o }} }} ;
            INSERT DATA {{ GRAPH <{CATALOG}> {{
              <{slot}> <{PG_NS}sourceKey> {literal(key)} ;
                       <{PG_NS}graph> <{graph}> ;
                       <{PG_NS}sha256> {literal(fingerprint)} }} }}"""
    )


def remove(store: Store, key: str) -> bool:
    """Forget a source: drop its catalog entry, then its graph. Returns whether it existed."""
    old = current(store, key)
    if old is None:
        return False
    slot = slot_iri(key)
    store.update(f"DELETE WHERE {{ GRAPH <{CATALOG}> {{ <{slot}> ?p ?o }} }}")
    store.drop_graph(old.graph)
    return True


def recover(store: Store) -> list[str]:
    """Drop named graphs that no catalog entry points to; returns what was dropped."""
    live = {s.graph for s in slots(store)} | {CATALOG}
    orphans = [g for g in store.named_graphs() if g not in live]
    for g in orphans:
        log.info("removing graph %s left behind by an interrupted import", g)
        store.drop_graph(g)
    if orphans:
        store.flush()
    return orphans
