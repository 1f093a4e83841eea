"""Lineage through a hub too large to trace source by source (a cell grid at scale).

Above ``HUB_THRESHOLD`` sources, a trace shows a few of a hub's sources and reads what lies
upstream of all of them from the last check. These tests force sampling on the radiology
pilot replica (about a thousand label rows) and require the sampled trace to reach the same
status, for the same violations, as the full trace: on the flawed twin (violations upstream
of the grid) and on the clean twin (none).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from examples_support import Bundle, generator, prepare

from provgraph.lineage import hubs
from provgraph.lineage.gate import run_gate
from provgraph.lineage.hubs import HUB_SAMPLE, hub_summaries
from provgraph.lineage.model import Lineage, inverse_properties, lineage_properties
from provgraph.lineage.show import render_tree
from provgraph.lineage.trace import trace
from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG_NS, PROV_NS
from provgraph.rules import load_rules
from provgraph.store import catalog
from provgraph.store.base import Store

gen = generator("cxr_pilot")


def published_q(bundle: Bundle) -> str:
    """The recomputed Cochran's Q (keyed, globally complete blocks): it derives from the grid."""
    (row, *_) = bundle.select(
        """SELECT DISTINCT ?s WHERE { ?s a pg:Statistic ; pg:statName "cochran_q" ;
             pg:cohortRule "globally-complete" ; prov:wasDerivedFrom+ ?x . ?x a pg:CellGrid } ORDER BY ?s"""
    )
    return row["s"]


