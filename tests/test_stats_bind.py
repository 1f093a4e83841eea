"""Binding the texts' numbers to recomputed statistics: the row-label matcher, the reading of a
written number as its statistic means it, and registry references resolved by their facets
whatever their IRI spelling.

The labels are the README table rows of the Replication Trap benchmark's public results
(github:seeds/002 as examples/llm_review/generate.py writes them: "Claude Sonnet 4.6",
"Claude Sonnet 4.6 + taxonomy", "Claude Sonnet 4.6, 3 runs (majority)") against its results
file keys (``results/<key>_reviews.json``). The registry reference is bench/bundles.py's
(``statistic/cochran_q/globally-complete``), resolved on a real 10^3-call bundle.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import REPO
from examples_support import run_cli

from provgraph.stats.bind import Written, bind_claims
from provgraph.stats.refs import facets, resolve
from provgraph.stats.rowmatch import match_condition, named_conditions, tokens, words_fields, written_value
from provgraph.stats.statistic import Stat, StatIndex

KEYS = {
    k: []
    for k in (
        "claude_sonnet_4_6",
        "claude_sonnet_4_6_with_taxonomy",
        "claude_opus_4_6",
        "claude_opus_4_6_with_taxonomy",
        "gpt_4o",
        "gpt_4o_with_taxonomy",
        "claude_sonnet_4_6_3runs",
    )
}


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("Claude Sonnet 4.6", "claude_sonnet_4_6"),
        ("Claude Sonnet 4.6 + taxonomy", "claude_sonnet_4_6_with_taxonomy"),
        ("**Claude Opus 4.6** with taxonomy", "claude_opus_4_6_with_taxonomy"),
        ("GPT-4o", "gpt_4o"),
        ("GPT-4o + taxonomy", "gpt_4o_with_taxonomy"),
        ("Claude Sonnet 4.6, 3 runs (majority)", "claude_sonnet_4_6_3runs"),
        ("claude_opus_4_6", "claude_opus_4_6"),
    ],
)
def test_row_labels_match_their_condition_keys(label: str, key: str) -> None:
    assert match_condition(label, KEYS).key == key


def test_leftover_words_state_the_variant_and_adjustment() -> None:
    m = match_condition("Claude Sonnet 4.6, 3 runs (majority)", KEYS)
    assert m.leftover == ("majority",)
    assert words_fields(m.leftover) == {"variant": "majority-vote"}
    assert words_fields(tokens("Holm-corrected p")) == {"adjustment": "holm"}
    assert words_fields(tokens("Yates corrected")) == {"variant": "continuity-corrected"}


def test_unmatched_and_ambiguous_labels_say_why() -> None:
    none = match_condition("Human expert", KEYS)
    assert none.key is None and "matches no condition" in none.reason
    tied = match_condition("Sonnet A and B", {"sonnet_a": [], "sonnet_b": [], "opus": []})
    assert tied.key is None and tied.candidates == ("sonnet_a", "sonnet_b")
    assert "several conditions: sonnet_a, sonnet_b" in tied.reason


def test_display_names_and_the_contract_mapping() -> None:
    names = {"run_a": ["Baseline prompt"], "run_b": ["Taxonomy prompt"]}
    assert match_condition("Baseline prompt", names).key == "run_a"
    assert match_condition("taxonomy prompt (ours)", names).key == "run_b"
    declared = {"Ours": "run_b", "Human": ""}
    assert match_condition("**Ours**", names, declared).key == "run_b"
    left = match_condition("Human", names, declared)
    assert left.key is None and left.declared and "leaves" in left.reason


def test_a_sentence_names_the_most_specific_condition() -> None:
    line = "With the taxonomy, Claude Sonnet 4.6 + taxonomy reached FPR = 28%."
    assert named_conditions(line, KEYS) == ["claude_sonnet_4_6_with_taxonomy"]
    both = "GPT-4o (FPR = 39%) against Claude Opus 4.6 (FPR = 22%)"
    assert named_conditions(both, KEYS) == ["claude_opus_4_6", "gpt_4o"]


def test_written_values_as_their_statistic_means_them() -> None:
    pct = written_value("false_positive_rate", "percent", Decimal("39"), Decimal("1"), None, None)
    assert (pct.value, pct.tolerance, pct.form) == (0.39, 0.005, "percent")
    assert pct.show(5 / 18, None) == "28%"
    frac = written_value("detection_rate", "fraction", Decimal("17"), Decimal("1"), 17, 18)
    assert (frac.value, frac.n) == (17 / 18, 18) and frac.tolerance < 1e-9
    assert frac.show(1.0, 17) == "17/17"
    column = written_value("detection_rate", "number", Decimal("94.4"), Decimal("0.1"), None, None, "percent")
    assert column.value == pytest.approx(0.944) and column.tolerance == pytest.approx(0.0005)
    f1 = written_value("f1", "number", Decimal("0.84"), Decimal("0.01"), None, None)
    assert (f1.value, f1.show(0.8372, None)) == (0.84, "0.84")
    q = written_value("cochran_q", "number", Decimal("154.73"), Decimal("0.01"), None, None)
    assert (q.value, q.tolerance) == (154.73, 0.005)
    assert written_value("p", "number", Decimal("0.05"), Decimal("0.01"), None, None, None, "<").value is None
    assert "no rate" in written_value("n", "percent", Decimal("5"), Decimal("1"), None, None).reason


def _q(route: str, variant: str | None = None) -> Stat:
    return Stat("cochran_q", 154.7, "Cochran's Q", n=40, route=route, variant=variant)


def test_registry_references_resolve_whatever_their_spelling() -> None:
    base = "https://example.org/scale/"
    stats = [_q("globally-complete"), _q("pairwise-available"), _q("positional-truncation")]
    for ref in (
        "statistic/cochran_q/globally-complete",
        "statistic/name%3Dcochran_q/route%3Dglobally-complete",
        "statistic/route%3Dglobally-complete/name%3Dcochran_q",
        base + "statistic/globally-complete/cochran_q",
        "statistic/q/complete",
    ):
        assert resolve(ref, base, stats).stat is stats[0], ref
    assert facets("statistic/name%3Dq", base) == (("name", "q"),)
    several = resolve("statistic/cochran_q", base, stats)
    assert several.stat is None and "names 3 statistics" in several.note
    assert "route%3Dpairwise-available" in several.note
    missing = resolve("statistic/mcnemar_p/globally-complete", base, stats)
    assert missing.stat is None and "recomputed names: cochran_q" in missing.note
    # of several, the one with no facet beyond the reference's
    two = [_q("globally-complete"), _q("globally-complete", "exact")]
    assert resolve("statistic/cochran_q/globally-complete", base, two).stat is two[0]


def test_bench_bundle_q_is_recomputed_through_the_registry_reference(
    tmp_path: Path, pseudonym_secret
) -> None:
    """bench/bundles.py's 10^3-call bundle: its registry names the Q as
    ``statistic/cochran_q/globally-complete`` while the statistic's IRI is
    ``statistic/name%3Dcochran_q/route%3Dglobally-complete``; lineage must trace it."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from bundles import scale_bundle  # bench/ is no package: on the path for this test
    finally:
        sys.path.remove(str(REPO / "bench"))
    info = scale_bundle(tmp_path / "b", 1000, pixel=False, log=lambda _: None)
    root = str(tmp_path / "b")
    assert run_cli("-C", root, "-q", "ingest")[0] == 0
    code, text = run_cli("-C", root, "stats", "--format", "json")
    assert code == 0, text
    (ref,) = json.loads(text)["registry"]
    assert ref["written"] == "statistic/cochran_q/globally-complete"
    assert ref["statistic"] == "statistic/name%3Dcochran_q/route%3Dglobally-complete"
    assert run_cli("-C", root, "-q", "check")[0] == 1  # the bundle's planted defects
    code, text = run_cli("-C", root, "lineage", "--format", "json", info["q"])
    assert code == 0, text
    (match,) = [m for m in json.loads(text)["matches"] if "registry-value/" in m["root"]]
    assert match["status"] == "retained", match["reasons"]
    assert "https://example.org/scale/" + ref["statistic"] in [n["iri"] for n in match["nodes"]]


