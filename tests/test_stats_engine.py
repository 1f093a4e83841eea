"""The statistics engine on a real store: cells by key from labels (through call records or
explicit keys) and from reported matrices, keyed matrices and their lineage, the positional
route beside the keyed one, reviewer statistics on Review/AnswerKeyEntry nodes, refresh."""

from __future__ import annotations

import hashlib
import json
import tempfile
from itertools import combinations
from pathlib import Path

import numpy as np
import pyoxigraph as ox
import pytest
from conftest import ingest_bundle, rule_bundle, write_bundle
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar

from provgraph.lineage.gate import run_gate
from provgraph.rdf.vocab import PG_NS
from provgraph.rules import load_rules
from provgraph.stats import materialize
from provgraph.stats.cells import build_grid
from provgraph.store import catalog

BASE = "https://example.org/t/"
PREFIX = f"PREFIX pg: <{PG_NS}> PREFIX prov: <http://www.w3.org/ns/prov#> "
FINDINGS = ["Edema", "Cardiomegaly", "Pneumonia", "Atelectasis"]


def select(store, query: str) -> list[dict]:
    return [
        {k: (v.value if v is not None else None) for k, v in r.items()} for r in store.select(PREFIX + query)
    ]


def contract(extra: str = "") -> str:
    return f"""[project]
name = "t"
base_iri = "{BASE}"

[plan]
file = "plan.csv"

[annotation]
findings = {json.dumps(FINDINGS)}
candidate = {{ uncertain = "negative", not_mentioned = "negative" }}
reference = {{ uncertain = "exclude", not_mentioned = "negative" }}

[analysis]
clusters = ["study", "patient"]
bootstrap = {{ resamples = 300, seed = 3 }}
{extra}"""


def radiology_bundle(root: Path, seed: int = 1, cases: int = 12, conditions=("A", "B", "C", "D")) -> dict:
    """Plan, call log, outputs, an extractor cache keyed only by report path, reference labels.

    One call's output is empty and one report lacks a label (asymmetric gaps); returns the
    truth the test recomputes independently.
    """
    rng = np.random.default_rng(seed)
    plan, calls, cache, ref = ["call_id,case,condition"], [], [], ["case,finding,state"]
    files: dict[str, str] = {}
    truth_ref, truth_cand = {}, {}
    n = 0
    for i in range(cases):
        case = f"s{i + 1:02d}"
        for f in FINDINGS:
            state = rng.choice(
                ["POSITIVE", "NEGATIVE", "NEGATIVE", "NOT_MENTIONED", "UNCERTAIN"],
                p=[0.3, 0.3, 0.2, 0.15, 0.05],
            )
            truth_ref[case, f] = str(state)
            ref.append(f"{case},{f},{state}")
        for cond in conditions:
            n += 1
            cid = f"C{n:03d}"
            out = f"outputs/{cid}.txt"
            plan.append(f"{cid},{case},{cond}")
            empty = cid == "C006"
            files[out] = "" if empty else f"report of {case} under {cond}\n"
            calls.append(json.dumps({"call_id": cid, "status": "ok", "output": out}))
            if empty:
                continue
            for f in FINDINGS:
                if cid == "C011" and f == "Edema":
                    continue
                state = str(
                    rng.choice(
                        ["POSITIVE", "NEGATIVE", "UNCERTAIN", "NOT_MENTIONED"], p=[0.35, 0.35, 0.1, 0.2]
                    )
                )
                truth_cand[case, f, cond] = state
                record = {"report": out, "finding": f, "state": state, "raw_response": "{}", "extractor": "x"}
                cache.append(json.dumps({**record, "max_input_chars": 4000, "input_chars": 300}))
    files.update(
        {
            "plan.csv": "\n".join(plan) + "\n",
            "calls.jsonl": "\n".join(calls) + "\n",
            "labels.jsonl": "\n".join(cache) + "\n",
            "reference.csv": "\n".join(ref) + "\n",
        }
    )
    write_bundle(root, files, contract())
    return {
        "ref": truth_ref,
        "cand": truth_cand,
        "cases": [f"s{i + 1:02d}" for i in range(cases)],
        "conds": list(conditions),
        "calls": [tuple(line.split(",")) for line in plan[1:]],
    }


