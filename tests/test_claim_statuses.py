"""Every number of every declared text with its claim status and the reason that decides it,
computed in one pass (provgraph.lineage.claims), over the two generated examples (the
radiology pilot examples/cxr_pilot and the LLM-reviewer benchmark examples/llm_review), each
as its flawed and its clean twin, ingested and checked through the real CLI.

The one-pass statuses must equal what `trace` gives each claim; the pilot's manuscript numbers
are pinned per status with their reasons; a number equal to another condition's statistic is
never retained on that coincidence; `provgraph lineage FILE` and the report list them all."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from examples_support import Bundle, generator, prepare

from provgraph.lineage import hubs
from provgraph.lineage.claims import claim_statuses, is_text, text_paths
from provgraph.lineage.gate import run_gate
from provgraph.lineage.model import STATUSES
from provgraph.lineage.trace import trace
from provgraph.rules import load_rules

cxr = generator("cxr_pilot")
review = generator("llm_review")


def _bundle(tmp_path_factory, gen, twin: str) -> Bundle:
    return prepare(tmp_path_factory.mktemp(gen.__name__) / twin, twin, gen.generate)


@pytest.fixture(scope="module")
def cxr_flawed(tmp_path_factory):
    bundle = _bundle(tmp_path_factory, cxr, "flawed")
    yield bundle
    bundle.close()


@pytest.fixture(scope="module")
def cxr_clean(tmp_path_factory):
    bundle = _bundle(tmp_path_factory, cxr, "clean")
    yield bundle
    bundle.close()


@pytest.fixture(scope="module")
def review_flawed(tmp_path_factory):
    bundle = _bundle(tmp_path_factory, review, "flawed")
    yield bundle
    bundle.close()


@pytest.fixture(scope="module")
def review_clean(tmp_path_factory):
    bundle = _bundle(tmp_path_factory, review, "clean")
    yield bundle
    bundle.close()


@pytest.mark.parametrize("name", ["cxr_flawed", "cxr_clean", "review_flawed", "review_clean"])
def test_one_pass_statuses_equal_the_trace_of_every_claim(name: str, request) -> None:
    bundle: Bundle = request.getfixturevalue(name)
    rows = claim_statuses(bundle.store)
    claims = bundle.count("SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a pg:Claim }")
    assert len(rows) == claims > 20
    assert {r.iri: r.status for r in rows} == {r.iri: trace(bundle.store, r.iri).status for r in rows}
    # the reason is specific: a limitation names its rule or evidence, a retained number what it agrees with
    assert all(r.reason for r in rows)
    for r in rows:
        if r.status == "retained":
            assert r.evidence and r.reason.startswith(
                ("agrees with", "matches", "made by", "the significance level")
            )
        elif r.rule:
            assert r.reason.startswith(f"{r.rule} (")
    # one text at a time gives the same rows as all texts at once
    by_path = [x for path in text_paths(bundle.store) for x in claim_statuses(bundle.store, path)]
    assert [(x.iri, x.status, x.reason) for x in by_path] == [(x.iri, x.status, x.reason) for x in rows]


def _table(rows) -> dict[tuple[str, str], tuple[str, str]]:
    """(file:line, number) -> (status, reason) for the bundle's own manuscript and README."""
    return {
        (f"{r.path}:{r.line}", r.text): (r.status, r.reason)
        for r in rows
        if r.path in ("README.md", "manuscript/main.tex", "tables/table2.md")
    }


