"""Importers of call identity on files the tests write: OpenAI Batch input/output, Anthropic
Message Batches requests/results, the extended canonical call records, the LLM-reviewer
benchmark files, and the [conditions]/[models]/[plan] contract sections."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from conftest import CONTRACT, PLAN_CONTRACT, ingest_bundle, write_bundle

from provgraph.bundle.contract import load_contract
from provgraph.errors import ContractError
from provgraph.evidence.identity import prompt_sha256, sha256_text
from provgraph.rdf.vocab import PG_NS

BASE = "https://example.org/t/"


def rows(store, where: str, *names: str) -> list[tuple]:
    result = store.select(
        f"PREFIX pg: <{PG_NS}> PREFIX prov: <http://www.w3.org/ns/prov#> "
        f"SELECT {' '.join('?' + n for n in names)} WHERE {{ {where} }}"
    )
    out = []
    for r in result:
        out.append(tuple(None if r[n] is None else r[n].value for n in names))
    return sorted(out, key=lambda t: tuple("" if v is None else v for v in t))


def problems(results) -> list[str]:
    return [str(p) for r in results for p in r.problems] + [r.error for r in results if r.error]


def jsonl(*lines: object) -> str:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)


def openai_result(
    cid: str, finish: str = "stop", content: str | None = "ok", refusal=None, model="gpt-4o-2024-08-06"
):
    return {
        "id": f"batch_req_{cid}",
        "custom_id": cid,
        "response": {
            "status_code": 200,
            "request_id": f"req_{cid}",
            "body": {
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish,
                        "message": {"role": "assistant", "content": content, "refusal": refusal},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3},
            },
        },
        "error": None,
    }


def test_openai_output_keeps_every_failure_state_distinct(tmp_path: Path) -> None:
    output = jsonl(
        openai_result("C1"),
        openai_result("C2", finish="length"),
        openai_result("C3", finish="content_filter", content=None),
        openai_result("C4", refusal="I can't help with that."),
        {
            "id": "b5",
            "custom_id": "C5",
            "response": None,
            "error": {"code": "batch_expired", "message": "expired"},
        },
        {
            "id": "b6",
            "custom_id": "C6",
            "response": None,
            "error": {"code": "batch_cancelled", "message": "x"},
        },
        {
            "id": "b7",
            "custom_id": "C7",
            "response": {
                "status_code": 400,
                "request_id": "r7",
                "body": {"error": {"message": "bad\nrequest", "type": "invalid_request_error"}},
            },
            "error": None,
        },
        "{not json",
        {"id": "b9", "response": None, "error": {"code": "x"}},
    )
    root = write_bundle(tmp_path / "b", {"batch_output.jsonl": output}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert problems(results) == [
        "batch_output.jsonl:8: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
        "batch_output.jsonl:9: missing custom_id (it must be the plan's call id)",
    ]
    got = rows(
        store,
        "?r a pg:BatchResult ; pg:callId ?id ; pg:status ?s . OPTIONAL { ?r pg:errorMessage ?e }",
        "id",
        "s",
        "e",
    )
    assert got == [
        ("C1", "ok", None),
        ("C2", "length", None),
        ("C3", "refused", None),
        ("C4", "refused", None),
        ("C5", "expired", "expired"),
        ("C6", "canceled", "x"),
        ("C7", "error", "bad request"),
    ]
    (res,) = rows(
        store,
        "?r pg:callId 'C1' ; pg:resolvedModel ?m ; pg:resolvedFamily ?f ; pg:requestId ?q ; "
        "pg:outputByteSize ?n",
        "m",
        "f",
        "q",
        "n",
    )
    assert res == ("gpt-4o-2024-08-06", "gpt-4o", "req_C1", "2")


def test_openai_input_hashes_the_prompt_and_the_inline_image(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\nfake pixels"
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are a radiologist."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe."},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            },
        ],
        "temperature": 0.2,
        "max_completion_tokens": 300,
    }
    line = {"custom_id": "C1", "method": "POST", "url": "/v1/chat/completions", "body": body}
    bad = {
        "custom_id": "C2",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "gpt-4o", "messages": "hi"},
    }
    root = write_bundle(tmp_path / "b", {"batch_input.jsonl": jsonl(line, bad)}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert problems(results) == ["batch_input.jsonl:2: body: messages must be a list, got str"]
    (got,) = rows(
        store,
        "?r a pg:BatchRequest ; pg:promptSha256 ?p ; pg:systemPromptSha256 ?s ; pg:promptCapture ?c ; "
        "pg:imageSha256 ?i ; pg:requestedModel ?m ; pg:temperature ?t ; pg:maxTokens ?k ; pg:forCall ?call",
        "p",
        "s",
        "c",
        "i",
        "m",
        "t",
        "k",
        "call",
    )
    assert got == (
        prompt_sha256("You are a radiologist.", "Describe."),
        sha256_text("You are a radiologist."),
        "request",
        hashlib.sha256(png).hexdigest(),
        "gpt-4o",
        "0.2",
        "300",
        BASE + "call/C1",
    )


def test_openai_responses_api_input_image_is_hashed(tmp_path: Path) -> None:
    """A /v1/responses batch request carries its image as an ``input_image`` part whose
    ``image_url`` is the data URL itself (OpenAI Responses API reference, "input_image"); it was
    dropped silently, so no rule saw the image (found by a holdout calibration shape)."""
    jpeg = b"\xff\xd8\xff\xe0 fake jpeg"
    url = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()
    body = {
        "model": "gpt-4.1-2025-04-14",
        "instructions": "You are a radiologist.",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Is there an effusion?"},
                    {"type": "input_image", "image_url": url, "detail": "high"},
                ],
            }
        ],
    }
    line = {"custom_id": "C1", "method": "POST", "url": "/v1/responses", "body": body}
    root = write_bundle(tmp_path / "b", {"batch_input.jsonl": jsonl(line)}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert problems(results) == []
    (got,) = rows(store, "?r a pg:BatchRequest ; pg:imageSha256 ?i ; pg:promptSha256 ?p", "i", "p")
    prompt = prompt_sha256("You are a radiologist.", "Is there an effusion?")
    assert got == (hashlib.sha256(jpeg).hexdigest(), prompt)


def responses_result(
    cid: str, parts: list[dict], status: str = "completed", reason: str | None = None
) -> dict:
    """One OpenAI Batch output line of a /v1/responses request: ``response.body`` is a Response
    object (https://platform.openai.com/docs/api-reference/responses/object): ``output`` message
    items whose ``content`` holds ``output_text`` or ``refusal`` parts, ``status`` and
    ``incomplete_details``."""
    body = {
        "id": f"resp_{cid}",
        "object": "response",
        "model": "gpt-4.1-2025-04-14",
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "output": [{"type": "message", "id": f"msg_{cid}", "role": "assistant", "content": parts}],
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    return {
        "id": f"b_{cid}",
        "custom_id": cid,
        "response": {"status_code": 200, "request_id": cid, "body": body},
    }


def test_openai_responses_api_output_states(tmp_path: Path) -> None:
    """A refusal in a Responses API body is a ``refusal`` content part of a *completed*
    response, its text under ``refusal`` (not ``text``); it was imported as an ok call with an
    empty output, so no output rule saw a blocked answer."""
    text = {"type": "output_text", "text": "No effusion.", "annotations": []}
    output = jsonl(
        responses_result("R1", [text]),
        responses_result("R2", [{"type": "refusal", "refusal": "I can't help with that."}]),
        responses_result("R3", [text], status="incomplete", reason="max_output_tokens"),
        responses_result("R4", [], status="incomplete", reason="content_filter"),
        responses_result("R5", [], status="failed"),
    )
    root = write_bundle(tmp_path / "b", {"batch_output.jsonl": output}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert problems(results) == []
    got = rows(
        store,
        "?r a pg:BatchResult ; pg:callId ?id ; pg:status ?s . OPTIONAL { ?r pg:outputByteSize ?n }",
        "id",
        "s",
        "n",
    )
    assert got == [
        ("R1", "ok", str(len("No effusion."))),
        ("R2", "refused", str(len("I can't help with that."))),
        ("R3", "length", str(len("No effusion."))),
        ("R4", "refused", "0"),
        ("R5", "error", "0"),
    ]


def test_anthropic_results_in_any_order_keep_their_types(tmp_path: Path) -> None:
    def ok(cid: str, stop: str) -> dict:
        message = {
            "id": f"msg_{cid}",
            "model": "claude-sonnet-4-5-20250929",
            "stop_reason": stop,
            "content": [{"type": "text", "text": "fine"}],
            "usage": {"input_tokens": 5, "output_tokens": 1},
        }
        return {"custom_id": cid, "result": {"type": "succeeded", "message": message}}

    results_file = jsonl(
        {"custom_id": "C4", "result": {"type": "expired"}},
        ok("C1", "end_turn"),
        {"custom_id": "C3", "result": {"type": "canceled"}},
        {
            "custom_id": "C2",
            "result": {
                "type": "errored",
                "error": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            },
        },
        ok("C5", "max_tokens"),
        ok("C6", "refusal"),
        {"custom_id": "C7", "result": {"type": "done"}},
    )
    requests = jsonl(
        {
            "custom_id": "C1",
            "params": {
                "model": "claude-sonnet-4-5",
                "max_tokens": 64,
                "system": [{"type": "text", "text": "S"}],
                "messages": [{"role": "user", "content": "U"}],
            },
        }
    )
    root = write_bundle(tmp_path / "b", {"results.jsonl": results_file, "requests.jsonl": requests}, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert problems(results) == [
        "results.jsonl:7: result.type must be one of succeeded, errored, canceled, expired, got 'done'"
    ]
    got = rows(
        store, "?r a pg:BatchResult ; pg:callId ?id ; pg:status ?s ; pg:rawStatus ?raw", "id", "s", "raw"
    )
    assert got == [
        ("C1", "ok", "succeeded"),
        ("C2", "error", "errored"),
        ("C3", "canceled", "canceled"),
        ("C4", "expired", "expired"),
        ("C5", "length", "succeeded"),
        ("C6", "refused", "succeeded"),
    ]
    assert rows(store, "?r pg:callId 'C2' ; pg:errorCode ?c ; pg:errorMessage ?m", "c", "m") == [
        ("overloaded_error", "Overloaded")
    ]
    assert rows(store, "?r a pg:BatchRequest ; pg:promptSha256 ?p ; pg:maxTokens ?k", "p", "k") == [
        (prompt_sha256("S", "U"), "64")
    ]


def test_canonical_records_carry_identity_and_reject_inconsistent_hashes(tmp_path: Path) -> None:
    good = {
        "call_id": "C1",
        "status": "ok",
        "requested_model": "gpt-4o",
        "resolved_model": "gpt-4o-2024-08-06",
        "prompt": {"system": "S", "user": "U"},
        "prompt_sha256": prompt_sha256("S", "U"),
        "prompt_source": "request",
        "decoding": {"temperature": 0, "max_tokens": 10, "seed": 7},
        "output_sha256": "a" * 64,
        "output_bytes": 12,
    }
    bad_hash = {**good, "call_id": "C2", "prompt_sha256": "b" * 64}
    bad_source = {**good, "call_id": "C3", "prompt_source": "module"}
    bad_prompt = {**good, "call_id": "C4", "prompt": {"system": "S", "assistant": "A"}}
    constant = {
        "call_id": "C5",
        "status": "ok",
        "prompt_sha256": prompt_sha256("S", None),
        "prompt_source": "constant",
    }
    root = write_bundle(
        tmp_path / "b", {"calls.jsonl": jsonl(good, bad_hash, bad_source, bad_prompt, constant)}, CONTRACT
    )
    store, results, _ = ingest_bundle(root)
    assert problems(results) == [
        "calls.jsonl:2: prompt_sha256 does not match the prompt text recorded with it",
        "calls.jsonl:3: prompt_source must be one of request, constant, config, summary, unknown, "
        "got 'module'",
        "calls.jsonl:4: prompt has unknown key(s) assistant (allowed: system, user)",
    ]
    got = rows(
        store,
        "?r pg:callId ?id ; pg:promptCapture ?c ; pg:promptSha256 ?p . OPTIONAL { ?r pg:seed ?s }",
        "id",
        "c",
        "p",
        "s",
    )
    assert got == [
        ("C1", "request", prompt_sha256("S", "U"), "7"),
        ("C5", "constant", prompt_sha256("S", None), None),
    ]


REVIEWS_MULTI = {
    "model": "claude-sonnet-4-6",
    "display_name": "Claude Sonnet 4.6",
    "with_taxonomy": False,
    "n_runs": 3,
    "timestamp": "2026-04-04T13:40:00+00:00",
    "system_prompt": "You are a scientific methods expert.",
    "reviews": [
        {
            "script": "script_08.py",
            "verdict": "FAIL",
            "flaw_identified": "x",
            "confidence": "HIGH",
            "raw_response": "{}",
            "latency_ms": 10,
            "usage": {"input_tokens": 1, "output_tokens": 2},
            "runs": [
                {
                    "script": "script_08.py",
                    "verdict": "FAIL",
                    "confidence": "HIGH",
                    "raw_response": '{"verdict": "FAIL"}',
                },
                {
                    "script": "script_08.py",
                    "verdict": "PASS",
                    "flaw_identified": None,
                    "confidence": "LOW",
                    "_parse_error": "Invalid verdict: 'MAYBE'",
                },
                {
                    "script": "script_08.py",
                    "verdict": "FAIL",
                    "confidence": "HIGH",
                    "raw_response": '{"verdict": "FAIL"}',
                },
            ],
            "agreement_rate": 0.667,
            "fail_votes": 2,
            "n_runs": 3,
        }
    ],
}


def test_reviewer_benchmark_files(tmp_path: Path) -> None:
    single = {
        "model": "gpt-4o",
        "with_taxonomy": True,
        "n_runs": 1,
        "system_prompt": "S",
        "reviews": [
            {"script": "script_01.py", "verdict": "pass", "confidence": "medium", "raw_response": "r"},
            {
                "script": "script_02.py",
                "verdict": "PASS",
                "flaw_identified": None,
                "confidence": "LOW",
                "_error": "503",
            },
            {"script": "script_03.py", "verdict": "MAYBE", "raw_response": "r"},
            {"script": "script_01.py", "verdict": "FAIL", "raw_response": "r"},
        ],
    }
    answer = {
        "script_01.py": {"is_flawed": True, "category": "Data leakage", "description": "d"},
        "script_02.py": {"is_flawed": "yes", "category": "P-hacking"},
    }
    models = {
        "models": [
            {
                "provider": "gpt4o",
                "model_id": "gpt-4o",
                "display_name": "GPT-4o",
                "with_taxonomy": True,
                "n_runs": 1,
            }
        ]
    }
    files = {
        "results/gpt4o_with_taxonomy_reviews.json": json.dumps(single, indent=2),
        "results/claude_sonnet_4_runs3_reviews.json": json.dumps(REVIEWS_MULTI, indent=2),
        "audit_answer_key/answer_key.json": json.dumps(answer, indent=2),
        "audit_scripts/script_01.py": "print(1)\n",
        "audit_scripts/script_08.py": "print(8)\n",
        "models_used.json": json.dumps(models, indent=2),
    }
    root = write_bundle(tmp_path / "b", files, CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert {r.rel: r.importer for r in results}.items() >= {
        "results/gpt4o_with_taxonomy_reviews.json": "reviews",
        "audit_answer_key/answer_key.json": "answer-key",
        "audit_scripts": "audit-scripts",
        "models_used.json": "models-used",
    }.items()
    assert problems(results) == [
        "audit_answer_key/answer_key.json:7: script_02.py: is_flawed must be true or false, got 'yes'",
        "results/gpt4o_with_taxonomy_reviews.json:21: script script_03, run 1: verdict must be PASS or FAIL, "
        "got 'MAYBE'",
        "results/gpt4o_with_taxonomy_reviews.json:26: script script_01.py is reviewed twice in this file "
        "(first: reviews[0])",
    ]
    got = rows(
        store,
        "?r a pg:Review ; pg:condition ?c ; pg:case ?k ; pg:replicate ?n ; pg:status ?s ; pg:forCall ?call ; "
        "prov:wasDerivedFrom ?src . OPTIONAL { ?r pg:verdict ?v } OPTIONAL { ?r pg:writtenVerdict ?w } "
        "OPTIONAL { ?r pg:confidence ?conf }",
        "c",
        "k",
        "n",
        "s",
        "v",
        "w",
        "conf",
    )
    c_multi, c_single = BASE + "condition/claude_sonnet_4_runs3", BASE + "condition/gpt4o_with_taxonomy"
    assert got == [
        (c_multi, BASE + "case/script_08", "1", "ok", "FAIL", None, "HIGH"),
        (c_multi, BASE + "case/script_08", "2", "parse_error", None, "PASS", None),
        (c_multi, BASE + "case/script_08", "3", "ok", "FAIL", None, "HIGH"),
        (c_single, BASE + "case/script_01", "1", "ok", "PASS", None, "MEDIUM"),
        (c_single, BASE + "case/script_02", "1", "error", None, "PASS", None),
    ]
    assert rows(store, "?v a pg:ReportedValue ; pg:statName ?s ; pg:value ?x ; pg:n ?n", "s", "x", "n") == [
        ("agreement_rate", "0.667", "3"),
        ("fail_votes", "2", "3"),
        ("majority_verdict_fail", "1", "3"),
    ]
    assert rows(
        store, "?e a pg:AnswerKeyEntry ; pg:case ?c ; pg:isFlawed ?f ; pg:category ?k", "c", "f", "k"
    ) == [(BASE + "case/script_01", "true", "Data leakage")]
    (script,) = rows(
        store, "?f a pg:ReviewedScript ; pg:case <" + BASE + "case/script_08> ; pg:sha256 ?h", "h"
    )
    assert script == (hashlib.sha256(b"print(8)\n").hexdigest(),)
    assert rows(
        store,
        "?r pg:replicate 1 ; pg:case <" + BASE + "case/script_08> ; pg:reviewedScript ?f . ?f pg:sha256 ?h",
        "h",
    ) == [script]
    assert rows(
        store,
        "?m a pg:ModelSelection ; pg:requestedModel ?id ; pg:withTaxonomy ?t ; pg:replicates ?n",
        "id",
        "t",
        "n",
    ) == [("gpt-4o", "true", "1")]


def test_contract_sections_cross_check(tmp_path: Path) -> None:
    def load(text: str):
        path = tmp_path / "provgraph.toml"
        path.write_text(CONTRACT + text)
        return load_contract(path)

    with pytest.raises(ContractError, match=r"conditions.A.differs_from: unknown condition 'C'"):
        load('[conditions.A]\ndiffers_from = ["C"]\n')
    with pytest.raises(ContractError, match=r"conditions.A.model: no \[models.gpt\] entry"):
        load('[conditions.A]\nmodel = "gpt"\n')
    with pytest.raises(ContractError, match=r"unknown key 'promt' in \[conditions.A\]"):
        load('[conditions.A]\npromt = "p.txt"\n')
    with pytest.raises(ContractError, match="give either a plan file or the matrix"):
        load('[plan]\nfile = "plan.csv"\ncases = ["s1"]\n')
    with pytest.raises(ContractError, match="the matrix needs conditions"):
        load('[plan]\ncases = ["s1"]\n')
    with pytest.raises(ContractError, match=r"models\.m\.requested: missing required key"):
        load("[models.m]\nalias_ok = true\n")
    contract = load('[plan]\ncases = ["s1", "s2"]\nreplicates = 2\n\n[conditions.A]\n[conditions.B]\n')
    assert contract.clauses() == ["output", "prompt"]


def test_matrix_plan_mints_the_batch_custom_ids(tmp_path: Path) -> None:
    contract = CONTRACT + '[plan]\ncases = ["s1"]\nconditions = ["A", "B"]\nreplicates = 2\n'
    root = write_bundle(tmp_path / "b", {}, contract)
    store, results, _ = ingest_bundle(root)
    assert problems(results) == []
    got = rows(store, "?c a pg:PlannedCall ; pg:callId ?id ; pg:replicate ?r", "id", "r")
    assert got == [("A--s1--1", "1"), ("A--s1--2", "2"), ("B--s1--1", "1"), ("B--s1--2", "2")]


def test_plan_file_contract_is_unchanged(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"plan.csv": "call_id,case,condition\nC1,s1,A\n"}, PLAN_CONTRACT)
    store, results, _ = ingest_bundle(root)
    assert {r.rel: r.importer for r in results}["plan.csv"] == "plan"
    assert rows(store, "?p a pg:CallPlan ; pg:planFile ?f", "f") == [(BASE + "file/plan.csv",)]
