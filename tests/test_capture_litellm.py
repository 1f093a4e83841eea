"""provgraph.capture.litellm_callback inside real LiteLLM: ``litellm.completion`` /
``acompletion`` with LiteLLM's own ``mock_response`` (no network), the callback registered in
``litellm.callbacks`` as LiteLLM's docs show (https://docs.litellm.ai/docs/observability/custom_callback:
``CustomLogger.log_success_event(kwargs, response_obj, start_time, end_time)`` and
``log_failure_event``, async variants). The reviewer loop is seed 002's
(github jheuer/replication-trap, run_evaluation.py ``review_script``: ``litellm.completion``
with a system and a user message, a failed call written as a "PASS" verdict).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM fetches a price list at import
import httpx2
import litellm
import openai
from conftest import TEST_SECRET
from test_capture_sdk import chat, write_bundle
from test_record import CALLS, SYSTEM, gate

from provgraph.capture.litellm_callback import RecordingLogger
from provgraph.capture.recorder import Recorder
from provgraph.evidence.identity import canonical_json, prompt_sha256

MESSAGES = [
    {"role": "system", "content": "You are a methods expert."},
    {"role": "user", "content": "Review s01.py"},
]


@contextlib.contextmanager
def logging_to(log: Path):
    logger = RecordingLogger(Recorder(log, outputs="outputs"))
    litellm.callbacks.append(logger)
    try:
        yield logger
    finally:  # LiteLLM copies callbacks into its success / failure lists: remove it from all
        litellm.logging_callback_manager.remove_callback_from_all_lists(logger)


@pytest.fixture
def recorded(tmp_path: Path):
    with logging_to(tmp_path / "calls.jsonl"):
        yield tmp_path / "calls.jsonl"


def wait_records(log: Path, n: int) -> list[dict[str, Any]]:
    """LiteLLM runs sync success callbacks on its thread pool: wait for them (10 s at most)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= n:
            time.sleep(0.05)  # nothing more may come
            lines = log.read_text().splitlines()
            assert len(lines) == n, lines
            return [json.loads(line) for line in lines]
        time.sleep(0.02)
    raise AssertionError(f"{n} records expected in {log}, found {len(lines)}")


def response(finish: str, text: str) -> litellm.ModelResponse:
    choice = {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}
    return litellm.ModelResponse(id="chatcmpl-abc", model="gpt-4o-2024-08-06", choices=[choice])


def test_success(recorded: Path) -> None:
    litellm.completion(
        model="gpt-4o",
        messages=MESSAGES,
        max_tokens=512,
        temperature=0,
        mock_response='{"verdict": "FAIL"}',
        metadata={"call_id": "gpt4o--s01--1"},
    )
    [rec] = wait_records(recorded, 1)
    assert rec["call_id"] == "gpt4o--s01--1" and rec["status"] == "ok"
    assert rec["requested_model"] == "gpt-4o" and rec["decoding"] == {"max_tokens": 512, "temperature": 0}
    assert rec["prompt_sha256"] == prompt_sha256("You are a methods expert.", "Review s01.py")
    assert rec["request_id"].startswith("chatcmpl-")
    assert (recorded.parent / rec["output"]).read_text() == '{"verdict": "FAIL"}'


