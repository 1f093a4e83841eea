"""Generated chest-radiograph reports labelled by an automated extractor, scored against the
MIMIC-CXR CheXpert reference labels.

Two prompt conditions of one VLM (``vlm-a``, ``vlm-b``) wrote a report per study
(``reports/<condition>/<study_id>.txt``); the harness logged each call in the canonical call log
``calls.jsonl`` (README "Prompt, model and output identity": the prompt as sent, requested and
resolved model, decoding, the report as output file with sha256 and size), which ties each
report to its case and condition. An LLM extractor labelled each report with the 14 CheXpert
observations into the canonical extractor cache (``labels/extractor_cache.jsonl``: report,
finding, state, extractor, max_input_chars, input_chars, raw_response or raw_response_sha256,
decoding, case, condition, replicate). As a ceiling baseline the radiologists' own reports
(``radiologist``) were labelled with the CheXpert labeler, whose ``labeled_reports.csv``
(``Reports`` + 14 findings coded 1.0 / 0.0 / -1.0 / blank, README of
stanfordmlgroup/chexpert-labeler) carries two added key columns ``case, condition``. The
reference is ``mimic-cxr-2.0.0-chexpert.csv`` (subject_id, study_id, 14 findings); the
analysis wrote its confusion cells to ``results/cells.csv`` (``reported-cells``).

Sound but unusual (clean): the harness writes no plan file (the call matrix is the contract's
``[plan] cases`` x ``[conditions]``, call ids ``<condition>--<study>--1``); the VLM is requested
by the mutable alias ``gpt-4o``, accepted because every call records its resolved snapshot (one
snapshot, though the run spans two days); the extractor's raw responses for ``vlm-b`` are kept
as files ``labels/raw/<sha256>.json`` and the cache records only their hash; one study has no
row in the MIMIC CheXpert table (it is not in every MIMIC release) and the analysis leaves it
out; the contract declares that UNCERTAIN counts as ``exclude`` on both sides.

Flawed (six defects of three clauses):

1. the extractor ran with ``max_input_chars = 4000``, cutting the one long report
   (``annotation-input-truncated``);
2. one extraction's raw response is neither kept nor hashed (``annotation-raw-response-missing``);
3. the study without a reference row entered the reported cells (scored as all-negative)
   (``annotation-reference-missing``);
4. the contract leaves the candidate UNCERTAIN mapping undeclared
   (``annotation-mapping-undeclared``);
5. on the second day the provider had moved the ``gpt-4o`` alias: the last four ``vlm-b`` calls
   resolved to ``gpt-4o-2024-11-20``, the others to ``gpt-4o-2024-08-06``
   (``model-several-snapshots``);
6. the ``vlm-b`` calls went through the harness's batch path, which logs the prompt from the
   config's default entry (``prompt_source: "config"``): the log records vlm-a's prompt for both
   conditions declared distinct (``prompt-recorded-identical``).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_analysis import focus, fresh, write, write_csv
from _cal_cross import clock, record, write_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import Planted

from provgraph.bundle.contract.sections.annotation import CHEXPERT_FINDINGS

NAME = "chexpert-extractor-annotation"
SOURCE = (
    "provgraph README 'What gets imported' (extractor-cache, chexpert-labels, mimic-reference, "
    "reported-cells) and 'Annotation and analysis: keyed recomputation'; "
    "https://github.com/stanfordmlgroup/chexpert-labeler (labeled_reports.csv: Reports + 14 "
    "observations, 1 / 0 / -1 / blank); MIMIC-CXR-JPG mimic-cxr-2.0.0-chexpert.csv "
    "(subject_id, study_id, 14 observations) https://physionet.org/content/mimic-cxr-jpg/2.0.0/; "
    "README 'Prompt, model and output identity' (calls.jsonl, [conditions], [models], matrix plan); "
    "OpenAI model aliases and snapshots https://platform.openai.com/docs/models"
)
BASE = "https://example.org/chexpert-extractor/"
CACHE = "labels/extractor_cache.jsonl"
EXTRACTOR = "gpt-4o-mini-2024-07-18"
CONDITIONS = ("vlm-a", "vlm-b")
STUDIES = [(str(10046166 + 7919 * i), str(50110000 + 3271 * i)) for i in range(12)]  # (subject, study)
UNREFERENCED = STUDIES[-1][1]  # no row in the MIMIC CheXpert table
LONG = ("vlm-b", STUDIES[3][1])  # the verbose report, over 4000 characters
NO_RAW = ("vlm-a", STUDIES[6][1])  # flawed: raw response dropped
SECOND_DAY = 8  # studies from this index on ran the next day
SNAPSHOTS = ("gpt-4o-2024-08-06", "gpt-4o-2024-11-20")  # flawed: the alias moved overnight
DECODING = {"temperature": 0, "max_tokens": 800}
USER = "Write the FINDINGS and IMPRESSION of the radiology report for this chest radiograph."
SYSTEM = {
    "vlm-a": "You are a radiologist. Write a concise report in plain language.",
    "vlm-b": "You are a thoracic radiologist. Mention every CheXpert observation you can assess, "
    "stating explicitly when it is absent or uncertain.",
}
CODE = {"POSITIVE": "1.0", "NEGATIVE": "0.0", "UNCERTAIN": "-1.0", "NOT_MENTIONED": ""}
PHRASE = {
    "POSITIVE": "{f} is present.",
    "NEGATIVE": "No {f}.",
    "UNCERTAIN": "Possible {f}, cannot be excluded.",
}


def truth(rng: random.Random) -> dict[str, str]:
    """Reference states of one study (No Finding follows the other observations)."""
    states = {}
    for f in CHEXPERT_FINDINGS[1:]:
        r = rng.random()
        states[f] = (
            "POSITIVE"
            if r < 0.18
            else "UNCERTAIN"
            if r < 0.26
            else "NEGATIVE"
            if r < 0.55
            else ("NOT_MENTIONED")
        )
    states["No Finding"] = "NOT_MENTIONED" if any(s == "POSITIVE" for s in states.values()) else "POSITIVE"
    return {f: states[f] for f in CHEXPERT_FINDINGS}


def candidate(ref: dict[str, str], rng: random.Random, noise: float) -> dict[str, str]:
    out = dict(ref)
    for f in CHEXPERT_FINDINGS[1:]:
        if rng.random() < noise:
            out[f] = rng.choice(["POSITIVE", "NEGATIVE", "UNCERTAIN", "NOT_MENTIONED"])
    return out


def report(states: dict[str, str], long: bool) -> str:
    said = [PHRASE[s].format(f=f.lower()) for f, s in states.items() if f != "No Finding" and s in PHRASE]
    body = "FINDINGS: Frontal and lateral views of the chest. " + " ".join(said[:-1])
    if long:  # a verbose report: comparison, technique, then the last finding after 4000 characters
        body += " " + " ".join(
            f"Comparison with the prior study {i}: the cardiomediastinal silhouette, hila and osseous "
            "structures are unchanged, lines and tubes are as before, no new focal abnormality."
            for i in range(1, 27)
        )
    return body + f" {said[-1] if said else ''}\nIMPRESSION: {' '.join(said[:2]) or 'No acute process.'}\n"


def cell(ref: str, cand: str) -> str | None:
    """The binary cell under the declared mapping (uncertain: exclude; not mentioned: negative)."""
    to = {"POSITIVE": True, "NEGATIVE": False, "NOT_MENTIONED": False, "UNCERTAIN": None}
    r, c = to[ref], to[cand]
    if r is None or c is None:
        return None
    return ("TP" if c else "FN") if r else ("FP" if c else "TN")


def extraction_lines(
    rel: str, key: tuple[str, str], states: dict, text: str, raw: str, flawed: bool
) -> list[dict]:
    """The cache lines of one report (per-report fields repeated on every line)."""
    common: dict = {
        "extractor": EXTRACTOR,
        "max_input_chars": 4000 if flawed else 16000,
        "input_chars": len(text),
    }
    if key[0] == "vlm-b":
        common["raw_response_sha256"] = hashlib.sha256(raw.encode("utf-8")).hexdigest()
    elif not (flawed and key == NO_RAW):
        common["raw_response"] = raw
    common["decoding"] = {"temperature": 0, "max_tokens": 400}
    keys = {"case": key[1], "condition": key[0], "replicate": 1}
    return [{"report": rel, "finding": f, "state": s, **common, **keys} for f, s in states.items()]


def call_log(root: Path, flawed: bool) -> None:
    """The prompt files and the harness's log of the report-writing calls (reports on disk)."""
    for cond, text in SYSTEM.items():
        write(root, f"prompts/{cond}_system.txt", text + "\n")
    write(root, "prompts/user.txt", USER + "\n")
    days = (clock("2026-02-10T16:00:00+00:00", 11), clock("2026-02-11T08:30:00+00:00", 11))
    lines = []
    for i, (_, study) in enumerate(STUDIES):
        for cond in CONDITIONS:
            moved = flawed and cond == "vlm-b" and i >= SECOND_DAY
            logged = "vlm-a" if flawed and cond == "vlm-b" else cond  # the config's default entry
            lines.append(
                record(
                    root,
                    f"{cond}--{study}--1",
                    days[i >= SECOND_DAY],
                    prompt={"system": SYSTEM[logged], "user": USER},
                    models=("gpt-4o", SNAPSHOTS[moved]),
                    decoding=DECODING,
                    output=f"reports/{cond}/{study}.txt",
                    capture="config" if flawed and cond == "vlm-b" else "request",
                )
            )
    write_jsonl(root, "calls.jsonl", lines)


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    fresh(root)
    rng = random.Random(1414)
    refs = {study: truth(rng) for _, study in STUDIES}
    cache: list[dict] = []
    labeler: list[list[object]] = []
    cells: list[list[object]] = []
    for _, study in STUDIES:
        for cond in (*CONDITIONS, "radiologist"):
            states = candidate(refs[study], rng, {"vlm-a": 0.25, "vlm-b": 0.15, "radiologist": 0.03}[cond])
            text = report(states, (cond, study) == LONG)
            rel = f"reports/{cond}/{study}.txt"
            write(root, rel, text)
            if cond == "radiologist":
                labeler.append([text, *(CODE[states[f]] for f in CHEXPERT_FINDINGS), study, cond])
            else:
                raw = json.dumps({f: s.lower() for f, s in states.items()}, sort_keys=True)
                if cond == "vlm-b":
                    write(root, f"labels/raw/{hashlib.sha256(raw.encode()).hexdigest()}.json", raw)
                cache += extraction_lines(rel, (cond, study), states, text, raw, flawed)
            for f in CHEXPERT_FINDINGS:
                ref = refs[study][f] if study != UNREFERENCED else ("NEGATIVE" if flawed else None)
                c = cell(ref, states[f]) if ref else None
                if c:
                    cells.append([study, f, cond, c])
    write(root, CACHE, "".join(json.dumps(line) + "\n" for line in cache))
    write_csv(
        root, "labels/labeled_reports.csv", ["Reports", *CHEXPERT_FINDINGS, "case", "condition"], labeler
    )
    mimic = [
        [s, st, *(CODE[refs[st][f]] for f in CHEXPERT_FINDINGS)] for s, st in STUDIES if st != UNREFERENCED
    ]
    write_csv(root, "mimic-cxr-2.0.0-chexpert.csv", ["subject_id", "study_id", *CHEXPERT_FINDINGS], mimic)
    write_csv(root, "results/cells.csv", ["case", "finding", "condition", "cell"], cells)
    call_log(root, flawed)
    write(root, "provgraph.toml", contract(flawed))
    if not flawed:
        return []
    long, no_raw = ("reports/{}/{}.txt".format(*k) for k in (LONG, NO_RAW))
    return [
        Planted("annotation-input-truncated", focus(BASE, "extraction", CACHE, long),
                "max_input_chars 4000 cut the long report"),
        Planted("annotation-raw-response-missing", focus(BASE, "extraction", CACHE, no_raw),
                "raw response neither kept nor hashed"),
        Planted("annotation-reference-missing", focus(BASE, "case", UNREFERENCED),
                "study without a MIMIC reference row scored in the reported cells"),
        Planted("annotation-mapping-undeclared", focus(BASE, "endpoint", "main"),
                "candidate UNCERTAIN mapping left undeclared"),
        Planted("model-several-snapshots", focus(BASE, "model-spec", "vlm"),
                "gpt-4o resolved to two snapshots across the run's two days"),
        Planted("prompt-recorded-identical", focus(BASE, "condition-pair", *CONDITIONS),
                "vlm-b's log records vlm-a's prompt (from the config)"),
    ]  # fmt: skip


def contract(flawed: bool) -> str:
    candidate_map = (
        '{ not_mentioned = "negative" }'
        if flawed
        else '{ uncertain = "exclude", not_mentioned = "negative" }'
    )
    return f"""# Generated reports labelled by an automated extractor (written from the README).
[project]
name = "chexpert-extractor"
base_iri = "{BASE}"

[plan]                         # no plan file: the harness runs this matrix
cases = {[study for _, study in STUDIES]}
replicates = 1
decoding = {{ temperature = 0, max_tokens = 800 }}

[conditions.vlm-a]
system_prompt = "prompts/vlm-a_system.txt"
user_prompt = "prompts/user.txt"
model = "vlm"
differs_from = ["vlm-b"]

[conditions.vlm-b]
system_prompt = "prompts/vlm-b_system.txt"
user_prompt = "prompts/user.txt"
model = "vlm"

[models.vlm]
requested = "gpt-4o"           # a mutable alias ...
alias_ok = true                # ... accepted: every call records its resolved snapshot

[annotation]
pool_no_finding = true
candidate = {candidate_map}
reference = {{ uncertain = "exclude", not_mentioned = "negative" }}
reference_files = ["mimic-cxr-2.0.0-chexpert.csv"]
"""
