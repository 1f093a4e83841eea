"""What every SPARQL server engine must do the same, run on each real one: ``oxigraph serve``
and Virtuoso Open Source 7 (``tests/oxigraph_server.py``, ``tests/virtuoso_server.py``).

A re-ingest is a no-op and changed bytes replace a graph; a staging graph stays invisible until
its switch and recovery removes only stale graphs provgraph minted; a check that reads two
states fails; export, counts and typed literals match the embedded store; the CLI commands and
the example's gate work. Engine-specific behaviour stays in ``test_server.py`` (failures, union
mode, endpoint options) and ``test_virtuoso.py`` (rule forms, row limits).
"""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from conftest import REPO, copy_bundle, ingest_outcomes, write_bundle

from provgraph.errors import StoreChanged
from provgraph.export import export
from provgraph.store import catalog, open_store
from provgraph.store.endpoint import parse_endpoint
from provgraph.store.http import SparqlStore

EXAMPLE = REPO / "examples" / "output_gate"
PLANNED = "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT (COUNT(*) AS ?n) WHERE { ?c a pg:PlannedCall }"


@pytest.fixture(params=["oxigraph", "virtuoso"])
def engine(request):
    """The session's server of that engine, with provgraph's graphs dropped."""
    srv = request.getfixturevalue(f"{request.param}_server")
    srv.clear()
    return srv


def planned(store) -> int:
    return int(store.select(PLANNED)[0]["n"].value)


def _later(seconds: int) -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)


def test_reingest_is_a_noop_and_changed_bytes_replace_the_graph(engine, tmp_path: Path) -> None:
    """The switch is one DELETE/INSERT; on a first import nothing is there to delete (the case
    Virtuoso used to turn into a switch that inserts nothing)."""
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "b")
    store = open_store(engine.url)

    def every_graph_is_the_catalogs() -> None:
        assert set(engine.graphs()) == {s.graph for s in catalog.slots(store)} | {catalog.CATALOG}

    assert set(ingest_outcomes(root, store).values()) == {"imported"}
    assert len({s.graph for s in catalog.slots(store)}) == len(catalog.slots(store)) >= 4
    every_graph_is_the_catalogs()
    graphs = set(engine.graphs())
    assert set(ingest_outcomes(root, store).values()) == {"unchanged"}
    assert set(engine.graphs()) == graphs

    before = planned(store)
    with (root / "plan.csv").open("a") as fh:
        fh.write("C100,study-9,gpt-A,1\n")
    assert ingest_outcomes(root, store)["plan.csv"] == "imported"
    assert planned(store) == before + 1
    every_graph_is_the_catalogs()  # the old plan graph is gone
    assert catalog.unfinished_ingests(store) == []

    for name in ("C001", "C002", "C003", "C004"):
        (root / "outputs" / f"{name}.txt").unlink()
    (root / "outputs").rmdir()
    assert ingest_outcomes(root, store)["outputs"] == "removed"
    every_graph_is_the_catalogs()


