"""The radiology pilot replica (examples/cxr_pilot): every structural count of the audit, read
back from the graph through provgraph's own queries (SPARQL over the store, `provgraph stats`
JSON, the check report, lineage, the accounting functions), never from the generator's
variables; the flawed twin fails the gate with the expected failure classes per clause and
the clean twin passes the whole gate. The keyed statistics are also recomputed here with
statsmodels from the bundle's files, joined by key by hand."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pyoxigraph as ox
import pytest
from conftest import ingest_bundle
from examples_support import Bundle, generator, prepare
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar

from provgraph.bundle.contract.sections.annotation import CHEXPERT_FINDINGS
from provgraph.evidence.identity import declared_text, sha256_text
from provgraph.evidence.labelrows import decode
from provgraph.lineage.gate import refresh_derived
from provgraph.report import accounting
from provgraph.rules import callview, caseview, decodingview, fileview, load_rules, pixelview, run_check
from provgraph.stats import materialize
from provgraph.store import catalog

gen = generator("cxr_pilot")


@pytest.fixture(scope="module")
def flawed(tmp_path_factory) -> Bundle:
    bundle = prepare(tmp_path_factory.mktemp("cxr") / "flawed", "flawed", gen.generate)
    yield bundle
    bundle.close()


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Bundle:
    bundle = prepare(tmp_path_factory.mktemp("cxr") / "clean", "clean", gen.generate)
    yield bundle
    bundle.close()


# --- the flawed twin: the audit's counts ---------------------------------------------------


def test_cohort_30_studies_from_28_patients(flawed: Bundle) -> None:
    (row,) = flawed.select(
        """SELECT (COUNT(DISTINCT ?case) AS ?studies) (COUNT(DISTINCT ?patient) AS ?patients) WHERE {
             ?e a pg:CohortEntry ; pg:included true ; pg:case ?case ; pg:patient ?patient }"""
    )
    assert (int(row["studies"]), int(row["patients"])) == (30, 28)
    # two patients contribute two studies each
    repeated = flawed.select(
        """SELECT ?patient (COUNT(DISTINCT ?case) AS ?n) WHERE {
             ?e a pg:CohortEntry ; pg:included true ; pg:case ?case ; pg:patient ?patient }
           GROUP BY ?patient HAVING (COUNT(DISTINCT ?case) > 1)"""
    )
    assert sorted(int(r["n"]) for r in repeated) == [2, 2]


def test_views_and_the_four_uninverted_monochrome1_images(flawed: Bundle) -> None:
    assert accounting.view_positions(flawed.store) == {"PA": 14, "AP": 11, "LL": 1, "undocumented": 4}
    rows = flawed.select(
        """SELECT ?view ?inverted WHERE {
             ?r a pg:Rendering ; pg:inverted ?inverted ; prov:used ?dicom .
             ?dicom pg:photometricInterpretation "MONOCHROME1" ; pg:viewPosition ?view }"""
    )
    # exactly the four blank-view images are MONOCHROME1, and none was inverted
    assert sorted((r["view"], r["inverted"]) for r in rows) == [("", "false")] * 4
    assert (
        flawed.count(
            'SELECT (COUNT(*) AS ?n) WHERE { ?d a pg:DicomFile ; pg:photometricInterpretation "MONOCHROME1" }'
        )
        == 4
    )
    assert len(flawed.fired()["pixel"]["pixel-monochrome-polarity"]) == 4
    # judged from the pixels too: every call that sent one of the four (5 families x 2 conditions)
    assert len(flawed.fired()["pixel"]["pixel-polarity-from-pixels"]) == 40


def test_selector_admitted_test_and_validate_and_the_split_was_not_retained(flawed: Bundle) -> None:
    rows = flawed.select(
        """SELECT ?split (COUNT(DISTINCT ?case) AS ?n) WHERE {
             ?e a pg:CohortEntry ; pg:included true ; pg:case ?case .
             ?s a pg:SplitAssignment ; pg:case ?case ; pg:split ?split } GROUP BY ?split"""
    )
    splits = {r["split"]: int(r["n"]) for r in rows}
    assert set(splits) == {"test", "validate"} and sum(splits.values()) == 30
    assert flawed.count("SELECT (COUNT(?e) AS ?n) WHERE { ?e a pg:CohortEntry ; pg:split ?s }") == 0
    # the official split table still names each study's split: what fails is the validate
    # studies it lists, not a missing split
    assert "cohort-split-not-recorded" not in flawed.fired()["cohort"]
    assert len(flawed.fired()["cohort"]["cohort-split-not-allowed"]) == splits["validate"]


def test_300_planned_calls_297_nonempty_2_zero_byte_qwen_a_1_missing_gemini_b(flawed: Bundle) -> None:
    (row,) = flawed.select(
        """SELECT (COUNT(?c) AS ?calls) (COUNT(DISTINCT ?case) AS ?cases) (COUNT(DISTINCT ?cond) AS ?conds)
           WHERE { ?c a pg:PlannedCall ; pg:case ?case ; pg:condition ?cond }"""
    )
    assert (int(row["calls"]), int(row["cases"]), int(row["conds"])) == (300, 30, 10)
    families = {
        r["k"].split("-")[0]
        for r in flawed.select("SELECT DISTINCT ?k WHERE { ?c a pg:Condition ; pg:key ?k }")
    }
    assert len(families) == 5
    states = accounting.output_states(flawed.store)
    assert states.planned == 300
    assert states.counts == {
        "nonempty": 297,
        "zero-byte": 2,
        "missing": 1,
        "failed": 0,
        "no terminal record": 0,
    }
    rows = flawed.select(
        """SELECT ?cond ?case ?state WHERE {
             ?r a pg:CallRecord ; pg:status "ok" ; pg:forCall ?call ; pg:outputFile ?f .
             ?call pg:condition/pg:key ?cond ; pg:case ?case .
             OPTIONAL { ?f pg:byteSize ?size }
             BIND(IF(!BOUND(?size), "missing", IF(?size = 0, "zero-byte", "nonempty")) AS ?state)
             FILTER(?state != "nonempty") }"""
    )
    assert sorted((r["cond"], r["state"]) for r in rows) == [
        ("gemini-B", "missing"),
        ("qwen-A", "zero-byte"),
        ("qwen-A", "zero-byte"),
    ]
    assert len({r["case"] for r in rows}) == 3  # three different studies
    assert len(flawed.fired()["output"]["output-ok-without-output"]) == 3


def test_both_claude_conditions_executed_prompt_c(flawed: Bundle) -> None:
    prompt_c = sha256_text(declared_text((flawed.root / "prompts" / "system_C.txt").read_bytes()))
    rows = flawed.select(
        """SELECT ?cond ?h (COUNT(DISTINCT ?r) AS ?n) WHERE {
             ?r a pg:CallRecord ; pg:forCall/pg:condition/pg:key ?cond ; pg:systemPromptSha256 ?h ;
                pg:promptCapture "request" .
             FILTER(STRSTARTS(?cond, "claude-")) } GROUP BY ?cond ?h"""
    )
    assert sorted((r["cond"], r["h"], int(r["n"])) for r in rows) == [
        ("claude-A", prompt_c, 30),
        ("claude-B", prompt_c, 30),
    ]
    prompt = flawed.fired()["prompt"]
    assert prompt["prompt-identical-across-conditions"] == ["condition-pair/claude-A/claude-B"]
    assert prompt["prompt-differs-from-declared"] == ["condition/claude-A", "condition/claude-B"]
    assert any("30 of 30 cases" in m for m in flawed.messages("prompt-identical-across-conditions"))


def test_14_findings_and_5_truncated_claude_reports(flawed: Bundle) -> None:
    assert flawed.count("SELECT (COUNT(DISTINCT ?f) AS ?n) WHERE { ?e a pg:Endpoint ; pg:finding ?f }") == 14
    rows = flawed.select(
        """SELECT ?order ?states WHERE {
             ?l a pg:ReferenceLabelRow ; pg:findingOrder ?order ; pg:labelStates ?states }"""
    )
    labels = [pair for r in rows for pair in decode(r["order"], r["states"])]
    assert (len({finding for finding, _ in labels}), len(labels)) == (14, 420)
    rows = flawed.select(
        """SELECT ?path ?chars ?max WHERE {
             ?x a pg:Extraction ; pg:maxInputChars ?max ; pg:inputChars ?chars ; prov:used/pg:path ?path .
             FILTER(?chars > ?max) }"""
    )
    assert len(rows) == 5
    assert all(r["path"].startswith("outputs/claude-") and r["max"] == "4000" for r in rows)
    assert len(flawed.fired()["annotation"]["annotation-input-truncated"]) == 5


def test_420_blocks_369_complete_positional_n_383(flawed: Bundle) -> None:
    code, text = flawed.cli("stats", "--format", "json")
    assert code == 0
    doc = json.loads(text)
    matrices = {m["cohort_rule"]: m for m in doc["matrices"]}
    assert (matrices["globally-complete"]["n"], matrices["globally-complete"]["blocks"]) == (369, 420)
    assert matrices["positional-truncation"]["n"] == 383
    assert matrices["positional-truncation"]["mispaired_positions"] > 0
    blocks = accounting.blocks(flawed.store)
    assert (blocks.total, blocks.complete, blocks.conditions) == (420, 369, 10)
    # the reported Q is the positional route's value, and the keyed recomputation differs
    (q,) = [r for r in doc["reported"] if r["statistic"].startswith("cochran_q")]
    assert q["status"] == "POSITIONAL" and q["n"] == 369
    assert abs(float(q["reported"]) - q["sensitivity"]["positional-truncation"]["value"]) < 0.005
    assert q["sensitivity"]["positional-truncation"]["n"] == 383
    assert abs(float(q["reported"]) - q["recomputed"]) > 1
    # the manuscript writes that historical value, and the registry marks it superseded
    (claim,) = flawed.select(
        """SELECT ?text ?status WHERE { ?c a pg:Claim ; pg:statName "cochran_q" ; pg:text ?text ;
             pg:sourceFile/pg:path "manuscript/main.tex" ; pg:registryValue/pg:registryStatus ?status }"""
    )
    assert (claim["text"], claim["status"]) == (q["reported"], "superseded")


def test_manuscript_and_released_zip_keep_stale_names_and_values(flawed: Bundle) -> None:
    release = flawed.fired()["release"]
    archive = "release/reproducibility_bundle_REVISED.zip"
    for rule in ("release-stale-value", "release-entity-inconsistent"):
        assert {
            "manuscript/main.tex",
            f"{archive}!/manuscript/main.tex",
            f"{archive}!/README.md",
        } <= flawed.paths(rule), rule
    stale_names = {
        r["text"]
        for r in flawed.select(
            """SELECT DISTINCT ?text WHERE { ?m a pg:Mention ; pg:text ?text ; pg:entity/pg:name ?canon .
                 FILTER(?text != ?canon) }"""
        )
    }
    assert stale_names == {"Claude 3 Sonnet", "GPT-4V", "Gemini Pro Vision"}
    assert any("has no SHA256SUMS" in m for m in flawed.messages("release-manifest-mismatch"))
    assert release["release-stale-artifact"] == ["file/figures/fig3.svg", "file/tables/table2.md"]


def test_flawed_twin_fails_with_the_expected_classes_per_clause(flawed: Bundle) -> None:
    assert flawed.check["gate"] == "fail"
    fired = {clause: sorted(rules) for clause, rules in flawed.fired().items()}
    assert fired == {
        "cohort": [
            "cohort-repeated-patient",
            "cohort-split-not-allowed",
            "cohort-view-not-allowed",
            "cohort-view-undocumented",
        ],
        # the record says so, and the pixels the calls sent show it (issue 18)
        "pixel": ["pixel-monochrome-polarity", "pixel-polarity-from-pixels"],
        "prompt": ["prompt-differs-from-declared", "prompt-identical-across-conditions"],
        "model": ["model-alias-unresolved"],
        "output": ["output-ok-without-output"],
        "annotation": ["annotation-input-truncated", "annotation-raw-response-missing"],
        "analysis": ["analysis-positional-join", "analysis-reported-differs"],
        "release": [
            "release-entity-inconsistent",
            "release-manifest-mismatch",
            "release-stale-artifact",
            "release-stale-value",
        ],
    }
    assert not [r["id"] for r in flawed.check["rules"] if r["outcome"] == "error"]


def published_q_lineage(bundle: Bundle) -> dict:
    """`provgraph lineage` (JSON) of the manuscript line that writes Cochran's Q."""
    (row,) = bundle.select(
        """SELECT ?line WHERE { ?c a pg:Claim ; pg:statName "cochran_q" ; pg:sourceLine ?line ;
             pg:sourceFile/pg:path "manuscript/main.tex" }"""
    )
    code, text = bundle.cli("lineage", "--no-check", "--format", "json", f"manuscript/main.tex:{row['line']}")
    assert code == 0
    (match,) = [m for m in json.loads(text)["matches"] if "/claim/" in m["root"]]
    return match


