"""Lineage over real stores: resolving targets, the chain back to sources, and how recorded
violations and missing evidence decide the claim status."""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import FIXTURES, ingest_bundle

from provgraph.lineage.gate import run_gate
from provgraph.lineage.model import STATUSES, status_of, worst
from provgraph.lineage.resolve import resolve
from provgraph.lineage.show import render_dot, render_tree
from provgraph.lineage.trace import trace, trace_many
from provgraph.rdf.vocab import PG_NS
from provgraph.rules import load_rules
from provgraph.store import catalog

sys_path = str(FIXTURES)
import sys  # noqa: E402

sys.path.insert(0, sys_path)
from make_release import make_bundle  # noqa: E402

BASE = "https://example.org/cxr-audit/"


def load_statistics(store) -> None:
    """Load issue 5's statistic nodes (a Turtle fixture) as their own graph of the real store."""
    triples = ox.parse(path=str(FIXTURES / "lineage" / "statistics.ttl"), format=ox.RdfFormat.TURTLE)
    # a file of this test's own: parallel test workers each load the fixture
    with tempfile.TemporaryDirectory() as tmp:
        nt = Path(tmp) / "statistics.nt"
        ox.serialize(triples, str(nt), format=ox.RdfFormat.N_TRIPLES)
        catalog.replace(store, "fixture:statistics", "1", nt)


def checked(root: Path, statistics: bool = True, rules=None):
    store, results, problems = ingest_bundle(root)
    assert not problems and all(r.outcome == "imported" and not r.problems for r in results), [
        (r.rel, r.error, [str(p) for p in r.problems]) for r in results
    ]
    if statistics:
        load_statistics(store)
    run_gate(store, rules or load_rules())
    return store


@pytest.fixture
def clean(tmp_path: Path):
    return checked(make_bundle(tmp_path / "clean"))


def test_severity_to_status_mapping() -> None:
    assert status_of("fail") == "withdrawn"
    assert status_of("restrict") == "restricted"
    assert status_of("info") is None
    # a rule header's lineage: key, recorded on the violation, overrides the severity's status
    assert status_of("fail", "unverifiable") == "unverifiable"
    (rule,) = [r for r in load_rules() if r.id == "release-derived-without-build"]
    assert (rule.severity, rule.lineage) == ("fail", "unverifiable")
    assert worst([None, "restricted", "withdrawn", "unverifiable"]) == "withdrawn"
    assert worst([]) == "retained"
    assert STATUSES == ("retained", "restricted", "unverifiable", "withdrawn")


def test_a_clean_number_is_retained_and_reaches_its_statistic(clean) -> None:
    matches = resolve(clean, "182.29")
    assert matches[:3] == [
        BASE + "claim/README.md/3/182.29/1",
        BASE + "claim/manuscript/main.tex/2/182.29/1",
        BASE + "claim/tables/table2.md/3/182.29/1",
    ]
    assert BASE + "statistic/cochran_q/globally-complete" in matches  # 182.2934 rounds to it
    lineage = trace(clean, matches[0])
    assert lineage.status == "retained", lineage.reasons
    chain = {(lineage.nodes[e.source].label, e.label, lineage.nodes[e.target].label) for e in lineage.edges}
    assert ("claim Q = 182.29", "registry value", "registry value cochran_q = 182.29 (current)") in chain
    assert (
        "registry value cochran_q = 182.29 (current)",
        "recomputed as",
        "statistic cochran_q = 182.2934 (n=369, globally-complete, asymptotic)",
    ) in chain
    assert any(t == "file results/stats.csv" for _, _, t in chain)  # back to the source file


def test_a_table_number_traces_through_its_build_record(clean) -> None:
    (iri,) = resolve(clean, "tables/table2.md:3")
    lineage = trace(clean, iri)
    text = render_tree(lineage, BASE)
    assert "wasGeneratedBy: build tables/table2.md: python scripts/make_table.py" in text
    assert "script: file scripts/make_table.py" in text
    assert "used: file results/stats.csv" in text
    assert lineage.status == "retained"


def test_registry_value_without_a_statistic_link_is_matched_by_name_and_value(clean) -> None:
    lineage = trace(clean, resolve(clean, "27/45")[0])
    inferred = [
        (lineage.nodes[e.source].label, lineage.nodes[e.target].label) for e in lineage.edges if e.inferred
    ]
    assert inferred == [
        (
            "registry value mcnemar_significant = 27/45 (current)",
            "statistic mcnemar_significant = 27 (n=45, globally-complete)",
        )
    ]
    assert "recomputed as (inferred): statistic mcnemar_significant" in render_tree(lineage, BASE)
    assert lineage.status == "retained"


