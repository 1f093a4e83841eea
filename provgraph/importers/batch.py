"""What the provider batch importers share: one JSONL line per request or result, keyed by
``custom_id``, which by convention IS the plan's call id (``plan.csv`` ``call_id``).

A request line becomes a ``pg:BatchRequest`` (what was sent: prompt hash, requested model,
decoding settings); a result line becomes a ``pg:CallRecord`` that is also a
``pg:BatchResult`` (what came back: status, resolved model, output hash and size). Both point
at ``call/<custom_id>`` with ``pg:forCall``, so requests and results join on the call, and the
output clause's plan-versus-record rules apply to batch results unchanged. Nodes are minted
per source file and occurrence, so a custom_id sent or answered twice stays visible.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from provgraph.evidence.identity import Identity, write_identity
from provgraph.ingest.api import (
    CERTAIN,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Source,
    first_json_object,
    read_jsonl,
)

TERMINAL = {"ok", "error", "refused", "length", "canceled", "expired", "timeout", "parse_error"}
_SUFFIXES = (".jsonl", ".ndjson")
_SPACE = re.compile(r"\s+")


class Rejected(ValueError):
    """A line that cannot be used; its message becomes the import problem."""


class BatchImporter(Importer):
    """Base class: subclasses set ``kind``, ``signature`` and implement :meth:`read_line`."""

    handles = "file"
    suffixes = frozenset(_SUFFIXES)  # detect() claims no other file
    #: "request" or "result"
    kind: ClassVar[str]
    #: top-level keys the first line must have for detection
    signature: ClassVar[tuple[str, ...]]
    #: top-level keys a line may have (anything else is a problem: it may be another format)
    allowed: ClassVar[tuple[str, ...]]

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() not in _SUFFIXES:
            return NO
        first = first_json_object(path)
        if not first or not all(k in first for k in self.signature):
            return NO
        return CERTAIN if set(first) <= set(self.allowed) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        seen: dict[str, int] = {}
        for line, value, error in read_jsonl(source.path, source.rel):
            if error:
                ctx.problem(line, error)
                continue
            try:
                custom_id = _custom_id(value, self.allowed)
                identity, extra = self.read_line(value)
            except Rejected as err:
                ctx.problem(line, str(err))
                continue
            seen[custom_id] = seen.get(custom_id, 0) + 1
            kind = "request" if self.kind == "request" else "record"
            node = ctx.iri(kind, source.rel, custom_id, str(seen[custom_id]))
            self.write(ctx, node, custom_id, identity, extra, line)
            ctx.record()

    def read_line(self, value: dict[str, Any]) -> tuple[Identity, dict[str, Any]]:
        """Identity of one line and format-specific extras (status, request id ...)."""
        raise NotImplementedError

    def write(
        self,
        ctx: ImportContext,
        node: str,
        custom_id: str,
        identity: Identity,
        extra: dict[str, Any],
        line: int,
    ) -> None:
        add = ctx.add
        if self.kind == "request":
            add(node, RDF_TYPE, PG.BatchRequest)
        else:
            add(node, RDF_TYPE, PG.CallRecord)
            add(node, RDF_TYPE, PG.BatchResult)
            status = extra["status"]
            add(node, PG.status, status)
            add(node, PG.terminal, status in TERMINAL)
            add(node, PG.rawStatus, extra.get("raw_status"))
            add(node, PG.requestId, extra.get("request_id") or None)
            add(node, PG.finishReason, extra.get("finish_reason") or None)
            add(node, PG.inputTokens, extra.get("input_tokens"))
            add(node, PG.outputTokens, extra.get("output_tokens"))
        add(node, PG.customId, custom_id)
        add(node, PG.callId, custom_id)
        add(node, PG.forCall, ctx.iri("call", custom_id))
        write_identity(ctx, node, identity)
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)


def _custom_id(value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, dict):
        raise Rejected(f"expected a JSON object, got {type(value).__name__}")
    unknown = sorted(k for k in value if k not in allowed)
    if unknown:
        raise Rejected(f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")
    custom_id = value.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id.strip():
        raise Rejected("missing custom_id (it must be the plan's call id)")
    return custom_id


def obj(value: Any, where: str, required: bool = True) -> dict[str, Any]:
    """``value`` as a JSON object, or a :class:`Rejected` naming ``where``."""
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise Rejected(f"{where} must be an object, got {type(value).__name__}")
    return value


def text(value: Any, where: str, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Rejected(f"{where} must be a non-empty string")
    return value


def tokens(usage: Any, *keys: str) -> int | None:
    if not isinstance(usage, dict):
        return None
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def one_line(message: str) -> str:
    """A provider error message on one line (they sometimes hold newlines)."""
    return _SPACE.sub(" ", message).strip()
