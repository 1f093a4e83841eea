"""provgraph.capture.wire: the real OpenAI and Anthropic SDKs (their request building, retry
loop and response parsing) over an httpx2 ``MockTransport`` (the SDKs' own HTTP library, with
a fake transport instead of the network).

Response shapes: OpenAI's chat completion object
(https://platform.openai.com/docs/api-reference/chat/object; a refusal as ``message.refusal``
with null content, https://platform.openai.com/docs/guides/structured-outputs#refusals;
request ids in the ``x-request-id`` header) and Anthropic's Message
(https://docs.anthropic.com/en/api/messages; stop reasons ``max_tokens`` and ``refusal``,
https://docs.anthropic.com/en/api/handling-stop-reasons; ``request-id`` header). Retries are the
SDKs' own (openai/_base_client.py and anthropic/_base_client.py ``_should_retry``: 408, 409,
429, >= 500 and connection errors), paced by their ``retry-after-ms`` header.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from test_record import CALLS, CONTRACT, SYSTEM, gate

from provgraph.capture import wire
from provgraph.capture.recorder import Recorder
from provgraph.capture.wire import RecordedAnthropic, RecordedOpenAI
from provgraph.evidence.identity import canonical_json, prompt_sha256

Handler = Callable[[httpx2.Request], httpx2.Response]
FAST = {"retry-after-ms": "1"}  # the SDKs honour it: retries in a millisecond, not 0.5 s


def chat(content: str | None, finish: str = "stop", refusal: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    return {
        "id": "chatcmpl-9xyz",
        "object": "chat.completion",
        "created": 1733000000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def message(text: str, stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 6},
    }


class Server:
    """Answers each request with the next scripted reply; keeps the bytes it received."""

    def __init__(self, *replies: Any, header: str = "x-request-id"):
        self.replies, self.header, self.received = list(replies), header, []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.received.append(request.content)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        status, body = reply if isinstance(reply, tuple) else (200, reply)
        headers = {self.header: f"req_{len(self.received)}", **FAST}
        return httpx2.Response(status, json=body, headers=headers)


def openai_client(server: Server, retries: int = 2) -> openai.OpenAI:
    transport = httpx2.MockTransport(server)
    return openai.OpenAI(
        api_key="sk-test", http_client=httpx2.Client(transport=transport), max_retries=retries
    )


def anthropic_client(server: Server, retries: int = 2) -> anthropic.Anthropic:
    transport = httpx2.MockTransport(server)
    http = httpx2.Client(transport=transport)
    return anthropic.Anthropic(api_key="sk-ant-test", http_client=http, max_retries=retries)


REQUEST = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "Describe every finding."},
        {"role": "user", "content": "Study s1."},
    ],
    "temperature": 0,
    "max_tokens": 256,
}
CLAUDE = {
    "model": "claude-sonnet-4-5",
    "system": "Describe every finding.",
    "messages": [{"role": "user", "content": "Study s1."}],
    "max_tokens": 256,  # this SDK's messages.create takes no temperature
}


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_openai_success_records_the_bytes_sent(tmp_path: Path) -> None:
    server = Server(chat("No acute findings."))
    recorder = Recorder(tmp_path / "calls.jsonl", outputs="outputs")
    response = RecordedOpenAI(openai_client(server), recorder).create("C1", **REQUEST)
    assert response.choices[0].message.content == "No acute findings."
    [rec] = records(tmp_path / "calls.jsonl")
    sent = json.loads(server.received[0])
    assert rec["request_sha256"] == hashlib.sha256(canonical_json(sent)).hexdigest()
    assert rec["status"] == "ok" and rec["finish_reason"] == "stop"
    assert rec["requested_model"] == "gpt-4o" and rec["resolved_model"] == "gpt-4o-2024-08-06"
    assert rec["request_id"] == "req_1"
    assert rec["decoding"] == {"temperature": 0, "max_tokens": 256}
    assert rec["prompt_sha256"] == prompt_sha256("Describe every finding.", "Study s1.")
    assert (tmp_path / rec["output"]).read_text() == "No acute findings."
    assert not list((tmp_path / "outputs").glob(".*"))  # no temporary file left behind


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        (chat("The heart is", finish="length"), "length", "length"),
        (chat(None, refusal="I can't help with that."), "refused", "stop"),
        (chat("", finish="content_filter"), "refused", "content_filter"),
    ],
)
def test_openai_finish_states(tmp_path: Path, reply: dict[str, Any], status: str, reason: str) -> None:
    recorder = Recorder(tmp_path / "calls.jsonl")
    RecordedOpenAI(openai_client(Server(reply)), recorder).create("C1", **REQUEST)
    [rec] = records(tmp_path / "calls.jsonl")
    assert (rec["status"], rec["finish_reason"]) == (status, reason)


def test_openai_retry_records_each_attempt(tmp_path: Path) -> None:
    """503 then 429 then success: the SDK retries twice; three records, the failures as errors."""
    server = Server((503, {"error": {"message": "overloaded"}}), (429, {"error": {}}), chat("Fine."))
    recorder = Recorder(tmp_path / "calls.jsonl", outputs="outputs")
    RecordedOpenAI(openai_client(server, retries=2), recorder).create("C1", **REQUEST)
    recs = records(tmp_path / "calls.jsonl")
    assert [(r["status"], r.get("error"), r["request_id"]) for r in recs] == [
        ("error", "HTTP 503 Service Unavailable", "req_1"),
        ("error", "HTTP 429 Too Many Requests", "req_2"),
        ("ok", None, "req_3"),
    ]
    assert len({r["request_sha256"] for r in recs}) == 1  # the same bytes, sent three times
    assert "output" not in recs[0] and "output_sha256" not in recs[0]


def test_transport_error_is_an_error_record_and_reraised(tmp_path: Path) -> None:
    server = Server(httpx2.ConnectError("connection refused"))
    recorder = Recorder(tmp_path / "calls.jsonl", outputs="outputs")
    with pytest.raises(openai.APIConnectionError):
        RecordedOpenAI(openai_client(server, retries=1), recorder).create("C1", **REQUEST)
    recs = records(tmp_path / "calls.jsonl")
    assert [r["status"] for r in recs] == ["error", "error"]  # the first try and the SDK's retry
    assert recs[0]["error"].startswith("transport error")
    assert recs[1]["error"].startswith("APIConnectionError")
    assert not any("output_sha256" in r for r in recs) and not (tmp_path / "outputs").exists()


def test_client_error_is_not_retried_and_recorded(tmp_path: Path) -> None:
    server = Server((400, {"error": {"message": "max_tokens is too large"}}))
    with pytest.raises(openai.BadRequestError):
        RecordedOpenAI(openai_client(server), Recorder(tmp_path / "calls.jsonl")).create("C1", **REQUEST)
    [rec] = records(tmp_path / "calls.jsonl")
    assert rec["status"] == "error" and "max_tokens is too large" in rec["error"]
    assert rec["request_id"] == "req_1"


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (message("No acute findings."), "ok"),
        (message("The heart", "max_tokens"), "length"),
        (message("", "refusal"), "refused"),
    ],
)
def test_anthropic_finish_states(tmp_path: Path, reply: dict[str, Any], status: str) -> None:
    server = Server(reply, header="request-id")
    recorder = Recorder(tmp_path / "calls.jsonl", outputs="outputs")
    RecordedAnthropic(anthropic_client(server), recorder).create("C1", **CLAUDE)
    [rec] = records(tmp_path / "calls.jsonl")
    assert rec["status"] == status and rec["finish_reason"] == reply["stop_reason"]
    assert rec["resolved_model"] == "claude-sonnet-4-5-20250929" and rec["request_id"] == "req_1"
    assert rec["prompt"] == {"system": "Describe every finding.", "user": "Study s1."}
    assert rec["decoding"] == {"max_tokens": 256}
    assert rec["request_sha256"] == hashlib.sha256(canonical_json(json.loads(server.received[0]))).hexdigest()


def test_anthropic_overloaded_retry(tmp_path: Path) -> None:
    server = Server(
        (529, {"type": "error", "error": {"type": "overloaded_error"}}), message("Ok."), header="request-id"
    )
    RecordedAnthropic(anthropic_client(server), Recorder(tmp_path / "calls.jsonl")).create("C1", **CLAUDE)
    assert [r["status"] for r in records(tmp_path / "calls.jsonl")] == ["error", "ok"]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_async_client(tmp_path: Path, asynchronous: bool) -> None:
    import asyncio  # only this test runs an event loop

    server = Server((500, {}), chat("Fine."))
    transport = httpx2.MockTransport(server)
    client = openai.AsyncOpenAI(
        api_key="sk-test", http_client=httpx2.AsyncClient(transport=transport), max_retries=1
    )
    recorded = RecordedOpenAI(client, Recorder(tmp_path / "calls.jsonl"))
    asyncio.run(recorded.acreate("C1", **REQUEST))
    assert [r["status"] for r in records(tmp_path / "calls.jsonl")] == ["error", "ok"]


def write_bundle(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "provgraph.toml").write_text(CONTRACT)
    (root / "plan.csv").write_text(
        "call_id,case,condition\n" + "".join(f"{c},{s},{k}\n" for c, s, k in CALLS)
    )
    (root / "prompts").mkdir()
    for key, text in SYSTEM.items():
        (root / "prompts" / f"{key}.txt").write_text(text + "\n")


def run_harness(root: Path, patch_after_import: bool) -> list[dict[str, Any]]:
    """The harness builds each request from the declared prompt of its condition; with
    ``patch_after_import`` a later import wraps the SDK's ``create`` and rewrites condition B's
    system prompt to A's (the audit's defect: the code that ran was not the code declared)."""
    client = openai_client(Server(chat("No acute findings.")))
    if patch_after_import:
        original = client.chat.completions.create

        def patched(**request: Any) -> Any:
            messages = [dict(m) for m in request["messages"]]
            messages[0]["content"] = SYSTEM["A"]
            return original(**{**request, "messages": messages})

        client.chat.completions.create = patched  # type: ignore[method-assign]
    recorded = RecordedOpenAI(client, Recorder(root / "calls.jsonl", outputs="outputs"))
    built = []
    for call_id, case, condition in CALLS:
        request = {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": SYSTEM[condition]},
                {"role": "user", "content": f"Study {case}."},
            ],
            "temperature": 0,
            "max_tokens": 256,
        }
        built.append(request)
        recorded.create(call_id, **request)
    return built


def test_unpatched_harness_passes_the_gate(tmp_path: Path) -> None:
    write_bundle(tmp_path / "b")
    run_harness(tmp_path / "b", patch_after_import=False)
    report = gate(tmp_path / "b")
    assert [r.rule.id for r in report.results if r.outcome not in ("pass", "skipped")] == []
    assert report.passed


def test_prompt_patched_after_import_is_recorded_as_sent(tmp_path: Path) -> None:
    write_bundle(tmp_path / "b")
    built = run_harness(tmp_path / "b", patch_after_import=True)
    recs = records(tmp_path / "b" / "calls.jsonl")
    b_call = next(r for r in recs if r["call_id"] == "C2")  # condition B
    assert built[1]["messages"][0]["content"] == SYSTEM["B"]  # what the harness believes it sent
    assert b_call["prompt"]["system"] == SYSTEM["A"]  # what went out
    assert b_call["prompt_sha256"] == prompt_sha256(SYSTEM["A"], "Study s1.")
    report = gate(tmp_path / "b")
    fired = {r.rule.id: [report.short(v.focus) for v in r.violations] for r in report.results if r.violations}
    assert fired == {
        "prompt-identical-across-conditions": ["condition-pair/A/B"],
        "prompt-differs-from-declared": ["condition/B"],
    }
    assert not report.passed


def test_retried_call_passes_the_output_clause(tmp_path: Path) -> None:
    """A call that failed once and succeeded on the SDK's retry is complete, not missing."""
    write_bundle(tmp_path / "b")
    server = Server((503, {}), chat("No acute findings."))
    recorded = RecordedOpenAI(
        openai_client(server), Recorder(tmp_path / "b" / "calls.jsonl", outputs="outputs")
    )
    for call_id, case, condition in CALLS:
        messages = [
            {"role": "system", "content": SYSTEM[condition]},
            {"role": "user", "content": f"Study {case}."},
        ]
        recorded.create(call_id, model="gpt-4o", messages=messages, temperature=0, max_tokens=256)
    assert len(records(tmp_path / "b" / "calls.jsonl")) == 5  # C1 twice
    assert gate(tmp_path / "b").passed


