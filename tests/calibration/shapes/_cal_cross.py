"""Helpers of the cal-cross extensions (keyed analysis, extractor annotation): the canonical call
records (``calls.jsonl``, README "Prompt, model and output identity") a harness writes for the
calls whose outputs the analysed files came from, on a fixed clock."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from provgraph.evidence.identity import prompt_sha256


def clock(start: str, step_seconds: int = 7) -> Iterator[str]:
    """ISO 8601 UTC timestamps from ``start``, ``step_seconds`` apart (no wall clock)."""
    now = dt.datetime.fromisoformat(start)
    while True:
        yield now.strftime("%Y-%m-%dT%H:%M:%SZ")
        now += dt.timedelta(seconds=step_seconds)


def request_id(call_id: str, attempt: int) -> str:
    """A provider request id, derived from the call (OpenAI style ``chatcmpl-...``)."""
    return "chatcmpl-" + hashlib.sha256(f"{call_id}/{attempt}".encode()).hexdigest()[:24]


def record(
    root: Path,
    call_id: str,
    times: Iterator[str],
    *,
    prompt: dict[str, str],
    models: tuple[str, str],
    decoding: dict[str, Any],
    output: str | None = None,
    status: str = "ok",
    finish: str | None = "stop",
    attempt: int = 1,
    error: str | None = None,
    capture: str = "request",
) -> dict[str, Any]:
    """One canonical call record, as a recorder writes it at the request boundary.

    ``output`` is a bundle-relative file already written (its hash and size are taken from the
    bytes on disk); ``models`` is (requested, resolved); ``capture`` is where the harness took
    the logged prompt from (``request``: the bytes sent; ``config``, ``constant``...)."""
    started, ended = next(times), next(times)
    line: dict[str, Any] = {
        "call_id": call_id,
        "status": status,
        "request_id": request_id(call_id, attempt),
        "started_at": started,
        "ended_at": ended,
        "requested_model": models[0],
        "resolved_model": models[1],
        "prompt": prompt,
        "prompt_sha256": prompt_sha256(prompt["system"], prompt["user"]),
        "prompt_source": capture,
        "decoding": decoding,
    }
    if finish is not None:
        line["finish_reason"] = finish
    if output is not None:
        data = (root / output).read_bytes()
        line |= {
            "output": output,
            "output_sha256": hashlib.sha256(data).hexdigest(),
            "output_bytes": len(data),
        }
    if error is not None:
        line["error"] = error
    return line


def write_jsonl(root: Path, rel: str, lines: list[dict[str, Any]]) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
