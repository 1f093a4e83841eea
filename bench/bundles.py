"""Generated benchmark bundles, shared by every script in ``bench/`` (not part of the test run).

Each ``write_*`` function writes one kind of artifact, in the format the importer on main reads,
so a script composes the bundle it needs:

* :func:`write_plan_calls`: ``plan.csv``, ``calls.jsonl`` (optionally with the call identity a
  recorder writes: prompt, models, decoding, image) and the output files, with planted output
  defects (:func:`defect`);
* :func:`write_cohort_tables`: cohort manifest, MIMIC metadata and split tables;
* :func:`write_dicoms`: one pydicom-written DICOM per case, rendered by the real renderer
  (PNG + rendering record);
* :func:`write_labels`: CheXpert-labeller output (report text + 14 findings per call) and
  MIMIC-style reference labels (14 per case);
* :func:`write_openai_batch`: an OpenAI Batch input/output pair;
* :func:`write_texts`: Markdown texts full of numbers (claims).

:func:`scale_bundle` composes all of them into the proportional bundle of ``bench/scale.py``.
Everything is deterministic (seeded), streamed to disk (10^6 calls fit in a few hundred MB of
memory), and uses MIMIC-style case keys (study ids as digits).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FINDINGS = (
    "Atelectasis",
    "Cardiomegaly",
    "Consolidation",
    "Edema",
    "Enlarged Cardiomediastinum",
    "Fracture",
    "Lung Lesion",
    "Lung Opacity",
    "No Finding",
    "Pleural Effusion",
    "Pleural Other",
    "Pneumonia",
    "Pneumothorax",
    "Support Devices",
)
#: CheXpert coding of the states 0..3 the generator draws
CODES = ("0.0", "1.0", "-1.0", "")  # negative, positive, uncertain, not mentioned
SHARD = 1000  # files per folder


def study(i: int) -> str:
    """The case key of case ``i`` (a MIMIC-CXR study id as written)."""
    return str(50_000_000 + i)


def subject(i: int) -> str:
    """The raw patient identifier of case ``i`` (one study per patient)."""
    return str(10_000_000 + i)


def call_id(i: int, calls: int) -> str:
    return f"C{i:0{max(6, len(str(calls - 1)))}d}"


def defect(i: int) -> str | None:
    """The output defect planted on call ``i``: never run, output missing, or output empty."""
    if i % 1000 == 7:
        return "not-run"
    if i % 991 == 5:
        return "missing"
    if i % 997 == 3:
        return "empty"
    return None


def report_text(case: str, condition: str) -> str:
    return f"Study {case}, condition {condition}: frontal chest radiograph, findings as labelled."


def _open(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("w", encoding="utf-8", newline="")


# --- calls ------------------------------------------------------------------------------------


def write_plan_calls(
    root: Path,
    calls: int,
    conditions: Sequence[str],
    case_of: Callable[[int], str] = study,
    files: bool = True,
    identity: dict[str, str] | None = None,
    image_of: Callable[[str], str] | None = None,
    sharded: bool = False,
) -> None:
    """``plan.csv``, ``calls.jsonl`` and ``outputs/``: call ``i`` is case ``i // len(conditions)``
    in condition ``i % len(conditions)``; :func:`defect` decides which calls lack a record or an
    output. ``identity`` maps each condition to its system prompt: records then carry the
    prompt, models and decoding a recorder writes. ``image_of(case)`` names the image sent."""
    k = len(conditions)
    out = root / "outputs"
    out.mkdir(parents=True, exist_ok=True)
    with _open(root / "plan.csv") as plan, _open(root / "calls.jsonl") as log:
        plan.write("call_id,case,condition,replicate\n")
        made: Path | None = None
        for i in range(calls):
            cid, case, cond = call_id(i, calls), case_of(i // k), conditions[i % k]
            plan.write(f"{cid},{case},{cond},1\n")
            kind = defect(i)
            if kind == "not-run":
                continue
            rel = f"outputs/{i // SHARD:04d}/{cid}.txt" if sharded else f"outputs/{cid}.txt"
            record: dict[str, object] = {"call_id": cid, "status": "ok", "output": rel}
            if identity is not None:
                record |= {
                    "requested_model": "gpt-4o",
                    "resolved_model": "gpt-4o-2024-08-06",
                    "prompt": {"system": identity[cond], "user": f"Study {case}: frontal chest radiograph."},
                    "prompt_source": "request",
                    "decoding": {"temperature": 0, "max_tokens": 512},
                }
            if image_of is not None:
                record["image"] = image_of(case)
            log.write(json.dumps(record) + "\n")
            if not files or kind == "missing":
                continue
            path = root / rel
            if path.parent != made:  # the shard's first call may be one never run or missing
                path.parent.mkdir(parents=True, exist_ok=True)
                made = path.parent
            path.write_text("" if kind == "empty" else report_text(case, cond) + "\n")


# --- cohort and images ------------------------------------------------------------------------


def dicom_id(case: str) -> str:
    return f"{int(case):08x}-0000aaaa-1111bbbb-2222cccc-3333dddd"


def write_cohort_tables(
    root: Path, cases: Sequence[str], patient_of: dict[str, str], rows_per_case: int = 1
) -> None:
    """Cohort manifest (every case included, test split, PA) and the MIMIC metadata and split
    tables (``rows_per_case`` images per study)."""
    with _open(root / "cohort.csv") as fh:
        fh.write("case_key,patient_key,source,split,view,inclusion,reason\n")
        for s in cases:
            fh.write(f"{s},{patient_of[s]},mimic-cxr,test,PA,include,frontal\n")
    with (
        _open(root / "mimic-cxr-2.0.0-metadata.csv") as meta,
        _open(root / "mimic-cxr-2.0.0-split.csv") as split,
    ):
        meta.write("dicom_id,subject_id,study_id,ViewPosition,Rows,Columns\n")
        split.write("dicom_id,study_id,subject_id,split\n")
        for s in cases:
            for r in range(rows_per_case):
                d = dicom_id(s) if rows_per_case == 1 else f"{s}-{r}"
                meta.write(f"{d},{patient_of[s]},{s},PA,8,8\n")
                split.write(f"{d},{s},{patient_of[s]},test\n")


def image_path(case: str, index: int | None = None, sharded: bool = True) -> str:
    shard = f"{index // SHARD:04d}/" if sharded and index is not None else ""
    return f"png/{shard}{case}.png"


def write_dicoms(root: Path, cases: Sequence[str], patient_of: dict[str, str], sharded: bool = True) -> None:
    """One small DX DICOM per case (pydicom), rendered to PNG with its rendering record by the
    real renderer (``provgraph render``)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from fixtures.make_images import write_dicom

    from provgraph.capture.renderer import render_file

    for i, s in enumerate(cases):
        shard = f"{i // SHARD:04d}/" if sharded else ""
        source = root / "dicom" / f"{shard}{s}.dcm"
        write_dicom(source, patient=patient_of[s], view="PA", seed=i % 50)
        image = root / image_path(s, i, sharded)
        image.parent.mkdir(parents=True, exist_ok=True)
        render_file(source, image)


