"""Shared writers of the inline-pixel shapes: chest-like DICOMs and benchmarks that send their
radiographs inline in provider batch requests, with no rendering record.

:func:`chest` draws a synthetic PA chest (body, lung fields, mediastinum and heart, spine, ribs,
clavicles, diaphragm domes, a lead marker, quantum noise; anatomy varied per seed);
:func:`dicom` writes it as a 12-bit DX DICOM Part 10 dataset with pydicom (MONOCHROME1 stored as
film: air is the high sample, PS3.3 C.7.6.3.1.2). :func:`write_benchmark` writes a whole bundle:
MIMIC-CXR's folder layout (``files/p10/p<subject>/s<study>/<dicom_id>.dcm``, PhysioNet
MIMIC-CXR 2.0.0 "Files"), a plan, and one provider's batch files whose requests carry each
study's image inline, rendered by the reference renderer (``render_dataset``, what ``provgraph
render`` runs) and then sent as the pipeline sends it: PNG, or resized and JPEG-compressed, or
(the defect) MONOCHROME1 rendered without inversion.

Line shapes: OpenAI Batch input lines with a chat-completions body whose user content holds
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``
(https://platform.openai.com/docs/guides/vision, https://platform.openai.com/docs/guides/batch);
Anthropic Message Batches requests whose user content holds ``{"type": "image", "source":
{"type": "base64", "media_type": "image/png", "data": ...}}``
(https://docs.anthropic.com/en/docs/build-with-claude/vision); results as ``_cal_batch``.
"""

from __future__ import annotations

import base64
import io
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cal_batch as cb

from provgraph.capture.renderer import render_dataset


def chest(seed: int, rows: int = 512, columns: int = 448) -> np.ndarray:
    """A 12-bit 'attenuation' image of a PA chest (high = more attenuation = white on a
    MONOCHROME2 display): an ellipse of soft tissue, two darker lung fields, a bright
    mediastinum and heart, a spine, rib arcs, clavicles, diaphragm domes and a marker."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:rows, 0:columns].astype(np.float64)
    yn, xn = y / rows, x / columns
    cx = 0.5 + rng.uniform(-0.04, 0.04)
    body = ((xn - cx) / rng.uniform(0.42, 0.48)) ** 2 + ((yn - 0.55) / 0.6) ** 2 < 1
    img = np.where(body, 1700.0, 250.0)
    lung_w, lung_h, top = rng.uniform(0.14, 0.19), rng.uniform(0.28, 0.36), rng.uniform(0.40, 0.47)
    for side in (-1, 1):
        lx = cx + side * rng.uniform(0.17, 0.21)
        lung = ((xn - lx) / lung_w) ** 2 + ((yn - top) / lung_h) ** 2 < 1
        img = np.where(lung & body, img - rng.uniform(900, 1200), img)
    heart = ((xn - cx - 0.05) / rng.uniform(0.11, 0.16)) ** 2 + ((yn - 0.62) / 0.13) ** 2 < 1
    img = np.where(heart, img + 700, img)
    img += np.where(np.abs(xn - cx) < 0.035, 900.0, 0.0) * (yn > 0.08)  # spine and mediastinum
    phase = rng.uniform(0, 2 * np.pi)
    ribs = (np.sin((yn + 0.08 * np.abs(xn - cx)) * 2 * np.pi * rng.uniform(9, 11) + phase) > 0.75) & body
    img += ribs * 260.0
    for side in (-1, 1):  # clavicles
        clav = np.abs(yn - 0.16 - 0.12 * np.abs(xn - cx)) < 0.012
        img += (clav & (side * (xn - cx) > 0.03) & (side * (xn - cx) < 0.3)) * 500.0
    dome = yn > 0.78 + 0.05 * np.cos((xn - cx) * 9)
    img = np.where(dome & body, img + 600, img)
    mx, my = int(columns * 0.08), int(rows * 0.08)
    img[my : my + 18, mx : mx + 12] = 4000.0  # lead side marker
    img += rng.normal(0, 60, img.shape)
    return np.clip(img, 0, 4095).astype(np.uint16)


def dicom(values: np.ndarray, photometric: str, study: str = "50000000", subject: str = "10000000") -> Any:
    """A DX DICOM dataset of ``values`` (12 bits stored, a full-range window in the header)."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    stored = 4095 - values if photometric == "MONOCHROME1" else values
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
    ds.Modality, ds.ViewPosition, ds.BodyPartExamined = "DX", "PA", "CHEST"
    ds.Rows, ds.Columns = stored.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.WindowCenter, ds.WindowWidth = 2048, 4096
    ds.PixelData = stored.astype(np.uint16).tobytes()
    return ds


