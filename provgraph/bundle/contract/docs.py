"""The contract's reference documentation, read from the section schemas: every section and
every key with its type, default, allowed values and description (``provgraph contract`` and
``docs/contract.md``, which a test keeps equal to ``provgraph contract --format markdown``).

Nothing here is written by hand: a section module added to
:mod:`provgraph.bundle.contract.sections` appears with its keys, and a key without a
``description`` in its schema is listed by :func:`undescribed` (a test fails on any).
Key paths are dotted from the section: ``family[].name`` is ``name`` in each
``[[analysis.family]]`` entry, ``<key>.requested`` is ``requested`` in each ``[models.<key>]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from provgraph.bundle.contract.load import contract_schema
from provgraph.bundle.contract.sections import section_modules

#: What ``provgraph contract --format markdown`` writes to, and the command that refreshes it.
DOCS_PAGE = "docs/contract.md"
REFRESH = f"python -m provgraph contract --format markdown > {DOCS_PAGE}"
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Key:
    """One key of a section, as the reference shows it."""

    path: str
    type: str
    default: Any
    allowed: str
    required: bool
    description: str

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.path, "type": self.type}
        if self.has_default:
            out["default"] = self.default
        out.update(allowed=self.allowed, required=self.required, description=self.description)
        return out


@dataclass(frozen=True)
class Section:
    """One contract section: its table name, what it is for, the clauses it puts in force."""

    name: str
    description: str
    clauses: tuple[str, ...]
    required: bool
    keys: tuple[Key, ...]
    example: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "clauses": list(self.clauses),
            "required": self.required,
            "keys": [k.as_json() for k in self.keys],
            "example": self.example,
        }


def sections() -> list[Section]:
    """Every section of the contract, in the order of the schema (by name)."""
    schema = contract_schema()
    required = set(schema.get("required", []))
    modules = section_modules()
    return [_section(name, modules[name], name in required) for name in schema["properties"]]


def section(name: str) -> Section | None:
    """The section named ``name`` (None when there is none)."""
    return next((s for s in sections() if s.name == name), None)


def _section(name: str, module: Any, required: bool) -> Section:
    schema = module.SCHEMA
    keys = tuple(_keys(schema, ""))
    return Section(
        name, schema.get("description", ""), tuple(module.CLAUSES), required, keys, _example(module.__doc__)
    )


def _example(doc: str | None) -> str | None:
    """The first TOML block of the section module's docstring (its worked example)."""
    found = re.search(r"^```toml\n(.*?)^```", doc or "", re.M | re.S)
    return found.group(1) if found else None


def _keys(schema: dict[str, Any], prefix: str) -> Iterator[Key]:
    """The keys under ``schema`` (a table, or an array of tables), depth first."""
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict) and _is_table(items):
        yield from _children(items, f"{prefix}[]")
    elif _is_table(schema):
        yield from _children(schema, prefix)


def _children(schema: dict[str, Any], prefix: str) -> Iterator[Key]:
    required = set(schema.get("required", []))
    named = [(name, sub, name in required) for name, sub in schema.get("properties", {}).items()]
    named += [(_placeholder(p), sub, False) for p, sub in schema.get("patternProperties", {}).items()]
    for name, sub, needed in named:
        path = f"{prefix}.{name}" if prefix else name
        yield _key(path, sub, needed)
        yield from _keys(sub, path)


def _is_table(schema: dict[str, Any]) -> bool:
    return bool(schema.get("properties") or schema.get("patternProperties"))


def _placeholder(pattern: str) -> str:
    """A table name pattern as the reader writes it: ``^x_[A-Z]+$`` -> ``x_<name>``."""
    literal = re.match(r"\^([A-Za-z0-9_-]*)", pattern)
    prefix = literal.group(1) if literal else ""
    return f"{prefix}<name>" if prefix else "<key>"


def _key(path: str, schema: dict[str, Any], required: bool) -> Key:
    return Key(
        path,
        type_of(schema),
        schema.get("default", _NO_DEFAULT),
        allowed(schema),
        required,
        " ".join(str(schema.get("description", "")).split()),
    )


def type_of(schema: dict[str, Any]) -> str:
    """The value's type in TOML's words: string, integer, number, boolean, array, table."""
    for combinator in ("oneOf", "anyOf"):
        if combinator in schema and "type" not in schema:
            return " or ".join(type_of(alt) for alt in schema[combinator])
    kind = schema.get("type")
    if kind is None and "enum" in schema:
        kinds = {_TOML_TYPES[type(v).__name__] for v in schema["enum"]}
        return " or ".join(sorted(kinds))
    if isinstance(kind, list):
        return " or ".join(_word(k, schema) for k in kind)
    return _word(kind, schema) if kind else "any"


