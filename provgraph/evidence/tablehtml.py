"""HTML tables (stdlib :mod:`html.parser`) and CSV texts parsed into the cells of
:mod:`provgraph.evidence.tables`, and the view of such a text numbers are read from.

A number is read from what a reader sees, never from markup: :func:`visible` blanks tags,
comments, scripts and styles (a table cell's or row's tag as ``|``, so that no number reads its
neighbour cell's as its denominator) and writes each character reference (``&#37;``, ``&lt;``)
as its character padded with spaces, so every number keeps its line and column in the source. A CSV
line is read with its delimiters (outside quotes) written as ``|``: ``0.84,0.39`` would read as
one token, ``0.84|0.39`` reads as two numbers, in their own columns.
"""

from __future__ import annotations

import csv
import html
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from html.parser import HTMLParser

from provgraph.evidence.tables import Problem, RawCell, Table, build_table, span_numbers

_MARKUP = re.compile(r"<[A-Za-z/!?]|&")
_ENTITY = re.compile(r"&(?:#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});")
_BOUNDARY = re.compile(r"</?(?:td|th|tr|table|caption|thead|tbody|tfoot)\b", re.IGNORECASE)
_TABLE_TAG = re.compile(r"<(/?)table\b", re.IGNORECASE)
_RAW_TEXT = ("script", "style", "textarea", "title")
#: what a ``<`` that opens no tag is fed to html.parser as (one character, so positions hold),
#: and written back as ``<`` in a cell's text
_STRAY = "\uff1c"


def _blank(text: str) -> str:
    return "".join("\n" if ch == "\n" else " " for ch in text)


def visible(text: str, spans: Sequence[tuple[int, int]] | None = None) -> str:
    """``text`` with its HTML markup blanked (only inside ``spans``, when given), columns kept."""
    lower = text.lower()
    out: list[str] = []
    done = 0
    for start, end in [(0, len(text))] if spans is None else spans:
        out.append(text[done:start])
        out.append(_visible_span(text, lower, start, end))
        done = end
    out.append(text[done:])
    return "".join(out)


def _visible_span(text: str, lower: str, start: int, end: int) -> str:
    out = []
    i = start
    while (m := _MARKUP.search(text, i, end)) is not None:
        at = m.start()
        out.append(text[i:at])
        if text[at] == "&":
            entity = _ENTITY.match(text, at, end)
            if entity is None:
                out.append("&")
                i = at + 1
                continue
            char = html.unescape(entity.group(0))[:1]
            out.append(char + " " * (len(entity.group(0)) - 1))
            i = entity.end()
            continue
        close = _markup_end(text, lower, at, end)
        if close < 0:
            out.append(_blank(text[at:end]) if text.startswith("<!--", at) else text[at:end])
            i = end
            break
        blank = _blank(text[at:close])
        # a cell or row boundary reads as "|": "17%</td><td>(8/45)" is no "17% (8/45)"
        out.append("|" + blank[1:] if _BOUNDARY.match(text, at) and blank[0] == " " else blank)
        i = close
    out.append(text[i:end])
    return "".join(out)


def _markup_end(text: str, lower: str, at: int, end: int) -> int:
    """The end of the tag, comment or raw-text element starting at ``at``, or -1."""
    if text.startswith("<!--", at):
        close = text.find("-->", at + 4, end)
        return close + 3 if close >= 0 else -1
    close = text.find(">", at, end)
    if close < 0:
        return -1
    name = re.match(r"<([A-Za-z]+)", text[at : min(close, at + 12)])
    if name and name.group(1).lower() in _RAW_TEXT:
        stop = lower.find("</" + name.group(1).lower(), close, end)
        if stop >= 0:
            after = text.find(">", stop, end)
            return after + 1 if after >= 0 else -1
    return close + 1