def test_a_number_with_no_evidence_is_unverifiable(clean) -> None:
    (iri,) = resolve(clean, "manuscript/main.tex:3")[:1]
    lineage = trace(clean, iri)
    assert lineage.nodes[iri].label == "claim 20/45"
    # 20/45 is in no registry and no statistic: nothing shows where it comes from
    assert lineage.status == "unverifiable"
    assert "traces to no statistic" in lineage.reasons[-1].text


def test_stale_input_withdraws_the_numbers_built_from_it(tmp_path: Path) -> None:
    store = checked(make_bundle(tmp_path / "b", "release-stale-artifact"))
    (iri,) = resolve(store, "tables/table2.md:3")
    lineage = trace(store, iri)
    assert lineage.status == "withdrawn"
    table = lineage.nodes[BASE + "file/tables/table2.md"]
    assert [v.rule for v in table.violations] == ["release-stale-artifact"]
    assert "! fail release-stale-artifact: tables/table2.md is stale" in render_tree(lineage, BASE)


def test_missing_build_record_makes_the_artifact_unverifiable(tmp_path: Path) -> None:
    store = checked(make_bundle(tmp_path / "b", "release-derived-without-build"))
    (iri,) = resolve(store, "figures/fig2.svg")
    assert trace(store, iri).status == "unverifiable"


