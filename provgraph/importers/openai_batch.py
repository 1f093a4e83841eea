"""OpenAI Batch API files: the input JSONL that was uploaded and the output/error JSONL.

Input line: ``{"custom_id", "method", "url", "body": {"model", "messages", ...decoding}}``
(``/v1/chat/completions``; ``/v1/responses`` bodies with ``input``/``instructions`` too). The
executed prompt hash is computed from the body's system and user text (see
:mod:`provgraph.evidence.identity`), so it is captured at the request by construction.

Output/error line: ``{"id", "custom_id", "response": {"status_code", "request_id", "body":
{"model", "choices": [{"finish_reason", "message"}], "usage"}}, "error": {"code", "message"}}``.
The resolved model is the response body's ``model``. ``length`` finishes, refusals
(``content_filter`` or ``message.refusal``), HTTP errors, expired and cancelled requests each
keep their own status; none of them is ``ok``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from provgraph.evidence.identity import (
    Identity,
    canonical_json,
    decoding_settings,
    finish_status,
    prompt_from_messages,
    responses_output,
)
from provgraph.importers.batch import BatchImporter, Rejected, obj, one_line, text, tokens

_EXPIRED = {"batch_expired", "expired"}
_CANCELED = {"batch_cancelled", "batch_canceled", "cancelled", "canceled"}


class OpenAIBatchInputImporter(BatchImporter):
    name = "openai-batch-input"
    version = "2"
    description = "OpenAI Batch API input JSONL (custom_id, method, url, body)"
    kind = "request"
    signature = ("custom_id", "method", "url", "body")
    allowed = ("custom_id", "method", "url", "body")

    def read_line(self, value: dict[str, Any]) -> tuple[Identity, dict[str, Any]]:
        body = obj(value.get("body"), "body")
        model = text(body.get("model"), "body.model")
        try:
            if "messages" in body:
                prompt = prompt_from_messages(body["messages"], grids=True)
            elif "input" in body:
                given = body["input"]
                messages = [{"role": "user", "content": given}] if isinstance(given, str) else given
                prompt = prompt_from_messages(messages, body.get("instructions"), grids=True)
            else:
                raise Rejected("body has neither messages nor input: no prompt to identify")
        except ValueError as err:
            raise Rejected(f"body: {err}") from None
        identity = Identity(
            requested_model=model,
            prompt=prompt,
            capture="request",
            request_sha256=hashlib.sha256(canonical_json(body)).hexdigest(),
            decoding=decoding_settings({k: v for k, v in body.items() if k != "instructions"}),
        )
        return identity, {}


class OpenAIBatchOutputImporter(BatchImporter):
    name = "openai-batch-output"
    version = "1"
    description = "OpenAI Batch API output or error JSONL (id, custom_id, response, error)"
    kind = "result"
    signature = ("custom_id", "response")
    allowed = ("id", "custom_id", "response", "error")

    def read_line(self, value: dict[str, Any]) -> tuple[Identity, dict[str, Any]]:
        error = obj(value.get("error"), "error", required=False)
        response = obj(value.get("response"), "response", required=False)
        if not error and not response:
            raise Rejected("neither response nor error: the line says nothing about the call")
        identity = Identity()
        extra: dict[str, Any] = {"request_id": response.get("request_id")}
        if error:
            code = str(error.get("code") or "")
            identity.error = one_line(str(error.get("message") or code or "error"))
            identity.error_code = code or None
            extra["status"] = "expired" if code in _EXPIRED else "canceled" if code in _CANCELED else "error"
            extra["raw_status"] = code or None
            return identity, extra
        status_code = response.get("status_code")
        if not isinstance(status_code, int):
            raise Rejected("response.status_code must be an integer")
        body = obj(response.get("body"), "response.body", required=False)
        if status_code != 200:
            err = obj(body.get("error"), "response.body.error", required=False)
            identity.error = one_line(str(err.get("message") or f"HTTP {status_code}"))
            identity.error_code = str(err.get("code") or err.get("type") or status_code)
            extra.update(status="error", raw_status=str(status_code))
            return identity, extra
        identity.resolved_model = text(body.get("model"), "response.body.model")
        usage = body.get("usage")
        extra["input_tokens"] = tokens(usage, "prompt_tokens", "input_tokens")
        extra["output_tokens"] = tokens(usage, "completion_tokens", "output_tokens")
        if "choices" in body:
            choices = body["choices"]
            if not isinstance(choices, list) or not choices:
                raise Rejected("response.body.choices must be a non-empty list")
            choice = obj(choices[0], "response.body.choices[0]")
            message = obj(choice.get("message"), "response.body.choices[0].message")
            reason = choice.get("finish_reason")
            refusal = message.get("refusal")
            status = "refused" if refusal else finish_status(reason)
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            identity.output_text = refusal if refusal else (content if isinstance(content, str) else "")
        elif "output" in body:  # Responses API
            if not isinstance(body["output"], (list, type(None))):
                raise Rejected("response.body.output must be a list")
            identity.output_text, _, status = responses_output(body)
            details = body.get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, dict) else None
            if body.get("status") not in (None, "completed", "incomplete"):
                status = "error"  # failed, cancelled, or never finished (queued, in_progress)
        else:
            raise Rejected("response.body has neither choices nor output")
        extra.update(status=status, finish_reason=reason if isinstance(reason, str) else None)
        return identity, extra
