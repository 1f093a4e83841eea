"""Shared parts of the cal-cohort shapes: MIMIC-CXR table rows, contracts and small writers.

The MIMIC-CXR tables follow PhysioNet's MIMIC-CXR-JPG 2.0.0/2.1.0 documentation
(https://physionet.org/content/mimic-cxr-jpg/2.1.0/): ``mimic-cxr-2.0.0-metadata.csv`` has
one row per DICOM image (dicom_id, subject_id, study_id, PerformedProcedureStepDescription,
ViewPosition, Rows, Columns, StudyDate, StudyTime, ProcedureCodeSequence_CodeMeaning,
ViewCodeSequence_CodeMeaning, PatientOrientationCodeSequence_CodeMeaning) and
``mimic-cxr-2.0.0-split.csv`` one row per image (dicom_id, study_id, subject_id, split), the
split assigned per patient. subject_id is 8 digits starting 1, study_id 8 digits starting 5,
dicom_id five dash-separated groups of 8 hex digits; dates are shifted into the 2100s.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE.parent.parent):  # tests/calibration (corpus), tests (fixtures)
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from corpus import Planted  # noqa: E402

__all__ = [
    "METADATA_COLUMNS",
    "Image",
    "Planted",
    "Study",
    "chat_completion",
    "dicom_id",
    "fixed_clock",
    "sha256",
    "study_pool",
    "write_csv",
    "write_jsonl",
    "write_metadata",
    "write_split",
    "write_text",
]

METADATA_COLUMNS = (
    "dicom_id",
    "subject_id",
    "study_id",
    "PerformedProcedureStepDescription",
    "ViewPosition",
    "Rows",
    "Columns",
    "StudyDate",
    "StudyTime",
    "ProcedureCodeSequence_CodeMeaning",
    "ViewCodeSequence_CodeMeaning",
    "PatientOrientationCodeSequence_CodeMeaning",
)
SPLIT_COLUMNS = ("dicom_id", "study_id", "subject_id", "split")

#: ViewPosition -> (procedure, view code meaning, patient orientation, rows, columns)
VIEWS: dict[str, tuple[str, str, str, int, int]] = {
    "PA": ("CHEST (PA AND LAT)", "postero-anterior", "Erect", 3056, 2544),
    "AP": ("CHEST (PORTABLE AP)", "antero-posterior", "Erect", 2539, 3050),
    "LATERAL": ("CHEST (PA AND LAT)", "lateral", "Erect", 3056, 2544),
    "LL": ("CHEST (PA AND LAT)", "left lateral", "Erect", 2544, 3056),
    "": ("CHEST (PORTABLE AP)", "", "", 2022, 2022),
}


@dataclass(frozen=True)
class Image:
    dicom_id: str
    view: str  # ViewPosition as the table writes it ("" when blank)


@dataclass(frozen=True)
class Study:
    subject_id: str
    study_id: str
    split: str
    date: str  # StudyDate, YYYYMMDD (shifted)
    time: str  # StudyTime, HHMMSS.fff
    images: tuple[Image, ...] = field(default_factory=tuple)

    @property
    def view(self) -> str:
        """The study's first image's view (the image a VLM benchmark would send)."""
        return self.images[0].view

    def with_split(self, split: str) -> Study:
        return replace(self, split=split)


def dicom_id(rng: random.Random) -> str:
    """A dicom_id in MIMIC-CXR's form: 5 groups of 8 lower-case hex digits."""
    return "-".join(f"{rng.getrandbits(32):08x}" for _ in range(5))


def study_pool(seed: int, plan: Sequence[tuple[int, str, Sequence[str]]]) -> list[Study]:
    """Studies for ``plan`` rows (patient index, split, views of its images), with fresh ids.

    Patients are numbered by index so rows with one index are one subject_id; study ids and
    dicom ids are drawn from ``seed``, so the pool is the same on every run.
    """
    rng = random.Random(seed)
    subjects: dict[int, str] = {}
    taken: set[str] = set()
    studies = []
    for index, split, views in plan:
        subject = subjects.setdefault(index, f"1{rng.randrange(0, 10_000_000):07d}")
        study = f"5{rng.randrange(0, 10_000_000):07d}"
        while study in taken:
            study = f"5{rng.randrange(0, 10_000_000):07d}"
        taken.add(study)
        date = f"21{rng.randrange(10, 99):02d}{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}"
        clock = (rng.randrange(0, 24), rng.randrange(0, 60), rng.randrange(0, 60), rng.randrange(0, 1000))
        time = "{:02d}{:02d}{:02d}.{:03d}".format(*clock)
        images = tuple(Image(dicom_id(rng), view) for view in views)
        studies.append(Study(subject, study, split, date, time, images))
    return studies


def metadata_rows(studies: Iterable[Study]) -> list[list[object]]:
    rows = []
    for s in studies:
        for image in s.images:
            procedure, meaning, orientation, height, width = VIEWS[image.view]
            rows.append(
                [
                    image.dicom_id,
                    s.subject_id,
                    s.study_id,
                    procedure,
                    image.view,
                    height,
                    width,
                    s.date,
                    s.time,
                    procedure,
                    meaning,
                    orientation,
                ]
            )
    return rows


def write_metadata(path: Path, studies: Iterable[Study]) -> None:
    """``mimic-cxr-2.0.0-metadata.csv``: one row per image, sorted by subject then study."""
    ordered = sorted(studies, key=lambda s: (s.subject_id, s.study_id))
    write_csv(path, METADATA_COLUMNS, metadata_rows(ordered))


def write_split(path: Path, studies: Iterable[Study]) -> None:
    """``mimic-cxr-2.0.0-split.csv``: one row per image."""
    ordered = sorted(studies, key=lambda s: (s.subject_id, s.study_id))
    rows = [[i.dicom_id, s.study_id, s.subject_id, s.split] for s in ordered for i in s.images]
    write_csv(path, SPLIT_COLUMNS, rows)


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def write_jsonl(path: Path, records: Iterable[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fixed_clock(start: str = "2025-03-14T09") -> Iterator[str]:
    """Fixed, advancing ISO timestamps (2 s apart) to stand in for a recorder's wall clock."""
    second = 0
    while True:
        second += 2
        yield f"{start}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def chat_completion(call_key: str, model: str, text: str) -> dict[str, object]:
    """An OpenAI chat completion object (as a dict) answering with ``text``."""
    rid = hashlib.sha256(call_key.encode()).hexdigest()[:24]
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "model": model, "choices": [choice]}
