"""Tables in texts, parsed into cells: Markdown (GFM pipe tables), LaTeX, HTML and CSV.

:func:`find_tables` returns every table of a text with its caption, column headers (stacked
headers joined ``" / "``), the unit a header states (``FPR (%)``), and its body rows: the row
label, the group row above (``| **Claude** | | |``), and each cell with its text as written
(markup stripped), its position (line, 1-based column) and the numbers
:func:`provgraph.evidence.claims.numbers` reads in it, whose ``column`` stays the 0-based column
on the source line. The claim writer (:mod:`provgraph.evidence.claimnodes`) matches a line's
claims to cells by that column.

Every parser is linear in the text: one pass over the characters, no backtracking regular
expression over a whole row.

>>> t = find_tables([(1, "| Model | DR (%) |"), (2, "|---|--:|"), (3, "| **A** | | "),
...                  (4, "| m1 | 94 |"), (5, "| m2 | **17%** |")], "markdown")[0]
>>> t.columns, t.units, [(r.label, r.group, r.cells[1].text) for r in t.rows]
(('Model', 'DR (%)'), (None, 'percent'), [('m1', 'A', '94'), ('m2', 'A', '17%')])
>>> [(c.line, c.column, [n.text for n in c.numbers]) for c in t.rows[1].cells]
[(5, 3, []), (5, 8, ['17%'])]
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache

from provgraph.evidence.claims import Number, numbers
from provgraph.evidence.statnames import header_unit

#: Reports a line the parser could not read as table (CSV: a ragged row): (line, reason).
Problem = Callable[[int, str], None]
FORMATS = ("markdown", "latex", "html", "csv", "tsv")
#: Longest cell whose markup is stripped for its text. A table cell is a name or a value; a
#: longer one is prose or hostile, and stripping unclosed markup would scan it once per mark.
MAX_MARKUP_CHARS = 4096
#: Most columns a table is read with (cells past it are claims without a cell): every row is
#: padded to the table's width, so a hostile row of 10^5 cells would multiply every other row.
MAX_COLUMNS = 128


@dataclass(frozen=True)
class Cell:
    """One cell as written. ``span`` is how many columns it covers (``\\multicolumn{2}``,
    ``colspan="2"``); the columns it covers after its first hold an empty cell of span 0, so a
    row's ``cells[i]`` is always column ``i + 1``. ``number_lines`` is the line of each number
    (a LaTeX cell may run over several lines)."""

    text: str
    line: int
    column: int
    numbers: tuple[Number, ...] = ()
    span: int = 1
    number_lines: tuple[int, ...] = ()


@dataclass(frozen=True)
class Row:
    """A body row. Group rows (a label, every other cell empty) are not rows: they set ``group``
    on the rows below them. ``index`` is 1-based among the body rows."""

    index: int
    label: str | None
    group: str | None
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Table:
    format: str
    line: int
    caption: str | None
    columns: tuple[str, ...]
    units: tuple[str | None, ...]
    rows: tuple[Row, ...]


def find_tables(lines: Sequence[tuple[int, str]], fmt: str, problem: Problem | None = None) -> list[Table]:
    """The tables of a text given as (1-based line number, line) pairs, in source order.

    ``fmt`` is the text's format: ``"markdown"`` (pipe tables and raw HTML tables), ``"latex"``,
    ``"html"``, ``"csv"`` or ``"tsv"`` (the whole text is one table). Lines the parser cannot read are
    reported to ``problem`` and left out; nothing raises on bad input.
    """
    # The parsers of the other formats are in their own modules, which build on this one's
    # cell model; imported here, not at the top, so that those modules can import this one.
    from provgraph.evidence.tablehtml import csv_tables, html_tables
    from provgraph.evidence.tablelatex import latex_tables

    lines = list(lines)
    report = problem or (lambda _line, _reason: None)
    if fmt == "markdown":
        found = markdown_tables(lines)
        if any("<table" in text.lower() for _, text in lines):
            found += html_tables(lines)
    elif fmt == "latex":
        found = latex_tables(lines)
    elif fmt == "html":
        found = html_tables(lines)
    elif fmt in ("csv", "tsv"):
        found = csv_tables(lines, report, fmt)
    else:
        raise ValueError(f"unknown table format {fmt!r}; one of {', '.join(FORMATS)}")
    return sorted(found, key=lambda t: t.line)


# --- building a table from parsed cells -------------------------------------------------


@dataclass
class RawCell:
    """A cell while a parser reads it: text (markup stripped), position, numbers, span."""

    text: str
    line: int
    column: int
    numbers: tuple[Number, ...] = ()
    number_lines: tuple[int, ...] = ()
    span: int = 1
    rowspan: int = 1
    covered: str | None = None  # a cell a rowspan above covers: that cell's text


def span_numbers(
    pieces: Sequence[tuple[int, str, int, int]], latex: bool
) -> tuple[tuple[Number, ...], tuple[int, ...]]:
    """The numbers of a cell written over ``pieces`` (line number, line text, start, end):
    those the line scan reads on each line that start inside the piece, with their columns on
    the line, so a cell's numbers are exactly the claims written there."""
    found: list[Number] = []
    at: list[int] = []
    for line_no, text, start, end in pieces:
        columns, scanned = _line_numbers(text, latex)
        k = bisect_left(columns, start)
        while k < len(columns) and columns[k] < end:
            found.append(scanned[k])
            at.append(line_no)
            k += 1
    if not found and len(pieces) == 1:
        line_no, text, start, end = pieces[0]
        if end - start <= MAX_MARKUP_CHARS and (whole := _integer_cell(text[start:end])) is not None:
            found.append(replace(whole, column=whole.column + start))
            at.append(line_no)
    return tuple(found), tuple(at)


