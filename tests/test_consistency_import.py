"""Consistency checks through the real text import: check nodes, rule focus and messages.

Shapes: the Replication Trap README table (github.com/jheuer/replication-trap, README.md, vendored
in tests/fixtures/rules/release-metrics-inconsistent/, see tests/fixtures/make_consistency.py);
a LaTeX ``tabular`` and APA test reports as statcheck reads them (statcheck README:
"t(28) = 2.2, p < .05"); a CSV results file of confusion counts as a harness writes one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ingest_bundle, rule_bundle

from provgraph.ingest.testing import write_bundle
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

PG = "PREFIX pg: <https://w3id.org/provgraph/ns#> "
CHECKS = PG + (
    "SELECT ?kind ?ok ?msg ?line (COUNT(DISTINCT ?read) AS ?reads) (SAMPLE(?ftext) AS ?focus) WHERE { "
    "?c a pg:ConsistencyCheck ; pg:checkKind ?kind ; pg:consistent ?ok ; pg:checkMessage ?msg ; "
    "pg:sourceLine ?line . OPTIONAL { ?c pg:readsClaim ?read } "
    "OPTIONAL { ?c pg:focusClaim ?f . ?f pg:text ?ftext } } GROUP BY ?kind ?ok ?msg ?line ORDER BY ?line"
)
CONTRACT = """[project]
name = "t"
base_iri = "https://example.org/t/"

[release]
include = ["*"]
texts = ["*.md", "*.tex", "*.csv", "*.tsv"]
{bind}
"""
RULES = ("release-metrics-inconsistent", "release-mean-grim-inconsistent", "release-test-p-inconsistent")


def checks(root: Path) -> list[dict[str, str]]:
    store, _, _ = ingest_bundle(root)
    return [{k: v.value for k, v in row.items()} for row in store.select(CHECKS)]


def violations(root: Path) -> dict[str, list[tuple[str, str]]]:
    store, _, _ = ingest_bundle(root)
    report = run_gate(store, [r for r in load_rules() if r.id in RULES], explicit=True, record=False)
    return {
        r.rule.id: [(report.short(v.focus), v.message) for v in r.violations]
        for r in report.results
        if r.violations
    }


def test_replication_trap_table_is_checked_row_by_row(tmp_path: Path) -> None:
    """Ten condition rows over 18 / 18 scripts: nine consistent, "GPT-4o + taxonomy" not, and
    the check reads the row's three claims and reports at its F1."""
    rows = [
        c
        for c in checks(rule_bundle("release-metrics-inconsistent", "flawed", tmp_path / "b"))
        if c["kind"] == "metrics"
    ]
    assert len(rows) == 10 and all(c["reads"] == "3" for c in rows)
    bad = [c for c in rows if c["ok"] == "false"]
    assert len(bad) == 1 and bad[0]["focus"] == "0.90"
    assert "GPT-4o + taxonomy: DR 94%, FPR 17%, F1 0.90 over 18 positive / 18 negative" in bad[0]["msg"]
    assert "TP=17 FN=1 FP=3 TN=15 print F1 0.89 for 0.90" in bad[0]["msg"]
    clean = checks(rule_bundle("release-metrics-inconsistent", "clean", tmp_path / "c"))
    assert all(c["ok"] == "true" for c in clean)