_TOML_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _word(kind: str, schema: dict[str, Any]) -> str:
    if kind == "array":
        if "prefixItems" in schema:
            return f"array [{', '.join(type_of(s) for s in schema['prefixItems'])}]"
        items = schema.get("items")
        return f"array of {type_of(items)}" if isinstance(items, dict) else "array"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not _is_table(schema):
            return f"table of {type_of(extra)}" if extra else "table of any"
        return "table"
    return {"null": "none"}.get(kind, kind)


def allowed(schema: dict[str, Any]) -> str:
    """The schema's constraints on the value, in a few words."""
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    parts: list[str] = []
    enum = schema.get("enum") or items.get("enum")
    if enum:
        parts.append("one of " + ", ".join(toml_value(v) for v in enum))
    for where in (schema, items):
        if "pattern" in where:
            parts.append(f"matches {code(where['pattern'])}")
    bounds = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))
    for word, sign in bounds:
        if word in schema:
            parts.append(f"{sign} {toml_value(schema[word])}")
    if schema.get("minLength"):
        parts.append("not empty")
    if schema.get("minItems") and schema.get("minItems") == schema.get("maxItems"):
        parts.append(f"exactly {schema['minItems']} items")
    elif schema.get("minItems"):
        parts.append(f"at least {schema['minItems']} item{'s' if schema['minItems'] > 1 else ''}")
    if schema.get("uniqueItems"):
        parts.append("no repeats")
    alternatives = [alt["required"] for alt in schema.get("anyOf", []) if "required" in alt]
    if alternatives:
        parts.append("each entry gives " + " or ".join(" and ".join(r) for r in alternatives))
    return "; ".join(parts)


def code(text: str) -> str:
    """``text`` as a Markdown code span (a pattern may hold backticks: a longer fence then)."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if fence != "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def toml_value(value: Any) -> str:
    """A value as it is written in TOML (a default, an allowed value)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    return str(value)


def undescribed(schema: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the keys (and, at the top, sections) whose schema has no description,
    including the tables of ``oneOf`` alternatives (a records field spec's ``path``, ...)."""
    missing: list[str] = []
    if prefix and not str(schema.get("description", "")).strip():
        missing.append(prefix)
    for alt in schema.get("oneOf", []) + schema.get("anyOf", []):
        for name, sub in alt.get("properties", {}).items():
            missing += undescribed(sub, f"{prefix}.{name}")
    items = schema.get("items")
    target = items if isinstance(items, dict) and _is_table(items) else schema
    inner = f"{prefix}[]" if target is not schema else prefix
    named = list(target.get("properties", {}).items())
    named += [(_placeholder(p), sub) for p, sub in target.get("patternProperties", {}).items()]
    for name, sub in named:
        missing += undescribed(sub, f"{inner}.{name}" if inner else name)
    return missing


def markdown(chosen: list[Section] | None = None) -> str:
    """The reference as Markdown: the whole page, or only the ``chosen`` sections."""
    whole = chosen is None
    shown = sections() if chosen is None else chosen
    lines: list[str] = []
    if whole:
        lines += [
            "# Contract reference (`provgraph.toml`)",
            "",
            f"<!-- Generated from the section schemas; do not edit. Refresh: {REFRESH} -->",
            "",
            "Every section and key of the contract, generated from the JSON Schemas that validate it",
            "(`provgraph/bundle/contract/sections/`). Unknown sections and keys are errors. A key path",
            "is dotted from its section: `family[].name` is `name` in each `[[analysis.family]]`",
            "entry, `<key>.requested` is `requested` in each `[models.<key>]` table. The same text:",
            "`provgraph contract` (one line per section), `provgraph contract SECTION`.",
            "",
            "| section | puts in force | what it declares |",
            "|---|---|---|",
        ]
        lines += [f"| [`[{s.name}]`](#{s.name}) | {_clauses(s)} | {_cell(s.description)} |" for s in shown]
        lines.append("")
    for s in shown:
        lines += _markdown_section(s)
    return "\n".join(lines).rstrip("\n") + "\n"


def _clauses(s: Section) -> str:
    return ", ".join(f"{c} clause" for c in s.clauses) or "-"


def _markdown_section(s: Section) -> list[str]:
    lines = [f"## `[{s.name}]`", "", _cell(s.description), ""]
    notes = [f"Puts the {_clauses(s)} in force." if s.clauses else "Puts no clause in force."]
    notes += ["Required in every contract."] if s.required else []
    lines += [" ".join(notes), ""]
    if s.example:
        lines += ["```toml", s.example.rstrip("\n"), "```", ""]
    lines += ["| key | type | default | allowed | description |", "|---|---|---|---|---|"]
    for k in s.keys:
        default = code(toml_value(k.default)) if k.has_default else ("required" if k.required else "")
        cells = [code(k.path), *map(_cell, (k.type, default, k.allowed, k.description))]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")
