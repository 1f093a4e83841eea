"""An LLM-reviewer benchmark in the Replication Trap harness's own output (seed 002;
jheuer/replication-trap run_evaluation.py): reviewers judge flawed and sound analysis scripts.

20 scripts (5 flaw categories x 2 flawed variants + 2 matched controls, ``script_01.py`` ..
``script_20.py`` in a shuffled order), ``audit_answer_key/answer_key.json``, and one results
file per condition as ``run_evaluation.py --runs 3`` writes it (``results/<result_key>_runs3
_reviews.json``: model, display_name, with_taxonomy, n_runs, timestamp, system_prompt once per
file, and per script the majority verdict, ``runs``, ``fail_votes``, ``agreement_rate``) for
Claude Sonnet 4.6, GPT-4o without and with the flaw taxonomy, and Gemini 2.5 Flash;
``models_used.json``; a README results table (majority-vote detection rate and FPR per
condition) whose every number the ``[release]`` registry names and ties to its statistic.

Sound but unusual (clean): the harness writes no plan file, so the contract states the call
matrix (scripts x result keys x 3 runs, call ids ``<key>--<script>--<run>``); every reviewer
ran three times; Gemini's first attempt died on 503s from the ninth script on and was re-run:
the attempt is kept as ``results/gemini_25_flash_runs3_reviews.attempt1.json`` and its FPR is
in the registry as superseded.

Flawed (four defects of three clauses):

1. GPT-4o + taxonomy's results file is empty (``output-empty-results``);
2. one Sonnet run failed (``_error``) and the harness kept its default PASS and counted it as a
   vote (``output-error-with-verdict``);
3. the README writes Gemini's FPR from the failed first attempt (``release-stale-value``);
4. ``models_used.json`` selects a Claude Opus 4.6 run that has no results file
   (``output-selected-run-without-results``).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_analysis import focus, fresh, write, write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import Planted

NAME = "llm-reviewer-harness"
SOURCE = (
    "jheuer/replication-trap run_evaluation.py (results/<key>_reviews.json, multi-run entries, "
    "_error defaults), models_used.json, generate_audit_scripts.py (answer key); provgraph README "
    "'LLM-reviewer benchmark', '[plan]' matrix form and '[release]' registry"
)
BASE = "https://example.org/reviewer-harness/"
RUNS = 3
CATEGORIES = ("Data leakage", "P-hacking", "Circular validation", "Survivorship bias", "Pseudoreplication")
SYSTEM = (
    "You are a scientific methods expert reviewing statistical analysis code for methodological soundness."
)
TAXONOMY = "\n\nThe following flaw categories may be present in some scripts:\n" + "\n".join(
    f"- {c}" for c in CATEGORIES
)


@dataclass(frozen=True)
class Reviewer:
    key: str  # results key, as run_evaluation.py builds it
    provider: str
    model: str
    display: str
    taxonomy: bool
    fpr: float  # chance a control is flagged, per run
    misses: float  # chance a flawed script passes, per run


REVIEWERS = (
    Reviewer("claude_sonnet_4_runs3", "sonnet", "claude-sonnet-4-6", "Claude Sonnet 4.6", False, 0.35, 0.02),
    Reviewer("gpt4o_runs3", "gpt4o", "gpt-4o-2024-11-20", "GPT-4o", False, 0.4, 0.05),
    Reviewer("gpt4o_with_taxonomy_runs3", "gpt4o", "gpt-4o-2024-11-20", "GPT-4o + taxonomy", True, 0.2, 0.05),
    Reviewer(
        "gemini_25_flash_runs3", "gemini", "gemini/gemini-2.5-flash", "Gemini 2.5 Flash", False, 0.45, 0.1
    ),
)
EMPTY = "gpt4o_with_taxonomy_runs3"  # flawed: its results file is empty
ERRORED = ("claude_sonnet_4_runs3", 2)  # flawed: this run of one flawed script failed
RERUN = "gemini_25_flash_runs3"  # its first attempt failed and was re-run
UNRUN = {
    "provider": "opus",
    "model_id": "claude-opus-4-6",
    "display_name": "Claude Opus 4.6",
    "with_taxonomy": False,
    "n_runs": RUNS,
}


def scripts() -> list[tuple[str, str, bool]]:
    """(file name, category, flawed), shuffled as the generator does."""
    specs = [(c, flawed, v) for c in CATEGORIES for flawed in (True, False) for v in range(2)]
    random.Random(7).shuffle(specs)
    return [(f"script_{i:02d}.py", c, flawed) for i, (c, flawed, _) in enumerate(specs, start=1)]


def script_code(name: str, category: str, flawed: bool) -> str:
    step = "fit on the full data before the split" if flawed else "fit on the training fold only"
    return (
        f'"""{category}: {"variant" if flawed else "control"} ({name})."""\n'
        "import numpy as np\nfrom scipy import stats\n\nnp.random.seed(42)\n"
        f"x = np.random.normal(size={60 + len(name) * 3})\n# {step}\n"
        'print(f"p = {stats.ttest_1samp(x, 0).pvalue:.3f}")\n'
    )


def one_run(r: Reviewer, name: str, flawed: bool, run: int, rng: random.Random) -> dict:
    fail = rng.random() >= r.misses if flawed else rng.random() < r.fpr
    verdict = "FAIL" if fail else "PASS"
    flaw = "a preprocessing step sees the test data" if fail else None
    confidence = "HIGH" if fail == flawed else "MEDIUM"
    raw = json.dumps({"verdict": verdict, "flaw_identified": flaw, "confidence": confidence}, indent=2)
    return {
        "script": name,
        "verdict": verdict,
        "flaw_identified": flaw,
        "confidence": confidence,
        "raw_response": raw,
        "latency_ms": 2100 + 53 * run + len(name),
        "usage": {"input_tokens": 690, "output_tokens": 48 if fail else 31},
    }


def failed_run(name: str, message: str, kind: str = "_error") -> dict:
    """What review_script() returns after three failed attempts: a default PASS beside the error."""
    return {"script": name, "verdict": "PASS", "flaw_identified": None, "confidence": "LOW", kind: message}


def entry(name: str, runs: list[dict]) -> dict:
    """The multi-run entry run_model() writes (votes counted on the verdicts as written)."""
    fails = sum(1 for x in runs if x["verdict"] == "FAIL")
    majority = "FAIL" if fails > RUNS / 2 else "PASS"
    rep = next((x for x in runs if x["verdict"] == majority), runs[0])
    return {
        "script": name,
        "verdict": majority,
        "flaw_identified": rep["flaw_identified"],
        "confidence": rep["confidence"],
        "raw_response": rep.get("raw_response"),
        "latency_ms": rep.get("latency_ms"),
        "usage": rep.get("usage"),
        "runs": runs,
        "agreement_rate": round(max(fails, RUNS - fails) / RUNS, 3),
        "fail_votes": fails,
        "n_runs": RUNS,
    }


def payload(r: Reviewer, entries: list[dict], stamp: str) -> dict:
    return {
        "model": r.model,
        "display_name": r.display,
        "with_taxonomy": r.taxonomy,
        "n_runs": RUNS,
        "timestamp": stamp,
        "system_prompt": SYSTEM + (TAXONOMY if r.taxonomy else ""),
        "reviews": entries,
    }


def rates(entries: list[dict], key: dict[str, bool]) -> tuple[str, str]:
    """Majority-vote detection rate and FPR as the README writes them (whole percentages)."""
    flawed = [e for e in entries if key[e["script"]]]
    sound = [e for e in entries if not key[e["script"]]]
    dr = sum(e["verdict"] == "FAIL" for e in flawed) / len(flawed)
    fpr = sum(e["verdict"] == "FAIL" for e in sound) / len(sound)
    return f"{100 * dr:.0f}%", f"{100 * fpr:.0f}%"


def statistic_ref(key: str, metric: str) -> str:
    return focus(BASE, "statistic", f"name={metric}", f"condition={key}", "variant=majority-vote")


def reviews(root: Path, flawed: bool, listing: list[tuple[str, str, bool]]) -> dict[str, tuple[str, str]]:
    """Write every results file; the README's (detection rate, FPR) per results key, and the
    first attempt's FPR of the re-run reviewer under ``RERUN``."""
    key = {n: f for n, _, f in listing}
    shown: dict[str, tuple[str, str]] = {}
    for index, r in enumerate(REVIEWERS):
        rng = random.Random(f"{r.key}-2026")
        entries = []
        for name, _, is_flawed in listing:
            runs = [one_run(r, name, is_flawed, run, rng) for run in range(1, RUNS + 1)]
            if flawed and r.key == ERRORED[0] and name == next(n for n, _, f in listing if f):
                runs[ERRORED[1] - 1] = failed_run(name, "litellm.ServiceUnavailableError: 503 overloaded")
            entries.append(entry(name, runs))
        stamp = f"2026-04-{6 + index:02d}T09:{10 + index:02d}:00+00:00"
        rel = f"results/{r.key}_reviews.json"
        if flawed and r.key == EMPTY:
            write(root, rel, "")  # the disk filled while the harness wrote it
        else:
            write_json(root, rel, payload(r, entries, stamp))
        shown[r.key] = rates(entries, key)
        if r.key == RERUN:
            attempt = [
                e
                if i < 8
                else entry(e["script"], [failed_run(e["script"], "503 Service Unavailable")] * RUNS)
                for i, e in enumerate(entries)
            ]
            write_json(
                root,
                f"results/{r.key}_reviews.attempt1.json",
                payload(r, attempt, "2026-04-05T22:41:00+00:00"),
            )
            shown["attempt1"] = rates(attempt, key)
    return shown


