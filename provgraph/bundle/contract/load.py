"""Load and validate the contract file (``provgraph.toml``).

Validation is JSON Schema (one schema per section, see :mod:`provgraph.bundle.contract.sections`);
every problem is reported as ``file:line: key: what is wrong``. Unknown keys are errors.
A contract is small: files over :data:`MAX_CONTRACT_BYTES` and values nested deeper than
:data:`MAX_CONTRACT_DEPTH` are refused before anything recursive (tomllib, jsonschema,
deepcopy) can run out of stack or memory.
"""

from __future__ import annotations

import copy
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from provgraph.bundle.contract.sections import section_modules
from provgraph.bundle.contract.sections.factors import expand as expand_factors
from provgraph.errors import ContractError, InputError

CONTRACT_FILE = "provgraph.toml"
#: Largest contract read (the contracts in examples/ are about 2 KiB).
MAX_CONTRACT_BYTES = 1 << 20
#: Deepest nesting of tables and arrays (the schema needs 4).
MAX_CONTRACT_DEPTH = 32
#: Schema violations listed one per line; the rest are counted in one more line.
MAX_PROBLEMS = 20


@cache
def contract_schema() -> dict[str, Any]:
    """The JSON Schema of the whole contract, assembled from the section modules."""
    modules = section_modules()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "provgraph contract",
        "type": "object",
        "properties": {name: m.SCHEMA for name, m in sorted(modules.items())},
        "required": ["project"],
        "additionalProperties": False,
    }


@dataclass
class Contract:
    """A validated contract with schema defaults filled in."""

    path: Path
    data: dict[str, Any]
    sha256: str
    text: str = field(repr=False, default="")

    @property
    def name(self) -> str:
        return str(self.data["project"]["name"])

    @property
    def base_iri(self) -> str:
        return str(self.data["project"]["base_iri"])

    def section(self, name: str) -> dict[str, Any] | None:
        return self.data.get(name)

    def clauses(self) -> list[str]:
        """Clauses in force: those whose contract section is present."""
        modules = section_modules()
        found: list[str] = []
        for name in self.data:
            for clause in modules[name].CLAUSES:
                if clause not in found:
                    found.append(clause)
        return found


def load_contract(path: Path) -> Contract:
    """Read, validate and complete a contract file. Raises :class:`ContractError`."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONTRACT_BYTES + 1)  # never more: a contract is small
    except OSError as err:
        raise InputError(path, f"cannot read the contract: {err.strerror or err}") from err
    if len(raw) > MAX_CONTRACT_BYTES:
        raise ContractError(path, "", f"larger than {MAX_CONTRACT_BYTES >> 20} MiB, the limit for a contract")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(path, f"not UTF-8 text (byte {err.start})") from err
    data = _parse(text, path)
    validate(data, path, text)
    data = cross_check(data, path, text)
    completed = apply_defaults(data, contract_schema())
    return Contract(path, completed, hashlib.sha256(raw).hexdigest(), text)


def _parse(text: str, path: Path) -> dict[str, Any]:
    """The TOML document, or a :class:`ContractError` for any failure of the parser."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        # Python < 3.14 puts the position only in the message: "... (at line 7, column 8)".
        found = re.search(r"\(at line (\d+)", str(err))
        line = getattr(err, "lineno", None) or (int(found.group(1)) if found else None)
        reason = str(err).split(" (at ")[0]
        raise ContractError(path, "", f"invalid TOML: {reason}", line) from err
    except RecursionError as err:
        line = _deep_line(text)
        raise ContractError(
            path, "", f"invalid TOML: nested deeper than {MAX_CONTRACT_DEPTH} levels", line
        ) from err
    except (ValueError, MemoryError) as err:  # an integer over 4300 digits; a value too large
        reason = str(err).split(";")[0] or type(err).__name__
        digits = re.search(r"\d{4000,}", text)  # tomllib gives no line for the integer limit
        line = text.count("\n", 0, digits.start()) + 1 if digits else None
        raise ContractError(path, "", f"invalid TOML: {reason}", line) from err
    if _depth(data) > MAX_CONTRACT_DEPTH:
        raise ContractError(path, "", f"nested deeper than {MAX_CONTRACT_DEPTH} levels", _deep_line(text))
    return data


def _depth(data: Any) -> int:
    """How deeply tables and arrays nest in ``data`` (iterative: the data may be deep)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_CONTRACT_DEPTH:  # deeper is refused anyway: stop walking there
            stack.extend((c, depth + 1) for c in children)
    return deepest


def _deep_line(text: str) -> int | None:
    """Best effort: the line where brackets first nest deeper than :data:`MAX_CONTRACT_DEPTH`
    (quotes and comments are skipped roughly; the line is only for the message)."""
    depth, quote, line = 0, "", 1
    chars = iter(text)
    for ch in chars:
        if ch == "\n":
            line += 1
            quote = "" if quote == "#" else quote
        elif quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                next(chars, None)
        elif ch in "\"'#":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_CONTRACT_DEPTH:
                return line
        elif ch in "]}":
            depth -= 1
    return None


def validate(data: dict[str, Any], path: Path, text: str = "") -> None:
    """Raise :class:`ContractError` listing every schema violation, one per line."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(contract_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return
    # each problem's line is found by scanning the text: describe only the first few
    problems = [_describe(err, path, text) for err in errors[:MAX_PROBLEMS]]
    first = problems[0]
    if len(problems) > 1:
        rest = "\n".join(str(p) for p in problems[1:])
        if len(errors) > MAX_PROBLEMS:
            rest += f"\n{path}: ... and {len(errors) - MAX_PROBLEMS} more problems"
        raise ContractError(path, first.key, f"{first.reason}\n{rest}", first.line)
    raise first


