"""Holdout shape: an OpenAI Batch run against the Responses API with JPEG inputs.

A pleural-effusion read of six CheXpert-style frontal radiographs, which that data set ships as
JPEG files from the start (no DICOM, no rendering): 3 prompt conditions (direct answer,
reason-then-answer, systematic checklist) x 2 models (``gpt-4.1`` by dated snapshot,
``gpt-4.1-mini`` by its alias, whose resolved snapshot every response body records) x 6 cases,
one replicate, 36 planned calls in ``plan.csv``. Each request is a ``/v1/responses`` line: the
condition's prompt as ``instructions``, one user message with an ``input_text`` and an
``input_image`` part carrying the JPEG as a data URL, ``temperature`` 0 and
``max_output_tokens`` 600.

Sound but unusual choices of the clean twin:

- JPEG inputs from the start (``[pixel] inputs = "images"``).
- Three requests of batch 1 expired (the error file's ``batch_expired`` lines) and were
  re-submitted unchanged, with the same ``custom_id``, in batch 2, where they were answered.
- One reason-then-answer response of ``gpt-4.1`` is ``incomplete`` with
  ``incomplete_details.reason = "max_output_tokens"``: the protocol scores a truncated answer as
  written (no final answer = wrong), so ``[plan] accept_statuses = ["length"]``.
- The mini model is requested by its mutable alias, accepted because each body records the
  resolved snapshot (``alias_ok``).

Flawed twin, planted (one defect per line):

- pixel: the harness re-encoded one case's JPEG (quality 70) for the mini checklist call;
- prompt: the ``gpt-4.1`` checklist condition sent the reason-then-answer instructions;
- output: one response is ``incomplete`` on ``content_filter`` (not accepted);
- model: batch 2 ran after the mini alias moved: its answers record another snapshot;
- output (decoding): the re-submitted ``gpt-4.1`` request of batch 2 ran with temperature 1.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

for _dir in (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from _holdout_batch import data_url, hex_id, jpeg_bytes, write_csv, write_jsonl, write_text  # noqa: E402
from corpus import Planted  # noqa: E402

from provgraph.rdf.terms import escape_key  # noqa: E402

NAME = "openai-responses-batch-jpeg"
SOURCE = (
    "OpenAI Batch guide (https://platform.openai.com/docs/guides/batch: input line custom_id/"
    "method/url/body, output line id/custom_id/response{status_code,request_id,body}/error, "
    "error file batch_expired); Responses API object "
    "(https://platform.openai.com/docs/api-reference/responses/object: status completed/"
    "incomplete, incomplete_details.reason max_output_tokens/content_filter, output message "
    "items with output_text parts, usage input_tokens/output_tokens); input_image parts "
    "(https://platform.openai.com/docs/guides/images-vision: image_url data URL, detail); "
    "CheXpert-v1.0-small JPEG layout; provgraph README 'The contract' and clause sections"
)

BASE = "https://example.org/cxp-effusion-responses/"
CASES = ("p64541-s1", "p64542-s1", "p64543-s1", "p64544-s2", "p64545-s1", "p64546-s1")
MODELS = {  # key: (requested, resolved snapshot)
    "gpt41": ("gpt-4.1-2025-04-14", "gpt-4.1-2025-04-14"),
    "mini": ("gpt-4.1-mini", "gpt-4.1-mini-2025-04-14"),
}
MOVED_SNAPSHOT = "gpt-4.1-mini-2025-07-17"
PROMPTS = {
    "direct": "You are a radiologist reading one frontal chest radiograph. Answer only "
    '"effusion: present" or "effusion: absent".',
    "cot": "You are a radiologist reading one frontal chest radiograph. Describe the costophrenic "
    'angles and the diaphragm, then end with one line "effusion: present" or "effusion: absent".',
    "checklist": "You are a radiologist. Work through this checklist for the frontal chest "
    "radiograph: 1. costophrenic angles 2. meniscus sign 3. mediastinal shift. Then answer "
    '"effusion: present" or "effusion: absent".',
}
USER_TEXT = "Frontal chest radiograph attached. Is there a pleural effusion?"
MAX_OUTPUT_TOKENS = 600
EXPIRED = ("mini-cot--p64543-s1--1", "gpt41-direct--p64545-s1--1", "mini-checklist--p64546-s1--1")
TRUNCATED = "gpt41-cot--p64544-s2--1"
# planted in the flawed twin
REENCODED = ("mini-checklist--p64542-s1--1", "p64542-s1")
FILTERED = "gpt41-direct--p64541-s1--1"
HOT_RETRY = "gpt41-direct--p64545-s1--1"


def _conditions() -> list[tuple[str, str, str]]:
    """(condition key, model key, prompt key), models outer."""
    return [(f"{m}-{p}", m, p) for m in MODELS for p in PROMPTS]


def _cid(condition: str, case: str) -> str:
    return f"{condition}--{case}--1"


def _contract() -> str:
    lines = [
        "[project]",
        'name = "cxp-effusion-responses"',
        f'base_iri = "{BASE}"',
        "",
        "[plan]",
        'file = "plan.csv"',
        "# protocol section 4: a truncated answer is scored as written (no final line = wrong)",
        'accept_statuses = ["length"]',
        f"decoding = {{ temperature = 0, max_tokens = {MAX_OUTPUT_TOKENS} }}",
        "",
        "[pixel]",
        'inputs = "images"            # CheXpert ships JPEGs: no DICOM, no rendering',
        "same_image_across_conditions = true",
        "",
    ]
    for key, model, prompt in _conditions():
        others = [f'"{model}-{p}"' for p in PROMPTS if p != prompt]
        lines += [
            f"[conditions.{key}]",
            f'system_prompt = "prompts/{prompt}.txt"',
            f'model = "{model}"',
            f"differs_from = [{', '.join(others)}]",
            "",
        ]
    lines += [
        "[models.gpt41]",
        f'requested = "{MODELS["gpt41"][0]}"',
        "",
        "[models.mini]",
        f'requested = "{MODELS["mini"][0]}"',
        "alias_ok = true              # every response body records the resolved snapshot",
    ]
    return "\n".join(lines) + "\n"


def _images(root: Path) -> dict[str, bytes]:
    images = {}
    for i, case in enumerate(CASES):
        data = jpeg_bytes(1000 + i)
        patient, study = case.split("-")
        rel = f"CheXpert-v1.0-small/valid/patient{patient[1:]}/study{study[1:]}/view1_frontal.jpg"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        images[case] = data
    return images


def _body(condition: str, case: str, image: bytes, flawed: bool, retry: bool) -> dict[str, Any]:
    model, prompt = condition.split("-", 1)
    if flawed and condition == "gpt41-checklist":
        prompt = "cot"  # planted: the checklist condition's template pointed at the cot file
    if flawed and (_cid(condition, case), case) == REENCODED:
        image = jpeg_bytes(1000 + CASES.index(case), quality=70)  # planted: re-encoded
    temperature = 1.0 if flawed and retry and _cid(condition, case) == HOT_RETRY else 0
    return {
        "model": MODELS[model][0],
        "instructions": PROMPTS[prompt],
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": USER_TEXT},
                    {"type": "input_image", "image_url": data_url(image), "detail": "high"},
                ],
            }
        ],
        "temperature": temperature,
        "max_output_tokens": MAX_OUTPUT_TOKENS,
        "store": False,
        "text": {"format": {"type": "text"}},
    }


def _answer(rng: random.Random, prompt: str, present: bool) -> str:
    final = f"effusion: {'present' if present else 'absent'}"
    if prompt == "direct":
        return final
    angle = "blunted" if present else "sharp"
    return f"Costophrenic angles: {angle} bilaterally. Diaphragm contour preserved.\n{final}"


def _response(rng: random.Random, body: dict[str, Any], resolved: str, state: str) -> dict[str, Any]:
    """A Responses API object; ``state`` is completed, max_output_tokens or content_filter."""
    prompt = next(k for k, v in PROMPTS.items() if v == body["instructions"])
    text = _answer(rng, prompt, rng.random() < 0.4)
    if state != "completed":
        text = text[: len(text) // 2]
    out_tokens = MAX_OUTPUT_TOKENS if state == "max_output_tokens" else rng.randint(8, 140)
    in_tokens = rng.randint(900, 1300)
    return {
        "id": hex_id(rng, "resp_", 32),
        "object": "response",
        "created_at": 1751500000 + rng.randint(0, 80000),
        "status": "completed" if state == "completed" else "incomplete",
        "error": None,
        "incomplete_details": None if state == "completed" else {"reason": state},
        "instructions": body["instructions"],
        "max_output_tokens": body["max_output_tokens"],
        "model": resolved,
        "output": [
            {
                "id": hex_id(rng, "msg_", 32),
                "type": "message",
                "status": "completed" if state == "completed" else "incomplete",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "store": False,
        "temperature": body["temperature"],
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": in_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": in_tokens + out_tokens,
        },
        "metadata": {},
    }


def _output_line(rng: random.Random, cid: str, body: dict[str, Any], resolved: str, state: str) -> dict:
    return {
        "id": hex_id(rng, "batch_req_", 32),
        "custom_id": cid,
        "response": {
            "status_code": 200,
            "request_id": hex_id(rng, "req_", 32),
            "body": _response(rng, body, resolved, state),
        },
        "error": None,
    }


def _batch(
    root: Path, folder: str, calls: list[tuple[str, str]], images: dict[str, bytes], flawed: bool
) -> None:
    """Write one batch's input, output and error files; ``calls`` are (condition, case)."""
    rng = random.Random(f"{folder}-{flawed}")
    retry = folder.endswith("02")
    inputs, outputs, errors = [], [], []
    for condition, case in calls:
        cid = _cid(condition, case)
        body = _body(condition, case, images[case], flawed, retry)
        inputs.append({"custom_id": cid, "method": "POST", "url": "/v1/responses", "body": body})
        if not retry and cid in EXPIRED:
            errors.append(
                {
                    "id": hex_id(rng, "batch_req_", 32),
                    "custom_id": cid,
                    "response": None,
                    "error": {
                        "code": "batch_expired",
                        "message": "This request could not be executed before the completion window expired.",
                    },
                }
            )
            continue
        model = condition.split("-", 1)[0]
        resolved = MOVED_SNAPSHOT if flawed and retry and model == "mini" else MODELS[model][1]
        state = "max_output_tokens" if cid == TRUNCATED else "completed"
        if flawed and cid == FILTERED:
            state = "content_filter"
        outputs.append(_output_line(rng, cid, body, resolved, state))
    rng.shuffle(outputs)  # the output file is not in input order
    write_jsonl(root, f"batches/{folder}/input.jsonl", inputs)
    write_jsonl(root, f"batches/{folder}/output.jsonl", outputs)
    if errors:
        write_jsonl(root, f"batches/{folder}/errors.jsonl", errors)


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    write_text(root, "provgraph.toml", _contract())
    for key, text in PROMPTS.items():
        write_text(root, f"prompts/{key}.txt", text + "\n")
    plan = [(_cid(c, case), case, c, 1) for c, _, _ in _conditions() for case in CASES]
    write_csv(root, "plan.csv", ["call_id", "case", "condition", "replicate"], plan)
    images = _images(root)
    _batch(root, "batch_01", [(c, case) for _, case, c, _ in plan], images, flawed)
    retried = [tuple(cid.rsplit("--", 1)[0].split("--")) for cid in EXPIRED]
    _batch(root, "batch_02", retried, images, flawed)  # type: ignore[arg-type]
    if not flawed:
        return []
    # the batch-2 request that asked for temperature 1 (its batch-1 request asked for 0)
    hot_request = "request/" + "/".join(
        escape_key(k) for k in ("batches/batch_02/input.jsonl", HOT_RETRY, "1")
    )
    return [
        Planted(
            "pixel-conditions-differ-in-image",
            f"case/{REENCODED[1]}",
            "mini checklist call sent a re-encoded JPEG",
        ),
        Planted(
            "prompt-identical-across-conditions",
            "condition-pair/gpt41-checklist/gpt41-cot",
            "gpt-4.1 checklist condition sent the cot instructions",
        ),
        Planted("output-call-not-successful", f"call/{FILTERED}", "response incomplete on content_filter"),
        Planted(
            "model-several-snapshots", "model-spec/mini", "mini alias resolved to a new snapshot in batch 2"
        ),
        Planted("output-decoding-mismatch", hot_request, "re-submitted request asked for temperature 1"),
    ]