def keyed_matrix(truth: dict) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The binary matrix, built independently of provgraph from the generator's truth."""
    blocks = [(c, f) for c in truth["cases"] for f in FINDINGS]
    values = np.full((len(blocks), len(truth["conds"])), np.nan)
    for i, (case, f) in enumerate(blocks):
        ref = truth["ref"][case, f]
        if ref == "UNCERTAIN":
            continue
        for j, cond in enumerate(truth["conds"]):
            cand = truth["cand"].get((case, f, cond))
            if cand is None:
                continue
            values[i, j] = float((ref == "POSITIVE") == (cand == "POSITIVE"))
    return blocks, values


def stat_value(store, name: str, route: str = "globally-complete", extra: str = "") -> float:
    rows = select(
        store,
        f"""SELECT ?v WHERE {{ ?s a pg:Statistic ; pg:statName "{name}" ; pg:cohortRule "{route}" ;
            pg:value ?v . FILTER NOT EXISTS {{ ?s pg:cluster ?c }} {extra} }}""",
    )
    assert len(rows) == 1, rows
    return float(rows[0]["v"])


@pytest.fixture(scope="module")
def radiology(tmp_path_factory):
    root = tmp_path_factory.mktemp("radiology") / "b"
    truth = radiology_bundle(root)
    store, results, problems = ingest_bundle(root)
    assert not problems and all(r.outcome == "imported" and not r.problems for r in results)
    outcome = materialize.refresh(store)
    return store, truth, outcome


def test_cells_by_key_through_call_records(radiology) -> None:
    store, truth, outcome = radiology
    blocks, values = keyed_matrix(truth)
    assert outcome.source == "labels" and outcome.cells == int((~np.isnan(values)).sum())
    base, annotation, analysis = materialize.settings(store)
    grid = build_grid(store, base, annotation, analysis)
    got, sources = {}, {}
    for case, f in blocks:
        for cond in truth["conds"]:
            cell = grid.cell(case, f, cond)
            if cell is not None:
                got[case, f, cond] = cell.value
                sources[case, f, cond] = cell.sources
    want = {
        (case, f, truth["conds"][j]): int(values[i, j])
        for i, (case, f) in enumerate(blocks)
        for j in range(values.shape[1])
        if not np.isnan(values[i, j])
    }
    assert got == want
    # every cell derives from exactly its case's reference row and its call's candidate row
    for (case, _, cond), (ref, cand) in sources.items():
        cid = next(r for r in truth["calls"] if r[1:] == (case, cond))[0]
        assert ref == f"{BASE}label/reference.csv/{case}"
        assert cand == f"{BASE}label/labels.jsonl/outputs%2F{cid}.txt"
    # the graph's cell grid derives from exactly the rows used; every column from the grid
    rows = select(store, "SELECT ?row WHERE { ?g a pg:CellGrid ; prov:wasDerivedFrom ?row }")
    assert {r["row"] for r in rows} == {s for pair in sources.values() for s in pair}
    rows = select(
        store,
        """SELECT ?col ?grid WHERE { ?col a pg:MatrixColumn . OPTIONAL { ?col prov:wasDerivedFrom ?grid .
           ?grid a pg:CellGrid } }""",
    )
    assert rows and all(r["grid"] for r in rows)
    assert not select(store, "SELECT ?c WHERE { ?c a pg:Cell }")  # cells are not nodes


def test_q_and_mcnemar_match_statsmodels_on_the_keyed_matrix(radiology) -> None:
    store, truth, _ = radiology
    _, values = keyed_matrix(truth)
    y = values[~np.isnan(values).any(axis=1)].astype(int)
    ref = cochrans_q(y)
    assert stat_value(store, "cochran_q") == pytest.approx(ref.statistic, rel=1e-12)
    assert stat_value(store, "cochran_q_p") == pytest.approx(ref.pvalue, rel=1e-9)
    for a, b in combinations(range(len(truth["conds"])), 2):
        x, z = y[:, a], y[:, b]
        t = [
            [((x == 1) & (z == 1)).sum(), ((x == 1) & (z == 0)).sum()],
            [((x == 0) & (z == 1)).sum(), ((x == 0) & (z == 0)).sum()],
        ]
        ca, cb = truth["conds"][a], truth["conds"][b]
        pair = (
            f'?s pg:testVariant "exact" ; pg:firstCondition <{BASE}condition/{ca}> ; '
            f"pg:secondCondition <{BASE}condition/{cb}> ."
        )
        assert stat_value(store, "mcnemar_p", extra=pair) == pytest.approx(
            mcnemar(t, exact=True).pvalue, rel=1e-12
        )


