"""Write the radiology pilot replica: a small, fully synthetic bundle that reproduces the
audited chest-radiograph VLM pilot's failure chain and every structural count of the audit
(seeds/000, sections 3-4), and its clean twin with every defect repaired.

    python examples/cxr_pilot/generate.py              # -> examples/cxr_pilot/out/{flawed,clean}
    python examples/cxr_pilot/generate.py --out DIR    # -> DIR/flawed, DIR/clean
    python examples/cxr_pilot/generate.py --twin flawed --out DIR

Deterministic (fixed seeds, fixed timestamps, no network): the same command writes the same
bytes. DICOM files are written here with pydicom (16 x 16 pixels) and rendered with
provgraph's renderer; nothing binary is committed.

**flawed/** is the pilot as the audit found it:

- cohort: 30 MIMIC-style studies from 28 patients (two patients with two studies each); DICOM
  views 14 PA, 11 AP, 1 lateral (LL) and 4 blank; the selector admitted official test *and*
  validate studies and the manifest kept no split column;
- pixels: the 4 blank-view images are MONOCHROME1 and were rendered without inversion;
- calls: 5 model families x 2 prompt conditions x 30 studies = 300 planned calls; both Claude
  conditions executed prompt C (60 calls, captured at the request), every model was requested
  by a mutable alias with no resolved snapshot recorded; two Qwen A outputs are zero-byte and
  one Gemini B output is absent, all three logged ``ok``: 297 nonempty reports;
- labels: the extractor read at most 4,000 characters, and 5 Claude reports are longer; raw
  extractor responses and decoding settings were not kept; reference labels are the 14
  CheXpert findings (11 blocks UNCERTAIN, excluded by the declared mapping);
- analysis: 420 (case, finding) blocks, 369 complete across all 10 conditions; the historical
  positional route (drop per condition, cut to the shortest column) gives n = 383, and
  ``results/stats.json`` reports that route's Cochran Q and McNemar counts as the paper did;
- release: the manuscript, the tables and the released zip keep stale model names and the
  historical values; the table and figure were built from an earlier ``results/stats.json``;
  the zip has no ``SHA256SUMS``.

**clean/** is the same pilot run as the contract intends: 30 test-split frontal studies (the
selector took the frontal image of each study), repeated patients declared and clustered,
MONOCHROME1 images rendered with inversion by ``provgraph render``, every prompt condition
bound to its own prompt, resolved snapshots recorded, 300 nonempty reports, the extractor
reading whole reports and keeping its raw responses, statistics reported on the keyed cohort,
texts and a checksummed zip that agree with the registry, fresh build records.

The statistics are whatever the synthetic labels give. The generator computes them itself
(numpy and scipy, not provgraph) only to write the manuscript: the flawed twin reports its
own positional-route Q as its historical number, and the registry marks it superseded by
the keyed value, as the audit did with Q = 154.73 and 182.29.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import sys
import warnings
import zipfile
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
from scipy import stats

from provgraph.bundle.contract.sections.annotation import CHEXPERT_FINDINGS

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "out"
SEED = 20260728
BASE_IRI = "https://example.org/cxr-pilot/"

#: The 14 CheXpert observations, in the labeler's order (the endpoint's findings).
FINDINGS = CHEXPERT_FINDINGS
PATHOLOGIES = FINDINGS[1:]
PHRASE = {
    "Enlarged Cardiomediastinum": "widening of the cardiomediastinal silhouette",
    "Cardiomegaly": "enlargement of the cardiac silhouette",
    "Lung Lesion": "a focal pulmonary nodule",
    "Lung Opacity": "patchy airspace opacity",
    "Edema": "interstitial pulmonary edema",
    "Consolidation": "lobar consolidation",
    "Pneumonia": "findings suggestive of pneumonia",
    "Atelectasis": "bibasilar atelectasis",
    "Pneumothorax": "a pneumothorax",
    "Pleural Effusion": "a pleural effusion",
    "Pleural Other": "pleural thickening",
    "Fracture": "a rib fracture",
    "Support Devices": "a support device in place",
}


@dataclass(frozen=True)
class Family:
    key: str
    name: str  # canonical name the registry and the texts use
    stale: str | None  # the outdated name the historical texts still write
    alias: str  # what the requests named
    snapshot: str  # what the provider resolved it to (recorded in the clean twin only)
    accuracy: tuple[float, float]  # chance of a correct candidate label, conditions A and B


FAMILIES = (
    Family("claude", "Claude 3.5 Sonnet", "Claude 3 Sonnet", "claude-3-5-sonnet-latest",
           "claude-3-5-sonnet-20241022", (0.87, 0.87)),
    Family("gpt", "GPT-4o", "GPT-4V", "gpt-4o", "gpt-4o-2024-08-06", (0.86, 0.80)),
    Family("gemini", "Gemini 1.5 Pro", "Gemini Pro Vision", "gemini-1.5-pro",
           "gemini-1.5-pro-2024-09-24", (0.76, 0.82)),
    Family("qwen", "Qwen2-VL-72B", None, "qwen2-vl-72b-instruct", "qwen2-vl-72b-instruct-2024-09-19",
           (0.70, 0.75)),
    Family("llama", "Llama 3.2 90B Vision", None, "llama-3.2-90b-vision-instruct",
           "llama-3.2-90b-vision-instruct-2024-09-25", (0.66, 0.73)),
)  # fmt: skip
PROMPTS = ("A", "B")
CONDITIONS = tuple(f"{f.key}-{p}" for f in FAMILIES for p in PROMPTS)
SYSTEM = {
    "A": "You are a radiologist. Write a complete chest radiograph report, with FINDINGS and "
    "IMPRESSION sections, for the image provided.",
    "B": "You are a radiologist. Write a chest radiograph report. Describe only findings you can "
    "see on the image, and say explicitly when a finding is uncertain rather than guessing.",
    # the default prompt the Claude adapter imported by value before the A/B patch ran
    "C": "You are an expert thoracic radiologist. Produce a structured report with FINDINGS and "
    "IMPRESSION sections.",
}
EXTRACTOR = "gpt-4o-mini-2024-07-18"
DECODING = {"temperature": 0, "max_tokens": 1024}

# --- the cohort, by position in the plan (the order the positional route pairs in) ---------
N_STUDIES = 30
BLANK = (5, 12, 19, 26)  # undocumented views; exactly these are MONOCHROME1
LATERAL = 22  # the one lateral (LL) image
REPEATED = ((12, 22), (8, 15))  # two patients with two studies each
VALIDATE = (2, 9, 16, 23, 29)  # official validate split, admitted by the selector
QWEN_A_EMPTY = (3, 19)  # zero-byte outputs logged ok (one eligible study, one blank-view)
GEMINI_B_MISSING = 26  # absent output logged ok
# reference UNCERTAIN blocks (excluded by the declared mapping): 8 in the 25 eligible studies,
# 2 of them in the eligible zero-byte Qwen A study; 3 in ineligible studies with every output
UNCERTAIN = (
    (3, "Pneumonia"), (3, "Atelectasis"), (1, "Edema"), (7, "Consolidation"), (10, "Lung Opacity"),
    (14, "Pleural Effusion"), (21, "Pneumonia"), (28, "Atelectasis"),
    (5, "Edema"), (12, "Cardiomegaly"), (22, "Lung Opacity"),
)  # fmt: skip
LONG_CLAUDE = ((0, "A"), (6, "A"), (11, "B"), (17, "B"), (24, "A"))  # reports over 4,000 characters
MAX_INPUT_CHARS = {"flawed": 4000, "clean": 16000}
VIEW_MEANING = {"PA": "postero-anterior", "AP": "antero-posterior", "LL": "left lateral"}
HIST_TIME = "2026-06-30T09:00:00+00:00"
CLEAN_TIME = "2026-07-30T09:00:00+00:00"


@dataclass
class Study:
    index: int
    study_id: str
    subject_id: str
    dicom_id: str
    view: str  # DICOM ViewPosition as the header writes it ("" = blank)
    photometric: str
    split: str
    reference: dict[str, str] = field(default_factory=dict)  # finding -> CheXpert code as written

    @property
    def eligible(self) -> bool:
        return self.view in ("PA", "AP")


def make_studies(twin: str, rng: np.random.Generator) -> list[Study]:
    ids = sorted({int(x) for x in rng.integers(50_000_000, 59_999_999, size=64)})
    study_ids = [str(x) for x in rng.permutation(ids)[:N_STUDIES]]
    subjects = [str(x) for x in rng.choice(np.arange(10_000_000, 19_999_999), size=N_STUDIES, replace=False)]
    for first, second in REPEATED:
        subjects[second] = subjects[first]
    eligible = [i for i in range(N_STUDIES) if i not in BLANK and i != LATERAL]
    views = {i: ("PA" if n < 14 else "AP") for n, i in enumerate(rng.permutation(eligible).tolist())}
    out = []
    for i in range(N_STUDIES):
        if twin == "flawed":
            view = "" if i in BLANK else "LL" if i == LATERAL else views[i]
            split = "validate" if i in VALIDATE else "test"
        else:  # the selector enforced the contract: the frontal image of each test study
            view = "AP" if i in BLANK else "PA" if i == LATERAL else views[i]
            split = "test"
        digest = hashlib.sha256(f"{study_ids[i]}/{i}".encode()).hexdigest()
        dicom_id = "-".join(digest[k : k + 8] for k in range(0, 40, 8))
        out.append(
            Study(
                i,
                study_ids[i],
                subjects[i],
                dicom_id,
                view,
                "MONOCHROME1" if i in BLANK else "MONOCHROME2",
                split,
            )
        )
    return out


def make_reference(studies: list[Study], rng: np.random.Generator) -> None:
    """CheXpert-coded reference labels: 1.0, 0.0, blank, and -1.0 exactly on UNCERTAIN blocks."""
    uncertain = set(UNCERTAIN)
    for s in studies:
        codes = {}
        for finding in PATHOLOGIES:
            if (s.index, finding) in uncertain:
                codes[finding] = "-1.0"
                continue
            u = rng.random()
            codes[finding] = "1.0" if u < 0.22 else "0.0" if u < 0.45 else ""
        positive = any(codes[f] in ("1.0", "-1.0") for f in PATHOLOGIES)
        codes["No Finding"] = "" if positive else "1.0"
        s.reference = codes


def present(code: str) -> bool | None:
    """Reference presence under the declared mapping (UNCERTAIN excluded, blank negative)."""
    return {"1.0": True, "0.0": False, "": False}.get(code)


def candidate_states(studies: list[Study], rng: np.random.Generator) -> dict[tuple[int, str, str], str]:
    """(study index, condition, finding) -> extractor state, for every report that exists."""
    out = {}
    for fam in FAMILIES:
        for p, acc in zip(PROMPTS, fam.accuracy, strict=True):
            cond = f"{fam.key}-{p}"
            for s in studies:
                for finding in FINDINGS:
                    truth = present(s.reference[finding])
                    truth = bool(rng.random() < 0.3) if truth is None else truth
                    correct = rng.random() < acc
                    if truth == correct:  # present and seen, or absent and called present
                        state = "POSITIVE"
                    else:
                        state = str(
                            rng.choice(["NEGATIVE", "NOT_MENTIONED", "UNCERTAIN"], p=[0.5, 0.35, 0.15])
                        )
                    out[(s.index, cond, finding)] = state
    return out


def report_text(s: Study, cond: str, states: dict[str, str], long: bool) -> str:
    lines = [f"EXAMINATION: Chest radiograph, study {s.study_id}.", "", "FINDINGS:"]
    for finding in PATHOLOGIES:
        state = states[finding]
        if state == "POSITIVE":
            lines.append(f"There is {PHRASE[finding]}.")
        elif state == "NEGATIVE":
            lines.append(f"No {PHRASE[finding].removeprefix('a ').removeprefix('findings suggestive of ')}.")
        elif state == "UNCERTAIN":
            lines.append(f"Possible {PHRASE[finding].removeprefix('a ')}, not clearly excluded.")
    if long:
        lines += ["", "DETAILED DESCRIPTION:"]
        zones = ("right upper", "right middle", "right lower", "left upper", "lingular", "left lower")
        for zone in zones * 6:
            lines.append(
                f"The {zone} zone shows preserved vascular markings without a discrete focal abnormality; "
                "the bronchovascular bundles taper normally towards the periphery."
            )
    lines += ["", "IMPRESSION:"]
    if states["No Finding"] == "POSITIVE":
        lines.append("No acute cardiopulmonary abnormality.")
    else:
        found = [f for f in PATHOLOGIES if states[f] == "POSITIVE"]
        lines.append(("Findings: " + ", ".join(found).lower() + ".") if found else "No definite abnormality.")
    return "\n".join(lines) + "\n"


# --- DICOM and rendering -------------------------------------------------------------------


def write_dicom(path: Path, s: Study) -> None:
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    rows = cols = 16
    y, x = np.mgrid[0:rows, 0:cols]
    body = np.exp(-(((x - 7.5) / 6) ** 2 + ((y - 8) / 7) ** 2))  # a bright thorax on a dark field
    lungs = np.exp(-(((np.abs(x - 7.5) - 3.5) / 2) ** 2 + ((y - 7) / 4) ** 2))
    value = 0.25 + 0.65 * body - 0.35 * lungs + 0.02 * (s.index % 5)
    stored = np.clip(value, 0, 1) * 4095
    if s.photometric == "MONOCHROME1":  # minimum value is white: the stored values are inverted
        stored = 4095 - stored
    pixels = stored.round().astype(np.uint16)
    entropy = [s.study_id, s.dicom_id]
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"  # DX for presentation
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[*entropy, "sop"])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = generate_uid(entropy_srcs=[*entropy, "study"])
    ds.SeriesInstanceUID = generate_uid(entropy_srcs=[*entropy, "series"])
    ds.PatientID = s.subject_id
    ds.PatientName = f"Synthetic^Patient{s.subject_id[-4:]}"
    ds.PatientBirthDate = "19500101"
    ds.AccessionNumber = f"ACC{s.index:05d}"
    ds.Modality = "DX"
    ds.ViewPosition = s.view
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = s.photometric
    ds.BitsAllocated = 16
    ds.BitsStored = 12
    ds.HighBit = 11
    ds.PixelRepresentation = 0
    ds.WindowCenter, ds.WindowWidth = 2048, 4096
    ds.PixelData = pixels.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.save_as(path, enforce_file_format=True)


def render(root: Path, s: Study, twin: str) -> str:
    """Render the study's DICOM to rendered/<study>.png with its record; returns the PNG's sha256."""
    from provgraph.capture.renderer import render_file
    from provgraph.evidence.renderings import sidecar_for

    image = root / "rendered" / f"{s.study_id}.png"
    image.parent.mkdir(parents=True, exist_ok=True)
    if twin == "flawed":
        # the historical pipeline windowed every image as if it were MONOCHROME2
        record = render_file(root / "dicom" / f"{s.study_id}.dcm", image, invert=False)
        record.update(renderer="cxr-pilot render_jpeg.py", renderer_version="0.3", rendered_at=HIST_TIME)
    else:
        record = render_file(root / "dicom" / f"{s.study_id}.dcm", image)
        record["rendered_at"] = CLEAN_TIME
    (image.parent / sidecar_for(image.name)).write_text(json.dumps(record, indent=2) + "\n")
    return record["image_sha256"]


# --- statistics the texts report (computed here, independently of provgraph) ---------------


def cochran_q(y: np.ndarray) -> float:
    k = y.shape[1]
    col, row = y.sum(axis=0), y.sum(axis=1)
    total = col.sum()
    return float((k - 1) * (k * (col**2).sum() - total**2) / (k * total - (row**2).sum()))


def mcnemar_counts(y: np.ndarray, alpha: float = 0.05) -> tuple[int, int]:
    """Pairs with asymptotic McNemar p < alpha, unadjusted and after Holm."""
    pvals = []
    for a, b in combinations(range(y.shape[1]), 2):
        bb = int(((y[:, a] == 1) & (y[:, b] == 0)).sum())
        cc = int(((y[:, a] == 0) & (y[:, b] == 1)).sum())
        pvals.append(1.0 if bb + cc == 0 else float(stats.chi2.sf((bb - cc) ** 2 / (bb + cc), 1)))
    p = np.array(pvals)
    order = np.argsort(p, kind="stable")
    holm = np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p))))
    return int((p < alpha).sum()), int((np.minimum(holm, 1) < alpha).sum())


@dataclass
class Route:
    q: float
    n: int
    raw: int
    holm: int


def routes(values: np.ndarray) -> tuple[Route, Route]:
    """The keyed (globally complete) and the positional-truncation routes of a block matrix."""
    complete = values[~np.isnan(values).any(axis=1)].astype(int)
    kept = [values[~np.isnan(values[:, j]), j] for j in range(values.shape[1])]
    n = min(len(c) for c in kept)
    positional = np.stack([c[:n] for c in kept], axis=1).astype(int)
    return (
        Route(cochran_q(complete), len(complete), *mcnemar_counts(complete)),
        Route(cochran_q(positional), n, *mcnemar_counts(positional)),
    )


# --- the bundle ----------------------------------------------------------------------------


def sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def contract(twin: str, keyed: Route, historical: Route) -> str:
    flawed = twin == "flawed"
    models = ""
    conditions = ""
    for fam in FAMILIES:
        a, b = f"{fam.key}-A", f"{fam.key}-B"
        conditions += (
            f'[conditions.{a}]\nsystem_prompt = "prompts/system_A.txt"\ndiffers_from = ["{b}"]\n'
            f'model = "{fam.key}"\n\n[conditions.{b}]\nsystem_prompt = "prompts/system_B.txt"\n'
            f'model = "{fam.key}"\n\n'
        )
        models += f'[models.{fam.key}]\nrequested = "{fam.alias}"\nalias_ok = true\n\n'
    q_stat = "statistic/name%3Dcochran_q/route%3Dglobally-complete"
    values = (
        f'[[release.values]]\nname = "cochran_q"\nvalue = "{keyed.q:.2f}"\naliases = ["Q"]\n'
        f'statistic = "{q_stat}"\n\n'
        f'[[release.values]]\nname = "mcnemar_significant"\nvalue = "{keyed.raw}/45"\n\n'
        f'[[release.values]]\nname = "mcnemar_significant_holm"\nvalue = "{keyed.holm}/45"\n\n'
    )
    if flawed:  # the auditor's registry: the historical values are superseded
        values += f'[[release.values]]\nname = "cochran_q"\nvalue = "{historical.q:.2f}"\naliases = ["Q"]\n'
        values += 'status = "superseded"\n\n'
        for name, old, new in (
            ("mcnemar_significant", historical.raw, keyed.raw),
            ("mcnemar_significant_holm", historical.holm, keyed.holm),
        ):
            if old != new:
                values += (
                    f'[[release.values]]\nname = "{name}"\nvalue = "{old}/45"\nstatus = "superseded"\n\n'
                )
    entities = "".join(
        f'[[release.entities]]\nkey = "{fam.key}"\ncanonical = "{fam.name}"\n'
        + (f'variants = ["{fam.stale}"]\n' if fam.stale else "")
        + "\n"
        for fam in FAMILIES
    )
    entities += (
        '[[release.entities]]\nkey = "models"\ncount = 5\nnouns = ["models", "VLMs", "model families"]\n'
    )
    policy_note = (
        "30 independent cases, as reported" if flawed else "declared: the analysis clusters by patient"
    )
    return f"""# The benchmark contract of the CXR prompt pilot ({twin} twin): the intended protocol.
