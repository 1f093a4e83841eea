"""``[project]``: the project's name and the base IRI its node IRIs are minted under.

```toml
[project]
name = "cxr-pilot"
base_iri = "https://example.org/cxr-pilot/"   # node IRIs are minted under this prefix
strict = false        # true: missing identity evidence (restrict rules) blocks the gate too
```
"""

from __future__ import annotations

from typing import Any

NAME = "project"
CLAUSES: tuple[str, ...] = ()
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Who the bundle belongs to and how its nodes are named.",
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "Project name."},
        "base_iri": {
            "type": "string",
            # Absolute IRI ending in / or #, with nothing that could break a query.
            "pattern": r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*[/#:]$",
            "description": "Absolute IRI under which node IRIs are minted; ends in '/', '#' or ':'.",
        },
        "description": {"type": "string", "description": "One-line description."},
        "version": {"type": "string", "description": "Version of the benchmark protocol."},
        "strict": {
            "type": "boolean",
            "default": False,
            "description": "true: missing identity evidence (restrict rules) blocks the gate too, "
            "not only documented mismatches.",
        },
    },
    "required": ["name", "base_iri"],
    "additionalProperties": False,
}
