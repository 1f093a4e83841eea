"""Identity of an LLM call: prompt hashes, model families, decoding settings, finish states.

One definition shared by every importer of call records (canonical, OpenAI Batch, Anthropic
Message Batches, reviewer results) and by the recorder (:mod:`provgraph.capture.recorder`), so that a
prompt hashed at the request boundary by the recorder equals the hash an importer computes
from a batch input file holding the same request.

The executed prompt of a call is its system text and its user text; its hash is the SHA-256
of their canonical JSON (keys sorted, no whitespace, UTF-8)::

    >>> prompt_sha256("You review code.", "Is this sound?")[:16]
    '9b8b031a6e05f6df'
    >>> canonical_json({"user": "u", "system": None})
    b'{"system":null,"user":"u"}'

Text parts of one role are joined with a newline; images are not prompt text (their bytes
are hashed separately; importers that ask for it also keep each inline image's pixel grid,
see :mod:`provgraph.evidence.pixels`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from provgraph.evidence.pixels import grid_hex, grid_of_bytes
from provgraph.rdf.vocab import PG, RDF_TYPE

#: Where a recorded prompt was taken from. Only "request" is evidence of what was sent.
CAPTURE_POINTS = ("request", "constant", "config", "summary", "unknown")

#: Decoding settings with their own graph property (everything is also kept as JSON).
DECODING_KEYS = ("temperature", "top_p", "max_tokens", "seed")
_DECODING_ALIASES = {"max_completion_tokens": "max_tokens", "max_output_tokens": "max_tokens"}
_NOT_DECODING = {"model", "messages", "system", "input", "tools", "tool_choice", "metadata", "stream"}

# A snapshot stamp: a date (2024-08-06, 20241022) or an OpenAI month-day suffix (-0613).
_DATE = re.compile(r"(?:[-_@](?:19|20)\d{2}-?\d{2}-?\d{2}|-[01]\d[0-3]\d)$")
_PINNED = re.compile(r"(?:19|20)\d{2}-?\d{2}-?\d{2}|-[01]\d[0-3]\d$")
_LATEST = re.compile(r"[-_@]latest$")
# A Hugging Face commit pinned after the repository id (``org/model@<sha>``, as lm-eval importers write it).
_REVISION = re.compile(r"@[0-9a-f]{7,40}$")


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no whitespace, UTF-8 (not ASCII-escaped)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@functools.lru_cache(maxsize=1024)  # system prompts repeat on every call of a condition
def _cached_sha256_text(text: str) -> str:
    return sha256_text(text)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def prompt_sha256(system: str | None, user: str | None) -> str:
    """The executed-prompt hash: SHA-256 of canonical JSON ``{"system": ..., "user": ...}``."""
    return hashlib.sha256(canonical_json({"system": system, "user": user})).hexdigest()


def declared_text(raw: bytes) -> str:
    """A prompt file's text as declared: UTF-8 with one trailing newline (LF or CRLF) removed."""
    text = raw.decode("utf-8")
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


@functools.lru_cache(maxsize=4096)  # a run names a handful of models, on every record
def model_family(model: str) -> str:
    """A model identifier without provider prefix, snapshot date or ``-latest``.

    >>> model_family("gpt-4o-2024-08-06"), model_family("openai/gpt-4o")
    ('gpt-4o', 'gpt-4o')
    >>> model_family("claude-3-5-sonnet-20241022"), model_family("claude-3-5-sonnet-latest")
    ('claude-3-5-sonnet', 'claude-3-5-sonnet')
    >>> model_family("gpt-4o-mini-2024-07-18"), model_family("gpt-4-0613")
    ('gpt-4o-mini', 'gpt-4')
    >>> model_family("EleutherAI/pythia-160m@50f5173d932e8e61f858120bcb800b97af589f46")
    'pythia-160m'
    """
    name = _REVISION.sub("", model.strip().lower()).rsplit("/", 1)[-1]
    name = _LATEST.sub("", name)
    return _DATE.sub("", name)


def is_pinned(model: str) -> bool:
    """Whether an identifier names a dated snapshot (a guess the contract can override).

    >>> is_pinned("gpt-4o-2024-08-06"), is_pinned("gpt-4o"), is_pinned("claude-3-5-sonnet-latest")
    (True, False, False)
    >>> is_pinned("EleutherAI/pythia-160m@50f5173d932e8e61f858120bcb800b97af589f46")
    True
    """
    if _REVISION.search(model.strip().lower()):
        return True
    return bool(_PINNED.search(model)) and not _LATEST.search(model)