@lru_cache(maxsize=1024)
def _line_numbers(text: str, latex: bool) -> tuple[list[int], list[Number]]:
    """One line scan per line, however many cells the line holds (a row of 10^5 cells)."""
    scanned = numbers(text, latex=latex, table_label=False)
    return [n.column for n in scanned], scanned


_CELL_MARKUP = re.compile(r"\\(?:textbf|textit|emph|textrm|mathbf|mathrm|underline|bf|it)\b|[{}$*_`\s]")
_INTEGER = re.compile(r"-?\d{1,3}(?:,\d{3})+|-?\d+")


def _integer_cell(raw: str) -> Number | None:
    """A cell that writes one integer and nothing else (``17``, ``**17**``, ``\\textbf{17}``):
    a count or a percentage in a column that says %; in prose a bare integer is no claim."""
    if not _INTEGER.fullmatch(_CELL_MARKUP.sub("", raw)):
        return None
    m = _INTEGER.search(raw)
    if m is None:
        return None
    return Number(
        m.group(0).replace(",", ""), Decimal(m.group(0).replace(",", "")), "number", Decimal(1), m.start()
    )


def is_integer_cell_number(number: Number) -> bool:
    """Whether a number is one :func:`span_numbers` read from an integer-only cell (the line
    scan never writes an unnamed integer)."""
    return number.unit == "number" and number.label is None and "." not in number.text


_NUMERIC = re.compile(r"[\d.,%/\s\-–+±()\[\]]*")


def is_name(text: str) -> bool:
    """A row label is a name, not a number (``0.84``, ``39% [17--63]`` are values)."""
    return bool(text) and not _NUMERIC.fullmatch(text)


def _rowspans(rows: Sequence[Sequence[RawCell]], omitted: bool) -> list[list[RawCell]]:
    """Rows with the columns a cell above covers (``rowspan``, ``\\multirow``) marked: HTML
    omits those cells (``omitted``), so a covering cell is inserted; LaTeX writes them empty,
    so the empty cell is marked. A covered cell carries the covering cell's text."""
    covered: dict[int, tuple[int, RawCell]] = {}  # column -> (rows still covered, the cell)
    out: list[list[RawCell]] = []
    for raw in rows:
        placed: list[RawCell] = []
        col, i = 0, 0
        last = max(covered, default=-1) if omitted else -1
        while i < len(raw) or col <= last:
            hit = covered.get(col)
            cell = raw[i] if i < len(raw) else None
            if hit and (omitted or (cell is not None and not cell.text and not cell.numbers)):
                placed.append(RawCell("", hit[1].line, hit[1].column, covered=hit[1].text))
                i += 0 if omitted else 1
                col += 1
                continue
            if cell is None:  # a gap before a column covered further right
                placed.append(RawCell("", placed[-1].line if placed else 0, 0))
                col += 1
                continue
            placed.append(cell)
            if cell.rowspan > 1:
                for k in range(col, min(col + max(1, cell.span), MAX_COLUMNS)):
                    covered[k] = (cell.rowspan, cell)
            col += max(1, cell.span)
            i += 1
        covered = {k: (n - 1, c) for k, (n, c) in covered.items() if n > 1}
        out.append(placed)
    return out


