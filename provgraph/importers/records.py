"""Declared records: files of any harness read as canonical call records by a
``[[ingest.records]]`` declaration in the contract (see
:mod:`provgraph.bundle.contract.sections.records` for the declaration).

Each record (a JSON Lines line, an element of a JSON document's records path, a CSV row) is
mapped to a canonical call record by the declared field paths, templates, constants and value
maps, then checked and written exactly as :mod:`provgraph.importers.calls` checks and writes
its own records, so every call rule applies to it unchanged. A record that lacks a field or
holds the wrong type is rejected on its own line (``results.jsonl:7: record: missing field
'doc_id' (...)``); a mapped field that no record of the file holds at all is a mistake in the
declaration, reported as a contract error with its key and line (the source is not imported).
JSON Lines and CSV are streamed: memory is one record, whatever the file's size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from provgraph.bundle.contract.load import key_line
from provgraph.bundle.contract.sections.records import (
    CONTAINERS,
    LEAVES,
    claiming,
    declared,
    entry_format,
    entry_key,
    specs,
)
from provgraph.errors import ContractError
from provgraph.evidence.recordmap import (
    MISSING,
    FieldSpec,
    RecordProblem,
    evaluate,
    kind_of,
    parse_path,
    scalar_text,
)
from provgraph.importers.calls import check_record, write_record
from provgraph.ingest.api import (
    NO,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    Source,
    document_bytes,
    loads_checked,
    read_csv,
    read_jsonl,
)


def contract_error(bundle: Bundle, keys: list[str], reason: str) -> ContractError:
    """A contract error at ``keys`` (``["ingest", "records", "0", "glob"]``) with its line."""
    contract = bundle.contract
    dotted = entry_key(int(keys[2]), *keys[3:]) if len(keys) > 2 else ".".join(keys)
    return ContractError(contract.path.name, dotted, reason, key_line(contract.text, keys))


class RecordsImporter(Importer):
    name = "records"
    version = "1"
    description = "files declared in [[ingest.records]]: JSONL, JSON or CSV mapped to call records"
    handles = "file"
    uses_sections = ("ingest",)
    suffixes = frozenset()  # never detected: the planner gives it the files a declaration claims

    def detect(self, path: Path, bundle: Bundle) -> int:
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        bundle = ctx.bundle
        entries = declared(bundle.contract.section("ingest"))
        found = claiming(entries, source.rel)
        if not found:
            raise InputError(source.rel, "no [[ingest.records]] declaration's glob matches this file")
        if len(found) > 1:
            first = entry_key(found[0], "glob")
            raise contract_error(
                bundle,
                ["ingest", "records", str(found[1]), "glob"],
                f"{source.rel} is also claimed by {first}",
            )
        index = found[0]
        entry = entries[index]
        fields = specs(entry, index)
        where = [(parse_path(p), scalar_text(v)) for p, v in (entry.get("where") or {}).items()]
        seen: set[str] = set()
        occurrences: dict[str, int] = {}
        read = 0
        for line, label, value, error in _records(source, entry, index, ctx):
            prefix = f"{label}: " if label else ""
            if error:
                ctx.problem(line, prefix + error)
                continue
            if where and not all(scalar_text(p.get(value)) == want for p, want in where):
                continue  # not a record of this declaration (another event type)
            read += 1
            try:
                record = canonical(value, fields, seen)
            except RecordProblem as err:
                ctx.problem(line, f"{prefix}record: {err}")
                continue
            reason = check_record(record)
            if reason:
                ctx.problem(line, f"{prefix}record: {reason}")
                continue
            call_id = record["call_id"]
            occurrences[call_id] = occurrences.get(call_id, 0) + 1
            write_record(ctx, record, line, occurrences[call_id])
            ctx.record()
        if read:
            _never_found(bundle, fields, seen, source.rel)


def _never_found(bundle: Bundle, fields: list[FieldSpec], seen: set[str], rel: str) -> None:
    """A required field path that no record of the file holds is the declaration's mistake."""
    for spec in fields:
        if spec.optional:
            continue
        for path in spec.sources:
            if path.text not in seen:
                keys = spec.key.replace("ingest.records[", "ingest.records.").replace("]", "").split(".")
                what = "the template names" if spec.template is not None else "the field path"
                raise contract_error(bundle, keys, f"{what} {path.text!r}, which no record of {rel} holds")