def responses_object(parts: list[dict[str, Any]], status: str = "completed", reason: str | None = None):
    """A Responses API object (https://platform.openai.com/docs/api-reference/responses/object)."""
    item = {"type": "message", "id": "msg_67cc", "status": "completed", "role": "assistant", "content": parts}
    return {
        "id": "resp_67cc",
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "model": "gpt-4o-2024-08-06",
        "output": [item],
        "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
    }


@pytest.mark.parametrize(
    ("reply", "status", "text"),
    [
        (responses_object([{"type": "output_text", "text": "Clear.", "annotations": []}]), "ok", "Clear."),
        (
            responses_object(
                [{"type": "output_text", "text": "The", "annotations": []}], "incomplete", "max_output_tokens"
            ),
            "length",
            "The",
        ),
        (responses_object([{"type": "refusal", "refusal": "I can't help."}]), "refused", "I can't help."),
    ],
)
def test_openai_responses_api(tmp_path: Path, reply: dict[str, Any], status: str, text: str) -> None:
    server = Server(reply)
    recorder = Recorder(tmp_path / "calls.jsonl", outputs="outputs")
    recorded = RecordedOpenAI(openai_client(server), recorder, api="responses")
    recorded.create(
        "C1", model="gpt-4o", instructions="Describe every finding.", input="Study s1.", max_output_tokens=64
    )
    [rec] = records(tmp_path / "calls.jsonl")
    assert rec["status"] == status and rec["resolved_model"] == "gpt-4o-2024-08-06"
    assert rec["prompt"] == {"system": "Describe every finding.", "user": "Study s1."}
    assert rec["decoding"] == {"max_tokens": 64}
    assert (tmp_path / rec["output"]).read_text() == text


def test_a_body_that_is_not_json_falls_back_to_the_request(tmp_path: Path) -> None:
    """A client whose hook saw no JSON body (a transport that re-encodes it): the call's
    response still reaches the caller and its record says the prompt was not seen as sent."""
    server = Server(chat("Fine."))
    client = openai_client(server)
    recorder = Recorder(tmp_path / "calls.jsonl")
    recorded = RecordedOpenAI(client, recorder)

    def garble(request: httpx2.Request) -> None:
        wire._ATTEMPTS.get()[-1]["sent"] = b"\x1f\x8b not json"

    hooks = client._client.event_hooks
    client._client.event_hooks = {**hooks, "request": [*hooks["request"], garble]}
    assert recorded.create("C1", **REQUEST).choices[0].message.content == "Fine."
    [rec] = records(tmp_path / "calls.jsonl")
    assert rec["status"] == "ok" and rec["prompt_source"] == "unknown"