def _parseable(text: str, lower: str, start: int, end: int) -> str:
    """``text[start:end]`` as html.parser can read in linear time, positions kept: comments and
    raw-text elements (script, style) blanked, and a ``<`` that opens no whole tag (another
    ``<`` or the end comes before its ``>``) written as :data:`_STRAY`, text to the parser.
    html.parser rescans an unclosed comment or tag once per later ``<``: quadratic in a
    hostile text."""
    out: list[str] = []
    i, close = start, -1
    while (at := text.find("<", i, end)) >= 0:
        out.append(text[i:at])
        if text.startswith("<!--", at):
            stop = text.find("-->", at + 4, end)
            stop = end if stop < 0 else stop + 3
            out.append(_blank(text[at:stop]))
            i = stop
            continue
        if close < at:
            close = text.find(">", at, end)
            if close < 0:
                close = end  # no tag closes after here: every later "<" is text
        after = text.find("<", at + 1, close) if close < end else at + 1
        if close >= end or after >= 0:
            out.append(_STRAY)
            i = at + 1
            continue
        name = re.match(r"<([A-Za-z]+)", text[at : min(close, at + 12)])
        if name and name.group(1).lower() in _RAW_TEXT:
            stop = lower.find("</" + name.group(1).lower(), close, end)
            stop = end if stop < 0 else (text.find(">", stop, end) + 1 or end)
            out.append(_blank(text[at:stop]))
            i = stop
            continue
        out.append(text[at : close + 1])
        i = close + 1
    out.append(text[i:end])
    return "".join(out)


def table_regions(text: str) -> list[tuple[int, int]]:
    """(start, end) of every outermost ``<table>...</table>`` of a text (an unclosed one runs
    to the end)."""
    regions, depth, start = [], 0, 0
    for m in _TABLE_TAG.finditer(text):
        if not m.group(1):
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                close = text.find(">", m.end())
                regions.append((start, close + 1 if close >= 0 else len(text)))
    if depth:
        regions.append((start, len(text)))
    return regions


def view(lines: Sequence[tuple[int, str]], fmt: str) -> list[tuple[int, str]]:
    """The lines numbers are read from: markup blanked in HTML (a whole HTML text, the HTML
    tables of a Markdown text), delimiters written as ``|`` in CSV and TSV, others as they are."""
    if fmt in DELIMITERS:
        return [(n, _csv_view(t, DELIMITERS[fmt])) for n, t in lines]
    if fmt not in ("html", "markdown") or not lines:
        return list(lines)
    text = "\n".join(t for _, t in lines)
    if fmt == "markdown":
        if "<table" not in text.lower():
            return list(lines)
        text = visible(text, table_regions(text))
    else:
        text = visible(text)
    return list(zip((n for n, _ in lines), text.split("\n"), strict=True))


# --- HTML --------------------------------------------------------------------------------


class _Builder:
    def __init__(self, line: int) -> None:
        self.line = line
        self.caption: list[str] = []
        self.rows: list[tuple[bool, list[RawCell]]] = []
        self.row: list[RawCell] | None = None
        self.head = False  # inside <thead>
        self.row_head = False  # the row is in <thead> or has <th> cells only
        self.cell: tuple[int, int, list[str]] | None = None  # start offset, colspan, text
        self.rowspan = 1


def _span(attrs: list[tuple[str, str | None]], name: str) -> int:
    """A colspan or rowspan attribute: 1 unless a number, at most 1000 (HTML's own limits are
    1000 and 65534)."""
    value = (dict(attrs).get(name) or "1").strip()
    return max(1, min(int(value), 1000)) if value.isdigit() else 1


