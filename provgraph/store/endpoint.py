"""Naming a SPARQL 1.1 server: one ``--store`` string, a preset per server, explicit overrides.

``[PRESET+]http(s)://[user:password@]host[:port][/path][#option=value&...]``

The URL is the server's base (Oxigraph: the server root; Fuseki: the dataset; GraphDB: the
repository). The preset says where the query, update and Graph Store endpoints live below it;
options after ``#`` (a fragment is never sent to the server) override any of them and set the
timeouts. Without a preset the URL is an Oxigraph server.

>>> e = parse_endpoint("fuseki+http://db:3030/cxr#timeout=60")
>>> e.query, e.update, e.store, e.read_timeout
('http://db:3030/cxr/sparql', 'http://db:3030/cxr/update', 'http://db:3030/cxr/data', 60.0)
>>> parse_endpoint("http://127.0.0.1:7878").location
'http://127.0.0.1:7878 (oxigraph)'
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit, urlunsplit

from provgraph.errors import UsageError


@dataclass(frozen=True)
class Preset:
    """Where one kind of server puts its endpoints, relative to the base URL."""

    query: str
    update: str
    store: str
    graph_param: str = "graph"
    #: Extra query parameters for large Graph Store loads (a staging graph needs no transaction).
    load_params: tuple[tuple[str, str], ...] = ()
    #: The request parameter that makes the default graph the union of all graphs, if any.
    union_param: str | None = None
    #: Accept headers for SELECT/ASK answers and for CONSTRUCT/DESCRIBE answers, for a server
    #: that must be asked for one type per query form (``None``: one header for every form).
    accept_results: str | None = None
    accept_triples: str | None = None
    #: Lists the named graphs. ``GRAPH ?g {}`` matches each named graph once (SPARQL 1.1
    #: section 18.5) and needs no scan; a server that gets it wrong must scan the quads.
    graphs_query: str = "SELECT DISTINCT ?g WHERE { GRAPH ?g { } }"
    #: Removes a graph no reader is shown (a replaced import, a failed load's staging graph),
    #: so it need not be one transaction; ``{graph}`` is its IRI.
    drop_update: str = "DROP SILENT GRAPH <{graph}>"


PRESETS: dict[str, Preset] = {
    # oxigraph serve: /query, /update, /store; bulk loads skip the transaction when asked.
    "oxigraph": Preset(
        "query", "update", "store", load_params=(("no_transaction", ""),), union_param="union-default-graph"
    ),
    # Apache Jena Fuseki, base = the dataset URL (http://host:3030/ds).
    "fuseki": Preset("sparql", "update", "data"),
    # Ontotext GraphDB (and RDF4J server), base = the repository URL.
    "graphdb": Preset("", "statements", "rdf-graphs/service"),
    # OpenLink Virtuoso, base = the server root; updates need a user with SPARQL_UPDATE. Its
    # JSON results write booleans as "1" and answer CONSTRUCT in a JSON of its own whenever
    # JSON is acceptable: ask for XML results and N-Triples, one per query form.
    "virtuoso": Preset(
        "sparql",
        "sparql",
        "sparql-graph-crud",
        accept_results="application/sparql-results+xml",
        accept_triples="application/n-triples",
        # Virtuoso 7.2 answers GRAPH ?g {} with one solution that leaves ?g unbound; and it
        # takes 46 s for DISTINCT ?g at 10^4 calls against 0.03 s for GROUP BY ?g, paid by every
        # command that opens the store (bench/README.md, fifteenth run)
        graphs_query="SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
        # row-by-row autocommit, as Virtuoso's own Conductor drops a graph: one transaction
        # took twice as long (1.6 M quads: 9.4-10.7 s against 4.8-5.1 s) and held a reader up
        # to 1.2 s against 0.13 s (bench/README.md, seventeenth run)
        drop_update="DEFINE sql:log-enable 3 DROP SILENT GRAPH <{graph}>",
    ),
    # Amazon Neptune, base = https://cluster-endpoint:8182 (IAM-signed requests are not supported).
    "neptune": Preset("sparql", "sparql", "sparql/gsp/"),
}
DEFAULT_PRESET = "oxigraph"
OPTIONS = ("query", "update", "store", "timeout", "connect-timeout", "staging-ttl", "dataset")
DATASET_MODES = ("graphs", "union")

_SCHEME = re.compile(r"^(?:(?P<preset>[a-z][a-z0-9-]*)\+)?(?P<scheme>https?)://", re.I)


def is_server(location: str | None) -> bool:
    """Whether a ``--store`` value names a SPARQL server rather than a folder."""
    return bool(location and _SCHEME.match(str(location)))


@dataclass(frozen=True)
class Endpoint:
    """Resolved endpoint URLs and client settings of one SPARQL server."""

    base: str
    preset: str
    query: str
    update: str
    store: str
    graph_param: str = "graph"
    load_params: tuple[tuple[str, str], ...] = ()
    union_param: str | None = None
    accept_results: str | None = None
    accept_triples: str | None = None
    graphs_query: str = "SELECT DISTINCT ?g WHERE { GRAPH ?g { } }"
    drop_update: str = "DROP SILENT GRAPH <{graph}>"
    #: ``graphs``: every request names the current graphs (correct on a shared server);
    #: ``union``: the server's union default graph (faster; only with a single writer).
    dataset: str = "graphs"
    connect_timeout: float = 10.0
    read_timeout: float = 300.0
    #: Staging graphs older than this (seconds) and never switched in are removed on open.
    staging_ttl: float = 86400.0
    headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def location(self) -> str:
        return f"{self.base} ({self.preset})"


def parse_endpoint(text: str) -> Endpoint:
    """Parse a ``--store`` server value; raises :class:`UsageError` naming what is wrong."""
    match = _SCHEME.match(text)
    if not match:
        raise UsageError(f"{text}: not a SPARQL server URL (expected http:// or https://)")
    preset_name = (match["preset"] or DEFAULT_PRESET).lower()
    if preset_name not in PRESETS:
        raise UsageError(
            f"{_redact(text)}: unknown server preset {preset_name!r}; presets: {', '.join(PRESETS)}"
        )
    preset = PRESETS[preset_name]
    parts = urlsplit(text[match.start("scheme") :])
    if not parts.hostname:
        raise UsageError(f"{_redact(text)}: the URL names no host")
    headers = {}
    if parts.username is not None:
        user, password = unquote(parts.username), unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    base = urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), parts.query, ""))
    options = dict(parse_qsl(parts.fragment, keep_blank_values=True))
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"{base}: unknown store option {unknown[0]!r}; options: {', '.join(OPTIONS)}")

    def url(name: str, default: str) -> str:
        rel = options.get(name, default)
        return urljoin(base + "/", rel) if rel else base

    def seconds(name: str, default: float) -> float:
        if name not in options:
            return default
        try:
            value = float(options[name])
        except ValueError:
            value = -1.0
        if value <= 0:
            raise UsageError(f"{base}: option {name}={options[name]!r} must be a positive number of seconds")
        return value

    dataset = options.get("dataset", "graphs")
    if dataset not in DATASET_MODES:
        raise UsageError(f"{base}: option dataset={dataset!r} must be one of {', '.join(DATASET_MODES)}")
    if dataset == "union" and preset.union_param is None:
        raise UsageError(
            f"{base}: dataset=union needs a server with a union-default-graph request parameter "
            "(oxigraph); configure the union on the server instead and keep dataset=graphs"
        )
    return Endpoint(
        base=base,
        preset=preset_name,
        query=url("query", preset.query),
        update=url("update", preset.update),
        store=url("store", preset.store),
        graph_param=preset.graph_param,
        load_params=preset.load_params,
        union_param=preset.union_param,
        accept_results=preset.accept_results,
        accept_triples=preset.accept_triples,
        graphs_query=preset.graphs_query,
        drop_update=preset.drop_update,
        dataset=dataset,
        connect_timeout=seconds("connect-timeout", 10.0),
        read_timeout=seconds("timeout", 300.0),
        staging_ttl=seconds("staging-ttl", 86400.0),
        headers=headers,
    )


def _redact(text: str) -> str:
    """``text`` without a password, for messages."""
    return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1:***@", text)
