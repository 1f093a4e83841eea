"""A team's own text-only evaluation script with its own outputs (holdout shape).

Eight multiple-choice drug-interaction questions, two prompt conditions (``direct``,
``stepwise``) x three models (GPT-4o mini requested by its alias, Claude 3.5 Haiku and
Mistral Large pinned), three replicates at temperature 0.7. The script writes ``plan.csv``,
``calls.jsonl`` (canonical records written by hand as the README's "Prompt, model and output
identity" lists them: prompt, prompt_source, request_sha256, decoding, output file,
finish_reason, error), one output file per answered call under ``outputs/<model>/``; a
``dvc.lock`` builds the results table from the outputs folder and the figure from the table;
the README carries the results table.

Sound but unusual choices of the clean twin: one call timed out and was retried in the same
log (history: ``timeout`` then ``ok``); the score stage depends on the whole ``outputs/``
folder (a DVC ``.dir`` md5, without DVC's cache in the bundle); Mistral's versioned id
``mistral-large-2411`` is declared ``alias = false``; the sampling temperature is 0.7 with
replicates, declared in the plan.

Flawed twin: the Mistral adapter sent an older hard-coded stepwise prompt
(prompt-differs-from-declared); one re-run replicate went out at temperature 1.0 from a CLI
override (output-decoding-mismatch); the GPT alias moved to a newer snapshot for the last
replicate (model-several-snapshots); the scoring script was edited after ``dvc repro``
(release-stale-artifact).
"""

from __future__ import annotations

import datetime as dt
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _holdout_e2e as h

from provgraph.evidence.identity import canonical_json, prompt_sha256

NAME = "own-script-harness-csv"
SOURCE = (
    "README.md 'Prompt, model and output identity' (canonical calls.jsonl fields) and "
    "provgraph/importers/calls.py; plan.csv per provgraph/importers/plan.py; dvc.lock per "
    "https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#dvclock-file and "
    "iterative/dvc-data hashfile/tree.py (.dir md5); OpenAI chat completions "
    "(https://platform.openai.com/docs/api-reference/chat/create) and Anthropic Messages "
    "(https://docs.anthropic.com/en/api/messages) request bodies"
)

MODELS = {  # key: (provider style, requested, resolved)
    "gpt": ("openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    "claude": ("anthropic", "claude-3-5-haiku-20241022", "claude-3-5-haiku-20241022"),
    "mistral": ("openai", "mistral-large-2411", "mistral-large-2411"),
}
PROMPTS = {
    "direct": "You are a clinical pharmacist. Answer the multiple-choice question with the single "
    "letter of the best option on the first line, then one sentence of justification.",
    "stepwise": "You are a clinical pharmacist. Reason step by step about the mechanism of each "
    "drug pair, then give the letter of the best option on a final line 'Answer: X'.",
}
OLD_STEPWISE = "You are a pharmacist. Think step by step and answer with a letter."
QUESTIONS = [f"q{i:02d}" for i in range(1, 9)]
ANSWERS = dict(zip(QUESTIONS, "BDACABDC", strict=True))
SKILL = {"direct": 0.62, "stepwise": 0.8}  # chance of a correct answer, by prompt
MODEL_SKILL = {"gpt": 0.0, "claude": 0.08, "mistral": -0.06}
DECODING = {"temperature": 0.7, "max_tokens": 400}
REPLICATES = 3
RETRIED = "q05.stepwise-claude.r2"
HOT_CALL = "q03.direct-claude.r3"


def conditions() -> list[tuple[str, str, str]]:
    return [(f"{p}-{m}", p, m) for m in MODELS for p in PROMPTS]


def call_id(q: str, cond: str, rep: int) -> str:
    return f"{q}.{cond}.r{rep}"


def user_text(q: str) -> str:
    return f"Question {q}: which option names the most clinically important interaction? Options A-D."


def request_body(model: str, prompt: str, q: str, cid: str, flawed: bool) -> tuple[dict, dict]:
    """The request the script sends and the decoding it records."""
    style, requested, _ = MODELS[model]
    decoding = dict(DECODING)
    if flawed and cid == HOT_CALL:
        decoding["temperature"] = 1.0  # a re-run with --temperature 1.0 left on the command line
    if style == "anthropic":
        body = {"model": requested, "system": prompt, "messages": [{"role": "user", "content": user_text(q)}]}
    else:
        body = {
            "model": requested,
            "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": user_text(q)}],
        }
    body.update(decoding)
    return body, decoding