def test_lineage_of_the_published_q_is_withdrawn(flawed: Bundle) -> None:
    match = published_q_lineage(flawed)
    assert match["status"] == "withdrawn"
    assert "release-stale-value" in {r["rule"] for r in match["reasons"]}


def test_keyed_and_positional_q_agree_with_statsmodels_on_the_files(flawed: Bundle) -> None:
    """Join the bundle's own files by (study, finding) keys and recompute with statsmodels."""
    matrix = block_matrix(flawed.root)
    complete = matrix[~np.isnan(matrix).any(axis=1)].astype(int)
    kept = [matrix[~np.isnan(matrix[:, j]), j] for j in range(matrix.shape[1])]
    n = min(len(c) for c in kept)
    positional = np.stack([c[:n] for c in kept], axis=1).astype(int)
    assert (matrix.shape, len(complete), n) == ((420, 10), 369, 383)
    graph = {
        r["rule"]: (float(r["v"]), int(r["n"]))
        for r in flawed.select(
            """SELECT ?rule ?v ?n WHERE { ?s a pg:Statistic ; pg:statName "cochran_q" ; pg:cohortRule ?rule ;
                 pg:value ?v ; pg:n ?n . FILTER NOT EXISTS { ?s pg:cluster ?c } }"""
        )
    }
    assert graph["globally-complete"][1] == 369 and graph["positional-truncation"][1] == 383
    assert graph["globally-complete"][0] == pytest.approx(cochrans_q(complete).statistic, rel=1e-9)
    assert graph["positional-truncation"][0] == pytest.approx(cochrans_q(positional).statistic, rel=1e-9)
    # the McNemar threshold counts of the keyed cohort (asymptotic, unadjusted)
    pvals = [
        mcnemar(
            [
                [
                    int(((complete[:, a] == 1) & (complete[:, b] == 1)).sum()),
                    int(((complete[:, a] == 1) & (complete[:, b] == 0)).sum()),
                ],
                [
                    int(((complete[:, a] == 0) & (complete[:, b] == 1)).sum()),
                    int(((complete[:, a] == 0) & (complete[:, b] == 0)).sum()),
                ],
            ],
            exact=False,
            correction=False,
        ).pvalue
        for a, b in combinations(range(10), 2)
    ]
    (count,) = flawed.select(
        """SELECT ?v WHERE { ?s a pg:Statistic ; pg:statName "significant_count" ;
             pg:cohortRule "globally-complete" ; pg:testVariant "asymptotic" ; pg:adjustment "none" ;
             pg:value ?v }"""
    )
    assert float(count["v"]) == sum(p < 0.05 for p in pvals)