def test_cxr_clean_manuscript_every_number_has_a_status_and_reason(cxr_clean: Bundle) -> None:
    rows = claim_statuses(cxr_clean.store)
    assert Counter(r.status for r in rows) == {"retained": 34, "unverifiable": 4}
    table = _table(rows)
    # Q agrees with the primary route's recomputation
    status, reason = table[("manuscript/main.tex:3", "121.95")]
    assert status == "retained" and reason.startswith(
        "agrees with its recomputation: statistic cochran_q = 121.954"
    )
    # a percentage stated over k/n stands on that k/n; a threshold on the alpha the plan declares
    assert table[("manuscript/main.tex:4", "66.7%")] == table[("manuscript/main.tex:4", "30/45")]
    assert table[("README.md:6", "46.7%")] == table[("README.md:6", "21/45")]
    assert table[("README.md:6", "0.05")] == (
        "retained",
        "the significance level the contract's analysis plan declares (alpha)",
    )
    # what stays unverifiable, and why (each a gap, not a wrong number):
    unverifiable = sorted((f"{r.path}:{r.line}", r.text) for r in rows if r.status == "unverifiable")
    assert unverifiable == [
        ("README.md:4", "300/300"),  # no statistic counts nonempty reports
        ("manuscript/main.tex:5", "0.05"),  # "below 0.05" is read with no name: not a threshold
        ("release/cxr-pilot-1.1.0.zip!/README.md:4", "300/300"),
        ("release/cxr-pilot-1.1.0.zip!/manuscript/main.tex:5", "0.05"),
    ]
    assert {r.reason for r in rows if r.status == "unverifiable"} == {
        "the number traces to no statistic, registry value or build record: nothing shows where it comes from"
    }


def test_cxr_flawed_manuscript_numbers_are_withdrawn_with_their_rule(cxr_flawed: Bundle) -> None:
    rows = claim_statuses(cxr_flawed.store)
    assert Counter(r.status for r in rows) == {"withdrawn": 33, "retained": 2, "unverifiable": 1}
    table = _table(rows)
    status, reason = table[("manuscript/main.tex:3", "123.02")]
    assert status == "withdrawn" and reason.startswith("release-stale-value (fail) on claim Q = 123.02")
    assert "current: 102.62" in reason
    # 71.1% is stated over the stale 32/45 and falls with it
    assert table[("manuscript/main.tex:4", "71.1%")] == table[("manuscript/main.tex:4", "32/45")]
    assert table[("manuscript/main.tex:4", "71.1%")][0] == "withdrawn"
    # the stale table is withdrawn through its build record
    assert table[("tables/table2.md:4", "0.05")][1].startswith("release-stale-artifact (fail)")
    # an archive member is a text of its own: `lineage ARCHIVE!/MEMBER` lists its numbers
    member = "release/reproducibility_bundle_REVISED.zip!/manuscript/main.tex"
    code, out = cxr_flawed.cli("lineage", "--no-check", "--format", "json", member)
    doc = json.loads(out)
    assert code == 0 and doc["counts"]["withdrawn"] == len(doc["numbers"]) == 7
    assert {n["path"] for n in doc["numbers"]} == {member}
    assert {n["rule"] for n in doc["numbers"]} == {"release-stale-value", "release-manifest-mismatch"}
    # the thresholds the plan declares are right in the flawed twin too
    assert sorted((f"{r.path}:{r.line}", r.text) for r in rows if r.status == "retained") == [
        ("README.md:6", "0.05"),
        ("manuscript/main.tex:4", "0.05"),
    ]


