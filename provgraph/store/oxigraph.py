"""Embedded Oxigraph backend: on disk in a project folder, or in memory for tests."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import pyoxigraph as ox

from provgraph.errors import StoreError
from provgraph.rdf.sparql import inject_values
from provgraph.rdf.vocab import PREFIXES
from provgraph.store.base import Store, Term

log = logging.getLogger(__name__)

#: A graph larger than this is dropped in pieces (see :meth:`OxigraphStore.drop_graph`).
DROP_CHUNK = 20_000
#: Quads removed between two flushes of RocksDB's write buffers while a large graph is dropped.
DROP_FLUSH_EVERY = 100_000


class OxigraphStore(Store):
    """A pyoxigraph ``Store``; ``path=None`` keeps everything in memory."""

    # pyoxigraph evaluates a query, row by row, with the interpreter lock released
    concurrent_reads = True
    engine = "oxigraph"

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.location = str(path) if path else "memory"
        try:
            if path is None:
                self._ox = ox.Store()
            else:
                path.mkdir(parents=True, exist_ok=True)
                self._ox = ox.Store(str(path))
        except OSError as err:
            if "lock" in str(err).lower():
                raise StoreError(
                    f"{path}: the store is open in another provgraph process; wait for it "
                    "to finish (the embedded store allows one writer at a time)"
                ) from err
            raise StoreError(f"{path}: cannot open the store: {err}") from err

    def _query(self, query: str, bindings: Mapping[str, Term] | None) -> object:
        try:
            return self._ox.query(inject_values(query, bindings), use_default_graph_as_union=True)
        except OSError as err:
            raise StoreError(f"{self.location}: query failed: {err}") from err

    def _query_within(self, query: str, bindings: Mapping[str, Term] | None, graphs: list[str]) -> object:
        nodes = [ox.NamedNode(g) for g in graphs]
        try:
            return self._ox.query(inject_values(query, bindings), default_graph=nodes, named_graphs=nodes)
        except OSError as err:
            raise StoreError(f"{self.location}: query failed: {err}") from err

    def update(self, update: str) -> None:
        try:
            self._ox.update(update)
        except OSError as err:
            raise StoreError(f"{self.location}: update failed: {err}") from err

    def bulk_load(self, ntriples: Path, graph: str) -> None:
        try:
            self._ox.bulk_load(
                path=str(ntriples),
                format=ox.RdfFormat.N_TRIPLES,
                to_graph=ox.NamedNode(graph),
                lenient=True,  # every IRI was minted through terms.mint and is valid by construction
            )
        except OSError as err:
            raise StoreError(f"{self.location}: bulk load into <{graph}> failed: {err}") from err

    streams_loads = True

    def bulk_load_bytes(self, ntriples: bytes, graph: str) -> None:
        try:
            self._ox.bulk_load(
                input=ntriples,  # bytes: parsed in parallel, without the interpreter lock
                format=ox.RdfFormat.N_TRIPLES,
                to_graph=ox.NamedNode(graph),
                lenient=True,  # every IRI was minted through terms.mint and is valid by construction
            )
        except (OSError, SyntaxError) as err:
            raise StoreError(f"{self.location}: bulk load into <{graph}> failed: {err}") from err

    def drop_graph(self, graph: str) -> None:
        node = ox.NamedNode(graph)
        if not self._ox.contains_named_graph(node):
            return
        try:
            if self.path is not None:
                self._drop_in_pieces(node)
            self._ox.remove_graph(node)
        except OSError as err:
            # what was removed stays removed; the graph is no current one, so the next open's
            # catalog.recover drops the rest
            raise StoreError(f"{self.location}: removing <{graph}> failed: {err}") from err

    def _drop_in_pieces(self, node: ox.NamedNode) -> None:
        # remove_graph is one transaction that holds every quad it removes: 2.7 GiB for a 10^5
        # calls' view of 2.1 M quads (bench/README.md, sixth run). Quad by quad, with the write
        # buffers flushed every DROP_FLUSH_EVERY removals, the same took 196 MiB and half the time.
        # Each piece is listed before it is removed: a live iterator pins the buffers it reads.
        removed = unflushed = 0
        while True:
            piece = list(itertools.islice(self._ox.quads_for_pattern(None, None, None, node), DROP_CHUNK))
            if len(piece) < DROP_CHUNK and not removed:
                return  # small: remove_graph's one transaction is cheaper
            for quad in piece:
                self._ox.remove(quad)
            removed += len(piece)
            unflushed += len(piece)
            if unflushed >= DROP_FLUSH_EVERY:
                self._ox.flush()
                unflushed = 0
            if len(piece) < DROP_CHUNK:
                if unflushed:  # the last removals' tombstones leave the write buffers too
                    self._ox.flush()
                return

    def named_graphs(self) -> list[str]:
        return [g.value for g in self._ox.named_graphs() if isinstance(g, ox.NamedNode)]

    def dump(self, out: IO[bytes], fmt: ox.RdfFormat, graph: str | None = None) -> None:
        kwargs: dict[str, object] = {}
        if graph is not None:
            kwargs["from_graph"] = ox.NamedNode(graph)
        if fmt in (ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG):
            kwargs["prefixes"] = PREFIXES
        self._ox.dump(out, format=fmt, **kwargs)

    def quad_count(self, graph: str | None = None) -> int:
        if graph is None:
            return len(self._ox)
        rows = self.select(
            "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
            {"g": ox.NamedNode(graph)},
        )
        return int(rows[0]["n"].value) if rows else 0  # type: ignore[union-attr]

    def flush(self) -> None:
        if self.path is not None:
            self._ox.flush()

    def compact(self) -> None:
        # RocksDB's full compaction: the bulk loader's segments become sorted levels, so a
        # look-up reads one file per level (10^6 calls: 117 s, store 12 -> 8.5 GB, scans with
        # joins 0.5-0.7x; bench/README.md)
        if self.path is not None:
            try:
                self._ox.optimize()
            except OSError as err:
                raise StoreError(f"{self.location}: compacting the store failed: {err}") from err

    def close(self) -> None:
        self.flush()
        # Dropping the last reference releases the RocksDB lock promptly.
        self._ox = None  # type: ignore[assignment]
