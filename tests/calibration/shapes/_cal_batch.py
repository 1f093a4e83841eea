"""Shared writers of the provider-batch calibration shapes (cal-batch): PNG bytes, JSONL and CSV
files, and the documented line shapes of the OpenAI Batch API and Anthropic Message Batches.

Every value is derived from its inputs (no clock, no randomness beyond seeded ``random.Random``),
so a bundle is byte-identical on every run.

Line shapes:

- OpenAI Batch (https://platform.openai.com/docs/guides/batch and the API reference's
  "The request input object" / "The request output object"): input ``{"custom_id", "method",
  "url", "body"}``; output ``{"id", "custom_id", "response": {"status_code", "request_id",
  "body"}, "error": null}``; error-file lines either ``"response": null, "error": {"code",
  "message"}`` (``batch_expired``, ``batch_cancelled``, ``request_timeout``) or a non-200
  ``response`` whose body is the API's ``{"error": {"message", "type", "param", "code"}}``.
- Anthropic Message Batches (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing,
  API reference "Retrieve Message Batch results"): result ``{"custom_id", "result": {"type":
  "succeeded", "message": {...}}}``, ``errored`` with ``error`` (an error response
  ``{"type": "error", "error": {"type", "message"}}``), ``canceled``, ``expired``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import random
import struct
import zlib
from pathlib import Path
from typing import Any

from provgraph.rdf.terms import escape_key

#: A fixed creation time for every response body (2024-09-02T10:00:00Z): no clock is read.
CREATED = 1725271200


def digest(*parts: object, n: int = 24) -> str:
    """A deterministic hex id from ``parts`` (request ids, message ids)."""
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:n]


def radiograph(seed: int, size: int = 24) -> list[list[int]]:
    """A small 8-bit greyscale 'chest film': dark background, two bright lung fields, noise."""
    rng = random.Random(seed)
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            lung = (abs(x - size // 3) < size // 6 or abs(x - 2 * size // 3) < size // 6) and y > size // 5
            base = 180 if lung else 40
            row.append(max(0, min(255, base + rng.randint(-25, 25))))
        rows.append(row)
    return rows


def png_bytes(pixels: list[list[int]]) -> bytes:
    """An 8-bit greyscale PNG (IHDR, one IDAT, IEND), written without an imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def record_focus(source_rel: str, custom_id: str, occurrence: int = 1) -> str:
    """The node a batch importer mints for a result line (relative to base_iri)."""
    return f"record/{escape_key(source_rel)}/{escape_key(custom_id)}/{occurrence}"


def call_id(condition: str, case: str, replicate: int = 1) -> str:
    """The plan's call id, which every batch request carries as its custom_id."""
    return f"{condition}--{case}--{replicate}"


# --- OpenAI Batch API -------------------------------------------------------------------------


def openai_request(custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def openai_answer(
    custom_id: str,
    batch: str,
    model: str,
    text: str | None,
    finish: str = "stop",
    usage: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """An output-file line: a 200 response whose body is a chat.completion object."""
    prompt_tokens, completion_tokens = usage
    body = {
        "id": "chatcmpl-" + digest(batch, custom_id, "completion"),
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": "fp_" + digest(model, n=10),
    }
    response = {"status_code": 200, "request_id": digest(batch, custom_id, "req", n=32), "body": body}
    return {
        "id": "batch_req_" + digest(batch, custom_id),
        "custom_id": custom_id,
        "response": response,
        "error": None,
    }


def openai_failed(custom_id: str, batch: str, code: str, message: str) -> dict[str, Any]:
    """An error-file line for a request that never got a response (expired, cancelled, timeout)."""
    return {
        "id": "batch_req_" + digest(batch, custom_id),
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def openai_http_error(custom_id: str, batch: str, status: int, kind: str, message: str) -> dict[str, Any]:
    """An error-file line for a request the API answered with a non-200 status."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    response = {"status_code": status, "request_id": digest(batch, custom_id, "req", n=32), "body": body}
    return {
        "id": "batch_req_" + digest(batch, custom_id),
        "custom_id": custom_id,
        "response": response,
        "error": None,
    }


# --- Anthropic Message Batches ----------------------------------------------------------------


def anthropic_succeeded(
    custom_id: str, batch: str, model: str, text: str, stop: str = "end_turn", usage: tuple[int, int] = (0, 0)
) -> dict[str, Any]:
    message = {
        "id": "msg_" + digest(batch, custom_id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }
    return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}


def anthropic_errored(custom_id: str, kind: str, message: str) -> dict[str, Any]:
    error = {"type": "error", "error": {"type": kind, "message": message}}
    return {"custom_id": custom_id, "result": {"type": "errored", "error": error}}


def anthropic_ended(custom_id: str, kind: str) -> dict[str, Any]:
    """A ``canceled`` or ``expired`` result (no message, no error)."""
    return {"custom_id": custom_id, "result": {"type": kind}}
