"""A MIMIC-CXR VLM run in which several studies come from one patient, declared and clustered.

The bundle: the official tables ``mimic-cxr-2.0.0-metadata.csv`` and ``-split.csv`` for the
cohort's studies (PA/AP images and their LATERAL companions), a cohort manifest (case_key,
patient_key, split, view, inclusion) of 12 test studies from 8 patients, the studies' DICOM
files written with pydicom (MONOCHROME1 and MONOCHROME2, PatientID = subject_id, file names
the dicom_id so no subject_id is in a path), the frontal image of each study rendered by the
code behind ``provgraph render`` (PNG + ``.render.json``), a plan of 12 studies x 2 prompt
conditions, and ``calls.jsonl`` written by the real Recorder with each call's rendered image
path and sha256 taken at the request.

Sound but unusual: ``repeated_patients = "clustered"`` (one patient contributes three studies,
two others two each); MONOCHROME1 sources rendered with inversion; the metadata table lists
lateral companions that were not sent.

Flawed twin (different clauses):
- one study's LATERAL companion was rendered and sent instead of its PA image, the manifest
  still saying PA (``cohort-view-not-allowed``, from the DICOM header);
- a planned study is missing from the cohort manifest (``cohort-case-not-in-cohort``);
- one MONOCHROME1 source rendered without inversion by a legacy path
  (``pixel-monochrome-polarity``);
- one study was re-rendered after its condition-A call had run, so that call's image sha256
  differs from the rendering record (``pixel-rendered-hash-mismatch``);
- one planned call has no record at all: the run stopped before it (``output-planned-without-
  terminal``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_cohort import (
    Planted,
    Study,
    chat_completion,
    fixed_clock,
    study_pool,
    write_csv,
    write_metadata,
    write_split,
    write_text,
)

NAME = "mimic-repeated-patients-clustered"
SOURCE = (
    "MIMIC-CXR-JPG 2.1.0 documentation, https://physionet.org/content/mimic-cxr-jpg/2.1.0/ "
    "(metadata and split tables); MIMIC-CXR DICOM headers (PatientID = subject_id, ViewPosition, "
    "PhotometricInterpretation) written with pydicom as tests/fixtures/make_images.py does; "
    "provgraph README 'Cohort and pixel clauses' (render, rendering records) and 'Prompt, model "
    "and output identity'; provgraph/capture/recorder.py and provgraph/capture/renderer.py"
)
BASE = "https://example.org/mimic-repeated-patients-clustered/"
MODEL = "gpt-4o-2024-08-06"
#: (patient index, split, image views); patient 0 has 3 studies, patients 1 and 2 two each
POOL = tuple(
    (p, "test", (view, "LATERAL")) for p, view in
    ((0, "PA"), (0, "AP"), (0, "PA"), (1, "PA"), (1, "PA"), (2, "AP"),
     (2, "PA"), (3, "PA"), (4, "AP"), (5, "PA"), (6, "PA"), (7, "AP"))
)  # fmt: skip
MONOCHROME1 = {1, 5, 8, 11}  # studies whose DICOMs are MONOCHROME1
LATERAL_SENT, NOT_IN_COHORT, UNINVERTED, RE_RENDERED = 4, 9, 5, 6
UNRECORDED = len(POOL) - 1  # the run stops at the last planned call
PROMPTS = {
    "A": "You are a radiologist. List the abnormal findings on this chest radiograph, or write "
    "'No acute findings'.",
    "B": "You are a thoracic radiologist. For each of: cardiomegaly, edema, consolidation, "
    "pneumothorax, pleural effusion, state present, absent or uncertain.",
}
USER = "Read the attached chest radiograph."

CONTRACT = f"""\
[project]
name = "mimic-repeated-patients-clustered"
base_iri = "{BASE}"

[cohort]
manifest = "cohort.csv"
sampling_unit = "study"
repeated_patients = "clustered"   # several studies per patient; analysis clusters by subject
allowed_splits = ["test"]
allowed_views = ["PA", "AP"]
blank_views_acceptable = false

[pixel]
same_image_across_conditions = true

[plan]
file = "plan.csv"
decoding = {{ temperature = 0, max_tokens = 400 }}

[conditions.A]
system_prompt = "prompts/A_system.txt"
user_prompt = "prompts/user.txt"
model = "gpt4o"
differs_from = ["B"]

[conditions.B]
system_prompt = "prompts/B_system.txt"
user_prompt = "prompts/user.txt"
model = "gpt4o"

