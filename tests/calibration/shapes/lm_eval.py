"""An lm-evaluation-harness (v0.4) run of two Hugging Face models on three tasks.

``lm_eval --model hf --tasks arc_easy,gsm8k,gsm8k_cot --log_samples --output_path output`` for
EleutherAI/pythia-160m (``revision=<commit>``) and EleutherAI/pythia-410m (``revision=main``,
the commit recorded as ``model_sha`` by the harness's lookup): per model a folder
``output/<model_name_sanitized>/`` with ``results_<date>.json`` and one
``samples_<task>_<date>.jsonl`` per task, in the shapes ``tests/lm_eval_writer.py`` documents
field by field from the harness's source. ``gsm8k`` and ``gsm8k_cot`` are prompt variants the
contract declares distinct; the reported metrics must be their samples' means.

Sound but unusual choices of the clean twin: pythia-410m asks for ``revision=main`` and is
resolved only through the recorded ``model_sha``; its run used ``--limit 12`` (12 of 16
arc_easy documents, declared by the limit); the results hold a group (``arc``, aggregated over
its subtask) and a stderr of ``N/A``; gsm8k is scored under two filters.

Flawed twin: the cot variant was run with the plain template (prompt-identical-across-conditions);
pythia-160m's reported arc_easy accuracy is not its samples' mean (analysis-reported-differs); its
gsm8k_cot samples lost two documents (analysis-harness-samples-missing); pythia-410m asks for
``revision=main`` and the lookup failed (``model_sha`` empty: model-alias-unresolved); one
arc_easy document of pythia-410m is logged twice (analysis-harness-duplicate-document); an empty
gsm8k answer is scored correct (analysis-harness-empty-scored).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests/: the harness-shape writer

from lm_eval_writer import DATE, SHA, Task, write_run  # noqa: E402

from provgraph.rdf.terms import mint  # noqa: E402

NAME = "lm-eval-two-models"
SOURCE = (
    "EleutherAI/lm-evaluation-harness: lm_eval/loggers/evaluation_tracker.py (folder, file names, "
    "sample sanitising), lm_eval/evaluator.py (config, per-sample example), lm_eval/evaluator_utils.py "
    "and lm_eval/result_schema.py (results, n-samples), lm_eval/models/huggingface.py (model_sha)"
)
SHA_410 = "9879f0ac1d0a9ec8ba8bfaa4dbc45bc4c9f4e1b2"
PLAIN = "Question: {q}\nAnswer:"
COT = "Q: {q}\nLet's think step by step, then give the final number.\nA:"
CONTRACT = """[project]
name = "pythia lm-eval"
base_iri = "https://example.org/lmeval/"

[analysis]
harness = "lm-eval"

[models.p160]
requested = "EleutherAI/pythia-160m"
alias_ok = true

[models.p410]
requested = "EleutherAI/pythia-410m"
alias_ok = true

[conditions.arc_easy]
[conditions.gsm8k]
differs_from = ["gsm8k_cot"]
[conditions.gsm8k_cot]
"""


def focus(kind: str, *keys: object) -> str:
    return mint("", kind, *keys)


def _add_group(folder: Path) -> None:
    """A group row as the harness writes it (``groups`` and ``group_subtasks``), and an N/A stderr."""
    path = folder / f"results_{DATE}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    arc = doc["results"]["arc_easy"]
    doc["results"]["arc"] = {"alias": "arc", "acc,none": arc["acc,none"], "acc_stderr,none": "N/A"}
    doc["groups"] = {"arc": dict(doc["results"]["arc"])}
    doc["group_subtasks"]["arc"] = ["arc_easy"]
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")


def generate(root: Path, twin: str) -> list:
    from corpus import Planted

    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    (root / "provgraph.toml").write_text(CONTRACT, encoding="utf-8")
    small = [
        Task("arc_easy", "multiple_choice", 16, reported_shift=0.0625 if flawed else 0.0),
        Task(
            "gsm8k",
            "generate_until",
            10,
            filters=("strict-match", "flexible-extract"),
            empty_correct={7} if flawed else set(),
        ),
        Task(
            "gsm8k_cot",
            "generate_until",
            10,
            template=PLAIN if flawed else COT,
            drop={3, 8} if flawed else set(),
        ),
    ]
    f160 = write_run(root / "output", small, model="EleutherAI/pythia-160m", revision=SHA, sha=SHA)
    _add_group(f160)
    large = [
        Task("arc_easy", "multiple_choice", 12, duplicate={5} if flawed else set()),
        Task("gsm8k", "generate_until", 10, filters=("strict-match", "flexible-extract")),
        Task("gsm8k_cot", "generate_until", 10, template=PLAIN if flawed else COT),
    ]
    write_run(
        root / "output",
        large,
        model="EleutherAI/pythia-410m",
        revision="main",
        sha="" if flawed else SHA_410,
        limit=12,
    )
    # the limit cut arc_easy from its 16 test documents: n-samples original is the task's size
    path = root / "output" / "EleutherAI__pythia-410m" / f"results_{DATE}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["n-samples"]["arc_easy"]["original"] = 16
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    if not flawed:
        return []
    run160 = f"output/EleutherAI__pythia-160m/results_{DATE}.json"
    return [
        Planted(
            "prompt-identical-across-conditions",
            focus("condition-pair", "gsm8k", "gsm8k_cot"),
            "cot variant ran the plain template",
        ),
        Planted(
            "analysis-reported-differs",
            focus("reported", run160, "arc_easy", "acc,none"),
            "reported accuracy is not the samples' mean",
        ),
        Planted(
            "analysis-harness-samples-missing",
            focus("harness-task", run160, "gsm8k_cot"),
            "two samples missing",
        ),
        Planted("model-alias-unresolved", focus("model-spec", "p410"), "revision=main, no model_sha"),
        Planted(
            "analysis-harness-duplicate-document",
            focus("call", "EleutherAI__pythia-410m--arc_easy--5--none"),
            "document logged twice",
        ),
        Planted(
            "analysis-harness-empty-scored",
            focus("record", "output/EleutherAI__pythia-160m", "gsm8k", "15"),
            "empty answer scored correct",
        ),
    ]