# --- labels -----------------------------------------------------------------------------------


def draw_states(calls: int, conditions: int, seed: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """Reference states (cases x 14: 0 negative, 1 positive, 3 not mentioned) and candidate
    states (calls x 14: 0-3) that agree with the reference about 80% of the time, a little
    better or worse by condition."""
    rng = np.random.default_rng(seed)
    cases = calls // conditions
    ref = rng.choice(np.array([0, 1, 3], dtype=np.int8), size=(cases, len(FINDINGS)), p=[0.6, 0.3, 0.1])
    ref_pos = np.repeat(ref == 1, conditions, axis=0)[:calls]
    skill = 0.7 + 0.02 * (np.arange(calls) % conditions)[:, None]
    agree = rng.random((calls, len(FINDINGS))) < skill
    pos = np.where(agree, ref_pos, ~ref_pos)
    noise = rng.random((calls, len(FINDINGS)))
    cand = np.where(pos, 1, np.where(noise < 0.1, 2, np.where(noise < 0.2, 3, 0))).astype(np.int8)
    return ref, cand


def write_labels(
    root: Path,
    calls: int,
    conditions: Sequence[str],
    ref: np.ndarray,
    cand: np.ndarray,
    report_of: Callable[[int], str] | None = None,
) -> None:
    """``labels/labeled_reports.csv`` (the CheXpert labeller's output: report text + 14
    findings, one row per labelled output file; with ``report_of``, a ``report`` column naming
    the output file of call ``i``, as a pipeline that records what it labelled writes it) and
    ``mimic-cxr-2.0.0-chexpert.csv`` (reference labels of every case)."""
    k = len(conditions)
    with _open(root / "labels" / "labeled_reports.csv") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["Reports", *(["report"] if report_of else []), *FINDINGS])
        for i in range(calls):
            if defect(i):
                continue
            path = [report_of(i)] if report_of else []
            w.writerow([report_text(study(i // k), conditions[i % k]), *path, *(CODES[s] for s in cand[i])])
    with _open(root / "mimic-cxr-2.0.0-chexpert.csv") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["subject_id", "study_id", *FINDINGS])
        for c in range(len(ref)):
            w.writerow([subject(c), study(c), *(CODES[s] for s in ref[c])])


def expected_q(calls: int, k: int, ref: np.ndarray, cand: np.ndarray) -> tuple[float, int]:
    """Cochran's Q and n of the globally complete blocks, as the contract below defines cells
    (candidate UNCERTAIN / NOT_MENTIONED negative, reference NOT_MENTIONED negative)."""
    from provgraph.stats.core.paired import cochran_q

    cases = calls // k
    usable = np.array([defect(i) is None for i in range(cases * k)]).reshape(cases, k)
    complete = usable.all(axis=1)
    ref_pos = ref[:cases] == 1
    cand_pos = (cand[: cases * k] == 1).reshape(cases, k, len(FINDINGS))
    agree = cand_pos == ref_pos[:, None, :]  # cases x k x findings
    y = agree[complete].transpose(0, 2, 1).reshape(-1, k).astype(np.int8)
    return float(cochran_q(y).q), len(y)


# --- other formats ----------------------------------------------------------------------------


def write_openai_batch(root: Path, cases: int, system: dict[str, str]) -> int:
    """``plan.csv``, ``batch_input.jsonl`` and ``batch_output.jsonl``: ``cases`` x the
    conditions of ``system`` calls, every request answered (see ``bench/identity.py``)."""
    plan, requests, results = ["call_id,case,condition\n"], [], []
    for i in range(cases):
        for condition in system:
            cid = f"{condition}-{i:06d}"
            plan.append(f"{cid},s{i:06d},{condition}\n")
            body = {
                "model": "gpt-4o",
                "messages": [
                    {"role": "system", "content": system[condition]},
                    {"role": "user", "content": f"Study s{i:06d}: frontal chest radiograph."},
                ],
                "temperature": 0,
                "max_tokens": 512,
            }
            requests.append(
                json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
            )
            choice = {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "No acute findings."},
            }
            response = {
                "status_code": 200,
                "request_id": f"req_{cid}",
                "body": {"model": "gpt-4o-2024-08-06", "choices": [choice]},
            }
            results.append(
                json.dumps({"id": f"batch_req_{cid}", "custom_id": cid, "response": response, "error": None})
            )
    (root / "plan.csv").write_text("".join(plan))
    (root / "batch_input.jsonl").write_text("\n".join(requests) + "\n")
    (root / "batch_output.jsonl").write_text("\n".join(results) + "\n")
    return len(requests)


def write_texts(folder: Path, n: int, lines: int) -> None:
    """``n`` Markdown texts of ``lines`` lines, each line with four numbers (claims)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = [
            f"Section {i}.{j}: Cochran Q = 182.29, p < 0.05 in 27/45 pairs (60.0%), kappa 0.{j:02d}."
            for j in range(lines)
        ]
        (folder / f"t{i:04d}.md").write_text("\n".join(body) + "\n")


# --- the proportional bundle of bench/scale.py --------------------------------------------------

CONDITIONS = tuple(f"c{j:02d}" for j in range(1, 11))


def scale_contract(q: str, n: int, pixel: bool) -> str:
    conditions = "".join(
        f'\n[conditions.{c}]\nsystem_prompt = "prompts/{c}.txt"\nmodel = "gpt"\n'
        + (f'differs_from = ["{CONDITIONS[j - 1]}"]\n' if j else "")
        for j, c in enumerate(CONDITIONS)
    )
    return (
        '[project]\nname = "scale-bench"\nbase_iri = "https://example.org/scale/"\n\n'
        '[plan]\nfile = "plan.csv"\ndecoding = { temperature = 0, max_tokens = 512 }\n'
        + conditions
        + '\n[models.gpt]\nrequested = "gpt-4o"\nalias_ok = true\n\n'
        '[cohort]\nmanifest = "cohort.csv"\nallowed_splits = ["test"]\nallowed_views = ["PA", "AP"]\n'
        + ("\n[pixel]\nsame_image_across_conditions = true\n" if pixel else "")
        + '\n[annotation]\ncandidate = { uncertain = "negative", not_mentioned = "negative" }\n'
        'reference = { uncertain = "exclude", not_mentioned = "negative" }\n\n'
        '[analysis]\nclusters = ["study"]\nbootstrap = { resamples = 1000, seed = 1 }\n\n'
        '[[analysis.family]]\nname = "mcnemar-all-pairs"\nsize = 45\nadjustments = ["holm"]\n\n'
        '[release]\nname = "scale-bench"\nversion = "1.0.0"\ninclude = ["manuscript.md"]\n'
        'texts = ["manuscript.md"]\n\n'
        f'[[release.values]]\nname = "cochran_q"\nvalue = "{q}"\naliases = ["Q"]\n'
        'statistic = "statistic/cochran_q/globally-complete"\n'
    )


def scale_bundle(root: Path, calls: int, pixel: bool = True, log: Callable[[str], None] = print) -> dict:
    """The proportional bundle: ``calls`` calls over 10 conditions (``calls // 10`` cases, one
    patient and one image each), call identity, cohort tables, DICOM + renderings (``pixel``),
    14 candidate labels per call and 14 reference labels per case, the reported Cochran's Q and
    a manuscript that quotes it. Returns a summary (counts, the quoted Q)."""
    import time

    k = len(CONDITIONS)
    calls -= calls % k
    cases = [study(c) for c in range(calls // k)]
    patient_of = {s: subject(c) for c, s in enumerate(cases)}
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    system = {c: f"You are radiologist {c}. Describe every finding of the image." for c in CONDITIONS}
    for c, text in system.items():
        (root / "prompts").mkdir(exist_ok=True)
        (root / "prompts" / f"{c}.txt").write_text(text + "\n")
    index = {s: c for c, s in enumerate(cases)}
    write_plan_calls(
        root,
        calls,
        CONDITIONS,
        identity=system,
        image_of=(lambda s: image_path(s, index[s])) if pixel else None,
        sharded=True,
    )
    log(f"  plan, calls, outputs: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    write_cohort_tables(root, cases, patient_of)
    ref, cand = draw_states(calls, k)
    write_labels(
        root,
        calls,
        CONDITIONS,
        ref,
        cand,
        report_of=lambda i: f"outputs/{i // SHARD:04d}/{call_id(i, calls)}.txt",
    )
    q, n = expected_q(calls, k, ref, cand)
    log(f"  cohort tables, labels: {time.perf_counter() - t0:.1f} s")
    if pixel:
        t0 = time.perf_counter()
        write_dicoms(root, cases, patient_of)
        log(f"  DICOM + renderings: {time.perf_counter() - t0:.1f} s")
    quoted = f"{q:.2f}"
    (root / "stats.json").write_text(
        json.dumps(
            {
                "statistics": [
                    {"name": "cochran_q", "value": quoted, "n": n, "cohort_rule": "globally-complete"}
                ]
            },
            indent=1,
        )
    )
    (root / "manuscript.md").write_text(
        f"# Scale benchmark\n\nAcross {n} complete case-finding blocks, Cochran Q = {quoted} "
        f"over {k} conditions.\n"
    )
    (root / "provgraph.toml").write_text(scale_contract(quoted, n, pixel))
    return {"calls": calls, "cases": len(cases), "q": quoted, "blocks": n}
