"""`provgraph report`: the gate, violations and their anchors, accounting panels present or
absent, reported vs recomputed statistics, claims, and that the page fetches nothing."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import CONTRACT, copy_bundle, ingest_bundle, rule_bundle, write_bundle
from viewtools import (
    ACCOUNTING_TTL,
    EXAMPLE,
    example_store,
    generated_flawed_bundle,
    load_turtle,
    path_without_dot,
)

from provgraph.lineage.gate import run_gate
from provgraph.report import accounting
from provgraph.report.accounting import StatRow
from provgraph.report.html import ReportOptions, build_report
from provgraph.report.markup import anchor
from provgraph.rules import load_rules
from provgraph.views import dot

HAS_DOT = dot.dot_program() is not None


class Page(HTMLParser):
    """Every tag with its attributes, and the text of the page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}

    def links(self) -> list[str]:
        return [a["href"] for t, a in self.tags if t == "a" and a.get("href")]

    def plain(self) -> str:
        return " ".join(" ".join(self.text).split())


def assert_self_contained(html: str) -> None:
    page = Page(html)
    tags = {t for t, _ in page.tags}
    assert not tags & {"link", "iframe", "img", "object", "embed"}, tags
    # one inline script (the filter), which loads nothing
    scripts = [a for t, a in page.tags if t == "script"]
    assert scripts == [{}], scripts
    (code,) = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert not re.search(r"fetch\(|XMLHttpRequest|import\(|https?:|WebSocket|\.src\s*=", code)
    for _, attrs in page.tags:
        for name in ("src", "href", "xlink:href", "srcset", "action"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), (name, value)
    assert re.findall(r"url\((?!#)", html) == [] and "@import" not in html  # only in-page references
    ids = [a["id"] for _, a in page.tags if a.get("id")]
    assert len(ids) == len(set(ids)), "ids must be unique across the inline SVGs"