def test_statistic_derives_from_exactly_the_cells_it_used(radiology) -> None:
    store, truth, _ = radiology
    blocks, values = keyed_matrix(truth)
    kept = ~np.isnan(values).any(axis=1)
    complete = int(kept.sum())
    text = "".join(f"{c}\t{f}\n" for c, f in sorted(b for b, k in zip(blocks, kept, strict=True) if k))
    keys = hashlib.sha256(text.encode()).hexdigest()
    rows = select(
        store,
        f"""SELECT ?col ?n ?keys WHERE {{
              ?s pg:statName "mcnemar_p" ; pg:testVariant "exact" ; pg:cohortRule "globally-complete" ;
                 pg:firstCondition <{BASE}condition/A> ; pg:secondCondition <{BASE}condition/B> ;
                 prov:wasDerivedFrom ?col .
              FILTER NOT EXISTS {{ ?s pg:cluster ?x }}
              ?col a pg:MatrixColumn ; pg:n ?n ; pg:keySetSha256 ?keys }}""",
    )
    # the two columns hold exactly the globally complete blocks: n and the hash of their keys
    assert len(rows) == 2 and {int(r["n"]) for r in rows} == {complete}
    assert {r["keys"] for r in rows} == {keys}
    assert {r["col"].rsplit("/", 1)[1] for r in rows} == {"A", "B"}
    # and the matrix records the cohort: n, the key set, a missingness table by cause
    m = select(
        store,
        """SELECT ?n ?blocks ?keys WHERE { ?m a pg:KeyedMatrix ; pg:cohortRule "globally-complete" ; pg:n ?n ;
           pg:blockCount ?blocks ; pg:keySetSha256 ?keys }""",
    )
    assert int(m[0]["n"]) == complete and int(m[0]["blocks"]) == 12 * len(FINDINGS)
    causes = select(
        store,
        """SELECT ?cause ?cond ?count WHERE { ?m pg:cohortRule "globally-complete" ; pg:missingness ?x .
           ?x pg:cause ?cause ; pg:missingCount ?count . OPTIONAL { ?x pg:condition ?cond } }""",
    )
    by_cause = {(r["cause"], (r["cond"] or "").rsplit("/", 1)[-1]): int(r["count"]) for r in causes}
    assert by_cause[("output file empty (0 bytes)", "B")] >= 1  # C006 is s02 under B
    assert by_cause[("output not labelled", "C")] >= 1  # C011 is s03 under C, Edema not labelled
    assert any(c.startswith("reference UNCERTAIN excluded") for c, _ in by_cause)


def test_positional_route_is_a_named_sensitivity_beside_the_keyed_one(radiology) -> None:
    store, truth, _ = radiology
    _, values = keyed_matrix(truth)
    kept = [values[~np.isnan(values[:, j]), j] for j in range(values.shape[1])]
    n = min(len(k) for k in kept)
    positional = cochrans_q(np.array([k[:n] for k in kept]).T).statistic
    assert stat_value(store, "cochran_q", "positional-truncation") == pytest.approx(positional)
    assert positional != pytest.approx(stat_value(store, "cochran_q"))  # the gaps are asymmetric
    rows = select(
        store,
        """SELECT ?role ?primary ?mis WHERE { ?s pg:statName "cochran_q" ;
           pg:cohortRule "positional-truncation" ; pg:analysisRole ?role ; pg:sensitivityFor ?primary ;
           pg:cohort ?m . ?m pg:mispairedPositions ?mis .
           ?primary pg:cohortRule "globally-complete" }""",
    )
    assert rows[0]["role"] == "sensitivity" and int(rows[0]["mis"]) > 0


