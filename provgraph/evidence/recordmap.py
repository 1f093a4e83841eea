"""Field paths, templates and value maps: how a ``[[ingest.records]]`` declaration turns one
record of a foreign harness (a JSON object, a CSV row) into a canonical call record.

A *field path* names a value inside a record: ``doc_id``, ``request.messages[0].content``,
``["key.with.dots"].x``; a leading ``$`` or ``$.`` is allowed (``$.samples[*]`` names the
records of a JSON document: a path ending in ``[*]``). A *template* is text with ``{path}``
placeholders (``"{task}--{doc_id}"``; ``{{`` and ``}}`` are literal braces). Parsing is done
once, when the contract is loaded, so a bad path is a contract error and not one error per
record. Pure: no store, no files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: One segment of a path: ``.name``, ``[3]``, ``[-1]``, ``["quoted"]``, ``[*]``.
_SEGMENT = re.compile(r'\.?([^.\[\]{}"]+)|\[(-?\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\[(\*)\]')
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
#: What a missing value is, as opposed to a JSON null.
MISSING = object()


class MappingError(ValueError):
    """A path or template that cannot be parsed; the message says what is wrong."""


@dataclass(frozen=True)
class FieldPath:
    """A parsed field path: its text and its steps (``str`` keys, ``int`` indexes)."""

    text: str
    steps: tuple[str | int, ...]
    each: bool = False  # ends in ``[*]``: the records of a document

    def get(self, record: Any) -> Any:
        """The value at this path in ``record``, or :data:`MISSING`."""
        value = record
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    return MISSING
                value = value[step]
            elif isinstance(value, dict) and step in value:
                value = value[step]
            else:
                return MISSING
        return value


def parse_path(text: str, records: bool = False) -> FieldPath:
    """Parse a field path (``records``: the records path of a document, which may end in
    ``[*]`` or be ``$`` alone). Raises :class:`MappingError`."""
    rest = text.strip()
    if rest.startswith("$"):
        rest = rest[1:]
        if rest.startswith(".") and not rest.startswith(".."):
            rest = rest[1:]
    elif not rest:
        raise MappingError("an empty field path")
    steps: list[str | int] = []
    each = False
    pos = 0
    while pos < len(rest):
        found = _SEGMENT.match(rest, pos)
        if found is None or (found.group(1) is not None and rest[pos] == "." and pos == 0):
            raise MappingError(f"cannot read the field path {text!r} at {rest[pos:]!r}")
        name, index, quoted, star = found.groups()
        if each:
            raise MappingError(f"[*] must end the records path {text!r}")
        if star:
            if not records:
                raise MappingError(f"[*] is only for the records path, not in {text!r}")
            each = True
        elif index is not None:
            steps.append(int(index))
        elif quoted is not None:
            steps.append(re.sub(r"\\(.)", r"\1", quoted))
        else:
            steps.append(name.strip())
        pos = found.end()
    if not steps and not records:
        raise MappingError(f"the field path {text!r} names no field")
    return FieldPath(text, tuple(steps), each)


@dataclass(frozen=True)
class Template:
    """Text with ``{path}`` placeholders: literal parts and paths, alternating."""

    text: str
    parts: tuple[str | FieldPath, ...]

    @property
    def paths(self) -> list[FieldPath]:
        return [p for p in self.parts if isinstance(p, FieldPath)]


def is_template(text: str) -> bool:
    """Whether a field's spec is a template rather than a path: it has a brace (a path never
    does, so an unpaired one is reported as the template error it is)."""
    return "{" in text or "}" in text


def parse_template(text: str) -> Template:
    """Parse a template. Raises :class:`MappingError` for an unpaired brace or a bad path."""
    parts: list[str | FieldPath] = []
    literal = ""
    pos = 0
    for m in _PLACEHOLDER.finditer(text):
        literal += text[pos : m.start()]
        pos = m.end()
        token = m.group(0)
        if token in ("{{", "}}"):
            literal += token[0]
        elif m.group(1) is None:
            raise MappingError(f"unpaired {token!r} in the template {text!r} (write {token * 2} for a brace)")
        else:
            if literal:
                parts.append(literal)
                literal = ""
            parts.append(parse_path(m.group(1)))
    literal += text[pos:]
    if literal:
        parts.append(literal)
    return Template(text, tuple(parts))


def scalar_text(value: Any) -> str | None:
    """A scalar as template text and map key (JSON ``true`` is ``true``), None for others."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    if value is None:
        return "null"
    return None


@dataclass(frozen=True)
class FieldSpec:
    """How one target field of the canonical record gets its value."""

    target: str  # dotted: "status", "prompt.user", "decoding.temperature", "x_task"
    key: str  # where it is declared, for messages: "ingest.records[0].fields.status"
    path: FieldPath | None = None
    template: Template | None = None
    constant: Any = MISSING
    values: dict[str, Any] = field(default_factory=dict)  # the value map
    optional: bool = False

    @property
    def sources(self) -> list[FieldPath]:
        """The record fields this spec reads."""
        if self.path is not None:
            return [self.path]
        return self.template.paths if self.template is not None else []


class RecordProblem(ValueError):
    """One record cannot be mapped: a field is missing or has the wrong type."""


def evaluate(spec: FieldSpec, record: Any, seen: set[str]) -> Any:
    """The value of ``spec`` for ``record`` (:data:`MISSING` when an optional field is absent).

    Each source path found is added to ``seen``. Raises :class:`RecordProblem` for a required
    field that is absent or a template placeholder that is not a scalar."""
    if spec.constant is not MISSING:
        return spec.constant
    if spec.path is not None:
        value = spec.path.get(record)
        if value is MISSING:
            if spec.optional:
                return MISSING
            raise RecordProblem(f"missing field {spec.path.text!r} ({spec.key})")
        seen.add(spec.path.text)
    else:
        assert spec.template is not None  # a spec is a constant, a path or a template
        out = []
        for part in spec.template.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            got = part.get(record)
            if got is MISSING:
                if spec.optional:
                    return MISSING
                raise RecordProblem(f"missing field {part.text!r} ({spec.key})")
            seen.add(part.text)
            text = scalar_text(got)
            if text is None or got is None:
                raise RecordProblem(
                    f"field {part.text!r} is {_kind(got)}, the template of {spec.key} needs text or a number"
                )
            out.append(text)
        value = "".join(out)
    if spec.values:
        mapped = scalar_text(value)
        if mapped is not None and mapped in spec.values:
            value = spec.values[mapped]
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {"dict": "an object", "list": "an array"}.get(type(value).__name__, f"a {type(value).__name__}")


def kind_of(value: Any) -> str:
    """How a message names a value's JSON type (``an object``, ``null``, ``a str``)."""
    return _kind(value)