[project]
name = "cxr-pilot"
base_iri = "{BASE_IRI}"

[cohort]
manifest = "cohort.csv"
repeated_patients = "{"forbid" if flawed else "clustered"}"   # {policy_note}
allowed_splits = ["test"]
allowed_views = ["PA", "AP"]

[pixel]
same_image_across_conditions = true

[plan]
file = "plan.csv"

{conditions}{models}[annotation]
candidate = {{ uncertain = "negative", not_mentioned = "negative" }}
reference = {{ uncertain = "exclude", not_mentioned = "negative" }}
severity = {{ default = "minor", findings = {{ "Pneumothorax" = "severe" }} }}

[analysis]
cohort_rule = "globally-complete"
sensitivity = ["positional-truncation", "pairwise-available"]
clusters = ["study", "patient"]
bootstrap = {{ resamples = 200, seed = 1 }}

[[analysis.family]]
name = "mcnemar-all-pairs"
size = 45
adjustments = ["holm"]

[release]
name = "cxr-pilot"
version = "{"1.0.0" if flawed else "1.1.0"}"
include = ["README.md", "manuscript/*", "tables/*", "figures/*"]
derived = ["tables/*", "figures/*"]
texts = ["*.md", "*.tex"]
archives = ["release/*.zip"]

{values}{entities}"""


def texts(twin: str, route: Route) -> dict[str, str]:
    """README, manuscript and table as written: the flawed twin keeps stale names and values."""
    names = {f.key: (f.stale if twin == "flawed" and f.stale else f.name) for f in FAMILIES}
    model_list = ", ".join(names[f.key] for f in FAMILIES[:-1]) + f" and {names[FAMILIES[-1].key]}"
    q = f"{route.q:.2f}"
    raw_pct, holm_pct = f"{100 * route.raw / 45:.1f}", f"{100 * route.holm / 45:.1f}"
    if twin == "flawed":
        cohort_text = f"{route.n} matched case-finding blocks"
    else:
        cohort_text = f"the {route.n} case-finding blocks complete under all ten conditions, joined by key"
    calls = (
        "All 300 planned calls completed with status ok."
        if twin == "flawed"
        else "Of 300 planned calls, 300/300 produced a nonempty report."
    )
    readme = f"""# CXR prompt pilot: reproducibility bundle

