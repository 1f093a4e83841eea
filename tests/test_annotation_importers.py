"""Importers of labels, extractor caches and reported analysis outputs, on files the tests write."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import CONTRACT, ingest_bundle, write_bundle

from provgraph.bundle.layout import Bundle
from provgraph.evidence import labelrows
from provgraph.ingest.planner import plan_bundle
from provgraph.rdf.vocab import PG_NS

FINDINGS = "No Finding,Enlarged Cardiomediastinum,Cardiomegaly,Lung Lesion,Lung Opacity,Edema,Consolidation,Pneumonia,Atelectasis,Pneumothorax,Pleural Effusion,Pleural Other,Fracture,Support Devices"  # noqa: E501
# The CheXpert labeler's own sample output: multi-line quoted reports, 1.0/0.0/-1.0/blank.
CHEXPERT_CSV = (
    f"Reports,{FINDINGS}\n"
    "Heart size normal and lungs are clear. No edema or pneumonia. No effusion,1.0,,0.0,,,0.0,,0.0,,,0.0,,,\n"
    '"1. Left pleural effusion with adjacent atelectasis. Right effusion is also present.\n\n'
    '2. Cardiomegaly without overt edema.",,,1.0,,,0.0,,,1.0,,1.0,,,\n'
    '"Minimal patchy airspace disease within the lingula, may reflect atelectasis or consolidation.",'
    ",,,,1.0,,-1.0,,-1.0,,,,,\n"
)
PREFIX = f"PREFIX pg: <{PG_NS}> PREFIX prov: <http://www.w3.org/ns/prov#> "


def select(store, query: str) -> list[dict]:
    return [
        {k: (v.value if v is not None else None) for k, v in r.items()} for r in store.select(PREFIX + query)
    ]


def labels(store, cls: str, extra: str = "", where: str = "") -> list[dict]:
    """One dict per label: the label row's columns ``extra`` plus ``finding`` and ``state``,
    expanded from the row's pg:findingOrder and pg:labelStates."""
    rows = select(
        store,
        f"SELECT ?l ?order ?states {extra} WHERE {{ ?l a {cls} ; pg:findingOrder ?order ; "
        f"pg:labelStates ?states . {where} }}",
    )
    out = []
    for r in rows:
        for finding, state in labelrows.decode(r.pop("order"), r.pop("states")):
            out.append({**r, "finding": finding, "state": state})
    return out


def importers_of(root: Path) -> dict[str, str]:
    bundle = Bundle.open(root)
    plan, problems = plan_bundle(bundle, root)
    assert problems == []
    return {bundle.relpath(p): i.name for p, i in plan}


def dump(store) -> str:
    buf = io.BytesIO()
    store.dump(buf, ox.RdfFormat.N_QUADS)
    return buf.getvalue().decode()


def cache_line(**kw) -> str:
    base = {"report": "outputs/C1.txt", "finding": "Edema", "state": "POSITIVE", "extractor": "gpt-x"}
    base.update({"max_input_chars": 4000, "input_chars": 1200, "raw_response": '{"Edema": "POSITIVE"}'})
    base.update(kw)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


def test_detection_assigns_each_format(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "labeled_reports.csv": CHEXPERT_CSV,
            "chexbert.csv": f"Report Impression,{FINDINGS}\nok,1,,0,,,,,,,,,,,\n",
            "mimic-cxr-2.0.0-chexpert.csv": "subject_id,study_id,Atelectasis,Edema\n10000032,50414267,1.0,\n",
            "reference.csv": "case,finding,state\ns1,Edema,POSITIVE\n",
            "labels.jsonl": cache_line() + "\n",
            "stats.json": json.dumps({"statistics": [{"name": "cochran_q", "value": 1.5}]}),
            "stats.csv": "name,value,n\ncochran_q,1.5,10\n",
            "cells.csv": "case,finding,condition,cell\ns1,Edema,A,TP\n",
        },
        CONTRACT,
    )
    got = importers_of(root)
    assert got["labeled_reports.csv"] == "chexpert-labels"
    assert got["chexbert.csv"] == "chexbert-labels"
    assert got["mimic-cxr-2.0.0-chexpert.csv"] == "mimic-reference"
    assert got["reference.csv"] == "reference-labels"
    assert got["labels.jsonl"] == "extractor-cache"
    assert got["stats.json"] == got["stats.csv"] == "reported-stats"
    assert got["cells.csv"] == "reported-cells"


