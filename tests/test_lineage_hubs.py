"""Lineage through a hub too large to trace source by source (a cell grid at scale).

Above ``HUB_THRESHOLD`` sources, a trace shows a few of a hub's sources and reads what lies
upstream of all of them from the last check. These tests force sampling on the radiology
pilot replica (about a thousand label rows) and require the sampled trace to reach the same
status, for the same violations, as the full trace: on the flawed twin (violations upstream
of the grid) and on the clean twin (none).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from examples_support import Bundle, generator, prepare

from provgraph.lineage import hubs
from provgraph.lineage.gate import run_gate
from provgraph.lineage.hubs import HUB_SAMPLE, hub_summaries
from provgraph.lineage.model import Lineage
from provgraph.lineage.show import render_tree
from provgraph.lineage.trace import trace
from provgraph.rules import load_rules

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