def _cell(row: str, column: str, text: str, unit: str = "percent", line: int = 9) -> Written:
    value = Decimal(text.rstrip("%"))
    resolution = Decimal(1).scaleb(Decimal(text.rstrip("%")).as_tuple().exponent)
    return Written(f"urn:claim:{line}:{column}", text, value, unit, resolution, row, None, None, None,
                   f"| {row} | {text} |", f"README.md:{line}:5", row, None, column, None)  # fmt: skip


def _rates() -> StatIndex:
    stats = []
    for key, fpr in (("claude_sonnet_4_6", 7 / 18), ("claude_sonnet_4_6_with_taxonomy", 5 / 18)):
        stats.append(
            Stat("false_positive_rate", fpr, "m", n=18, conditions=(key,), variant="single-run", replicate=1)
        )
    for variant, fpr in (("majority-vote", 9 / 18), ("pooled-runs", 26 / 54)):
        stats.append(
            Stat(
                "false_positive_rate",
                fpr,
                "m",
                n=18,
                conditions=("claude_sonnet_4_6_3runs",),
                variant=variant,
            )
        )
    return StatIndex(stats)


def test_table_cells_bind_with_the_reason_when_they_cannot() -> None:
    """The llm_review README's rows (examples/llm_review/generate.py) against its statistics."""
    index = _rates()
    names = {
        k: [] for k in ("claude_sonnet_4_6", "claude_sonnet_4_6_with_taxonomy", "claude_sonnet_4_6_3runs")
    }
    cells = [
        _cell("Claude Sonnet 4.6", "FPR", "39%"),
        _cell("Claude Sonnet 4.6 + taxonomy", "FPR (%)", "33", unit="number", line=10),
        _cell("Claude Sonnet 4.6, 3 runs (majority)", "FPR", "50%", line=11),
        _cell("Claude Sonnet 4.6, 3 runs", "FPR", "48%", line=12),
        _cell("Claude Sonnet 4.6", "Runs", "1", unit="number", line=13),
        _cell("Human readers", "FPR", "12%", line=14),
        _cell("Claude Sonnet 4.6", "Specificity", "61%", line=15),
        _cell("Claude Sonnet 4.6", "n", "36", unit="number", line=16),
    ]
    out = {
        b.claim.where.split(":")[1]: b for b in bind_claims(cells, index, names, {"columns": {"Runs": ""}})
    }
    assert "13" not in out  # [release.bind] leaves Runs unbound: not listed
    assert out["9"].stat.conditions == ("claude_sonnet_4_6",) and out["9"].recomputed_text() == "39%"
    ten = out["10"]  # 33 in a % column: 0.33, stale against 5/18
    assert ten.stat.conditions == ("claude_sonnet_4_6_with_taxonomy",) and ten.value.value == 0.33
    assert ten.recomputed_text() == "28%"
    assert out["11"].stat.variant == "majority-vote"
    assert out["12"].stat is None and "ambiguous" in out["12"].note  # which of the 3-run FPRs?
    assert "matches no condition" in out["14"].note
    assert out["15"].condition == "claude_sonnet_4_6" and "does not recompute 'specificity'" in out["15"].note
    assert out["16"].condition is None and "does not recompute 'n'" in out["16"].note


