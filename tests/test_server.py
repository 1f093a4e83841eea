"""The SPARQL server backend against a real ``oxigraph serve`` on loopback: every rule's
fixture pair, ingest no-op and replace, the CLI commands, staging graphs kept out of readers,
and a gate that fails closed when the server is down, dies or hangs mid-check."""

from __future__ import annotations

import doctest
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import REPO, copy_bundle, rule_bundle, write_bundle
from fixtures import rulepairs
from oxigraph_server import OxigraphServer, free_port

from provgraph.bundle.layout import Bundle
from provgraph.errors import StoreChanged, StoreError, StoreUnavailable, UsageError
from provgraph.ingest.run import ingest_paths
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules
from provgraph.store import catalog, open_store
from provgraph.store import endpoint as endpoint_module
from provgraph.store.endpoint import is_server, parse_endpoint
from provgraph.store.http import SparqlStore

RULES = load_rules()
EXAMPLE = REPO / "examples" / "output_gate"
PLANNED = "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT (COUNT(*) AS ?n) WHERE { ?c a pg:PlannedCall }"


@pytest.fixture
def url(oxigraph_server: OxigraphServer) -> str:
    """The session's server (conftest), emptied."""
    oxigraph_server.clear()
    return oxigraph_server.url


@pytest.fixture
def own_server(tmp_path: Path) -> OxigraphServer:
    """A server this test may kill or stop."""
    srv = OxigraphServer(tmp_path / "oxigraph").start()
    yield srv
    srv.kill()


def ingest(root: Path, store):
    bundle = Bundle.open(root)
    return ingest_paths(store, bundle, [bundle.root])


def checked(root: Path, location: str):
    store = open_store(location)
    results, problems = ingest(root, store)
    assert not problems and all(r.outcome == "imported" and not r.problems for r in results), [
        r.error for r in results
    ]
    return run_gate(store, RULES, record=False)


# -- rules: every fixture pair, as on the embedded store -----------------------------------------


def _pairs() -> list:
    """Every rule's pair; all but the first rule of each clause only in the slow run."""
    first: dict[str, str] = {}
    for r in RULES:
        first.setdefault(r.clause, r.id)
    return [
        pytest.param(r.id, marks=() if first[r.clause] == r.id else pytest.mark.slow, id=r.id) for r in RULES
    ]


@pytest.mark.parametrize("rule_id", _pairs())
def test_rule_fixture_pair_on_server(
    url: str, oxigraph_server: OxigraphServer, rule_id: str, tmp_path: Path
) -> None:
    expected = rulepairs.expected(rule_id)["violations"]
    report = checked(rule_bundle(rule_id, "flawed", tmp_path / "flawed"), url)
    (result,) = [r for r in report.results if r.rule.id == rule_id]
    assert result.outcome == "violated", result.error
    found = [
        {"focus": report.short(v.focus), "severity": result.rule.severity, "message": v.message}
        for v in result.violations
    ]
    assert rulepairs.unpinned(expected, found) == []
    if result.rule.blocks_gate:
        assert not report.passed

    oxigraph_server.clear()
    report = checked(rule_bundle(rule_id, "clean", tmp_path / "clean"), url)
    fired = {
        r.rule.id: [v.message for v in r.violations] or r.error
        for r in report.results
        if r.outcome not in ("pass", "skipped", "not-applicable")
    }
    assert fired == {}
    assert report.passed


# -- reading some graphs, or the union (what every engine does alike: test_server_engines.py) ---


def test_whole_graph_view_on_a_server_equals_the_embedded_one(url: str, tmp_path: Path) -> None:
    """The picture reads some graphs only (``Store.within``: default-graph-uri on a server);
    after a check, with its derived views in the store, both backends draw the same boxes."""
    from provgraph.views.whole import whole_graph

    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "b")
    views = []
    for store in (open_store(url), open_store(None), open_store(url + "#dataset=union")):
        if not views or store.location == "memory":
            ingest(root, store)
            run_gate(store, RULES)
        view = whole_graph(store)
        title = {k: b.title for k, b in view.boxes.items()}
        boxes = [(b.title, b.count, b.facets, sorted(b.violations.items())) for b in view.boxes.values()]
        arrows = [(title[a.tail], a.label, title[a.head], a.count) for a in view.arrows]
        views.append((sorted(boxes), sorted(arrows)))
    assert views[0] == views[1] == views[2]
    assert "5 call records" in [t for t, *_ in views[0][0]]