def _expand(cells: Sequence[RawCell], width: int) -> list[Cell]:
    out: list[Cell] = []
    for raw in cells:
        if len(out) >= width:
            break
        if raw.covered is not None:
            out.append(Cell("", raw.line, raw.column, (), 0))
            continue
        span = max(1, min(raw.span, width - len(out)))
        out.append(Cell(raw.text, raw.line, raw.column, raw.numbers, span, raw.number_lines))
        out += [Cell("", raw.line, raw.column, (), 0)] * (span - 1)
    if out:
        last = out[-1]
        out += [Cell("", last.line, last.column)] * (width - len(out))
    return out


def _headers(header_rows: Sequence[Sequence[RawCell]], width: int) -> tuple[str, ...]:
    parts: list[list[str]] = [[] for _ in range(width)]
    for row in header_rows:
        spanning = ""
        for index, (cell, raw) in enumerate(zip(_expand(row, width), _raw_columns(row, width), strict=True)):
            if raw.covered is not None:
                spanning = raw.covered
            elif cell.span:
                spanning = cell.text
            text = spanning  # a column a header spans gets the spanning header's text
            if text and (not parts[index] or parts[index][-1] != text):
                parts[index].append(text)
    return tuple(" / ".join(p) for p in parts)


def _raw_columns(cells: Sequence[RawCell], width: int) -> list[RawCell]:
    """The raw cell at each of ``width`` columns (a spanning cell at each column it spans)."""
    out: list[RawCell] = []
    for raw in cells:
        if len(out) >= width:
            break  # a hostile row of colspan=1000 cells stops at the width
        out += [raw] * (1 if raw.covered is not None else max(1, raw.span))
    out = out[:width]
    return out + [RawCell("", 0, 0)] * (width - len(out))


def build_table(
    fmt: str,
    line: int,
    caption: str | None,
    header_rows: Sequence[Sequence[RawCell]],
    body_rows: Sequence[Sequence[RawCell]],
    width: int | None = None,
) -> Table:
    """A table from its header and body rows of raw cells: headers stacked, spans expanded,
    group rows folded into the ``group`` of the rows below them."""
    omitted = fmt == "html"
    header_rows, body_rows = _rowspans(header_rows, omitted), _rowspans(body_rows, omitted)
    if width is None:
        width = max((sum(max(1, c.span) for c in r) for r in (*header_rows, *body_rows)), default=0)
    width = min(width, MAX_COLUMNS)
    columns = _headers(header_rows, width) if header_rows else ("",) * width
    rows: list[Row] = []
    group: str | None = None
    for raw in body_rows:
        if raw and any(is_integer_cell_number(n) for n in raw[0].numbers):
            # an integer in the first column is a row number or an id, not a value
            raw = [replace(raw[0], numbers=(), number_lines=()), *raw[1:]]
        cells = _expand(raw, width)
        if not cells or all(not c.text for c in cells):
            continue
        first = cells[0]
        if width > 1 and first.text and not first.numbers and all(not c.text for c in cells[1:]):
            group = first.text
            continue
        label = raw[0].covered if raw and raw[0].covered is not None else first.text
        rows.append(Row(len(rows) + 1, label if is_name(label) else None, group, tuple(cells)))
    units = tuple(header_unit(c) for c in columns)
    return Table(fmt, line, caption or None, columns, units, tuple(rows))


