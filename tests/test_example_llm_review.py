"""The LLM-reviewer benchmark example (examples/llm_review): its structure read back from the
graph (36 scripts, 6 categories, 7 runs), the reviewer statistics computed end-to-end through
the `reviews` / `answer-key` importers and checked against numpy over the generated JSON, the
planted defects named by the gate (the README's wrong F1 and stale FPR through the automatic
binding of its table, with no hand-written registry values), and the clean twin passing it
with every README number bound to the statistic that recomputes it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from examples_support import Bundle, generator, prepare

gen = generator("llm_review")


@pytest.fixture(scope="module")
def flawed(tmp_path_factory) -> Bundle:
    bundle = prepare(tmp_path_factory.mktemp("review") / "flawed", "flawed", gen.generate)
    yield bundle
    bundle.close()


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Bundle:
    bundle = prepare(tmp_path_factory.mktemp("review") / "clean", "clean", gen.generate)
    yield bundle
    bundle.close()


def test_36_scripts_6_categories_3_flawed_and_3_controls_each(flawed: Bundle) -> None:
    assert (
        flawed.count("SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a pg:ReviewedScript ; pg:sha256 ?h }")
        == 36
    )
    rows = flawed.select(
        """SELECT ?category ?flawed (COUNT(DISTINCT ?e) AS ?n) WHERE {
             ?e a pg:AnswerKeyEntry ; pg:category ?category ; pg:isFlawed ?flawed }
           GROUP BY ?category ?flawed"""
    )
    assert len({r["category"] for r in rows}) == 6
    assert sorted({(r["flawed"], int(r["n"])) for r in rows}) == [("false", 3), ("true", 3)]
    assert len(rows) == 12
    # every reviewed script is in the key and in audit_scripts/
    assert (
        flawed.count(
            """SELECT (COUNT(DISTINCT ?case) AS ?n) WHERE { ?r a pg:Review ; pg:case ?case .
                 ?e a pg:AnswerKeyEntry ; pg:case ?case . ?s a pg:ReviewedScript ; pg:case ?case }"""
        )
        == 36
    )


def test_runs_conditions_and_the_three_run_majority(flawed: Bundle) -> None:
    rows = flawed.select(
        """SELECT ?key ?runs ?reviews WHERE { ?run a pg:ReviewRun ; pg:condition/pg:key ?key ;
             pg:replicates ?runs ; pg:memberCount ?reviews }"""
    )
    runs = {r["key"]: (int(r["runs"]), int(r["reviews"])) for r in rows}
    assert len(runs) == 7
    assert runs["claude_sonnet_4_6_3runs"] == (3, 36)
    assert sorted(v for k, v in runs.items() if k != "claude_sonnet_4_6_3runs") == [(1, 36)] * 6
    assert flawed.count("SELECT (COUNT(?r) AS ?n) WHERE { ?r a pg:Review }") == 6 * 36 + 3 * 36
    assert flawed.count("SELECT (COUNT(?c) AS ?n) WHERE { ?c a pg:PlannedCall }") == 324
    # the multi-run file's aggregates are reported values, one per script and aggregate
    assert (
        flawed.count('SELECT (COUNT(?v) AS ?n) WHERE { ?v a pg:ReportedValue ; pg:statName "fail_votes" }')
        == 36
    )
    assert flawed.count("SELECT (COUNT(?s) AS ?n) WHERE { ?s a pg:ModelSelection }") == 7


def test_flawed_twin_fails_with_its_planted_defects(flawed: Bundle) -> None:
    assert flawed.check["gate"] == "fail"
    fired = flawed.fired()
    assert {clause: sorted(rules) for clause, rules in fired.items()} == {
        "model": ["model-alias-unresolved"],
        # the failed call's final state is also a non-success the protocol does not accept
        "output": [
            "output-call-not-successful",
            "output-error-with-verdict",
            "output-selected-run-without-results",
        ],
        "analysis": ["analysis-claim-differs", "analysis-reported-differs"],
    }
    # a failed call counted as a verdict
    (focus,) = fired["output"]["output-error-with-verdict"]
    assert focus.startswith("review/gpt_4o/script_")
    assert "records verdict PASS for it" in flawed.messages("output-error-with-verdict")[0]
    # the taxonomy run that recorded the baseline prompt
    assert fired["output"]["output-selected-run-without-results"] == [
        "model-selection/claude-opus-4-6/taxonomy/1"
    ]
    prompts = {
        r["key"]: (r["prompt"], r["taxonomy"])
        for r in flawed.select(
            """SELECT ?key ?prompt ?taxonomy WHERE { ?run a pg:ReviewRun ; pg:condition/pg:key ?key ;
                 pg:systemPromptSha256 ?prompt ; pg:withTaxonomy ?taxonomy }"""
        )
    }
    assert prompts["claude_opus_4_6_with_taxonomy"] == (prompts["claude_opus_4_6"][0], "false")
    assert prompts["claude_sonnet_4_6_with_taxonomy"][0] != prompts["claude_sonnet_4_6"][0]
    # the harness's numbers that the recomputation contradicts
    differs = fired["analysis"]["analysis-reported-differs"]
    assert "reported/results%2Fsummary.json/name%3Ddetection_rate/condition%3Dgpt_4o" in differs
    assert any("majority_verdict_fail" in f for f in differs)
    assert any("false_positive_rate/condition%3Dclaude_sonnet_4_6_3runs" in f for f in differs)
    # the README's planted F1, its stale FPR (an earlier run) and the harness's values it copied,
    # each with the value recomputed from the reviews and the answer key
    claims = {m.split(" writes ")[1].split(" but ")[0]: m for m in flawed.messages("analysis-claim-differs")}
    assert set(claims) == {
        "f1 0.91",  # Claude Opus 4.6: its own DR, FPR and precision give 0.87
        "false_positive_rate 33%",  # Sonnet 4.6 + taxonomy, from an earlier run
        "detection_rate 94%",  # GPT-4o, the failed call counted
        "f1 0.81",  # GPT-4o, likewise
        "false_positive_rate 56%",  # the 3-run "any FAIL" majority, and what follows from it
        "precision 64%",
        "f1 0.78",
    }
    f1 = claims["f1 0.91"]
    assert f1.startswith("README.md:11:43 ")
    assert "f1 claude_opus_4_6 (single-run, run 1) recomputes to 0.87 (0.871794" in f1
    assert "n = 39" in f1 and "2 TP / (2 TP + FP + FN)" in f1
    assert "recomputes to 28% (0.277" in claims["false_positive_rate 33%"]
    assert "recomputes to 100% (1; n = 17" in claims["detection_rate 94%"]
    assert "claude_sonnet_4_6_3runs (majority-vote)" in claims["false_positive_rate 56%"]
    assert fired["model"]["model-alias-unresolved"] == ["model-spec/gpt4o"]


def test_reviewer_statistics_match_numpy_over_the_json(flawed: Bundle) -> None:
    expected = independent_metrics(flawed.root)
    code, text = flawed.cli("stats", "--all", "--format", "json")
    assert code == 0
    found = {row["iri"]: row["value"] for row in json.loads(text)["all"]}
    assert len(expected) == 7 * 5
    for (key, variant, metric), value in expected.items():
        segments = [f"name%3D{metric}", f"condition%3D{key}"]
        segments += (
            ["variant%3Dmajority-vote"]
            if variant == "majority-vote"
            else ["variant%3Dsingle-run", "replicate%3D1"]
        )
        iri = "statistic/" + "/".join(segments)
        assert found[iri] == pytest.approx(value, abs=1e-12), (key, variant, metric)
    # the failed GPT-4o call is left out of every denominator, and counted apart
    (row,) = flawed.select(
        """SELECT ?v ?n WHERE { ?s a pg:Statistic ; pg:statName "reviews_without_verdict" ;
             pg:condition/pg:key "gpt_4o" ; pg:value ?v ; pg:n ?n }"""
    )
    assert (float(row["v"]), int(row["n"])) == (1.0, 36)
    # per-script vote counts of the 3-run condition
    votes = {
        r["case"].rsplit("/", 1)[-1]: float(r["v"])
        for r in flawed.select(
            """SELECT ?case ?v WHERE { ?s a pg:Statistic ; pg:statName "fail_votes" ; pg:case ?case ;
                 pg:condition/pg:key "claude_sonnet_4_6_3runs" ; pg:value ?v }"""
        )
    }
    data = json.loads((flawed.root / "results" / "claude_sonnet_4_6_3runs_reviews.json").read_text())
    assert votes == {
        r["script"][:-3]: sum(x["verdict"] == "FAIL" for x in r["runs"]) for r in data["reviews"]
    }


def independent_metrics(root: Path) -> dict[tuple[str, str, str], float]:
    """DR, FPR, precision, F1 and category detection rate per condition, with numpy."""
    key = json.loads((root / "audit_answer_key" / "answer_key.json").read_text())
    out: dict[tuple[str, str, str], float] = {}
    for path in sorted((root / "results").glob("*_reviews.json")):
        data = json.loads(path.read_text())
        cond = path.name.removesuffix("_reviews.json")
        scripts, verdicts = [], []
        for review in data["reviews"]:
            if "runs" in review:
                fails = sum(r["verdict"] == "FAIL" for r in review["runs"] if "_error" not in r)
                valid = sum("_error" not in r for r in review["runs"])
                verdict = 1 if fails > valid - fails else 0 if fails < valid - fails else -1
            elif "_error" in review or "_parse_error" in review:
                verdict = -1
            else:
                verdict = 1 if review["verdict"] == "FAIL" else 0
            scripts.append(review["script"])
            verdicts.append(verdict)
        v = np.array(verdicts)
        flawed = np.array([key[s]["is_flawed"] for s in scripts])
        category = np.array([key[s]["category"] for s in scripts])
        tp = np.sum((v == 1) & flawed)
        fn = np.sum((v == 0) & flawed)
        fp = np.sum((v == 1) & ~flawed)
        tn = np.sum((v == 0) & ~flawed)
        variant = "majority-vote" if data.get("n_runs", 1) > 1 else "single-run"
        detected = [
            np.sum((v == 1) & flawed & (category == c)) > np.sum(flawed & (category == c)) / 2
            for c in np.unique(category)
        ]
        for metric, value in (
            ("detection_rate", tp / (tp + fn)),
            ("false_positive_rate", fp / (fp + tn)),
            ("precision", tp / (tp + fp)),
            ("f1", 2 * tp / (2 * tp + fp + fn)),
            ("category_detection_rate", np.mean(detected)),
        ):
            out[(cond, variant, metric)] = float(value)
    return out


def test_clean_twin_passes_and_its_readme_numbers_trace_to_statistics(clean: Bundle) -> None:
    assert clean.check["gate"] == "pass", clean.fired()
    assert sorted(clean.check["clauses_in_force"]) == ["analysis", "model", "output", "release"]
    assert clean.check["counts"]["violations"] == 0
    claims = clean.select(
        """SELECT ?claim ?text ?stat WHERE { ?claim a pg:Claim ; pg:text ?text ;
             pg:sourceFile/pg:path "README.md" ; pg:recomputedAs ?stat .
             ?stat a pg:Statistic }"""
    )
    table_numbers = clean.count(
        """SELECT (COUNT(?c) AS ?n) WHERE { ?c a pg:Claim ; pg:sourceFile/pg:path "README.md" ;
             pg:columnLabel ?column FILTER (?column != "Runs") }"""
    )
    assert len(claims) == table_numbers == 7 * 4  # Runs: left unbound by [release.bind]
    assert clean.count("SELECT (COUNT(?v) AS ?n) WHERE { ?v a pg:RegistryValue }") == 0
    code, text = clean.cli("stats", "--format", "json")
    assert code == 0
    doc = json.loads(text)
    assert doc["unbound"] == [] and len(doc["bound"]) == 28
    assert {b["status"] for b in doc["bound"]} == {"agrees"}
    assert {b["where"].split(":")[0] for b in doc["bound"]} == {"README.md"}
    (fpr,) = [
        c for c in claims if "false_positive_rate/condition%3Dclaude_sonnet_4_6_with_taxonomy" in c["stat"]
    ]
    code, text = clean.cli("lineage", "--no-check", "--format", "json", fpr["claim"])
    assert code == 0
    (match,) = json.loads(text)["matches"]
    assert match["status"] == "retained"
    files = {n["location"] for n in match["nodes"] if n["location"]}
    assert "results/claude_sonnet_4_6_with_taxonomy_reviews.json" in files
    assert "audit_answer_key/answer_key.json" in files


def test_clean_twin_repairs_each_defect(clean: Bundle) -> None:
    assert (
        clean.count('SELECT (COUNT(?r) AS ?n) WHERE { ?r a pg:Review ; pg:status ?s FILTER(?s != "ok") }')
        == 0
    )
    (row,) = clean.select(
        """SELECT ?taxonomy WHERE { ?run a pg:ReviewRun ; pg:withTaxonomy ?taxonomy ;
             pg:condition/pg:key "claude_opus_4_6_with_taxonomy" }"""
    )
    assert row["taxonomy"] == "true"
    assert (
        clean.count(
            'SELECT (COUNT(?m) AS ?n) WHERE { ?m a pg:ModelSpec ; pg:requestedModel "gpt-4o-2024-08-06" }'
        )
        == 1
    )


def test_generator_is_deterministic(flawed: Bundle, tmp_path: Path) -> None:
    again = gen.generate(tmp_path / "flawed", "flawed")
    for path in again.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (flawed.root / path.relative_to(again)).read_bytes(), path
