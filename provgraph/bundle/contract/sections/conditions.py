"""``[conditions.<key>]``: each experimental condition, the prompt files it declares, and the
conditions whose executed prompts must differ from it. Its presence puts the prompt clause
in force.

```toml
[conditions.baseline]
system_prompt = "prompts/baseline_system.txt"   # the exact text the condition must send
differs_from = ["taxonomy"]                      # their executed prompts must not be equal
model = "gpt4o"                                   # a key of [models] (optional)

[conditions.taxonomy]
system_prompt = "prompts/taxonomy_system.txt"
```

A prompt file's text is compared with the text a call sent byte for byte, after removing one
trailing newline from the file (editors add it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from provgraph.rdf.vocab import PG, PROV, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "conditions"
CLAUSES: tuple[str, ...] = ("prompt",)
KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_PATH = {"type": "string", "minLength": 1}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Experimental conditions by key (the key the plan and the results files use).",
    # Condition keys are table names; anything that is not a key is an unknown key.
    "patternProperties": {
        KEY_PATTERN: {
            "type": "object",
            "description": "One condition; its key is the condition key of the plan and the results.",
            "properties": {
                "system_prompt": {**_PATH, "description": "File holding the exact system prompt text."},
                "user_prompt": {**_PATH, "description": "File holding the exact user prompt text."},
                "model": {"type": "string", "minLength": 1, "description": "Key of the [models] entry."},
                "differs_from": {
                    "type": "array",
                    "items": {"type": "string", "pattern": KEY_PATTERN},
                    "default": [],
                    "description": "Conditions whose executed prompts must differ from this one's.",
                },
                "description": {"type": "string", "description": "What the condition is, for people."},
            },
            "additionalProperties": False,
        }
    },
    "additionalProperties": False,
}


def prompt_files(section: dict[str, Any] | None) -> set[str]:
    """Every prompt file the conditions declare (bundle-relative paths)."""
    found: set[str] = set()
    for spec in (section or {}).values():
        found |= {spec[k] for k in ("system_prompt", "user_prompt") if spec.get(k)}
    return found


def check(section: dict[str, Any], data: dict[str, Any]) -> list[tuple[list[str], str]]:
    """Cross-references the schema cannot express: ``differs_from`` and ``model`` targets."""
    problems: list[tuple[list[str], str]] = []
    models = data.get("models") or {}
    for name, spec in section.items():
        for other in spec.get("differs_from", []):
            if other == name:
                problems.append(([NAME, name, "differs_from"], "a condition cannot differ from itself"))
            elif other not in section:
                problems.append(([NAME, name, "differs_from"], f"unknown condition {other!r}"))
        model = spec.get("model")
        if model is not None and model not in models:
            problems.append(([NAME, name, "model"], f"no [models.{model}] entry declares model {model!r}"))
    return problems


def header_line(text: str, section: str, key: str) -> int | None:
    """Line of a ``[section.key]`` table header in the contract text."""
    quoted = rf"(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')"
    pattern = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\.\s*{quoted}\s*\]\s*(#.*)?$")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def section_line(text: str, section: str) -> int | None:
    """Line of a ``[section]`` table header in the contract text."""
    pattern = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]\s*(#.*)?$")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    add = ctx.add
    text = ctx.bundle.contract.text
    pairs: set[tuple[str, str]] = set()
    # conditions expanded from [factors] have no header of their own: point to the design
    design_line = section_line(text, "factors")
    for name, spec in section.items():
        node = ctx.iri("condition-spec", name)
        line = header_line(text, NAME, name) or design_line
        add(node, RDF_TYPE, PG.ConditionSpec)
        add(node, PG.key, name)
        add(node, PG.condition, ctx.iri("condition", name))
        add(node, PG.contract, ctx.contract_iri)
        add(node, PG.description, spec.get("description"))
        if spec.get("system_prompt"):
            add(node, PG.declaredSystemPrompt, ctx.file_iri(spec["system_prompt"]))
        if spec.get("user_prompt"):
            add(node, PG.declaredUserPrompt, ctx.file_iri(spec["user_prompt"]))
        if spec.get("model"):
            add(node, PG.declaredModel, ctx.iri("model-spec", spec["model"]))
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)
        for other in spec.get("differs_from", []):
            first, second = sorted((name, other))
            if (first, second) in pairs:
                continue
            pairs.add((first, second))
            pair = ctx.iri("condition-pair", first, second)
            add(pair, RDF_TYPE, PG.DistinctPair)
            add(pair, PG.firstCondition, ctx.iri("condition", first))
            add(pair, PG.secondCondition, ctx.iri("condition", second))
            add(pair, PROV.wasDerivedFrom, ctx.contract_iri)
            add(pair, PG.sourceFile, ctx.source_iri)
            add(pair, PG.sourceLine, line)
