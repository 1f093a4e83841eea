"""``[models.<key>]``: the models the benchmark requests, and whether a mutable alias is
acceptable. Its presence puts the model clause in force.

```toml
[models.gpt4o]
requested = "gpt-4o"      # the identifier the requests name
alias = true              # it is a mutable alias (default: guessed, dated ids are snapshots)
alias_ok = true           # requesting the alias is acceptable when each call records the snapshot
family = "gpt-4o"         # what a resolved snapshot must belong to (default: from `requested`)

[models.sonnet]
requested = "claude-sonnet-4-5-20250929"   # a dated snapshot: nothing left to resolve
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provgraph.bundle.contract.sections.conditions import header_line
from provgraph.evidence.identity import is_pinned, model_family
from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "models"
CLAUSES: tuple[str, ...] = ("model",)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": 'Models by key; conditions refer to them with `model = "<key>"`.',
    "patternProperties": {
        r"^[A-Za-z0-9][A-Za-z0-9_.-]*$": {
            "type": "object",
            "description": "One requested model; conditions name it by this key.",
            "properties": {
                "requested": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The model identifier the requests name (e.g. gpt-4o-2024-08-06).",
                },
                "alias": {
                    "type": "boolean",
                    "description": "Whether `requested` is a mutable alias (default: no date stamp = alias).",
                },
                "alias_ok": {
                    "type": "boolean",
                    "default": False,
                    "description": "Whether requesting a mutable alias is acceptable at all.",
                },
                "family": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Model family every resolved snapshot must belong to.",
                },
            },
            "required": ["requested"],
            "additionalProperties": False,
        }
    },
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    add = ctx.add
    for name, spec in section.items():
        requested = spec["requested"]
        node = ctx.iri("model-spec", name)
        add(node, RDF_TYPE, PG.ModelSpec)
        add(node, PG.key, name)
        add(node, PG.contract, ctx.contract_iri)
        add(node, PG.requestedModel, requested)
        add(node, PG.mutableAlias, spec.get("alias", not is_pinned(requested)))
        add(node, PG.aliasAcceptable, spec.get("alias_ok", False))
        add(node, PG.family, spec.get("family") or model_family(requested))
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, header_line(ctx.bundle.contract.text, NAME, name))
