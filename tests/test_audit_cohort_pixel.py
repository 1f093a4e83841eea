"""The audited benchmark's cohort and pixel failures, rebuilt from generated MIMIC-style tables
and pydicom-written DICOMs: 30 studies from 28 patients, split not retained in the manifest
(the selector admitted validation studies), blank view positions passing a frontal-only rule,
one lateral, and four MONOCHROME1 images rendered without inversion. The gate names each
failure on the historical bundle and passes the repaired one."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ingest_bundle
from fixtures.make_images import build

from provgraph.lineage.gate import run_gate
from provgraph.rdf.vocab import PG_NS
from provgraph.rules import load_rules

STUDIES = [str(50000000 + i) for i in range(1, 31)]
# two patients contribute two studies each: 30 studies, 28 patients
SUBJECT = {s: str(10000000 + i) for i, s in enumerate(STUDIES, start=1)}
SUBJECT[STUDIES[1]] = SUBJECT[STUDIES[0]]
SUBJECT[STUDIES[3]] = SUBJECT[STUDIES[2]]
BLANK = {STUDIES[2], STUDIES[4], STUDIES[5], STUDIES[6]}  # undocumented views, all MONOCHROME1
LATERAL = STUDIES[3]
FRONTAL = [s for s in STUDIES if s not in BLANK and s != LATERAL]
VIEW = (
    {s: "PA" if i < 14 else "AP" for i, s in enumerate(FRONTAL)} | dict.fromkeys(BLANK, "") | {LATERAL: "LL"}
)
VALIDATE = set(FRONTAL[-6:])  # the selector admitted official validation studies
CONDITIONS = ("claude-A", "claude-B")


def dicom_id(study: str) -> str:
    return f"{int(study):08x}-0000aaaa-1111bbbb-2222cccc-3333dddd"


def audit_bundle(root: Path, repaired: bool) -> Path:
    root.mkdir(parents=True)
    policy = "clustered" if repaired else "forbid"
    (root / "provgraph.toml").write_text(
        '[project]\nname = "cxr-pilot"\nbase_iri = "https://example.org/cxr-pilot/"\n\n'
        f'[cohort]\nmanifest = "cohort.csv"\nrepeated_patients = "{policy}"\n'
        'allowed_splits = ["test"]\nallowed_views = ["PA", "AP"]\n\n[pixel]\n'
    )
    (root / "mimic-cxr-2.0.0-metadata.csv").write_text(
        "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,StudyDate,"
        "StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,"
        "PatientOrientationCodeSequence_CodeMeaning\n"
        + "".join(
            f"{dicom_id(s)},{SUBJECT[s]},{s},CHEST,{VIEW[s]},8,8,21800101,120000,CHEST,,Erect\n"
            for s in STUDIES
        )
    )
    (root / "mimic-cxr-2.0.0-split.csv").write_text(
        "dicom_id,study_id,subject_id,split\n"
        + "".join(
            f"{dicom_id(s)},{s},{SUBJECT[s]},{'validate' if s in VALIDATE else 'test'}\n" for s in STUDIES
        )
    )
    if repaired:
        # frozen from the official test split; undocumented and lateral views excluded
        def decision(s: str) -> tuple[str, str]:
            if s in VALIDATE:
                return "exclude", "official validate split"
            if s in BLANK or s == LATERAL:
                return "exclude", "view not documented as frontal"
            return "include", "frontal test study"

        manifest = "case_key,patient_key,source,split,view,inclusion,reason\n" + "".join(
            f"{s},{SUBJECT[s]},mimic-cxr-2.0.0,{'validate' if s in VALIDATE else 'test'},{VIEW[s]},"
            + ",".join(decision(s))
            + "\n"
            for s in STUDIES
        )
        used = [s for s in STUDIES if decision(s)[0] == "include"]
    else:
        # the historical manifest: no split column, every study included
        manifest = "case_key,patient_key,source,view,inclusion,reason\n" + "".join(
            f"{s},{SUBJECT[s]},mimic-cxr-2.0.0,{VIEW[s]},include,PA preferred over AP\n" for s in STUDIES
        )
        used = STUDIES
    (root / "cohort.csv").write_text(manifest)
    calls = [(f"{s}-{c}", s, c) for s in used for c in CONDITIONS]
    (root / "plan.csv").write_text(
        "call_id,case,condition\n" + "".join(f"{i},{s},{c}\n" for i, s, c in calls)
    )
    (root / "calls.jsonl").write_text(
        "".join(
            json.dumps({"call_id": i, "status": "ok", "image": f"rendered/{s}.png"}) + "\n"
            for i, s, _ in calls
        )
    )
    spec = {
        "dicom": [
            {
                "path": f"dicom/{s}.dcm",
                "patient": SUBJECT[s],
                "view": VIEW[s],
                "photometric": "MONOCHROME1" if s in BLANK else "MONOCHROME2",
                "seed": int(s) % 97,
            }
            for s in STUDIES
        ],
        "render": [
            # the historical pipeline treated every image as MONOCHROME2
            {"source": f"dicom/{s}.dcm", "image": f"rendered/{s}.png"}
            | ({} if repaired else {"invert": False})
            for s in used
        ],
    }
    build(root, spec)
    return root


def gate(root: Path):
    store, results, problems = ingest_bundle(root)
    assert not problems and all(r.outcome == "imported" and not r.problems for r in results)
    return store, run_gate(store, load_rules(), record=False)


def test_historical_bundle_fails_each_cohort_and_pixel_control(tmp_path: Path) -> None:
    store, report = gate(audit_bundle(tmp_path / "historical", repaired=False))
    # one violation per piece of evidence (manifest, DICOM header): compare the cases named
    fired = {
        r.rule.id: sorted({report.short(v.focus) for v in r.violations})
        for r in report.results
        if r.violations
    }
    entries = lambda studies: sorted(f"cohort-entry/{s}" for s in studies)  # noqa: E731
    # the manifest kept no split, but the official split table names each study's: the
    # validation studies it lists are what fails (cohort-split-not-allowed), not a missing split
    assert fired == {
        "cohort-repeated-patient": entries(STUDIES[:4]),
        "cohort-split-not-allowed": entries(VALIDATE),
        "cohort-view-not-allowed": entries([LATERAL]),
        "cohort-view-undocumented": entries(BLANK),
        "pixel-monochrome-polarity": sorted(f"rendering/rendered/{s}.png" for s in BLANK),
        # the same reversed films, judged from the pixels each call sent (issue 18)
        "pixel-polarity-from-pixels": sorted(f"call/{s}-{c}" for s in BLANK for c in CONDITIONS),
    }
    assert not report.passed
    # the graph answers "how many studies, how many patients" at both levels
    (row,) = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT (COUNT(DISTINCT ?case) AS ?studies) (COUNT(DISTINCT ?patient) AS ?patients) WHERE {{
          ?e a pg:CohortEntry ; pg:included true ; pg:case ?case ; pg:patient ?patient }}"""
    )
    assert (int(row["studies"].value), int(row["patients"].value)) == (30, 28)
    messages = " ".join(v.message for r in report.results for v in r.violations)
    assert f"case {LATERAL} has view LL according to the cohort manifest" in messages
    assert f"case {LATERAL} has view LL according to the header of dicom/{LATERAL}.dcm" in messages
    assert "without inversion: the model saw reversed polarity" in messages
    assert "is in split validate according to the split table mimic-cxr-2.0.0-split.csv" in messages


def test_repaired_bundle_passes_the_gate(tmp_path: Path) -> None:
    _, report = gate(audit_bundle(tmp_path / "repaired", repaired=True))
    # only the cohort and pixel clauses are declared; every other clause is skipped
    ours = [r for r in report.results if r.rule.clause in ("cohort", "pixel")]
    assert {
        r.rule.id: r.error or [v.message for v in r.violations] for r in ours if r.outcome != "pass"
    } == {}
    assert {r.outcome for r in report.results if r not in ours} <= {"skipped"}
    assert report.passed