def test_patient_clustering_needs_patient_links(radiology) -> None:
    _, _, outcome = radiology
    assert any(s.cluster == "study" for s in outcome.stats)
    assert not any(s.cluster == "patient" for s in outcome.stats)
    assert any("no clustering by patient" in n for n in outcome.notes)


def load_turtle(store, key: str, turtle: str) -> None:
    """Load nodes another branch's importer would write (the interface), as their own slot."""
    with tempfile.TemporaryDirectory() as tmp:
        nt = Path(tmp) / "x.nt"
        with nt.open("wb") as fh:
            ox.serialize(ox.parse(turtle, format=ox.RdfFormat.TURTLE), fh, format=ox.RdfFormat.N_TRIPLES)
        catalog.replace(store, key, hashlib.sha256(turtle.encode()).hexdigest(), nt)


def test_clustering_by_patient_when_the_cohort_links_patients(tmp_path: Path) -> None:
    truth = radiology_bundle(tmp_path / "b", seed=4)
    store, _, _ = ingest_bundle(tmp_path / "b")
    # two studies of one patient, as the cohort importer (HMAC-minted patient IRIs) would say
    links = "".join(
        f"<{BASE}case/{c}> <{PG_NS}patient> <{BASE}patient/{'p' + str(i // 2)}> .\n"
        for i, c in enumerate(truth["cases"])
    )
    load_turtle(store, "cohort:fixture", links)
    outcome = materialize.refresh(store)
    by = {(s.name, s.cluster) for s in outcome.stats if s.cluster}
    assert ("cochran_q", "patient") in by and ("mcnemar_p", "patient") in by
    patient_q = next(s for s in outcome.stats if s.name == "cochran_q" and s.cluster == "patient")
    assert patient_q.cluster_count == 6


# --- reported cells (the audit's historical route) ---------------------------------------------


def test_reported_cell_matrix_reproduces_the_positional_defect(tmp_path: Path) -> None:
    """30 studies x 14 findings x 10 conditions, cells missing per condition: the keyed Q is
    statsmodels' Q on the globally complete rows; the positional route pairs other blocks."""
    rng = np.random.default_rng(20260728)
    findings = [f"F{i:02d}" for i in range(14)]
    conds = [f"M{j}" for j in range(10)]
    rows, values = ["case,finding,condition,cell"], np.full((420, 10), np.nan)
    bias = rng.uniform(0.55, 0.9, size=10)
    for i in range(420):
        case, finding = f"s{i // 14:02d}", findings[i % 14]
        for j, cond in enumerate(conds):
            if rng.random() < 0.012:
                continue  # a missing cell in this condition only
            ok = rng.random() < bias[j]
            values[i, j] = float(ok)
            rows.append(f"{case},{finding},{cond},{'TP' if ok else 'FP_minor'}")
    contract = f'[project]\nname = "t"\nbase_iri = "{BASE}"\n\n[analysis]\nclusters = []\n'
    root = write_bundle(tmp_path / "b", {"cells.csv": "\n".join(rows) + "\n"}, contract)
    store, _, _ = ingest_bundle(root)
    outcome = materialize.refresh(store)
    assert outcome.source == "reported"
    complete = values[~np.isnan(values).any(axis=1)]
    assert stat_value(store, "cochran_q") == pytest.approx(cochrans_q(complete).statistic, rel=1e-12)
    kept = [values[~np.isnan(values[:, j]), j] for j in range(10)]
    n = min(len(k) for k in kept)
    pos = cochrans_q(np.array([k[:n] for k in kept]).T).statistic
    assert stat_value(store, "cochran_q", "positional-truncation") == pytest.approx(pos, rel=1e-12)
    m = {x.route: x for x in outcome.matrices}
    assert m["globally-complete"].n == len(complete) and m["positional-truncation"].n == n > len(complete)
    # 45 pairs x 4 variants, each in the implicit all-pairs family
    primary_p = [
        s for s in outcome.stats if s.name == "mcnemar_p" and s.route == "globally-complete" and not s.cluster
    ]
    assert len(primary_p) == 45 * 4