def test_staging_graph_is_invisible_until_the_switch(engine, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": "call_id,case,condition\nC1,s1,A\n"})
    store = open_store(engine.url)
    ingest_outcomes(root, store)
    nt = tmp_path / "staged.nt"
    nt.write_text(
        "<https://example.org/t/x> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
        "<https://w3id.org/provgraph/ns#PlannedCall> .\n"
    )
    staging = catalog.new_graph_iri()
    store.bulk_load(nt, staging)  # another client's import, loaded but not switched
    assert staging in store.named_graphs()
    assert planned(store) == 1  # readers do not see it (Virtuoso's default graph is every graph)
    assert not store.ask("ASK { <https://example.org/t/x> ?p ?o }")
    assert store.quad_count(staging) == 1
    # recovery on open leaves a young staging graph alone (it may be an import in progress) ...
    assert staging in open_store(engine.url).named_graphs()
    # ... and removes it once it is older than the staging TTL
    assert catalog.recover(SparqlStore(parse_endpoint(engine.url)), now=_later(2 * 86400)) == [staging]
    assert staging not in store.named_graphs()


def test_recovery_never_touches_graphs_it_did_not_mint(engine, tmp_path: Path) -> None:
    store = open_store(engine.url)
    other = "https://team.example/other-project/graph"
    nt = tmp_path / "other.nt"
    nt.write_text("<urn:x> <urn:p> <urn:o> .\n")
    store.bulk_load(nt, other)
    try:
        assert catalog.recover(store, now=_later(10**7)) == []
        assert other in store.named_graphs()
        assert not store.ask("ASK { <urn:x> ?p ?o }")  # nor do queries see another project's data
    finally:
        store.drop_graph(other)  # the server outlives this test; clear() keeps foreign graphs


def test_drop_graph_removes_every_quad(engine, tmp_path: Path) -> None:
    """A graph provgraph no longer shows (replaced, or a failed load's staging graph) is dropped
    whole; on Virtuoso row by row (``DEFINE sql:log-enable 3``, the preset's ``drop_update``),
    which must still leave nothing behind and nothing of the other graphs touched."""
    store = open_store(engine.url)
    assert store.endpoint.drop_update.startswith("DEFINE sql:log-enable 3") == (engine.engine == "virtuoso")
    keep, drop = catalog.new_graph_iri(), catalog.new_graph_iri()
    nt = tmp_path / "g.nt"
    nt.write_text("".join(f'<urn:x:{i}> <urn:p> "{i}" .\n' for i in range(30_000)))
    store.bulk_load(nt, keep)
    store.bulk_load(nt, drop)
    assert store.quad_count(drop) == 30_000
    store.drop_graph(drop)
    assert store.quad_count(drop) == 0
    assert drop not in store.named_graphs()
    assert store.quad_count(keep) == 30_000
    store.drop_graph(drop)  # dropping what is gone is no error
    store.drop_graph(keep)


def test_check_fails_when_another_client_replaces_a_graph_meanwhile(engine, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "b")
    reader, writer = open_store(engine.url), open_store(engine.url)
    ingest_outcomes(root, writer)
    with pytest.raises(StoreChanged, match="another client replaced 1 graph"), reader.snapshot():
        assert planned(reader) == 4
        with (root / "plan.csv").open("a") as fh:
            fh.write("C100,study-9,gpt-A,1\n")
        ingest_outcomes(root, writer)
        # the pinned (old) plan graph was dropped: this answer mixes states, the exit says so
        reader.select(PLANNED)
    assert planned(reader) == 5


def test_export_and_counts_match_the_embedded_store(engine, tmp_path: Path) -> None:
    """Literals come back with their datatypes (booleans, integers, decimals, dateTimes)."""
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "b")
    server, embedded = open_store(engine.url), open_store(None)
    ingest_outcomes(root, server)
    ingest_outcomes(root, embedded)

    def triples(store) -> set[str]:
        buf = io.BytesIO()
        export(store, "nt", buf, with_ontology=True)
        # a server writes the times the import stamped at its own seconds
        return {x for x in buf.getvalue().decode().splitlines() if "dateTime" not in x}

    assert triples(server) == triples(embedded)
    assert server.quad_count() == embedded.quad_count()
    assert [s.key for s in catalog.slots(server)] == [s.key for s in catalog.slots(embedded)]
    typed = (
        "SELECT ?v WHERE { VALUES ?v { true false 3 2.5 "
        '"2024-01-02T03:04:05Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> "x"@en } }'
    )
    assert server.select(typed) == embedded.select(typed)


def test_cli_commands(cli, engine, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "b")
    store = ["-C", str(root), "--store", engine.url]
    shown = f"{engine.base} ({engine.engine})"
    r = cli("--store", engine.url, "init", str(tmp_path / "fresh"))  # init never rewrites a contract
    assert r.code == 0, r.err
    assert f"store ready at {engine.url}" in r.out
    r = cli(*store, "ingest")
    assert r.code == 0, r.err
    assert f"ingest into {shown}" in r.out
    assert "0 imported, 4 unchanged" in cli(*store, "ingest").out
    r = cli(*store, "check")
    assert r.code == 1, r.out + r.err
    assert "gate: FAIL" in r.out and "4 violations" in r.out
    r = cli(
        *store,
        "query",
        "SELECT ?id WHERE { ?c a pg:PlannedCall ; pg:callId ?id } ORDER BY ?id",
        "--format",
        "csv",
    )
    assert r.code == 0, r.err
    assert r.out.splitlines() == ["id", "C001", "C002", "C003", "C004"]
    r = cli(*store, "query", "SELECT ?c WHERE { ?c pg:callId ?id }", "--param", "id=C004", "--format", "json")
    assert json.loads(r.out)["results"]["bindings"][0]["c"]["value"].endswith("call/C004")
    r = cli(*store, "query", "ASK { ?c pg:callId ?id }", "--param", "id=C404")
    assert r.code == 0 and "false" in r.out.lower(), r.out + r.err
    info = json.loads(cli(*store, "info", "--format", "json").out)
    assert info["store"] == shown
    assert {g["source"] for g in info["graphs"]} >= {"ontology", "check:output", "import:plan:plan.csv"}
    out = tmp_path / "graph.nq"
    r = cli(*store, "export", "--format", "nquads", "-o", str(out))
    assert r.code == 0, r.err
    exported = out.read_text()
    assert len(exported.splitlines()) > 100
    assert "urn:provgraph:catalog" not in exported
    assert "openlinksw" not in exported  # Virtuoso's own graphs are not the project's
    r = cli(*store, "export", "--format", "provn")
    assert r.code == 0 and r.out.startswith("document")


def test_clean_example_passes(cli, engine, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "b")
    assert cli("-C", str(root), "--store", engine.url, "ingest").code == 0
    r = cli("-C", str(root), "--store", engine.url, "check")
    assert r.code == 0, r.out + r.err
    assert "gate: PASS" in r.out