def block_matrix(root: Path) -> np.ndarray:
    """(study, finding) x condition 0/1 matrix from the files, NaN where a cell is missing."""
    with (root / "plan.csv").open() as fh:
        plan = list(csv.DictReader(fh))
    studies = list(dict.fromkeys(r["case"] for r in plan))
    conditions = list(dict.fromkeys(r["condition"] for r in plan))
    with (root / "mimic-cxr-2.0.0-chexpert.csv").open() as fh:
        reference = {r["study_id"]: r for r in csv.DictReader(fh)}
    report_of = {}
    for line in (root / "calls.jsonl").read_text().splitlines():
        rec = json.loads(line)
        study, _, cond = rec["call_id"].partition("-")
        report_of[rec["output"]] = (study, cond)
    labels = {}
    for line in (root / "labels" / "extractor_cache.jsonl").read_text().splitlines():
        lab = json.loads(line)
        study, cond = report_of[lab["report"]]
        labels[(study, lab["finding"], cond)] = lab["state"] == "POSITIVE"
    matrix = np.full((len(studies) * 14, len(conditions)), np.nan)
    for i, study in enumerate(studies):
        for f, finding in enumerate(CHEXPERT_FINDINGS):  # the endpoint's order
            code = reference[study][finding]
            if code == "-1.0":
                continue  # reference UNCERTAIN: excluded
            present = code == "1.0"
            for j, cond in enumerate(conditions):
                if (study, finding, cond) in labels:
                    matrix[i * 14 + f, j] = float(labels[(study, finding, cond)] == present)
    return matrix