def test_extractor_cache_records_extraction_and_labels(tmp_path: Path) -> None:
    lines = [
        cache_line(),
        cache_line(finding="Cardiomegaly", state="uncertain"),
        cache_line(
            report="outputs/C2.txt",
            raw_response=...,
            raw_response_sha256="a" * 64,
            case="s1",
            condition="B",
            decoding={"temperature": 0, "top_p": 1},
        ),
    ]
    root = write_bundle(tmp_path / "b", {"labels.jsonl": "\n".join(lines) + "\n"}, CONTRACT)
    store, results, _problems = ingest_bundle(root)
    assert [p for r in results for p in r.problems] == []
    ext = select(
        store,
        """SELECT ?x ?used ?max ?chars ?kept ?hash ?decoding WHERE { ?x a pg:Extraction ; prov:used ?used ;
           pg:maxInputChars ?max ; pg:inputChars ?chars . OPTIONAL { ?x pg:rawResponseIn ?kept }
           OPTIONAL { ?x pg:rawResponseSha256 ?hash } OPTIONAL { ?x pg:decoding ?decoding } }
           ORDER BY ?used""",
    )
    assert [e["used"].rsplit("/file/", 1)[1] for e in ext] == ["outputs/C1.txt", "outputs/C2.txt"]
    assert ext[0]["kept"].endswith("/file/labels.jsonl") and len(ext[0]["hash"]) == 64
    assert ext[1]["kept"] is None and ext[1]["hash"] == "a" * 64
    assert json.loads(ext[1]["decoding"]) == {"temperature": 0, "top_p": 1}
    found = labels(
        store,
        "pg:CandidateLabelRow",
        "?file ?case ?cond",
        """?l prov:wasGeneratedBy ?x ; prov:wasDerivedFrom ?file . ?x prov:used ?file .
           OPTIONAL { ?l pg:case ?case } OPTIONAL { ?l pg:condition ?cond }""",
    )
    found.sort(key=lambda r: (r["file"], r["state"]))
    assert [r["state"] for r in found] == ["POSITIVE", "UNCERTAIN", "POSITIVE"]
    assert found[2]["case"].endswith("/case/s1") and found[2]["cond"].endswith("/condition/B")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (cache_line(state="MAYBE"), "unknown state 'MAYBE'"),
        (cache_line(reprot="x"), "unknown key(s) reprot"),
        (cache_line(finding=...), "missing required key 'finding'"),
        (cache_line(input_chars="1200"), "input_chars must be int or null, got str"),
        (
            cache_line(raw_response_sha256="b" * 64),
            "raw_response_sha256 does not match the raw_response text",
        ),
        (cache_line(report="../outside.txt"), "lies outside the bundle"),
        (
            cache_line(finding="Pneumonia", max_input_chars=8000),
            "max_input_chars differs from line 1 for the same report outputs/C1.txt",
        ),
        (cache_line(), "is labelled twice (first on line 1)"),
        ("[1, 2]", "expected a JSON object, got list"),
    ],
)
def test_extractor_cache_bad_records(tmp_path: Path, line: str, reason: str) -> None:
    root = write_bundle(tmp_path / "b", {"labels.jsonl": cache_line() + "\n" + line + "\n"}, CONTRACT)
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "labels.jsonl"]
    (problem,) = result.problems
    assert str(problem).startswith("labels.jsonl:2: ") and reason in str(problem)
    assert result.records == 1


def test_chexpert_labeler_output(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"labeled_reports.csv": CHEXPERT_CSV}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert [p for r in results for p in r.problems] == []
    rows = labels(store, "pg:CandidateLabelRow", "?line", "?l pg:sourceLine ?line .")
    by_line: dict[int, dict[str, str]] = {}
    for r in rows:
        by_line.setdefault(int(r["line"]), {})[r["finding"]] = r["state"]
    assert len(by_line) == 3 and all(len(v) == 14 for v in by_line.values())
    first, second, third = (by_line[k] for k in sorted(by_line))
    assert first["No Finding"] == "POSITIVE" and first["Cardiomegaly"] == "NEGATIVE"
    assert first["Atelectasis"] == "NOT_MENTIONED"
    assert second["Pleural Effusion"] == "POSITIVE" and second["Edema"] == "NEGATIVE"
    assert third["Consolidation"] == "UNCERTAIN" and third["Lung Opacity"] == "POSITIVE"
    ext = select(
        store, "SELECT ?x (COUNT(?h) AS ?n) WHERE { ?x a pg:Extraction ; pg:reportSha256 ?h } GROUP BY ?x"
    )
    assert len(ext) == 3 and {int(e["n"]) for e in ext} == {2}  # the text, and the text + newline


