"""provgraph.capture.recorder at the request boundary, driven by in-process fake provider clients (they
stand in for the paid remote APIs): the records it writes import cleanly, and the gate sees
the audit's failure (two conditions sending one prompt) exactly when the harness makes it."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import ingest_bundle

from provgraph.capture.recorder import Recorder
from provgraph.evidence.identity import prompt_sha256
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules


@dataclass
class _Obj:
    """An SDK response object: attribute access only, like the provider SDKs."""

    fields: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None


class FakeOpenAI:
    """``client.chat.completions.create(**request)`` answering like the OpenAI SDK."""

    def __init__(self, snapshot: str = "gpt-4o-2024-08-06", finish: str = "stop", fail: bool = False):
        self.snapshot, self.finish, self.fail = snapshot, finish, fail
        self.sent: list[dict[str, Any]] = []
        self.chat = _Obj({"completions": _Obj({"create": self._create})})

    def _create(self, **request: Any) -> _Obj:
        self.sent.append(request)
        if self.fail:
            raise ConnectionError("503 Service Unavailable")
        n = len(self.sent)
        text = f"answer {n} to: {request['messages'][-1]['content']}"
        message = _Obj({"role": "assistant", "content": text, "refusal": None})
        return _Obj(
            {
                "id": f"chatcmpl-{n}",
                "model": self.snapshot,
                "choices": [_Obj({"index": 0, "message": message, "finish_reason": self.finish})],
                "_request_id": f"req_{n}",
            }
        )


class FakeAnthropic:
    """``client.messages.create(**request)`` answering like the Anthropic SDK."""

    def __init__(self, stop_reason: str = "end_turn"):
        self.stop_reason = stop_reason
        self.messages = _Obj({"create": self._create})

    def _create(self, **request: Any) -> _Obj:
        block = _Obj({"type": "text", "text": "No acute findings."})
        return _Obj(
            {
                "id": "msg_01",
                "model": "claude-sonnet-4-5-20250929",
                "content": [block],
                "stop_reason": self.stop_reason,
                "_request_id": "req_anthropic_01",
            }
        )


SYSTEM = {"A": "Describe every finding.", "B": "List only abnormal findings."}
CONTRACT = """[project]
name = "recorded"
base_iri = "https://example.org/recorded/"

[plan]
file = "plan.csv"
decoding = { temperature = 0, max_tokens = 256 }

[conditions.A]
system_prompt = "prompts/A.txt"
differs_from = ["B"]
model = "gpt"

[conditions.B]
system_prompt = "prompts/B.txt"
model = "gpt"

[models.gpt]
requested = "gpt-4o"
alias_ok = true
"""
CALLS = [("C1", "s1", "A"), ("C2", "s1", "B"), ("C3", "s2", "A"), ("C4", "s2", "B")]


def run_benchmark(root: Path, bind_prompt) -> None:
    """A tiny benchmark harness; ``bind_prompt(condition)`` is where the audit's bug lives."""
    root.mkdir(parents=True)
    (root / "provgraph.toml").write_text(CONTRACT)
    (root / "plan.csv").write_text(
        "call_id,case,condition\n" + "".join(f"{c},{s},{k}\n" for c, s, k in CALLS)
    )
    (root / "prompts").mkdir()
    for key, text in SYSTEM.items():
        (root / "prompts" / f"{key}.txt").write_text(text + "\n")
    client = FakeOpenAI()
    recorder = Recorder(root / "calls.jsonl", outputs="outputs")
    for call_id, case, condition in CALLS:
        request = {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": bind_prompt(condition)},
                {"role": "user", "content": f"Study {case}."},
            ],
            "temperature": 0,
            "max_tokens": 256,
        }
        recorder.call(call_id, client.chat.completions.create, request)


def gate(root: Path):
    store, results, problems = ingest_bundle(root)
    assert not problems and not [p for r in results for p in r.problems], [
        str(p) for r in results for p in r.problems
    ]
    return run_gate(store, load_rules(), record=False)


def test_correct_harness_passes_the_whole_gate(tmp_path: Path) -> None:
    run_benchmark(tmp_path / "b", lambda condition: SYSTEM[condition])
    report = gate(tmp_path / "b")
    fired = {
        r.rule.id: [v.message for v in r.violations]
        for r in report.results
        if r.outcome not in ("pass", "skipped")
    }
    assert fired == {}
    assert set(report.clauses_in_force) == {"output", "prompt", "model"}


def test_prompt_bound_from_one_constant_is_caught_at_the_request(tmp_path: Path) -> None:
    run_benchmark(tmp_path / "b", lambda condition: SYSTEM["A"])  # every condition sends A's prompt
    report = gate(tmp_path / "b")
    fired = {r.rule.id: [report.short(v.focus) for v in r.violations] for r in report.results if r.violations}
    assert fired == {
        "prompt-identical-across-conditions": ["condition-pair/A/B"],
        "prompt-differs-from-declared": ["condition/B"],
    }
    assert not report.passed


def test_record_fields_and_output_file(tmp_path: Path) -> None:
    run_benchmark(tmp_path / "b", lambda condition: SYSTEM[condition])
    lines = [json.loads(x) for x in (tmp_path / "b" / "calls.jsonl").read_text().splitlines()]
    first = lines[0]
    assert first["call_id"] == "C1" and first["status"] == "ok"
    assert first["requested_model"] == "gpt-4o" and first["resolved_model"] == "gpt-4o-2024-08-06"
    assert first["request_id"] == "req_1" and first["finish_reason"] == "stop"
    assert first["prompt"] == {"system": SYSTEM["A"], "user": "Study s1."}
    assert first["prompt_sha256"] == prompt_sha256(SYSTEM["A"], "Study s1.")
    assert first["prompt_source"] == "request"
    assert first["decoding"] == {"temperature": 0, "max_tokens": 256}
    output = (tmp_path / "b" / first["output"]).read_bytes()
    assert first["output"] == "outputs/C1.txt"
    assert first["output_sha256"] == hashlib.sha256(output).hexdigest() and first["output_bytes"] == len(
        output
    )
    assert len({x["request_sha256"] for x in lines}) == 4


def test_failed_call_is_recorded_then_reraised(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "calls.jsonl")
    client = FakeOpenAI(fail=True)
    with pytest.raises(ConnectionError):
        recorder.call(
            "C1",
            client.chat.completions.create,
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]},
        )
    (record,) = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert record["status"] == "error" and record["error"] == "ConnectionError: 503 Service Unavailable"
    assert "output_sha256" not in record and "resolved_model" not in record


def test_anthropic_message_truncated_is_length_not_ok(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "calls.jsonl")
    client = FakeAnthropic(stop_reason="max_tokens")
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "system": "S",
        "messages": [{"role": "user", "content": "U"}],
    }
    recorder.call("C1", client.messages.create, request)
    (record,) = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert record["status"] == "length" and record["finish_reason"] == "max_tokens"
    assert record["prompt_sha256"] == prompt_sha256("S", "U")
    assert record["request_id"] == "req_anthropic_01" and record["decoding"] == {"max_tokens": 8}


def test_concurrent_calls_write_whole_lines(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "calls.jsonl")
    client = FakeOpenAI()

    def worker(w: int) -> None:
        for i in range(25):
            big = "x" * 5000  # lines larger than a pipe buffer still arrive whole
            recorder.call(
                f"W{w}-{i}",
                client.chat.completions.create,
                {"model": "gpt-4o", "messages": [{"role": "user", "content": big}]},
            )

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(records) == 200 and len({r["call_id"] for r in records}) == 200
