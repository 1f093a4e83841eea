"""A whole radiology VLM benchmark, end to end, built the way the audit (seed 000) says it should
be (holdout shape).

Ten MIMIC-CXR test studies of nine patients (one patient's two studies kept and clustered), the
official metadata and split tables, a cohort manifest that names only case, patient and the
decision (split and view come from the official tables and the DICOM headers); pydicom DX
files of both photometric interpretations rendered by ``provgraph render``; two report prompts
x two VLMs (GPT-4o pinned, Claude 3.5 Sonnet by its ``-latest`` alias with the snapshot
recorded), every call through the real :class:`~provgraph.capture.recorder.Recorder` with a
deterministic fake client; an LLM extractor cache labelling the generated reports; the MIMIC
CheXpert reference labels; the team's confusion cells and statistics (Cochran's Q, exact
McNemar, Holm) computed with statsmodels from the keyed cells; a manuscript whose numbers the
``[release]`` registry names; derived table and figure with build records; a release tar.gz
with a root SHA256SUMS and a SHA256SUMS beside it.

Sound but unusual choices: an Anthropic call that failed ``overloaded`` and was retried at once
(two records, the last ok); the reference's UNCERTAIN labels excluded from every condition
(so the team's cell file leaves those blocks blank); lateral companion images in the metadata
table that are never sent; two excluded studies kept in the manifest with their reasons;
a header VOI window on some DICOMs and a rescale on the MONOCHROME1 ones.

Flawed twin (7 clauses): one MONOCHROME1 image re-rendered by the legacy path without
inversion; the GPT impression adapter fell back to the findings prompt; one Claude call came
back empty and was logged ok; the extractor's input limit cut one long report; one study of
the validate split entered the cohort; the reported Q has two digits transposed; the figure in
the release archive was regenerated after its SHA256SUMS was written.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _holdout_e2e as h

NAME = "cxr-pipeline-end-to-end"
SOURCE = (
    "MIMIC-CXR-JPG/MIMIC-CXR 2.0.0 tables (https://physionet.org/content/mimic-cxr-jpg/2.0.0/: "
    "mimic-cxr-2.0.0-metadata.csv, -split.csv, -chexpert.csv columns); pydicom Dataset.save_as "
    "via tests/fixtures/make_images.py; `provgraph render` (provgraph/cli/render.py); "
    "provgraph.capture.recorder.Recorder (README 'Recording at the request boundary'); OpenAI "
    "chat completion and Anthropic message response objects; extractor cache per "
    "provgraph/importers/extractor_cache.py; reported stats/cells per provgraph/importers/"
    "reported.py; statsmodels cochrans_q, mcnemar, multipletests; build records per "
    "provgraph/importers/buildrecord.py; GNU sha256sum output"
)
FINDINGS = ["Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural Effusion"]
CODE = {"POSITIVE": "1.0", "NEGATIVE": "0.0", "UNCERTAIN": "-1.0", "NOT_MENTIONED": ""}
#: included studies: (study_id, subject_id, view, photometric, lateral companion)
STUDIES = [
    ("51230411", "10482210", "PA", "MONOCHROME2", True),
    ("52017736", "10482210", "AP", "MONOCHROME2", False),  # same patient, a later study
    ("53561902", "11350407", "PA", "MONOCHROME1", True),
    ("54408815", "12096633", "AP", "MONOCHROME2", False),
    ("55172240", "12741058", "PA", "MONOCHROME2", True),
    ("56093327", "13302915", "AP", "MONOCHROME1", False),
    ("57741068", "14077562", "PA", "MONOCHROME2", True),
    ("58330154", "15518840", "PA", "MONOCHROME2", False),
    ("59012687", "16224391", "AP", "MONOCHROME1", True),
    ("59876431", "17960324", "PA", "MONOCHROME2", False),
]
EXCLUDED = [
    ("50911276", "18113457", "LATERAL", "no frontal image"),
    ("50677012", "19045518", "PA", "train split"),
]
CONDITIONS = [
    ("gpt-findings", "gpt", "findings"),
    ("gpt-impression", "gpt", "impression"),
    ("claude-findings", "claude", "findings"),
    ("claude-impression", "claude", "impression"),
]
ACCURACY = {"gpt-findings": 0.92, "gpt-impression": 0.8, "claude-findings": 0.86, "claude-impression": 0.66}
PROMPTS = {
    "findings": "You are a board-certified radiologist. Describe the chest radiograph in a full "
    "FINDINGS section, one sentence per structure, then state the impression.",
    "impression": "You are a board-certified radiologist. Give only a short IMPRESSION for the chest "
    "radiograph: the positive findings, most important first.",
}
USER = "The frontal chest radiograph of one study is attached. Write the report."
MODELS = {
    "gpt": ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
    "claude": ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"),
}
EXTRACTOR = "gpt-4o-mini-2024-07-18"
LONG_CASE = "57741068"  # its findings reports carry a long comparison paragraph
SPLIT_CASE = "55172240"  # flawed: its images are in the validate split
EMPTY_CALL = "claude-impression--58330154"
RETRIED_CALL = "claude-findings--54408815"
POLARITY_CASE = "56093327"
ARCHIVE = "dist/cxr-vlm-bench-1.0.0.tar.gz"


def dicom_id(study: str, lateral: bool = False) -> str:
    d = h.sha256(f"{study}{lateral}".encode())
    return "-".join((d[0:8], d[8:16], d[16:24], d[24:32], d[32:40]))


def mimic_tables(root: Path, flawed: bool) -> None:
    meta, split = [], []
    rows = [(s, p, v, lat) for s, p, v, _, lat in STUDIES] + [(s, p, v, False) for s, p, v, _ in EXCLUDED]
    for study, subject, view, lateral in rows:
        images = [(dicom_id(study), view)] + ([(dicom_id(study, True), "LATERAL")] if lateral else [])
        where = "train" if study == "50677012" else "validate" if flawed and study == SPLIT_CASE else "test"
        for did, v in images:
            meta.append(
                (
                    did,
                    subject,
                    study,
                    "CHEST (PA AND LAT)",
                    v,
                    8,
                    8,
                    21800506,
                    213014.531,
                    "CHEST (PA AND LAT)",
                    {"PA": "postero-anterior", "AP": "antero-posterior"}.get(v, "lateral"),
                    "Erect",
                )
            )
            split.append((did, study, subject, where))
    header = [
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
    ]
    h.write_csv(root, "mimic/mimic-cxr-2.0.0-metadata.csv", header, meta)
    h.write_csv(
        root, "mimic/mimic-cxr-2.0.0-split.csv", ["dicom_id", "study_id", "subject_id", "split"], split
    )
    manifest = [(s, p, "include", "") for s, p, *_ in STUDIES] + [
        (s, p, "exclude", r) for s, p, _, r in EXCLUDED
    ]
    h.write_csv(root, "cohort/manifest.csv", ["case_key", "patient_key", "inclusion", "reason"], manifest)


def references(rng: random.Random) -> dict[str, dict[str, str]]:
    """MIMIC CheXpert labels of every included study (the 5 endpoint findings vary)."""
    out = {}
    for study, *_ in STUDIES:
        labels = {
            f: rng.choices(["POSITIVE", "NEGATIVE", "NOT_MENTIONED", "UNCERTAIN"], [4, 3, 3, 1])[0]
            for f in FINDINGS
        }
        out[study] = labels
    return out


def write_references(root: Path, refs: dict[str, dict[str, str]]) -> None:
    rows = []
    subjects = {s: p for s, p, *_ in STUDIES}
    for study, labels in refs.items():
        pathology = any(v == "POSITIVE" for v in labels.values())
        full = {f: labels.get(f, "NOT_MENTIONED") for f in h.ALL_FINDINGS}
        full["No Finding"] = "NOT_MENTIONED" if pathology else "POSITIVE"
        rows.append([subjects[study], study] + [CODE[full[f]] for f in h.ALL_FINDINGS])
    h.write_csv(root, "mimic/mimic-cxr-2.0.0-chexpert.csv", ["subject_id", "study_id", *h.ALL_FINDINGS], rows)


def images(root: Path, flawed: bool) -> dict[str, Path]:
    """DICOM files written by pydicom, rendered by ``provgraph render``; study -> PNG."""
    import corpus

    spec = importlib.util.spec_from_file_location(
        "make_images", Path(__file__).parents[2] / "fixtures" / "make_images.py"
    )
    mk = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mk)  # type: ignore[union-attr]
    for i, (study, subject, view, photometric, _) in enumerate(STUDIES):
        mono1 = photometric == "MONOCHROME1"
        mk.write_dicom(
            root / "dicom" / f"{dicom_id(study)}.dcm",
            patient=subject,
            view=view,
            photometric=photometric,
            window=None if mono1 else (2048.0, 4096.0),
            rescale=(1.0, -1024.0) if mono1 else None,
            seed=i + 1,
            name=f"Anon^{i}",
            accession=f"ACC{i:04d}",
            birth_date="19600101",
        )
    code, out, err = corpus._provgraph("render", str(root / "dicom"), "-o", str(root / "rendered"))
    if code:
        raise RuntimeError(f"provgraph render failed: {out}{err}")
    for sidecar in (root / "rendered").glob("*.render.json"):
        h.fixed_clock(sidecar)
    if flawed:  # the legacy fast path re-rendered one study and ignored the photometric
        from provgraph.capture.renderer import render_file

        did = dicom_id(POLARITY_CASE)
        render_file(root / "dicom" / f"{did}.dcm", root / "rendered" / f"{did}.png", invert=False)
        h.fixed_clock(root / "rendered" / f"{did}.png.render.json")
    return {s: root / "rendered" / f"{dicom_id(s)}.png" for s, *_ in STUDIES}


def candidate(rng: random.Random, ref: dict[str, str], cond: str) -> dict[str, str]:
    """What the model's report says of each finding (POSITIVE, NEGATIVE or not mentioned)."""
    out = {}
    for f in FINDINGS:
        truth = ref[f] == "POSITIVE" or (ref[f] == "UNCERTAIN" and rng.random() < 0.5)
        said = truth if rng.random() < ACCURACY[cond] else not truth
        out[f] = "POSITIVE" if said else rng.choice(["NEGATIVE", "NOT_MENTIONED"])
    return out


