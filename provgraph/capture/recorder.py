"""Record each model call at the request boundary, in the canonical ``calls.jsonl`` format.

A benchmark author wraps the one line that sends a request::

    from provgraph.capture.recorder import Recorder

    recorder = Recorder("calls.jsonl", outputs="outputs")
    request = {"model": "gpt-4o", "messages": messages, "temperature": 0, "max_tokens": 512}
    response = recorder.call("C001", client.chat.completions.create, request)

The recorder hashes the request object that is actually sent (so the prompt is captured at
the request, never from a constant), sends it with ``send(**request)``, and appends one JSON
line per call: request and prompt hashes, prompt text, requested and resolved model, request
id, finish state, decoding settings, and the output's file, hash and size. The response is
returned unchanged; an exception is recorded as an ``error`` record and re-raised.

Each record is one ``write`` to a file opened for appending (so concurrent calls never
interleave inside a line) and is flushed to disk before the call returns; an output file is
written to a temporary name and renamed into place before its record is written, so a record
never names a half-written output. Responses may be OpenAI chat completions or Anthropic
messages, as SDK objects or as plain dicts.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from provgraph.evidence.identity import (
    canonical_json,
    decoding_settings,
    finish_status,
    prompt_from_messages,
    responses_output,
)

__all__ = ["Recorder"]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute or key ``name`` of an SDK object or a dict."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_response(response: Any) -> dict[str, Any]:
    """Resolved model, request id, finish reason, status and output text of a response."""
    choices = _get(response, "choices")
    if choices:  # OpenAI chat completion
        choice = choices[0]
        message = _get(choice, "message")
        reason = _get(choice, "finish_reason")
        refusal = _get(message, "refusal")
        content = _get(message, "content")
        if isinstance(content, list):
            content = "".join(str(_get(p, "text", "")) for p in content)
        text = refusal if refusal else (content or "")
        status = "refused" if refusal else finish_status(reason)
    elif _get(response, "stop_reason") is not None or _get(response, "content") is not None:  # Anthropic
        reason = _get(response, "stop_reason")
        blocks = _get(response, "content") or []
        text = "".join(str(_get(b, "text", "")) for b in blocks if _get(b, "type") == "text")
        status = finish_status(reason)
    elif _get(response, "output") is not None:  # OpenAI Responses API
        text, reason, status = responses_output(response)
    else:
        raise TypeError(f"cannot read a {type(response).__name__} response (no choices, content or output)")
    request_id = _get(response, "_request_id") or _get(response, "request_id") or _get(response, "id")
    return {
        "resolved_model": _get(response, "model"),
        "request_id": str(request_id) if request_id else None,
        "finish_reason": reason,
        "status": status,
        "text": text,
    }


def _request_prompt(body: Mapping[str, Any]) -> Any:
    """The prompt of a chat / messages body or of a Responses body (``input``, ``instructions``)."""
    if "messages" not in body and "input" in body:
        given = body["input"]
        messages = [{"role": "user", "content": given}] if isinstance(given, str) else given
        return prompt_from_messages(messages, body.get("instructions"))
    return prompt_from_messages(body.get("messages", []), body.get("system"))


class Recorder:
    """Appends one canonical call record per call to ``log``.

    :param log: the ``calls.jsonl`` file (created if absent, appended to otherwise).
    :param outputs: folder for response texts (``<call_id>.txt``); None keeps only their
        hash and size in the record.
    :param root: the bundle root that paths in records are relative to (default: the log's
        folder).
    """

    def __init__(self, log: str | Path, outputs: str | Path | None = None, root: str | Path | None = None):
        self.log = Path(log)
        self.root = Path(root) if root is not None else self.log.parent
        self.outputs = Path(outputs) if outputs is not None else None
        if self.outputs is not None and not self.outputs.is_absolute():
            self.outputs = self.root / self.outputs
        self._lock = threading.Lock()

    def call(
        self,
        call_id: str,
        send: Callable[..., Any],
        request: Mapping[str, Any],
        *,
        image: str | Path | None = None,
    ) -> Any:
        """Send ``request`` with ``send(**request)``, record the call, return the response.

        :param call_id: the plan's call id (a batch custom_id).
        :param image: the model-visible image file the request carries, hashed now.
        :raises: whatever ``send`` raises, after recording the call as ``error``.
        """
        record = self.begin(call_id, request, image=image)
        try:
            response = send(**dict(request))
        except Exception as err:
            self.fail(record, f"{type(err).__name__}: {err}")
            raise
        self.finish(record, response)
        return response

    def begin(
        self,
        call_id: str,
        body: Mapping[str, Any],
        *,
        image: str | Path | None = None,
        sent: bytes | None = None,
    ) -> dict[str, Any]:
        """The record of a request about to be sent (not yet written).

        :param body: the request object; with ``sent`` (the HTTP body bytes as they went out,
            which the SDK wrappers capture) the record is taken from those bytes instead, so a
            prompt rewritten anywhere between the harness and the wire is recorded as sent.
        """
        if not isinstance(call_id, str) or not call_id.strip():
            raise ValueError("call_id must be a non-empty string")
        if sent is not None:
            body = json.loads(sent)
        body = dict(body)
        record: dict[str, Any] = {"call_id": call_id, "status": "pending"}
        record["requested_model"] = body.get("model")
        prompt = _request_prompt(body)
        record["prompt"] = {"system": prompt.system, "user": prompt.user}
        record["prompt_sha256"] = prompt.sha256
        record["prompt_source"] = "request"
        # canonical JSON, as the batch importers hash a request line, so the two compare
        record["request_sha256"] = hashlib.sha256(canonical_json(body)).hexdigest()
        record["decoding"] = decoding_settings({k: v for k, v in body.items() if k != "instructions"})
        if image is not None:
            path = Path(image)
            record["image"] = self._rel(path)
            record["image_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif len(prompt.images) == 1:
            record["image_sha256"] = prompt.images[0]
        record["started_at"] = _now()
        return record

    def finish(self, record: dict[str, Any], response: Any, request_id: str | None = None) -> None:
        """Complete ``record`` from a response: write the output file, then append the record.

        :param request_id: the provider's request id when the response object lacks it (a
            header the caller saw); default: the response's own.
        """
        record["ended_at"] = _now()
        seen = read_response(response)
        if request_id:
            seen["request_id"] = request_id
        text = seen.pop("text")
        record.update({k: v for k, v in seen.items() if v is not None})
        data = text.encode("utf-8")
        record["output_sha256"] = hashlib.sha256(data).hexdigest()
        record["output_bytes"] = len(data)
        if self.outputs is not None:
            target = self.outputs / f"{record['call_id']}.txt"
            _write_atomic(target, data)
            record["output"] = self._rel(target)
        self._append(record)

    def fail(self, record: dict[str, Any], error: str, request_id: str | None = None) -> None:
        """Append ``record`` as an ``error`` attempt (an error, never an answer)."""
        record.update(status="error", error=error, ended_at=_now())
        if request_id:
            record["request_id"] = request_id
        self._append(record)

    def _rel(self, path: Path) -> str:
        path = path if path.is_absolute() else Path.cwd() / path
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def _append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                written = os.write(fd, line)
                if written != len(line):  # pragma: no cover - a full disk
                    raise OSError(f"short write to {self.log}: {written} of {len(line)} bytes")
                os.fsync(fd)
            finally:
                os.close(fd)


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