Five VLMs ({model_list}) reported on 30 chest radiographs under two prompts.
{calls}
Cochran's Q = {q} over {cohort_text}.
McNemar tests: {route.raw}/45 comparisons ({raw_pct}%) had p < 0.05, {route.holm}/45 ({holm_pct}%) after Holm.
"""
    manuscript = rf"""\section{{Results}}
We compared five VLMs ({model_list}) under prompts A and B.
Across {cohort_text}, Cochran's $Q = {q}$ (9 degrees of freedom).
Of 45 pairwise McNemar comparisons, {route.raw}/45 ({raw_pct}\%) had $p < 0.05$ and
{route.holm}/45 ({holm_pct}\%) remained below 0.05 after Holm adjustment.
"""
    table = f"""| statistic | value |
|---|---|
| Cochran Q | {q} |
| McNemar p < 0.05 | {route.raw}/45 |
| McNemar p < 0.05 (Holm) | {route.holm}/45 |
"""
    return {"README.md": readme, "manuscript/main.tex": manuscript, "tables/table2.md": table}


def figure(route: Route, twin: str) -> str:
    label = "historical" if twin == "flawed" else "keyed"
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="60">'
        f'<rect x="10" y="20" width="{min(route.q, 200):.0f}" height="20" fill="#4a7"/>'
        f'<text x="10" y="14">Cochran Q ({label})</text></svg>\n'
    )


TABLE_SCRIPT = "# writes tables/table2.md from results/stats.json\nimport json\n"
FIGURE_SCRIPT = "# draws figures/fig3.svg from results/stats.json\nimport json\n"


def build_record(
    output: str, output_text: str, script: str, script_text: str, stats_sha: str, time: str
) -> str:
    record = {
        "output": {"path": output, "sha256": sha(output_text)},
        "inputs": [{"path": "results/stats.json", "sha256": stats_sha}],
        "script": {"path": script, "sha256": sha(script_text)},
        "parameters": {},
        "time": time,
        "command": f"python {script}",
    }
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def zip_bytes(members: dict[str, str], with_sums: bool) -> bytes:
    if with_sums:
        sums = "".join(f"{sha(text)}  {name}\n" for name, text in sorted(members.items()))
        members = {**members, "SHA256SUMS": sums}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=(2026, 7, 18, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, members[name])
    return buf.getvalue()


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def generate(root: Path, twin: str) -> Path:
    """Write one twin (``flawed`` or ``clean``) into ``root`` (replaced if it exists)."""
    if twin not in ("flawed", "clean"):
        raise ValueError(f"twin must be flawed or clean, got {twin!r}")
    flawed = twin == "flawed"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    rng = np.random.default_rng(SEED)
    studies = make_studies(twin, rng)
    make_reference(studies, rng)
    states = candidate_states(studies, rng)

    # MIMIC-style tables (the dataset) and the selector's manifest
    write(
        root,
        "mimic-cxr-2.0.0-metadata.csv",
        "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,Rows,Columns,"
        "ViewCodeSequence_CodeMeaning\n"
        + "".join(
            f"{s.dicom_id},{s.subject_id},{s.study_id},CHEST (PA AND LAT),{s.view},16,16,"
            f"{VIEW_MEANING.get(s.view, '')}\n"
            for s in studies
        ),
    )
    write(
        root,
        "mimic-cxr-2.0.0-split.csv",
        "dicom_id,study_id,subject_id,split\n"
        + "".join(f"{s.dicom_id},{s.study_id},{s.subject_id},{s.split}\n" for s in studies),
    )
    columns = sorted(FINDINGS)  # MIMIC's CheXpert table orders findings alphabetically
    write(
        root,
        "mimic-cxr-2.0.0-chexpert.csv",
        "subject_id,study_id,"
        + ",".join(columns)
        + "\n"
        + "".join(
            f"{s.subject_id},{s.study_id}," + ",".join(s.reference[f] for f in columns) + "\n"
            for s in studies
        ),
    )
    if flawed:  # the historical manifest: no split column, every study included
        manifest = "case_key,patient_key,source,view,inclusion,reason\n" + "".join(
            f"{s.study_id},{s.subject_id},mimic-cxr-2.0.0,{s.view},include,PA preferred over AP\n"
            for s in studies
        )
    else:
        manifest = "case_key,patient_key,source,split,view,inclusion,reason\n" + "".join(
            f"{s.study_id},{s.subject_id},mimic-cxr-2.0.0,{s.split},{s.view},include,frontal test study\n"
            for s in studies
        )
    write(root, "cohort.csv", manifest)

    # DICOM headers and the model-visible images
    image_sha = {}
    for s in studies:
        write_dicom(root / "dicom" / f"{s.study_id}.dcm", s)
        image_sha[s.index] = render(root, s, twin)

    # prompts, plan, call records and outputs
    for key, text in SYSTEM.items():
        write(root, f"prompts/system_{key}.txt", text + "\n")
    plan = ["call_id,case,condition,replicate"]
    records = []
    reports: dict[tuple[int, str], str] = {}
    for fam in FAMILIES:
        for p in PROMPTS:
            cond = f"{fam.key}-{p}"
            for s in studies:
                call_id = f"{s.study_id}-{cond}"
                plan.append(f"{call_id},{s.study_id},{cond},1")
                output = f"outputs/{cond}/{s.study_id}.txt"
                empty = flawed and cond == "qwen-A" and s.index in QWEN_A_EMPTY
                missing = flawed and cond == "gemini-B" and s.index == GEMINI_B_MISSING
                long = fam.key == "claude" and (s.index, p) in LONG_CLAUDE
                labels = {f: states[(s.index, cond, f)] for f in FINDINGS}
                text = "" if empty else report_text(s, cond, labels, long)
                if not missing:
                    write(root, output, text)
                if text and not missing:
                    reports[(s.index, cond)] = text
                executed = "C" if flawed and fam.key == "claude" else p
                record = {
                    "call_id": call_id,
                    "status": "ok",
                    "output": output,
                    "request_id": "req_" + sha(call_id)[:20],
                    "finish_reason": "stop",
                    "image": f"rendered/{s.study_id}.png",
                    "image_sha256": image_sha[s.index],
                    "requested_model": fam.alias,
                    "prompt": {"system": SYSTEM[executed], "user": f"Chest radiograph, study {s.study_id}."},
                    "prompt_source": "request",
                    "decoding": DECODING,
                }
                if not flawed:
                    record["resolved_model"] = fam.snapshot
                records.append(json.dumps(record) + "\n")
    write(root, "plan.csv", "\n".join(plan) + "\n")
    write(root, "calls.jsonl", "".join(records))

    # the extractor's label cache: one line per (report, finding)
    cache = []
    limit = MAX_INPUT_CHARS[twin]
    for (index, cond), text in reports.items():
        s = studies[index]
        labels = {f: states[(index, cond, f)] for f in FINDINGS}
        raw = json.dumps(labels, sort_keys=True)
        for finding in FINDINGS:
            line = {
                "report": f"outputs/{cond}/{s.study_id}.txt",
                "finding": finding,
                "state": labels[finding],
                "extractor": EXTRACTOR,
                "max_input_chars": limit,
                "input_chars": len(text),
            }
            if not flawed:  # raw responses and decoding were not kept historically
                line |= {"raw_response": raw, "decoding": {"temperature": 0}}
            cache.append(json.dumps(line) + "\n")
    write(root, "labels/extractor_cache.jsonl", "".join(cache))

    # the block matrix by key, and the statistics the texts report
    values = np.full((N_STUDIES * len(FINDINGS), len(CONDITIONS)), np.nan)
    for i, s in enumerate(studies):
        for f_i, finding in enumerate(FINDINGS):
            ref = present(s.reference[finding])
            if ref is None:
                continue
            for j, cond in enumerate(CONDITIONS):
                if (i, cond) in reports:
                    cand = states[(i, cond, finding)] == "POSITIVE"
                    values[i * len(FINDINGS) + f_i, j] = float(cand == ref)
    keyed, historical = routes(values)
    reported = historical if flawed else keyed
    stat_rows: list[dict] = [
        {"name": "cochran_q", "value": f"{reported.q:.2f}", "n": reported.n, "df": 9},
        {"name": "significant_count", "value": reported.raw, "test_variant": "asymptotic",
         "adjustment": "none", "family": "mcnemar-all-pairs", "family_size": 45, "n": reported.n},
        {"name": "significant_count", "value": reported.holm, "test_variant": "asymptotic",
         "adjustment": "holm", "family": "mcnemar-all-pairs", "family_size": 45, "n": reported.n},
    ]  # fmt: skip
    if not flawed:
        for row in stat_rows:
            row["cohort_rule"] = "globally-complete"
    stats_json = json.dumps({"statistics": stat_rows}, indent=2) + "\n"
    write(root, "results/stats.json", stats_json)

    # texts, derived artifacts with their build records, the released archive
    written = texts(twin, reported)
    for rel, text in written.items():
        write(root, rel, text)
    fig = figure(reported, twin)
    write(root, "figures/fig3.svg", fig)
    write(root, "scripts/make_table.py", TABLE_SCRIPT)
    write(root, "scripts/make_figure.py", FIGURE_SCRIPT)
    # the flawed table and figure were built before results/stats.json was last rewritten
    built_from = sha(stats_json.replace('"n": ', '"n":  ')) if flawed else sha(stats_json)
    built_at = HIST_TIME if flawed else CLEAN_TIME
    for rel, text, script, script_text in (
        ("tables/table2.md", written["tables/table2.md"], "scripts/make_table.py", TABLE_SCRIPT),
        ("figures/fig3.svg", fig, "scripts/make_figure.py", FIGURE_SCRIPT),
    ):
        name = Path(rel).stem
        write(
            root,
            f"builds/{name}.build.json",
            build_record(rel, text, script, script_text, built_from, built_at),
        )
    members = {**written, "figures/fig3.svg": fig}
    archive = "release/reproducibility_bundle_REVISED.zip" if flawed else "release/cxr-pilot-1.1.0.zip"
    data = zip_bytes(members, with_sums=not flawed)
    write(root, archive, data)
    if not flawed:
        write(root, "release/SHA256SUMS", f"{sha(data)}  {Path(archive).name}\n")
    write(root, "provgraph.toml", contract(twin, keyed, historical))
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"target folder (default: {DEFAULT_OUT})"
    )
    parser.add_argument("--twin", choices=["flawed", "clean", "both"], default="both")
    args = parser.parse_args(argv)
    for twin in ("flawed", "clean") if args.twin == "both" else (args.twin,):
        print(f"wrote {generate(args.out / twin, twin)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