def report_text(style: str, labels: dict[str, str], study: str) -> str:
    if style == "impression":
        pos = [f.lower() for f in FINDINGS if labels[f] == "POSITIVE"]
        return (
            "IMPRESSION: "
            + (", ".join(pos).capitalize() + "." if pos else "No acute cardiopulmonary process.")
            + "\n"
        )
    lines = ["TECHNIQUE: Single frontal view of the chest.", "COMPARISON: None available."]
    if study == LONG_CASE:
        lines.append(
            "HISTORY: "
            + " ".join(
                [
                    "Prior outside imaging described in the referral is not available "
                    "for direct comparison and is summarised here as reported by the clinical team."
                ]
                * 8
            )
        )
    lines.append("FINDINGS:")
    for f in FINDINGS:
        if labels[f] == "POSITIVE":
            lines.append(
                f"There is {f.lower()}, most evident on this projection, without further characterisation."
            )
        elif labels[f] == "NEGATIVE":
            lines.append(f"No {f.lower()} is seen on this frontal projection of the chest.")
    return "\n".join(lines) + "\nIMPRESSION: See findings above.\n"


def request(model: str, system: str, png: Path) -> dict:
    data = base64.b64encode(png.read_bytes()).decode()
    if model == "gpt":
        content = [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
            {"type": "text", "text": USER},
        ]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        return {"model": MODELS[model][0], "messages": messages, "temperature": 0, "max_tokens": 800}
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": USER},
    ]
    return {
        "model": MODELS[model][0],
        "system": system,
        "messages": [{"role": "user", "content": content}],
        "temperature": 0,
        "max_tokens": 800,
    }