def test_latex_table_and_sentence_reports(tmp_path: Path) -> None:
    """A tabular row whose FPR no integer count over 20 negatives gives, and a $\\chi^2$ report
    whose p its statistic does not give; both reported at the wrong number with file:line."""
    tex = "\n".join(
        [
            r"\begin{table}",
            r"\caption{Detection of flawed scripts (20 flawed, 20 sound)}",
            r"\begin{tabular}{lrrr}",
            r"Condition & DR (\%) & FPR (\%) & F1 \\",
            r"\hline",
            r"Baseline & 90 & 12 & 0.86 \\",
            r"Taxonomy & 95 & 10 & 0.93 \\",
            r"\end{tabular}",
            r"\end{table}",
            r"The taxonomy lowered false positives, $\chi^2(1) = 4.21$, $p = 0.01$.",
            r"Detection did not differ, $F(4, 85) = 1.12$, $p = 0.35$.",
        ]
    )
    bind = "[release.bind]\npositives = 20\nnegatives = 20\n"
    root = write_bundle(tmp_path / "b", {"paper.tex": tex + "\n"}, CONTRACT.format(bind=bind))
    found = violations(root)
    (metric,) = found["release-metrics-inconsistent"]
    assert metric[0] == "claim/paper.tex/6/12/1"  # FPR 12% of 20 is no whole count: 2/20 = 10%, 3/20 = 15%
    assert metric[1].startswith(
        "paper.tex line 6: Baseline: DR 90, FPR 12, F1 0.86 over 20 positive / 20 negative"
    )
    (test,) = found["release-test-p-inconsistent"]
    assert test[0] == "claim/paper.tex/10/0.01/1"
    assert "recomputed p = 0.04019" in test[1] and test[1].startswith("paper.tex line 10: \\chi^2(1) = 4.21")


@pytest.mark.parametrize("name", ["results.csv", "results.tsv"])
def test_counts_in_a_csv_results_file(tmp_path: Path, name: str) -> None:
    """A CSV (or TSV, as pandas ``to_csv(sep="\\t")`` writes one) of per-condition counts and
    rates: the row's own TP..TN are the sizes."""
    csv = "condition,TP,FN,FP,TN,precision,F1\nbaseline,16,2,5,13,0.76,0.82\ntaxonomy,17,1,3,15,0.85,0.90\n"
    if name.endswith(".tsv"):
        csv = csv.replace(",", "\t")
    root = write_bundle(tmp_path / "b", {name: csv}, CONTRACT.format(bind=""))
    (found,) = violations(root)["release-metrics-inconsistent"]
    assert found[0] == f"claim/{name}/3/0.90/1"
    assert "F1 0.89 for 0.90" in found[1]
    sound = write_bundle(tmp_path / "c", {name: csv.replace("0.90", "0.89")}, CONTRACT.format(bind=""))
    assert violations(sound) == {}


def test_mean_of_integer_data_only_when_declared(tmp_path: Path) -> None:
    table = "| Reviewer | n | Mean rating |\n|---|---|---|\n| A | 28 | 5.19 |\n"
    plain = write_bundle(tmp_path / "a", {"README.md": table}, CONTRACT.format(bind=""))
    assert violations(plain) == {}
    declared = CONTRACT.format(bind='[release.bind]\ninteger_data = ["Mean rating"]\n')
    root = write_bundle(tmp_path / "b", {"README.md": table}, declared)
    ((focus, message),) = violations(root)["release-mean-grim-inconsistent"]
    assert focus == "claim/README.md/3/5.19/1" and "nearest 145/28 = 5.18" in message


def test_two_conditions_in_one_row_are_not_checked(tmp_path: Path) -> None:
    """One statistic in two columns: the row is two conditions, not one metric tuple."""
    table = "| Model | DR | DR | F1 |\n|---|---|---|---|\n| A | 94% | 50% | 0.10 |\n"
    bind = "[release.bind]\npositives = 18\nnegatives = 18\n"
    root = write_bundle(tmp_path / "b", {"README.md": table}, CONTRACT.format(bind=bind))
    assert [c for c in checks(root) if c["kind"] == "metrics"] == []


def test_mean_in_a_sentence_with_its_n(tmp_path: Path) -> None:
    """ "mean rating = 5.19 (n = 28)": the declared name written before the mean, n on the line."""
    text = "Reviewers gave a mean rating = 5.19 (n = 28) and a mean rating = 5.18, n = 28.\n"
    declared = CONTRACT.format(bind='[release.bind]\ninteger_data = ["Mean rating"]\n')
    root = write_bundle(tmp_path / "b", {"README.md": text}, declared)
    ((focus, message),) = violations(root)["release-mean-grim-inconsistent"]
    assert focus == "claim/README.md/1/5.19/1" and message.startswith("README.md line 1: mean 5.19 of 28")