@dataclass
class Prompt:
    """The prompt text of one request, split by role, and the images it carried."""

    system: str | None
    user: str | None
    images: list[str] = field(default_factory=list)  # sha256 of each decodable inline image
    image_refs: list[str] = field(default_factory=list)  # images sent by URL (not hashable here)
    #: sha256 -> pixel grid of each decodable inline image, when the reader asked for grids
    grids: dict[str, bytes] | None = None

    def add_image(self, data: bytes) -> None:
        digest = hashlib.sha256(data).hexdigest()
        self.images.append(digest)
        if self.grids is not None and digest not in self.grids:
            grid = grid_of_bytes(data)
            if grid is not None:
                self.grids[digest] = grid

    @property
    def sha256(self) -> str:
        return prompt_sha256(self.system, self.user)

    @property
    def system_sha256(self) -> str | None:
        return _cached_sha256_text(self.system) if self.system is not None else None

    @property
    def user_sha256(self) -> str | None:
        return sha256_text(self.user) if self.user is not None else None


def _join(parts: list[str]) -> str | None:
    return "\n".join(parts) if parts else None


def _data_url_bytes(url: str) -> bytes | None:
    if not url.startswith("data:") or ";base64," not in url:
        return None
    try:
        return base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        return None


def _content_parts(content: Any, prompt: Prompt) -> list[str]:
    """Text parts of an OpenAI or Anthropic message content; images go to ``prompt``."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise ValueError(f"message content must be a string or a list, got {type(content).__name__}")
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, Mapping):
            raise ValueError(f"content part must be an object, got {type(part).__name__}")
        kind = part.get("type")
        if kind in ("text", "input_text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise ValueError(f"{kind} part has no text string")
            texts.append(text)
        elif kind in ("image_url", "input_image"):
            # Chat Completions: {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}};
            # Responses API: {"type": "input_image", "image_url": "data:...", "detail": ...} or a file_id
            ref = part.get("image_url") if part.get("image_url") is not None else part.get("file_id")
            url = ref.get("url") if isinstance(ref, Mapping) else ref
            if isinstance(url, str):
                data = _data_url_bytes(url)
                (prompt.add_image(data) if data is not None else prompt.image_refs.append(url[:200]))
        elif kind == "image":  # Anthropic: {"source": {"type": "base64", "data": "..."}}
            source = part.get("source")
            if isinstance(source, Mapping) and source.get("type") == "base64":
                try:
                    data = base64.b64decode(str(source.get("data", "")), validate=True)
                except (binascii.Error, ValueError):
                    raise ValueError("image part has data that is not base64") from None
                prompt.add_image(data)
            elif isinstance(source, Mapping) and isinstance(source.get("url"), str):
                prompt.image_refs.append(source["url"][:200])
    return texts


def prompt_from_messages(messages: Any, system: Any = None, grids: bool = False) -> Prompt:
    """The prompt of a chat request: OpenAI ``messages`` (system/developer roles inside) or
    Anthropic ``system`` + ``messages``. Assistant turns are not part of the prompt hash.
    ``grids``: also decode each inline image to its pixel grid (``Prompt.grids``), which
    :func:`write_identity` writes for the pixel clause.

    Raises ValueError when the messages are not of either shape.
    """
    if not isinstance(messages, list):
        raise ValueError(f"messages must be a list, got {type(messages).__name__}")
    prompt = Prompt(None, None, grids={} if grids else None)
    system_parts = _content_parts(system, prompt) if system is not None else []
    user_parts: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError(f"messages[{i}] must be an object with a role")
        role = message["role"]
        if role in ("system", "developer"):
            system_parts += _content_parts(message.get("content"), prompt)
        elif role == "user":
            user_parts += _content_parts(message.get("content"), prompt)
    prompt.system = _join(system_parts)
    prompt.user = _join(user_parts)
    return prompt


def decoding_settings(body: Mapping[str, Any]) -> dict[str, Any]:
    """Decoding settings of a request body: every scalar key that is not content or routing."""
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key in _NOT_DECODING or isinstance(value, (dict, list)):
            continue
        out[_DECODING_ALIASES.get(key, key)] = value
    return out


#: OpenAI chat ``finish_reason`` / Anthropic ``stop_reason`` -> normalised status.
FINISH_STATUS = {
    "stop": "ok",
    "tool_calls": "ok",
    "function_call": "ok",
    "end_turn": "ok",
    "stop_sequence": "ok",
    "tool_use": "ok",
    "pause_turn": "ok",
    "length": "length",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filter": "refused",
    "refusal": "refused",
}


def finish_status(reason: str | None) -> str:
    """Status a finish/stop reason implies (``ok`` when the provider gave none)."""
    return FINISH_STATUS.get((reason or "").lower(), "ok")


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """Key ``name`` of a dict, or attribute of an SDK object."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def responses_output(response: Any) -> tuple[str, str | None, str]:
    """Text, finish reason and status of an OpenAI Responses API object (a dict or an SDK
    object): ``output`` message items with ``output_text`` / ``refusal`` parts, ``status`` and
    ``incomplete_details.reason`` (https://platform.openai.com/docs/api-reference/responses/object).

    A refusal is a content part ``{"type": "refusal", "refusal": "..."}`` in a *completed*
    response, so it is read from the part, not from ``incomplete_details``.

    >>> responses_output({"status": "completed", "output": [{"type": "message", "content": [
    ...     {"type": "refusal", "refusal": "I can't help with that."}]}]})
    ("I can't help with that.", 'completed', 'refused')
    """
    texts: list[str] = []
    refused = False
    for item in _field(response, "output") or []:
        for part in _field(item, "content") or []:
            kind = _field(part, "type")
            if kind == "output_text":
                texts.append(str(_field(part, "text", "") or ""))
            elif kind == "refusal":
                refused = True
                texts.append(str(_field(part, "refusal", "") or ""))
    reason = _field(_field(response, "incomplete_details"), "reason")
    state = _field(response, "status")
    if refused:
        status = "refused"
    elif state in ("failed", "cancelled"):
        status = "error" if state == "failed" else "canceled"
    elif reason:
        status = "length" if reason == "max_output_tokens" else "refused"
    else:
        status = "ok"
    return "".join(texts), reason or state, status


