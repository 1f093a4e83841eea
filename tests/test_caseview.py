"""The per-case evidence view (provgraph/rules/caseview.py): every source of a case's patient,
view and split is found, a case no source names has none, and a changed import recomputes it.

The bundle is the cohort-view-not-allowed fixture pair's flawed twin (manifest, plan, call
records naming rendered PNGs, pydicom-written DICOMs linked by rendering records) plus the
MIMIC-CXR tables in their published column layout (PhysioNet, MIMIC-CXR-JPG 2.0.0,
``mimic-cxr-2.0.0-metadata.csv`` and ``mimic-cxr-2.0.0-split.csv``:
https://physionet.org/content/mimic-cxr-jpg/2.0.0/), as the rule fixtures write them.
"""

from __future__ import annotations

from pathlib import Path

from conftest import ingest_bundle, rule_bundle

from provgraph.lineage.gate import refresh_derived
from provgraph.rdf.vocab import PG_NS
from provgraph.rules import caseview

BASE = "https://example.org/cohort-view-not-allowed-flawed/"
META = (
    "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns\n"
    "4b8e2f1a-0c3d5e7f-91a2b3c4-d5e6f708-19a2b3c4,10000001,50000001,CHEST (PA AND LAT),PA,3056,2544\n"
    "7c1d9e2b-3f4a5b6c-7d8e9f01-a2b3c4d5-e6f70819,10000001,50000001,CHEST (PA AND LAT),LATERAL,3056,2544\n"
)
SPLIT = (
    "dicom_id,study_id,subject_id,split\n"
    "4b8e2f1a-0c3d5e7f-91a2b3c4-d5e6f708-19a2b3c4,50000001,10000001,test\n"
    "7c1d9e2b-3f4a5b6c-7d8e9f01-a2b3c4d5-e6f70819,50000002,10000002,validate\n"
)
# case 2 has no split in the manifest: the official table's stands; case 3 has no patient_key
# and no table row: its patient comes only from the header of the DICOM rendered for its calls
MANIFEST = (
    "case_key,patient_key,source,split,view,inclusion,reason\n"
    "50000001,10000001,mimic-cxr-2.0.0,test,PA,include,frontal\n"
    "50000002,10000002,mimic-cxr-2.0.0,,AP,include,frontal\n"
    "50000003,,mimic-cxr-2.0.0,,PA,include,frontal\n"
    "50000004,10000004,mimic-cxr-2.0.0,test,LATERAL,exclude,lateral view only\n"
)


def bundle(tmp_path: Path) -> Path:
    root = rule_bundle("cohort-view-not-allowed", "flawed", tmp_path / "b")
    (root / "cohort.csv").write_text(MANIFEST)
    (root / "mimic-cxr-2.0.0-metadata.csv").write_text(META)
    (root / "mimic-cxr-2.0.0-split.csv").write_text(SPLIT)
    with (root / "plan.csv").open("a") as fh:
        fh.write("C009,50000009,A\n")  # a planned case no source describes
    return root


def evidence(store, key: str, link: str) -> set[tuple[str, str, str]]:
    rows = store.select(
        f"PREFIX pg: <{PG_NS}>\nSELECT ?v ?from ?path WHERE {{ <{BASE}case/{key}> pg:{link} ?e . "
        "?e pg:evidenceValue ?v ; pg:evidenceFrom ?from OPTIONAL { ?e pg:evidencePath ?path } }"
    )
    out = set()
    for r in rows:
        value = r["v"].value
        out.add(
            (
                value.rsplit("/", 1)[-1][:8] if "/patient/" in value else value,
                r["from"].value,
                r["path"].value if r["path"] else "",
            )
        )
    return out


def value(store, key: str, prop: str) -> list[str]:
    rows = store.select(f"SELECT ?v WHERE {{ <{BASE}case/{key}> <{PG_NS}{prop}> ?v }} ORDER BY ?v")
    return [r["v"].value for r in rows]


