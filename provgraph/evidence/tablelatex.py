"""LaTeX tables (``tabular``, ``tabular*``, ``tabularx``, ``tabulary``, ``longtable``) parsed into
the cells of :mod:`provgraph.evidence.tables`.

Rows end at ``\\\\`` (or ``\\tabularnewline``) and cells at an unescaped ``&``, both only outside
braces, so a ``\\makecell{a\\\\b}`` or a nested ``tabular`` stays one cell. Booktabs and
``\\hline`` rules are rules, not rows; the header is the rows before the first ``\\midrule`` (or
the first ``\\hline`` after a row); ``\\multicolumn{k}`` spans k columns and its text stacks over
the header row below it. The caption is the ``\\caption{}`` of the ``table`` environment around
the tabular (or of the ``longtable`` itself). Comments are blanked first, keeping columns.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace

from provgraph.evidence.tables import MAX_MARKUP_CHARS, RawCell, Table, build_table, span_numbers

_ENVS = re.compile(r"\\(begin|end)\{(tabular\*?|tabularx|tabulary|longtable\*?)\}")
_FLOAT = re.compile(r"\\(begin|end)\{(table\*?|longtable\*?)\}")
_COMMENT = re.compile(r"(?<!\\)%.*$")
#: arguments after \begin{env} before the body: (optional [pos] first, required {..} count)
_ARGS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1, "longtable*": 1}
_RULE = re.compile(
    r"\s*\\(hline|toprule|midrule|bottomrule|cmidrule|cline|addlinespace|specialrule|hdashline|"
    r"endhead|endfirsthead|endfoot|endlastfoot|noalign|morecmidrules|rowcolor)(?![A-Za-z])\s*"
    r"(?:\([^)\n]*\)\s*)?(?:\[[^\]\n]*\]\s*)?(?:\{[^{}\n]*\}\s*)*"
)
_SPAN = re.compile(r"\s*\\(multicolumn|multirow)\s*\{\s*(\d+)\s*\}")
_SPAN_ARGS = re.compile(
    r"\\multicolumn\s*\{[^{}]*\}\s*\{(?:[^{}]|\{[^{}]*\})*\}"
    r"|\\multirow\s*(?:\[[^\]]*\])?\s*\{[^{}]*\}\s*\{[^{}]*\}"
)
_OPTION = re.compile(r"(\\[A-Za-z]+\*?)\s*\[[^\]]*\]")
_DROP = re.compile(
    r"\\begin\{[^{}]*\}(?:\{(?:[^{}]|\{[^{}]*\})*\})?|\\end\{[^{}]*\}"
    r"|\\(?:label|ref|cite[a-z]*|footnote|vspace|hspace|rule)\*?(?:\[[^\]]*\])?\{[^{}]*\}"
)
_SYMBOLS = {
    "geq": "≥", "ge": "≥", "leq": "≤", "le": "≤", "pm": "±", "times": "×", "approx": "≈",
    "sim": "~", "dagger": "†", "ddagger": "‡", "ast": "*", "textendash": "–", "textemdash": "—",
    "alpha": "α", "beta": "β", "kappa": "κ", "mu": "μ", "sigma": "σ", "chi": "χ",
}  # fmt: skip
_CMD = re.compile(r"\\([A-Za-z]+)\*?|\\([%&_$#{}, ;!~^])|\\\\")


def latex_text(raw: str) -> str:
    """A cell's or caption's text for a reader: commands, braces, ``$`` and ``{=}`` stripped,
    ``\\%`` kept as ``%``, symbols (``$\\geq$``) as their characters.

    >>> latex_text(r"\\multicolumn{2}{c}{\\textbf{Sonnet ($n{=}3$)}}"), latex_text(r"39\\% [17--63]")
    ('Sonnet (n=3)', '39% [17--63]')
    """

    def command(m: re.Match[str]) -> str:
        if m.group(1):
            return _SYMBOLS.get(m.group(1), "")
        if m.group(2):
            return {",": " ", ";": " ", "!": "", "~": "~", "^": "^"}.get(m.group(2), m.group(2))
        return " "

    if len(raw) > MAX_MARKUP_CHARS:
        return " ".join(raw.split())
    text = _SPAN_ARGS.sub("", _DROP.sub("", raw))
    text = _OPTION.sub(r"\1", text)
    text = _CMD.sub(command, text)
    text = text.replace("{", "").replace("}", "").replace("$", "").replace("~", " ")
    return " ".join(text.split())


def _group(text: str, start: int, n: int) -> int:
    """The end of the brace group opening at ``text[start]`` (``{``) before ``n``, or -1."""
    depth, i = 0, start
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _skip_args(text: str, pos: int, required: int, end: int) -> int:
    """The position after an environment's optional ``[..]`` and ``required`` ``{..}``
    arguments, all before ``end``; -1 when they are not there."""
    pos = _skip_space(text, pos, end)
    if pos < end and text[pos] == "[":
        close = text.find("]", pos, end)
        pos = close + 1 if close >= 0 else pos
    for _ in range(required):
        pos = _skip_space(text, pos, end)
        if pos >= end or text[pos] != "{":
            return -1
        pos = _group(text, pos, end)
        if pos < 0:
            return -1
    return pos


def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _pairs(text: str) -> dict[int, tuple[str, int, int]]:
    """Every tabular-like environment: its ``\\begin`` offset -> (name, end of the begin,
    offset of its ``\\end``), nested ones paired inside; one pass, so an unclosed one costs
    no rescan."""
    pairs: dict[int, tuple[str, int, int]] = {}
    opened: dict[str, list[tuple[int, int]]] = {}
    for m in _ENVS.finditer(text):
        stack = opened.setdefault(m.group(2), [])
        if m.group(1) == "begin":
            stack.append((m.start(), m.end()))
        elif stack:
            begin, after = stack.pop()
            pairs[begin] = (m.group(2), after, m.start())
    return pairs


def _rows(text: str, start: int, end: int) -> list[tuple[list[tuple[int, int]], list[str]]]:
    """The rows of a body: each its cell spans (rules skipped) and the rules before it."""
    rows: list[tuple[list[tuple[int, int]], list[str]]] = []
    cells: list[tuple[int, int]] = []
    depth, i, cell_start = 0, start, start
    rules: list[str] = []

    def close_row(at: int) -> None:
        nonlocal cells, rules
        cells.append((cell_start, at))
        first, seen = _strip_rules(text, cells[0][0], cells[0][1])
        rules += seen
        cells[0] = (first, cells[0][1])
        rows.append((cells, rules))
        cells, rules = [], []

    while i < end:
        ch = text[i]
        if ch == "\\":
            if text.startswith("\\begin{", i) or text.startswith("\\end{", i):
                depth += 1 if text[i + 1] == "b" else -1  # an environment in a cell is one cell
                depth = max(depth, 0)
                i += 2
                continue
            if depth == 0 and (text.startswith("\\\\", i) or text.startswith("\\tabularnewline", i)):
                close_row(i)
                i += 2 if text[i + 1] == "\\" else len("\\tabularnewline")
                i = _after_break(text, i, end)
                cell_start = i
                continue
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == "&" and depth == 0:
            cells.append((cell_start, i))
            cell_start = i + 1
        i += 1
    close_row(end)
    return rows


def _after_break(text: str, i: int, end: int) -> int:
    """Past a row break's ``*`` and ``[2pt]``."""
    if i < end and text[i] == "*":
        i += 1
    j = _skip_space(text, i, end)
    if j < end and text[j] == "[":
        close = text.find("]", j, end)
        if close >= 0:
            return close + 1
    return i


def _strip_rules(text: str, start: int, end: int) -> tuple[int, list[str]]:
    seen = []
    while True:
        m = _RULE.match(text, start, end)
        if not m or m.end() == start:
            return start, seen
        seen.append(m.group(1))
        start = m.end()


class _Source:
    """The text joined with newlines, and from an offset back to (line number, column)."""

    def __init__(self, lines: Sequence[tuple[int, str]]) -> None:
        self.numbers = [n for n, _ in lines]
        self.lines = [_COMMENT.sub(lambda m: " " * len(m.group(0)), t) for _, t in lines]
        self.starts = []
        offset = 0
        for text in self.lines:
            self.starts.append(offset)
            offset += len(text) + 1
        self.text = "\n".join(self.lines)

    def where(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self.starts, offset) - 1
        return index, offset - self.starts[index]

    def cell(self, start: int, end: int, span: int = 1) -> RawCell:
        raw = self.text[start:end]
        lead = len(raw) - len(raw.lstrip())
        index, column = self.where(start + lead if lead < len(raw) else start)
        pieces = []
        first, _ = self.where(start)
        last, _ = self.where(max(start, end - 1))
        for k in range(first, last + 1):
            a = max(start - self.starts[k], 0)
            b = min(end - self.starts[k], len(self.lines[k]))
            if a < b:
                pieces.append((self.numbers[k], self.lines[k], a, b))
        found, at = span_numbers(pieces, latex=True)
        return RawCell(latex_text(raw), self.numbers[index], column + 1, found, at, span)


def _caption(text: str, start: int, end: int) -> str | None:
    at = text.find("\\caption", start, end)
    if at < 0:
        return None
    pos = _skip_args(text, at + len("\\caption"), 0, end)
    if pos >= end or text[pos] != "{":
        return None
    close = _group(text, pos, end)
    return latex_text(text[pos + 1 : close - 1]) if close > 0 else None


def _floats(text: str) -> list[tuple[int, int]]:
    """(start, end) of every table/table*/longtable environment, in order of their start."""
    spans, opened = [], []
    for m in _FLOAT.finditer(text):
        if m.group(1) == "begin":
            opened.append(m.start())
        elif opened:
            spans.append((opened.pop(), m.end()))
    return sorted(spans)


def latex_tables(lines: Sequence[tuple[int, str]]) -> list[Table]:
    """Every tabular-like environment of a LaTeX text (one inside another's cell excepted),
    with the caption of the innermost float around it."""
    source = _Source(lines)
    text = source.text
    floats = _floats(text)
    tables: list[Table] = []
    around: list[tuple[int, int]] = []  # the floats open at the current position, innermost last
    next_float, pos = 0, 0
    for begin, (env, after, stop) in sorted(_pairs(text).items()):
        if begin < pos:
            continue  # inside the table just read
        while next_float < len(floats) and floats[next_float][0] <= begin:
            around.append(floats[next_float])
            next_float += 1
        around = [f for f in around if f[1] > begin]
        body = _skip_args(text, after, _ARGS[env], stop)
        if body < 0:
            continue
        caption = _caption(text, *around[-1]) if around else None
        tables.append(_table(source, begin, body, stop, caption))
        pos = stop
    return tables


def _table(source: _Source, begin: int, body: int, stop: int, caption: str | None) -> Table:
    text = source.text
    header: list[list[RawCell]] = []
    rows: list[list[RawCell]] = []
    midrule = hline_after_row = False
    for spans, rules in _rows(text, body, stop):
        if "midrule" in rules and not midrule:
            midrule = True
            header, rows = rows, []
        elif "hline" in rules and rows and not midrule and not hline_after_row:
            hline_after_row = True
            header, rows = rows, []
        first = text[spans[0][0] : spans[0][1]].lstrip()
        if first.startswith("\\caption"):
            caption = caption or _caption(text, spans[0][0], spans[-1][1])
            continue
        cells = [_span_cell(source, a, b) for a, b in spans]
        if any(c.text or c.numbers for c in cells):
            rows.append(cells)
    line, _ = source.where(begin)
    return build_table("latex", source.numbers[line], caption, header, rows)


def _span_cell(source: _Source, start: int, end: int) -> RawCell:
    m = _SPAN.match(source.text, start, end)
    if not m:
        return source.cell(start, end)
    count = min(int(m.group(2)), 1000)
    if m.group(1) == "multicolumn":
        return source.cell(start, end, count)
    return replace(source.cell(start, end), rowspan=count)