def encode(pixels: np.ndarray, size: tuple[int, int] | None, quality: int | None) -> bytes:
    """``pixels`` as a pipeline sends them: resized to ``size`` (w, h), then PNG, or JPEG (RGB,
    as VLM pipelines convert before encoding) at ``quality``."""
    from PIL import Image

    image = Image.fromarray(pixels, mode="L")
    if size is not None:
        image = image.resize(size, resample=Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if quality is None:
        image.save(out, format="PNG")
    else:
        image.convert("RGB").save(out, format="JPEG", quality=quality)
    return out.getvalue()


#: (study_id, subject_id, photometric): MIMIC-CXR-style ids, half of them film (MONOCHROME1)
STUDIES = [
    ("50414267", "10000032", "MONOCHROME2"),
    ("52201491", "10001176", "MONOCHROME1"),
    ("53189527", "10001884", "MONOCHROME2"),
    ("54205396", "10002013", "MONOCHROME1"),
]
CONDITIONS = ("plain", "structured")
MODELS = {"openai": "gpt-4o-2024-08-06", "anthropic": "claude-3-5-sonnet-20241022"}
PROMPTS = {
    "plain": "You are a thoracic radiologist. Write a brief report of the chest radiograph.",
    "structured": "You are a thoracic radiologist. Report under FINDINGS and IMPRESSION.",
}
USER = "Here is the frontal chest radiograph of one study."
ANSWER = "FINDINGS: No focal consolidation, effusion or pneumothorax.\nIMPRESSION: Normal chest."

CONTRACT = """\
[project]
name = "{name}"
base_iri = "https://example.org/{name}/"

[pixel]
same_image_across_conditions = true
{pixel}
[plan]
file = "plan.csv"

[conditions.plain]
system_prompt = "prompts/plain.txt"
differs_from = ["structured"]
model = "m"

[conditions.structured]
system_prompt = "prompts/structured.txt"
model = "m"

[models.m]
requested = "{model}"
"""


def dicom_path(study: str, subject: str) -> str:
    """Where MIMIC-CXR keeps a study's image: ``files/p10/p<subject>/s<study>/<dicom_id>.dcm``."""
    return f"files/p{subject[:2]}/p{subject}/s{study}/{cb.digest(study, 'dicom', n=40)}.dcm"


def sent_image(ds: Any, photometric: str, variant: str) -> tuple[bytes, str]:
    """The bytes a pipeline sent for ``ds`` and their media type.

    ``correct``: the reference render as PNG; ``resized-jpeg``: that render resized to 60 % and
    JPEG-compressed at quality 70; ``uninverted``: MONOCHROME1 rendered without inversion (PNG);
    ``uninverted-resized-jpeg``: both.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        invert = False if variant.startswith("uninverted") and photometric == "MONOCHROME1" else None
        pixels = render_dataset(ds, "sent", invert=invert).pixels
    if variant.endswith("resized-jpeg"):
        rows, columns = pixels.shape
        return encode(pixels, (columns * 3 // 5, rows * 3 // 5), 70), "image/jpeg"
    return encode(pixels, None, None), "image/png"


def _openai(cid: str, condition: str, data: bytes, media: str, model: str) -> dict[str, Any]:
    url = f"data:{media};base64," + base64.b64encode(data).decode("ascii")
    user = [{"type": "text", "text": USER}, {"type": "image_url", "image_url": {"url": url}}]
    messages = [{"role": "system", "content": PROMPTS[condition]}, {"role": "user", "content": user}]
    return cb.openai_request(cid, {"model": model, "messages": messages, "temperature": 0})


def _anthropic(cid: str, condition: str, data: bytes, media: str, model: str) -> dict[str, Any]:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": media, "data": base64.b64encode(data).decode()},
    }
    params = {
        "model": model,
        "max_tokens": 1024,
        "temperature": 0,
        "system": PROMPTS[condition],
        "messages": [{"role": "user", "content": [image, {"type": "text", "text": USER}]}],
    }
    return {"custom_id": cid, "params": params}


def write_benchmark(
    root: Path,
    provider: str,
    variants: dict[str, str],
    name: str = "inline-pixels",
    pixel: str = "",
    size: tuple[int, int] = (256, 224),
    studies: list[tuple[str, str, str]] = STUDIES,
) -> dict[str, str]:
    """Write a bundle whose ``provider`` ("openai" or "anthropic") batch requests send each
    study's image as ``variants[study]`` says (default ``correct``). Returns study -> DICOM path."""
    model = MODELS[provider]
    cb.write_text(root / "provgraph.toml", CONTRACT.format(name=name, pixel=pixel, model=model))
    for key, text in PROMPTS.items():
        cb.write_text(root / "prompts" / f"{key}.txt", text + "\n")
    paths, requests, results = {}, [], []
    plan = [[cb.call_id(c, study), study, c, 1] for c in CONDITIONS for study, _, _ in studies]
    cb.write_csv(root / "plan.csv", ["call_id", "case", "condition", "replicate"], plan)
    sent = {}
    for n, (study, subject, photometric) in enumerate(studies):
        ds = dicom(chest(int(study) % 1000 + n, *size), photometric, study, subject)
        paths[study] = dicom_path(study, subject)
        (root / paths[study]).parent.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.save_as(root / paths[study], enforce_file_format=True)
        sent[study] = sent_image(ds, photometric, variants.get(study, "correct"))
    write = _openai if provider == "openai" else _anthropic
    for cid, study, condition, _ in plan:
        requests.append(write(cid, condition, *sent[study], model))
        if provider == "openai":
            results.append(cb.openai_answer(cid, "b1", model, ANSWER, usage=(1105, 48)))
        else:
            results.append(cb.anthropic_succeeded(cid, "b1", model, ANSWER, usage=(1650, 41)))
    stem = "batch_01" if provider == "openai" else "msgbatch_01"
    cb.write_jsonl(
        root / "batches" / f"{stem}_{'input' if provider == 'openai' else 'requests'}.jsonl", requests
    )
    cb.write_jsonl(
        root / "batches" / f"{stem}_{'output' if provider == 'openai' else 'results'}.jsonl", results
    )
    return paths
