"""anthropic-batch-dicom: a chest-radiograph run through Anthropic Message Batches from DICOM sources.

Eight MIMIC-style studies (one per patient, test split, PA/AP) written as DX DICOMs with pydicom,
two of them MONOCHROME1 (the film convention: minimum sample is white), rendered to PNG by the
reference renderer (``provgraph.capture.renderer.render_file``, what ``provgraph render`` runs)
with its rendering records; a cohort manifest (with two excluded candidates and their reason);
three conditions: ``plain`` and ``structured`` on Claude 3.5 Sonnet (declared to differ), and
``structured_haiku`` (the structured prompt on Claude 3.5 Haiku). Requests JSONL lines are
``{"custom_id", "params": {model, max_tokens, system, messages}}`` with a base64 PNG image block.

Sound but unusual: batch 1 was canceled by its operator while three requests were still
processing (``canceled`` results); those were re-submitted with the same custom_id in batch 2 and
succeeded.

Flawed twin: a MONOCHROME1 study rendered without inversion (its record honestly says
``inverted: false``); one request ``errored`` (overloaded) and was never re-run; an included
study is a lateral view; the Haiku model is requested by the alias ``claude-3-5-haiku-latest``
while the contract does not accept aliases (``alias_ok = false``).
"""

from __future__ import annotations

import base64
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cal_batch as cb
from corpus import Planted

from provgraph.capture.renderer import render_file
from provgraph.evidence.renderings import sidecar_for

NAME = "anthropic-batch-dicom"
SOURCE = (
    "https://docs.anthropic.com/en/docs/build-with-claude/batch-processing and "
    "https://docs.anthropic.com/en/api/retrieving-message-batch-results (requests, results); "
    "https://docs.anthropic.com/en/docs/build-with-claude/vision (base64 image block); "
    "pydicom Dataset.save_as (DX DICOM Part 10); README 'Cohort and pixel clauses' (manifest, "
    "rendering records, provgraph render)"
)

#: (study_id, subject_id, view, photometric); the last two rows are excluded candidates
STUDIES = [
    ("50414267", "10000032", "PA", "MONOCHROME2"),
    ("51180958", "10000764", "AP", "MONOCHROME2"),
    ("52201491", "10001176", "PA", "MONOCHROME1"),
    ("53189527", "10001884", "PA", "MONOCHROME2"),
    ("54205396", "10002013", "AP", "MONOCHROME1"),
    ("55612830", "10002428", "PA", "MONOCHROME2"),
    ("56699142", "10003046", "AP", "MONOCHROME2"),
    ("57375967", "10003400", "PA", "MONOCHROME2"),
]
EXCLUDED = [
    ("58110302", "10004235", "LL", "lateral view only"),
    ("59402811", "10004457", "PA", "validate split"),
]
CASES = [s[0] for s in STUDIES]
CONDITIONS = {"plain": "sonnet", "structured": "sonnet", "structured_haiku": "haiku"}
SNAPSHOTS = {"sonnet": "claude-3-5-sonnet-20241022", "haiku": "claude-3-5-haiku-20241022"}
HAIKU_ALIAS = "claude-3-5-haiku-latest"
PROMPTS = {
    "plain": "You are an expert thoracic radiologist. Write a brief report of the chest radiograph.",
    "structured": (
        "You are an expert thoracic radiologist. Report the chest radiograph under the headings "
        "FINDINGS and IMPRESSION. Mention support devices, consolidation, effusion, pneumothorax "
        "and cardiomegaly explicitly, each as present or absent."
    ),
}
USER_TEXT = "Here is the frontal chest radiograph of one study."
CANCELED = {
    cb.call_id("plain", CASES[5]),
    cb.call_id("structured", CASES[5]),
    cb.call_id("structured_haiku", CASES[6]),
}
# flawed-only defects
UNINVERTED = "54205396"  # MONOCHROME1, rendered without inversion
ERRORED_CALL = cb.call_id("structured", CASES[1])
LATERAL = "56699142"  # an included study whose image is a lateral view

CONTRACT = """\
[project]
name = "cxr-claude-batches"
base_iri = "https://example.org/cxr-claude-batches/"

[cohort]
manifest = "cohort.csv"
sampling_unit = "study"
repeated_patients = "forbid"
allowed_splits = ["test"]
allowed_views = ["PA", "AP"]
blank_views_acceptable = false

[pixel]
same_image_across_conditions = true

[plan]
file = "plan.csv"

[conditions.plain]
system_prompt = "prompts/plain.txt"
differs_from = ["structured"]
model = "sonnet"

[conditions.structured]
system_prompt = "prompts/structured.txt"
model = "sonnet"

[conditions.structured_haiku]
system_prompt = "prompts/structured.txt"   # the same prompt on another model, on purpose
model = "haiku"

[models.sonnet]
requested = "claude-3-5-sonnet-20241022"

[models.haiku]
requested = "{haiku}"
alias_ok = false
"""


