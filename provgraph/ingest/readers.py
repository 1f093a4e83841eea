"""Reading tabular sources record by record, with line numbers for every problem.

One bad record never costs the others: a JSON Lines record over :data:`MAX_RECORD_BYTES`,
nested deeper than :data:`MAX_DEPTH`, with an integer too long for Python or a lone surrogate
is rejected on its own line (:func:`loads_checked` holds these checks for whole-file documents
too, which :func:`document_bytes` bounds by :data:`MAX_DOCUMENT_BYTES`); a CSV row with an
unclosed quote is its own bad row, not the rest of the file.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from provgraph.errors import InputError

SNIFF_BYTES = 64 * 1024
#: One JSON Lines record (one line), one CSV line or one sidecar document: longer ones are
#: rejected unread.
MAX_RECORD_BYTES = 8 * 1024 * 1024
#: A whole-file JSON document (a results file, reported statistics, a list of build records).
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
#: Nesting of JSON arrays and objects (the real formats nest under 10 deep).
MAX_DEPTH = 100


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
    """Column names of a CSV file ([] when it does not look like CSV).

    Only the header line must be text: a NUL in a later row is that row's problem, and must
    not make the whole file look binary (it would then be imported as a plain file).
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return []
    line = head.splitlines()[0] if head else b""
    if b"\x00" in line:
        return []
    first = line.decode("utf-8", errors="replace")
    try:
        return [c.strip().lstrip("\ufeff") for c in next(csv.reader([first]))]
    except (csv.Error, StopIteration):
        return []


def first_json_object(path: Path) -> dict[str, Any] | None:
    """The first JSON object of a JSON Lines file, for detection (None if it has none).

    Lines are read whole up to :data:`MAX_RECORD_BYTES` (a first record over 64 KiB is still
    recognised); a bad line among the first :data:`_DETECT_LINES` is passed over, and one over
    the limit is read through up to :data:`DETECT_SKIP_BYTES`, so one bad first record does not
    make the whole file unrecognised.
    """
    try:
        with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
            lines = _bounded_lines(fh, max_skip=DETECT_SKIP_BYTES)
            for _, line, error in itertools.islice(lines, _DETECT_LINES):
                if error or not line.strip() or "\x00" in line or _undecodable(line):
                    continue
                try:
                    value = loads_checked(line)
                except (json.JSONDecodeError, RecordError):
                    continue
                return value if isinstance(value, dict) else None
    except (OSError, UnicodeError):
        return None
    return None


_DETECT_LINES = 20
#: How far detection reads through over-long lines before it gives up on a file (in 1 MiB
#: chunks, so memory stays bounded): a first record a little over the record limit is one
#: rejected record of a recognised file, not a file of unknown format.
DETECT_SKIP_BYTES = 4 * MAX_RECORD_BYTES


def _bounded_lines(
    fh: io.TextIOWrapper, max_skip: int | None = None
) -> Iterator[tuple[int, str, str | None]]:
    """``(number, line, error)`` per line, holding at most :data:`MAX_RECORD_BYTES` of one line
    in memory: a longer line is read on in chunks and given as an error (with ``max_skip``,
    the lines end after skipping that much: detection reads no further)."""
    limit = MAX_RECORD_BYTES
    number = 0
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit or (not line.isascii() and len(line) * 4 > limit and _utf8_size(line) > limit):
            skipped = len(line)
            while line and not line.endswith(("\n", "\r")):
                if max_skip is not None and skipped > max_skip:
                    return
                line = fh.readline(1 << 20)
                skipped += len(line)
            yield number, "", f"record over {_mib(limit)} (the limit for one JSON record)"
            continue
        yield number, line, None


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogateescape"))


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


class RecordError(ValueError):
    """A JSON text that parses as JSON but cannot be stored or breaks a limit; the message
    says which (nesting depth, a number too long, a lone surrogate)."""


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels (the limit for JSON arrays and objects)"


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON ``text`` nests arrays and objects deeper than ``limit`` (brackets in
    strings do not count). Cheap: the brackets are only counted when there are enough of them."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) > limit