def test_union_mode_reads_the_same_and_refuses_foreign_graphs(url: str, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "b")
    ingest(root, open_store(url))
    union = open_store(url + "#dataset=union")
    report = run_gate(union, RULES, record=False)
    assert sorted(report.short(v.focus) for r in report.results for v in r.violations) == [
        "call/C003",
        "call/C004",
        "record/calls.jsonl/C002/1",
        "record/calls.jsonl/C099/1",
    ]
    nt = tmp_path / "staged.nt"
    nt.write_text("<urn:x> <urn:p> <urn:o> .\n")
    staging = catalog.new_graph_iri()
    # another client's import starts while the check reads the union: the check cannot stand
    with pytest.raises(StoreChanged, match="another client started an import"), union.snapshot():
        union.select(PLANNED)
        open_store(url).bulk_load(nt, staging)
    # and a union-mode client will not open while that graph exists
    with pytest.raises(StoreError, match=r"holds 1 graph\(s\) that are not current imports"):
        open_store(url + "#dataset=union")
    assert catalog.recover(SparqlStore(parse_endpoint(url)), now=_later(2 * 86400)) == [staging]
    assert open_store(url + "#dataset=union").ask(PLANNED.replace("SELECT (COUNT(*) AS ?n)", "ASK"))


def _later(seconds: float):
    import datetime as dt

    return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)


# -- failure: fail closed with one line ----------------------------------------------------------


def test_closed_port_is_one_clear_line(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "b")
    url = f"http://127.0.0.1:{free_port()}"
    for command in ("check", "ingest", "info", "query"):
        args = [command, "ASK {}"] if command == "query" else [command]
        r = cli("-C", str(root), "--store", url + "#connect-timeout=2", *args)
        assert r.code == 2, (command, r.out, r.err)
        assert r.err.splitlines() == [
            f"provgraph: error: {url} (oxigraph): cannot reach the SPARQL server: connection refused "
            "(is it running, and is this the right port?)"
        ]
        assert "PASS" not in r.out


def test_server_killed_mid_check_fails_the_gate_closed(own_server: OxigraphServer, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "b")
    store = open_store(own_server.url)
    ingest(root, store)
    ran = []

    def kill_after_first_rule(result) -> None:
        if result.outcome != "skipped":
            ran.append(result.rule.id)
            own_server.kill()

    with pytest.raises(StoreUnavailable, match="SPARQL server"):
        run_gate(store, RULES, record=False, on_result=kill_after_first_rule)
    # no report was produced: nothing can read as a pass. (Rules run side by side, so the
    # ones that had finished before the kill are still shown; the rest never are.)
    assert 1 <= len(ran) < len(RULES)


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from provgraph.rules import runner
    pid, sig, args = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    real, calls = runner.run_rule, []
    def run_rule(store, rule):
        calls.append(rule.id)
        if len(calls) == 4:   # the server dies (or hangs) in the middle of the check
            os.kill(pid, sig)
        return real(store, rule)
    runner.run_rule = run_rule
    from provgraph.cli import main
    main(args)