def cross_check(data: dict[str, Any], path: Path, text: str = "") -> dict[str, Any]:
    """Run each section's optional ``check(section, data)`` (references between sections).
    Returns ``data`` with a ``[factors]`` design expanded into its ``[conditions]``."""
    modules = section_modules()
    expanded = data
    # the design is checked as written, then the other sections against what it expands to
    for name in sorted(data, key=lambda n: n != "factors"):
        checker = getattr(modules[name], "check", None)
        for keys, reason in checker(data[name], expanded) if checker else ():
            raise ContractError(path, _dotted(keys), reason, _line_of(text, keys))
        if name == "factors":
            expanded = expand_factors(data)
    return expanded


def _describe(err: Any, path: Path, text: str) -> ContractError:
    keys = [str(p) for p in err.absolute_path]
    validator = err.validator
    if validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        key_path = [*keys, extra[0]] if extra else keys
        where = "top level" if not keys else f"[{'.'.join(keys)}]"
        reference = f"provgraph contract {keys[0]}" if keys else "provgraph contract"
        hint = f" (allowed: {', '.join(allowed)}; `{reference}` describes them)" if allowed else ""
        noun = "section" if not keys else "key"
        reason = f"unknown {noun} {', '.join(repr(e) for e in extra)} in {where}{hint}"
        return ContractError(path, _dotted(key_path), reason, _line_of(text, key_path))
    if validator == "required":
        missing = re.findall(r"'([^']+)' is a required property", err.message)
        key_path = [*keys, *(missing[:1])]
        return ContractError(path, _dotted(key_path), "missing required key", _line_of(text, keys))
    if validator == "type":
        want = err.validator_value
        got = type(err.instance).__name__
        reason = f"expected {want}, got {got} {err.instance!r}"
    elif validator == "enum":
        reason = f"must be one of {', '.join(map(repr, err.validator_value))}, got {err.instance!r}"
    elif validator == "pattern":
        description = err.schema.get("description", f"must match {err.validator_value}")
        reason = f"invalid value {err.instance!r}: {description}"
    else:
        reason = err.message
    return ContractError(path, _dotted(keys), reason, _line_of(text, keys))


def _dotted(keys: list[str]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if k.isdigit() else (f".{k}" if out else k)
    return out


def _line_of(text: str, keys: list[str]) -> int | None:
    """Best-effort 1-based line of a key: its table header, then its assignment."""
    if not text or not keys:
        return None
    lines = text.splitlines()
    if len(keys) >= 3 and keys[2].isdigit():  # an entry of an array of tables: [[ingest.records]]
        found = _array_entry_line(lines, keys[:2], int(keys[2]), keys[3:])
        if found is not None:
            return found
    section, rest = keys[0], keys[1:]
    index = int(rest[0]) if rest and rest[0].isdigit() else 0
    if rest and rest[0].isdigit():
        rest = rest[1:]
    header = re.compile(rf"^\s*\[\[?\s*{re.escape(section)}\s*\]\]?\s*(#.*)?$")
    start = None
    seen = 0
    for i, line in enumerate(lines):
        if header.match(line):
            if seen == index:
                start = i
                break
            seen += 1
    if start is None:
        assignment = re.compile(rf"^\s*{re.escape(section)}\s*=")
        for i, line in enumerate(lines):
            if assignment.match(line):
                return i + 1
        return None
    if not rest:
        return start + 1
    assignment = re.compile(rf"^\s*\"?{re.escape(rest[0])}\"?\s*=")
    for i in range(start + 1, len(lines)):
        if re.match(r"^\s*\[", lines[i]):
            break
        if assignment.match(lines[i]):
            return i + 1
    return start + 1


def key_line(text: str, keys: list[str]) -> int | None:
    """Best-effort 1-based line of a key (``["ingest", "records", "0", "glob"]``) in the
    contract text, for errors found after loading (by the planner or an importer)."""
    return _line_of(text, keys)


def _array_entry_line(lines: list[str], table: list[str], index: int, rest: list[str]) -> int | None:
    """Line of a key inside entry ``index`` of ``[[a.b]]``: the innermost key of ``rest``
    assigned in the entry's lines (its sub-tables and inline tables included), else the
    entry's header. None when there is no such header."""
    name = re.escape(".".join(table))
    header = re.compile(rf"^\s*\[\[\s*{name}\s*\]\]\s*(#.*)?$")
    starts = [i for i, line in enumerate(lines) if header.match(line)]
    if index >= len(starts):
        return None
    start = starts[index]
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if re.match(r"^\s*\[", lines[i]) and not re.match(rf"^\s*\[\s*{name}\.", lines[i])
        ),
        len(lines),
    )
    for key in reversed([k for k in rest if not k.isdigit()]):
        assignment = re.compile(rf"(^|[{{,.]|\s)\"?{re.escape(key)}\"?\s*=")
        sub_table = re.compile(rf"^\s*\[\s*{name}\.{re.escape(key)}\s*\]")
        for i in range(start + 1, end):
            if assignment.search(lines[i]) or sub_table.match(lines[i]):
                return i + 1
    return start + 1


def apply_defaults(data: Any, schema: dict[str, Any]) -> Any:
    """A copy of ``data`` with the schema's ``default`` values filled in for absent keys."""
    data = copy.deepcopy(data)
    _fill(data, schema)
    return data


def _fill(data: Any, schema: dict[str, Any]) -> None:
    if isinstance(data, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in data and "default" in sub:
                data[key] = copy.deepcopy(sub["default"])
            if key in data:
                _fill(data[key], sub)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for item in data:
            _fill(item, schema["items"])