[models.gpt4o]
requested = "{MODEL}"
"""


def _dicoms(root: Path, studies: list[Study]) -> None:
    """Every image of every study as a small pydicom-written DX file named by its dicom_id."""
    from fixtures.make_images import write_dicom

    for n, study in enumerate(studies):
        photometric = "MONOCHROME1" if n in MONOCHROME1 else "MONOCHROME2"
        for k, image in enumerate(study.images):
            write_dicom(
                root / "dicom" / f"{image.dicom_id}.dcm",
                patient=study.subject_id,
                view=image.view,
                photometric=photometric,
                window=(2048.0, 4096.0),
                name="ANONYMOUS^PATIENT",
                birth_date="",
                accession=f"{study.study_id}{k}",
                seed=n * 2 + k,
            )


def _render(root: Path, study: Study, sent: int = 0, **kw: Any) -> Path:
    """Render image ``sent`` of ``study`` (as ``provgraph render`` does); fixed ``rendered_at``."""
    from provgraph.capture.renderer import render_file
    from provgraph.evidence.renderings import sidecar_for

    image = study.images[sent]
    target = root / "rendered" / f"{study.study_id}.png"
    render_file(root / "dicom" / f"{image.dicom_id}.dcm", target, **kw)
    sidecar = target.with_name(sidecar_for(target.name))
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    record["rendered_at"] = "2025-03-13T17:40:00+00:00"
    sidecar.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return target


def _call(rec: Any, call_id: str, condition: str, image: Path) -> None:
    data = image.read_bytes()
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    parts = [{"type": "text", "text": USER}, {"type": "image_url", "image_url": {"url": url}}]
    request = {
        "model": MODEL,
        "messages": [{"role": "system", "content": PROMPTS[condition]}, {"role": "user", "content": parts}],
        "temperature": 0,
        "max_tokens": 400,
    }
    digest = hashlib.sha256(data + condition.encode()).digest()
    text = ("No acute findings.", "Cardiomegaly: present. Edema: absent.", "Small left effusion.")[
        digest[0] % 3
    ]
    rec.call(call_id, lambda **_: chat_completion(call_id, MODEL, text), request, image=image)


def _run(root: Path, studies: list[Study], flawed: bool) -> None:
    """Render, then run condition A for every study, then B (the flawed run re-renders between)."""
    from provgraph.capture import recorder as recorder_module

    images = {}
    for n, study in enumerate(studies):
        sent = 1 if flawed and n == LATERAL_SENT else 0
        kw: dict[str, Any] = {"invert": False} if flawed and n == UNINVERTED else {}
        if flawed and n == RE_RENDERED:
            kw["window"] = (1800.0, 3000.0)  # the first rendering, replaced after condition A
        images[n] = _render(root, study, sent, **kw)
    clock = fixed_clock()
    with mock.patch.object(recorder_module, "_now", lambda: next(clock)):
        rec = recorder_module.Recorder(root / "calls.jsonl", outputs="outputs")
        for condition in ("A", "B"):
            for n, study in enumerate(studies):
                if flawed and condition == "B" and n == UNRECORDED:
                    return  # the run stopped here: the last planned call was never sent
                _call(rec, f"{condition}--{study.study_id}--1", condition, images[n])
            if flawed and condition == "A":
                _render(root, studies[RE_RENDERED])  # re-rendered with the header window


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    studies = study_pool(20_250_313, POOL)
    write_text(root / "provgraph.toml", CONTRACT)
    write_text(root / "prompts" / "A_system.txt", PROMPTS["A"] + "\n")
    write_text(root / "prompts" / "B_system.txt", PROMPTS["B"] + "\n")
    write_text(root / "prompts" / "user.txt", USER + "\n")
    write_metadata(root / "mimic-cxr-2.0.0-metadata.csv", studies)
    write_split(root / "mimic-cxr-2.0.0-split.csv", studies)
    rows = [
        [s.study_id, s.subject_id, s.split, s.view, "include"]
        for n, s in enumerate(studies)
        if not (flawed and n == NOT_IN_COHORT)
    ]
    write_csv(root / "cohort.csv", ("case_key", "patient_key", "split", "view", "inclusion"), rows)
    plan = [(f"{c}--{s.study_id}--1", s.study_id, c, 1) for c in ("A", "B") for s in studies]
    write_csv(root / "plan.csv", ("call_id", "case", "condition", "replicate"), plan)
    _dicoms(root, studies)
    _run(root, studies, flawed)
    if not flawed:
        return []
    key = {n: s.study_id for n, s in enumerate(studies)}
    return [
        Planted("cohort-view-not-allowed", f"cohort-entry/{key[LATERAL_SENT]}", "lateral DICOM sent"),
        Planted("cohort-case-not-in-cohort", f"case/{key[NOT_IN_COHORT]}", "planned study not in the cohort"),
        Planted(
            "pixel-monochrome-polarity",
            f"rendering/rendered/{key[UNINVERTED]}.png",
            "MONOCHROME1 not inverted",
        ),
        Planted(
            "pixel-rendered-hash-mismatch",
            f"record/calls.jsonl/A--{key[RE_RENDERED]}--1/1",
            "sent old rendering",
        ),
        Planted(
            "output-planned-without-terminal", f"call/B--{key[UNRECORDED]}--1", "planned call never sent"
        ),
    ]