class _Parser(HTMLParser):
    def __init__(self, source: _Lines) -> None:
        super().__init__(convert_charrefs=True)
        self.source = source
        self.stack: list[_Builder] = []
        self.tables: list[Table] = []
        self.in_caption = False

    def _at(self) -> int:
        line, column = self.getpos()
        return self.source.starts[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            if self.stack:  # a table in a cell: the cell ends where the inner table begins
                self._close_cell(self.stack[-1], self._at())
            self.stack.append(_Builder(self.source.numbers[self.getpos()[0] - 1]))
            return
        if not self.stack:
            return
        top = self.stack[-1]
        if tag == "caption":
            self.in_caption = True
        elif tag == "thead":
            top.head = True
        elif tag in ("tbody", "tfoot"):
            top.head = False
        elif tag == "tr":
            self._close_row(top, self._at())
            top.row, top.row_head = [], True
        elif tag in ("td", "th"):
            at = self._at()
            self._close_cell(top, at)
            if top.row is None:
                top.row, top.row_head = [], True
            if tag == "td":
                top.row_head = False
            top.cell = (at + len(self.get_starttag_text() or ""), _span(attrs, "colspan"), [])
            top.rowspan = _span(attrs, "rowspan")
        elif tag == "br" and top.cell:
            top.cell[2].append(" ")

    def handle_endtag(self, tag: str) -> None:
        if not self.stack:
            return
        top = self.stack[-1]
        if tag in ("td", "th"):
            self._close_cell(top, self._at())
        elif tag == "tr":
            self._close_row(top, self._at())
        elif tag == "caption":
            self.in_caption = False
        elif tag == "thead":
            top.head = False
        elif tag == "table":
            self._close_row(top, self._at())
            self.tables.append(self._build(self.stack.pop()))

    def handle_data(self, data: str) -> None:
        if not self.stack:
            return
        top = self.stack[-1]
        if top.cell is not None:
            top.cell[2].append(data)
        elif self.in_caption:
            top.caption.append(data)

    def _close_cell(self, top: _Builder, at: int) -> None:
        if top.cell is None or top.row is None:
            top.cell = None
            return
        start, span, parts = top.cell
        text = " ".join("".join(parts).replace(_STRAY, "<").split())
        top.row.append(replace(self.source.cell(text, start, at, span), rowspan=top.rowspan))
        top.cell = None

    def _close_row(self, top: _Builder, at: int) -> None:
        self._close_cell(top, at)
        if top.row:
            top.rows.append((top.head or top.row_head, top.row))
        top.row = None

    def close_all(self) -> None:
        while self.stack:
            top = self.stack[-1]
            self._close_row(top, len(self.source.text))
            self.tables.append(self._build(self.stack.pop()))

    def _build(self, top: _Builder) -> Table:
        count = 0
        while count < len(top.rows) and top.rows[count][0]:
            count += 1
        header = [cells for _, cells in top.rows[:count]]
        body = [cells for _, cells in top.rows[count:]]
        caption = " ".join("".join(top.caption).split())
        return build_table("html", top.line, caption, header, body)


class _Lines:
    """A text's lines joined by newlines: from an offset to a line and column, and the cells
    whose numbers are read from its visible view."""

    def __init__(self, lines: Sequence[tuple[int, str]], seen: Sequence[tuple[int, str]]) -> None:
        self.numbers = [n for n, _ in lines]
        self.text = "\n".join(t for _, t in lines)
        self.seen = [t for _, t in seen]
        self.starts, offset = [], 0
        for _, line in lines:
            self.starts.append(offset)
            offset += len(line) + 1

    def cell(self, text: str, start: int, end: int, span: int) -> RawCell:
        first = bisect_right(self.starts, start) - 1
        last = bisect_right(self.starts, max(start, end - 1)) - 1
        pieces, where = [], None
        for k in range(first, last + 1):
            a = max(start - self.starts[k], 0)
            b = min(end - self.starts[k], len(self.seen[k]))
            if a < b:
                pieces.append((self.numbers[k], self.seen[k], a, b))
                lead = len(self.seen[k][a:b]) - len(self.seen[k][a:b].lstrip())
                if where is None and a + lead < b:
                    where = (self.numbers[k], a + lead + 1)
        found, at = span_numbers(pieces, latex=False)
        line, column = where or (self.numbers[first], start - self.starts[first] + 1)
        return RawCell(text, line, column, found, at, span)


def html_tables(lines: Sequence[tuple[int, str]]) -> list[Table]:
    """Every ``<table>`` of an HTML text (or of raw HTML in Markdown), nested ones included:
    header rows are the ``<thead>`` rows or the leading rows of ``<th>`` cells only. Only the
    tables are parsed; the text between them is fed as its newlines and spaces, so the
    parser's positions stay the text's."""
    source = _Lines(lines, view(lines, "html"))
    parser = _Parser(source)
    lower = source.text.lower()
    done = 0
    for start, end in table_regions(source.text):
        gap = source.text[done:start]
        lines_in_gap = gap.count("\n")
        parser.feed(
            "\n" * lines_in_gap + " " * (len(gap) - gap.rfind("\n") - 1 if lines_in_gap else len(gap))
        )
        parser.feed(_parseable(source.text, lower, start, end))
        done = end
    parser.close()
    parser.close_all()
    return parser.tables


# --- CSV ---------------------------------------------------------------------------------


#: A delimited text's field separator. TSV as pandas ``to_csv(sep="\t")`` and Python's csv
#: module write it: ``"`` quotes a field holding a tab or a quote (IANA's
#: text/tab-separated-values allows no tab in a field, so its files read the same).
DELIMITERS = {"csv": ",", "tsv": "\t"}


def _field_spans(text: str, delimiter: str = ",") -> list[tuple[int, int]]:
    """(start, end) of each field of a delimited line (``"`` quoted, ``""`` escaped)."""
    spans, i, n, start, quoted = [], 0, len(text), 0, False
    while i < n:
        ch = text[i]
        if quoted:
            if ch == '"':
                if i + 1 < n and text[i + 1] == '"':
                    i += 1
                else:
                    quoted = False
        elif ch == '"':
            quoted = True
        elif ch == delimiter:
            spans.append((start, i))
            start = i + 1
        i += 1
    spans.append((start, n))
    return spans


def _csv_view(text: str, delimiter: str = ",") -> str:
    chars = list(text)
    for _, end in _field_spans(text, delimiter)[:-1]:
        chars[end] = "|"
    return "".join(chars)


def csv_tables(lines: Sequence[tuple[int, str]], problem: Problem, fmt: str = "csv") -> list[Table]:
    """A CSV (or TSV: ``fmt``) text as one table: the first record is the header; a record with
    another number of fields than the header is reported and left out. Records are one line
    each (a quoted field running over lines is reported)."""
    delimiter = DELIMITERS[fmt]
    rows: list[list[RawCell]] = []
    header: list[RawCell] | None = None
    first = None
    for line_no, text in lines:
        if not text.strip():
            continue
        try:
            values = next(csv.reader([text], delimiter=delimiter, strict=True))
        except csv.Error as exc:
            problem(line_no, f"not a {fmt.upper()} record ({exc}); its numbers are read, not as table cells")
            continue
        spans = _field_spans(text, delimiter)
        if len(spans) != len(values):
            problem(line_no, "a quoted field runs past the line; not read as table cells")
            continue
        seen = _csv_view(text, delimiter)
        cells = []
        for value, (a, b) in zip(values, spans, strict=True):
            found, at = span_numbers([(line_no, seen, a, b)], latex=False)
            lead = len(text[a:b]) - len(text[a:b].lstrip())
            cells.append(RawCell(" ".join(value.split()), line_no, a + min(lead, b - a) + 1, found, at))
        if header is None:
            header, first = cells, line_no
        elif len(cells) != len(header):
            problem(
                line_no,
                f"a row of {len(cells)} fields under a header of {len(header)}; not read as a table row",
            )
        else:
            rows.append(cells)
    if header is None or first is None:
        return []
    return [build_table(fmt, first, None, [header], rows, len(header))]