def run_calls(root: Path, pngs: dict[str, Path], texts: dict[str, str], flawed: bool) -> None:
    """plan.csv, then every planned call through the real Recorder (with a fixed clock)."""
    from provgraph.capture import recorder as rec

    plan = [(f"{c}--{s}", s, c, 1) for c, _, _ in CONDITIONS for s, *_ in STUDIES]
    h.write_csv(root, "plan.csv", ["call_id", "case", "condition", "replicate"], plan)
    client = h.FakeClient(
        texts, {RETRIED_CALL}, {"openai": MODELS["gpt"][1], "anthropic": MODELS["claude"][1]}
    )
    ticks = iter(range(3600))
    saved, rec._now = rec._now, lambda: _clock(next(ticks))
    try:
        recorder = rec.Recorder(root / "calls.jsonl", outputs="outputs", root=root)
        for cid, study, cond, _ in plan:
            model, style = next((m, st) for c, m, st in CONDITIONS if c == cond)
            if flawed and cond == "gpt-impression":
                style = "findings"  # the adapter's template lookup fell back to the findings prompt
            body = request(model, PROMPTS[style], pngs[study])
            send = getattr(client, "openai" if model == "gpt" else "anthropic")
            for _attempt in range(3):
                try:
                    recorder.call(cid, lambda _k=cid, _s=send, **b: _s(_k, **b), body, image=pngs[study])
                    break
                except RuntimeError:
                    continue  # overloaded: the harness retries at once
    finally:
        rec._now = saved


