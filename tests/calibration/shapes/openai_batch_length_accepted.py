"""openai-batch-length-accepted: a text-only report-summarisation run through the OpenAI Batch API
whose protocol accepts truncated answers.

Ten radiology reports (cases), two conditions (``terse`` and ``detailed`` system prompts,
declared to differ), one pinned model (``gpt-4o-mini-2024-07-18``). The plan is the contract's
matrix (``cases`` x conditions x 1 replicate, custom_id ``<condition>--<case>--1``: the harness
writes no plan file), and ``[plan] decoding`` states the settings every request body carries
(temperature 0, top_p 1, max_tokens 160, seed 20240902).

Sound but unusual: the protocol scores the first 160 tokens only, so answers cut at
``max_tokens`` (finish ``length``) are accepted (``[plan] accept_statuses = ["length"]``);
three ``detailed`` calls finish that way. Two requests got HTTP 429 in batch 1 (error file) and
were re-submitted in batch 2 with the same custom_id and answered.

Flawed twin: one answer finished ``content_filter``; one request ran at temperature 0.7; batch 1
also sent and got an answer for a case the plan does not hold; batch 2's output holds a result
(a second replicate) that no input file sent; the retried ``detailed`` request carried an
earlier draft of the detailed prompt.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _cal_batch as cb
from corpus import Planted

NAME = "openai-batch-length-accepted"
SOURCE = (
    "https://platform.openai.com/docs/guides/batch (input, output and error file lines); "
    "https://platform.openai.com/docs/api-reference/chat/object (finish_reason stop, length, "
    "content_filter); README 'The contract', 'Prompt, model and output identity' (matrix plan, decoding)"
)

CASES = [f"rpt-{n:04d}" for n in range(1, 11)]
CONDITIONS = ("terse", "detailed")
MODEL = "gpt-4o-mini-2024-07-18"
DECODING = {"temperature": 0, "top_p": 1, "max_tokens": 160, "seed": 20240902}
PROMPTS = {
    "terse": "Summarise the radiology report in one sentence for a referring clinician.",
    "detailed": (
        "Summarise the radiology report for a referring clinician: list every finding with its "
        "location and severity, then the recommended follow-up, then the impression."
    ),
}
OLD_DETAILED = "Summarise the radiology report: findings, follow-up, impression."
FINDINGS = ["left lower lobe opacity", "small right effusion", "stable cardiomegaly", "no acute finding"]
LENGTH_CALLS = {cb.call_id("detailed", CASES[i]) for i in (1, 4, 8)}
RETRIED = [cb.call_id("terse", CASES[6]), cb.call_id("detailed", CASES[2])]
# flawed-only defects
FILTERED_CALL = cb.call_id("detailed", CASES[5])
WARM_CALL = cb.call_id("terse", CASES[3])
UNPLANNED_CALL = cb.call_id("terse", "rpt-0011")
UNSENT_CALL = cb.call_id("terse", CASES[0], 2)

CONTRACT = f"""\
[project]
name = "report-summaries-openai-batch"
base_iri = "https://example.org/report-summaries/"

[plan]
cases = [{", ".join(f'"{c}"' for c in CASES)}]
replicates = 1
decoding = {{ temperature = 0, top_p = 1, max_tokens = 160, seed = 20240902 }}
accept_statuses = ["length"]      # answers are scored on their first 160 tokens by design

[conditions.terse]
system_prompt = "prompts/terse.txt"
differs_from = ["detailed"]
model = "mini"

[conditions.detailed]
system_prompt = "prompts/detailed.txt"
model = "mini"

[models.mini]
requested = "{MODEL}"
"""


def _report(case: str) -> str:
    finding = FINDINGS[int(case[-2:]) % len(FINDINGS)]
    return (
        f"EXAMINATION: Chest PA and lateral ({case}).\nINDICATION: Cough and fever.\n"
        f"FINDINGS: There is {finding}. No pneumothorax. Osseous structures are intact.\n"
        f"IMPRESSION: {finding.capitalize()}."
    )


def _request(cid: str, flawed: bool, retry: bool = False) -> dict:
    condition, case, _ = cid.split("--")
    system = OLD_DETAILED if flawed and retry and condition == "detailed" else PROMPTS[condition]
    body = {
        "model": MODEL,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": _report(case)}],
        **DECODING,
    }
    if flawed and cid == WARM_CALL:
        body["temperature"] = 0.7
    return cb.openai_request(cid, body)


def _answer(cid: str, batch: str, flawed: bool) -> dict:
    condition, case, _ = cid.split("--")
    summary = f"{case}: {_report(case).split('FINDINGS: ')[1].split('.')[0]}; no pneumothorax."
    if condition == "detailed":
        summary += " Follow-up: clinical correlation and repeat radiograph in 6 weeks. " * 3
    if cid in LENGTH_CALLS:
        return cb.openai_answer(cid, batch, MODEL, summary[:600], "length", usage=(180, 160))
    if flawed and cid == FILTERED_CALL:
        return cb.openai_answer(cid, batch, MODEL, None, "content_filter", usage=(180, 0))
    return cb.openai_answer(
        cid, batch, MODEL, summary, "stop", usage=(180, 40 + 60 * (condition == "detailed"))
    )


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    cb.write_text(root / "provgraph.toml", CONTRACT)
    for condition, text in PROMPTS.items():
        cb.write_text(root / "prompts" / f"{condition}.txt", text + "\n")
    planned = [cb.call_id(c, case) for c in CONDITIONS for case in CASES]
    sent = planned + ([UNPLANNED_CALL] if flawed else [])
    answers, errors = [], []
    for cid in sent:
        if cid in RETRIED:
            message = "Rate limit reached for gpt-4o-mini on tokens per min (TPM). Please try again later."
            errors.append(cb.openai_http_error(cid, "b1", 429, "rate_limit_exceeded", message))
        else:
            answers.append(_answer(cid, "b1", flawed))
    batches = root / "batches"
    cb.write_jsonl(batches / "batch_01_input.jsonl", [_request(cid, flawed) for cid in sent])
    cb.write_jsonl(batches / "batch_01_output.jsonl", answers)
    cb.write_jsonl(batches / "batch_01_errors.jsonl", errors)
    cb.write_jsonl(batches / "batch_02_input.jsonl", [_request(cid, flawed, retry=True) for cid in RETRIED])
    retried = [_answer(cid, "b2", flawed) for cid in RETRIED]
    if flawed:
        retried.append(_answer(UNSENT_CALL, "b2", flawed))
    cb.write_jsonl(batches / "batch_02_output.jsonl", retried)
    if not flawed:
        return []
    return [
        Planted("output-call-not-successful", f"call/{FILTERED_CALL}", "finished content_filter"),
        Planted(
            "output-decoding-mismatch",
            # the request that asked for it (output-decoding-mismatch reports the node stating it)
            f"request/{cb.escape_key('batches/batch_01_input.jsonl')}/{cb.escape_key(WARM_CALL)}/1",
            "request asked for temperature 0.7",
        ),
        Planted(
            "output-unplanned-record",
            cb.record_focus("batches/batch_01_output.jsonl", UNPLANNED_CALL),
            "answer for a case the plan does not hold",
        ),
        Planted(
            "output-result-without-request",
            cb.record_focus("batches/batch_02_output.jsonl", UNSENT_CALL),
            "result no input file sent",
        ),
        Planted("prompt-differs-from-declared", "condition/detailed", "retry sent an earlier prompt draft"),
    ]
