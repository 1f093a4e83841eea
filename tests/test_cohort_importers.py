"""Cohort manifest, MIMIC-CXR tables, rendering records and the [cohort]/[pixel] contract
sections: what each keeps, and bad records reported line by line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import CONTRACT, ingest_bundle, write_bundle
from fixtures.make_images import write_dicom

from provgraph.bundle.layout import Bundle
from provgraph.capture.renderer import render_file
from provgraph.errors import ContractError
from provgraph.evidence.renderings import FORMAT
from provgraph.ingest.planner import plan_bundle
from provgraph.rdf.vocab import PG_NS

PREFIX = f"PREFIX pg: <{PG_NS}>\n"
COHORT = CONTRACT + '\n[cohort]\nallowed_splits = ["test"]\nallowed_views = ["PA", "AP"]\n'
SHA = "0" * 64


def problems_of(results, rel: str) -> list[str]:
    (result,) = [r for r in results if r.rel == rel]
    assert result.outcome == "imported", result.error
    return [str(p) for p in result.problems]


def rows(store, query: str) -> list[tuple]:
    return [
        tuple(v.value if v is not None else None for v in r.values()) for r in store.select(PREFIX + query)
    ]


def test_cohort_manifest(tmp_path: Path) -> None:
    manifest = (
        "case_key,patient_key,source,split,view,inclusion,reason\n"
        "50000001,10000001,mimic-cxr,Test,pa,include,frontal\n"
        "50000002,,mimic-cxr,,,Excluded,lateral only\n"
        "50000001,10000009,mimic-cxr,test,PA,yes,again\n"
        ",10000003,mimic-cxr,test,PA,include,\n"
        "50000004,10000004,mimic-cxr,test,PA,perhaps,\n"
        "50000005,10000005,mimic-cxr,test\n"
    )
    root = write_bundle(tmp_path / "b", {"cohort.csv": manifest}, COHORT)
    store, results, _ = ingest_bundle(root)
    assert problems_of(results, "cohort.csv") == [
        "cohort.csv:4: case '50000001' is listed twice (first on line 2)",
        "cohort.csv:5: empty case_key",
        "cohort.csv:6: case '50000004': inclusion must be include or exclude, got 'perhaps'",
        "cohort.csv:7: expected 7 fields, found 4",
    ]
    got = rows(
        store,
        """SELECT ?key ?included ?split ?view ?source ?reason (BOUND(?p) AS ?patient) WHERE {
             ?e a pg:CohortEntry ; pg:key ?key ; pg:included ?included ; pg:sourceDataset ?source .
             OPTIONAL { ?e pg:split ?split } OPTIONAL { ?e pg:viewPosition ?view }
             OPTIONAL { ?e pg:inclusionReason ?reason } OPTIONAL { ?e pg:patient ?p } } ORDER BY ?key""",
    )
    assert got == [
        ("50000001", "true", "test", "PA", "mimic-cxr", "frontal", "true"),
        # a blank split is not stated; a blank view is stated as blank (undocumented)
        ("50000002", "false", None, "", "mimic-cxr", "lateral only", "false"),
    ]
    root2 = write_bundle(tmp_path / "c", {"cohort.csv": "case_key,patient_key\n1,2\n"}, COHORT)
    _, results, _ = ingest_bundle(root2)
    # without an inclusion column it is not a cohort manifest: only inventoried
    assert [r.importer for r in results if r.rel == "cohort.csv"] == ["files"]


def test_cohort_manifest_missing_column_fails_the_file(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"cohort.csv": "case_key,split\n1,test\n"}, COHORT)
    bundle = Bundle.open(root)
    from provgraph.ingest.registry import get
    from provgraph.ingest.run import ingest_source
    from provgraph.store import open_store

    result = ingest_source(open_store(None), bundle, root / "cohort.csv", get("cohort"))
    assert result.outcome == "failed"
    assert result.error == "cohort.csv:1: missing column(s) inclusion (header: case_key, split)"


METADATA = (
    "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,StudyDate,"
    "StudyTime,ProcedureCodeSequence_CodeMeaning,ViewCodeSequence_CodeMeaning,"
    "PatientOrientationCodeSequence_CodeMeaning\n"
    "d1,10000032,50414267,CHEST (PA AND LAT),PA,3056,2544,21800506,213014.531,CHEST (PA AND LAT),"
    "postero-anterior,Erect\n"
    "d2,10000032,50414267,CHEST (PA AND LAT),LATERAL,3056.0,2544.0,21800506,213014.531,CHEST (PA AND LAT),"
    "lateral,Erect\n"
    "d3,10000033,53189527,CHEST (PORTABLE AP),,2705,2539,21800626,165500,CHEST (PORTABLE AP),,\n"
    "d1,10000032,50414267,CHEST,PA,1,1,21800506,1,CHEST,x,Erect\n"
    "d4,,50414268,CHEST,PA,1,1,21800506,1,CHEST,x,Erect\n"
    "d5,10000034,50414269,CHEST,PA,big,1,21800506,1,CHEST,x,Erect\n"
)
SPLIT = (
    "dicom_id,study_id,subject_id,split\n"
    "d1,50414267,10000032,train\nd3,53189527,10000033,TEST\nd9,1,2,holdout\n"
)


def test_mimic_tables(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {"mimic-cxr-2.0.0-metadata.csv": METADATA, "mimic-cxr-2.0.0-split.csv": SPLIT},
        CONTRACT,
    )
    bundle = Bundle.open(root)
    plan, _ = plan_bundle(bundle, root)
    assert {bundle.relpath(p): i.name for p, i in plan if p.suffix == ".csv"} == {
        "mimic-cxr-2.0.0-metadata.csv": "mimic-metadata",
        "mimic-cxr-2.0.0-split.csv": "mimic-split",
    }
    store, results, _ = ingest_bundle(root)
    assert problems_of(results, "mimic-cxr-2.0.0-metadata.csv") == [
        "mimic-cxr-2.0.0-metadata.csv:5: dicom_id 'd1' is listed twice (first on line 2)",
        "mimic-cxr-2.0.0-metadata.csv:6: empty subject_id",
        "mimic-cxr-2.0.0-metadata.csv:7: dicom_id 'd5': Rows must be a whole number, got 'big'",
    ]
    assert problems_of(results, "mimic-cxr-2.0.0-split.csv") == [
        "mimic-cxr-2.0.0-split.csv:4: dicom_id 'd9': split must be one of train, validate, test, "
        "got 'holdout'"
    ]
    got = rows(
        store,
        """SELECT ?id ?case ?view ?rows WHERE { ?m a pg:ImageMetadata ; pg:dicomId ?id ; pg:case ?case ;
             pg:viewPosition ?view ; pg:imageRows ?rows } ORDER BY ?id""",
    )
    assert got == [
        ("d1", "https://example.org/t/case/50414267", "PA", "3056"),
        ("d2", "https://example.org/t/case/50414267", "LATERAL", "3056"),
        ("d3", "https://example.org/t/case/53189527", "", "2705"),
    ]
    splits = (
        "SELECT ?id ?split WHERE { ?s a pg:SplitAssignment ; pg:dicomId ?id ; pg:split ?split } ORDER BY ?id"
    )
    assert rows(store, splits) == [("d1", "train"), ("d3", "test")]
    # one patient node per subject, shared by both tables; dates and raw ids are not stored
    assert rows(store, "SELECT (COUNT(DISTINCT ?p) AS ?n) WHERE { ?x pg:patient ?p }") == [("2",)]
    buf = io.BytesIO()
    store.dump(buf, ox.RdfFormat.N_QUADS)
    text = buf.getvalue().decode()
    assert "21800506" not in text and "10000032" not in text and "213014" not in text


def record(**over) -> dict:
    value = {
        "format": FORMAT,
        "source": "../dicom/a.dcm",
        "source_sha256": SHA,
        "image": "a.png",
        "image_sha256": SHA,
        "photometric": "MONOCHROME2",
        "inverted": False,
        "renderer": "in-house",
        "renderer_version": "2.1",
    }
    value.update(over)
    return value


def test_rendering_records_jsonl(tmp_path: Path) -> None:
    lines = [
        record(voi_transform="window", window_center=40, window_width=400, x_batch="7"),
        record(image="b.png", inverted=1),
        record(image="c.png", colour="grey"),
        record(image="d.png", image_sha256="ABC"),
        record(image="e.png", format="other/1"),
        record(image="f.png", voi_transform="window"),
        record(),
        record(image="../../outside.png", source="/nowhere/x.dcm"),
    ]
    text = "".join(json.dumps(v) + "\n" for v in lines) + "{not json\n"
    root = write_bundle(tmp_path / "b", {"rendered/renderings.jsonl": text}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert problems_of(results, "rendered/renderings.jsonl") == [
        "rendered/renderings.jsonl:2: inverted must be true/false, got int",
        "rendered/renderings.jsonl:3: unknown key(s) colour (allowed: format, source, source_sha256, image, "
        "image_sha256, photometric, inverted, renderer, renderer_version, modality_transform, voi_transform, "
        "window_center, window_width, bits_stored, output_bits, libraries, rendered_at, x_*)",
        "rendered/renderings.jsonl:4: image_sha256 must be 64 lower-case hex digits, got 'ABC'",
        "rendered/renderings.jsonl:5: format must be 'provgraph.rendering/1', got 'other/1'",
        "rendered/renderings.jsonl:6: voi_transform 'window' needs window_center and window_width",
        "rendered/renderings.jsonl:7: image rendered/a.png already has a rendering record "
        "(rendered/renderings.jsonl:1)",
        "rendered/renderings.jsonl:9: malformed JSON: Expecting property name enclosed in double quotes "
        "(column 2)",
    ]
    got = rows(
        store,
        """SELECT ?r ?image ?source ?dicom ?wc ?inv WHERE { ?r a pg:Rendering ; pg:imagePath ?image ;
             pg:sourcePath ?source ; <http://www.w3.org/ns/prov#used> ?dicom ; pg:inverted ?inv .
             OPTIONAL { ?r pg:windowCenter ?wc } } ORDER BY ?image""",
    )
    base = "https://example.org/t/"
    assert got == [
        ("https://example.org/t/rendering/external/..%2F..%2Foutside.png", "../../outside.png",
         "/nowhere/x.dcm", base + "external/%2Fnowhere%2Fx.dcm", None, "false"),
        (base + "rendering/rendered/a.png", "rendered/a.png", "dicom/a.dcm", base + "file/dicom/a.dcm", "40",
         "false"),
    ]  # fmt: skip


def test_sidecars_and_rendered_folders(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    write_dicom(root / "dicom" / "a.dcm")
    write_dicom(root / "dicom" / "b.dcm", photometric="MONOCHROME1")
    render_file(root / "dicom" / "a.dcm", root / "rendered" / "a.png")
    render_file(root / "dicom" / "b.dcm", root / "rendered" / "b.png")
    render_file(root / "dicom" / "a.dcm", root / "loose" / "a.png")
    (root / "loose" / "notes.txt").write_text("x")
    (root / "loose" / "broken.png.render.json").write_text("{")
    bundle = Bundle.open(root)
    plan, _ = plan_bundle(bundle, root)
    assert {bundle.relpath(p): i.name for p, i in plan} == {
        "provgraph.toml": "contract",
        "dicom": "dicom",
        "rendered": "renderings",  # images and their sidecars, read as one folder
        "loose/a.png": "files",
        "loose/a.png.render.json": "renderings",
        "loose/broken.png.render.json": "renderings",
        "loose/notes.txt": "files",
    }
    store, results, _ = ingest_bundle(root)
    assert problems_of(results, "loose/broken.png.render.json") == [
        "loose/broken.png.render.json: malformed JSON: Expecting property name enclosed in double "
        "quotes (line 1)"
    ]
    got = rows(
        store,
        """SELECT ?image ?inv ?pi ?same WHERE { ?r a pg:Rendering ; pg:imagePath ?image ; pg:inverted ?inv ;
             pg:photometricInterpretation ?pi ; pg:renderedImage ?f ; pg:renderedSha256 ?want .
             ?f pg:sha256 ?have . BIND(?want = ?have AS ?same) } ORDER BY ?image""",
    )
    assert got == [
        ("loose/a.png", "false", "MONOCHROME2", "true"),
        ("rendered/a.png", "false", "MONOCHROME2", "true"),
        ("rendered/b.png", "true", "MONOCHROME1", "true"),
    ]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[cohort]\nallowed_views = ["PA"]\n', "cohort.allowed_splits: missing required key"),
        (
            '[cohort]\nallowed_splits = ["test"]\nallowed_views = ["PA"]\nrepeated_patients = "allow"\n',
            "cohort.repeated_patients: must be one of 'forbid', 'clustered', got 'allow'",
        ),
        (
            '[cohort]\nallowed_splits = []\nallowed_views = ["PA"]\n',
            "cohort.allowed_splits: [] should be non-empty",
        ),
        ("[pixel]\nsame_image = true\n", "pixel.same_image: unknown key 'same_image' in [pixel]"),
    ],
)
def test_contract_sections_are_validated(tmp_path: Path, section: str, message: str) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT + "\n" + section)
    with pytest.raises(ContractError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Bundle.open(root)