def _clock(tick: int) -> str:
    return f"2026-03-02T10:{tick // 60:02d}:{tick % 60:02d}.000Z"


def label(root: Path, labels: dict[str, dict[str, str]], flawed: bool) -> dict[str, dict[str, str]]:
    """The extractor cache over every non-empty report; returns call id -> labels it gave."""
    limit = 1200 if flawed else 4000
    lines, given = [], {}
    for cid, truth in labels.items():
        text = (root / "outputs" / f"{cid}.txt").read_text(encoding="utf-8")
        if not text:
            continue  # nothing to label
        seen = text[:limit]
        got = {f: truth[f] if f.lower() in seen.lower() else "NOT_MENTIONED" for f in FINDINGS}
        given[cid] = got
        raw = json.dumps(got, sort_keys=True)
        for f in FINDINGS:
            lines.append(
                {
                    "report": f"outputs/{cid}.txt",
                    "finding": f,
                    "state": got[f],
                    "extractor": EXTRACTOR,
                    "max_input_chars": limit,
                    "input_chars": len(text),
                    "raw_response": raw,
                    "decoding": {"temperature": 0},
                }
            )
    h.write_jsonl(root, "labels/extractor_cache.jsonl", lines)
    return given


def cells(
    refs: dict[str, dict[str, str]], given: dict[str, dict[str, str]]
) -> dict[tuple[str, str, str], str]:
    """(case, finding, condition) -> TP/TN/FN/FP by the declared mappings (reference UNCERTAIN
    excluded, NOT_MENTIONED negative on both sides)."""
    out = {}
    for cond, _, _ in CONDITIONS:
        for study, *_ in STUDIES:
            got = given.get(f"{cond}--{study}")
            for f in FINDINGS:
                if got is None or refs[study][f] == "UNCERTAIN":
                    continue
                r, c = refs[study][f] == "POSITIVE", got[f] == "POSITIVE"
                out[study, f, cond] = ("TP" if c else "FN") if r else ("FP" if c else "TN")
    return out


