"""openai-batch-vlm-png: a chest-radiograph VLM run through the OpenAI Batch API, PNG from the start.

Eight MIMIC-style studies, two prompt conditions (``zero_shot`` and ``guided``, declared to
differ) and one model (``gpt-4o``, an alias accepted because every response body records the
resolved snapshot). Each request is a ``/v1/chat/completions`` body with a system message and
a user message holding text and an ``image_url`` data URL of the study's PNG; the two
conditions of a case send the same PNG bytes. The images are PNG files from the start (no
DICOM, no rendering record: ``[pixel] inputs = "images"``).

Sound but unusual: batch 1 lost two requests (a ``request_timeout`` and an HTTP 500 in its
error file); both were re-submitted with the same custom_id in batch 2 and answered there.

Flawed twin: the ``guided`` requests carry the ``zero_shot`` system prompt (byte-identical
prompts across conditions declared distinct); one case's ``guided`` request was fed another
study's PNG; one call finished ``length`` and was not re-run; one request expired
(``batch_expired``) and was never re-submitted; one call was answered by ``gpt-4o-mini``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cal_batch as cb
from corpus import Planted

NAME = "openai-batch-vlm-png"
SOURCE = (
    "https://platform.openai.com/docs/guides/batch (input, output and error file lines); "
    "https://platform.openai.com/docs/api-reference/chat/object (chat.completion body); "
    "https://platform.openai.com/docs/guides/images-vision (image_url data URL); "
    "README.md 'The contract', 'Prompt, model and output identity' (contract, plan.csv)"
)

CASES = ["50414267", "51180958", "52201491", "53189527", "54205396", "55612830", "56699142", "57375967"]
CONDITIONS = ("zero_shot", "guided")
REQUESTED, SNAPSHOT, OTHER_FAMILY = "gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"
USER_TEXT = "Chest radiograph attached. Report the findings and end with one line: IMPRESSION: <text>."
PROMPTS = {
    "zero_shot": "You are a board-certified radiologist. Describe the chest radiograph you are shown.",
    "guided": (
        "You are a board-certified radiologist. Read the chest radiograph systematically: lines and "
        "tubes, lungs, pleura, heart and mediastinum, bones. Describe each, then give an impression."
    ),
}
#: batch 1 failures that were re-submitted in batch 2 (custom_id -> error line writer)
RETRIED = {cb.call_id("zero_shot", CASES[2]): "timeout", cb.call_id("guided", CASES[5]): "http500"}
# flawed-only defects
SWAPPED_IMAGE = CASES[3]  # its guided request carries CASES[4]'s PNG
LENGTH_CALL = cb.call_id("guided", CASES[6])
EXPIRED_CALL = cb.call_id("zero_shot", CASES[7])
MINI_CALL = cb.call_id("zero_shot", CASES[1])

CONTRACT = """\
[project]
name = "cxr-vlm-openai-batch"
base_iri = "https://example.org/cxr-vlm-openai-batch/"

[plan]
file = "plan.csv"

[pixel]
inputs = "images"                  # PNG files from the start: no DICOM, no rendering record
same_image_across_conditions = true

[conditions.zero_shot]
system_prompt = "prompts/zero_shot.txt"
differs_from = ["guided"]
model = "gpt4o"

[conditions.guided]
system_prompt = "prompts/guided.txt"
model = "gpt4o"