def test_restrict_rule_restricts_and_info_rule_does_not(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "release"
    folder.mkdir(parents=True)
    for severity in ("restrict", "info"):
        (folder / f"release-t-{severity}.rq").write_text(
            f"# id: release-t-{severity}\n# clause: release\n# severity: {severity}\n"
            "# title: t\n# remedy: r\n# why: w\n"
            "PREFIX pg: <https://w3id.org/provgraph/ns#>\n"
            "SELECT DISTINCT ?focus ?message WHERE { ?focus a pg:Statistic ; pg:statName "
            f'"{"cochran_q" if severity == "restrict" else "mcnemar_significant"}" '
            'BIND("valid only for the archived automated labels" AS ?message) }\n'
        )
    store = checked(make_bundle(tmp_path / "b"), rules=load_rules(tmp_path / "rules"))
    q = trace(store, resolve(store, "182.29")[0])
    assert q.status == "restricted"
    assert "release-t-restrict (restrict)" in q.reasons[0].text
    mcnemar = trace(store, resolve(store, "27/45")[0])
    assert mcnemar.status == "retained", mcnemar.reasons


def test_missing_check_dangling_source_and_rule_errors_are_unverifiable(tmp_path: Path) -> None:
    store, _, _ = ingest_bundle(make_bundle(tmp_path / "b"))
    iri = resolve(store, "182.29")[0]
    lineage = trace(store, iri)
    assert lineage.status == "unverifiable"
    assert "no check has been recorded" in " ".join(r.text for r in lineage.reasons)
    # the registry names a statistic nothing recomputed (no statistics engine ran)
    text = " ".join(r.text for r in lineage.reasons)
    assert "names statistic statistic/cochran_q/globally-complete, which is not recomputed" in text
    # a statistics graph pointing at a statistic no import describes: its source was not retained
    dangling = tmp_path / "dangling.nt"
    dangling.write_text(
        f"<{BASE}claim/README.md/3/182.29/1> <{PG_NS}recomputedAs> <{BASE}statistic/gone> .\n"
    )
    catalog.replace(store, "fixture:dangling", "1", dangling)
    text = " ".join(r.text for r in trace(store, iri).reasons)
    assert f"{BASE}statistic/gone is referenced but no import describes it" in text
    catalog.remove(store, "fixture:dangling")
    broken = tmp_path / "rules" / "release"
    broken.mkdir(parents=True)
    (broken / "release-broken.rq").write_text(
        "# id: release-broken\n# clause: release\n# severity: info\n# title: t\n# remedy: r\n# why: w\n"
        "# requires: pg:Statistic\nSELECT DISTINCT ?focus ?message WHERE { ?focus ?p ?message }\n"
    )
    run_gate(store, load_rules(tmp_path / "rules"))
    reasons = " ".join(r.text for r in trace(store, iri).reasons)
    assert "rule release-broken could not run: missing evidence" in reasons


def test_a_check_does_not_describe_what_no_import_describes(tmp_path: Path) -> None:
    """A call record for a call no plan names points at a call node no import describes; the
    check's per-call view states that call's ``pg:callId`` (rules report it), which must not
    make the lineage of the record read otherwise after the check than before it."""
    from provgraph.ingest.testing import write_bundle

    calls = json.dumps({"call_id": "c1", "status": "ok"}) + "\n"
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", {"calls.jsonl": calls}))
    (row,) = store.select(f"SELECT ?r WHERE {{ ?r a <{PG_NS}CallRecord> }}")
    record = row["r"].value

    def undescribed() -> list[tuple[str, str]]:
        lineage = trace(store, record)
        nodes = [(n.iri, n.label) for n in lineage.nodes.values() if not n.described]
        return nodes + [(r.node or "", r.text) for r in lineage.reasons if "no import describes" in r.text]

    call = "https://example.org/t/call/c1"  # write_bundle's base IRI
    before = undescribed()
    assert before == [
        (call, f"(not in the store) {call}"),
        (call, f"{call} is referenced but no import describes it: its source was not retained"),
    ]
    run_gate(store, load_rules())
    assert store.ask(f'ASK {{ <{call}> <{PG_NS}callId> "c1" }}')  # the view's fact
    assert undescribed() == before


def test_superseded_value_in_a_released_zip(tmp_path: Path) -> None:
    root = make_bundle(tmp_path / "b")
    old = (root / "README.md").read_text().replace("Q = 182.29", "Q = 154.73")
    from provgraph.release.builder import write_zip

    staging = tmp_path / "old"
    staging.mkdir()
    (staging / "README.md").write_text(old)
    write_zip(
        root / "archive" / "cxr-audit-1.0.zip", [("README.md", staging / "README.md")], (1980, 1, 1, 0, 0, 0)
    )
    (root / "archive" / "SHA256SUMS").unlink()
    store = checked(root)
    (iri,) = resolve(store, "154.73")[:1]
    lineage = trace(store, iri)
    assert lineage.nodes[iri].location == "archive/cxr-audit-1.0.zip!/README.md:3"
    assert lineage.status == "withdrawn"
    labels = [n.label for n in lineage.nodes.values()]
    assert "registry value cochran_q = 154.73 (superseded)" in labels
    assert "archive archive/cxr-audit-1.0.zip" in labels


def test_renders_json_and_dot(clean) -> None:
    lineage = trace(clean, resolve(clean, "182.29")[0])
    doc = lineage.to_dict()
    assert doc["status"] == "retained" and doc["root"] == BASE + "claim/README.md/3/182.29/1"
    json.dumps(doc)
    dot = render_dot(lineage, BASE)
    assert dot.startswith("digraph lineage {") and "recomputed as" in dot


def test_unknown_targets_resolve_to_nothing(clean) -> None:
    assert resolve(clean, "182.30") == []
    assert resolve(clean, "README.md:99") == []
    assert resolve(clean, "https://example.org/cxr-audit/nothing") == []
    assert resolve(clean, "claim/README.md/3/182.29/1") == [BASE + "claim/README.md/3/182.29/1"]
    assert resolve(clean, PG_NS + "Claim") == [PG_NS + "Claim"]


def test_lineage_is_cut_at_its_size_limit(clean) -> None:
    lineage = trace(clean, resolve(clean, "182.29")[0], max_nodes=2)
    assert lineage.truncated and lineage.status == "unverifiable"


@pytest.mark.parametrize("max_nodes", [3, 200])
def test_lineages_walked_together_equal_lineages_walked_alone(clean, max_nodes: int) -> None:
    # the report and `provgraph lineage` trace a number's matches in one walk; the matches of
    # 182.29 share their registry value and statistic, 27/45's shares none of them
    iris = resolve(clean, "182.29") + resolve(clean, "27/45")
    assert len(iris) > 3
    together = trace_many(clean, iris, max_nodes)
    for iri, shared in zip(iris, together, strict=True):
        alone = trace(clean, iri, max_nodes)
        assert shared == alone
        assert list(shared.nodes) == list(alone.nodes) and shared.edges == alone.edges  # same order


def test_zip_helper_is_a_real_zip(tmp_path: Path) -> None:
    from provgraph.release.builder import write_zip

    (tmp_path / "a.txt").write_text("a")
    built = write_zip(tmp_path / "out" / "x.zip", [("a.txt", tmp_path / "a.txt")], (1980, 1, 1, 0, 0, 0))
    with zipfile.ZipFile(built.archive) as zf:
        assert zf.namelist() == ["SHA256SUMS", "a.txt"]
    shutil.rmtree(tmp_path / "out")
