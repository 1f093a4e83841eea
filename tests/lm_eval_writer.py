"""Writes lm-evaluation-harness v0.4 output folders in the harness's own shapes, for tests,
rule fixtures, the calibration shape and the benchmark.

Where each field comes from (EleutherAI/lm-evaluation-harness at 4e7e0d47f):

- folder ``<output_path>/<model_name_sanitized>/`` and the names ``results_<date_id>.json``,
  ``samples_<task>_<date_id>.jsonl`` (``date_id = datetime.now().isoformat().replace(":", "-")``):
  ``lm_eval/loggers/evaluation_tracker.py`` (``save_results_aggregated``, ``save_results_samples``);
  ``model_name_sanitized``: ``lm_eval/utils.py`` ``sanitize_model_name``;
- results keys ``results`` (``"metric,filter"`` and ``"metric_stderr,filter"``, ``alias``),
  ``group_subtasks``, ``configs``, ``versions``, ``n-shot``, ``higher_is_better``,
  ``n-samples`` ``{original, effective}``: ``lm_eval/evaluator_utils.py`` ``_to_eval_results``
  and ``lm_eval/result_schema.py`` (``name``, ``alias``, ``sample_len`` per task);
  ``config`` (``model``, ``model_args``, batch and seed
  settings, ``limit``): ``lm_eval/evaluator.py`` ``simple_evaluate``; ``model_num_parameters``,
  ``model_dtype``, ``model_revision``, ``model_sha``: ``lm_eval/models/huggingface.py``
  ``get_model_info``; ``git_hash``, ``date``, ``task_hashes`` (SHA-256 of the concatenated
  doc/prompt/target hashes of a task's samples), ``model_source``, ``model_name``,
  ``model_name_sanitized``, ``system_instruction``, ``chat_template``, times:
  ``evaluation_tracker.py`` and ``GeneralConfigTracker``;
- sample lines ``doc_id``, ``doc``, ``target`` (str), ``arguments`` (``gen_args_<i>`` ->
  ``arg_<j>``), ``resps`` and ``filtered_resps`` (nested lists of strings, ``sanitize_list``),
  ``filter``, ``metrics`` (names) with each metric's value, ``doc_hash`` (SHA-256 of the doc
  as indented JSON), ``prompt_hash`` (of the first request's context), ``target_hash``:
  ``lm_eval/evaluator.py`` (the ``example`` dict) and ``save_results_samples``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

DATE = "2026-11-20T14-03-11.512340"
SHA = "50f5173d932e8e61f858120bcb800b97af589f46"
GIT = "4e7e0d47f"


def h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Task:
    """One task of a run: its documents' prompts, answers and per-document correctness."""

    name: str
    kind: str  # multiple_choice | generate_until
    docs: int
    template: str = "Question: {q}\nAnswer:"
    filters: tuple[str, ...] = ("none",)
    drop: set[int] = field(default_factory=set)  # documents whose sample line is missing
    duplicate: set[int] = field(default_factory=set)  # documents logged twice
    empty_correct: set[int] = field(default_factory=set)  # empty response scored correct
    reported_shift: float = 0.0  # added to the reported mean (a transcription error)


def correct(task: Task, doc: int) -> bool:
    return (doc * 7 + len(task.name)) % 3 != 0


def _doc(doc: int) -> dict:
    return {
        "id": f"Mercury_{7000 + doc}",
        "question": f"Which property of mineral {doc} can be observed?",
        "choices": {"text": ["luster", "mass", "age", "origin"], "label": ["A", "B", "C", "D"]},
        "answerKey": "A",
        "answer": f"The answer is {doc % 10}. #### {doc % 10}",
    }


def sample_lines(task: Task) -> list[dict]:
    out = []
    for doc in range(task.docs):
        if doc in task.drop:
            continue
        d = _doc(doc)
        context = task.template.format(q=d["question"])
        for filt in task.filters:
            ok = correct(task, doc)
            if task.kind == "multiple_choice":
                lls = [(-1.5 if (i == 0) == ok else -2.5) - i * 0.1 for i in range(4)]
                args = {
                    f"gen_args_{i}": {"arg_0": context, "arg_1": f" {c}"}
                    for i, c in enumerate(d["choices"]["text"])
                }
                resps = [[[str(ll), "False"]] for ll in lls]
                filtered = [[str(ll), "False"] for ll in lls]
                target = "0"
                scores = {"acc": 1.0 if ok else 0.0, "acc_norm": 1.0 if ok else 0.0}
            else:
                answer = str(doc % 10) if ok else str(doc % 10 + 1)
                if doc in task.empty_correct:
                    answer = ""
                args = {
                    "gen_args_0": {
                        "arg_0": context,
                        "arg_1": {"until": ["Question:"], "do_sample": False, "temperature": 0.0},
                    }
                }
                resps = [[f"The answer is {answer}." if answer else ""]]
                filtered = [answer]
                target = d["answer"]
                scores = {"exact_match": 1.0 if (ok or doc in task.empty_correct) else 0.0}
            line = {
                "doc_id": doc,
                "doc": d,
                "target": target,
                "arguments": args,
                "resps": resps,
                "filtered_resps": filtered,
                "filter": filt,
                "metrics": list(scores),
                "doc_hash": h(json.dumps(d, indent=2, ensure_ascii=False)),
                "prompt_hash": h(context),
                "target_hash": h(target),
                **scores,
            }
            out.append(line)
            if doc in task.duplicate:
                out.append(dict(line))
    return out