def answer(rng: random.Random, q: str, prompt: str, model: str) -> str:
    correct = rng.random() < SKILL[prompt] + MODEL_SKILL[model]
    letter = ANSWERS[q] if correct else rng.choice([c for c in "ABCD" if c != ANSWERS[q]])
    if prompt == "stepwise":
        return f"Step 1: consider each pair's mechanism.\nStep 2: weigh severity.\nAnswer: {letter}\n"
    return f"{letter}\nOption {letter} carries the greatest interaction risk.\n"


def run(root: Path, flawed: bool) -> dict[str, str]:
    """Write plan.csv, calls.jsonl and outputs/; returns call id -> answered letter."""
    rng = random.Random(20260302)
    plan_rows, records, letters = [], [], {}
    minute = 0
    for cond, prompt_key, model in conditions():
        for q in QUESTIONS:
            for rep in range(1, REPLICATES + 1):
                cid = call_id(q, cond, rep)
                plan_rows.append((cid, q, cond, rep))
                system = PROMPTS[prompt_key]
                if flawed and cond == "stepwise-mistral":
                    system = OLD_STEPWISE  # the adapter's own hard-coded copy of the prompt
                body, decoding = request_body(model, system, q, cid, flawed)
                text = answer(rng, q, prompt_key, model)
                base = {
                    "call_id": cid,
                    "requested_model": body["model"],
                    "prompt": {"system": system, "user": user_text(q)},
                    "prompt_sha256": prompt_sha256(system, user_text(q)),
                    "prompt_source": "request",
                    "request_sha256": h.sha256(canonical_json(body)),
                    "decoding": decoding,
                }
                if cid == RETRIED:
                    minute += 1
                    records.append(
                        base
                        | _times(minute, 60)
                        | {"status": "timeout", "error": "ReadTimeout: no response within 60 s"}
                    )
                minute += 1
                resolved = MODELS[model][2]
                if flawed and model == "gpt" and rep == REPLICATES:
                    resolved = "gpt-4o-mini-2025-01-31"  # the alias moved during the last replicate
                rel = f"outputs/{model}/{cid}.txt"
                data = h.write(root, rel, text).read_bytes()
                letters[cid] = text.rsplit("Answer: ", 1)[-1][0] if "Answer: " in text else text[0]
                records.append(
                    base
                    | _times(minute, 3)
                    | {
                        "status": "ok",
                        "resolved_model": resolved,
                        "request_id": f"req_{h.sha256(cid.encode())[:16]}",
                        "finish_reason": "end_turn" if MODELS[model][0] == "anthropic" else "stop",
                        "output": rel,
                        "output_sha256": h.sha256(data),
                        "output_bytes": len(data),
                    }
                )
    h.write_csv(root, "plan.csv", ["call_id", "case", "condition", "replicate"], plan_rows)
    h.write_jsonl(root, "calls.jsonl", records)
    return letters


def _times(minute: int, seconds: int) -> dict[str, str]:
    start = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC) + dt.timedelta(minutes=minute)
    end = start + dt.timedelta(seconds=seconds)
    return {
        "started_at": start.isoformat().replace("+00:00", "Z"),
        "ended_at": end.isoformat().replace("+00:00", "Z"),
    }


SCORE_PY = '''"""Score answers against the key: tables/results.csv (one row per condition)."""
import csv, pathlib, sys
key = dict(csv.reader(open("answers.csv")))
'''
PLOT_PY = '''"""Bar chart of accuracy per condition from tables/results.csv."""
import csv, sys
'''


def score(root: Path, letters: dict[str, str]) -> list[tuple[str, int, int]]:
    """tables/results.csv and figures/accuracy.svg; returns (condition, correct, calls)."""
    rows = []
    for cond, _, _ in conditions():
        ids = [call_id(q, cond, r) for q in QUESTIONS for r in range(1, REPLICATES + 1)]
        correct = sum(letters[i] == ANSWERS[i.split(".")[0]] for i in ids)
        rows.append((cond, correct, len(ids)))
    h.write_csv(
        root,
        "tables/results.csv",
        ["condition", "correct", "calls", "accuracy"],
        [(c, k, n, f"{k / n:.3f}") for c, k, n in rows],
    )
    h.write(
        root, "figures/accuracy.svg", h.svg_bars("Accuracy by condition", [(c, k / n) for c, k, n in rows])
    )
    return rows