""")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "option", "message"),
    [
        (signal.SIGKILL, "", "(cannot reach the SPARQL server|the SPARQL server dropped the connection)"),
        (
            signal.SIGSTOP,
            "#timeout=1",
            re.escape("the SPARQL server did not answer within 1 s (raise it with #timeout=SECONDS)"),
        ),
    ],
    ids=["killed", "hung"],
)
def test_check_process_fails_closed_when_the_server_dies_or_hangs(
    own_server: OxigraphServer, tmp_path: Path, sig: int, option: str, message: str
) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "b")
    ingest(root, open_store(own_server.url))
    assert own_server.proc is not None
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILL_SCRIPT,
            str(own_server.proc.pid),
            str(int(sig)),
            "--store",
            own_server.url + option,
            "-C",
            str(root),
            "check",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.splitlines()
    assert re.match(re.escape(f"provgraph: error: {own_server.url} (oxigraph): ") + message, line), line
    assert "Traceback" not in proc.stderr
    assert "PASS" not in proc.stdout


@pytest.mark.slow
def test_server_killed_mid_load_keeps_the_previous_state(
    own_server: OxigraphServer, tmp_path: Path, monkeypatch
) -> None:
    rows = 20_000
    root = write_bundle(tmp_path / "b", {"plan.csv": "call_id,case,condition\nC1,s1,A\n"})
    store = open_store(own_server.url)
    ingest(root, store)
    before = {s.key: s.graph for s in catalog.slots(store)}
    (root / "plan.csv").write_text(
        "call_id,case,condition\n" + "".join(f"K{i},case{i // 10},cond{i % 10}\n" for i in range(rows))
    )
    real_load = store.bulk_load

    def load_then_die(ntriples: Path, graph: str) -> None:
        threading.Timer(0.3, own_server.kill).start()  # the server dies while the graph streams in
        real_load(ntriples, graph)

    monkeypatch.setattr(store, "bulk_load", load_then_die)
    with pytest.raises(StoreUnavailable, match="SPARQL server"):
        ingest(root, store)  # stops at the plan import: no other source waits for a dead server
    own_server.start()  # same data folder, new process
    store = open_store(own_server.url)
    assert {s.key: s.graph for s in catalog.slots(store)} == before
    assert int(store.select(PLANNED)[0]["n"].value) == 1  # the half-loaded graph is invisible


# -- naming the endpoint --------------------------------------------------------------------------


def test_endpoint_doctests() -> None:
    assert doctest.testmod(endpoint_module).failed == 0


@pytest.mark.parametrize(
    ("text", "query", "update", "store"),
    [
        ("http://h:7878", "http://h:7878/query", "http://h:7878/update", "http://h:7878/store"),
        ("oxigraph+https://h/ox/", "https://h/ox/query", "https://h/ox/update", "https://h/ox/store"),
        (
            "fuseki+http://h:3030/ds",
            "http://h:3030/ds/sparql",
            "http://h:3030/ds/update",
            "http://h:3030/ds/data",
        ),
        (
            "graphdb+http://h:7200/repositories/cxr",
            "http://h:7200/repositories/cxr",
            "http://h:7200/repositories/cxr/statements",
            "http://h:7200/repositories/cxr/rdf-graphs/service",
        ),
        (
            "virtuoso+http://h:8890",
            "http://h:8890/sparql",
            "http://h:8890/sparql",
            "http://h:8890/sparql-graph-crud",
        ),
        (
            "neptune+https://db:8182",
            "https://db:8182/sparql",
            "https://db:8182/sparql",
            "https://db:8182/sparql/gsp/",
        ),
        (
            "http://h/base#query=q&update=http://other/u&store=s",
            "http://h/base/q",
            "http://other/u",
            "http://h/base/s",
        ),
    ],
)
def test_presets_and_explicit_endpoints(text: str, query: str, update: str, store: str) -> None:
    e = parse_endpoint(text)
    assert (e.query, e.update, e.store) == (query, update, store)
    assert is_server(text)


def test_endpoint_options_and_errors() -> None:
    e = parse_endpoint("http://alice:s3cret@h:7878#timeout=5&connect-timeout=1.5&staging-ttl=60")
    assert (e.read_timeout, e.connect_timeout, e.staging_ttl) == (5.0, 1.5, 60.0)
    assert e.headers["Authorization"].startswith("Basic ")
    assert "s3cret" not in e.location and "alice" not in e.location
    assert not is_server("/data/store") and not is_server(":memory:")
    with pytest.raises(UsageError, match="unknown server preset 'blazegraph'; presets: oxigraph, fuseki"):
        parse_endpoint("blazegraph+http://h/")
    with pytest.raises(UsageError, match=r"option timeout='soon' must be a positive number of seconds"):
        parse_endpoint("http://h#timeout=soon")
    with pytest.raises(UsageError, match="unknown store option 'timout'"):
        parse_endpoint("http://h#timout=3")
    with pytest.raises(UsageError, match="dataset=union needs a server with a union-default-graph"):
        parse_endpoint("fuseki+http://h/ds#dataset=union")
    with pytest.raises(UsageError, match=r"\*\*\*"):
        parse_endpoint("nope+http://u:pw@h/")


def test_bad_query_on_server_is_a_syntax_error(url: str) -> None:
    store = open_store(url)
    with pytest.raises(SyntaxError):
        store.select("SELECT * WHERE { ?s ?p }")
    assert isinstance(store, SparqlStore)