# --- Markdown (GitHub Flavored Markdown pipe tables) ----------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLOCK_START = re.compile(r"^ {0,3}(?:#{1,6}(?:\s|$)|>|`{3,}|~{3,})")
_MD_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_MD_EM = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_MD_CODE = re.compile(r"(`+)(.+?)\1")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_MD_MARK = re.compile(r"[*_`\[\\<]")
_MD_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def split_pipes(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of a pipe-table row's cells; ``\\|`` does not split, a leading
    and a trailing pipe open and close the row."""
    bounds = [-1]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "|":
            bounds.append(i)
        i += 1
    bounds.append(n)
    spans = [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)]
    if spans and len(spans) > 1 and not text[spans[0][0] : spans[0][1]].strip():
        spans = spans[1:]
    if spans and len(spans) > 1 and not text[spans[-1][0] : spans[-1][1]].strip():
        spans = spans[:-1]
    return spans


def markdown_text(raw: str) -> str:
    """A cell's text without emphasis, code, link and escape markup (a cell longer than
    :data:`MAX_MARKUP_CHARS` keeps its markup: an unclosed ``**`` costs a scan to its end)."""
    if len(raw) > MAX_MARKUP_CHARS or not _MD_MARK.search(raw):
        return " ".join(raw.split())
    text = _MD_BREAK.sub(" ", raw.strip())
    text = _MD_CODE.sub(lambda m: m.group(2).strip(), text)
    text = _MD_LINK.sub(r"\1", text)
    for _ in range(3):  # nested emphasis: ***x***, **_x_**
        text = _MD_STRONG.sub(r"\2", text)
        text = _MD_EM.sub(r"\2", text)
    text = _MD_ESCAPE.sub(r"\1", text)
    return " ".join(text.split())


def _delimiter(text: str) -> int:
    """The number of cells of a delimiter row (``|---|:-:|``), or 0 when the line is not one."""
    if "-" not in text or not set(text) <= set("|:- \t"):
        return 0
    cells = [text[a:b].strip() for a, b in split_pipes(text)]
    if "|" not in text and len(cells) == 1 and ":" not in cells[0]:
        return 0  # a bare "---" is a thematic break or a setext heading, not a table
    for cell in cells:
        if not cell or cell.strip(":") == "" or set(cell.strip(":")) != {"-"}:
            return 0
    return len(cells)


def _md_cells(line_no: int, text: str) -> list[RawCell]:
    cells = []
    for start, end in split_pipes(text):
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        found, at = span_numbers([(line_no, text, start, end)], latex=False)
        cells.append(RawCell(markdown_text(raw), line_no, start + min(lead, len(raw)) + 1, found, at))
    return cells


def markdown_tables(lines: Sequence[tuple[int, str]]) -> list[Table]:
    """GFM pipe tables: a header row, a delimiter row with as many cells, then body rows up to
    a blank line or another block; body rows are cut or padded to the header's width. The
    caption is a Pandoc ``Table: ...`` (or ``: ...``) paragraph before or after the table, or a
    ``Table 2. ...`` / ``**Table 2:** ...`` line just above it."""
    tables: list[Table] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line_no, text = lines[i]
        opened = _FENCE.match(text)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            i += 1
            continue
        if opened:
            fence = opened.group(1)
            i += 1
            continue
        width = _delimiter(lines[i + 1][1]) if i + 1 < len(lines) and "|" in text else 0
        header = _md_cells(line_no, text) if width else []
        if not width or len(header) != width:
            i += 1
            continue
        caption = _caption_near(lines, i, -1)
        body: list[list[RawCell]] = []
        i += 2
        while i < len(lines) and lines[i][1].strip() and not _BLOCK_START.match(lines[i][1]):
            if _PANDOC_CAPTION.match(lines[i][1]) and "|" not in lines[i][1]:
                break  # Pandoc writes the caption right under the table
            body.append(_md_cells(*lines[i])[:width])
            i += 1
        caption = caption or _caption_near(lines, i - 1, +1)
        tables.append(build_table("markdown", line_no, caption, [header], body, width))
    return tables


_PANDOC_CAPTION = re.compile(r"^\s{0,3}(?:[Tt]able)?:\s+(\S.*)$")
_NUMBERED_CAPTION = re.compile(r"^\s{0,3}(?:\*\*|__|\*|_)?Table\s+[\w.-]{1,8}[.:]")


def _caption_near(lines: Sequence[tuple[int, str]], at: int, step: int) -> str | None:
    """The caption paragraph next to the table line ``at``: the line above (``step`` -1) or
    below (+1), or the one after a blank line."""
    for distance in (1, 2):
        k = at + step * distance
        if not 0 <= k < len(lines):
            return None
        text = lines[k][1]
        if not text.strip():
            continue
        if m := _PANDOC_CAPTION.match(text):
            return markdown_text(m.group(1))
        if step < 0 and _NUMBERED_CAPTION.match(text) and "|" not in text:
            return markdown_text(text)
        return None
    return None
