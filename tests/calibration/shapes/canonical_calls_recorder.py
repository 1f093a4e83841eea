"""A VLM benchmark on PNG images whose harness records every call with provgraph's Recorder.

The harness (``run_benchmark.py`` in spirit) builds each request from the condition's prompt
files and the case's PNG, and sends it through :class:`provgraph.capture.recorder.Recorder`
(README "Recording at the request boundary"), which writes the canonical ``calls.jsonl``
records (README "Prompt, model and output identity") and ``outputs/<call_id>.txt``. The
generator drives the *real* Recorder with deterministic fake clients (an OpenAI chat
completion and an Anthropic message, as plain dicts) and a fixed clock, so the records are
exactly what the Recorder writes. Plan: 8 cases x 3 conditions (two GPT-4o prompts, one Claude
prompt) x 3 replicates at temperature 0.7; pinned model snapshots.

Sound but unusual: images are PNG files from the start (``[pixel] inputs = "images"``: no
DICOM, no rendering record); 3 replicates per (case, condition); one call hit a rate limit,
was recorded ``error`` by the Recorder and re-sent with the same call id, its later record
``ok``; the two GPT conditions share one model, and the Claude condition sends the same
structured prompt as a GPT condition (not declared distinct from it).

Flawed twin:
- the model answered one call with empty content (``finish_reason: stop``): the Recorder logs
  ``ok`` with a zero-byte output file (``output-ok-without-output``);
- one ``ok`` call's output file was later deleted (``output-ok-without-output``);
- a smoke-test call (``smoke--case001--1``) went to the run's log (``output-unplanned-record``);
- the Claude condition's calls were logged by the harness's legacy path, which writes the
  prompt from the module constant (``prompt_source: "constant"``,
  ``prompt-not-captured-at-request``);
- one call was sent from a path that read the config's default temperature 1.0
  (``output-decoding-mismatch``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_cohort import Planted, chat_completion, fixed_clock, write_csv, write_text

NAME = "canonical-calls-recorder"
SOURCE = (
    "provgraph README 'Prompt, model and output identity' and 'Recording at the request "
    "boundary'; provgraph/capture/recorder.py (the real Recorder writes calls.jsonl); OpenAI "
    "chat completions and Anthropic Messages response objects as the Recorder reads them "
    "(https://platform.openai.com/docs/api-reference/chat/object, "
    "https://docs.anthropic.com/en/api/messages); PNG per RFC 2083"
)
BASE = "https://example.org/canonical-calls-recorder/"
CASES = tuple(f"case{n:03d}" for n in (1, 2, 4, 7, 9, 12, 15, 16))
REPLICATES = (1, 2, 3)
#: condition -> (model key, system prompt file)
CONDITIONS = {
    "gpt-terse": ("gpt", "prompts/terse_system.txt"),
    "gpt-structured": ("gpt", "prompts/structured_system.txt"),
    "claude-structured": ("claude", "prompts/structured_system.txt"),
}
MODELS = {"gpt": "gpt-4o-2024-08-06", "claude": "claude-3-5-sonnet-20241022"}
PROMPTS = {
    "prompts/terse_system.txt": "You are a radiologist. Report the findings of the chest "
    "radiograph in one short paragraph.\n",
    "prompts/structured_system.txt": "You are a radiologist. Write a structured chest radiograph "
    "report with the headings FINDINGS and IMPRESSION. Do not speculate beyond the image.\n",
    "prompts/user.txt": "Describe this chest radiograph.\n",
}
DECODING = {"temperature": 0.7, "max_tokens": 512}
RETRIED = "gpt-structured--case004--2"  # rate-limited once, then answered
EMPTY = "gpt-terse--case009--3"
DELETED = "claude-structured--case012--1"
HOT = "gpt-terse--case015--2"
SMOKE = "smoke--case001--1"

CONTRACT = f"""\
[project]
name = "canonical-calls-recorder"
base_iri = "{BASE}"

[plan]
file = "plan.csv"
decoding = {{ temperature = 0.7, max_tokens = 512 }}

[pixel]
inputs = "images"          # PNG files from the start: no DICOM, no rendering record
same_image_across_conditions = true

[conditions.gpt-terse]
system_prompt = "prompts/terse_system.txt"
user_prompt = "prompts/user.txt"
model = "gpt"
differs_from = ["gpt-structured"]

[conditions.gpt-structured]
system_prompt = "prompts/structured_system.txt"
user_prompt = "prompts/user.txt"
model = "gpt"

[conditions.claude-structured]
system_prompt = "prompts/structured_system.txt"
user_prompt = "prompts/user.txt"
model = "claude"

[models.gpt]
requested = "gpt-4o-2024-08-06"

