"""``[ingest]``: which files of the bundle to skip, which importer reads which path, and
which files are read as call records by declaration (``[[ingest.records]]``, see
:mod:`provgraph.bundle.contract.sections.records`).

```toml
[ingest]
exclude = ["scratch/**"]
importers = { "responses" = "files" }   # path -> importer, wins over detection

[[ingest.records]]                      # a harness provgraph has no importer for
glob = "results/*.jsonl"
fields = { call_id = "{task}--{doc_id}", status = "state", prompt.user = "request.prompt" }
```
"""

from __future__ import annotations

from typing import Any

from provgraph.bundle.contract.sections import records

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
        "records": records.SCHEMA,
    },
    "additionalProperties": False,
}


def check(section: dict[str, Any], data: dict[str, Any]) -> list[tuple[list[str], str]]:
    """The ``[[ingest.records]]`` declarations' own checks (paths, templates, formats)."""
    return records.check(section.get("records") or [])