# --- the clean twin ------------------------------------------------------------------------


def test_rules_run_side_by_side_give_the_report_run_one_by_one(flawed: Bundle) -> None:
    # the flawed twin's check (hundreds of violations in every clause, located to file and
    # line) on one thread and on four: the same results in the same order, streamed in order
    rules = load_rules()

    def run(readers: int) -> tuple[list, list[str]]:
        seen: list[str] = []
        report = run_check(flawed.store, rules, on_result=lambda r: seen.append(r.rule.id), readers=readers)
        return [(r.rule.id, r.outcome, r.error, r.violations) for r in report.results], seen

    alone, seen_alone = run(1)
    together, seen_together = run(4)
    assert flawed.store.concurrent_reads
    assert sum(len(v) for *_, v in alone) > 300
    assert together == alone
    assert seen_together == seen_alone == [r.id for r in rules]


def test_views_refreshed_side_by_side_equal_views_refreshed_in_turn(flawed: Bundle) -> None:
    # the statistics and every derived view of the flawed twin, computed on one thread and on
    # two (two chains at once, writes one at a time): the same triples in every slot
    slots = [materialize.SLOT, callview.SLOT, fileview.SLOT, caseview.SLOT, pixelview.SLOT, decodingview.SLOT]

    def views(readers: int) -> dict[str, set[str]]:
        store = ingest_bundle(flawed.root).store
        refresh_derived(store, readers=readers)
        out = {}
        for key in slots:
            buf = io.BytesIO()
            store.dump(buf, ox.RdfFormat.N_TRIPLES, catalog.current(store, key).graph)
            # (but when the recomputation ran)
            out[key] = {t for t in buf.getvalue().decode().splitlines() if "AtTime>" not in t}
        store.close()
        return out

    in_turn, side_by_side = views(1), views(2)
    # (this twin plans no decoding settings: output-decoding-mismatch's pair carries that view)
    assert all(in_turn[key] for key in slots if key != decodingview.SLOT)
    assert side_by_side == in_turn