def test_a_number_equal_to_another_conditions_statistic_is_not_retained(tmp_path: Path) -> None:
    """The issue's "with [conditions] removed, lineage marked a wrong number retained": the
    flawed twin of examples/llm_review with no registry ([[release.values]]), and two sentences
    writing an F1 of 0.87: one for GPT-4o (recomputed 0.829), one naming no condition. 0.87 is
    Claude Opus 4.6's F1 (0.872): name and value alone matched it, so both read "retained".
    Now the first is bound to GPT-4o's F1 and withdrawn, the second is unverifiable. The Runs
    column, left to the binding (no ``columns = { Runs = "" }``), reads bind's note."""
    root = tmp_path / "flawed"
    review.generate(root, "flawed")
    contract = root / "provgraph.toml"
    text = contract.read_text(encoding="utf-8")
    text = re.sub(r"\[\[release\.values\]\]\n(?:[^\[\n][^\n]*\n)*\n?", "", text)
    contract.write_text(text.replace('columns = { Runs = "" }', ""), encoding="utf-8")  # bind's note
    readme = root / "README.md"
    readme.write_text(
        readme.read_text(encoding="utf-8")
        + "\nGPT-4o reached f1 = 0.87 on the 36 scripts.\n\nThe best reviewer reached f1 = 0.87.\n",
        encoding="utf-8",
    )
    bundle = prepare(root, "flawed", lambda r, t: None)  # already written: ingest and check it
    try:
        rows = [r for r in claim_statuses(bundle.store, "README.md") if r.statistic == "f1" and r.row is None]
        assert [r.text for r in rows] == ["0.87", "0.87"]
        gpt, unnamed = rows
        # Opus's F1 rounds to 0.87: it exists, and is what the old name+value edge matched
        opus = bundle.select(
            """SELECT ?v WHERE { ?s a pg:Statistic ; pg:statName "f1" ; pg:value ?v ;
                 pg:condition/pg:key "claude_opus_4_6" ; pg:testVariant "single-run" }"""
        )
        assert [round(float(r["v"]), 2) for r in opus] == [0.87]
        assert gpt.status == trace(bundle.store, gpt.iri).status == "withdrawn"
        assert gpt.rule == "analysis-claim-differs" and "recomputes to 0.83" in gpt.reason
        assert unnamed.status == trace(bundle.store, unnamed.iri).status == "unverifiable"
        assert unnamed.evidence is None
        assert not [e for e in trace(bundle.store, unnamed.iri).edges if "claude_opus_4_6" in e.target]
        # a cell the binding could not bind says why (bind's note), and is unverifiable
        runs = [r for r in claim_statuses(bundle.store, "README.md") if r.column_label == "Runs"]
        assert len(runs) == 7 and {(r.status, r.reason) for r in runs} == {
            ("unverifiable", "not bound to a recomputation: column 'Runs' names no statistic")
        }
    finally:
        bundle.close()


def test_lineage_file_lists_every_number_of_a_text(review_flawed: Bundle) -> None:
    rows = claim_statuses(review_flawed.store, "README.md")
    counts = Counter(r.status for r in rows)
    assert counts["withdrawn"] >= 3 and counts["retained"] >= 20
    code, out = review_flawed.cli("lineage", "--no-check", "README.md")
    assert code == 0
    lines = out.splitlines()
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    assert lines[0] == f"README.md: {len(rows)} numbers ({summary})"
    # one entry per number: file:line:col, as written, the table cell's row and column labels
    listed = [x for x in lines if re.match(r"^  README\.md:\d+:\d+  ", x)]
    assert len(listed) == len(rows)
    assert "  README.md:13:16  94%  [row 'GPT-4o' / column 'Detection rate']" in listed
    assert "      withdrawn: analysis-claim-differs (fail)" in out
    assert (
        "      unverifiable: [release.bind] leaves column 'Runs' unbound: no recomputation is declared" in out
    )
    code, out = review_flawed.cli("lineage", "--no-check", "--format", "json", "README.md")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {s: counts[s] for s in STATUSES}
    assert [n["iri"] for n in doc["numbers"]] == [r.iri for r in rows]
    keys = {"iri", "path", "line", "column", "text", "value", "statistic", "row", "group", "column_label"}
    assert set(doc["numbers"][0]) == keys | {"status", "reason", "rule", "evidence"}
    gpt = next(n for n in doc["numbers"] if n["line"] == 13 and n["column"] == 16)
    assert (gpt["row"], gpt["column_label"], gpt["text"]) == ("GPT-4o", "Detection rate", "94%")
    # FILE:LINE:COL names that one number; the same line and a column with no number, nothing
    code, out = review_flawed.cli("lineage", "--no-check", "--format", "json", "README.md:13:16")
    assert code == 0 and [m["root"] for m in json.loads(out)["matches"]] == [gpt["iri"]]
    code, _ = review_flawed.cli("lineage", "--no-check", "README.md:13:15")
    assert code == 1
    # a file that writes no numbers keeps its file lineage
    assert is_text(review_flawed.store, "README.md") and not is_text(review_flawed.store, "plan.csv")
    code, out = review_flawed.cli("lineage", "--no-check", "plan.csv")
    assert code == 0 and "status:" in out


