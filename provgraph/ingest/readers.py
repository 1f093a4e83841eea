"""Reading tabular sources record by record, with line numbers for every problem."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from provgraph.errors import InputError

SNIFF_BYTES = 64 * 1024


def sniff_text(path: Path, limit: int = SNIFF_BYTES) -> str:
    """The first ``limit`` bytes of a file as text ('' when unreadable or binary)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(limit)
    except OSError:
        return ""
    if b"\x00" in head:
        return ""
    return head.decode("utf-8", errors="replace")


def csv_header(path: Path) -> list[str]:
    """Column names of a CSV file ([] when it does not look like CSV)."""
    text = sniff_text(path)
    first = text.splitlines()[0] if text else ""
    try:
        return [c.strip().lstrip("\ufeff") for c in next(csv.reader([first]))]
    except (csv.Error, StopIteration):
        return []


def first_json_object(path: Path) -> dict[str, Any] | None:
    """The first parseable JSON object of a JSON Lines file, for detection."""
    for line in sniff_text(path).splitlines()[:20]:
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _open_text(path: Path, name: str) -> io.TextIOWrapper:
    # surrogateescape keeps undecodable bytes so the one bad record is reported, not the file.
    try:
        return open(path, encoding="utf-8-sig", errors="surrogateescape", newline="")
    except OSError as err:
        raise InputError(name, f"cannot read: {err.strerror or err}") from err


def _counted(lines: Iterator[str], progress: Callable[[int], None] | None) -> Iterator[str]:
    """Pass lines through, reporting roughly how many bytes went by (every ~1 MB)."""
    if progress is None:
        yield from lines
        return
    pending = 0
    for line in lines:
        pending += len(line)
        if pending >= 1 << 20:
            progress(pending)
            pending = 0
        yield line
    if pending:
        progress(pending)


_SURROGATE = re.compile("[\udc80-\udcff]")


def _undecodable(text: str) -> bool:
    """Whether ``text`` holds bytes that were not UTF-8 (kept as surrogates on reading)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def read_csv(
    path: Path,
    required: tuple[str, ...],
    rel: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, dict[str, str], str | None]]:
    """Yield ``(line, row, error)`` per data row; ``error`` says why a row is bad.

    The header must hold the required columns, else :class:`InputError` (nothing can be read).
    """
    name = rel or str(path)
    with _open_text(path, name) as fh:
        reader = csv.reader(_counted(fh, progress))
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise InputError(name, "empty file: expected a CSV header", 1) from None
        except csv.Error as err:
            raise InputError(name, f"malformed CSV header: {err}", 1) from err
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(name, f"missing column(s) {', '.join(missing)} (header: {', '.join(header)})", 1)
        if len(set(header)) != len(header):
            dup = sorted({h for h in header if header.count(h) > 1})
            raise InputError(name, f"duplicate column(s) {', '.join(dup)} in the header", 1)
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as err:
                yield reader.line_num, {}, f"malformed CSV: {err}"
                continue
            line = reader.line_num
            if not fields or all(not f.strip() for f in fields):
                continue
            if any(_undecodable(f) for f in fields):
                yield line, {}, "not UTF-8 text"
                continue
            if len(fields) != len(header):
                yield line, {}, f"expected {len(header)} fields, found {len(fields)}"
                continue
            yield line, {h: f.strip() for h, f in zip(header, fields, strict=True)}, None


def read_jsonl(
    path: Path, rel: str | None = None, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[int, Any, str | None]]:
    """Yield ``(line, value, error)`` per non-blank line; ``error`` says why a line is bad."""
    name = rel or str(path)
    with _open_text(path, name) as fh:
        for number, line in enumerate(_counted(fh, progress), start=1):
            if not line.strip():
                continue
            if _undecodable(line):
                yield number, None, "not UTF-8 text"
                continue
            try:
                value = json.loads(line, object_pairs_hook=_no_duplicate_keys)
            except json.JSONDecodeError as err:
                yield number, None, f"malformed JSON: {err.msg} (column {err.colno})"
                continue
            except _DuplicateKey as err:
                yield number, None, f"duplicate key {err.args[0]!r} in one record"
                continue
            yield number, value, None


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def record_problem(
    value: Any, fields: dict[str, tuple[type, ...]], required: tuple[str, ...], what: str = "a JSON object"
) -> str | None:
    """Why a record does not have the expected shape (required keys, no unknown keys except
    ``x_*``, value types), or None. A boolean is refused unless ``bool`` is listed itself."""
    if not isinstance(value, dict):
        return f"expected {what}, got {type(value).__name__}"
    for key in required:
        if key not in value:
            return f"missing required key {key!r}"
    unknown = sorted(k for k in value if k not in fields and not k.startswith("x_"))
    if unknown:
        return f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(fields)}, x_*)"
    for key, kinds in fields.items():
        if key not in value:
            continue
        v = value[key]
        if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
            want = " or ".join(
                "null" if k is type(None) else _TYPE_NAMES.get(k.__name__, k.__name__) for k in kinds
            )
            shown = f" {v!r}" if isinstance(v, (str, int, float)) and len(repr(v)) <= 40 else ""
            return f"{key} must be {want}, got {type(v).__name__}{shown}"
    return None


_TYPE_NAMES = {"Decimal": "number", "dict": "object", "list": "array"}
