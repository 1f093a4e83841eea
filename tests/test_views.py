"""The collapsed whole-graph view, expansion, subgraph views, DOT output and `provgraph viz`
with and without graphviz, on real stores holding the output-gate example."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import copy_bundle, write_bundle
from viewtools import ACCOUNTING_TTL, EXAMPLE, example_store, load_turtle, path_without_dot

from provgraph.errors import MissingExtraError, UsageError
from provgraph.rdf.vocab import PG_NS, PROV_NS
from provgraph.views import dot
from provgraph.views.model import Mark
from provgraph.views.nodes import subgraph
from provgraph.views.vocabulary import plural, vocabulary
from provgraph.views.whole import whole_graph

PG = PG_NS
BASE = "https://example.org/output-gate-flawed/"
HAS_DOT = dot.dot_program() is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="graphviz `dot` is not installed (.ci/run installs it)")


def by_class(view, local: str, absent: bool = False):
    found = [b for b in view.boxes.values() if b.cls == PG + local and b.absent == absent]
    assert len(found) == 1, [b.title for b in found]
    return found[0]


def test_vocabulary_gives_states_kinds_and_inherited_states(memory_store) -> None:
    vocab = vocabulary(memory_store)
    assert [s.label for s in sorted(vocab.states.values(), key=lambda s: s.order)] == [
        "intended",
        "executed",
        "observed",
        "analyzed",
        "reported",
        "released",
    ]
    assert vocab.classes[PG + "PlannedCall"].state == PG + "Intended"
    assert vocab.classes[PG + "SourceFile"].state == PG + "Observed"  # inherited from pg:File
    assert vocab.classes[PG + "SourceFile"].depth > vocab.classes[PG + "File"].depth
    assert vocab.classes[PG + "Import"].kind == "activity"
    assert vocab.classes[PG + "Importer"].kind == "agent"  # via prov:SoftwareAgent
    assert vocab.classes[PG + "Claim"].kind == "entity"
    drawn = {c.iri for c in vocab.drawn_classes()}
    assert PG + "Violation" not in drawn and PG + "State" not in drawn
    assert PG + "forCall" in vocab.relations and PROV_NS + "used" in vocab.relations


def test_plural() -> None:
    assert plural("planned call") == "planned calls"
    assert plural("answer key entry") == "answer key entries"


def test_flawed_example_collapses_into_counted_groups(tmp_path: Path) -> None:
    store, _ = example_store("flawed", tmp_path)
    view = whole_graph(store)
    planned = by_class(view, "PlannedCall")
    assert (planned.count, planned.group, planned.title) == (4, True, "4 planned calls")
    assert planned.state == PG + "Intended" and planned.kind == "entity"
    assert planned.violations == {"output-duplicate-terminal": 1, "output-planned-without-terminal": 1}
    records = by_class(view, "CallRecord")
    assert records.count == 5 and records.state == PG + "Observed"
    assert records.facets == ["5 ok"]
    assert records.violations == {"output-ok-without-output": 1, "output-unplanned-record": 1}
    files = by_class(view, "File")
    assert files.count == 6 and files.facets == ["1 zero-byte"]
    assert by_class(view, "Import").kind == "activity" and by_class(view, "Importer").kind == "agent"
    # a single node is drawn with its name
    assert by_class(view, "Project").title == "project\noutput-gate-flawed"
    # the record for C099 points at a call nobody planned: an absent node, placed as a planned call
    ghost = by_class(view, "PlannedCall", absent=True)
    assert ghost.iri == BASE + "call/C099" and ghost.count == 1 and "C099" in ghost.title
    arrows = {(view.boxes[a.tail].title, a.label, view.boxes[a.head].title): a.count for a in view.arrows}
    assert arrows[("5 call records", "pg:forCall", "4 planned calls")] == 4
    assert arrows[("5 call records", "pg:forCall", ghost.title)] == 1
    assert arrows[("5 call records", "pg:outputFile", "6 files")] == 5
    assert view.violation_count == 4
    assert "no nodes in states: executed, analyzed, reported, released" in view.notes
    # checks themselves are marks, not boxes
    assert not any(b.cls in (PG + "Violation", PG + "Check", PG + "Rule") for b in view.boxes.values())


def test_clean_example_has_no_marks_and_no_absent_nodes(tmp_path: Path) -> None:
    store, report = example_store("clean", tmp_path)
    assert report.passed
    view = whole_graph(store)
    assert view.violation_count == 0
    assert not any(b.absent for b in view.boxes.values())
    assert by_class(view, "CallRecord").facets == ["4 ok"]


def test_without_a_recorded_check_the_view_says_so(tmp_path: Path) -> None:
    store, report = example_store("flawed", tmp_path, record=False)
    view = whole_graph(store)
    assert view.violation_count == 0
    assert any("run `provgraph check`" in n for n in view.notes)
    # marks given directly (the report passes its in-process check)
    marks = [Mark(v.focus, r.rule.id) for r in report.results for v in r.violations]
    assert whole_graph(store, marks).violation_count == 4


def test_missing_output_file_is_an_absent_file(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "plan.csv": "call_id,case,condition\nC1,s1,A\nC2,s1,B\n",
            "calls.jsonl": '{"call_id": "C1", "status": "ok", "output": "out/C1.txt"}\n'
            '{"call_id": "C2", "status": "ok", "output": "out/C2.txt"}\n',
            "out/C1.txt": "text\n",
        },
    )
    from conftest import ingest_bundle

    store, _, _ = ingest_bundle(root)
    view = whole_graph(store, marks=[])
    missing = by_class(view, "File", absent=True)
    assert missing.iri == "https://example.org/t/file/out/C2.txt"
    assert missing.state == PG + "Observed"


def test_expand_opens_a_group(tmp_path: Path) -> None:
    store, _ = example_store("flawed", tmp_path)
    view = whole_graph(store, expand=["planned call"])
    calls = {b.iri: b for b in view.boxes.values() if b.cls == PG + "PlannedCall" and not b.absent}
    assert sorted(calls) == [BASE + f"call/C00{i}" for i in range(1, 5)]
    assert calls[BASE + "call/C004"].violations == {"output-planned-without-terminal": 1}
    assert calls[BASE + "call/C001"].violations == {}
    assert calls[BASE + "call/C001"].title == "planned call\nC001"
    # arrows now end on single calls, still from the collapsed records
    counts = {view.boxes[a.head].iri: a.count for a in view.arrows if a.label == "pg:forCall"}
    assert counts[BASE + "call/C003"] == 2 and counts[BASE + "call/C001"] == 1
    # the same name as a class local name, and 'all'
    assert len(whole_graph(store, expand=["PlannedCall"]).boxes) == len(view.boxes)
    assert len(whole_graph(store, expand=["all"]).boxes) > len(view.boxes)


def test_expand_refuses_unknown_kinds_and_huge_groups(tmp_path: Path) -> None:
    store, _ = example_store("flawed", tmp_path)
    with pytest.raises(UsageError, match=r"--expand 'calls': no such kind of node; known kinds: .*Planned"):
        whole_graph(store, expand=["calls"])
    with pytest.raises(UsageError, match="would draw 5 nodes \\(limit 3\\)"):
        whole_graph(store, expand=["CallRecord"], max_nodes=3)


def test_nodes_with_several_types_or_their_own_state(tmp_path: Path) -> None:
    """The exact path: a node typed with a class and its subclass counts once, as the
    subclass; a node stating its own pg:state moves to that column."""
    store, _ = example_store("flawed", tmp_path)
    fast = whole_graph(store)
    extra = tmp_path / "extra.ttl"
    extra.write_text(
        f"""@prefix pg: <{PG}> .
        <{BASE}file/outputs/C001.txt> a pg:SourceFile .
        <{BASE}call/C001> pg:state pg:Released .
        """
    )
    load_turtle(store, extra)
    exact = whole_graph(store)
    files = by_class(exact, "File")
    assert files.count == 5  # C001.txt is now a source file
    assert by_class(exact, "SourceFile").count == 4
    planned = [b for b in exact.boxes.values() if b.cls == PG + "PlannedCall" and not b.absent]
    assert sorted((b.count, b.state) for b in planned) == [(1, PG + "Released"), (3, PG + "Intended")]

    # everything not touched by the extra triples is the same on both paths
    def records(view):
        return {(b.count, b.title, *b.facets) for b in view.boxes.values() if b.cls == PG + "CallRecord"}

    assert records(fast) == records(exact) == {(5, "5 call records", "5 ok")}


def test_subgraph_draws_given_nodes_one_box_each(tmp_path: Path) -> None:
    store, _ = example_store("flawed", tmp_path)
    record = BASE + "record/calls.jsonl/C002/1"
    nodes = [record, BASE + "call/C002", BASE + "file/outputs/C002.txt", BASE + "file/calls.jsonl"]
    edges = [
        (record, PG + "forCall", BASE + "call/C002"),
        (record, PG + "outputFile", BASE + "file/outputs/C002.txt"),
        (record, PG + "sourceFile", BASE + "file/calls.jsonl"),
    ]
    view = subgraph(store, nodes, edges, focus=record, title="lineage of C002")
    assert len(view.boxes) == 4 and len(view.arrows) == 3
    box = view.box_for(record)
    assert box.focus and box.violations == {"output-ok-without-output": 1}
    assert box.title == "call record\nC002"
    assert view.box_for(BASE + "file/calls.jsonl").title == "source file\ncalls.jsonl"
    text = dot.to_dot(view)
    assert "bold" in text and "lineage of C002" in text


def test_viz_draws_the_lineage_of_a_target(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    cli("-C", str(root), "ingest")
    cli("-C", str(root), "check")
    r = cli("-C", str(root), "viz", "calls.jsonl:2", "--format", "dot")
    assert r.code == 0, r.err
    (path,) = (root / ".provgraph" / "views").glob("lineage-*.dot")
    text = path.read_text()
    assert "lineage of calls.jsonl:2" in text
    assert "output-ok-without-output" in text  # the record's violation is marked
    assert "calls.jsonl" in text and "plan.csv" in text  # back to the source files
    r = cli("-C", str(root), "viz", "no-such-thing")
    assert r.code == 2 and "matches no node" in r.err and len(r.err.strip().splitlines()) == 1


def test_dot_text_is_styled_by_prov_kind_and_state(tmp_path: Path) -> None:
    store, _ = example_store("flawed", tmp_path)
    text = dot.to_dot(whole_graph(store))
    assert text == dot.to_dot(whole_graph(store))  # deterministic
    columns = [text.index(f'label="{c}"') for c in ("1 intended", "3 observed", "no state")]
    assert columns == sorted(columns)
    for shape in ("ellipse", "box", "house"):
        assert f'shape="{shape}"' in text
    assert 'peripheries="2"' in text and "dashed" in text and dot.VIOLATION in text
    assert "&#9888; output-planned-without-terminal (1)" in text
    assert "cluster_legend" in text
    # record -> planned call runs right to left in PROV terms: drawn with dir=back
    assert 'label="pg:forCall ×4"' in text and 'dir="back"' in text


@needs_dot
def test_render_svg_and_png(tmp_path: Path) -> None:
    store, _ = example_store("flawed", tmp_path)
    text = dot.to_dot(whole_graph(store))
    svg = dot.render(text, "svg")
    root = ET.fromstring(svg)
    groups = root.findall(".//{http://www.w3.org/2000/svg}g")
    classes = [g.get("class", "") for g in groups]
    assert sum(c.startswith("node") for c in classes) >= 10
    assert any("flagged" in c for c in classes)
    assert dot.render(text, "png").startswith(b"\x89PNG\r\n\x1a\n")


def test_render_without_dot_names_the_install_command(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", path_without_dot(tmp_path))
    with pytest.raises(MissingExtraError, match="apt-get install graphviz"):
        dot.render("digraph { a }", "svg")


@needs_dot
def test_viz_command_writes_dot_svg_png(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    cli("-C", str(root), "ingest")
    cli("-C", str(root), "check")
    r = cli("-C", str(root), "viz")
    assert r.code == 0, r.err
    views = root / ".provgraph" / "views"
    for suffix in ("dot", "svg", "png"):
        assert (views / f"graph.{suffix}").stat().st_size > 0
    assert "4 violations marked" in r.err
    out = str(tmp_path / "x.svg")
    r = cli("-C", str(root), "viz", "--expand", "CallRecord", "--format", "svg", "-o", out)
    assert r.code == 0 and (tmp_path / "x.svg").is_file() and (tmp_path / "x.dot").is_file()
    assert not (tmp_path / "x.png").exists()


def test_viz_command_without_dot_still_writes_the_dot_file(cli, tmp_path: Path, monkeypatch) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "clean")
    cli("-C", str(root), "ingest")
    monkeypatch.setenv("PATH", path_without_dot(tmp_path))
    r = cli("-C", str(root), "viz", "-o", str(tmp_path / "out" / "g"))
    assert r.code == 0
    assert (tmp_path / "out" / "g.dot").read_text().startswith("digraph provgraph {")
    assert not (tmp_path / "out" / "g.svg").exists()
    assert "apt-get install graphviz" in r.err
    # asking for a picture explicitly is an error once the DOT file is written
    r = cli("-C", str(root), "viz", "--format", "png", "-o", str(tmp_path / "out" / "h"))
    assert r.code == 2 and (tmp_path / "out" / "h.dot").is_file()


def test_viz_reports_usage_errors_in_one_line(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "clean")
    cli("-C", str(root), "ingest")
    r = cli("-C", str(root), "viz", "--expand", "nonsense")
    assert r.code == 2 and r.err.startswith("provgraph: error: --expand 'nonsense'")


def test_accounting_fixture_draws_its_groups(memory_store) -> None:
    load_turtle(memory_store, ACCOUNTING_TTL)
    view = whole_graph(memory_store, marks=[])
    labels = by_class(view, "CandidateLabelRow")
    assert labels.count == 4 and labels.state == PG + "Observed"
    assert by_class(view, "Statistic").state == PG + "Analyzed"
    assert by_class(view, "Claim").state == PG + "Reported"


def test_viz_with_a_store_but_no_bundle_writes_to_the_current_folder(
    cli, tmp_path: Path, monkeypatch
) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "clean")
    cli("-C", str(root), "ingest")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("PATH", path_without_dot(tmp_path))
    r = cli("--store", str(root / ".provgraph" / "store"), "viz", cwd=elsewhere)
    assert r.code == 0, r.err
    assert (elsewhere / "graph.dot").is_file()


def _drawn(view) -> tuple:
    boxes = sorted(
        (k, b.count, b.title, b.iri, b.state, tuple(b.facets), tuple(sorted(b.violations.items())))
        for k, b in view.boxes.items()
    )
    arrows = sorted((a.tail, a.head, a.predicate, a.count) for a in view.arrows)
    return boxes, arrows, sorted(view.notes)


def _exact(store, monkeypatch):
    """The same view on the exact path (per-node keys), which the fast path must reproduce."""
    from provgraph.views import whole

    with monkeypatch.context() as m:
        m.setattr(whole, "has_state_overrides", lambda store: True)
        return whole_graph(store)


def test_fast_counts_corrected_for_several_types_equal_the_exact_path(tmp_path: Path, monkeypatch) -> None:
    """Every file but one also typed as a source file (the file group keeps one member, which
    must be its sample), a record and a call typed twice (facets, arrows both ways): every
    box, facet, mark and arrow as the exact path gives."""
    store, _ = example_store("flawed", tmp_path)
    before = _drawn(whole_graph(store))
    files = sorted(
        r["f"].value
        for r in store.select(
            f"SELECT DISTINCT ?f WHERE {{ ?f a <{PG}File> FILTER NOT EXISTS {{ ?f a <{PG}SourceFile> }} }}"
        )
    )
    assert len(files) > 2
    lines = [f"<{f}> a pg:SourceFile ." for f in files[1:]]
    lines += [f"<{BASE}record/calls.jsonl/C002/1> a pg:PlannedCall .", f"<{BASE}call/C003> a pg:CallRecord ."]
    extra = tmp_path / "extra.ttl"
    extra.write_text(f"@prefix pg: <{PG}> .\n" + "\n".join(lines) + "\n")
    load_turtle(store, extra)
    fast, exact = whole_graph(store), _exact(store, monkeypatch)
    assert _drawn(fast) == _drawn(exact)
    assert _drawn(fast) != before
    kept = by_class(fast, "File")
    assert kept.count == 1 and kept.iri == files[0]


def test_fast_counts_on_dicom_files_equal_the_exact_path(tmp_path: Path, monkeypatch) -> None:
    """Real multi-typed nodes: DICOM files are pg:DicomFile and pg:File (the fixture pair of
    tests/fixtures/rules/pixel-image-without-rendering, DICOM written with pydicom)."""
    from conftest import ingest_bundle, rule_bundle

    from provgraph.lineage.gate import run_gate
    from provgraph.rules import load_rules
    from provgraph.views.keys import NodeKeys, drawn_graphs
    from provgraph.views.multityped import MultiTyped

    store, _, _ = ingest_bundle(rule_bundle("pixel-image-without-rendering", "flawed", tmp_path / "b"))
    run_gate(store, load_rules())
    keys = NodeKeys(vocabulary(store), frozenset(), exact=False)
    assert MultiTyped(store.within(drawn_graphs(store)), keys)  # the case the correction is for
    assert _drawn(whole_graph(store)) == _drawn(_exact(store, monkeypatch))


def test_whole_graph_leaves_out_the_checks_derived_views(tmp_path: Path) -> None:
    """After a check the store also holds its derived views (per-call evidence, pixel verdicts)
    and records; the picture draws the imports and the statistics only, and nothing the views
    point at shows up as "referenced, not in the graph"."""
    from conftest import ingest_bundle, rule_bundle

    from provgraph.lineage.gate import run_gate
    from provgraph.rules import load_rules
    from provgraph.store import catalog
    from provgraph.views.keys import drawn_graphs

    store, _, _ = ingest_bundle(rule_bundle("pixel-image-without-rendering", "clean", tmp_path / "b"))
    before = whole_graph(store)
    run_gate(store, load_rules())
    verdicts = f"ASK {{ ?v a <{PG}PixelVerdict> }}"
    assert store.ask(verdicts) and not store.within(drawn_graphs(store)).ask(verdicts)
    keys = {s.key for s in catalog.slots(store) if s.graph in drawn_graphs(store)}
    assert keys and all(k.startswith(("import:", "analysis:")) for k in keys)
    view = whole_graph(store)
    assert not [b.title for b in view.boxes.values() if b.cls == PG + "PixelVerdict"]
    assert _unmarked(view) == _unmarked(before)  # the check added nothing to the picture but marks


def _unmarked(view) -> tuple:
    boxes = sorted((k, b.count, b.title, b.absent, tuple(b.facets)) for k, b in view.boxes.items())
    return boxes, sorted((a.tail, a.head, a.predicate, a.count) for a in view.arrows)


def test_a_view_of_some_graphs_is_read_only(tmp_path: Path) -> None:
    from provgraph.views.keys import drawn_graphs

    store, _ = example_store("flawed", tmp_path)
    data = store.within(drawn_graphs(store))
    assert data.quad_count() < store.quad_count()
    with pytest.raises(TypeError, match="read-only"):
        data.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