def test_chexbert_encodings(tmp_path: Path) -> None:
    raw = f"Report Impression,{FINDINGS}\nr1,1,0,2,3,0,0,0,0,0,0,0,0,0,0\n"
    converted = f"Report Impression,{FINDINGS}\nr1,1.0,,0.0,-1.0,,,,,,,,,,\n"
    ambiguous = f"Report Impression,{FINDINGS}\nr1,1,0,0,1,0,0,0,0,0,0,0,0,0,0\n"
    root = write_bundle(
        tmp_path / "b", {"raw.csv": raw, "conv.csv": converted, "amb.csv": ambiguous}, CONTRACT
    )
    store, results, _ = ingest_bundle(root)
    by = {r.rel: r for r in results}
    assert by["amb.csv"].outcome == "failed"
    assert "only the values 0 and 1 occur" in by["amb.csv"].error
    assert 'chexbert_encoding = "raw" or "converted"' in by["amb.csv"].error
    rows = labels(
        store,
        "pg:CandidateLabelRow",
        "?path ?enc",
        "?l pg:sourceFile/pg:path ?path ; prov:wasGeneratedBy/pg:labelEncoding ?enc .",
    )
    states = {(r["path"], r["finding"]): r["state"] for r in rows}
    assert states["raw.csv", "Enlarged Cardiomediastinum"] == "NOT_MENTIONED"  # raw 0 = blank
    assert states["raw.csv", "Cardiomegaly"] == "NEGATIVE"  # raw 2
    assert states["raw.csv", "Lung Lesion"] == "UNCERTAIN"  # raw 3
    assert states["conv.csv", "Cardiomegaly"] == "NEGATIVE"  # converted 0
    assert states["conv.csv", "Lung Lesion"] == "UNCERTAIN"  # converted -1
    encodings = {r["path"]: r["enc"] for r in rows}
    assert encodings["raw.csv"].startswith("CheXbert raw classes 0-3")
    assert encodings["conv.csv"].startswith("CheXpert coding")
    # the contract can settle an ambiguous file
    contract = CONTRACT + '\n[annotation]\nchexbert_encoding = "converted"\n'
    root2 = write_bundle(tmp_path / "c", {"amb.csv": ambiguous}, contract)
    _, results, _ = ingest_bundle(root2)
    assert {r.rel: r.outcome for r in results}["amb.csv"] == "imported"


def test_mimic_reference_never_stores_subject_id(tmp_path: Path) -> None:
    csv = (
        "subject_id,study_id,Atelectasis,Cardiomegaly,Edema,No Finding\n"
        "10000032,50414267,1.0,,-1.0,\n"
        "10000032,53189527,,0.0,,1.0\n"
        "10000764,57375967,2.0,,,\n"
    )
    root = write_bundle(tmp_path / "b", {"mimic-cxr-2.0.0-negbio.csv": csv}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel.startswith("mimic")]
    assert [str(p) for p in result.problems] == [
        "mimic-cxr-2.0.0-negbio.csv:4: Atelectasis: unknown label value '2.0' "
        "(expected 1.0, 0.0, -1.0 or blank)"
    ]
    text = dump(store)
    assert "10000032" not in text and "10000764" not in text
    rows = labels(
        store, "pg:ReferenceLabelRow", "?case ?labeller", "?l pg:case ?case ; pg:extractor ?labeller ."
    )
    got = sorted(
        (r["case"].rsplit("/", 1)[1], r["state"], r["labeller"]) for r in rows if r["finding"] == "Edema"
    )
    assert got == [("50414267", "UNCERTAIN", "negbio"), ("53189527", "NOT_MENTIONED", "negbio")]


def test_canonical_reference_labels(tmp_path: Path) -> None:
    csv = "case,finding,state\ns1,Edema,positive\ns1,Edema,NEGATIVE\ns2,Edema,sure\n"
    csv += "s2,Pneumonia,NOT_MENTIONED\n"
    root = write_bundle(tmp_path / "b", {"reference.csv": csv}, CONTRACT)
    _store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "reference.csv"]
    assert [str(p) for p in result.problems] == [
        "reference.csv:3: case s1, finding Edema is labelled twice (first on line 2)",
        "reference.csv:4: unknown state 'sure' (one of POSITIVE, NEGATIVE, UNCERTAIN, NOT_MENTIONED)",
    ]
    assert result.records == 2
    # one row per case, its labels in file order, located at the case's first line
    rows = select(
        _store,
        "SELECT ?case ?order ?states ?line WHERE { ?l a pg:ReferenceLabelRow ; pg:case ?case ; "
        "pg:findingOrder ?order ; pg:labelStates ?states ; pg:sourceLine ?line }",
    )
    got = sorted((r["case"].rsplit("/", 1)[1], r["order"], r["states"], int(r["line"])) for r in rows)
    assert got == [("s1", "|Edema|", "P", 2), ("s2", "|Pneumonia|", "M", 5)]


