"""``[[ingest.records]]``: files of a harness provgraph has no importer for, read as canonical
call records by declaration (the ``records`` importer reads them; see README "Declared records").

```toml
[[ingest.records]]
glob = "results/*.json"               # the files (fnmatch, like [ingest].exclude)
format = "json"                       # jsonl, json or csv (default: from the glob's suffix)
records = "$.results.results[*]"      # json only: where the records are
where = { type = "sampling" }         # optional: only records whose fields hold these values
[ingest.records.fields]               # target = field path, template, or a table
call_id = "{promptIdx}--{testIdx}"    # a template: {field path} placeholders
prompt.user = "prompt.raw"            # a field path: dotted, indexed (messages[0].content)
status = { path = "failureReason", map = { "0" = "ok", "1" = "ok", "2" = "error" } }
error = { path = "error", optional = true }   # absent on some records: not a bad record
[ingest.records.constants]
prompt_source = "request"
```

Targets are the fields of a canonical call record (:mod:`provgraph.importers.calls`, which this
module cannot import: ``tests/test_records_importer.py`` holds the two lists equal): every
leaf field, ``prompt.system``/``prompt.user``, ``decoding.<setting>``, ``meta.<key>`` and
``x_<name>``. This module is a part of the ``[ingest]`` section (it has no ``NAME`` of its
own): its schema is the items of ``ingest.records`` and its check runs from ``ingest.check``.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from provgraph.evidence.recordmap import (
    MISSING,
    FieldSpec,
    MappingError,
    is_template,
    parse_path,
    parse_template,
)

#: The leaf fields of a canonical call record (``provgraph.importers.calls.FIELDS`` minus the
#: containers, plus ``output_text``) and what a mapped value must be.
LEAVES: dict[str, str] = {
    "call_id": "str",
    "status": "str",
    "output": "str",
    "request_id": "str",
    "finish_reason": "str",
    "started_at": "str",
    "ended_at": "str",
    "image": "str",
    "image_sha256": "str",
    "requested_model": "str",
    "resolved_model": "str",
    "prompt_sha256": "str",
    "prompt_source": "str",
    "request_sha256": "str",
    "output_sha256": "str",
    "output_bytes": "int",
    "error": "str",
    # not a field of calls.jsonl: the response text itself, kept inline by most harnesses;
    # recorded as output_sha256 and output_bytes (the text is not stored)
    "output_text": "str",
}
#: Targets that are objects: ``prompt`` has two keys, the others any.
CONTAINERS = {"prompt": ("system", "user"), "decoding": None, "meta": None}
#: What each target is, for the reference (``provgraph contract ingest``).
MEANING: dict[str, str] = {
    "call_id": "The call's id, as the plan names it (required).",
    "status": "The call's final state: ok, error, refused, length, ... (required).",
    "output": "The response file, relative to the bundle.",
    "request_id": "The provider's request id.",
    "finish_reason": "The provider's finish reason as reported (stop, length, ...).",
    "started_at": "When the request was sent (ISO 8601).",
    "ended_at": "When the response ended (ISO 8601).",
    "image": "The model-visible image file, relative to the bundle.",
    "image_sha256": "The image's SHA-256 as taken at the request.",
    "requested_model": "The model identifier the request named.",
    "resolved_model": "The model the response reports (the snapshot).",
    "prompt_sha256": "SHA-256 of the prompt sent, when the text is not recorded.",
    "prompt_source": "Where the prompt was captured: request, constant, config, summary or unknown.",
    "request_sha256": "SHA-256 of the request body as sent.",
    "output_sha256": "SHA-256 of the response text.",
    "output_bytes": "Size of the response text in bytes.",
    "error": "The provider's message for a failed call.",
    "output_text": "The response text itself (recorded as output_sha256 and output_bytes, not stored).",
    "prompt": "The prompt text sent: system and user.",
    "prompt.system": "The system prompt text as sent.",
    "prompt.user": "The user prompt text as sent.",
    "decoding": "Decoding settings by name (temperature, top_p, max_tokens, seed, ...).",
    "meta": "Free keys for the benchmark's own use.",
    "x_": "Free x_<name> fields for the benchmark's own use.",
}
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}
_X = r"^x_[A-Za-z0-9_]+$"

_SPEC: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "A field path."},
                "template": {"type": "string", "minLength": 1, "description": "Text with {path}s."},
                "map": {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                    "description": "Value as written -> value recorded (e.g. stop -> ok).",
                },
                "optional": {"type": "boolean", "description": "An absent field is no error."},
            },
            "additionalProperties": False,
        },
    ],
    "description": "A field path (request.messages[0].content), a template ({task}--{doc_id}), "
    "or a table with path or template, map and optional.",
}
_SCALAR = {"type": ["string", "number", "boolean"]}


def _targets(value: dict[str, Any], open_value: dict[str, Any]) -> dict[str, Any]:
    """The schema of ``fields`` (value = a spec) or ``constants`` (value = a scalar)."""
    props: dict[str, Any] = {name: {**value, "description": MEANING[name]} for name in LEAVES}
    props["prompt"] = {
        "type": "object",
        "properties": {p: {**value, "description": MEANING[f"prompt.{p}"]} for p in ("system", "user")},
        "additionalProperties": False,
        "description": MEANING["prompt"],
    }
    props["decoding"] = {"type": "object", "additionalProperties": value, "description": MEANING["decoding"]}
    props["meta"] = {"type": "object", "additionalProperties": open_value, "description": MEANING["meta"]}
    return {
        "type": "object",
        "properties": props,
        "patternProperties": {_X: {**open_value, "description": MEANING["x_"]}},
        "additionalProperties": False,
    }


ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "glob": {"type": "string", "minLength": 1, "description": "The files, relative to the bundle."},
        "format": {
            "enum": sorted(set(FORMATS.values())),
            "description": "How the files are read (default: from the glob's suffix).",
        },
        "records": {"type": "string", "minLength": 1, "description": "json: where the records are."},
        "where": {
            "type": "object",
            "additionalProperties": _SCALAR,
            "description": "Field path -> value: only matching records are read (others are skipped).",
        },
        "fields": {
            **_targets(_SPEC, _SPEC),
            "description": "Target -> where each record holds it: a field path, a template or a table "
            "with path or template, map and optional.",
        },
        "constants": {
            **_targets(_SCALAR, {}),
            "description": "Target -> one value every record of these files gets.",
        },
    },
    "required": ["glob"],
    "additionalProperties": False,
}
SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": ENTRY_SCHEMA,
    "default": [],
    "description": "Files read as canonical call records by declared field paths.",
}


def claiming(entries: list[dict[str, Any]], rel: str) -> list[int]:
    """Indexes of the entries whose glob matches the bundle path ``rel`` (fnmatch, like
    ``[ingest].exclude``: ``*`` also matches ``/``)."""
    return [i for i, e in enumerate(entries) if fnmatch.fnmatch(rel, e["glob"])]


def declared(section: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ``[[ingest.records]]`` entries of an ``[ingest]`` section (None: no section)."""
    return list((section or {}).get("records") or [])


