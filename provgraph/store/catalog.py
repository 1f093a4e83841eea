"""Which named graph is current for each source, and atomic replacement of that graph.

Oxigraph's bulk loader is the fast path but writes in batches, so it is not atomic. A
replacement therefore loads into a fresh graph that no catalog entry points to yet, then
switches the catalog entry in one SPARQL UPDATE (a single transaction), and only then drops
the old graph. A process killed at any point leaves either the old entry or the new one;
:func:`recover`, run whenever a store is opened, removes the orphan graph that the kill left.

On a shared store (a SPARQL server) other clients may be loading their own staging graphs
while this one opens, so :func:`recover` only removes provgraph graphs that no entry points to
and whose name says they were created more than ``store.staging_ttl`` seconds ago. Readers
never see a staging graph there: queries name the current graphs as their dataset.

The catalog graph also holds one entry per ingest in progress (:func:`begin_ingest`): the
sources it plans to bring up to date, each taken off as it switches. An entry left behind is
an ingest that was killed midway, which `info` reports and the check refuses.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import logging
import queue
import re
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import pyoxigraph as ox

from provgraph.errors import StoreError
from provgraph.rdf.terms import escape_key, literal
from provgraph.rdf.vocab import PG_NS
from provgraph.store.base import Store

log = logging.getLogger(__name__)

CATALOG = "urn:provgraph:catalog"

#: Held while a graph is loaded and made current, or removed: derived views refreshed side by
#: side (:func:`provgraph.lineage.gate.refresh_derived`) compute at once but write one at a time.
_WRITING = threading.RLock()
F = TypeVar("F", bound=Callable[..., Any])


def _one_writer(fn: F) -> F:
    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _WRITING:
            return fn(*args, **kwargs)

    return locked  # type: ignore[return-value]


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


def base_iri(store: Store) -> str:
    """The imported project's base IRI (its contract's ``base_iri``; '' before the contract is
    imported): what node names are shown relative to."""
    rows = store.select(f"SELECT ?b WHERE {{ ?p a <{PG_NS}Project> ; <{PG_NS}baseIri> ?b }} LIMIT 1")
    return rows[0]["b"].value if rows else ""  # type: ignore[union-attr]


def new_graph_iri(now: dt.datetime | None = None) -> str:
    """A graph name never used before, carrying its creation time (UTC) for recovery."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{_GRAPH}{stamp}-{uuid.uuid4().hex}"


_STAMP = re.compile(r"(\d{8}T\d{6}Z)-[0-9a-f]{32}$")