def manuscript(facts: dict[str, str]) -> str:
    per = "; ".join(f"{c} {facts[c]}" for c, _, _ in CONDITIONS)
    return (
        "# Report prompts for chest radiograph VLMs: a pilot on MIMIC-CXR\n\n"
        "We compared 2 models (GPT-4o and Claude 3.5 Sonnet) under 4 conditions (a findings and an "
        "impression prompt each) on 10 frontal test-split studies of 9 patients; the two studies of "
        "one patient are analysed with patient clusters.\n\n"
        "Generated reports were labelled for 5 findings by an LLM extractor and compared with the "
        "MIMIC-CXR CheXpert labels; uncertain reference labels were excluded from every condition.\n\n"
        f"On the {facts['n']} case-finding blocks complete under every condition, Cochran's Q was "
        f"{facts['q']} (p = {facts['p']}). Of 6 pairwise exact McNemar tests, {facts['raw']} had "
        f"unadjusted p below 0.05 and {facts['holm']} remained significant after Holm adjustment.\n\n"
        f"Proportion correct: {per}.\n"
    )


def analysis_files(root: Path, grid: dict, stats: list[dict]) -> None:
    rows = [
        (s, f, c, grid.get((s, f, c), "")) for c, _, _ in CONDITIONS for s, *_ in STUDIES for f in FINDINGS
    ]
    h.write_csv(root, "analysis/cells.csv", ["case", "finding", "condition", "cell"], rows)
    h.write_json(root, "analysis/stats.json", {"statistics": stats})


def derived(root: Path, grid: dict, flawed: bool) -> dict[str, bytes]:
    """Table and figure with their build records; returns the release members."""
    h.write(root, "scripts/tables.py", '"""Proportion correct per condition from analysis/cells.csv."""\n')
    h.write(root, "scripts/figure.py", '"""Bar chart of tables/accuracy.csv."""\n')
    rows, bars = [], []
    for c, _, _ in CONDITIONS:
        got = [v for (_, _, cc), v in grid.items() if cc == c]
        k = sum(v in ("TP", "TN") for v in got)
        rows.append((c, len(got), k, f"{k / len(got):.4f}"))
        bars.append((c, k / len(got)))
    h.write_csv(root, "tables/accuracy.csv", ["condition", "scored_blocks", "correct", "share_correct"], rows)
    draft = h.svg_bars("Share of blocks correct", bars)
    final = draft.replace("<svg ", '<svg font-family="sans-serif" ', 1)
    h.write(root, "figures/accuracy.svg", final)
    builds = [
        h.build_record(
            root, "tables/accuracy.csv", ["analysis/cells.csv"], "scripts/tables.py", {"cohort": "all"}
        ),
        h.build_record(
            root, "figures/accuracy.svg", ["tables/accuracy.csv"], "scripts/figure.py", {"width": 420}
        ),
    ]
    h.write_json(root, "builds/derived.build.json", builds)
    members = {
        p: (root / p).read_bytes()
        for p in ("README.md", "manuscript/paper.md", "tables/accuracy.csv", "figures/accuracy.svg")
    }
    listed = dict(members, **({"figures/accuracy.svg": draft.encode()} if flawed else {}))
    members["SHA256SUMS"] = h.sha256sums(listed).encode()
    return members


def release(root: Path, members: dict[str, bytes]) -> None:
    data = h.tar_gz(members)
    h.write(root, ARCHIVE, data)
    h.write(root, "dist/SHA256SUMS", h.sha256sums({Path(ARCHIVE).name: data}))


