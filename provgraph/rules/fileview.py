"""The file class closure: every node of ``pg:File`` or a subclass of it, stated once.

Importers type a file by what it is (``pg:SourceFile``, ``pg:DicomFile``, ``pg:ArchiveMember``
...), and the ontology says each of those is a ``pg:File``. A rule about files read the closure
with ``?cls rdfs:subClassOf* pg:File . ?focus a ?cls``; Virtuoso 7.2 finds nothing for that
pattern once any other pattern joins it (README, "Virtuoso Open Source"). This view states the
closure once per check (RDFS rule rdfs9 for ``pg:File``) as ``pg:isFile true`` in the catalog
slot :data:`SLOT`, so the rules read a plain ``?focus pg:isFile true`` on every engine. (A
property of its own, not ``rdf:type pg:File``: an extra class would show in the lineage's and
the report's class lists.)

Recomputed when any imported graph or the ontology changed, like the call evidence view;
:func:`provgraph.lineage.gate.refresh_derived` refreshes it before the rules run.
"""

from __future__ import annotations

import hashlib
import logging
from typing import IO

from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG, PG_NS
from provgraph.rules import callview
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "derived:file-closure"
#: bumped whenever the view changes shape
VIEW_VERSION = "1"

# (the path alone, joined to nothing else, is what Virtuoso evaluates right)
_FILES = f"""PREFIX pg: <{PG_NS}>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT DISTINCT ?f WHERE {{ ?cls rdfs:subClassOf* pg:File . ?f a ?cls }}"""


def fingerprint(store: Store) -> str:
    # the imports' fingerprint, as the call view takes it (the ontology is an import)
    return hashlib.sha256(f"{VIEW_VERSION}\n{callview.fingerprint(store)}".encode()).hexdigest()


def refresh(store: Store) -> bool:
    """Bring the closure up to date; True when it was recomputed."""
    current = fingerprint(store)
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint == current:
        return False
    files = sorted(r["f"].value for r in store.select(_FILES))  # type: ignore[union-attr]

    def produce(fh: IO[str]) -> None:
        w = TripleWriter(fh)
        for f in files:
            w.add(IRI(f), PG.isFile, True)

    catalog.replace_from(store, SLOT, current, produce)
    log.info("file class closure: %d files", len(files))
    return True
