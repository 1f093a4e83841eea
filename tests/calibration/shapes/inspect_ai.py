"""Two prompt variants of a multiple-choice task run with Inspect AI (``inspect eval``), as its
own logs: one ``.eval`` zip (``header.json``, ``samples/<id>_epoch_<n>.json``, ``summaries.json``,
``reductions.json``, ``_journal/start.json``) and one ``.json`` EvalLog. Each header, sample,
output and score is written in the shape of the real log ``tests/log/test_eval_log`` /
``tests/analysis/test_logs_choices/mmlu-summary-choices.eval`` of UKGovernmentBEIS/inspect_ai
(vendored in ``tests/fixtures/inspect_ai/``) and of ``src/inspect_ai/log/_log.py``.

``mcq_plain`` and ``mcq_cot`` ask 6 questions, 2 epochs each, of ``openai/gpt-4o`` (which the
provider resolves to ``gpt-4o-2024-08-06``) at temperature 0; scorer ``choice`` (C/I), metrics
accuracy and stderr over the samples' epoch means.

Sound but unusual (clean): one sample failed once on a rate limit and Inspect retried it
(``error_retries``); the contract names no plan file, the plan is the logs' own (selected sample
ids x epochs).

Flawed (six defects):

1. the chain-of-thought template was never applied: ``mcq_cot`` sent ``mcq_plain``'s prompts
   (``prompt-identical-across-conditions``);
2. ``mcq_plain`` reports an accuracy that is not its samples' mean (``analysis-reported-differs``);
3. sample 5, epoch 2 of ``mcq_plain`` is missing from the log (``output-planned-without-terminal``);
4. the ``mcq_cot`` log records no resolved model (``model-alias-unresolved``);
5. ``mcq_cot``'s log holds sample 3, epoch 1 twice (``output-duplicate-terminal``);
6. ``mcq_cot`` sample 2, epoch 2 failed and its score was kept (``output-error-with-verdict``).
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_analysis import focus, fresh, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import Planted

NAME = "inspect-ai-task-variants"
SOURCE = (
    "UKGovernmentBEIS/inspect_ai src/inspect_ai/log/_log.py (EvalLog, EvalSpec, EvalSample, "
    "EvalResults), log/_recorders/eval.py (the .eval zip layout), model/_model_output.py, "
    "scorer/_metric.py; its real logs tests/analysis/test_logs_choices/mmlu-summary-choices.eval"
)
BASE = "https://example.org/inspect-variants/"
MODEL, SNAPSHOT = "openai/gpt-4o", "gpt-4o-2024-08-06"
EPOCHS = 2
QUESTIONS = [
    ("Which gas makes up most of Earth's atmosphere?", ["Oxygen", "Nitrogen", "Argon", "CO2"], "B"),
    ("What is 7 x 8?", ["54", "56", "58", "64"], "B"),
    ("Which planet is largest?", ["Mars", "Venus", "Jupiter", "Earth"], "C"),
    ("H2O is the formula of?", ["Water", "Salt", "Ozone", "Peroxide"], "A"),
    ("Who wrote 'Hamlet'?", ["Marlowe", "Jonson", "Webster", "Shakespeare"], "D"),
    ("What is the boiling point of water at sea level in C?", ["90", "100", "110", "120"], "B"),
]
#: the letter answered per (sample, epoch); some wrong on purpose
ANSWERS = {"mcq_plain": "BBCADB" + "BACADB", "mcq_cot": "BBCADB" + "BBCDDB"}
TEMPLATES = {
    "mcq_plain": "Answer the following multiple choice question. The entire content of your response "
    "should be of the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of "
    "A,B,C,D.\n\n{q}\n\n{c}",
    "mcq_cot": "Answer the following multiple choice question. Think step by step before answering; "
    "the last line of your response should be of the following format: 'ANSWER: $LETTER' (without "
    "quotes) where LETTER is one of A,B,C,D.\n\n{q}\n\n{c}",
}


def _sample(task: str, sid: int, epoch: int, flawed: bool) -> dict[str, Any]:
    question, choices, target = QUESTIONS[sid - 1]
    letters = "ABCD"
    shown = "\n".join(f"{letters[i]}) {c}" for i, c in enumerate(choices))
    template = TEMPLATES["mcq_plain" if flawed and task == "mcq_cot" else task]
    answer = ANSWERS[task][(epoch - 1) * 6 + sid - 1]
    completion = f"ANSWER: {answer}"
    resolved = None if flawed and task == "mcq_cot" else SNAPSHOT
    message = {"id": f"m{sid}{epoch}", "content": completion, "source": "generate", "role": "assistant"}
    if resolved:
        message["model"] = resolved
    output = {
        "model": resolved or MODEL.split("/")[1],
        "choices": [{"message": message, "stop_reason": "stop"}],
        "completion": completion,
        "usage": {"input_tokens": 150 + sid, "output_tokens": 3, "total_tokens": 153 + sid},
        "time": 0.8,
    }
    if not resolved:
        output.pop("model")
    sample: dict[str, Any] = {
        "id": sid,
        "epoch": epoch,
        "input": question,
        "choices": choices,
        "target": target,
        "messages": [
            {
                "id": f"u{sid}{epoch}",
                "content": template.format(q=question, c=shown),
                "source": "input",
                "role": "user",
            },
            message,
        ],
        "output": output,
        "scores": {
            "choice": {"value": "C" if answer == target else "I", "answer": answer, "explanation": completion}
        },
        "metadata": {},
        "store": {},
        "events": [],
        "model_usage": {MODEL: output["usage"]},
        "total_time": 1.1,
        "uuid": f"{task}-{sid}-{epoch}",
        "error_retries": [],
        "attachments": {},
    }
    if task == "mcq_plain" and sid == 4 and epoch == 1:  # retried once after a rate limit (sound)
        sample["error_retries"] = [{"message": "RateLimitError: 429", "traceback": "", "traceback_ansi": ""}]
    if flawed and task == "mcq_cot" and sid == 2 and epoch == 2:
        sample["error"] = {
            "message": "APIConnectionError: Connection error.",
            "traceback": "",
            "traceback_ansi": "",
        }
    return sample


def _header(task: str, samples: list[dict[str, Any]], flawed: bool) -> dict[str, Any]:
    by_id: dict[int, list[float]] = {}
    for s in samples:  # as Inspect computed it: every scored sample, failed or not
        by_id.setdefault(s["id"], []).append(1.0 if s["scores"]["choice"]["value"] == "C" else 0.0)
    means = [sum(v) / len(v) for v in by_id.values()]
    accuracy = sum(means) / len(means)
    mean = accuracy
    var = sum((m - mean) ** 2 for m in means) / (len(means) - 1)
    stderr = (var**0.5) / len(means) ** 0.5
    if flawed and task == "mcq_plain":
        accuracy = 0.75  # not its samples' mean (0.9167)
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": f"{task}EvalId0000000000",
            "run_id": "RunId00000000000000000",
            "created": "2026-03-02T10:00:00+00:00",
            "task": task,
            "task_id": f"{task}TaskId",
            "task_version": 1,
            "task_args": {},
            "dataset": {
                "name": "mcq6",
                "location": "mcq6.jsonl",
                "samples": 6,
                "sample_ids": [1, 2, 3, 4, 5, 6],
                "shuffled": False,
            },
            "model": MODEL,
            "model_generate_config": {},
            "model_args": {},
            "config": {
                "epochs": EPOCHS,
                "epochs_reducer": ["mean"],
                "fail_on_error": False,
                "log_samples": True,
            },
            "revision": {
                "type": "git",
                "origin": "https://github.com/example/mcq-evals.git",
                "commit": "1a2b3c4d",
            },
            "packages": {"inspect_ai": "0.3.154"},
            "scorers": [
                {
                    "name": "choice",
                    "options": {},
                    "metrics": [
                        {"name": "inspect_ai/accuracy", "options": {}},
                        {"name": "inspect_ai/stderr", "options": {}},
                    ],
                    "metadata": {},
                }
            ],
        },
        "plan": {
            "name": "plan",
            "steps": [{"solver": "multiple_choice", "params": {"cot": task == "mcq_cot"}}],
            "config": {"temperature": 0.0},
        },
        "results": {
            "total_samples": len(samples),
            "completed_samples": len(samples),
            "scores": [
                {
                    "name": "choice",
                    "scorer": "choice",
                    "scored_samples": len(by_id),
                    "unscored_samples": 0,
                    "params": {},
                    "metrics": {
                        "accuracy": {"name": "accuracy", "value": accuracy, "params": {}},
                        "stderr": {"name": "stderr", "value": stderr, "params": {}},
                    },
                }
            ],
        },
        "stats": {"started_at": "2026-03-02T10:00:00+00:00", "completed_at": "2026-03-02T10:02:00+00:00"},
    }


def _samples(task: str, flawed: bool) -> list[dict[str, Any]]:
    out = [_sample(task, sid, e, flawed) for e in range(1, EPOCHS + 1) for sid in range(1, 7)]
    if flawed and task == "mcq_plain":
        out = [s for s in out if (s["id"], s["epoch"]) != (5, 2)]
    if flawed and task == "mcq_cot":
        out.append(dict(_sample(task, 3, 1, flawed), uuid="mcq_cot-3-1-again"))
    return out


def generate(root: Path, twin: str) -> list[Planted]:
    fresh(root)
    flawed = twin == "flawed"
    plain, cot = _samples("mcq_plain", flawed), _samples("mcq_cot", flawed)
    logs = root / "logs"
    logs.mkdir()
    header = _header("mcq_plain", plain, flawed)
    with zipfile.ZipFile(
        logs / "2026-03-02T10-00-00+00-00_mcq-plain_abc.eval", "w", zipfile.ZIP_DEFLATED
    ) as zf:
        start = {k: header[k] for k in ("version", "eval", "plan")}
        zf.writestr("_journal/start.json", json.dumps(start))
        for s in plain:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        summaries = [{k: s[k] for k in ("id", "epoch", "input", "target", "scores")} for s in plain]
        zf.writestr("summaries.json", json.dumps(summaries))
        zf.writestr("reductions.json", json.dumps([{"scorer": "choice", "samples": []}]))
        zf.writestr("header.json", json.dumps(header))
    log = dict(_header("mcq_cot", cot, flawed), samples=cot)
    write(root, "logs/2026-03-02T10-05-00+00-00_mcq-cot_def.json", json.dumps(log, indent=2))
    write(
        root,
        "provgraph.toml",
        f'[project]\nname = "inspect-variants"\nbase_iri = "{BASE}"\n\n'
        "[plan]\ndecoding = { temperature = 0 }\n\n"
        '[conditions."mcq_plain.gpt-4o"]\nmodel = "gpt4o"\ndiffers_from = ["mcq_cot.gpt-4o"]\n\n'
        '[conditions."mcq_cot.gpt-4o"]\nmodel = "gpt4o"\n\n'
        f'[models.gpt4o]\nrequested = "{MODEL}"\nalias_ok = true\n\n[analysis]\n',
    )
    if not flawed:
        return []
    return [
        Planted(
            "prompt-identical-across-conditions",
            focus(BASE, "condition-pair", "mcq_cot.gpt-4o", "mcq_plain.gpt-4o"),
            "cot template never applied",
        ),
        Planted(
            "analysis-reported-differs",
            focus(BASE, "reported", "inspect", "mcq_plainEvalId0000000000", "choice", "accuracy"),
            "accuracy not the samples' mean",
        ),
        Planted(
            "output-planned-without-terminal",
            focus(BASE, "call", "mcq_plain.gpt-4o--5--2"),
            "sample missing from the log",
        ),
        Planted("model-alias-unresolved", focus(BASE, "model-spec", "gpt4o"), "no resolved model recorded"),
        Planted(
            "output-duplicate-terminal", focus(BASE, "call", "mcq_cot.gpt-4o--3--1"), "sample id logged twice"
        ),
        Planted(
            "output-error-with-verdict",
            focus(BASE, "record", "inspect", "mcq_cotEvalId0000000000", "mcq_cot-2-2"),
            "failed sample scored",
        ),
    ]
