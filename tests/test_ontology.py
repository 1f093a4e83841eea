"""The ontology defines every pg: term that rules and importers use."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import REPO, RULE_FIXTURES, ingest_bundle, rule_bundle
from fixtures.rulepairs import TWINS

from provgraph.lineage.gate import run_gate
from provgraph.rdf.resources import ontology_path
from provgraph.rdf.vocab import PG, PG_NS, RDFS_NS, defined_terms
from provgraph.rules import load_rules

EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("**/provgraph.toml"))
RULE_TWINS = [(p.name, twin) for p in sorted(RULE_FIXTURES.iterdir()) if p.is_dir() for twin in TWINS]


def test_undefined_terms_are_refused() -> None:
    assert PG.PlannedCall == PG_NS + "PlannedCall"
    with pytest.raises(AttributeError, match="pg:PlanedCall is not defined"):
        _ = PG.PlanedCall


def test_every_term_has_a_label() -> None:
    graph = ox.Store()
    graph.load(path=str(ontology_path()), format=ox.RdfFormat.TURTLE)
    unlabeled = [
        t
        for t in defined_terms()
        if not list(graph.quads_for_pattern(ox.NamedNode(PG_NS + t), ox.NamedNode(RDFS_NS + "label"), None))
    ]
    assert unlabeled == []


@pytest.mark.parametrize("root", EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_importers_and_checks_only_use_defined_terms(root: Path) -> None:
    assert_defined_terms_only(root)


@pytest.mark.parametrize(("rule_id", "twin"), RULE_TWINS, ids=[f"{r}/{t}" for r, t in RULE_TWINS])
def test_rule_fixtures_only_use_defined_terms(rule_id: str, twin: str, tmp_path: Path) -> None:
    assert_defined_terms_only(rule_bundle(rule_id, twin, tmp_path / twin))


def assert_defined_terms_only(root: Path) -> None:
    """Ingest ``root``, check it and record the check: every pg: term in the store is defined."""
    store, _, _ = ingest_bundle(root)
    run_gate(store, load_rules())
    used = set()
    for row in store.select(
        "SELECT DISTINCT ?t WHERE { GRAPH ?g { { ?s ?t ?o } UNION { ?s a ?t } } "
        "FILTER(?g != <urn:provgraph:catalog>) }"
    ):
        value = row["t"].value
        if value.startswith(PG_NS):
            used.add(value[len(PG_NS) :])
    assert used, "nothing was imported"
    assert used <= defined_terms(), sorted(used - defined_terms())
