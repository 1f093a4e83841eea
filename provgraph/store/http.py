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
:class:`StoreUnavailable` with one line naming the server and what happened. So does every
answer that cannot be shown whole: a body shorter or longer than its Content-Length, a chunked
body without its final chunk, a results document that does not parse to its end, an N-Triples
(Turtle, TSV, CSV) answer with no framing at all (only the connection's close marks its end,
so one cut at a line end would pass for complete), an answer of another type, a 5xx status,
and an answer the server says it cut to a row limit (Virtuoso's ``X-SPARQL-MaxRows``).
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import socket
import ssl
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple
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
    concurrent_reads = True  # one fresh connection per request

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.location = endpoint.location
        self.engine = endpoint.preset
        self.staging_ttl = endpoint.staging_ttl
        self._pinned: list[str] | None = None

    # -- the Store interface -------------------------------------------------------------

    def update(self, update: str) -> None:
        status, _, body, *_ = self._request(
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
            status, _, answer, *_ = self._request(
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
        self.update(self.endpoint.drop_update.format(graph=_iri(graph)))

    def named_graphs(self) -> list[str]:
        """Every named graph on the server, including other clients' staging graphs."""
        rows = self._select_raw(self.endpoint.graphs_query, None)
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

    def _query_within(self, query: str, bindings: Mapping[str, Term] | None, graphs: list[str]) -> object:
        current = set(self._dataset())  # never a graph another client is still loading
        return self._send_query(inject_values(query, bindings), [g for g in graphs if g in current])

    def _select_raw(self, query: str, graphs: list[str] | None) -> list[dict[str, Term | None]]:
        result = self._send_query(query, graphs)
        if not isinstance(result, ox.QuerySolutions):
            raise StoreUnavailable(f"{self.location}: expected SELECT results from the server")
        names = [v.value for v in result.variables]
        return [{n: sol[n] for n in names} for sol in result]

    def _construct_raw(self, query: str, graphs: list[str]) -> list[ox.Triple]:
        result = self._send_query(query, graphs)
        if not isinstance(result, list):
            raise StoreUnavailable(f"{self.location}: expected triples from the server")
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
        form = query_form(query)
        answer = self._request(
            "POST",
            self.endpoint.query,
            urlencode(params).encode("ascii"),
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": self._accept(form)},
        )
        status, body = answer.status, answer.body
        if status == 400:
            raise SyntaxError(_first_line(body))
        if status >= 500:  # the server's fault, not the query's: no later answer is trusted
            raise StoreUnavailable(f"{self.location}: the server failed (HTTP {status}): {_first_line(body)}")
        if status >= 300:
            raise StoreError(f"{self.location}: query failed (HTTP {status}): {_first_line(body)}")
        if answer.cut_at is not None:  # the first rows of a longer answer, sent as if all of it
            raise StoreUnavailable(
                f"{self.location}: the server cut its answer to {answer.cut_at} rows, so it is not "
                "the whole answer (Virtuoso: set ResultSetMaxRows = 0 in [SPARQL] of virtuoso.ini)"
            )
        result = _parse_answer(self.location, answer)
        if form == "ASK" and isinstance(result, ox.QuerySolutions):
            return _ask_as_solutions(self.location, result)
        return result

    def _accept(self, form: str | None) -> str:
        ep = self.endpoint
        if form in ("CONSTRUCT", "DESCRIBE") and ep.accept_triples:
            return ep.accept_triples
        if form in ("SELECT", "ASK") and ep.accept_results:
            return ep.accept_results
        return ACCEPT

    def _request(self, method: str, url: str, body: bytes | IO[bytes], headers: dict[str, str]) -> Answer:
        """One HTTP exchange on a fresh connection; the answer's body is read in full, and
        checked against its framing (:func:`_read_body`).

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
            data, framed = _read_body(response, conn.sock)
            media = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            status = response.status
        except TimeoutError as err:
            limit = ep.connect_timeout if phase == "connect" else ep.read_timeout
            what = "connect-timeout" if phase == "connect" else "timeout"
            raise StoreUnavailable(
                f"{ep.location}: the SPARQL server did not {_VERB[phase]} within {limit:g} s "
                f"(raise it with #{what}=SECONDS)"
            ) from err
        except _Overlong as err:
            raise StoreUnavailable(f"{ep.location}: the server's answer is broken: {err}") from err
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
        return Answer(status, media, data, framed, response.getheader("X-SPARQL-MaxRows"))


_VERB = {"connect": "accept the connection", "send": "take the request", "answer": "answer"}


#: The prologue (comments, BASE, PREFIX) before a query's form keyword.
_PROLOGUE = re.compile(r"(?:\s+|#[^\n]*|BASE\s*<[^>]*>|PREFIX\s+[^\s:]*:\s*<[^>]*>)*", re.I)
_FORM = re.compile(r"(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.I)


def query_form(query: str) -> str | None:
    """``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``: the form of ``query``, or None.

    >>> query_form("PREFIX pg: <https://w3id.org/provgraph/ns#> # why\\nask { ?s ?p ?o }")
    'ASK'
    """
    match = _FORM.match(query, _PROLOGUE.match(query).end())
    return match[1].upper() if match else None


def _ask_as_solutions(location: str, result: ox.QuerySolutions) -> ox.QueryBoolean:
    """Virtuoso 7.2 answers an ASK with solutions of one variable, ``__ASK_RETVAL``: one row
    (``1``) for true, none for false; SPARQL 1.1 results say ``boolean``. Read that, or refuse
    an answer that is neither."""
    names = [v.value for v in result.variables]
    rows = [sol[0] for sol in result]
    if names != ["__ASK_RETVAL"] or len(rows) > 1 or any(r is None or r.value != "1" for r in rows):
        raise StoreUnavailable(f"{location}: the server answered an ASK query with solutions")
    return ox.parse_query_results(json.dumps({"head": {}, "boolean": bool(rows)}), ox.QueryResultsFormat.JSON)


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


class Answer(NamedTuple):
    """A server's answer, read in full; ``framed``: its end was announced (Content-Length or
    the final chunk of a chunked body), so a cut-off body could not pass for a whole one."""

    status: int
    media: str
    body: bytes
    framed: bool
    #: Rows the server cut the answer to (Virtuoso's ``X-SPARQL-MaxRows``), else None.
    cut_at: str | None = None


def _read_body(response: http.client.HTTPResponse, sock: socket.socket | None) -> tuple[bytes, bool]:
    """The whole body and whether it was framed. A body shorter than its Content-Length, or
    chunked without the final chunk, raises :class:`http.client.IncompleteRead`; bytes after
    the announced end (a Content-Length too small, which http.client silently drops) raise
    :class:`http.client.HTTPException`."""
    if response.chunked:
        return response.read(), True  # IncompleteRead unless the terminating chunk arrives
    length = response.length
    if length is None:  # delimited by the connection's close: no proof of completeness
        return response.read(), False
    fp = response.fp
    assert fp is not None
    data = fp.read(length)  # read here, not by response.read(), which closes fp at the end
    if len(data) < length:
        raise http.client.IncompleteRead(data, length - len(data))
    if sock is not None and response.status not in (204, 304):
        sock.settimeout(0.0)  # only what already arrived: a keep-alive server sends nothing more
        try:
            extra = fp.peek(1)
        except OSError:
            extra = b""
        if extra:
            raise _Overlong(f"bytes after the end its Content-Length announced ({length} bytes)")
    response.close()
    return data, True


class _Overlong(http.client.HTTPException):
    """The server sent more than its Content-Length: the announced length is wrong."""


def _parse_answer(location: str, answer: Answer) -> object:
    """pyoxigraph's result for a query's answer, parsed to its end before it is returned.

    A JSON results document proves its own end (the closing brace), so it may come unframed
    (connection close); N-Triples, Turtle, TSV and CSV can be cut at a line end and still
    parse, so they must be framed. pyoxigraph parses solutions lazily and accepts a boolean
    document without its closing brace: both are checked here, whatever the framing.
    """
    media, body = answer.media, answer.body
    try:
        results_format = ox.QueryResultsFormat.from_media_type(media)
        rdf_format = ox.RdfFormat.from_media_type(media) if results_format is None else None
        if results_format is None and rdf_format is None:
            raise StoreUnavailable(f"{location}: unexpected answer of type {media or 'unknown'!r}")
        if not answer.framed and results_format != ox.QueryResultsFormat.JSON:
            raise StoreUnavailable(
                f"{location}: the server's {media} answer came with neither Content-Length nor "
                "chunked transfer encoding, so a cut-off answer could not be told from a whole one"
            )
        if rdf_format is not None:
            return list(ox.parse(body, rdf_format))
        result = ox.parse_query_results(body, results_format)
        if isinstance(result, ox.QuerySolutions):
            for _ in result:  # every solution parses, up to the document's end
                pass
            return ox.parse_query_results(body, results_format)
        if results_format == ox.QueryResultsFormat.JSON and "boolean" not in json.loads(body):
            raise SyntaxError("no 'boolean' key")
        return result
    except (SyntaxError, ValueError, UnicodeDecodeError) as err:  # JSONDecodeError is a ValueError
        raise StoreUnavailable(f"{location}: the server's answer is broken ({_one_line(err)})") from err


def _one_line(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return " ".join(text.split())[:300]