def lone_surrogate(value: Any) -> str | None:
    """Where a parsed JSON value holds a string (or key) with a lone surrogate (``\\ud800``
    alone, which no UTF-8 text can hold), as a message, or None."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            found = _LONE_SURROGATE.search(v)
            if found:
                at = f" in {where}" if where else ""
                return f"lone surrogate \\u{ord(found.group()):04x}{at}: not storable as UTF-8 text"
        elif isinstance(v, dict):
            for k, item in v.items():
                if _LONE_SURROGATE.search(k):
                    at = f" of {where}" if where else ""
                    return f"lone surrogate in a key{at}: not storable as UTF-8 text"
                stack.append((f"{where}.{k}" if where else k, item))
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(v))
    return None


@functools.lru_cache(maxsize=8)  # json.loads would build a decoder per record
def _decoder(parse_float: Callable[[str], Any] | None, pairs_hook: Callable | None) -> json.JSONDecoder:
    return json.JSONDecoder(parse_float=parse_float, object_pairs_hook=pairs_hook)


def loads_checked(
    text: str,
    parse_float: Callable[[str], Any] | None = None,
    pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    surrogates: bool = True,
) -> Any:
    """``json.loads`` within the limits: nesting over :data:`MAX_DEPTH`, an integer longer than
    Python converts, or (with ``surrogates``) a lone surrogate in a string raise
    :class:`RecordError`; malformed JSON raises :class:`json.JSONDecodeError` as before."""
    if too_deep(text):
        raise RecordError(_TOO_DEEP)
    try:
        value = _decoder(parse_float, pairs_hook).decode(text)
    except json.JSONDecodeError:
        raise
    except RecursionError as err:
        raise RecordError(_TOO_DEEP) from err
    except ValueError as err:
        if "integer string conversion" not in str(err):
            raise
        digits = sys.get_int_max_str_digits()
        raise RecordError(f"a number with more than {digits} digits (the limit for one JSON number)") from err
    if surrogates and "\\u" in text and _ESCAPED_SURROGATE.search(text):
        where = lone_surrogate(value)
        if where:
            raise RecordError(where)
    return value


def document_bytes(path: Path, rel: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of a whole-file JSON document, refused (:class:`InputError`) over ``limit``."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise InputError(rel, f"{size} bytes: over {_mib(limit)}, the limit for one JSON document")
        return path.read_bytes()
    except OSError as err:
        raise InputError(rel, f"cannot read: {err.strerror or err}") from err


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
        oversize: set[int] = set()
        lines = _Replayable(_counted(_csv_lines(fh, oversize), progress))
        reader = csv.reader(lines)
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
            lines.taken = []
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as err:
                yield lines.recover() or lines.number, {}, f"malformed CSV: {err}"
                continue
            line = lines.number
            if line in oversize:
                yield line, {}, f"line over {_mib(MAX_RECORD_BYTES)} (the limit for one CSV line)"
                continue
            if not fields or all(not f.strip() for f in fields):
                continue
            if not all(map(str.isascii, fields)) and any(_undecodable(f) for f in fields):
                yield line, {}, "not UTF-8 text"
                continue
            if len(fields) != len(header):
                start = lines.recover()
                found = f"expected {len(header)} fields, found {len(fields)}"
                yield (start, {}, f"{found} (an unclosed quote?)") if start else (line, {}, found)
                continue
            yield line, {h: f.strip() for h, f in zip(header, fields, strict=True)}, None


def _csv_lines(fh: io.TextIOWrapper, oversize: set[int]) -> Iterator[str]:
    """The lines of a CSV file, none held longer than :data:`MAX_RECORD_BYTES`: a longer line
    is skipped in chunks, its number added to ``oversize`` and an empty line given instead (so
    the csv module sees a blank row there, which :func:`read_csv` reports)."""
    for number, line, error in _bounded_lines(fh):
        if error is not None:
            oversize.add(number)
            yield "\n"
        else:
            yield line


class _Replayable:
    """Lines for :mod:`csv`, numbered, that can be handed out again.

    An unclosed quote makes the csv module read one "row" to the end of the file; when such a
    row spanning several lines is bad, its first line is the bad row and the lines after it
    are read again as rows of their own (one bad row must not cost the rest of the file).
    """

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self._again: list[str] = []
        self.number = 0  # the physical line last handed out
        self.taken: list[str] = []  # the lines of the row being read

    def __iter__(self) -> _Replayable:
        return self

    def __next__(self) -> str:
        line = self._again.pop() if self._again else next(self._lines)
        self.number += 1
        self.taken.append(line)
        return line

    def recover(self) -> int | None:
        """For a bad row over several lines: hand all but its first line out again and return
        the first line's number; None for a bad row on one line."""
        if len(self.taken) < 2:
            return None
        rest = self.taken[1:]
        self._again.extend(reversed(rest))
        self.number -= len(rest)
        return self.number


def read_jsonl(
    path: Path, rel: str | None = None, progress: Callable[[int], None] | None = None
) -> Iterator[tuple[int | None, Any, str | None]]:
    """Yield ``(line, value, error)`` per non-blank line; ``error`` says why a line is bad.

    A record that breaks a limit (:data:`MAX_RECORD_BYTES`, :data:`MAX_DEPTH`, a number too
    long) or holds a lone surrogate is one bad line. A file with no record at all gives one
    ``(None, None, "no records")``.
    """
    name = rel or str(path)
    empty = True
    with _open_text(path, name) as fh:
        pending = 0  # bytes read since progress was last told (told every ~1 MB)
        for number, line, error in _bounded_lines(fh):
            pending += len(line)
            if progress is not None and pending >= 1 << 20:
                progress(pending)
                pending = 0
            if error:
                empty = False
                yield number, None, error
                continue
            if not line.strip():
                continue
            empty = False
            if _undecodable(line):
                yield number, None, "not UTF-8 text"
                continue
            try:
                value = loads_checked(line, pairs_hook=_no_duplicate_keys)
            except json.JSONDecodeError as err:
                yield number, None, f"malformed JSON: {err.msg} (column {err.colno})"
                continue
            except _DuplicateKey as err:
                yield number, None, f"duplicate key {err.args[0]!r} in one record"
                continue
            except RecordError as err:
                yield number, None, str(err)
                continue
            yield number, value, None
    if progress is not None and pending:
        progress(pending)
    if empty:
        yield None, None, "no records"


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # built in C: the usual object has no duplicate, and is checked by its size
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for k, _ in pairs:  # the first key that repeats, as the loop that built the dict reported it
        if k in seen:
            raise _DuplicateKey(k)
        seen.add(k)
    return out  # unreachable: a smaller dict means a repeated key


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