def test_provider_body_as_sent(recorded: Path) -> None:
    """LiteLLM's real OpenAI provider path (its own OpenAI client given as ``client``, over an
    httpx2 mock transport): the record hashes the body LiteLLM built, which is the body sent,
    and names the provider's request id from the response headers."""
    sent: list[bytes] = []

    def server(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(200, json=chat("No acute findings."), headers={"x-request-id": "req_7"})

    client = openai.OpenAI(
        api_key="sk-test", http_client=httpx2.Client(transport=httpx2.MockTransport(server))
    )
    litellm.completion(
        model="openai/gpt-4o",
        messages=MESSAGES,
        temperature=0,
        max_tokens=64,
        client=client,
        api_key="sk-test",
        metadata={"call_id": "C1"},
    )
    [rec] = wait_records(recorded, 1)
    assert rec["request_sha256"] == hashlib.sha256(canonical_json(json.loads(sent[0]))).hexdigest()
    assert rec["request_id"] == "req_7" and rec["resolved_model"] == "gpt-4o-2024-08-06"
    assert rec["decoding"] == {"temperature": 0, "max_tokens": 64}


@pytest.mark.parametrize(("finish", "status"), [("length", "length"), ("content_filter", "refused")])
def test_length_and_refusal(recorded: Path, finish: str, status: str) -> None:
    litellm.completion(
        model="gpt-4o", messages=MESSAGES, mock_response=response(finish, "The"), metadata={"call_id": "C1"}
    )
    [rec] = wait_records(recorded, 1)
    assert (rec["status"], rec["finish_reason"]) == (status, finish)
    assert rec["resolved_model"] == "gpt-4o-2024-08-06"


def test_failure_is_an_error_never_a_verdict(recorded: Path) -> None:
    """Seed 002's loop writes "PASS" when the call fails; the record says the call failed."""
    try:
        litellm.completion(
            model="gpt-4o",
            messages=MESSAGES,
            mock_response="litellm.RateLimitError",
            metadata={"call_id": "gpt4o--s02--1"},
        )
        verdict = "FAIL"
    except litellm.exceptions.RateLimitError:
        verdict = "PASS"  # the harness's fallback
    [rec] = wait_records(recorded, 1)
    assert verdict == "PASS"
    assert rec["status"] == "error" and "RateLimitError" in rec["error"]
    assert "output" not in rec and "output_sha256" not in rec


def test_async_completion(recorded: Path) -> None:
    async def run() -> None:
        await litellm.acompletion(
            model="gpt-4o", messages=MESSAGES, mock_response="ok", metadata={"call_id": "C9"}
        )
        await asyncio.sleep(0.2)  # LiteLLM logs async success as a task after returning

    asyncio.run(run())
    [rec] = wait_records(recorded, 1)
    assert rec["call_id"] == "C9" and rec["status"] == "ok"


def test_call_without_call_id_keeps_litellms(recorded: Path) -> None:
    litellm.completion(model="gpt-4o", messages=MESSAGES, mock_response="ok")
    [rec] = wait_records(recorded, 1)
    assert rec["call_id"] and rec["status"] == "ok"


def test_recorded_benchmark_passes_and_a_constant_prompt_is_caught(tmp_path: Path) -> None:
    for name, bind in (("good", lambda k: SYSTEM[k]), ("bad", lambda k: SYSTEM["A"])):
        root = tmp_path / name
        write_bundle(root)
        with logging_to(root / "calls.jsonl"):
            for call_id, case, condition in CALLS:
                messages = [
                    {"role": "system", "content": bind(condition)},
                    {"role": "user", "content": f"Study {case}."},
                ]
                litellm.completion(
                    model="gpt-4o",
                    messages=messages,
                    temperature=0,
                    max_tokens=256,
                    mock_response=response("stop", "No acute findings."),
                    metadata={"call_id": call_id},
                )
            wait_records(root / "calls.jsonl", len(CALLS))
    good = gate(tmp_path / "good")
    assert good.passed and not [r.rule.id for r in good.results if r.violations]
    bad = gate(tmp_path / "bad")
    assert {r.rule.id for r in bad.results if r.violations} == {
        "prompt-identical-across-conditions",
        "prompt-differs-from-declared",
    }


def record_reviewer_run(root: Path, fail: str | None = None) -> None:
    """Seed 002's loop over the example's plan, every call through LiteLLM and the recorder;
    the call ``fail`` fails on its last attempt while the harness's reviews.json (generated
    beside it) still holds a verdict for it."""
    rows = (root / "plan.csv").read_text().splitlines()[1:]
    snapshot = {
        "claude_sonnet": "claude-sonnet-4-6",
        "claude_opus": "claude-opus-4-6",
        "gpt_4o": "gpt-4o-2024-08-06",
    }
    with logging_to(root / "calls.jsonl"):
        for row in rows:
            call_id, case, condition = row.split(",")[:3]
            model = next(v for k, v in snapshot.items() if condition.startswith(k))
            messages = [
                {"role": "system", "content": "You are a methods expert."},
                {"role": "user", "content": case},
            ]
            reply: Any = response("stop", '{"verdict": "PASS"}')
            reply.model = model
            if call_id == fail:
                reply = "litellm.InternalServerError"
            with contextlib.suppress(litellm.exceptions.InternalServerError):
                litellm.completion(
                    model=model,
                    max_tokens=512,
                    messages=messages,
                    mock_response=reply,
                    metadata={"call_id": call_id},
                )
        wait_records(root / "calls.jsonl", len(rows))


def test_reviewer_harness_recorded_beside_its_reviews(tmp_path: Path, monkeypatch) -> None:
    """The example reviewer bundle (examples/llm_review, seed 002's layout) with a recorder's
    calls.jsonl beside reviews.json: a review is the harness's reading of the recorded call, not
    a second answer (no duplicate), and a call the record says failed is not successful
    whatever verdict the harness wrote for it."""
    from examples_support import generator, run_cli  # the examples' generator and in-process CLI

    monkeypatch.setenv("PROVGRAPH_SECRET", TEST_SECRET)
    gen = generator("llm_review")
    outcomes = {}
    for name, fail in (("recorded", None), ("failed", "gpt_4o--script_05--1")):
        root = gen.generate(tmp_path / name, "clean")
        record_reviewer_run(root, fail)
        assert run_cli("-C", str(root), "-q", "ingest")[0] == 0
        report = tmp_path / f"{name}.json"
        code, _ = run_cli("-C", str(root), "-q", "check", "--format", "json", "--output", str(report))
        fired = [r for r in json.loads(report.read_text())["rules"] if r["violations"]]
        outcomes[name] = (code, {r["id"]: len(r["violations"]) for r in fired})
    assert outcomes["recorded"] == (0, {})
    assert outcomes["failed"] == (1, {"output-call-not-successful": 1})
