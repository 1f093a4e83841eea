"""Canonical call records: ``calls.jsonl``, one JSON object per call attempt.

Fields: ``call_id`` and ``status`` (required); ``output`` (path relative to the bundle),
``request_id``, ``finish_reason``, ``started_at``, ``ended_at``, ``image`` (the model-visible
image file, relative to the bundle) and ``image_sha256`` (its hash as taken at the request)
(optional). Keys beginning
with ``x_`` and a ``meta`` object are free for the benchmark's own use; any other key is an
error, so a typo (``ouput``) cannot silently drop evidence.

Call identity (optional, written by :mod:`provgraph.capture.recorder`): ``requested_model`` and
``resolved_model`` (what the request named, what the response reports); ``prompt``
(``{"system": ..., "user": ...}`` text) or ``prompt_sha256`` (see :mod:`provgraph.evidence.identity`) with
``prompt_source``, where it was captured: ``request`` (the bytes sent), ``constant``,
``config``, ``summary`` or ``unknown`` (the default); ``request_sha256``; ``decoding``
(``{"temperature": 0, "max_tokens": 512, ...}``); ``output_sha256`` and ``output_bytes`` (the
response text's hash and size) and ``error`` (the provider's message for a failed call).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from provgraph.evidence.identity import CAPTURE_POINTS, Identity, Prompt, prompt_sha256, write_identity
from provgraph.ingest.api import (
    LIKELY,
    NO,
    PG,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Source,
    first_json_object,
    read_jsonl,
    sniff_text,
)

#: status as written (lower-cased) -> normalised status
STATUS = {
    "ok": "ok",
    "success": "ok",
    "succeeded": "ok",
    "completed": "ok",
    "done": "ok",
    "error": "error",
    "errored": "error",
    "failed": "error",
    "failure": "error",
    "refused": "refused",
    "refusal": "refused",
    "blocked": "refused",
    "length": "length",
    "max_tokens": "length",
    "truncated": "length",
    "canceled": "canceled",
    "cancelled": "canceled",
    "expired": "expired",
    "timeout": "timeout",
    "timed_out": "timeout",
    "parse_error": "parse_error",
    "unparsable": "parse_error",
    "pending": "pending",
    "queued": "pending",
    "submitted": "pending",
    "running": "running",
    "in_progress": "running",
}
_SHA256 = re.compile(r"[0-9a-f]{64}")
TERMINAL = {"ok", "error", "refused", "length", "canceled", "expired", "timeout", "parse_error"}

FIELDS: dict[str, type | tuple[type, ...]] = {
    "call_id": str,
    "status": str,
    "output": (str, type(None)),
    "request_id": (str, type(None)),
    "finish_reason": (str, type(None)),
    "started_at": (str, type(None)),
    "ended_at": (str, type(None)),
    "image": (str, type(None)),
    "image_sha256": (str, type(None)),
    "meta": (dict, type(None)),
    "requested_model": (str, type(None)),
    "resolved_model": (str, type(None)),
    "prompt": (dict, type(None)),
    "prompt_sha256": (str, type(None)),
    "prompt_source": (str, type(None)),
    "request_sha256": (str, type(None)),
    "decoding": (dict, type(None)),
    "output_sha256": (str, type(None)),
    "output_bytes": (int, type(None)),
    "error": (str, type(None)),
}
_PROMPT_KEYS = ("system", "user")


def parse_time(text: str) -> dt.datetime:
    """ISO 8601 timestamp; ``Z`` is accepted for UTC."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


class CallsImporter(Importer):
    name = "calls"
    version = "2"
    description = "canonical call records JSONL (call_id, status, output, request_id, ...)"
    handles = "file"
    suffixes = frozenset({".jsonl", ".ndjson"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() not in (".jsonl", ".ndjson"):
            return NO
        first = first_json_object(path)
        if first is None and path.stem.lower() == "calls" and not sniff_text(path, 4096).strip():
            return LIKELY  # an empty calls.jsonl is still call records: its "no records" is reported
        return LIKELY if first and "call_id" in first and "status" in first else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        occurrences: dict[str, int] = {}
        for line, value, error in read_jsonl(source.path, source.rel, ctx.advance):
            if error:
                ctx.problem(line, error)
                continue
            reason = check_record(value)
            if reason:
                ctx.problem(line, reason)
                continue
            call_id = value["call_id"]
            occurrences[call_id] = occurrences.get(call_id, 0) + 1
            write_record(ctx, value, line, occurrences[call_id])
            ctx.record()


def check_record(value: Any) -> str | None:
    """Why a call record is unusable, or None when it is fine."""
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    for key in ("call_id", "status"):
        if key not in value:
            return f"missing required key {key!r}"
    unknown = sorted(k for k in value if k not in FIELDS and not k.startswith("x_"))
    if unknown:
        return f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(FIELDS)}, x_*)"
    for key, kinds in FIELDS.items():
        if key in value and not isinstance(value[key], kinds):
            want = " or ".join(
                "null" if k is type(None) else k.__name__
                for k in (kinds if isinstance(kinds, tuple) else (kinds,))
            )
            return f"{key} must be {want}, got {type(value[key]).__name__}"
    if not value["call_id"].strip():
        return "empty call_id"
    if value["status"].strip().lower() not in STATUS:
        return f"unknown status {value['status']!r} (known: {', '.join(sorted(set(STATUS)))})"
    for key in ("image_sha256", "prompt_sha256", "request_sha256", "output_sha256"):
        digest = value.get(key)
        if digest is not None and not _SHA256.fullmatch(digest):
            return f"{key} must be 64 lower-case hex digits, got {digest!r}"
    reason = check_identity(value)
    if reason:
        return reason
    for key in ("started_at", "ended_at"):
        if value.get(key):
            try:
                parse_time(value[key])
            except ValueError:
                return f"{key} is not an ISO 8601 timestamp: {value[key]!r}"
    return None