# --- reviewer benchmark ----------------------------------------------------------------------


def reviewer_turtle() -> str:
    """2 flaw categories x (3 flawed + 3 sound scripts); sonnet reviewed 3 times, gpt once."""
    out = [f"@prefix pg: <{PG_NS}> .", f"@base <{BASE}> ."]

    def review(model: str, name: str, run: int, verdict: str | None, confidence: str = "HIGH") -> None:
        node = f"<review/{model}/{name}/{run}> a pg:Review ; pg:case <case/{name}> ; "
        node += f"pg:condition <condition/{model}> ; pg:replicate {run}"
        if verdict:  # a failed call has no verdict
            node += f' ; pg:verdict "{verdict}" ; pg:confidence "{confidence}"'
        out.append(node + " .")

    scripts = []
    for cat_i, cat in enumerate(["leakage", "survivorship"]):
        for k in range(6):
            name = f"script_{cat_i * 6 + k + 1:02d}"
            flawed = k < 3
            scripts.append((name, flawed))
            out.append(
                f"<answer/{name}> a pg:AnswerKeyEntry ; pg:case <case/{name}> ; "
                f'pg:isFlawed {str(flawed).lower()} ; pg:category "{cat}" .'
            )
    # sonnet: flags every flawed script; sound script_04 flagged in runs 1-2, script_10 in run 3
    for run in (1, 2, 3):
        for name, flawed in scripts:
            fail = flawed or (name == "script_04" and run < 3) or (name == "script_10" and run == 3)
            review("sonnet", name, run, "FAIL" if fail else "PASS", "HIGH" if fail else "MEDIUM")
    # gpt: one run; the call for script_08 (flawed) failed, and it misses script_09
    for name, flawed in scripts:
        fail = flawed and name != "script_09"
        review("gpt", name, 1, None if name == "script_08" else "FAIL" if fail else "PASS")
    # values as the benchmark reported them (issue-3 style: no tolerance recorded)
    out.append(
        '<reported/fpr> a pg:ReportedValue ; pg:statName "fpr" ; pg:value 0.17 ; '
        "pg:condition <condition/gpt> ."
    )
    out.append(
        '<reported/votes> a pg:ReportedValue ; pg:statName "fail_votes" ; pg:value 2 ; '
        "pg:case <case/script_04> ; pg:condition <condition/sonnet> ."
    )
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def reviews(tmp_path_factory):
    root = tmp_path_factory.mktemp("reviews") / "b"
    contract = f'[project]\nname = "t"\nbase_iri = "{BASE}"\n\n[analysis]\n'
    contract += "bootstrap = { resamples = 2000, seed = 9 }\n"
    write_bundle(root, {}, contract)
    store, _, _ = ingest_bundle(root)
    load_turtle(store, "reviews:fixture", reviewer_turtle())
    return store, materialize.refresh(store)


def find(outcome, name, cond, variant=None, run=None, **kw):
    hits = [
        s
        for s in outcome.stats
        if s.name == name and s.conditions == (cond,) and s.variant == variant and s.replicate == run
        and all(getattr(s, k) == v for k, v in kw.items())
    ]  # fmt: skip
    assert len(hits) == 1, [h.segments() for h in hits]
    return hits[0]


def test_reviewer_single_run_pooled_and_majority(reviews) -> None:
    _, outcome = reviews
    # sonnet run 1: TP 6, FN 0, FP 1 (script_04), TN 5
    assert find(outcome, "false_positive_rate", "sonnet", "single-run", 1).value == pytest.approx(1 / 6)
    assert find(outcome, "false_positive_rate", "sonnet", "single-run", 3).value == pytest.approx(1 / 6)
    assert find(outcome, "precision", "sonnet", "single-run", 1).value == pytest.approx(6 / 7)
    # pooled over 3 runs: 3 false positives of 18 sound reviews
    assert find(outcome, "false_positive_rate", "sonnet", "pooled-runs").value == pytest.approx(3 / 18)
    # majority: script_04 FAIL 2 of 3, script_10 FAIL 1 of 3 -> one false positive of 6
    assert find(outcome, "false_positive_rate", "sonnet", "majority-vote").value == pytest.approx(1 / 6)
    assert find(outcome, "fail_votes", "sonnet", case="script_04").value == 2
    assert find(outcome, "agreement_rate", "sonnet", case="script_04").value == pytest.approx(2 / 3)
    assert find(outcome, "majority_verdict_fail", "sonnet", case="script_10").value == 0
    # gpt: script_08 failed (no verdict) and script_09 was missed: DR = 4/5
    dr = find(outcome, "detection_rate", "gpt", "single-run", 1)
    assert dr.value == pytest.approx(4 / 5) and dr.n == 5
    cat = find(outcome, "category_detection_rate", "gpt", "single-run", 1)
    # survivorship: script_07 flagged, script_08 no verdict, script_09 missed -> 1 of 3: not detected
    assert cat.value == pytest.approx(1 / 2) and cat.n == 2
    assert find(outcome, "reviews_without_verdict", "gpt").value == 1