def test_test_reports_across_table_cells(tmp_path: Path) -> None:
    """A table of tests (statistic, df and p in their own columns), as papers print omnibus and
    pairwise results: each row is one report, judged like a sentence."""
    table = (
        "| Comparison | χ2 | df | p |\n|---|---|---|---|\n"
        "| all conditions | 182.29 | 9 | <0.001 |\n"
        "| GPT-4o vs taxonomy | 4.21 | 1 | 0.01 |\n"
        "| Claude vs taxonomy | 4.21 | 1 | 0.040 |\n"
    )
    root = write_bundle(tmp_path / "b", {"README.md": table}, CONTRACT.format(bind=""))
    ((focus, message),) = violations(root)["release-test-p-inconsistent"]
    assert focus == "claim/README.md/4/0.01/1"
    assert message.startswith(
        "README.md line 4: chi2(1) = 4.21, p = 0.01: inconsistent, recomputed p = 0.04019"
    )
    assert [c["ok"] for c in checks(root) if c["kind"] == "test-p"] == ["true", "false", "true"]


def test_replication_trap_readme_and_research_note(tmp_path: Path) -> None:
    """The real excerpts vendored by the tables tests (tests/fixtures/replication_trap/tables,
    see its ORIGIN.md): the README table and the research note's LaTeX table both write
    "GPT-4o + taxonomy" as 94% / 17% / 0.90; each fails at its F1 and no other row does."""
    trap = Path(__file__).parent / "fixtures" / "replication_trap" / "tables"
    files = {
        "README.md": (trap / "README_results.md").read_text(encoding="utf-8"),
        "research_note.tex": (trap / "main_table.tex").read_text(encoding="utf-8")
        + (trap / "category_table.tex").read_text(encoding="utf-8"),
    }
    bind = "[release.bind]\npositives = 18\nnegatives = 18\n"
    root = write_bundle(tmp_path / "b", files, CONTRACT.format(bind=bind))
    found = violations(root)
    assert set(found) == {"release-metrics-inconsistent"}
    assert sorted(focus for focus, _ in found["release-metrics-inconsistent"]) == [
        "claim/README.md/11/0.90/1",
        "claim/research_note.tex/23/0.90/1",
    ]
    metrics = [c for c in checks(root) if c["kind"] == "metrics"]
    assert len(metrics) == 20 and sum(c["ok"] == "false" for c in metrics) == 2


def test_a_report_in_a_cell_and_across_cells_are_two_checks(tmp_path: Path) -> None:
    """A row that writes a report in one cell and another across its columns: two check nodes."""
    table = "| Note | χ2 | df | p |\n|---|---|---|---|\n| χ2(1) = 4.21, p = .01 | 4.21 | 1 | 0.040 |\n"
    root = write_bundle(tmp_path / "b", {"README.md": table}, CONTRACT.format(bind=""))
    assert sorted(c["ok"] for c in checks(root) if c["kind"] == "test-p") == ["false", "true"]


def test_percent_columns_against_the_rows_denominators(tmp_path: Path) -> None:
    """``release-inconsistent-denominator`` reads a % column's "17 (8/45)" (no % sign) and a
    percentage over its row's n; a correct one and the metric tuple's own rates stay silent."""
    table = (
        "| Model | n | Agreement (%) | Flagged (%) |\n|---|---|---|---|\n"
        "| A | 45 | 18 (8/45) | 17.8 |\n"
        "| B | 45 | 17 (8/45) | 17.0 |\n"
    )
    root = write_bundle(tmp_path / "b", {"README.md": table}, CONTRACT.format(bind=""))
    store, _, _ = ingest_bundle(root)
    report = run_gate(
        store, [r for r in load_rules() if r.id == "release-inconsistent-denominator"], record=False
    )
    found = sorted((report.short(v.focus), v.message) for r in report.results for v in r.violations)
    no_count = "17.0% of the row's n = 45: no whole count out of 45 gives it (nearest 8/45 = 17.78%)"
    assert found == [
        ("claim/README.md/4/17.0/1", "README.md line 4: " + no_count),
        (
            "claim/README.md/4/8%2F45/1",
            "README.md line 4: 17% does not equal 8/45 (17.78%)",
        ),  # "17" is no claim
    ]
