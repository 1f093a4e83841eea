"""A MIMIC-CXR cohort frozen and checked before any model call (no plan, no calls).

The bundle holds the official tables ``mimic-cxr-2.0.0-metadata.csv`` and
``mimic-cxr-2.0.0-split.csv`` (an extract for the candidate subjects, in PhysioNet's schema),
and a cohort manifest of candidate studies that records only ``case_key, patient_key,
inclusion``: split and view are *not* repeated there, so the cohort rules must read them from
the official tables. The contract has ``[cohort]`` only: test split, frontal (PA/AP) views,
one study per patient, blank views not acceptable.

Sound but unusual: a cohort-only bundle (no ``[plan]``); a manifest without split or view; the
tables also list studies and images that are not candidates (other subjects' train studies,
lateral companions of excluded studies), which no rule may judge; most included studies are,
as in MIMIC-CXR, a PA image *and* its LATERAL companion (study-level cases: the study is
frontal because it has a frontal image; a rule reading views from the metadata table must not
take the lateral companion for the case's view), a third are single portable AP images.

Flawed twin (each a selector bug a study-level pipeline makes):
- a patient's second study, re-split to train by a study-level re-split, is included next to
  their test study (``cohort-patient-in-two-splits``);
- a study whose only image is a left lateral (LL) is included (``cohort-view-not-allowed``);
- a ``validate`` study is included while only test is allowed (``cohort-split-not-allowed``);
- a study with a blank ViewPosition is included (``cohort-view-undocumented``);
- a case key with two digits transposed, so no official table knows its split
  (``cohort-split-not-recorded``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_cohort import Planted, Study, study_pool, write_csv, write_metadata, write_split, write_text

NAME = "mimic-cohort-only"
SOURCE = (
    "MIMIC-CXR-JPG 2.0.0/2.1.0 documentation, https://physionet.org/content/mimic-cxr-jpg/2.1.0/ "
    "(mimic-cxr-2.0.0-metadata.csv, mimic-cxr-2.0.0-split.csv); cohort manifest and [cohort] "
    "from provgraph README 'Cohort and pixel clauses' and provgraph/importers/cohort.py"
)
BASE = "https://example.org/mimic-cohort-only/"

#: (patient index, official split, views of the study's images); the included studies first
POOL: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    *((i, "test", ("PA", "LATERAL") if i % 3 else ("AP",)) for i in range(12)),
    (0, "test", ("AP",)),  # 12: patient 0's second test study (excluded: one per patient)
    (12, "test", ("LL",)),  # 13: lateral only (excluded)
    (13, "validate", ("PA", "LATERAL")),  # 14: validate (excluded)
    (14, "test", ("",)),  # 15: blank ViewPosition (excluded)
    (15, "test", ("PA",)),  # 16: included; the flawed manifest transposes its key
    *((20 + i, "train", ("PA", "LATERAL")) for i in range(4)),  # not candidates at all
)
INCLUDED = (*range(12), 16)
EXCLUDED = (12, 13, 14, 15)

CONTRACT = f"""\
[project]
name = "mimic-cohort-only"
base_iri = "{BASE}"

# Cohort frozen before any model call: no [plan] yet.
[cohort]
manifest = "cohort/cohort_manifest.csv"   # case_key, patient_key, inclusion
sampling_unit = "study"
repeated_patients = "forbid"
allowed_splits = ["test"]
allowed_views = ["PA", "AP"]
blank_views_acceptable = false
"""


def _transposed(key: str) -> str:
    """The key with its last two different adjacent digits swapped (a hand-copy slip)."""
    i = max(i for i in range(1, len(key) - 1) if key[i] != key[i + 1])
    return key[:i] + key[i + 1] + key[i] + key[i + 2 :]


def generate(root: Path, twin: str) -> list[Planted]:
    studies = study_pool(20_260_114, POOL)
    planted: list[Planted] = []
    decisions = {i: True for i in INCLUDED} | {i: False for i in EXCLUDED}
    keys = {i: studies[i].study_id for i in decisions}
    if twin == "flawed":
        # patient 0's second study re-split to train and admitted beside the test one
        studies[12] = studies[12].with_split("train")
        for i in (12, 13, 14, 15):
            decisions[i] = True
        keys[16] = _transposed(studies[16].study_id)
        first = studies[0].study_id
        planted = [
            Planted("cohort-patient-in-two-splits", f"cohort-entry/{first}", "patient in train and test"),
            Planted("cohort-view-not-allowed", f"cohort-entry/{keys[13]}", "LL study included"),
            Planted("cohort-split-not-allowed", f"cohort-entry/{keys[14]}", "validate study included"),
            Planted("cohort-view-undocumented", f"cohort-entry/{keys[15]}", "blank ViewPosition included"),
            Planted("cohort-split-not-recorded", f"cohort-entry/{keys[16]}", "case key in no table"),
        ]
    _write(root, studies, decisions, keys)
    return planted


def _write(root: Path, studies: list[Study], decisions: dict[int, bool], keys: dict[int, str]) -> None:
    write_text(root / "provgraph.toml", CONTRACT)
    write_metadata(root / "physionet" / "mimic-cxr-2.0.0-metadata.csv", studies)
    write_split(root / "physionet" / "mimic-cxr-2.0.0-split.csv", studies)
    rows = [
        [keys[i], studies[i].subject_id, "include" if decisions[i] else "exclude"]
        for i in sorted(decisions, key=lambda i: keys[i])
    ]
    write_csv(root / "cohort" / "cohort_manifest.csv", ("case_key", "patient_key", "inclusion"), rows)
    write_text(
        root / "README.md",
        "# Frozen cohort\n\nTest-split frontal studies of MIMIC-CXR, one per patient, selected from\n"
        "the official metadata and split tables before any model is called.\n",
    )