def test_reviewer_cluster_bootstrap_and_confidence_tiers(reviews) -> None:
    store, outcome = reviews
    low = find(outcome, "detection_rate_ci_low", "gpt", "single-run", 1)
    high = find(outcome, "detection_rate_ci_high", "gpt", "single-run", 1)
    assert low.cluster == "category" and low.resamples == 2000 and low.seed == 9 and low.cluster_count == 2
    # two categories: the resampled DR is 1 (leakage twice), 1/2 (survivorship twice) or 4/5
    assert low.value == pytest.approx(0.5) and high.value == pytest.approx(1.0)
    again = materialize.refresh(store, force=True)
    assert find(again, "detection_rate_ci_low", "gpt", "single-run", 1).value == low.value
    tier = find(outcome, "accuracy", "sonnet", "by-confidence", confidence="HIGH")
    assert tier.n == 6 * 3 + 3 and tier.value == pytest.approx(18 / 21)
    assert find(outcome, "false_positive_count", "sonnet", "by-confidence", confidence="HIGH").value == 3
    assert find(outcome, "accuracy", "sonnet", "by-confidence", confidence="MEDIUM").value == 1.0
    # the review set of a statistic holds exactly the reviews with a verdict and their key entries
    rows = select(
        store,
        f"""SELECT (COUNT(DISTINCT ?m) AS ?n) WHERE {{ ?s pg:statName "detection_rate" ;
            pg:testVariant "single-run" ; pg:condition <{BASE}condition/gpt> ; prov:wasDerivedFrom ?set .
            ?set prov:hadMember ?m . ?m a pg:Review }}""",
    )
    assert int(rows[0]["n"]) == 11


def test_reported_reviewer_values_are_matched_and_get_a_tolerance(reviews) -> None:
    store, outcome = reviews
    assert outcome.unmatched == []
    rows = select(
        store,
        """SELECT ?r ?tol ?v WHERE { ?r a pg:ReportedValue ; pg:tolerance ?tol ; pg:recomputedAs ?s .
            ?s pg:value ?v } ORDER BY ?r""",
    )
    got = {r["r"].rsplit("/", 1)[1]: (float(r["tol"]), float(r["v"])) for r in rows}
    assert got["fpr"] == (pytest.approx(0.005), 0.0)  # gpt flagged no sound script: 0.17 differs
    assert got["votes"] == (0.5, 2.0)


# --- refresh and the gate ----------------------------------------------------------------------


def test_refresh_is_a_noop_until_an_input_changes(tmp_path: Path) -> None:
    root = rule_bundle("analysis-reported-differs", "clean", tmp_path / "b")
    store, _, _ = ingest_bundle(root)
    assert materialize.refresh(store).status == "computed"
    assert materialize.refresh(store).status == "unchanged"
    stats = json.loads((root / "stats.json").read_text())
    stats["statistics"][0]["value"] = "9.99"
    (root / "stats.json").write_text(json.dumps(stats))
    ingest_bundle(root, store)
    outcome = materialize.refresh(store)
    assert outcome.status == "computed"
    report = run_gate(store, load_rules(), record=False)
    fired = {r.rule.id for r in report.results if r.outcome == "violated"}
    assert fired == {"analysis-reported-differs"}