def entry_key(index: int, *rest: str) -> str:
    """The dotted key of a part of entry ``index``, as contract errors name it."""
    return ".".join([f"ingest.records[{index}]", *rest])


def entry_format(entry: dict[str, Any]) -> str | None:
    """The entry's format: declared, else from its glob's suffix (None when it cannot tell)."""
    if "format" in entry:
        return str(entry["format"])
    glob = str(entry["glob"]).lower()
    return next((f for suffix, f in FORMATS.items() if glob.endswith(suffix)), None)


def specs(entry: dict[str, Any], index: int) -> list[FieldSpec]:
    """Every target of the entry with how it is filled. Raises :class:`MappingError` with the
    key in its first argument."""
    out: list[FieldSpec] = []
    for target, spec in _flatten(entry.get("fields") or {}):
        out.append(_field(target, spec, entry_key(index, "fields", target)))
    for target, constant in _flatten(entry.get("constants") or {}):
        key = entry_key(index, "constants", target)
        if any(s.target == target for s in out):
            raise MappingError(key, f"{target} is mapped twice (in fields and in constants)")
        out.append(FieldSpec(target, key, constant=constant))
    targets = {s.target for s in out}
    if "output_text" in targets and targets & {"output_sha256", "output_bytes"}:
        raise MappingError(
            entry_key(index, "fields", "output_text"),
            "output_text is recorded as output_sha256 and output_bytes: map one or the other",
        )
    for required in ("call_id", "status"):
        if not any(s.target == required for s in out):
            raise MappingError(
                entry_key(index, "fields"),
                f"{required} is not mapped (give a field path, a template or a constant)",
            )
    return out


def _flatten(table: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for name, value in table.items():
        if name in CONTAINERS and isinstance(value, dict):
            out += [(f"{name}.{key}", sub) for key, sub in value.items()]
        else:
            out.append((name, value))
    return out


def _field(target: str, spec: Any, key: str) -> FieldSpec:
    table = spec if isinstance(spec, dict) else ({"template": spec} if is_template(spec) else {"path": spec})
    if ("path" in table) == ("template" in table):
        raise MappingError(key, "give exactly one of path and template")
    try:
        path = parse_path(table["path"]) if "path" in table else None
        template = parse_template(table["template"]) if "template" in table else None
    except MappingError as err:
        raise MappingError(key, str(err)) from err
    return FieldSpec(
        target,
        key,
        path=path,
        template=template,
        constant=MISSING,
        values=dict(table.get("map") or {}),
        optional=bool(table.get("optional", False)),
    )


def check(entries: list[dict[str, Any]]) -> list[tuple[list[str], str]]:
    """Problems with the declarations the schema cannot see: paths and templates that do not
    parse, required targets not mapped, a format that cannot be told, a records path misused."""
    problems: list[tuple[list[str], str]] = []
    for index, entry in enumerate(entries):
        base = ["ingest", "records", str(index)]
        fmt = entry_format(entry)
        if fmt is None:
            problems.append(([*base, "glob"], "cannot tell the format from the glob: give format"))
        if "records" in entry and fmt != "json":
            problems.append(([*base, "records"], "a records path is only for format json"))
        try:
            if "records" in entry:
                parse_path(entry["records"], records=True)
            for where in entry.get("where") or {}:
                parse_path(where)
        except MappingError as err:
            problems.append(([*base, "records"], str(err)))
        try:
            specs(entry, index)
        except MappingError as err:
            key, reason = err.args
            problems.append(
                (key.replace("ingest.records[", "ingest.records.").replace("]", "").split("."), reason)
            )
    return problems