def test_a_sentence_binds_when_its_line_names_one_condition() -> None:
    index = _rates()
    names = {k: [] for k in ("claude_sonnet_4_6", "claude_sonnet_4_6_with_taxonomy")}
    one = Written("urn:s1", "28%", Decimal(28), "percent", Decimal(1), "FPR", "=", None, None,
                  "With the taxonomy, Claude Sonnet 4.6 + taxonomy reached FPR = 28%.", "paper.md:3:60",
                  None, None, None, None)  # fmt: skip
    both = Written("urn:s2", "39%", Decimal(39), "percent", Decimal(1), "FPR", "=", None, None,
                   "Claude Sonnet 4.6 (FPR = 39%) and Claude Sonnet 4.6 + taxonomy", "paper.md:4:20",
                   None, None, None, None)  # fmt: skip
    q = Written("urn:s3", "154.73", Decimal("154.73"), "number", Decimal("0.01"), "Q", "=", None, None,
                "Claude Sonnet 4.6: Q = 154.73", "paper.md:5:25", None, None, None, None)  # fmt: skip
    out = bind_claims([one, both, q], index, names, {})
    assert [b.claim.iri for b in out] == ["urn:s1", "urn:s2"]  # Q is over all conditions: not here
    assert out[0].stat.conditions == ("claude_sonnet_4_6_with_taxonomy",)
    assert out[1].stat is None and "names 2 conditions" in out[1].note
