"""Cohort and pixel rule branches the fixture pairs do not reach: fail-closed evidence gaps,
contract switches, and each source of evidence (manifest, MIMIC tables, DICOM headers, call
hashes)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ingest_bundle, write_bundle
from fixtures.make_images import build, sha256

from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

RULES = {r.id: r for r in load_rules()}
BASE = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n'
COHORT = (
    '\n[cohort]\nallowed_splits = ["test"]\nallowed_views = ["PA", "AP"]\n'
    "sampling_unit = {unit!r}\nrepeated_patients = {policy!r}\nblank_views_acceptable = {blank}\n"
)
PLAN = "call_id,case,condition\nC1,s1,A\nC2,s1,B\nC3,s2,A\nC4,s2,B\n"


def cohort(unit: str = "study", policy: str = "forbid", blank: bool = False) -> str:
    return BASE + COHORT.format(unit=unit, policy=policy, blank=str(blank).lower()).replace("'", '"')


def fired(root: Path, rule_id: str) -> list[tuple[str, str]]:
    store, results, problems = ingest_bundle(root)
    assert not problems and all(not r.problems for r in results), [
        str(p) for r in results for p in r.problems
    ]
    report = run_gate(store, [RULES[rule_id]], record=False)
    (result,) = report.results
    assert result.outcome in ("pass", "violated"), result.error
    return sorted((report.short(v.focus), v.message) for v in result.violations)


def foci(root: Path, rule_id: str) -> list[str]:
    return sorted({focus for focus, _ in fired(root, rule_id)})


def manifest(*rows: str) -> str:
    return "case_key,patient_key,split,view,inclusion\n" + "".join(r + "\n" for r in rows)


def test_repeated_patient_without_any_patient_key_fails_closed(tmp_path: Path) -> None:
    rows = manifest("s1,,test,PA,include", "s2,7,test,PA,include")
    root = write_bundle(tmp_path / "b", {"cohort.csv": rows, "plan.csv": PLAN}, cohort())
    assert fired(root, "cohort-repeated-patient") == [
        (
            "cohort-entry/s1",
            "case s1 has no patient key in the manifest, the MIMIC tables or a DICOM header, so "
            "repeated patients cannot be ruled out",
        )
    ]


def test_repeated_patient_policy_and_sampling_unit(tmp_path: Path) -> None:
    files = {"cohort.csv": manifest("s1,7,test,PA,include", "s2,7,test,PA,include"), "plan.csv": PLAN}
    clustered = write_bundle(tmp_path / "clustered", files, cohort(policy="clustered"))
    assert foci(clustered, "cohort-repeated-patient") == []
    by_patient = write_bundle(tmp_path / "patient", files, cohort(unit="patient", policy="clustered"))
    messages = fired(by_patient, "cohort-repeated-patient")
    assert [f for f, _ in messages] == ["cohort-entry/s1", "cohort-entry/s2"]
    assert "contributes 2 included cases (" in messages[0][1]
    assert messages[0][1].endswith(") but the sampling unit is the patient")
    # an excluded case does not count
    files["cohort.csv"] = manifest("s1,7,test,PA,include", "s2,7,test,PA,exclude")
    excluded = write_bundle(tmp_path / "excluded", files, cohort())
    assert foci(excluded, "cohort-repeated-patient") == []


def test_patient_found_through_the_dicom_rendered_for_the_calls(tmp_path: Path) -> None:
    # the manifest names no patients; the DICOM headers behind the images the calls sent do
    calls = "".join(
        json.dumps({"call_id": c, "status": "ok", "image": f"png/{s}.png"}) + "\n"
        for c, s in (("C1", "s1"), ("C2", "s1"), ("C3", "s2"), ("C4", "s2"))
    )
    root = write_bundle(
        tmp_path / "b",
        {
            "cohort.csv": manifest("s1,,test,PA,include", "s2,,test,PA,include"),
            "plan.csv": PLAN,
            "calls.jsonl": calls,
        },
        cohort(),
    )
    build(
        root,
        {
            "dicom": [
                {"path": "dicom/s1.dcm", "patient": "42"},
                {"path": "dicom/s2.dcm", "patient": "42", "seed": 3},
            ],
            "render": [
                {"source": "dicom/s1.dcm", "image": "png/s1.png"},
                {"source": "dicom/s2.dcm", "image": "png/s2.png"},
            ],
        },
    )
    assert foci(root, "cohort-repeated-patient") == ["cohort-entry/s1", "cohort-entry/s2"]


def test_split_rules_read_the_manifest(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {"cohort.csv": manifest("s1,1,validate,PA,include", "s2,2,,PA,include", "s3,3,train,PA,exclude"),
         "plan.csv": PLAN},
        cohort(),
    )  # fmt: skip
    assert fired(root, "cohort-split-not-allowed") == [
        ("cohort-entry/s1", "case s1 is in split validate according to the cohort manifest; allowed: test")
    ]
    assert fired(root, "cohort-split-not-recorded") == [
        (
            "cohort-entry/s2",
            "case s2 is included but neither the cohort manifest nor an official split table records "
            "its split",
        )
    ]


def test_views(tmp_path: Path) -> None:
    rows = manifest("s1,1,test,LATERAL,include", "s2,2,test,,include")
    strict = write_bundle(tmp_path / "strict", {"cohort.csv": rows, "plan.csv": PLAN}, cohort())
    assert foci(strict, "cohort-view-not-allowed") == ["cohort-entry/s1"]
    assert foci(strict, "cohort-view-undocumented") == ["cohort-entry/s2"]
    lenient = write_bundle(tmp_path / "lenient", {"cohort.csv": rows, "plan.csv": PLAN}, cohort(blank=True))
    assert foci(lenient, "cohort-view-undocumented") == []
    # no view column and no rendered DICOM: nothing documents the view
    bare = "case_key,patient_key,split,inclusion\ns1,1,test,include\ns2,2,test,include\n"
    none = write_bundle(tmp_path / "none", {"cohort.csv": bare, "plan.csv": PLAN}, cohort())
    assert fired(none, "cohort-view-undocumented")[0] == (
        "cohort-entry/s1",
        "case s1: no view position is recorded for it (no manifest view, no image in a metadata table, no "
        "rendered DICOM); a blank view is undocumented, not an allowed view",
    )


#: the official MIMIC-CXR tables (PhysioNet's columns): study, subject, split, views of its images
MIMIC = (
    ("s1", "1", "test", ("PA", "LATERAL")),  # frontal with its lateral companion
    ("s2", "2", "test", ("LL",)),  # lateral only
    ("s3", "3", "test", ("", "LATERAL")),  # a blank image beside a lateral: might be the frontal
    ("s4", "1", "train", ("AP",)),  # patient 1 again, in another split
    ("s5", "5", "test", ("AP",)),
)


def mimic_tables(rows=MIMIC) -> dict[str, str]:
    images = [(f"{s}-{i}", subject, study, split, view) for study, subject, split, views in rows
              for i, view in enumerate(views) for s in [study]]  # fmt: skip
    return {
        "mimic-cxr-2.0.0-metadata.csv": "dicom_id,subject_id,study_id,ViewPosition\n"
        + "".join(f"{d},{subject},{study},{view}\n" for d, subject, study, _, view in images),
        "mimic-cxr-2.0.0-split.csv": "dicom_id,study_id,subject_id,split\n"
        + "".join(f"{d},{study},{subject},{split}\n" for d, subject, study, split, _ in images),
    }


def test_split_and_view_from_the_official_tables_when_the_manifest_omits_them(tmp_path: Path) -> None:
    # a cohort-only bundle: the manifest records case, patient and inclusion, nothing else
    rows = "".join(f"{s},{p},include\n" for s, p, _, _ in MIMIC) + "s6,6,include\n"
    files = {"cohort.csv": "case_key,patient_key,inclusion\n" + rows, **mimic_tables()}
    root = write_bundle(tmp_path / "b", files, cohort(policy="clustered"))
    # s6 is in no table; the others' split comes from the official split table
    assert fired(root, "cohort-split-not-recorded") == [
        (
            "cohort-entry/s6",
            "case s6 is included but neither the cohort manifest nor an official split table records "
            "its split",
        )
    ]
    assert foci(root, "cohort-split-not-allowed") == ["cohort-entry/s4"]
    two = fired(root, "cohort-patient-in-two-splits")
    assert [f for f, _ in two] == ["cohort-entry/s1", "cohort-entry/s4"]
    assert two[0][1].startswith("case s1 is in split test according to the official split table but its")
    # a study is frontal when one of its images is (s1); lateral only fails (s2)
    assert fired(root, "cohort-view-not-allowed") == [
        (
            "cohort-entry/s2",
            "case s2 has no image of an allowed view: the metadata table mimic-cxr-2.0.0-metadata.csv "
            "lists LL for its 1 image(s); allowed: AP, PA",
        )
    ]
    # a blank image with no allowed one is undocumented (s3); s6 has no view anywhere
    undocumented = fired(root, "cohort-view-undocumented")
    assert [f for f, _ in undocumented] == ["cohort-entry/s3", "cohort-entry/s6"]
    assert undocumented[0][1].startswith("case s3: the metadata table mimic-cxr-2.0.0-metadata.csv lists ")
    assert "for its 2 image(s), none of an allowed view" in undocumented[0][1]
    lenient = write_bundle(tmp_path / "lenient", files, cohort(policy="clustered", blank=True))
    assert foci(lenient, "cohort-view-undocumented") == []


def test_manifest_split_against_the_official_table(tmp_path: Path) -> None:
    # the manifest's split stands (s4 test, so patient 1 sits in one split); the table's
    # disagreement is a documented mismatch
    rows = "".join(f"{s},{p},test,,include\n" for s, p, _, _ in MIMIC)
    files = {"cohort.csv": "case_key,patient_key,split,view,inclusion\n" + rows, **mimic_tables()}
    root = write_bundle(tmp_path / "b", files, cohort(policy="clustered"))
    assert fired(root, "cohort-split-not-recorded") == [
        (
            "cohort-entry/s4",
            "case s4 is in split test according to the cohort manifest but the official split table "
            "lists train",
        )
    ]
    assert foci(root, "cohort-patient-in-two-splits") == []
    assert fired(root, "cohort-split-not-allowed") == [
        (
            "cohort-entry/s4",
            "case s4 is in split train according to the split table mimic-cxr-2.0.0-split.csv; allowed: test",
        )
    ]
    # a blank manifest view is filled in by the metadata table's frontal image (s1, s4, s5)
    assert foci(root, "cohort-view-undocumented") == ["cohort-entry/s2", "cohort-entry/s3"]


def test_the_rendered_dicom_decides_over_the_metadata_table(tmp_path: Path) -> None:
    # the metadata table lists only s2's lateral, but its calls sent a rendered PA DICOM (it
    # passes); s1's table lists a PA, but its calls sent its lateral (it fails)
    calls = "".join(
        json.dumps({"call_id": c, "status": "ok", "image": f"png/{s}.png"}) + "\n"
        for c, s in (("C1", "s1"), ("C2", "s1"), ("C3", "s2"), ("C4", "s2"))
    )
    tables = mimic_tables(MIMIC[:2])
    files = {"cohort.csv": manifest("s1,1,test,,include", "s2,2,test,,include"), "plan.csv": PLAN,
             "calls.jsonl": calls, **tables}  # fmt: skip
    root = write_bundle(tmp_path / "b", files, cohort())
    build(
        root,
        {
            "dicom": [
                {"path": "dicom/s1.dcm", "patient": "1", "view": "LATERAL"},
                {"path": "dicom/s2.dcm", "patient": "2", "view": "PA", "seed": 3},
            ],
            "render": [
                {"source": "dicom/s1.dcm", "image": "png/s1.png"},
                {"source": "dicom/s2.dcm", "image": "png/s2.png"},
            ],
        },
    )
    (only,) = fired(root, "cohort-view-not-allowed")
    assert only[0] == "cohort-entry/s1"
    assert "has view LATERAL according to the header of dicom/s1.dcm" in only[1]
    # both headers document a view, so neither blank manifest view is undocumented
    assert foci(root, "cohort-view-undocumented") == []


def test_case_not_in_cohort_names_absent_and_excluded(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b", {"cohort.csv": manifest("s2,2,test,PA,exclude"), "plan.csv": PLAN}, cohort()
    )
    assert fired(root, "cohort-case-not-in-cohort") == [
        ("case/s1", "case s1 is used by 2 planned call(s) but it is not in the cohort manifest"),
        ("case/s2", "case s2 is used by 2 planned call(s) but the cohort manifest excludes it"),
    ]


PIXEL = BASE + "\n[pixel]\n"


def pixel_bundle(root: Path, spec: dict, calls: list[dict], contract: str = PIXEL) -> Path:
    write_bundle(
        root, {"plan.csv": PLAN, "calls.jsonl": "".join(json.dumps(c) + "\n" for c in calls)}, contract
    )
    build(root, spec)
    return root


def two_images(**render) -> dict:
    return {
        "dicom": [{"path": "dicom/s1.dcm"}, {"path": "dicom/s2.dcm", "photometric": "MONOCHROME1"}],
        "render": [
            {"source": "dicom/s1.dcm", "image": "png/s1.png"},
            {"source": "dicom/s2.dcm", "image": "png/s2.png", **render},
        ],
    }


def calls_for(images: dict[str, str], **extra) -> list[dict]:
    return [
        {"call_id": c, "status": "ok", "image": images[c], **extra.get(c, {})}
        for c in ("C1", "C2", "C3", "C4")
    ]


IMAGES = {"C1": "png/s1.png", "C2": "png/s1.png", "C3": "png/s2.png", "C4": "png/s2.png"}


def test_polarity_needs_the_source_dicom_and_a_consistent_record(tmp_path: Path) -> None:
    root = pixel_bundle(tmp_path / "b", two_images(), calls_for(IMAGES))
    (root / "dicom" / "s2.dcm").unlink()
    assert fired(root, "pixel-monochrome-polarity") == [
        (
            "rendering/png/s2.png",
            "image png/s2.png was rendered from dicom/s2.dcm, which is not in the bundle as a readable "
            "DICOM, so its polarity cannot be verified",
        )
    ]
    # a MONOCHROME2 image that was inverted, and a record that misstates the photometric
    root = pixel_bundle(tmp_path / "c", two_images(), calls_for(IMAGES))
    build(root, {"render": [{"source": "dicom/s1.dcm", "image": "png/s1.png", "invert": True}]})
    sidecar = root / "png" / "s2.png.render.json"
    record = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps(record | {"photometric": "MONOCHROME2", "inverted": True}))
    messages = dict(fired(root, "pixel-monochrome-polarity"))
    assert messages == {
        "rendering/png/s1.png": "image png/s1.png was rendered from MONOCHROME2 dicom/s1.dcm with inversion: "
        "the model saw reversed polarity",
        "rendering/png/s2.png": "the rendering record of png/s2.png says MONOCHROME2 but the header of "
        "dicom/s2.dcm says MONOCHROME1",
    }


def test_image_identity_from_call_hashes(tmp_path: Path) -> None:
    root = pixel_bundle(tmp_path / "b", two_images(), [])
    s1, s2 = sha256(root / "png" / "s1.png"), sha256(root / "png" / "s2.png")
    calls = [
        {"call_id": "C1", "status": "ok", "image": "png/s1.png", "image_sha256": s1},
        {"call_id": "C2", "status": "ok", "image_sha256": s1},  # no path: matched by hash
        {
            "call_id": "C3",
            "status": "ok",
            "image": "png/s2.png",
            "image_sha256": s1,
        },  # other bytes than recorded
        {"call_id": "C4", "status": "ok"},  # names no image at all
    ]
    (root / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    assert fired(root, "pixel-image-without-rendering") == []
    assert fired(root, "pixel-image-not-recorded") == [
        (
            "call/C4",
            "call C4 was answered, but neither its request nor any of its records names an image "
            "(no path, no sha256), so its pixels cannot be traced",
        )
    ]
    assert fired(root, "pixel-rendered-hash-mismatch") == [
        (
            "record/calls.jsonl/C3/1",
            f"call C3 sent png/s2.png as {s1[:12]}… but the rendering record says {s2[:12]}…: the model saw "
            "other bytes than the ones recorded",
        )
    ]
    assert foci(root, "pixel-conditions-differ-in-image") == []  # s2's calls: C3 sent s1 bytes, C4 none


def test_same_image_rule_can_be_switched_off_and_reads_file_hashes(tmp_path: Path) -> None:
    images = dict(IMAGES, C2="png/s2.png")
    on = pixel_bundle(tmp_path / "on", two_images(), calls_for(images))
    assert fired(on, "pixel-conditions-differ-in-image")[0][0] == "case/s1"
    off = pixel_bundle(
        tmp_path / "off", two_images(), calls_for(images), PIXEL + "same_image_across_conditions = false\n"
    )
    assert fired(off, "pixel-conditions-differ-in-image") == []


def test_changed_dicom_and_missing_image(tmp_path: Path) -> None:
    root = pixel_bundle(tmp_path / "b", two_images(), calls_for(IMAGES))
    (root / "dicom" / "s1.dcm").write_bytes((root / "dicom" / "s1.dcm").read_bytes() + b"\x00\x00")
    (root / "png" / "s2.png").unlink()
    messages = fired(root, "pixel-rendered-hash-mismatch")
    assert [f for f, _ in messages] == ["rendering/png/s1.png", "rendering/png/s2.png"]
    assert messages[0][1].startswith("DICOM dicom/s1.dcm hashes to ")
    assert messages[0][1].endswith("…: the source changed")
    assert messages[1][1] == "image png/s2.png named by a rendering record is not in the bundle"