def check_identity(value: dict[str, Any]) -> str | None:
    """Why the call-identity fields of a record are unusable, or None."""
    prompt = value.get("prompt")
    if prompt is not None:
        extra = sorted(k for k in prompt if k not in _PROMPT_KEYS)
        if extra:
            return f"prompt has unknown key(s) {', '.join(extra)} (allowed: system, user)"
        for key in _PROMPT_KEYS:
            if not isinstance(prompt.get(key), (str, type(None))):
                return f"prompt.{key} must be str or null, got {type(prompt[key]).__name__}"
        given = value.get("prompt_sha256")
        if given and given != prompt_sha256(prompt.get("system"), prompt.get("user")):
            return "prompt_sha256 does not match the prompt text recorded with it"
    source = value.get("prompt_source")
    if source is not None and source not in CAPTURE_POINTS:
        return f"prompt_source must be one of {', '.join(CAPTURE_POINTS)}, got {source!r}"
    if source is not None and prompt is None and not value.get("prompt_sha256"):
        return "prompt_source given without prompt or prompt_sha256"
    size = value.get("output_bytes")
    if size is not None and size < 0:
        return f"output_bytes must not be negative, got {size}"
    decoding = value.get("decoding") or {}
    for key, setting in decoding.items():
        if not isinstance(setting, (str, int, float, bool, type(None))):
            return f"decoding.{key} must be a number, string, boolean or null"
    return None


def identity_of(value: dict[str, Any]) -> Identity:
    prompt = value.get("prompt")
    return Identity(
        requested_model=value.get("requested_model") or None,
        resolved_model=value.get("resolved_model") or None,
        prompt=Prompt(prompt.get("system"), prompt.get("user")) if prompt is not None else None,
        prompt_sha256=value.get("prompt_sha256"),
        capture=value.get("prompt_source"),
        request_sha256=value.get("request_sha256"),
        decoding=value.get("decoding") or None,
        output_sha256=value.get("output_sha256"),
        output_bytes=value.get("output_bytes"),
        error=value.get("error") or None,
    )


def write_record(ctx: ImportContext, value: dict[str, Any], line: int, occurrence: int) -> None:
    add = ctx.add
    call_id = value["call_id"]
    raw = value["status"]
    status = STATUS[raw.strip().lower()]
    node = ctx.iri("record", ctx.source.rel, call_id, str(occurrence))
    add(node, RDF_TYPE, PG.CallRecord)
    add(node, PG.forCall, ctx.iri("call", call_id))
    add(node, PG.callId, call_id)
    add(node, PG.status, status)
    if raw != status:
        add(node, PG.rawStatus, raw)
    add(node, PG.terminal, status in TERMINAL)
    output = value.get("output")
    if output:
        add(node, PG.outputPath, output)
        rel = ctx.bundle_rel(output)
        # A path outside the bundle gets a node no file inventory can ever describe.
        add(node, PG.outputFile, ctx.file_iri(rel) if rel else ctx.iri("external", output))
    image = value.get("image")
    if image:
        rel = ctx.bundle_rel(image)
        add(node, PG.inputImage, ctx.file_iri(rel) if rel else ctx.iri("external", image))
    add(node, PG.imageSha256, value.get("image_sha256"))
    add(node, PG.requestId, value.get("request_id") or None)
    add(node, PG.finishReason, value.get("finish_reason") or None)
    if value.get("started_at"):
        add(node, PG.startedAt, parse_time(value["started_at"]))
    if value.get("ended_at"):
        add(node, PG.endedAt, parse_time(value["ended_at"]))
    write_identity(ctx, node, identity_of(value))
    add(node, PG.sourceFile, ctx.source_iri)
    add(node, PG.sourceLine, line)