def _records(
    source: Source, entry: dict[str, Any], index: int, ctx: ImportContext
) -> Iterator[tuple[int | None, str, Any, str | None]]:
    """``(line, label, record, error)`` per record; ``label`` names a JSON document's record."""
    fmt = entry_format(entry)
    if fmt == "jsonl":
        for line, value, error in read_jsonl(source.path, source.rel, ctx.advance):
            yield line, "", value, error
    elif fmt == "csv":
        for line, row, error in read_csv(source.path, (), source.rel, ctx.advance):
            yield line, "", row, error
    else:
        yield from _document_records(source, entry, index, ctx)


def _document_records(
    source: Source, entry: dict[str, Any], index: int, ctx: ImportContext
) -> Iterator[tuple[int | None, str, Any, str | None]]:
    raw = document_bytes(source.path, source.rel)
    ctx.advance(len(raw))
    try:
        document = loads_checked(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        raise InputError(source.rel, f"not UTF-8 text (byte {err.start})") from err
    except ValueError as err:  # malformed JSON, or a limit (depth, a number, a surrogate)
        raise InputError(source.rel, f"not a JSON document: {err}") from err
    where = entry.get("records", "$")
    path = parse_path(where, records=True)
    records = path.get(document)
    if records is MISSING:
        raise InputError(source.rel, f"no {where!r} in this document ({entry_key(index, 'records')})")
    if not isinstance(records, list):
        raise InputError(source.rel, f"{where!r} is {kind_of(records)}, not an array of records")
    if not records:
        yield None, "", None, "no records"
    base = where[:-3] if where.endswith("[*]") else where
    for i, value in enumerate(records):
        yield None, f"{base}[{i}]", value, None


def canonical(value: Any, fields: list[FieldSpec], seen: set[str]) -> dict[str, Any]:
    """The canonical call record of one source record. Raises :class:`RecordProblem`."""
    if not isinstance(value, dict):
        raise RecordProblem(f"expected an object, got {kind_of(value)}")
    record: dict[str, Any] = {}
    for spec in fields:
        got = evaluate(spec, value, seen)
        if got is MISSING:
            continue
        head, _, sub = spec.target.partition(".")
        if head in CONTAINERS and sub:
            if head == "prompt" and got is not None and not isinstance(got, str):
                raise RecordProblem(_wrong(spec, got, "text"))
            record.setdefault(head, {})[sub] = got
        elif head == "output_text":
            text = _coerced(spec, got)
            if text is not None:  # hashed as the batch importers hash an inline response
                data = text.encode("utf-8", errors="surrogatepass")
                record["output_sha256"] = hashlib.sha256(data).hexdigest()
                record["output_bytes"] = len(data)
        else:
            record[head] = _coerced(spec, got)
    return record


def _coerced(spec: FieldSpec, got: Any) -> Any:
    """A mapped value as its target needs it: a number names an id as text (JSON ids are
    often numbers), a CSV cell holds a size as digits (an empty one records none); anything
    else of the wrong kind is a bad record."""
    want = LEAVES.get(spec.target)
    if want is None or got is None:  # x_* keys hold anything; null is "not recorded"
        return got
    if want == "str":
        if isinstance(got, str):
            return got
        if isinstance(got, (int, float)) and not isinstance(got, bool):
            return str(got)
        raise RecordProblem(_wrong(spec, got, "text"))
    if isinstance(got, int) and not isinstance(got, bool):
        return got
    if got == "":  # an empty CSV cell: nothing recorded
        return None
    if isinstance(got, str) and got.strip().isdigit():
        return int(got)
    raise RecordProblem(_wrong(spec, got, "a whole number"))


def _wrong(spec: FieldSpec, got: Any, need: str) -> str:
    where = f"field {spec.path.text!r}" if spec.path is not None else spec.key
    return f"{where} is {kind_of(got)}, {spec.target} needs {need} ({spec.key})"
