"""The SPARQL server backend on a real Virtuoso Open Source 7 (Debian ``virtuoso-opensource``),
the second engine after Oxigraph: every rule's fixture pair gives the same gate on the embedded
store, ``oxigraph serve`` and Virtuoso; a rule's Virtuoso form returns its plain query's rows;
an answer cut to Virtuoso's row limit fails closed. What every server engine must do alike
(catalog switch, staging graphs, export, CLI) is in ``test_server_engines.py``.

One Virtuoso per test process (conftest, ``tests/virtuoso_server.py``); each test starts with
provgraph's graphs dropped. Without ``virtuoso-t`` the tests skip and say how to install it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RULE_FIXTURES, ingest_outcomes, rule_bundle
from oxigraph_server import OxigraphServer
from virtuoso_server import INSTALL, VirtuosoServer, virtuoso_binaries

from provgraph.errors import StoreUnavailable
from provgraph.lineage.gate import refresh_derived, run_gate
from provgraph.rules import load_rules
from provgraph.store import open_store
from provgraph.store.endpoint import parse_endpoint
from provgraph.store.http import SparqlStore

RULES = load_rules()

pytestmark = pytest.mark.skipif(virtuoso_binaries() is None, reason=f"Virtuoso is not installed: {INSTALL}")


@pytest.fixture
def url(virtuoso_server: VirtuosoServer) -> str:
    """The session's Virtuoso (conftest), emptied."""
    virtuoso_server.clear()
    return virtuoso_server.url


def gate(root: Path, location: str | None, rule_id: str) -> dict[str, object]:
    """Rule ``rule_id`` (and the gate around it: derived evidence, contract facts) on ``root``
    imported into the store at ``location``: its outcome and its sorted violation foci."""
    store = open_store(location)
    ingest_outcomes(root, store)
    report = run_gate(store, [r for r in RULES if r.id == rule_id], record=False)
    (result,) = report.results
    return {
        "outcome": result.outcome,
        "error": result.error,
        "foci": sorted(report.short(v.focus) for v in result.violations),
    }


# -- every fixture pair agrees on three engines --------------------------------------------------


#: Rules whose pair Virtuoso 7.2 gets wrong, and why (README, "Virtuoso Open Source").
VIRTUOSO_WRONG: dict[str, str] = {}


def _rule_params() -> list:
    return [
        pytest.param(r.id, marks=pytest.mark.xfail(reason=VIRTUOSO_WRONG[r.id], strict=True))
        if r.id in VIRTUOSO_WRONG
        else r.id
        for r in RULES
    ]


@pytest.mark.parametrize("rule_id", _rule_params())
def test_fixture_pair_agrees_on_three_engines(
    rule_id: str, virtuoso_server: VirtuosoServer, oxigraph_server: OxigraphServer, tmp_path: Path
) -> None:
    """The pair is ``tests/fixtures/rules/<id>/`` (flawed bundle, clean overlay): the rule
    fires on the flawed twin and passes on the clean one, with the same foci on each engine."""
    for twin in ("flawed", "clean"):
        root = rule_bundle(rule_id, twin, tmp_path / twin)
        virtuoso_server.clear()
        oxigraph_server.clear()
        embedded = gate(root, None, rule_id)
        assert embedded["outcome"] == ("violated" if twin == "flawed" else "pass"), (twin, embedded)
        assert gate(root, virtuoso_server.url, rule_id) == embedded, twin
        assert gate(root, oxigraph_server.url, rule_id) == embedded, twin


def _form_params() -> list:
    """(rule, fixture pair) for every Virtuoso form and every pair of its rule's clause."""
    pairs = sorted(p.name for p in RULE_FIXTURES.iterdir() if p.is_dir())
    return [
        (r.id, pair)
        for r in RULES
        if dict(r.forms).get("virtuoso")
        for pair in pairs
        if pair.startswith(r.clause)
    ]


@pytest.mark.parametrize(("rule_id", "pair"), _form_params())
def test_virtuoso_form_returns_the_rules_rows(rule_id: str, pair: str, url: str, tmp_path: Path) -> None:
    """A Virtuoso form (``<rule-id>.virtuoso.rq``), run on Virtuoso, returns the rows the rule's
    own query returns on the embedded store, on both twins of every pair of its clause."""
    (rule,) = [r for r in RULES if r.id == rule_id]
    for twin in ("flawed", "clean"):
        root = rule_bundle(pair, twin, tmp_path / twin)
        rows = []
        for store in (open_store(None), open_store(url)):
            ingest_outcomes(root, store)
            refresh_derived(store)
            rows.append(
                sorted(
                    (r["focus"].value, r["message"].value) for r in store.select(rule.query_for(store.engine))
                )
            )
        assert rows[0] == rows[1], twin


# -- Virtuoso's own limits ----------------------------------------------------------------------


def test_an_answer_virtuoso_cut_to_its_row_limit_fails_closed(tmp_path: Path) -> None:
    """With the package's ResultSetMaxRows (10,000) Virtuoso sends the first rows of a longer
    answer as a whole one and says so only in an ``X-SPARQL-MaxRows`` header (seen on 7.2.5):
    a rule would read a partial answer. Here the limit is 3 rows; an answer of exactly 3 rows
    carries the header too (Virtuoso cannot tell it from a cut one), so it is refused as well."""
    srv = VirtuosoServer(tmp_path / "v", max_rows=3).start()
    five = "SELECT ?x WHERE { VALUES ?x { 1 2 3 4 5 } }"
    try:
        store = SparqlStore(parse_endpoint(srv.url))
        assert [int(r["x"].value) for r in store.select(five + " ORDER BY ?x LIMIT 2")] == [1, 2]
        for query in (five, five + " LIMIT 3"):
            with pytest.raises(StoreUnavailable, match=r"cut its answer to 3 rows.*ResultSetMaxRows = 0"):
                store.select(query)
    finally:
        srv.stop()