@dataclass
class Identity:
    """What an importer knows about one call, emitted by :func:`write_identity`."""

    requested_model: str | None = None
    resolved_model: str | None = None
    prompt: Prompt | None = None
    prompt_sha256: str | None = None  # when only the hash is known
    capture: str | None = None
    request_sha256: str | None = None
    decoding: dict[str, Any] | None = None
    output_text: str | None = None
    output_sha256: str | None = None
    output_bytes: int | None = None
    error: str | None = None
    error_code: str | None = None


def write_identity(ctx: Any, node: str, ident: Identity) -> None:
    """Emit the identity triples of one call on ``node`` (a record, request or review)."""

    add = ctx.add
    if ident.requested_model:
        add(node, PG.requestedModel, ident.requested_model)
        add(node, PG.requestedFamily, model_family(ident.requested_model))
    if ident.resolved_model:
        add(node, PG.resolvedModel, ident.resolved_model)
        add(node, PG.resolvedFamily, model_family(ident.resolved_model))
    prompt = ident.prompt
    if prompt is not None:
        add(node, PG.promptSha256, prompt.sha256)
        add(node, PG.systemPromptSha256, prompt.system_sha256)
        add(node, PG.userPromptSha256, prompt.user_sha256)
        for digest in prompt.images:
            add(node, PG.imageSha256, digest)
        for digest, grid in sorted((prompt.grids or {}).items()):
            image = ctx.iri("image", digest)  # one node per image bytes, whichever request sent them
            add(image, RDF_TYPE, PG.ImageBytes)
            add(image, PG.gridOfSha256, digest)
            add(image, PG.pixelGrid, grid_hex(grid))
    elif ident.prompt_sha256:
        add(node, PG.promptSha256, ident.prompt_sha256)
    if prompt is not None or ident.prompt_sha256:
        add(node, PG.promptCapture, ident.capture or "unknown")
    add(node, PG.requestSha256, ident.request_sha256)
    if ident.decoding:
        add(node, PG.decodingJson, canonical_json(ident.decoding).decode("utf-8"))
        for key, prop in (("temperature", PG.temperature), ("top_p", PG.topP)):
            value = ident.decoding.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                add(node, prop, float(value))
        for key, prop in (("max_tokens", PG.maxTokens), ("seed", PG.seed)):
            value = ident.decoding.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                add(node, prop, value)
    if ident.output_text is not None:
        data = ident.output_text.encode("utf-8", errors="surrogatepass")
        add(node, PG.outputSha256, hashlib.sha256(data).hexdigest())
        add(node, PG.outputByteSize, len(data))
    else:
        add(node, PG.outputSha256, ident.output_sha256)
        add(node, PG.outputByteSize, ident.output_bytes)
    add(node, PG.errorMessage, ident.error)
    add(node, PG.errorCode, ident.error_code)


def text_of_blocks(blocks: Iterable[Any]) -> str:
    """Concatenated text of Anthropic content blocks (``[{"type": "text", "text": ...}]``)."""
    return "".join(
        b["text"] for b in blocks if isinstance(b, Mapping) and b.get("type") == "text" and "text" in b
    )