def registry(shown: dict[str, tuple[str, str]]) -> str:
    out = ""
    for r in REVIEWERS:
        for metric, text in zip(("detection_rate", "false_positive_rate"), shown[r.key], strict=True):
            out += (
                f'[[release.values]]\nname = "{metric} ({r.display})"\nvalue = "{text}"\n'
                f'aliases = ["{r.display}"]\nstatistic = "{statistic_ref(r.key, metric)}"\n\n'
            )
    display = next(r.display for r in REVIEWERS if r.key == RERUN)
    return out + (
        f'[[release.values]]\nname = "false_positive_rate ({display})"\nvalue = "{shown["attempt1"][1]}"\n'
        f'aliases = ["{display}"]\nstatus = "superseded"\n\n'
    )


def readme(shown: dict[str, tuple[str, str]], flawed: bool) -> tuple[str, int]:
    """The README, and the line of the re-run reviewer's row."""
    head = (
        "# Replication Trap, three-run replication\n\n20 scripts (5 flaw categories, 2 flawed variants, 2\n"
        "controls each), every reviewer run 3 times; verdicts are the per-script majority.\n\n"
        "| Reviewer | Detection rate | FPR |\n|---|---|---|\n"
    )
    rows, line = [], 0
    for r in REVIEWERS:
        dr, fpr = shown[r.key]
        if r.key == RERUN:
            line = head.count("\n") + len(rows) + 1
            fpr = shown["attempt1"][1] if flawed else fpr
        rows.append(f"| {r.display} | {dr} | {fpr} |")
    tail = (
        "\n\nGemini 2.5 Flash's first attempt failed (503 from the ninth script on) and was re-run; the\n"
        "attempt is kept in results/ and not scored.\n"
    )
    return head + "\n".join(rows) + tail, line


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    fresh(root)
    listing = scripts()
    for name, category, is_flawed in listing:
        write(root, f"audit_scripts/{name}", script_code(name, category, is_flawed))
    write_json(
        root,
        "audit_answer_key/answer_key.json",
        {
            n: {"is_flawed": f, "category": c, "description": f"{c} {'flaw' if f else 'control'}"}
            for n, c, f in listing
        },
    )
    shown = reviews(root, flawed, listing)
    assert shown["attempt1"][1] not in {v for r in REVIEWERS for v in shown[r.key]}, shown
    models = [
        {
            "provider": r.provider,
            "model_id": r.model,
            "display_name": r.display,
            "with_taxonomy": r.taxonomy,
            "n_runs": RUNS,
        }
        for r in REVIEWERS
    ]
    if flawed:
        models.append(UNRUN)
    write_json(
        root,
        "models_used.json",
        {"selected_at": "2026-04-05T08:00:00+00:00", "self_review_included": False, "models": models},
    )
    text, line = readme(shown, flawed)
    write(root, "README.md", text)
    write(root, "provgraph.toml", contract(listing, shown))
    if not flawed:
        return []
    first_flawed = next(n for n, _, f in listing if f).removesuffix(".py")
    stale = shown["attempt1"][1]
    return [
        Planted(
            "output-empty-results", focus(BASE, "review-run", EMPTY), "empty results file of a selected run"
        ),
        Planted(
            "output-error-with-verdict",
            focus(BASE, "review", ERRORED[0], first_flawed, str(ERRORED[1])),
            "failed call kept its default PASS and was counted as a vote",
        ),
        Planted(
            "release-stale-value",
            focus(BASE, "claim", "README.md", str(line), stale, "1"),
            "README FPR from the failed first attempt",
        ),
        Planted(
            "output-selected-run-without-results",
            focus(BASE, "model-selection", UNRUN["model_id"], "plain", str(RUNS)),
            "selected Opus run without a results file",
        ),
    ]


def contract(listing: list[tuple[str, str, bool]], shown: dict[str, tuple[str, str]]) -> str:
    cases = [n.removesuffix(".py") for n, _, _ in listing]
    return f"""# The reviewer harness writes no plan file: the call matrix is stated here (README [plan]).
[project]
name = "reviewer-harness"
base_iri = "{BASE}"

[plan]
cases = {json.dumps(cases)}
conditions = {json.dumps([r.key for r in REVIEWERS])}
replicates = {RUNS}

[analysis]
bootstrap = {{ resamples = 200, seed = 7 }}

[release]
name = "replication-trap-3runs"
version = "1.0.0"
include = ["README.md", "results/*", "audit_scripts/*", "audit_answer_key/*", "models_used.json"]
texts = ["README.md"]

{registry(shown)}"""