def test_report_of_the_flawed_example(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    cli("-C", str(root), "ingest")
    r = cli("-C", str(root), "report")
    assert r.code == 0, r.err
    out = root / ".provgraph" / "report.html"
    assert f"wrote {out}" in r.err and "gate: FAIL" in r.err
    html = out.read_text()
    assert_self_contained(html)
    page = Page(html)
    text = page.plain()
    assert "GATE FAIL" in text
    assert re.search(r"gate: FAIL \(4 blocking rules violated\b.*; 4 violations\)", text), text
    for rule in (
        "output-planned-without-terminal",
        "output-ok-without-output",
        "output-duplicate-terminal",
        "output-unplanned-record",
    ):
        assert f"rule-{rule}" in page.ids()
    assert "call C002 is logged ok but its output outputs/C002.txt is empty (0 bytes)" in text
    assert "Remedy: Treat the call as failed" in text
    # every focus node links to its own section, and every section is linked
    focus_links = {h[1:] for h in page.links() if h.startswith("#node-")}
    sections = {i for i in page.ids() if i.startswith("node-")}
    assert focus_links == sections and len(sections) == 4
    assert anchor("https://example.org/output-gate-flawed/call/C004") in sections
    # accounting: the output panel is drawn, the others say what is missing
    assert "2 nonempty of 4 planned" in text
    assert "+ 1 record for calls that were never planned" in text
    assert "Not in the graph: no DICOM view positions" in text
    assert "Not in the graph: no recomputed cell grid" in text
    assert "Not in the graph: no reported values" in text
    assert "Not in the graph: no claims" in text
    assert re.search(r'<div class="panel" id="panel-outputs">.*?<svg role="img"', html, re.S)
    if HAS_DOT:  # one lineage picture for the one clause that fired, not the whole graph
        assert re.findall(r'<figure class="picture" id="picture-(\w+)"><svg role="img"', html) == ["output"]
        assert 'id="graph-picture"' not in html
    # the failing clause is open; its rows read as names, not IRIs
    assert re.search(
        r'<details class="clause" id="clause-output" data-clause="output"\s+data-open="1" open>', html
    )
    assert ">C004</a>" in html
    # the report records the check it ran, as `provgraph check` does
    q = cli("-C", str(root), "query", "--format", "csv", "SELECT ?v WHERE { ?v a pg:Violation }")
    assert len(q.out.strip().splitlines()) == 5


def test_report_of_the_clean_example(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "clean")
    cli("-C", str(root), "ingest")
    r = cli("-C", str(root), "report", "-o", str(tmp_path / "clean.html"), "--no-record")
    assert r.code == 0
    html = (tmp_path / "clean.html").read_text()
    assert_self_contained(html)
    text = Page(html).plain()
    assert "GATE PASS" in text and "No rule found a violation." in text
    assert "4 nonempty of 4 planned" in text
    q = cli("-C", str(root), "query", "--format", "csv", "SELECT ?c WHERE { ?c a pg:Check }")
    assert q.out.strip() == "c"  # --no-record left the store alone


def test_report_without_graphviz_explains_and_keeps_the_dot_source(cli, tmp_path: Path, monkeypatch) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    cli("-C", str(root), "ingest")
    monkeypatch.setenv("PATH", path_without_dot(tmp_path))
    r = cli("-C", str(root), "report", "-o", str(tmp_path / "r.html"))
    assert r.code == 0
    text = Page((tmp_path / "r.html").read_text()).plain()
    assert "apt-get install graphviz" in text  # where the output clause's picture would be
    assert "GATE FAIL" in text and "Remedy: Treat the call as failed" in text


def test_panels_drawn_from_synthesized_clause_data(tmp_path: Path) -> None:
    store, check = example_store("flawed", tmp_path)
    load_turtle(store, ACCOUNTING_TTL)
    html = build_report(store, check)
    assert_self_contained(html)
    page = Page(html)
    text = page.plain()
    assert "3 PA, 2 AP, 1 LL, 1 undocumented" in text
    assert "60.0% globally complete: 3 complete, 2 incomplete" in text
    assert "under all 2 conditions; 5 blocks in all" in text
    # rows are labelled with their variant; recomputed values shown two digits past the reported
    row = "cochran_q (asymptotic) 154.73 420 182.2900 369 globally-complete asymptotic +17.8% differs"
    assert row in text
    assert "mcnemar_p (exact) 0.031 — 0.03120 — globally-complete exact +0.6% agrees" in text
    assert "detection_rate 0.9 — — — — — — not recomputed" in text
    assert "paper.md:12" in text and "paper.md:30" in text
    # lineage decides claim statuses: these claims reach no recorded check, so cannot stand yet
    assert text.count("unverifiable") >= 2
    # each claim's status comes with the reason that decides it
    assert "the number traces to no statistic, registry value or build record" in text
    for panel in ("panel-views", "panel-outputs", "panel-blocks", "panel-statistics", "panel-claims"):
        assert re.search(rf'<div class="panel" id="{panel}">.*?<svg role="img"', html, re.S), panel


def test_options_limit_violations_and_leave_out_the_graph(tmp_path: Path) -> None:
    root = generated_flawed_bundle(tmp_path / "gen")
    store, _, _ = ingest_bundle(root)
    check = run_gate(store, load_rules(), record=False)
    html = build_report(store, check, ReportOptions(limit=1, graph=False))
    text = Page(html).plain()
    assert "… and 2 more not in this page (run provgraph report --all-violations to list them)." in text
    assert "<figure" not in html  # no lineage pictures


def test_first_violations_shown_and_the_rest_behind_show_all(tmp_path: Path) -> None:
    # 13 more outputs logged ok but left empty (16 in all): the first 10 in the rule's table,
    # the other 6 behind its "show all"
    root = generated_flawed_bundle(tmp_path / "gen", calls=60)
    for i in range(10, 23):
        (root / "outputs" / f"C{i:03d}.txt").write_bytes(b"")
    store, _, _ = ingest_bundle(root)
    check = run_gate(store, load_rules(), record=False)
    (rule,) = [r for r in check.results if r.rule.id == "output-ok-without-output"]
    n = len(rule.violations)
    assert n == 16
    html = build_report(store, check, ReportOptions(graph=False))
    block = re.search(r'<div class="rule fail" id="rule-output-ok-without-output".*?\n</div>', html, re.S)[0]
    first, _, rest = block.partition('<details class="more">')
    assert first.count('<tr class="v">') == 10
    assert rest.startswith(f"<summary>show all ({n - 10} more)</summary>")
    assert rest.count('<tr class="v">') == n - 10


def test_output_states_of_a_generated_bundle(tmp_path: Path) -> None:
    store, _, _ = ingest_bundle(generated_flawed_bundle(tmp_path / "gen", calls=30))
    states = accounting.output_states(store)
    assert states.counts == {
        "nonempty": 25,
        "zero-byte": 2,
        "missing": 1,
        "failed": 1,
        "no terminal record": 1,
    }
    assert states.planned == 30 and states.unplanned_records == 1
    assert accounting.view_positions(store) is None
    assert accounting.blocks(store) is None
    assert accounting.statistics(store) is None
    assert accounting.claims(store) is None


def test_accounting_from_the_synthesized_triples(memory_store) -> None:
    load_turtle(memory_store, ACCOUNTING_TTL)
    assert accounting.output_states(memory_store) is None
    assert accounting.view_positions(memory_store) == {"PA": 3, "AP": 2, "LL": 1, "undocumented": 1}
    b = accounting.blocks(memory_store)
    assert (b.conditions, b.total, b.complete, b.incomplete) == (2, 5, 3, 2)
    assert b.by_conditions == {0: 1, 1: 1, 2: 3}
    stats = accounting.statistics(memory_store)
    assert [(r.name, r.agrees) for r in stats.rows] == [
        ("cochran_q", False),
        ("detection_rate", None),
        ("mcnemar_p", True),
    ]
    assert stats.recomputed_only == 0
    claims = accounting.claims(memory_store)
    assert [(c.value, c.path, c.line, c.status) for c in claims] == [
        ("154.73", "paper.md", 12, "unverifiable"),
        ("0.9", "paper.md", 30, "unverifiable"),
    ]


@pytest.mark.parametrize(
    ("reported", "recomputed", "rn", "sn", "agrees", "difference"),
    [
        ("154.73", "182.29", 420, 369, False, (182.29 - 154.73) / 154.73),
        ("0.031", "0.0312", None, None, True, (0.0312 - 0.031) / 0.031),
        ("0.031", "0.0316", None, None, False, (0.0316 - 0.031) / 0.031),
        ("26", "26", 45, 45, True, 0.0),
        ("26", "26", 45, 44, False, 0.0),
        ("0", "0", None, None, True, 0.0),
        ("n/a", "1.0", None, None, None, None),
    ],
)
def test_stat_row_agreement_at_written_precision(reported, recomputed, rn, sn, agrees, difference) -> None:
    row = StatRow("r", "x", reported, rn, "s", recomputed, sn)
    assert row.agrees is agrees
    assert row.difference == pytest.approx(difference) if difference is not None else row.difference is None


def test_report_with_a_store_but_no_bundle(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "clean", tmp_path / "clean")
    cli("-C", str(root), "ingest")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = cli("--store", str(root / ".provgraph" / "store"), "report", "--no-graph", cwd=elsewhere)
    assert r.code == 0, r.err
    assert "GATE PASS" in (elsewhere / "provgraph-report.html").read_text()


def test_report_before_ingest_is_a_usage_error(cli, tmp_path: Path) -> None:
    from conftest import write_bundle

    root = write_bundle(tmp_path / "empty", {})
    r = cli("-C", str(root), "report")
    assert r.code == 2
    assert r.err.strip() == (
        "provgraph: error: no contract in the store: run `provgraph ingest` on the bundle first"
    )


def test_view_positions_count_one_level_only(memory_store, tmp_path: Path) -> None:
    # The same two studies described by their DICOM headers and by the cohort manifest: the
    # panel counts the images (the most direct evidence), never both levels.
    ttl = tmp_path / "views.ttl"
    ttl.write_text(
        "@prefix pg: <https://w3id.org/provgraph/ns#> .\n"
        "<urn:x:dcm1> a pg:DicomFile ; pg:viewPosition 'PA' .\n"
        "<urn:x:dcm2> a pg:DicomFile ; pg:viewPosition '' .\n"
        "<urn:x:case1> a pg:CohortEntry ; pg:viewPosition 'PA' .\n"
        "<urn:x:case2> a pg:CohortEntry ; pg:viewPosition 'AP' .\n"
    )
    load_turtle(memory_store, ttl)
    assert accounting.view_positions(memory_store) == {"PA": 1, "undocumented": 1}


def test_view_positions_count_one_source_not_every_table(tmp_path: Path) -> None:
    # the same two studies, their views written by the MIMIC metadata table and the manifest
    root = write_bundle(
        tmp_path / "b",
        {
            "mimic-cxr-2.0.0-metadata.csv": "dicom_id,subject_id,study_id,ViewPosition\n"
            "d1,10000001,50000001,PA\nd2,10000002,50000002,\n",
            "cohort.csv": "case_key,patient_key,view,inclusion\n50000001,10000001,PA,include\n"
            "50000002,10000002,,include\n",
        },
        contract=CONTRACT,
    )
    store, _, _ = ingest_bundle(root)
    assert accounting.view_positions(store) == {"PA": 1, "undocumented": 1}


def test_blocks_come_from_the_keyed_matrix_once_statistics_are_recomputed(tmp_path: Path) -> None:
    from provgraph.stats.materialize import refresh

    store, _, _ = ingest_bundle(rule_bundle("analysis-reported-differs", "clean", tmp_path / "b"))
    assert accounting.blocks(store) is None  # the blocks are counted by the statistics engine
    refresh(store)
    after = accounting.blocks(store)
    # 6 cases x 3 findings x 3 conditions; s4/Pneumonia's reference is excluded, s2/Edema has no B label
    assert (after.total, after.conditions, after.complete) == (18, 3, 16)
    assert after.by_conditions == {0: 1, 2: 1, 3: 16}


def test_readable_names_decode_iris_and_name_numbers(memory_store, tmp_path: Path) -> None:
    from provgraph.report.names import readable_names

    base = "https://example.org/p/"
    ttl = tmp_path / "names.ttl"
    ttl.write_text(
        "@prefix pg: <https://w3id.org/provgraph/ns#> .\n"
        f"<{base}project> a pg:Project ; pg:baseIri '{base}' .\n"
        f"<{base}claim/README.md/6/20%2F45/1> a pg:Claim ; pg:value '20/45' ; "
        "pg:statName 'mcnemar_significant' .\n"
        f"<{base}file/a.csv> a pg:SourceFile ; pg:path 'a.csv' .\n"
    )
    load_turtle(memory_store, ttl)
    iris = [
        f"{base}claim/README.md/6/20%2F45/1",
        f"{base}file/a.csv",
        f"{base}extraction/labels%2Fcache.jsonl/outputs%2Fa%2F1.txt",
        "urn:x:name%3Dq",
    ]
    assert readable_names(memory_store, iris, base) == {
        iris[0]: "20/45 (mcnemar_significant)",
        iris[1]: "a.csv",
        iris[2]: "extraction/labels/cache.jsonl/outputs/a/1.txt",
        iris[3]: "urn:x:name=q",
    }