def violations(lin: Lineage) -> set[tuple[str, str | None, str | None]]:
    return {(r.status, r.rule, r.node) for r in lin.reasons if r.rule}


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_a_sampled_hub_finds_what_the_full_trace_finds(
    twin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = prepare(tmp_path / twin, twin, gen.generate)
    store = bundle.store
    claim = published_q(bundle)
    full = trace(store, claim)
    assert not full.sampled and not full.truncated

    monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
    run_gate(store, load_rules())  # the check records what lies upstream
    sampled = trace(store, claim)

    (grid,) = {x.source for x in sampled.sampled}
    assert "cell-grid" in grid
    assert sum(x.total for x in sampled.sampled) > 50
    assert all(len(x.shown) <= HUB_SAMPLE for x in sampled.sampled)
    assert len(sampled.nodes) * 5 < len(full.nodes)
    assert sampled.status == full.status
    assert violations(sampled) == violations(full)
    upstream = [r for r in sampled.reasons if "upstream of cell grid" in r.text]
    if twin == "flawed":
        # the five truncated Claude reports lie behind label rows the sample did not trace
        assert {r.rule for r in upstream} >= {"annotation-input-truncated"}
    else:
        assert (upstream, sampled.status) == ([], "retained")
    bundle.close()


def test_a_sampled_hub_without_a_recorded_summary_is_unverifiable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = prepare(tmp_path / "clean", "clean", gen.generate)
    claim = published_q(bundle)
    # the check ran while the grid was small enough to trace: it recorded no summary
    monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
    lin = trace(bundle.store, claim)
    assert lin.sampled and lin.status == "unverifiable"
    assert any("run `provgraph check`" in r.text for r in lin.reasons)
    bundle.close()


def test_without_a_recorded_count_a_trace_counts_a_hubs_sources_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No check recorded the grid's source counts: the trace counts them only up to
    COUNT_BOUND (a million at 10^6 calls cost seconds per trace) and says "or more"."""
    bundle = prepare(tmp_path / "clean", "clean", gen.generate)
    claim = published_q(bundle)
    monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
    exact = trace(bundle.store, claim)
    assert exact.sampled and not any(x.at_least for x in exact.sampled)
    big = max(exact.sampled, key=lambda x: x.total)
    monkeypatch.setattr(hubs, "COUNT_BOUND", big.total - 1)
    bounded = trace(bundle.store, claim)
    (cut,) = [x for x in bounded.sampled if x.prop == big.prop]
    assert (cut.total, cut.at_least) == (big.total - 1, True)
    hidden = sum(x.total - len(x.shown) for x in bounded.sampled)
    assert f"and {hidden:,} or more sources, sampled" in render_tree(bounded)
    assert bounded.status == exact.status == "unverifiable"
    bundle.close()


def test_the_tree_says_how_many_sources_were_not_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = prepare(tmp_path / "clean", "clean", gen.generate)
    monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
    run_gate(bundle.store, load_rules())
    lin = trace(bundle.store, published_q(bundle))
    text = render_tree(lin)
    total = sum(x.total for x in lin.sampled)
    shown = sum(len(x.shown) for x in lin.sampled)
    assert f"and {total - shown:,} more sources, sampled" in text
    assert lin.to_dict()["sampled"][0]["total"] >= 50
    bundle.close()


def reference_summaries(store: Store) -> list[tuple[str, str, object]]:
    """What lies upstream of each large hub, by plain SPARQL: a property path over every lineage
    property (inverse ones reversed), a NOT EXISTS for undescribed nodes (seen through
    ``Store.within`` every graph but the derived views: a view describes nothing), a COUNT per
    property."""
    evidence = store.within([s.graph for s in catalog.slots(store) if not s.key.startswith("derived:")])
    props = lineage_properties(store)
    path = "|".join([f"<{p}>" for p in props] + [f"^<{q}>" for q in inverse_properties(store)])
    facts: list[tuple[str, str, object]] = []
    for (hub,) in store.stream(
        f"SELECT DISTINCT ?h WHERE {{ ?c <{PG_NS}lineageHub> true . ?h a ?c }} ORDER BY ?h"
    ):
        counts = {}
        for p in props:
            (row,) = store.select(f"SELECT (COUNT(*) AS ?k) WHERE {{ <{hub}> <{p}> ?o FILTER(isIRI(?o)) }}")
            if int(row["k"].value):
                counts[p] = int(row["k"].value)
        if sum(counts.values()) <= hubs.HUB_THRESHOLD:
            continue
        up = {x for (x,) in store.stream(f"SELECT DISTINCT ?x WHERE {{ <{hub}> ({path})* ?x }}")}
        facts += [(hub, PG_NS + "upstreamSummarised", True)]
        facts += [(hub, PG_NS + "sourceCounts", json.dumps(counts, sort_keys=True))]
        for v, focus in store.stream(f"SELECT ?v ?f WHERE {{ ?v a <{PG_NS}Violation> ; <{PG_NS}focus> ?f }}"):
            if focus in up:
                facts.append((hub, PG_NS + "upstreamViolation", IRI(v)))
        loose = sorted(
            o
            for p in props
            for (o,) in evidence.stream(
                f"SELECT DISTINCT ?o WHERE {{ ?s <{p}> ?o FILTER(isIRI(?o))"
                " FILTER NOT EXISTS { ?o ?q ?r } }"
            )
            if o in up
        )
        facts += [(hub, PG_NS + "upstreamUndescribed", IRI(n)) for n in sorted(set(loose))[:20]]
    return facts


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_the_summaries_are_what_a_property_path_finds(
    twin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub summaries equal those of a plain property-path query over the same store:
    violations upstream (flawed twin), undescribed nodes upstream (a label row whose report
    file is deleted from the imports: the check's file view still states ``pg:isFile`` of it,
    which must not count as a description), source counts."""
    bundle = prepare(tmp_path / twin, twin, gen.generate)
    store = bundle.store
    monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
    run_gate(store, load_rules())
    if twin == "clean":
        # one labelled report's file loses its description: referenced, described by no import
        (row, *_) = store.select(
            f"""SELECT ?f WHERE {{ ?grid a <{PG_NS}CellGrid> ; <{PROV_NS}wasDerivedFrom> ?row .
                  ?row <{PROV_NS}wasDerivedFrom> ?f . ?f <{PG_NS}path> ?p }} ORDER BY ?f LIMIT 1"""
        )
        evidence = ", ".join(f"<{s.graph}>" for s in catalog.slots(store) if not s.key.startswith("derived:"))
        gone = row["f"].value
        store.update(
            f"DELETE {{ GRAPH ?g {{ <{gone}> ?p ?o }} }} WHERE {{ GRAPH ?g {{ <{gone}> ?p ?o }}"
            f" FILTER(?g IN ({evidence})) }}"
        )
        assert store.ask(f"ASK {{ <{gone}> <{PG_NS}isFile> true }}")  # the derived view's fact
    expected = reference_summaries(store)
    assert sorted(map(str, hub_summaries(store))) == sorted(map(str, expected))
    kinds = {p.rsplit("#", 1)[-1] for _, p, _ in expected}
    assert kinds >= {"upstreamSummarised", "sourceCounts"}
    assert ("upstreamViolation" in kinds) == (twin == "flawed")
    if twin == "clean":
        assert any(p.endswith("upstreamUndescribed") and o == IRI(gone) for _, p, o in expected)
    bundle.close()


def test_the_downstream_search_and_the_full_walk_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # budget 5 sends every focus with more than five nodes downstream to the full upstream walk
    bundle = prepare(tmp_path / "flawed", "flawed", gen.generate)
    monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
    searched = hub_summaries(bundle.store)
    walked = hub_summaries(bundle.store, budget=5)
    assert sorted(searched) == sorted(walked)
    assert any(p.endswith("upstreamViolation") for _, p, _ in searched)
    bundle.close()
