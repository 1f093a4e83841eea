"""The one small interface every store backend implements.

Importers, rules, statistics and views only talk to a :class:`Store`. Queries see the union
of all named graphs as their default graph; which graphs exist (and which are current) is
managed by :mod:`provgraph.store.catalog` on top of these primitives, so a SPARQL 1.1 server can be
added as another backend without touching importers or rules.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox

Term = ox.NamedNode | ox.BlankNode | ox.Literal
Row = dict[str, Term | None]


class Rows(list[Row]):
    """SELECT solutions; ``variables`` lists the projected variables even when empty."""

    def __init__(self, variables: list[str], rows: list[Row]) -> None:
        super().__init__(rows)
        self.variables = variables


class Store(ABC):
    """A quad store: SPARQL over the union of named graphs, bulk loading, graph management."""

    #: Human-readable location, for messages.
    location: str = ""
    #: Whether other processes may write the store while this one works (a server). Then
    #: recovery only removes staging graphs older than ``staging_ttl`` seconds.
    shared: bool = False
    staging_ttl: float = 0.0
    #: Whether several threads may query the store at once (the engine evaluates outside the
    #: interpreter lock, or on a server), so independent reads can run side by side.
    concurrent_reads: bool = False
    #: The SPARQL engine answering queries (a server preset's name, :mod:`provgraph.store.endpoint`),
    #: for rules written for one engine's planner; empty when unknown.
    engine: str = ""

    @abstractmethod
    def _query(self, query: str, bindings: Mapping[str, Term] | None) -> object:
        """Run any query form; return pyoxigraph's result objects (QuerySolutions,
        QueryBoolean, or an iterable of Triples for CONSTRUCT/DESCRIBE)."""

    def select(self, query: str, bindings: Mapping[str, Term] | None = None) -> Rows:
        """Run a SPARQL SELECT; ``bindings`` pre-bind variables (never formatted into text).

        Returns one dict per solution, mapping each projected variable to its term or None.
        Raises :class:`SyntaxError` on an invalid query and :class:`StoreError` on I/O failure.
        """
        result = self._query(query, bindings)
        if not isinstance(result, ox.QuerySolutions):
            raise SyntaxError("expected a SELECT query")
        names = [v.value for v in result.variables]
        return Rows(names, [{n: sol[n] for n in names} for sol in result])

    def stream(
        self, query: str, bindings: Mapping[str, Term] | None = None
    ) -> Iterator[tuple[str | None, ...]]:
        """Run a SPARQL SELECT and yield each solution as a tuple of term values (None when
        unbound), in projection order, without holding the whole result as objects: for
        results of millions of rows."""
        result = self._query(query, bindings)
        if not isinstance(result, ox.QuerySolutions):
            raise SyntaxError("expected a SELECT query")
        width = range(len(result.variables))
        for sol in result:
            yield tuple(None if (t := sol[i]) is None else t.value for i in width)

    def stream_values(
        self, query: str, iris: Iterable[str], chunk: int = 1000
    ) -> Iterator[tuple[str | None, ...]]:
        """:meth:`stream` ``query`` once per ``chunk`` of ``iris`` (sorted, distinct), each chunk
        written as IRIs where the query has ``%s`` (``VALUES ?n { %s }``): a look-up per node,
        not a join over every row of a property."""
        ordered = sorted(set(iris))
        for k in range(0, len(ordered), chunk):
            yield from self.stream(query % " ".join(f"<{i}>" for i in ordered[k : k + chunk]))

    def solutions(
        self, query: str, bindings: Mapping[str, Term] | None = None
    ) -> Iterator[tuple[Term | None, ...]]:
        """Run a SPARQL SELECT and yield each solution as a tuple of terms, in projection order,
        as the engine produces them (an export of millions of triples; a CONSTRUCT collects its
        triples to drop duplicates, this does not)."""
        result = self._query(query, bindings)
        if not isinstance(result, ox.QuerySolutions):
            raise SyntaxError("expected a SELECT query")
        width = range(len(result.variables))
        for sol in result:
            yield tuple(sol[i] for i in width)

    def ask(self, query: str, bindings: Mapping[str, Term] | None = None) -> bool:
        """Run a SPARQL ASK."""
        result = self._query(query, bindings)
        if not isinstance(result, ox.QueryBoolean):
            raise SyntaxError("expected an ASK query")
        return bool(result)

    def construct(self, query: str, bindings: Mapping[str, Term] | None = None) -> Iterator[ox.Triple]:
        """Run a SPARQL CONSTRUCT or DESCRIBE and iterate over the triples."""
        result = self._query(query, bindings)
        if not isinstance(result, ox.QueryTriples | list):
            raise SyntaxError("expected a CONSTRUCT or DESCRIBE query")
        return iter(result)

    def within(self, graphs: Sequence[str]) -> Within:
        """A read-only view of this store whose queries see only ``graphs``: their merge is the
        default graph and they are the named graphs (a picture of the imports without the
        check's derived views, say)."""
        return Within(self, graphs)

    def _query_within(self, query: str, bindings: Mapping[str, Term] | None, graphs: list[str]) -> object:
        """:meth:`_query` over the dataset of ``graphs`` only (see :meth:`within`)."""
        raise NotImplementedError(f"{type(self).__name__} cannot restrict a query to some graphs")

    @abstractmethod
    def update(self, update: str) -> None:
        """Run a SPARQL UPDATE request as one transaction: all of it applies or none."""

    @abstractmethod
    def bulk_load(self, ntriples: Path, graph: str) -> None:
        """Load an N-Triples file into ``graph`` as fast as possible. Not atomic."""

    #: Whether :meth:`bulk_load_bytes` works (loading segments while the next is written).
    streams_loads: bool = False

    def bulk_load_bytes(self, ntriples: bytes, graph: str) -> None:
        """Load a segment of N-Triples into ``graph`` as fast as possible, adding to what it
        holds (a large source arrives in several segments). Not atomic."""
        raise NotImplementedError

    @abstractmethod
    def drop_graph(self, graph: str) -> None:
        """Remove a named graph and all its triples (no error if it does not exist)."""

    @abstractmethod
    def named_graphs(self) -> list[str]:
        """IRIs of all named graphs."""

    @abstractmethod
    def dump(self, out: IO[bytes], fmt: ox.RdfFormat, graph: str | None = None) -> None:
        """Serialise the store (or one graph) to ``out``."""

    @abstractmethod
    def quad_count(self, graph: str | None = None) -> int:
        """Number of quads in the store, or in one named graph."""

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Group reads that must see one state of the store (a check, an export).

        The embedded store has one writer at a time (a file lock), so this does nothing. A
        shared store pins the current graphs on entry and raises
        :class:`~provgraph.errors.StoreChanged` on exit if another client replaced one of
        them meanwhile.
        """
        yield

    def flush(self) -> None:  # noqa: B027 - optional hook, a no-op for memory stores
        """Make sure everything written so far is durable."""

    def compact(self) -> None:  # noqa: B027 - optional hook: servers and memory stores manage their own
        """Reorganise the storage for reading after large writes (bulk loads leave many
        overlapping segments that every lookup must consult)."""

    def close(self) -> None:  # noqa: B027
        """Flush and release the store."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Within(Store):
    """The read-only view :meth:`Store.within` gives: queries go to the store it wraps, over
    the listed graphs only; writing through it is an error."""

    def __init__(self, store: Store, graphs: Sequence[str]) -> None:
        self.store = store
        self.graphs = list(dict.fromkeys(graphs))
        self.location = store.location
        self.concurrent_reads = store.concurrent_reads
        self.engine = store.engine

    def _query(self, query: str, bindings: Mapping[str, Term] | None) -> object:
        return self.store._query_within(query, bindings, self.graphs)

    def within(self, graphs: Sequence[str]) -> Within:
        return Within(self.store, [g for g in graphs if g in set(self.graphs)])

    def _read_only(self, *_: Any) -> Any:
        raise TypeError("a view of some graphs of a store is read-only")

    update = bulk_load = drop_graph = dump = _read_only  # type: ignore[assignment]

    def named_graphs(self) -> list[str]:
        return list(self.graphs)

    def quad_count(self, graph: str | None = None) -> int:
        return sum(self.store.quad_count(g) for g in ([graph] if graph else self.graphs) if g in self.graphs)