def test_clean_twin_passes_the_whole_gate(clean: Bundle) -> None:
    assert clean.check["gate"] == "pass", clean.fired()
    assert sorted(clean.check["clauses_in_force"]) == sorted(
        ["cohort", "pixel", "prompt", "model", "output", "annotation", "analysis", "release"]
    )
    assert clean.check["counts"]["violations"] == 0
    outcomes = {r["id"]: r["outcome"] for r in clean.check["rules"]}
    # the harness rules need `[analysis] harness`, which a pilot without a harness lacks
    assert {i for i, o in outcomes.items() if o != "pass"} == {
        i for i in outcomes if i.startswith("analysis-harness-")
    }
    assert {o for i, o in outcomes.items() if i.startswith("analysis-harness-")} == {"not-applicable"}


def test_clean_twin_counts(clean: Bundle) -> None:
    (row,) = clean.select(
        """SELECT (COUNT(DISTINCT ?case) AS ?studies) (COUNT(DISTINCT ?patient) AS ?patients) WHERE {
             ?e a pg:CohortEntry ; pg:included true ; pg:case ?case ; pg:patient ?patient ;
                pg:split "test" }"""
    )
    assert (int(row["studies"]), int(row["patients"])) == (30, 28)
    assert set(accounting.view_positions(clean.store)) == {"PA", "AP"}
    rows = clean.select(
        """SELECT ?inverted (COUNT(*) AS ?n) WHERE { ?r a pg:Rendering ; pg:inverted ?inverted ;
             pg:photometricInterpretation "MONOCHROME1" } GROUP BY ?inverted"""
    )
    assert [(r["inverted"], int(r["n"])) for r in rows] == [("true", 4)]
    assert accounting.output_states(clean.store).counts["nonempty"] == 300
    matrices = {
        r["rule"]: int(r["n"])
        for r in clean.select("SELECT ?rule ?n WHERE { ?m a pg:KeyedMatrix ; pg:cohortRule ?rule ; pg:n ?n }")
    }
    # only the reference UNCERTAIN blocks are left out, so the positional route pairs correctly
    assert matrices["globally-complete"] == matrices["positional-truncation"] == 409
    hashes = clean.select(
        """SELECT DISTINCT ?cond ?h WHERE { ?r a pg:CallRecord ; pg:forCall/pg:condition/pg:key ?cond ;
             pg:systemPromptSha256 ?h . FILTER(STRSTARTS(?cond, "claude-")) }"""
    )
    assert len(hashes) == 2 and hashes[0]["h"] != hashes[1]["h"]


