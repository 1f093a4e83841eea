"""Anthropic Message Batches files: the requests sent and the results JSONL.

Request line: ``{"custom_id", "params": {"model", "max_tokens", "system", "messages", ...}}``;
the executed prompt hash is computed from ``system`` and the user messages' text.

Result line: ``{"custom_id", "result": {"type": "succeeded" | "errored" | "canceled" |
"expired", "message": {"id", "model", "stop_reason", "content", "usage"}, "error"}}``. Results
arrive in any order; each is joined to its request on ``custom_id``. ``errored``,
``canceled`` and ``expired`` keep their own status, and a succeeded message that stopped on
``max_tokens`` or ``refusal`` is ``length`` or ``refused``, never ``ok``.
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
    text_of_blocks,
)
from provgraph.importers.batch import BatchImporter, Rejected, obj, one_line, text, tokens

_TYPES = {"succeeded": "ok", "errored": "error", "canceled": "canceled", "expired": "expired"}


class AnthropicBatchRequestsImporter(BatchImporter):
    name = "anthropic-batch-requests"
    version = "2"
    description = "Anthropic Message Batches requests JSONL (custom_id, params)"
    kind = "request"
    signature = ("custom_id", "params")
    allowed = ("custom_id", "params")

    def read_line(self, value: dict[str, Any]) -> tuple[Identity, dict[str, Any]]:
        params = obj(value.get("params"), "params")
        model = text(params.get("model"), "params.model")
        try:
            prompt = prompt_from_messages(params.get("messages"), params.get("system"), grids=True)
        except ValueError as err:
            raise Rejected(f"params: {err}") from None
        identity = Identity(
            requested_model=model,
            prompt=prompt,
            capture="request",
            request_sha256=hashlib.sha256(canonical_json(params)).hexdigest(),
            decoding=decoding_settings(params),
        )
        return identity, {}


class AnthropicBatchResultsImporter(BatchImporter):
    name = "anthropic-batch-results"
    version = "1"
    description = "Anthropic Message Batches results JSONL (custom_id, result)"
    kind = "result"
    signature = ("custom_id", "result")
    allowed = ("custom_id", "result")

    def read_line(self, value: dict[str, Any]) -> tuple[Identity, dict[str, Any]]:
        result = obj(value.get("result"), "result")
        kind = result.get("type")
        if kind not in _TYPES:
            raise Rejected(f"result.type must be one of {', '.join(_TYPES)}, got {kind!r}")
        identity = Identity()
        extra: dict[str, Any] = {"status": _TYPES[kind], "raw_status": kind}
        if kind == "errored":
            error = obj(result.get("error"), "result.error", required=False)
            inner = error.get("error") if isinstance(error.get("error"), dict) else error
            identity.error = one_line(str(inner.get("message") or "errored"))
            identity.error_code = str(inner.get("type") or "") or None
        if kind != "succeeded":
            return identity, extra
        message = obj(result.get("message"), "result.message")
        identity.resolved_model = text(message.get("model"), "result.message.model")
        content = message.get("content")
        if not isinstance(content, list):
            raise Rejected("result.message.content must be a list of content blocks")
        identity.output_text = text_of_blocks(content)
        reason = message.get("stop_reason")
        extra.update(
            status=finish_status(reason),
            finish_reason=reason if isinstance(reason, str) else None,
            request_id=message.get("id"),
            input_tokens=tokens(message.get("usage"), "input_tokens"),
            output_tokens=tokens(message.get("usage"), "output_tokens"),
        )
        return identity, extra
