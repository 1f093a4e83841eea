"""``[ingest]``: which files of the bundle to skip and which importer reads which path."""

from __future__ import annotations

from typing import Any

NAME = "ingest"
CLAUSES: tuple[str, ...] = ()
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "How `provgraph ingest` walks the bundle.",
    "properties": {
        "exclude": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": [],
            "description": "Glob patterns (relative to the bundle) that are never imported.",
        },
        "importers": {
            "type": "object",
            "additionalProperties": {"type": "string", "minLength": 1},
            "default": {},
            "description": "Path (relative to the bundle) -> importer name; wins over detection.",
        },
    },
    "additionalProperties": False,
}