def _dicom(path: Path, study: str, subject: str, view: str, photometric: str) -> None:
    """A 32x32 DX image, 12 bits stored, with a window in the header (written by pydicom)."""
    rng = np.random.default_rng(int(study))
    body = np.full((32, 32), 300, dtype=np.int64)
    body[6:28, 4:14] = body[6:28, 18:28] = 2600  # lung fields: more attenuation-free signal
    values = body + rng.integers(0, 200, size=body.shape)
    if photometric == "MONOCHROME1":
        values = 4095 - values  # stored as film: air is the high sample
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[study, "sop"])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = generate_uid(entropy_srcs=[study, "study"])
    ds.SeriesInstanceUID = generate_uid(entropy_srcs=[study, "series"])
    ds.PatientID, ds.PatientName, ds.StudyID = subject, f"Anon^{subject}", study[-4:]
    ds.Modality, ds.ViewPosition, ds.BodyPartExamined = "DX", view, "CHEST"
    ds.Rows, ds.Columns = values.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.WindowCenter, ds.WindowWidth = 2048, 4096
    ds.PixelData = values.astype(np.uint16).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.save_as(path, enforce_file_format=True)


def _render(root: Path, study: str, invert: bool | None) -> bytes:
    """Render with the reference renderer; pin its clock field so the bundle is deterministic."""
    image = root / "rendered" / f"{study}.png"
    render_file(root / "dicom" / f"{study}.dcm", image, invert=invert)
    sidecar = image.with_name(sidecar_for(image.name))
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    record["rendered_at"] = "2024-09-02T09:30:00+00:00"
    sidecar.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return image.read_bytes()


def _request(cid: str, condition: str, png: bytes, flawed: bool) -> dict:
    key = CONDITIONS[condition]
    model = HAIKU_ALIAS if flawed and key == "haiku" else SNAPSHOTS[key]
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
    }
    params = {
        "model": model,
        "max_tokens": 1024,
        "temperature": 0,
        "system": PROMPTS[condition.removesuffix("_haiku")],
        "messages": [{"role": "user", "content": [image, {"type": "text", "text": USER_TEXT}]}],
    }
    return {"custom_id": cid, "params": params}


def _succeeded(cid: str, batch: str) -> dict:
    condition, case, _ = cid.split("--")
    text = f"FINDINGS: Study {case}. No focal consolidation, effusion or pneumothorax.\n"
    text += "IMPRESSION: Normal chest."
    return cb.anthropic_succeeded(cid, batch, SNAPSHOTS[CONDITIONS[condition]], text, usage=(1650, 41))


def _write_cohort(root: Path, flawed: bool) -> None:
    rows = []
    for study, subject, view, _ in STUDIES:
        shown = "LATERAL" if flawed and study == LATERAL else view
        rows.append([study, subject, "mimic-cxr-2.0.0", "test", shown, "include", ""])
    rows.append(
        [EXCLUDED[0][0], EXCLUDED[0][1], "mimic-cxr-2.0.0", "test", "LATERAL", "exclude", EXCLUDED[0][3]]
    )
    rows.append(
        [EXCLUDED[1][0], EXCLUDED[1][1], "mimic-cxr-2.0.0", "validate", "PA", "exclude", EXCLUDED[1][3]]
    )
    header = ["case_key", "patient_key", "source", "split", "view", "inclusion", "reason"]
    cb.write_csv(root / "cohort.csv", header, rows)


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    haiku = HAIKU_ALIAS if flawed else SNAPSHOTS["haiku"]
    cb.write_text(root / "provgraph.toml", CONTRACT.replace("{haiku}", haiku))
    for key, text in PROMPTS.items():
        cb.write_text(root / "prompts" / f"{key}.txt", text + "\n")
    _write_cohort(root, flawed)
    images = {}
    for study, subject, view, photometric in STUDIES:
        shown = "LL" if flawed and study == LATERAL else view
        _dicom(root / "dicom" / f"{study}.dcm", study, subject, shown, photometric)
        images[study] = _render(root, study, False if flawed and study == UNINVERTED else None)
    plan = [[cb.call_id(c, case), case, c, 1] for c in CONDITIONS for case in CASES]
    cb.write_csv(root / "plan.csv", ["call_id", "case", "condition", "replicate"], plan)
    requests = [_request(cid, c, images[case], flawed) for cid, case, c, _ in plan]
    results = []
    for request in requests:
        cid = request["custom_id"]
        if cid in CANCELED:
            results.append(cb.anthropic_ended(cid, "canceled"))
        elif flawed and cid == ERRORED_CALL:
            results.append(cb.anthropic_errored(cid, "overloaded_error", "Overloaded"))
        else:
            results.append(_succeeded(cid, "b1"))
    results.sort(key=lambda r: cb.digest(r["custom_id"]))  # results arrive in any order
    cb.write_jsonl(root / "batches" / "msgbatch_01_requests.jsonl", requests)
    cb.write_jsonl(root / "batches" / "msgbatch_01_results.jsonl", results)
    retry = [r for r in requests if r["custom_id"] in CANCELED]
    cb.write_jsonl(root / "batches" / "msgbatch_02_requests.jsonl", retry)
    cb.write_jsonl(
        root / "batches" / "msgbatch_02_results.jsonl", [_succeeded(r["custom_id"], "b2") for r in retry]
    )
    if not flawed:
        return []
    return [
        Planted(
            "pixel-monochrome-polarity", f"rendering/rendered/{UNINVERTED}.png", "MONOCHROME1 not inverted"
        ),
        Planted("output-call-not-successful", f"call/{ERRORED_CALL}", "errored (overloaded), never re-run"),
        Planted("cohort-view-not-allowed", f"cohort-entry/{LATERAL}", "included lateral view"),
        Planted("model-alias-unresolved", "model-spec/haiku", "alias requested, alias_ok = false"),
    ]