def test_report_claims_table_groups_numbers_by_file_with_show_all(
    review_flawed: Bundle, tmp_path: Path
) -> None:
    rows = claim_statuses(review_flawed.store)
    assert len(rows) > 25
    out = tmp_path / "report.html"
    code, _ = review_flawed.cli("report", "-o", str(out), "--no-record")
    assert code == 0
    html = out.read_text(encoding="utf-8")
    start = html.index('<section id="claims">')
    section = html[start : html.index("</section>", start)]
    files = re.findall(r'<details class="claims-file"( open)? data-path="([^"]+)">', section)
    assert files == [(" open", "README.md")]  # a file with a withdrawn number opens
    counts = Counter(r.status for r in rows)
    assert f"{len(rows)} numbers: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) in section
    assert f"<summary>show all ({len(rows) - 25} more)</summary>" in section  # 25 shown first
    assert Counter(re.findall(r"<td class='status-(\w+)'>", section)) == counts
    differs = sum(r.rule == "analysis-claim-differs" for r in rows)
    assert differs >= 3 and section.count("analysis-claim-differs (fail)") == differs
    assert "<td>GPT-4o / Detection rate</td>" in section


def test_a_lineage_over_the_size_limit_is_unverifiable_as_in_a_trace(cxr_clean: Bundle) -> None:
    """With the node limit at 200, the pilot's numbers whose lineage reaches the recomputed
    statistics (about 10,000 nodes) are cut by a trace, and counted over the limit here."""
    rows = claim_statuses(cxr_clean.store, max_nodes=200)
    traced = {r.iri: trace(cxr_clean.store, r.iri, max_nodes=200) for r in rows}
    assert {r.iri: r.status for r in rows} == {iri: lin.status for iri, lin in traced.items()}
    cut = [r for r in rows if traced[r.iri].truncated]
    assert len(cut) == 6 and {(r.text, r.status) for r in cut} == {("121.95", "unverifiable")}  # Q, 6 texts
    assert all(r.reason == "the lineage has more than 200 nodes; a trace cuts it" for r in cut)
    assert not [r for r in rows if not traced[r.iri].truncated and "more than 200 nodes" in r.reason]


def test_a_sampled_hub_gives_the_statuses_of_the_full_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hub above the threshold (the pilot's cell grid, forced at 50 sources as
    tests/test_lineage_hubs.py does) is sampled by the one pass as by a trace, and what lies
    upstream of it (recorded by the check) still decides the statuses: the same as unsampled.
    The clean twin: its Q claims reach the grid through the statistic (the flawed twin's stale
    Q reaches only its superseded registry value)."""
    bundle = prepare(tmp_path / "clean", "clean", cxr.generate)
    try:
        full = {r.iri: (r.status, r.reason) for r in claim_statuses(bundle.store)}
        monkeypatch.setattr(hubs, "HUB_THRESHOLD", 50)
        run_gate(bundle.store, load_rules())  # the check records what lies upstream of the grid
        sampled = claim_statuses(bundle.store)
        assert {r.iri: r.status for r in sampled} == {iri: s for iri, (s, _) in full.items()}
        assert {r.iri: r.status for r in sampled} == {
            r.iri: trace(bundle.store, r.iri).status for r in sampled
        }
        assert {r.text for r in sampled if trace(bundle.store, r.iri).sampled} == {"121.95"}
    finally:
        bundle.close()
