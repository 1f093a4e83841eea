"""Canonical build records: ``*.build.json`` (one record or a list) or ``*.build.jsonl``.

A record says which script with which parameters turned which inputs into an output::

    {"output": {"path": "figures/fig2.png", "sha256": "..."},
     "inputs": [{"path": "results/stats.csv", "sha256": "..."}],
     "script": {"path": "scripts/fig2.py", "sha256": "..."},
     "parameters": {"dpi": 300}, "time": "2026-07-28T10:00:00Z",
     "command": "python scripts/fig2.py"}

``outputs`` (a list) may stand for ``output``; ``command`` is optional. Paths are relative to
the bundle root. Unknown keys are errors, so a typo cannot drop evidence.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from provgraph.evidence.buildnodes import Recorded, write_build
from provgraph.ingest.api import (
    CERTAIN,
    LIKELY,
    NO,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    RecordError,
    Source,
    document_bytes,
    first_json_object,
    loads_checked,
    lone_surrogate,
    read_jsonl,
)

_SHA = re.compile(r"^[0-9a-f]{64}$")
KEYS = {"output", "outputs", "inputs", "script", "parameters", "time", "command"}


def _file(value: Any, what: str) -> Recorded | str:
    if not isinstance(value, dict) or set(value) - {"path", "sha256", "size"}:
        return f"{what} must be an object with path and sha256"
    path, digest = value.get("path"), value.get("sha256")
    if not isinstance(path, str) or not path:
        return f"{what}: path must be a non-empty string"
    if not isinstance(digest, str) or not _SHA.match(digest):
        return f"{what} {path}: sha256 must be 64 lower-case hex digits, got {digest!r}"
    size = value.get("size")
    return Recorded(path, digest, None, size if isinstance(size, int) else None)


def parse_record(value: Any) -> tuple[dict[str, Any], None] | tuple[None, str]:
    """The record's parts, or why it is unusable."""
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    unknown = sorted(set(value) - KEYS)
    if unknown:
        return None, f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(KEYS))})"
    raw_outputs = value.get("outputs") if "outputs" in value else [value.get("output")]
    if not isinstance(raw_outputs, list) or not raw_outputs or raw_outputs == [None]:
        return None, "missing output (or outputs)"
    parts: dict[str, Any] = {"outputs": [], "inputs": []}
    for i, item in enumerate(raw_outputs):
        rec = _file(item, "output" if len(raw_outputs) == 1 else f"outputs[{i}]")
        if isinstance(rec, str):
            return None, rec
        parts["outputs"].append(rec)
    if not isinstance(value.get("inputs"), list):
        return None, "inputs must be a list of {path, sha256}"
    for i, item in enumerate(value["inputs"]):
        rec = _file(item, f"inputs[{i}]")
        if isinstance(rec, str):
            return None, rec
        parts["inputs"].append(rec)
    script = _file(value.get("script"), "script")
    if isinstance(script, str):
        return None, script
    parts["script"] = script
    parts["parameters"] = value.get("parameters")
    time = value.get("time")
    if not isinstance(time, str):
        return None, "time must be an ISO 8601 timestamp"
    try:
        parts["time"] = dt.datetime.fromisoformat(time.replace("Z", "+00:00"))
    except ValueError:
        return None, f"time is not an ISO 8601 timestamp: {time!r}"
    command = value.get("command")
    if command is not None and not isinstance(command, str):
        return None, "command must be a string"
    parts["command"] = command
    return parts, None


class BuildRecordImporter(Importer):
    name = "buildrecord"
    version = "1"
    description = (
        "canonical build records (*.build.json, *.build.jsonl): output, inputs, script with sha256, "
        "parameters, time"
    )
    handles = "file"
    suffixes = frozenset({".json", ".jsonl"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        lower = path.name.lower()
        if lower.endswith((".build.json", ".build.jsonl")):
            return CERTAIN
        if lower.endswith(".jsonl"):
            first = first_json_object(path)
            if (
                first
                and "inputs" in first
                and "script" in first
                and ("output" in first or "outputs" in first)
            ):
                return LIKELY
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        if source.rel.lower().endswith(".json"):
            try:
                text = document_bytes(source.path, source.rel).decode("utf-8-sig")
                value = loads_checked(text, surrogates=False) if text.strip() else []
            except (UnicodeDecodeError, json.JSONDecodeError, RecordError) as err:
                raise InputError(source.rel, f"not a JSON build record: {err}") from err
            records = value if isinstance(value, list) else [value]
            rows = [(i + 1 if len(records) > 1 else 1, r, lone_surrogate(r)) for i, r in enumerate(records)]
            if not rows:
                rows = [(None, None, "no records")]
        else:
            rows = list(read_jsonl(source.path, source.rel))
        for line, value, error in rows:
            if error:
                ctx.problem(line, error)
                continue
            parts, reason = parse_record(value)
            if parts is None:
                ctx.problem(line, reason)
                continue
            key = parts["outputs"][0].path
            write_build(
                ctx,
                key,
                line,
                "",
                parts["inputs"],
                parts["outputs"],
                parts["script"],
                parts["command"],
                parts["parameters"],
                parts["time"],
            )
            ctx.record()