[models.gpt4o]
requested = "gpt-4o"
alias_ok = true                    # every response body records the resolved snapshot
"""


def _body(condition: str, png: bytes, flawed: bool) -> dict:
    system = PROMPTS["zero_shot" if flawed else condition]
    user = [
        {"type": "text", "text": USER_TEXT},
        {"type": "image_url", "image_url": {"url": cb.data_url(png)}},
    ]
    return {
        "model": REQUESTED,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
        "max_completion_tokens": 600,
    }


def _report(case: str, condition: str) -> str:
    return (
        f"Study {case}, {condition.replace('_', ' ')} read. Lungs are clear without focal consolidation. "
        "No pleural effusion or pneumothorax. Cardiomediastinal silhouette within normal limits.\n"
        "IMPRESSION: No acute cardiopulmonary process."
    )


def _batch_one(images: dict[str, bytes], flawed: bool) -> tuple[list, list, list]:
    """Batch 1: every planned request; its output and error files."""
    requests, answers, errors = [], [], []
    for condition in CONDITIONS:
        for case in CASES:
            cid = cb.call_id(condition, case)
            png = (
                images[CASES[4]]
                if flawed and condition == "guided" and case == SWAPPED_IMAGE
                else images[case]
            )
            requests.append(cb.openai_request(cid, _body(condition, png, flawed and condition == "guided")))
            if RETRIED.get(cid) == "timeout":
                errors.append(cb.openai_failed(cid, "b1", "request_timeout", "The request timed out."))
            elif RETRIED.get(cid) == "http500":
                message = "The server had an error while processing your request. Sorry about that!"
                errors.append(cb.openai_http_error(cid, "b1", 500, "server_error", message))
            elif flawed and cid == EXPIRED_CALL:
                message = "This request could not be executed before the completion window expired."
                errors.append(cb.openai_failed(cid, "b1", "batch_expired", message))
            else:
                answers.append(_answer(cid, case, condition, "b1", flawed))
    return requests, answers, errors


def _answer(cid: str, case: str, condition: str, batch: str, flawed: bool) -> dict:
    model = OTHER_FAMILY if flawed and cid == MINI_CALL else SNAPSHOT
    text = _report(case, condition)
    finish = "stop"
    if flawed and cid == LENGTH_CALL:
        text, finish = text[:60], "length"
    return cb.openai_answer(cid, batch, model, text, finish, usage=(1105, 48 if finish == "stop" else 600))


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    cb.write_text(root / "provgraph.toml", CONTRACT)
    for condition, text in PROMPTS.items():
        cb.write_text(root / "prompts" / f"{condition}.txt", text + "\n")
    images = {case: cb.png_bytes(cb.radiograph(int(case))) for case in CASES}
    for case, png in images.items():
        (root / "images").mkdir(exist_ok=True)
        (root / "images" / f"{case}.png").write_bytes(png)
    rows = [[cb.call_id(c, case), case, c, 1] for c in CONDITIONS for case in CASES]
    cb.write_csv(root / "plan.csv", ["call_id", "case", "condition", "replicate"], rows)
    requests, answers, errors = _batch_one(images, flawed)
    batches = root / "batches"
    cb.write_jsonl(batches / "batch_01_input.jsonl", requests)
    cb.write_jsonl(batches / "batch_01_output.jsonl", answers)
    cb.write_jsonl(batches / "batch_01_errors.jsonl", errors)
    retry = [r for r in requests if r["custom_id"] in RETRIED]
    cb.write_jsonl(batches / "batch_02_input.jsonl", retry)
    answered = []
    for request in retry:
        condition, case, _ = request["custom_id"].split("--")
        answered.append(_answer(request["custom_id"], case, condition, "b2", flawed))
    cb.write_jsonl(batches / "batch_02_output.jsonl", answered)
    if not flawed:
        return []
    return [
        Planted(
            "prompt-identical-across-conditions",
            "condition-pair/guided/zero_shot",
            "guided sent zero_shot's prompt",
        ),
        Planted(
            "pixel-conditions-differ-in-image", f"case/{SWAPPED_IMAGE}", "guided fed another study's PNG"
        ),
        Planted("output-call-not-successful", f"call/{LENGTH_CALL}", "finished length, not re-run"),
        Planted("output-call-not-successful", f"call/{EXPIRED_CALL}", "batch_expired, never re-submitted"),
        Planted("model-family-mismatch", "model-spec/gpt4o", "one call answered by gpt-4o-mini"),
    ]