def test_reported_statistics_keep_written_precision(tmp_path: Path) -> None:
    doc = """{"statistics": [
      {"name": "cochran_q", "value": 154.70, "n": 383, "cohort_rule": "globally-complete"},
      {"name": "cochran_q_p", "value": "1.684e-34"},
      {"name": "mcnemar_p", "conditions": ["A", "B"], "test_variant": "exact", "value": 0.0312},
      {"name": "false_positive_rate", "condition": "sonnet", "value": "39%"},
      {"name": "significant_count", "value": 27, "adjustment": "none", "test_variant": "exact"}
    ]}"""
    root = write_bundle(tmp_path / "b", {"stats.json": doc}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert [p for r in results for p in r.problems] == []
    rows = select(
        store,
        """SELECT ?name ?v ?dt ?tol ?a ?b WHERE { ?r a pg:ReportedValue ; pg:statName ?name ; pg:value ?v ;
           pg:tolerance ?tol . BIND(DATATYPE(?v) AS ?dt)
           OPTIONAL { ?r pg:firstCondition ?a ; pg:secondCondition ?b } }""",
    )
    got = {r["name"]: r for r in rows}
    assert float(got["cochran_q"]["v"]) == 154.7 and float(got["cochran_q"]["tol"]) == 0.005
    assert got["cochran_q"]["dt"].endswith("#decimal")
    assert got["cochran_q_p"]["dt"].endswith("#double")  # beyond 18 decimal places
    assert float(got["cochran_q_p"]["v"]) == 1.684e-34 and float(got["cochran_q_p"]["tol"]) == pytest.approx(
        5e-38
    )
    assert float(got["mcnemar_p"]["tol"]) == pytest.approx(5e-5)
    assert got["mcnemar_p"]["a"].endswith("/condition/A") and got["mcnemar_p"]["b"].endswith("/condition/B")
    assert (
        float(got["false_positive_rate"]["v"]) == 0.39 and float(got["false_positive_rate"]["tol"]) == 0.005
    )
    assert float(got["significant_count"]["tol"]) == 0.5


def test_reported_statistics_bad_records(tmp_path: Path) -> None:
    csv = (
        "name,value,n,condition,condition_b,test_variant\n"
        "cochran_q,abc,10,,,\n"
        "mcnemar_p,0.5,ten,A,B,exact\n"
        "mcnemar_p,0.5,10,A,B,exact\n"
        "mcnemar_p,0.6,10,A,B,exact\n"
        ",0.5,10,,,\n"
    )
    root = write_bundle(tmp_path / "b", {"stats.csv": csv}, CONTRACT)
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "stats.csv"]
    assert [str(p) for p in result.problems] == [
        "stats.csv:2: value 'abc' is not a number",
        "stats.csv:3: n must be int or null, got str 'ten'",
        "stats.csv:5: the same statistic is reported twice (first at line 4)",
        "stats.csv:6: missing required key 'name'",
    ]
    assert result.records == 1
    doc = json.dumps({"statistics": [{"name": "q", "value": True}, {"value": 1}]})
    root = write_bundle(tmp_path / "c", {"stats.json": doc}, CONTRACT)
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "stats.json"]
    assert [str(p) for p in result.problems] == [
        "stats.json: statistics[0]: value must be int or number or str, got bool True",
        "stats.json: statistics[1]: missing required key 'name'",
    ]


def test_reported_cells(tmp_path: Path) -> None:
    csv = (
        "case,finding,condition,cell\n"
        "s1,Edema,A,TP\ns1,Edema,B,FP_minor\ns1,Edema,C,\ns1,Pneumonia,A,FN_severe\ns1,Edema,A,TN\n"
        "s2,Edema,A,fp (moderate)\n"
    )
    root = write_bundle(tmp_path / "b", {"cells.csv": csv}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "cells.csv"]
    assert [str(p) for p in result.problems] == [
        "cells.csv:5: a severity belongs to FP cells only, got 'FN_severe'",
        "cells.csv:6: case s1, finding Edema, condition A appears twice (first on line 2)",
    ]
    rows = select(
        store,
        """SELECT ?cat ?sev WHERE { ?c a pg:ReportedCell ; pg:cellCategory ?cat .
           OPTIONAL { ?c pg:fpSeverity ?sev } }""",
    )
    assert sorted((r["cat"], r["sev"]) for r in rows) == [("FP", "minor"), ("FP", "moderate"), ("TP", None)]