def test_every_source_of_patient_view_and_split(tmp_path: Path) -> None:
    store, results, _ = ingest_bundle(bundle(tmp_path))
    assert all(r.outcome == "imported" for r in results), [(r.rel, r.problems) for r in results]
    refresh_derived(store)
    froms = {f for _, f, _ in evidence(store, "50000001", "patientEvidence")}
    assert froms == {"case", "node", "dicom"}
    paths = {p for _, f, p in evidence(store, "50000001", "patientEvidence") if f == "node"}
    assert paths == {"cohort.csv", "mimic-cxr-2.0.0-metadata.csv", "mimic-cxr-2.0.0-split.csv"}
    assert len({v for v, _, _ in evidence(store, "50000001", "patientEvidence")}) == 1  # one patient
    assert evidence(store, "50000001", "viewEvidence") == {
        ("PA", "manifest", "cohort.csv"),
        ("PA", "dicom", "dicom/50000001.dcm"),
        ("PA", "metadata", "mimic-cxr-2.0.0-metadata.csv"),
        ("LATERAL", "metadata", "mimic-cxr-2.0.0-metadata.csv"),
    }
    assert value(store, "50000001", "metadataImageCount") == ["2"]
    assert value(store, "50000003", "viewEvidence") and {
        f for _, f, _ in evidence(store, "50000003", "viewEvidence")
    } == {"manifest", "dicom"}
    # the DICOM header alone names case 3's patient
    assert {(f, p) for _, f, p in evidence(store, "50000003", "patientEvidence")} == {
        ("dicom", "dicom/50000003.dcm")
    }
    assert evidence(store, "50000001", "splitEvidence") == {
        ("test", "manifest", "cohort.csv"),
        ("test", "split-table", "mimic-cxr-2.0.0-split.csv"),
    }
    assert evidence(store, "50000002", "splitEvidence") == {
        ("validate", "split-table", "mimic-cxr-2.0.0-split.csv")
    }
    assert value(store, "50000002", "officialSplits") == ["validate"]
    assigned = store.select(
        f"PREFIX pg: <{PG_NS}>\nSELECT ?key ?from WHERE {{ ?c pg:assignedSplitFrom ?from ; pg:key ?key }}"
    )
    by_case = {r["key"].value: r["from"].value for r in assigned}
    assert by_case == {"50000001": "manifest", "50000002": "split-table"}  # case 3: none
    assert value(store, "50000002", "assignedSplit") == ["validate"]
    assert len(value(store, "50000003", "casePatient")) == 1  # from its DICOM alone
    assert value(store, "50000001", "plannedCallCount") == ["2"]
    assert value(store, "50000001", "includedEntry") == [f"{BASE}cohort-entry/50000001"]
    assert value(store, "50000004", "excludedEntry") == [f"{BASE}cohort-entry/50000004"]


def test_a_case_no_source_describes_has_no_evidence(tmp_path: Path) -> None:
    """Planned case 50000009 is in no manifest, table or DICOM: it has its planned calls and
    nothing else, which is what lets cohort-repeated-patient say "no patient key anywhere"."""
    store, _, _ = ingest_bundle(bundle(tmp_path))
    refresh_derived(store)
    assert value(store, "50000009", "plannedCallCount") == ["1"]
    for link in ("patientEvidence", "casePatient", "viewEvidence", "splitEvidence", "assignedSplit"):
        assert value(store, "50000009", link) == [], link


def test_a_changed_import_recomputes_the_view(tmp_path: Path) -> None:
    root = bundle(tmp_path)
    store, _, _ = ingest_bundle(root)
    refresh_derived(store)
    assert not caseview.refresh(store)  # nothing changed: kept
    assert value(store, "50000002", "officialSplits") == ["validate"]
    (root / "mimic-cxr-2.0.0-split.csv").write_text(SPLIT.replace("validate", "train"))
    ingest_bundle(root, store)
    assert caseview.refresh(store)
    assert value(store, "50000002", "officialSplits") == ["train"]
    graphs = store.select(f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?c <{PG_NS}officialSplits> ?s }} }}")
    assert len(graphs) == 1  # the old view graph was dropped