def contract(facts: dict[str, str]) -> str:
    conds = "".join(
        f'[conditions.{c}]\nsystem_prompt = "prompts/{st}.txt"\nmodel = "{m}"\n'
        f'differs_from = ["{m}-{"impression" if st == "findings" else "findings"}"]\n\n'
        for c, m, st in CONDITIONS
    )
    registry = h.registry(
        [("cochran_q", facts["q"], ["Q"]), ("holm_significant", facts["holm"], [])],
        [("gpt", "GPT-4o", ["GPT-4V"]), ("claude", "Claude 3.5 Sonnet", ["Claude 3 Sonnet"])],
        [("models", 2, ["models"]), ("conditions", 4, ["conditions"])],
    )
    return f'''[project]
name = "cxr-vlm-bench"
base_iri = "https://example.org/cxr-vlm-bench/"

[cohort]
manifest = "cohort/manifest.csv"
sampling_unit = "study"
repeated_patients = "clustered"
allowed_splits = ["test"]
allowed_views = ["PA", "AP"]
blank_views_acceptable = false

[pixel]
inputs = "dicom"
same_image_across_conditions = true

[plan]
file = "plan.csv"
decoding = {{ temperature = 0, max_tokens = 800 }}

[models.gpt]
requested = "gpt-4o-2024-08-06"

[models.claude]
requested = "claude-3-5-sonnet-latest"
alias_ok = true

{conds}[annotation]
findings = {json.dumps(FINDINGS)}
candidate = {{ uncertain = "negative", not_mentioned = "negative" }}
reference = {{ uncertain = "exclude", not_mentioned = "negative" }}

[analysis]
cohort_rule = "globally-complete"
clusters = ["study", "patient"]
bootstrap = {{ resamples = 2000, seed = 7 }}

[[analysis.family]]
name = "{h.FAMILY}"
size = 6
adjustments = ["holm"]

[release]
name = "cxr-vlm-bench"
version = "1.0.0"
include = ["README.md", "manuscript/*", "tables/*", "figures/*"]
derived = ["tables/*", "figures/*"]
texts = ["README.md", "manuscript/*.md"]

{registry}'''


def generate(root: Path, twin: str) -> list:
    from corpus import Planted

    flawed = twin == "flawed"
    rng = random.Random(269)
    root.mkdir(parents=True, exist_ok=True)
    for style, text in PROMPTS.items():
        h.write(root, f"prompts/{style}.txt", text + "\n")
    mimic_tables(root, flawed)
    refs = references(rng)
    write_references(root, refs)
    pngs = images(root, flawed)
    truth = {f"{c}--{s}": candidate(rng, refs[s], c) for c, _, _ in CONDITIONS for s, *_ in STUDIES}
    styles = {c: ("findings" if flawed and c == "gpt-impression" else st) for c, _, st in CONDITIONS}
    texts = {
        cid: report_text(styles[cid.split("--")[0]], lab, cid.split("--")[1]) for cid, lab in truth.items()
    }
    if flawed:
        texts[EMPTY_CALL] = ""
    run_calls(root, pngs, texts, flawed)
    grid = cells(refs, label(root, truth, flawed))
    stats, facts = h.team_statistics(grid, [c for c, _, _ in CONDITIONS], flawed)
    analysis_files(root, grid, stats)
    h.write(
        root,
        "README.md",
        "# cxr-vlm-bench\n\nCode and derived results of the pilot; see manuscript/paper.md.\n",
    )
    h.write(root, "manuscript/paper.md", manuscript(facts))
    release(root, derived(root, grid, flawed))
    h.write(root, "provgraph.toml", contract(facts))
    if not flawed:
        return []
    q_node = h.focus("reported", "analysis/stats.json", "name=cochran_q", "cohort_rule=globally-complete")
    return [
        Planted(
            "pixel-monochrome-polarity",
            h.focus("rendering", "rendered", f"{dicom_id(POLARITY_CASE)}.png"),
            "MONOCHROME1 not inverted",
        ),
        Planted(
            "prompt-identical-across-conditions",
            h.focus("condition-pair", "gpt-findings", "gpt-impression"),
            "impression adapter sent the findings prompt",
        ),
        Planted(
            "output-ok-without-output",
            h.focus("record", "calls.jsonl", EMPTY_CALL, "1"),
            "empty response logged ok",
        ),
        Planted(
            "annotation-input-truncated",
            h.focus(
                "extraction", "labels/extractor_cache.jsonl", f"outputs/claude-findings--{LONG_CASE}.txt"
            ),
            "extractor cut a long report",
        ),
        Planted(
            "cohort-split-not-allowed", h.focus("cohort-entry", SPLIT_CASE), "a validate-split study included"
        ),
        Planted("analysis-reported-differs", q_node, "Q digits transposed"),
        Planted(
            "release-manifest-mismatch",
            h.focus("member", ARCHIVE, "figures/accuracy.svg"),
            "figure regenerated after SHA256SUMS",
        ),
    ]
