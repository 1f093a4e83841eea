"""Canonical call records: ``calls.jsonl``, one JSON object per call attempt.

Fields: ``call_id`` and ``status`` (required); ``output`` (path relative to the bundle),
``request_id``, ``finish_reason``, ``started_at``, ``ended_at``, ``image`` (the model-visible
image file, relative to the bundle) and ``image_sha256`` (its hash as taken at the request)
(optional). Keys beginning
with ``x_`` and a ``meta`` object are free for the benchmark's own use; any other key is an
error, so a typo (``ouput``) cannot silently drop evidence.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from provgraph.bundle import Bundle
from provgraph.ingest import LIKELY, NO, ImportContext, Importer, Source
from provgraph.readers import first_json_object, read_jsonl
from provgraph.vocab import PG, RDF_TYPE

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
    "pending": "pending",
    "queued": "pending",
    "submitted": "pending",
    "running": "running",
    "in_progress": "running",
}
_SHA256 = re.compile(r"[0-9a-f]{64}")
TERMINAL = {"ok", "error", "refused", "length", "canceled", "expired", "timeout"}

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
}


def parse_time(text: str) -> dt.datetime:
    """ISO 8601 timestamp; ``Z`` is accepted for UTC."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


class CallsImporter(Importer):
    name = "calls"
    version = "1"
    description = "canonical call records JSONL (call_id, status, output, request_id, ...)"
    handles = "file"

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() not in (".jsonl", ".ndjson"):
            return NO
        first = first_json_object(path)
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
    digest = value.get("image_sha256")
    if digest is not None and not _SHA256.fullmatch(digest):
        return f"image_sha256 must be 64 lower-case hex digits, got {digest!r}"
    for key in ("started_at", "ended_at"):
        if value.get(key):
            try:
                parse_time(value[key])
            except ValueError:
                return f"{key} is not an ISO 8601 timestamp: {value[key]!r}"
    return None


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
    add(node, PG.sourceFile, ctx.source_iri)
    add(node, PG.sourceLine, line)