def dvc(root: Path, flawed: bool) -> None:
    h.write(root, "scripts/score.py", SCORE_PY)
    h.write(root, "scripts/plot.py", PLOT_PY)
    stages = {
        "score": {
            "cmd": "python scripts/score.py outputs answers.csv tables/results.csv",
            "deps": [
                h.dvc_file(root, "answers.csv"),
                h.dvc_folder(root, "outputs"),
                h.dvc_file(root, "scripts/score.py"),
            ],
            "outs": [h.dvc_file(root, "tables/results.csv")],
        },
        "plot": {
            "cmd": "python scripts/plot.py tables/results.csv figures/accuracy.svg",
            "deps": [h.dvc_file(root, "scripts/plot.py"), h.dvc_file(root, "tables/results.csv")],
            "outs": [h.dvc_file(root, "figures/accuracy.svg")],
        },
    }
    h.write(root, "dvc.lock", h.dvc_lock(stages))
    if flawed:  # edited after `dvc repro`: the table was never rebuilt
        h.write(root, "scripts/score.py", SCORE_PY + "key = {k.strip(): v.strip() for k, v in key.items()}\n")


def readme(rows: list[tuple[str, int, int]]) -> str:
    lines = [
        "# Drug-interaction MCQ evaluation",
        "",
        "We compared 2 prompts across 3 models (GPT-4o mini, Claude 3.5 Haiku, Mistral Large) on 8",
        "questions, with 3 replicates per question at temperature 0.7 (max 400 tokens).",
        "",
        "| condition | correct | accuracy |",
        "|---|---|---|",
    ]
    for cond, k, n in rows:
        lines.append(f"| {cond} | {k}/{n} | {100 * k / n:.1f}% |")
    best = max(rows, key=lambda r: r[1] / r[2])
    lines += ["", f"The best condition was {best[0]} with {100 * best[1] / best[2]:.1f}% accuracy.", ""]
    return "\n".join(lines)


def contract(rows: list[tuple[str, int, int]]) -> str:
    best = max(rows, key=lambda r: r[1] / r[2])
    parts = [
        '[project]\nname = "ddi-mcq"\nbase_iri = "https://example.org/ddi-mcq/"\n',
        '[plan]\nfile = "plan.csv"\ndecoding = { temperature = 0.7, max_tokens = 400 }\n',
        '[models.gpt]\nrequested = "gpt-4o-mini"\nalias = true\nalias_ok = true\n',
        '[models.claude]\nrequested = "claude-3-5-haiku-20241022"\n',
        '[models.mistral]\nrequested = "mistral-large-2411"\nalias = false\n',
    ]
    for cond, prompt_key, model in conditions():
        other = "stepwise" if prompt_key == "direct" else "direct"
        parts.append(
            f'[conditions.{cond}]\nsystem_prompt = "prompts/{prompt_key}.txt"\nmodel = "{model}"\n'
            f'differs_from = ["{other}-{model}"]\n'
        )
    parts.append(
        '[release]\nname = "ddi-mcq"\nversion = "1.0.0"\n'
        'include = ["README.md", "tables/*", "figures/*"]\nderived = ["tables/*", "figures/*"]\n'
        'texts = ["README.md"]\n'
    )
    parts.append(f'[[release.values]]\nname = "best_accuracy"\nvalue = "{100 * best[1] / best[2]:.1f}%"\n')
    for key, canonical in (
        ("gpt", "GPT-4o mini"),
        ("claude", "Claude 3.5 Haiku"),
        ("mistral", "Mistral Large"),
    ):
        parts.append(f'[[release.entities]]\nkey = "{key}"\ncanonical = "{canonical}"\n')
    parts.append('[[release.entities]]\nkey = "models"\ncount = 3\nnouns = ["models"]\n')
    return "\n".join(parts)


def generate(root: Path, twin: str) -> list:
    from corpus import Planted

    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    for key, text in PROMPTS.items():
        h.write(root, f"prompts/{key}.txt", text + "\n")
    h.write_csv(root, "answers.csv", ["item", "answer"], sorted(ANSWERS.items()))
    letters = run(root, flawed)
    rows = score(root, letters)
    dvc(root, flawed)
    h.write(root, "README.md", readme(rows))
    h.write(root, "provgraph.toml", contract(rows))
    if not flawed:
        return []
    return [
        Planted(
            "prompt-differs-from-declared", h.focus("condition", "stepwise-mistral"), "old hard-coded prompt"
        ),
        Planted(
            "output-decoding-mismatch", h.focus("record", "calls.jsonl", HOT_CALL, "1"), "temperature 1.0"
        ),
        Planted("model-several-snapshots", h.focus("model-spec", "gpt"), "alias moved mid-run"),
        Planted(
            "release-stale-artifact", h.focus("file", "tables", "results.csv"), "script edited after build"
        ),
    ]