def test_clean_lineage_of_the_published_q_is_retained(clean: Bundle) -> None:
    match = published_q_lineage(clean)
    assert (match["status"], match["truncated"]) == ("retained", False)
    classes = {c for n in match["nodes"] for c in n["classes"]}
    assert {"statistic", "cell grid", "candidate label row", "reference label row", "call record"} <= classes


def test_generator_is_deterministic(flawed: Bundle, tmp_path: Path) -> None:
    again = gen.generate(tmp_path / "flawed", "flawed")

    def digests(root: Path) -> dict[str, str]:
        return {
            p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*")
            if p.is_file() and ".provgraph" not in p.parts
        }

    assert digests(again) == digests(flawed.root)


@pytest.mark.slow
def test_make_demo_runs_the_pilot_story_end_to_end(tmp_path: Path) -> None:
    import subprocess
    import sys

    from conftest import REPO

    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py"), "--out", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    for expected in (
        "30 included studies from 28 patients",
        "DICOM view positions: 14 PA, 11 AP, 4 blank, 1 LL",
        "297 nonempty, 2 zero-byte, 1 missing",
        "prompt-identical-across-conditions x1",
        "positional-truncation: n = 383 of 420 blocks",
        "globally-complete: n = 369 of 420 blocks",
        "WITHDRAWN",
        "gate: PASS",
        "demo OK",
    ):
        assert expected in text, expected
    assert (tmp_path / "demo" / "report.html").stat().st_size > 10_000