[models.claude]
requested = "claude-3-5-sonnet-20241022"
"""


class RateLimitError(Exception):
    """What the SDK raises on HTTP 429."""


def png(width: int, height: int, seed: int) -> bytes:
    """An 8-bit greyscale PNG (RFC 2083): a ramp shifted by ``seed``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(
        b"\x00" + bytes((x * 7 + y * 3 + seed * 29) % 256 for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _answer(call_key: str, structured: bool) -> str:
    digest = hashlib.sha256(call_key.encode()).digest()
    side = ("left", "right")[digest[0] % 2]
    finding = ("No focal consolidation.", f"Patchy {side} basilar opacity.", "Mild cardiomegaly.")[
        digest[1] % 3
    ]
    if structured:
        return f"FINDINGS: {finding} No pneumothorax.\nIMPRESSION: {finding}"
    return f"{finding} No pleural effusion or pneumothorax."


def _openai(state: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    def create(**request: Any) -> dict[str, Any]:
        key = state["call"]
        if key == RETRIED and not state.setdefault("limited", False):
            state["limited"] = True
            raise RateLimitError("Error code: 429 - Rate limit reached for gpt-4o (requests per min)")
        text = (
            ""
            if key in state["empty"]
            else _answer(key + str(request["temperature"]), "FINDINGS" in str(request))
        )
        return chat_completion(key, MODELS["gpt"], text)

    return create


def _anthropic(state: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    def create(**request: Any) -> dict[str, Any]:
        key = state["call"]
        rid = base64.b32encode(hashlib.sha256(key.encode()).digest()).decode()[:24]
        return {
            "id": f"msg_01{rid}",
            "type": "message",
            "role": "assistant",
            "model": MODELS["claude"],
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": _answer(key, True)}],
        }

    return create


def _request(condition: str, image: bytes, temperature: float) -> dict[str, Any]:
    model_key, system_file = CONDITIONS[condition]
    system, user = PROMPTS[system_file].removesuffix("\n"), PROMPTS["prompts/user.txt"].removesuffix("\n")
    data = base64.b64encode(image).decode()
    if model_key == "claude":
        content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]
        messages = [{"role": "user", "content": [*content, {"type": "text", "text": user}]}]
        return {"model": MODELS["claude"], "system": system, "messages": messages,
                "temperature": temperature, "max_tokens": DECODING["max_tokens"]}  # fmt: skip
    parts = [
        {"type": "text", "text": user},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
    ]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": parts}]
    return {"model": MODELS["gpt"], "messages": messages, "temperature": temperature,
            "max_tokens": DECODING["max_tokens"]}  # fmt: skip


def _run(root: Path, plan: list[tuple[str, str, str, int]], flawed: bool) -> None:
    """Send every planned call (and, flawed, a smoke test first) through the real Recorder."""
    from provgraph.capture import recorder as recorder_module

    state: dict[str, Any] = {"empty": {EMPTY} if flawed else set()}
    send = {"gpt": _openai(state), "claude": _anthropic(state)}
    clock = fixed_clock()
    with mock.patch.object(recorder_module, "_now", lambda: next(clock)):
        rec = recorder_module.Recorder(root / "calls.jsonl", outputs="outputs")
        calls = ([(SMOKE, "case001", "gpt-terse", 1)] if flawed else []) + plan
        for call_id, case, condition, _ in calls:
            state["call"] = call_id
            image = root / "images" / f"{case}.png"
            temperature = 1.0 if flawed and call_id == HOT else DECODING["temperature"]
            request = _request(condition, image.read_bytes(), temperature)
            for _attempt in range(3):
                try:
                    rec.call(call_id, send[CONDITIONS[condition][0]], request, image=image)
                    break
                except RateLimitError:
                    continue  # the Recorder logged it as error; re-send with the same call id


def _legacy_constant(root: Path, condition: str) -> None:
    """The legacy logging path: the condition's prompt as the module constant, not as sent."""
    log = root / "calls.jsonl"
    lines = []
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["call_id"].startswith(condition + "--"):
            record["prompt_source"] = "constant"
            del record["request_sha256"]
        lines.append(json.dumps(record, ensure_ascii=False))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    write_text(root / "provgraph.toml", CONTRACT)
    for rel, text in PROMPTS.items():
        write_text(root / rel, text)
    for n, case in enumerate(CASES):
        (root / "images").mkdir(parents=True, exist_ok=True)
        (root / "images" / f"{case}.png").write_bytes(png(48, 40, seed=n))
    plan = [
        (f"{condition}--{case}--{r}", case, condition, r)
        for case in CASES
        for condition in CONDITIONS
        for r in REPLICATES
    ]
    write_csv(root / "plan.csv", ("call_id", "case", "condition", "replicate"), plan)
    _run(root, plan, flawed)
    if not flawed:
        return []
    (root / "outputs" / f"{DELETED}.txt").unlink()
    _legacy_constant(root, "claude-structured")
    return [
        Planted("output-ok-without-output", f"record/calls.jsonl/{EMPTY}/1", "ok with a zero-byte output"),
        Planted("output-ok-without-output", f"record/calls.jsonl/{DELETED}/1", "ok with its output deleted"),
        Planted("output-unplanned-record", f"record/calls.jsonl/{SMOKE}/1", "smoke-test call in the log"),
        Planted("prompt-not-captured-at-request", "condition/claude-structured", "prompt from a constant"),
        Planted("output-decoding-mismatch", f"record/calls.jsonl/{HOT}/1", "ran at temperature 1.0"),
    ]