def test_check_fails_closed_without_statistics(tmp_path: Path) -> None:
    contract = f'[project]\nname = "t"\nbase_iri = "{BASE}"\n\n[analysis]\n'
    root = write_bundle(
        tmp_path / "b",
        {"stats.json": json.dumps({"statistics": [{"name": "cochran_q", "value": 1}]})},
        contract,
    )
    store, _, _ = ingest_bundle(root)
    report = run_gate(store, load_rules(), record=False)
    analysis = [r for r in report.results if r.rule.clause == "analysis" and "harness" not in r.rule.applies]
    assert {r.outcome for r in analysis} == {"error"}
    # the harness rules apply only when [analysis] names a harness
    harness = [r for r in report.results if "harness" in r.rule.applies]
    assert harness and {r.outcome for r in harness} == {"not-applicable"}
    assert "missing evidence: the graph has no pg:Statistic nodes" in analysis[0].error
    assert not report.passed


def test_labeller_csv_is_tied_to_output_files_by_their_text(tmp_path: Path) -> None:
    """A CheXpert labeler CSV holds report text, not paths: the report's SHA-256 finds the output
    file, its call record and so its case and condition."""
    reports = {"C1": "No acute cardiopulmonary process.", "C2": "Moderate cardiomegaly. Mild edema.\n"}
    plan = "call_id,case,condition\nC1,s1,A\nC2,s1,B\n"
    calls = "".join(
        json.dumps({"call_id": c, "status": "ok", "output": f"out/{c}.txt"}) + "\n" for c in reports
    )
    csv = "Reports,Edema,Cardiomegaly\n"
    csv += '"No acute cardiopulmonary process.",0.0,\n"Moderate cardiomegaly. Mild edema.",1.0,1.0\n'
    files = {"plan.csv": plan, "calls.jsonl": calls, "labeled_reports.csv": csv}
    files.update({f"out/{c}.txt": text for c, text in reports.items()})
    files["reference.csv"] = "case,finding,state\ns1,Edema,POSITIVE\ns1,Cardiomegaly,NEGATIVE\n"
    root = write_bundle(
        tmp_path / "b", files, contract().replace(json.dumps(FINDINGS), '["Edema", "Cardiomegaly"]')
    )
    store, _, _ = ingest_bundle(root)
    outcome = materialize.refresh(store)
    base, annotation, analysis = materialize.settings(store)
    grid = build_grid(store, base, annotation, analysis)
    got = {
        (cond, f): cell.category
        for cond in ("A", "B")
        for f in ("Edema", "Cardiomegaly")
        if (cell := grid.cell("s1", f, cond)) is not None
    }
    # C1 (no trailing newline in the file) and C2 (file ends in a newline) are both found
    assert got == {
        ("A", "Edema"): "FN",
        ("A", "Cardiomegaly"): "TN",
        ("B", "Edema"): "TP",
        ("B", "Cardiomegaly"): "FP",
    }
    assert outcome.cells == 4


def test_conflicting_reference_labels_and_reference_files(tmp_path: Path) -> None:
    truth = radiology_bundle(tmp_path / "b", seed=2, cases=3, conditions=("A", "B"))
    first = next(k for k, v in truth["ref"].items() if v in ("POSITIVE", "NEGATIVE"))
    other = "NEGATIVE" if truth["ref"][first] == "POSITIVE" else "POSITIVE"
    (tmp_path / "b" / "negbio.csv").write_text(f"case,finding,state\n{first[0]},{first[1]},{other}\n")
    store, _, _ = ingest_bundle(tmp_path / "b")
    outcome = materialize.refresh(store)
    assert any(cause == "conflicting reference labels" for cause, _ in outcome.matrices[0].missing)
    # declaring which file is the reference settles it
    text = (tmp_path / "b" / "provgraph.toml").read_text()
    text = text.replace("[analysis]", 'reference_files = ["reference.csv"]\n\n[analysis]')
    (tmp_path / "b" / "provgraph.toml").write_text(text)
    ingest_bundle(tmp_path / "b", store)
    outcome = materialize.refresh(store)
    assert not any(cause == "conflicting reference labels" for cause, _ in outcome.matrices[0].missing)
