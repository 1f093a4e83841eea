"""A SPARQL 1.1 server as a store: the Protocol for queries and updates, the Graph Store HTTP
Protocol for loading a graph's N-Triples.

Queries see the same thing as on the embedded store, the union of the current named graphs,
but on a shared server that must exclude the graphs other clients are still loading. So every
query names its dataset: ``default-graph-uri`` and ``named-graph-uri`` list the catalog and
the graphs the catalog points to (SPARQL 1.1 Protocol, section 2.1.4), and a staging graph is
invisible until its import switches the catalog to it. Inside :meth:`SparqlStore.snapshot`
the list is read once, and checked again at the end: if another client replaced one of those
graphs meanwhile, the reads mixed two states and :class:`StoreChanged` is raised.

Transport failures (refused, reset, timed out, cut-off answers) raise
:class:`StoreUnavailable` with one line naming the server and what happened.
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from urllib.parse import urlencode, urlsplit

import pyoxigraph as ox

from provgraph.errors import StoreChanged, StoreError, StoreUnavailable
from provgraph.rdf.sparql import inject_values
from provgraph.rdf.vocab import PG_NS, PREFIXES
from provgraph.store.base import Store, Term
from provgraph.store.catalog import CATALOG
from provgraph.store.endpoint import Endpoint

log = logging.getLogger(__name__)

#: Asked of the server for every query; the answer's Content-Type says which one it is.
ACCEPT = "application/sparql-results+json, application/n-triples;q=0.9, text/turtle;q=0.5"
#: A graph no client ever writes: a server that honours default-graph-uri finds nothing in it.
PROBE_GRAPH = "urn:provgraph:probe:empty"
#: From this size on, loads use the preset's bulk parameters (Oxigraph: 60 triples load in
#: 1 ms in a transaction and 160 ms through the bulk loader; 300,000 in 19 s and 5 s).
BULK_BYTES = 1 << 20
#: Servers answer these when they are up but cannot serve: treat like an outage.
_UNAVAILABLE = {401: "access denied", 403: "access denied", 404: "no such endpoint", 405: "wrong endpoint"}
_GATEWAY = {502, 503, 504}


class SparqlStore(Store):
    """A store on a SPARQL 1.1 server (Oxigraph, Fuseki, GraphDB, Virtuoso, Neptune)."""

    shared = True

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.location = endpoint.location
        self.staging_ttl = endpoint.staging_ttl
        self._pinned: list[str] | None = None

    # -- the Store interface -------------------------------------------------------------

    def update(self, update: str) -> None:
        status, _, body = self._request(
            "POST",
            self.endpoint.update,
            update.encode("utf-8"),
            {"Content-Type": "application/sparql-update; charset=utf-8"},
        )
        if status >= 300:
            raise StoreError(f"{self.location}: update failed (HTTP {status}): {_first_line(body)}")

    def bulk_load(self, ntriples: Path, graph: str) -> None:
        size = ntriples.stat().st_size
        bulk = self.endpoint.load_params if size >= BULK_BYTES else ()
        params = urlencode([(self.endpoint.graph_param, graph), *bulk])
        url = self.endpoint.store + ("&" if "?" in self.endpoint.store else "?") + params
        with ntriples.open("rb") as body:
            status, _, answer = self._request(
                "PUT",
                url,
                body,
                {"Content-Type": "application/n-triples", "Content-Length": str(size)},
            )
        if status >= 300:
            raise StoreError(
                f"{self.location}: loading <{graph}> failed (HTTP {status}): {_first_line(answer)}"
            )

    def drop_graph(self, graph: str) -> None:
        self.update(f"DROP SILENT GRAPH <{_iri(graph)}>")

    def named_graphs(self) -> list[str]:
        """Every named graph on the server, including other clients' staging graphs."""
        rows = self._select_raw("SELECT DISTINCT ?g WHERE { GRAPH ?g { } }", None)
        return [r["g"].value for r in rows if isinstance(r["g"], ox.NamedNode)]

    def dump(self, out: IO[bytes], fmt: ox.RdfFormat, graph: str | None = None) -> None:
        graphs = [graph] if graph is not None else self._dataset()
        quads = []
        for g in graphs:
            node = ox.NamedNode(g)
            query = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{_iri(g)}> {{ ?s ?p ?o }} }}"
            for t in self._construct_raw(query, [g]):
                quads.append(ox.Quad(t.subject, t.predicate, t.object, node))
        kwargs: dict[str, object] = {}
        if fmt in (ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG):
            kwargs["prefixes"] = PREFIXES
        if not fmt.supports_datasets:
            ox.serialize([ox.Triple(q.subject, q.predicate, q.object) for q in quads], out, fmt, **kwargs)
        else:
            ox.serialize(quads, out, fmt, **kwargs)

    def quad_count(self, graph: str | None = None) -> int:
        graphs = [graph] if graph is not None else self._dataset()
        rows = self._select_raw("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", graphs)
        return int(rows[0]["n"].value) if rows else 0  # type: ignore[union-attr]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if self._pinned is not None:  # nested: the outer snapshot decides
            yield
            return
        pinned = self._current_graphs()
        if self.union:
            self._require_exclusive(pinned)
        self._pinned = pinned
        try:
            yield
            now = set(self._current_graphs())
            everything = set(self.named_graphs()) if self.union else set()
        finally:
            self._pinned = None
        lost = [g for g in pinned if g not in now]
        if lost:
            raise StoreChanged(
                f"{self.location}: another client replaced {len(lost)} graph(s) while this command "
                "read the store, so its answers could mix two states; run it again"
            )
        if self.union and everything != {*pinned, CATALOG}:
            raise StoreChanged(
                f"{self.location}: another client started an import while this command read the "
                "union default graph (#dataset=union), so its answers could include a partial "
                "import; run it again, or drop #dataset=union"
            )

    # -- opening -------------------------------------------------------------------------

    @property
    def union(self) -> bool:
        return self.endpoint.dataset == "union"

    def verify(self) -> None:
        """Fail unless queries will see exactly the current graphs: the server honours the
        dataset named in the request, or (``#dataset=union``) holds nothing but them."""
        if self.union:
            self._require_exclusive(self._current_graphs())
            return
        if self._select_raw("SELECT * WHERE { ?s ?p ?o } LIMIT 1", [PROBE_GRAPH]):
            raise StoreError(
                f"{self.location}: the server ignores the default-graph-uri request parameter, so "
                "queries would also see imports still loading; provgraph cannot run on it safely"
            )

    def _require_exclusive(self, current: list[str]) -> None:
        extra = set(self.named_graphs()) - {*current, CATALOG}
        if extra:
            raise StoreError(
                f"{self.location}: the server holds {len(extra)} graph(s) that are not current "
                "imports (an import in progress, one killed less than staging-ttl ago, or other "
                "data); #dataset=union would read them as data: wait, or drop #dataset=union"
            )

    # -- requests ------------------------------------------------------------------------

    def _current_graphs(self) -> list[str]:
        rows = self._select_raw(
            f"SELECT DISTINCT ?g WHERE {{ GRAPH <{CATALOG}> {{ ?slot <{PG_NS}graph> ?g }} }}", [CATALOG]
        )
        return sorted(r["g"].value for r in rows if isinstance(r["g"], ox.NamedNode))

    def _dataset(self) -> list[str]:
        """The catalog and the graphs it points to: what every query sees."""
        graphs = self._pinned if self._pinned is not None else self._current_graphs()
        return [CATALOG, *graphs]

    def _query(self, query: str, bindings: Mapping[str, Term] | None) -> object:
        text = inject_values(query, bindings)
        if self.union:
            return self._send_query(text, None)
        return self._send_query(text, self._dataset())

    def _select_raw(self, query: str, graphs: list[str] | None) -> list[dict[str, Term | None]]:
        result = self._send_query(query, graphs)
        if not isinstance(result, ox.QuerySolutions):
            raise StoreError(f"{self.location}: expected SELECT results from the server")
        names = [v.value for v in result.variables]
        return [{n: sol[n] for n in names} for sol in result]

    def _construct_raw(self, query: str, graphs: list[str]) -> list[ox.Triple]:
        result = self._send_query(query, graphs)
        if not isinstance(result, list):
            raise StoreError(f"{self.location}: expected triples from the server")
        return result

    def _send_query(self, query: str, graphs: list[str] | None) -> object:
        """POST a query (SPARQL 1.1 Protocol, URL-encoded body); ``graphs`` is its dataset:
        their merge is the default graph and they are the named graphs. ``None`` leaves the
        dataset to the server (all graphs; their union with ``dataset=union``)."""
        params: list[tuple[str, str]] = [("query", query)]
        if graphs is not None:
            params += [("default-graph-uri", g) for g in graphs]
            params += [("named-graph-uri", g) for g in graphs]
        elif self.endpoint.dataset == "union" and self.endpoint.union_param:
            params.append((self.endpoint.union_param, ""))
        status, media, body = self._request(
            "POST",
            self.endpoint.query,
            urlencode(params).encode("ascii"),
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": ACCEPT},
        )
        if status == 400:
            raise SyntaxError(_first_line(body))
        if status >= 300:
            raise StoreError(f"{self.location}: query failed (HTTP {status}): {_first_line(body)}")
        try:
            results_format = ox.QueryResultsFormat.from_media_type(media)
            if results_format is not None:
                return ox.parse_query_results(body, results_format)
            rdf_format = ox.RdfFormat.from_media_type(media)
            if rdf_format is not None:
                return list(ox.parse(body, rdf_format))
        except SyntaxError as err:  # a body cut short by a dying server
            raise StoreUnavailable(f"{self.location}: the server's answer is broken ({err})") from err
        raise StoreError(f"{self.location}: unexpected answer of type {media or 'unknown'!r}")

    def _request(
        self, method: str, url: str, body: bytes | IO[bytes], headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        """One HTTP exchange on a fresh connection: (status, media type, body).

        Connecting waits ``connect-timeout`` seconds; then every read waits at most
        ``timeout`` seconds for the next bytes of the answer.
        """
        ep = self.endpoint
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        kwargs: dict[str, object] = {"timeout": ep.connect_timeout}
        if parts.scheme == "https":
            kwargs["context"] = ssl.create_default_context()
        conn = conn_cls(parts.hostname or "", parts.port, **kwargs)  # type: ignore[arg-type]
        phase = "connect"
        t0 = time.perf_counter()
        try:
            conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(ep.read_timeout)
            phase = "send"
            conn.request(method, path, body=body, headers={**ep.headers, **headers})
            phase = "answer"
            response = conn.getresponse()
            data = response.read()
            media = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            status = response.status
        except TimeoutError as err:
            limit = ep.connect_timeout if phase == "connect" else ep.read_timeout
            what = "connect-timeout" if phase == "connect" else "timeout"
            raise StoreUnavailable(
                f"{ep.location}: the SPARQL server did not {_VERB[phase]} within {limit:g} s "
                f"(raise it with #{what}=SECONDS)"
            ) from err
        except ssl.SSLError as err:
            raise StoreUnavailable(f"{ep.location}: TLS failed: {err.reason or err}") from err
        except (OSError, http.client.HTTPException) as err:
            reason = _reason(err)
            if phase == "connect":
                raise StoreUnavailable(f"{ep.location}: cannot reach the SPARQL server: {reason}") from err
            raise StoreUnavailable(
                f"{ep.location}: the SPARQL server dropped the connection ({reason})"
            ) from err
        finally:
            conn.close()
        log.debug("%s %s: HTTP %s in %.3f s", method, url.split("?")[0], status, time.perf_counter() - t0)
        if status in _UNAVAILABLE:
            raise StoreUnavailable(
                f"{ep.location}: {_UNAVAILABLE[status]} (HTTP {status} from {url.split('?')[0]}): "
                f"{_first_line(data) or 'check the URL, preset and credentials'}"
            )
        if status in _GATEWAY:
            raise StoreUnavailable(f"{ep.location}: the server is unavailable (HTTP {status})")
        if 300 <= status < 400:
            raise StoreUnavailable(
                f"{ep.location}: {url.split('?')[0]} redirects (HTTP {status}) to "
                f"{response.getheader('Location')}; give that URL instead"
            )
        return status, media, data


_VERB = {"connect": "accept the connection", "send": "take the request", "answer": "answer"}


def _reason(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (is it running, and is this the right port?)"
    if isinstance(err, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return "connection closed mid-request: did the server stop?"
    if isinstance(err, http.client.IncompleteRead):
        return "the answer was cut off"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err.strerror})"
    return getattr(err, "strerror", None) or str(err) or type(err).__name__


def _first_line(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    line = text.splitlines()[0] if text else ""
    return line[:300]


def _iri(value: str) -> str:
    if any(ch in value for ch in '<>"{}|\\^` \n'):
        raise ValueError(f"not a plain IRI: {value!r}")
    return value