def graph_created(graph: str) -> dt.datetime | None:
    """When :func:`new_graph_iri` minted ``graph`` (None for names without a time)."""
    match = _STAMP.fullmatch(graph[len(_GRAPH) :]) if graph.startswith(_GRAPH) else None
    if not match:
        return None
    return dt.datetime.strptime(match[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)


@_one_writer
def replace(store: Store, key: str, fingerprint: str, ntriples: Path) -> str:
    """Make the triples in ``ntriples`` the current graph for ``key``; returns its IRI."""
    if store.streams_loads:  # in segments, as an import: the loader's memory stays bounded
        return replace_from(store, key, fingerprint, lambda out: copy_lines(ntriples, out))
    graph = new_graph_iri()
    try:
        store.bulk_load(ntriples, graph)
    except Exception:
        _discard(store, graph)
        raise
    return _make_current(store, key, graph, fingerprint)


def copy_lines(ntriples: Path, out: IO[str]) -> None:
    """Copy an N-Triples file into what :func:`replace_from` hands ``produce``, whole lines at
    a time (a segment must end at a line end)."""
    with ntriples.open(encoding="utf-8") as fh:
        for block in iter(lambda: fh.readlines(_CHUNK), []):
            out.write("".join(block))


def _make_current(store: Store, key: str, graph: str, fingerprint: str) -> str:
    """Switch ``key`` to the loaded ``graph``, then drop the graph it replaces."""
    old = current(store, key)
    switch(store, key, graph, fingerprint)
    if old is not None:
        store.drop_graph(old.graph)  # flushes what a large removal left in the write buffers
    # no flush here: the switch is in RocksDB's write-ahead log, which a killed process replays
    # (test_atomicity), and a flush per source waited on the loaded segments' compaction: 6-10 s
    # of a 10^5 ingest's 52-58 s (bench/README.md, seventh run)
    return graph


@_one_writer
def replace_from(store: Store, key: str, fingerprint: str, produce: Callable[[IO[str]], None]) -> str:
    """Like :func:`replace`, but ``produce`` writes the N-Triples into the file object it is given.

    On a store that loads a stream (the embedded Oxigraph store) the loading runs in a second
    thread while ``produce`` runs: an importer's Python and Oxigraph's loader then work on
    two cores at once. If ``produce`` raises, the loading is abandoned and its graph removed.
    """
    graph = new_graph_iri()
    try:
        if store.streams_loads:
            _load_streaming(store, graph, produce)
        else:
            with tempfile.TemporaryDirectory(prefix="provgraph-") as tmp:
                nt = Path(tmp) / "import.nt"
                with nt.open("w", encoding="utf-8") as fh:
                    produce(fh)
                store.bulk_load(nt, graph)
    except BaseException:
        _discard(store, graph)
        raise
    return _make_current(store, key, graph, fingerprint)


_CHUNK = 1 << 20
#: MiB of N-Triples per bulk load. Oxigraph loads a byte string with its parallel parser
#: and without the interpreter lock, where a Python stream is parsed on one thread that takes
#: the lock for every read, which the importer holds: loader and importer then ran one after
#: the other (10^4 calls: importer alone 3 s, load alone 4.3 s, both streamed 8 s). A segment
#: is a byte string, loaded while the next is written; the loader's memory grows with what
#: one call loads (3.3 M quads in one call: 1.75 GiB peak; in 1 M-quad calls: 0.95 GiB), so a
#: large source is loaded in several calls, each with a fixed cost.
_SEGMENT = 16

_END, _ABORT = None, object()  # end of the source; the producer failed


class _SegmentWriter:
    """The producer's end: N-Triples text, handed to the loader in segments of about
    ``_SEGMENT`` MiB. Segments are cut between writes, so every write must end at a line end."""

    def __init__(self, segments: queue.Queue, loader: threading.Thread, failure: list[BaseException]) -> None:
        self._segments, self._loader, self._failure = segments, loader, failure
        self._parts: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= _SEGMENT * _CHUNK:
            self._flush()
        return len(text)

    def _flush(self) -> None:
        segment = "".join(self._parts).encode("utf-8")
        self._parts, self._size = [], 0
        if segment:
            self._put(segment)

    def _put(self, item: object) -> None:
        while True:
            try:
                self._segments.put(item, timeout=0.2)
                return
            except queue.Full:
                if not self._loader.is_alive():  # the loader failed: stop producing
                    if self._failure:
                        raise self._failure[0] from None
                    raise StoreError("the store stopped loading") from None

    def close(self) -> None:
        self._flush()
        self._put(_END)

    def abort(self) -> None:
        if self._loader.is_alive():
            with contextlib.suppress(BaseException):  # the loader died meanwhile: nothing to stop
                self._put(_ABORT)


def _load_streaming(store: Store, graph: str, produce: Callable[[IO[str]], None]) -> None:
    # one segment waits while one loads and the next is written: three segments at most
    segments: queue.Queue = queue.Queue(maxsize=1)
    failure: list[BaseException] = []

    def load() -> None:
        try:
            while (segment := segments.get()) is not _END:
                if segment is _ABORT:
                    return
                store.bulk_load_bytes(segment, graph)
        except BaseException as err:
            failure.append(err)

    loader = threading.Thread(target=load, name="provgraph-load", daemon=True)
    loader.start()
    writer = _SegmentWriter(segments, loader, failure)
    try:
        produce(writer)  # type: ignore[arg-type]
        writer.close()
    except BaseException:
        writer.abort()
        loader.join()
        raise
    loader.join()
    if failure:
        raise failure[0]


def _discard(store: Store, graph: str) -> None:
    """Best effort: remove a staging graph whose load failed (recovery gets it otherwise)."""
    try:
        store.drop_graph(graph)
    except Exception as err:  # the load's own error is the one to report
        log.info("could not remove staging graph %s: %s", graph, err)


def switch(store: Store, key: str, graph: str, fingerprint: str) -> None:
    """Point the catalog entry for ``key`` at ``graph`` in one transaction.

    One DELETE/INSERT operation (not two), so it is atomic even on servers that commit each
    operation of an update request on its own. The same operation takes ``key`` off the
    pending list of every unfinished ingest (see :func:`begin_ingest`): a source is never
    switched but still listed as old.
    """
    slot = slot_iri(key)
    store.update(
        f"""DELETE {{ GRAPH <{CATALOG}> {{ <{slot}> ?p ?o . ?run <{_PENDING}> {literal(key)} }} }}
            INSERT {{ GRAPH <{CATALOG}> {{
              <{slot}> <{PG_NS}sourceKey> {literal(key)} ;
                       <{PG_NS}graph> <{graph}> ;
                       <{PG_NS}sha256> {literal(fingerprint)} }} }}
            WHERE {{ {_optional_slot_and_pending(slot, key)} }}"""
    )


#: Bound where a catalog triple to delete is absent: ``<slot> <NONE> <NONE>`` and
#: ``<NONE> pending "key"`` are never stored, so deleting them is a no-op.
_NONE = "urn:provgraph:catalog#none"


def _optional_slot_and_pending(slot: str, key: str) -> str:
    """The slot's triples and the runs listing ``key``, each or a placeholder: every solution
    binds every template variable. (``OPTIONAL`` would say the same, but Virtuoso 7 drops a
    whole DELETE/INSERT solution with an unbound template variable, INSERT included, against
    SPARQL 1.1 Update section 3.1.3, so a first switch would insert nothing.)"""
    return (
        f"{{ GRAPH <{CATALOG}> {{ <{slot}> ?p ?o }} }} "
        f"UNION {{ BIND(<{_NONE}> AS ?p) BIND(<{_NONE}> AS ?o) }} "
        f"{{ GRAPH <{CATALOG}> {{ ?run <{_PENDING}> {literal(key)} }} }} UNION {{ BIND(<{_NONE}> AS ?run) }}"
    )


@_one_writer
def remove(store: Store, key: str) -> bool:
    """Forget a source: drop its catalog entry (and its place on any pending list), then its
    graph. Returns whether it existed."""
    old = current(store, key)
    if old is None:
        return False
    slot = slot_iri(key)
    store.update(
        f"""DELETE {{ GRAPH <{CATALOG}> {{ <{slot}> ?p ?o . ?run <{_PENDING}> {literal(key)} }} }}
            WHERE {{ {_optional_slot_and_pending(slot, key)} }}"""
    )
    store.drop_graph(old.graph)
    return True


# -- ingest-level state ------------------------------------------------------------------
# Each source is switched atomically, an ingest of many sources is not. So an ingest first
# writes a run entry into the catalog graph (never exported, never a view's data: both read
# only the graphs the slots point to) listing the sources it plans to bring up to date; each
# switch takes its source off that list, and the entry goes when the ingest completes. An
# entry still there afterwards is an ingest that was killed: `info` reports it and the gate
# refuses to decide on the store until an ingest has completed it.

_RUN = "urn:provgraph:ingest-run:"
_INTERNAL = "urn:provgraph:catalog#"  # catalog-internal predicates, not part of the ontology
_SCOPE, _STARTED = _INTERNAL + "ingestScope", _INTERNAL + "ingestStarted"
_PLANNED, _PENDING = _INTERNAL + "plannedSources", _INTERNAL + "pendingSource"


@dataclass(frozen=True)
class IngestRun:
    """An ingest that started and has not (yet) completed."""

    iri: str
    scope: tuple[str, ...]
    started: dt.datetime
    planned: int
    pending: tuple[str, ...]  # source keys not yet brought up to date, sorted


def begin_ingest(store: Store, scope: list[str], keys: list[str], now: dt.datetime | None = None) -> str:
    """Record that an ingest of ``scope`` (bundle paths) will bring ``keys`` up to date.

    One INSERT DATA: the entry is there whole or not at all. Returns the run's IRI.
    """
    started = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    run = f"{_RUN}{uuid.uuid4().hex}"
    triples = [f"<{run}> <{_STARTED}> {literal(started)}", f"<{run}> <{_PLANNED}> {literal(len(keys))}"]
    triples += [f"<{run}> <{_SCOPE}> {literal(t)}" for t in scope]
    triples += [f"<{run}> <{_PENDING}> {literal(k)}" for k in keys]
    store.update(f"INSERT DATA {{ GRAPH <{CATALOG}> {{ {' . '.join(triples)} }} }}")
    store.flush()
    return run


def settle(store: Store, key: str) -> None:
    """Take ``key`` off every pending list: the ingest dealt with it without a switch
    (unchanged, or rejected with its old graph kept and the failure reported)."""
    store.update(f"DELETE WHERE {{ GRAPH <{CATALOG}> {{ ?run <{_PENDING}> {literal(key)} }} }}")


def finish_ingest(store: Store, runs: list[str]) -> None:
    """Remove the entries of completed ``runs`` in one update."""
    if not runs:
        return
    values = " ".join(f"<{r}>" for r in runs)
    store.update(
        f"DELETE {{ GRAPH <{CATALOG}> {{ ?run ?p ?o }} }} WHERE {{ VALUES ?run {{ {values} }} "
        f"GRAPH <{CATALOG}> {{ ?run ?p ?o }} }}"
    )
    store.flush()


def unfinished_ingests(store: Store) -> list[IngestRun]:
    """Ingest runs whose entry is still in the catalog, oldest first."""
    rows = store.select(
        f"""SELECT ?run ?started ?planned ?scope ?key WHERE {{ GRAPH <{CATALOG}> {{
              ?run <{_STARTED}> ?started ; <{_PLANNED}> ?planned .
              OPTIONAL {{ ?run <{_SCOPE}> ?scope }} OPTIONAL {{ ?run <{_PENDING}> ?key }} }} }}"""
    )
    found: dict[str, tuple[str, int, set[str], set[str]]] = {}
    for r in rows:
        run = r["run"].value  # type: ignore[union-attr]
        entry = found.setdefault(run, (r["started"].value, int(r["planned"].value), set(), set()))  # type: ignore[union-attr]
        if r["scope"] is not None:
            entry[2].add(r["scope"].value)
        if r["key"] is not None:
            entry[3].add(r["key"].value)
    runs = [
        IngestRun(iri, tuple(sorted(scope)), _parse_time(started), planned, tuple(sorted(pending)))
        for iri, (started, planned, scope, pending) in found.items()
    ]
    return sorted(runs, key=lambda r: (r.started, r.iri))


# A source whose last import failed keeps its old graph (or none): the rules would read
# missing evidence as if the source said nothing. The failure is kept in the catalog until the
# source imports (or is removed), and the gate refuses to decide meanwhile.
_FAILED = "urn:provgraph:failed-source:"
_FAILED_KEY, _FAILED_ERROR = _INTERNAL + "failedKey", _INTERNAL + "failedError"


def _failed_iri(key: str) -> str:
    return _FAILED + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def mark_failed(store: Store, key: str, error: str) -> None:
    """Record that the source ``key`` could not be imported, with the one-line ``error``."""
    node = _failed_iri(key)
    store.update(
        f"""DELETE WHERE {{ GRAPH <{CATALOG}> {{ <{node}> ?p ?o }} }};
            INSERT DATA {{ GRAPH <{CATALOG}> {{
              <{node}> <{_FAILED_KEY}> {literal(key)} ; <{_FAILED_ERROR}> {literal(error)} }} }}"""
    )


def clear_failed(store: Store, key: str) -> None:
    store.update(f"DELETE WHERE {{ GRAPH <{CATALOG}> {{ <{_failed_iri(key)}> ?p ?o }} }}")


def failed_sources(store: Store) -> list[tuple[str, str]]:
    """(source key, error) of every source whose last import failed, sorted by key."""
    rows = store.select(
        f"""SELECT ?key ?error WHERE {{ GRAPH <{CATALOG}> {{
              ?n <{_FAILED_KEY}> ?key ; <{_FAILED_ERROR}> ?error }} }} ORDER BY ?key"""
    )
    return [(r["key"].value, r["error"].value) for r in rows]  # type: ignore[union-attr]


def _parse_time(text: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def recover(store: Store, now: dt.datetime | None = None) -> list[str]:
    """Drop named graphs that no catalog entry points to; returns what was dropped.

    On a shared store only provgraph's own graphs older than ``store.staging_ttl`` go (a
    younger one may be another client's import in progress). The graphs are listed before
    the catalog is read: a staging graph in that list whose import then switches is found
    current, never dropped.
    """
    if store.shared:
        graphs = store.named_graphs()
        live = {s.graph for s in slots(store)} | {CATALOG}
        now = now or dt.datetime.now(dt.UTC)

        def stale(g: str) -> bool:
            created = graph_created(g)
            return created is None or (now - created).total_seconds() > store.staging_ttl

        orphans = [g for g in graphs if g.startswith(_GRAPH) and g not in live and stale(g)]
    else:
        live = {s.graph for s in slots(store)} | {CATALOG}
        orphans = [g for g in store.named_graphs() if g not in live]
    for g in orphans:
        log.info("removing graph %s left behind by an interrupted import", g)
        store.drop_graph(g)
    if orphans:
        store.flush()
    return orphans


_ROOT = "urn:provgraph:bundle-root"


def record_root(store: Store, root: str) -> None:
    """Record where the bundle whose files the store describes was read from (the derived pixel
    view re-reads source DICOMs from it). Machine-local, so kept in the catalog, never exported."""
    store.update(
        f"DELETE WHERE {{ GRAPH <{CATALOG}> {{ <{_ROOT}> <{_ROOT}> ?r }} }}; "
        f"INSERT DATA {{ GRAPH <{CATALOG}> {{ <{_ROOT}> <{_ROOT}> {literal(root)} }} }}"
    )


def bundle_root(store: Store) -> str | None:
    """The bundle folder the last ingest read, or None (no ingest yet)."""
    rows = store.select(f"SELECT ?r WHERE {{ GRAPH <{CATALOG}> {{ <{_ROOT}> <{_ROOT}> ?r }} }}")
    return rows[0]["r"].value if rows else None  # type: ignore[union-attr]