def _config(task: Task) -> dict:
    metrics = ["acc", "acc_norm"] if task.kind == "multiple_choice" else ["exact_match"]
    return {
        "task": task.name,
        "dataset_path": "allenai/ai2_arc",
        "dataset_name": "ARC-Easy",
        "test_split": "test",
        "doc_to_text": task.template.replace("{q}", "{{question}}"),
        "output_type": task.kind,
        "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics],
        "num_fewshot": 0,
        "metadata": {"version": 1.0},
    }


def results(
    tasks: list[Task],
    model: str,
    model_args: str,
    revision: str,
    sha: str,
    limit: int | None,
    lines: dict[str, list[dict]],
) -> dict:
    res, hib, n_samples, hashes = {}, {}, {}, {}
    for t in tasks:
        # fixed keys of _TaskMetrics (lm_eval/result_schema.py); a real run's per-task dicts carry
        # them too (e.g. {"name": "arc_easy", "alias": "arc_easy", "sample_len": 200, "acc,none": ...})
        entry: dict = {
            "name": t.name,
            "alias": t.name,
            "sample_len": len({x["doc_id"] for x in lines[t.name]}),
        }
        for filt in t.filters:
            rows = [x for x in lines[t.name] if x["filter"] == filt]
            for m in rows[0]["metrics"] if rows else []:
                mean = sum(x[m] for x in rows) / len(rows) + t.reported_shift
                entry[f"{m},{filt}"] = mean
                entry[f"{m}_stderr,{filt}"] = 0.05
        res[t.name] = entry
        hib[t.name] = {m["metric"]: True for m in _config(t)["metric_list"]}
        effective = t.docs if limit is None else min(limit, t.docs)
        n_samples[t.name] = {"original": t.docs, "effective": effective}
        hashes[t.name] = h(
            "".join(x["doc_hash"] + x["prompt_hash"] + x["target_hash"] for x in lines[t.name])
        )
    sanitized = model.replace("/", "__")
    return {
        "results": res,
        "group_subtasks": {t.name: [] for t in tasks},
        "configs": {t.name: _config(t) for t in tasks},
        "versions": {t.name: 1.0 for t in tasks},
        "n-shot": {t.name: 0 for t in tasks},
        "higher_is_better": hib,
        "n-samples": n_samples,
        "config": {
            "model": "hf",
            "model_args": model_args,
            "model_num_parameters": 162322944,
            "model_dtype": "torch.float32",
            "model_revision": revision,
            "model_sha": sha,
            "batch_size": "8",
            "batch_sizes": [],
            "device": "cuda:0",
            "use_cache": None,
            "limit": limit,
            "bootstrap_iters": 100000,
            "gen_kwargs": None,
            "random_seed": 0,
            "numpy_seed": 1234,
            "torch_seed": 1234,
            "fewshot_seed": 1234,
        },
        "git_hash": GIT,
        "date": 1763647391.2,
        "transformers_version": "4.46.3",
        "lm_eval_version": "0.4.9",
        "upper_git_hash": None,
        "tokenizer_pad_token": ["<|endoftext|>", "0"],
        "tokenizer_eos_token": ["<|endoftext|>", "0"],
        "tokenizer_bos_token": ["<|endoftext|>", "0"],
        "eot_token_id": 0,
        "max_length": 2048,
        "task_hashes": hashes,
        "model_source": "hf",
        "model_name": model,
        "model_name_sanitized": sanitized,
        "system_instruction": None,
        "system_instruction_sha": None,
        "fewshot_as_multiturn": False,
        "chat_template": None,
        "chat_template_sha": None,
        "start_time": 812.4,
        "end_time": 905.9,
        "total_evaluation_time_seconds": "93.5",
    }


def write_run(
    root: Path,
    tasks: list[Task],
    model: str = "EleutherAI/pythia-160m",
    revision: str = SHA,
    sha: str = SHA,
    limit: int | None = None,
    date: str = DATE,
) -> Path:
    """Write one run under ``root/<model_name_sanitized>/``; returns that folder."""
    folder = root / model.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    lines = {t.name: sample_lines(t) for t in tasks}
    args = f"pretrained={model},dtype=float32" + (f",revision={revision}" if revision else "")
    doc = results(tasks, model, args, revision or "main", sha, limit, lines)
    (folder / f"results_{date}.json").write_text(
        json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    for t in tasks:
        with (folder / f"samples_{t.name}_{date}.jsonl").open("w", encoding="utf-8") as fh:
            for x in lines[t.name]:
                fh.write(json.dumps(x, ensure_ascii=False) + "\n")
    return folder
