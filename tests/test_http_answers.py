"""Every broken answer of a SPARQL server stops the command with exit 2 and one line.

A real misbehaving HTTP server on loopback (:mod:`bad_sparql_server`) sits in front of a real
``oxigraph serve``; the CLI commands run against it. Cut-off bodies, wrong lengths, missing
final chunks, unframed exports cut at a line end, cut or non-JSON results, HTML pages and 500s
must never give exit 0 with partial output, nor exit 3.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bad_sparql_server import BadSparqlServer
from conftest import REPO, copy_bundle
from oxigraph_server import OxigraphServer

from provgraph.bundle.layout import Bundle
from provgraph.ingest.run import ingest_paths
from provgraph.store import open_store

EXAMPLE = REPO / "examples" / "output_gate" / "clean"
#: Every way an answer can be broken over the transport (framing), for any query form.
TRANSPORT = ["truncated", "short-length", "unterminated-chunks", "html", "error-500"]
#: Broken results documents (SELECT and ASK answers).
RESULTS = ["cut-json", "not-json", "json-without-results"]
#: The query an N-Quads export streams each graph with (provgraph.export.graph_triples).
EXPORT_QUERY = "SELECT ?s ?p ?o WHERE { GRAPH"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> OxigraphServer:
    """A real server holding the clean example, behind every misbehaving server."""
    srv = OxigraphServer(tmp_path_factory.mktemp("oxigraph")).start()
    root = copy_bundle(EXAMPLE, tmp_path_factory.mktemp("bundle") / "b")
    bundle = Bundle.open(root)
    results, problems = ingest_paths(open_store(srv.url), bundle, [bundle.root])
    assert not problems and {r.outcome for r in results} == {"imported"}
    srv.root = root  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def _fails_with_one_line(result, bad: BadSparqlServer) -> str:
    assert bad.broken, "the broken answer was never asked for"
    assert result.code == 2, (result.code, result.out, result.err)
    (line,) = result.err.splitlines()
    assert line.startswith(f"provgraph: error: {bad.url} (oxigraph): "), line
    return line


@pytest.mark.parametrize("mode", [*TRANSPORT, "unframed-cut", "not-json"])
def test_export_of_a_broken_answer_fails(cli, upstream, tmp_path: Path, mode: str) -> None:
    out = tmp_path / "graph.nq"
    out.write_text("<urn:x> <urn:y> <urn:z> .\n")  # the previous export
    with BadSparqlServer(upstream.url, mode, pick=EXPORT_QUERY) as bad:
        r = cli("-C", str(upstream.root), "--store", bad.url, "export", "--format", "nquads", "-o", str(out))
        line = _fails_with_one_line(r, bad)
    # the export is renamed into place only when complete: the previous one is kept whole
    assert out.read_text() == "<urn:x> <urn:y> <urn:z> .\n", "a partial export replaced the file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.nq"]
    if mode == "unframed-cut":
        # the export streams SELECT solutions: a JSON results document proves its own end, so
        # an unframed one cut short is a broken document (the N-Triples case, which can be cut
        # at a line end and still parse, is test_query_on_a_broken_construct_answer_fails)
        assert "the server's answer is broken" in line, line


@pytest.mark.parametrize("mode", ["unframed-cut", "cut-json"])
def test_the_provgraph_process_exits_2_with_one_line(upstream, tmp_path: Path, mode: str) -> None:
    """Issue 22 items 9 and 10 as a user meets them: ``provgraph`` as its own process."""
    out = tmp_path / "graph.nq"
    command = ["export", "--format", "nquads", "-o", str(out)] if mode == "unframed-cut" else ["check"]
    with BadSparqlServer(upstream.url, mode, pick=EXPORT_QUERY if mode == "unframed-cut" else "ASK") as bad:
        proc = subprocess.run(
            [sys.executable, "-m", "provgraph", "-C", str(upstream.root), "--store", bad.url, *command],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"provgraph: error: {bad.url} (oxigraph): "), line
    assert not out.exists() or out.stat().st_size == 0, "a partial export was written"
    assert "PASS" not in proc.stdout


def test_export_through_the_proxy_is_complete_when_nothing_breaks(cli, upstream, tmp_path: Path) -> None:
    """The misbehaving server forwards faithfully when it picks no query: the baseline."""
    out = tmp_path / "graph.nq"
    with BadSparqlServer(upstream.url, "truncated", pick="no query contains this") as bad:
        r = cli("-C", str(upstream.root), "--store", bad.url, "export", "--format", "nquads", "-o", str(out))
    assert r.code == 0, r.err
    assert len(out.read_text().splitlines()) > 100


@pytest.mark.parametrize("mode", [*TRANSPORT, *RESULTS, "unframed-cut"])
@pytest.mark.parametrize("pick", ["?focus", "ASK"], ids=["rule-select", "requires-ask"])
def test_check_on_a_broken_results_answer_fails_closed(cli, upstream, mode: str, pick: str) -> None:
    with BadSparqlServer(upstream.url, mode, pick=pick) as bad:
        r = cli("-C", str(upstream.root), "--store", bad.url, "check")
        _fails_with_one_line(r, bad)
    assert "PASS" not in r.out


@pytest.mark.parametrize("mode", [*TRANSPORT, *RESULTS])
def test_query_on_a_broken_select_answer_fails(cli, upstream, mode: str) -> None:
    with BadSparqlServer(upstream.url, mode, pick="callId") as bad:
        r = cli(
            "-C", str(upstream.root), "--store", bad.url, "query", "SELECT ?id WHERE { ?c pg:callId ?id }"
        )
        _fails_with_one_line(r, bad)
    assert r.out == ""


@pytest.mark.parametrize("mode", ["unframed-cut", "short-length", "unterminated-chunks"])
def test_query_on_a_broken_construct_answer_fails(cli, upstream, mode: str) -> None:
    with BadSparqlServer(upstream.url, mode, pick="callId") as bad:
        r = cli(
            "-C",
            str(upstream.root),
            "--store",
            bad.url,
            "query",
            "CONSTRUCT { ?c pg:callId ?id } WHERE { ?c pg:callId ?id }",
        )
        _fails_with_one_line(r, bad)
    assert r.out == ""


def test_the_error_line_says_what_was_wrong(cli, upstream) -> None:
    expected = {
        "truncated": "dropped the connection (the answer was cut off)",
        "short-length": "bytes after the end its Content-Length announced",
        "cut-json": "the server's answer is broken",
        "json-without-results": "the server's answer is broken",
        "html": "unexpected answer of type 'text/html'",
        "error-500": "the server failed (HTTP 500): <html><body><h1>Internal Server Error",
    }
    for mode, words in expected.items():
        with BadSparqlServer(upstream.url, mode, pick="?focus") as bad:
            line = _fails_with_one_line(cli("-C", str(upstream.root), "--store", bad.url, "check"), bad)
        assert re.search(re.escape(words), line), (mode, line)
