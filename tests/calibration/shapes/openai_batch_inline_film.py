"""openai-batch-inline-film: a chest-radiograph run through the OpenAI Batch API whose images were
rendered from DICOM by the pipeline's own code and sent inline, with no rendering record at all.

Eight MIMIC-CXR-style studies (one per patient), four of them MONOCHROME1 (film convention:
the minimum sample is white), written as DX DICOMs by pydicom in MIMIC-CXR's folder layout
(``files/p10/p<subject>/s<study>/<dicom_id>.dcm``); a plan of two conditions (``plain`` and
``structured``, declared to differ); one batch whose chat-completions requests carry the image
as a data URL (``_cal_pixels``).

Sound but unusual: no rendering record is kept (the pixels sent are the only evidence of what
the model saw), and every image was downscaled to 60 % and JPEG-compressed at quality 70 before
sending, as VLM pipelines do to save tokens.

Flawed twin: the audit's four reversed radiographs (each MONOCHROME1 study rendered without
inversion, then resized and compressed the same way); one study's DICOM is not in the bundle,
so its polarity cannot be judged; one request failed with a server error and was never re-run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cal_batch as cb
import _cal_pixels as cp
from corpus import Planted

NAME = "openai-batch-inline-film"
SOURCE = (
    "https://platform.openai.com/docs/guides/batch (input and output lines); "
    "https://platform.openai.com/docs/guides/vision (image_url data URL); PhysioNet MIMIC-CXR 2.0.0 "
    "'Files' (folder layout); pydicom Dataset.save_as (DX DICOM Part 10); DICOM PS3.3 C.7.6.3.1.2 "
    "(MONOCHROME1); README 'Polarity and identity from pixels'"
)

STUDIES = [
    ("50414267", "10000032", "MONOCHROME2"),
    ("51180958", "10000764", "MONOCHROME1"),
    ("52201491", "10001176", "MONOCHROME1"),
    ("53189527", "10001884", "MONOCHROME2"),
    ("54205396", "10002013", "MONOCHROME1"),
    ("55612830", "10002428", "MONOCHROME2"),
    ("56699142", "10003046", "MONOCHROME1"),
    ("57375967", "10003400", "MONOCHROME2"),
]
FILM = [s for s, _, pi in STUDIES if pi == "MONOCHROME1"]
MISSING = "55612830"  # flawed: its DICOM is not in the bundle
FAILED = cb.call_id("structured", "53189527")  # flawed: HTTP 500, never re-run


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    variants = {s: "resized-jpeg" for s, _, _ in STUDIES}
    if flawed:
        variants.update({s: "uninverted-resized-jpeg" for s in FILM})
    paths = cp.write_benchmark(root, "openai", variants, name=NAME, studies=STUDIES)
    if not flawed:
        return []
    (root / paths[MISSING]).unlink()
    output = root / "batches" / "batch_01_output.jsonl"
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    output.write_text("".join(line for line in lines if f'"{FAILED}"' not in line), encoding="utf-8")
    message = "The server had an error while processing your request. Sorry about that!"
    cb.write_jsonl(
        root / "batches" / "batch_01_errors.jsonl",
        [cb.openai_http_error(FAILED, "b1", 500, "server_error", message)],
    )
    planted = [
        Planted("pixel-polarity-from-pixels", f"call/{cb.call_id('plain', s)}", "MONOCHROME1 sent uninverted")
        for s in FILM
    ]
    planted.append(
        Planted(
            "pixel-polarity-from-pixels", f"call/{cb.call_id('structured', MISSING)}", "source DICOM absent"
        )
    )
    planted.append(Planted("output-call-not-successful", f"call/{FAILED}", "HTTP 500, never re-run"))
    return planted
