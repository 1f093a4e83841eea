"""Claim, mention and table nodes for the lines of one text (a bundle file or an archive member)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from provgraph.evidence.claims import Number, Registry, normal_text, numbers
from provgraph.evidence.consistency import Bind, Finding, line_findings, row_findings
from provgraph.evidence.consistency import emit as emit_checks
from provgraph.evidence.tablehtml import view
from provgraph.evidence.tables import Row, Table, find_tables
from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG, PROV, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

CONTEXT_CHARS = 300
#: Longest text line read for claims. A manuscript line (a LaTeX paragraph, a Markdown table
#: row) is a few KiB; a longer one is generated or hostile, and reading it costs time linear in
#: its length but could still write millions of claims.
MAX_LINE_CHARS = 1 << 20
#: (table node, table, row, 0-based column) of each number of a table cell, by (line, column)
CellIndex = dict[tuple[int, int], tuple[IRI, Table, Row, int]]
#: the numbers of table cells by line, for the integer-only cells the line scan does not read
CellNumbers = dict[int, list[Number]]


def is_latex(path: str) -> bool:
    return path.lower().endswith((".tex", ".sty", ".bib"))


def text_format(path: str) -> str:
    """The format a text's tables are read in, from its name: latex, html, csv, tsv or markdown
    (Markdown and plain text; raw HTML tables in them are read too)."""
    lower = path.lower()
    if is_latex(lower):
        return "latex"
    if lower.endswith((".html", ".htm", ".xhtml")):
        return "html"
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith((".tsv", ".tab")):
        return "tsv"
    return "markdown"


def emit_text(
    ctx: ImportContext,
    lines: Iterable[tuple[int, str]],
    file_node: IRI,
    keys: tuple[str, ...],
    fmt: str,
    registry: Registry,
) -> int:
    """Write a pg:Table per table, a pg:Claim per number (with its cell, when in a table) and
    a pg:Mention per registry entity; returns the count of claims and mentions.

    ``fmt`` is :func:`text_format` of the text's name. HTML markup is blanked before numbers
    are read (a tag is no claim), keeping every number's column.
    """
    readable = _readable(ctx, lines)
    tables = find_tables(readable, fmt, problem=ctx.problem)
    cells, by_line = _emit_tables(ctx, tables, file_node, keys)
    written = 0
    cell_claims: dict[tuple[int, int], IRI] = {}  # the consistency checks of rows read these
    checks: list[Finding] = []
    bind = Bind.of(ctx.bundle.contract.section("release"))
    check_ids: dict[tuple[int, str], int] = {}
    for line_no, line in view(readable, fmt):
        line_claims: dict[str, IRI] = {}
        context = line.strip()[:CONTEXT_CHARS]
        mention_nodes, names, count = _emit_mentions(ctx, registry, line_no, line, context, file_node, keys)
        written += count
        seen: dict[str, int] = {}
        found = numbers(line, latex=fmt == "latex")
        if line_no in by_line:
            # integer-only cells after the line's own numbers, so that those keep their IRIs
            columns = {n.column for n in found}
            found += [n for n in by_line[line_no] if n.column not in columns]
        for number in found:
            if any(start <= number.column < end for start, end in names):
                continue
            seen[number.text] = seen.get(number.text, 0) + 1
            node = ctx.iri("claim", *keys, str(line_no), number.text, str(seen[number.text]))
            _emit_claim(ctx, node, number, registry, context, file_node, line_no)
            for mention in mention_nodes:
                ctx.add(node, PG.namedEntity, mention)
            if where := cells.get((line_no, number.column)):
                _emit_cell(ctx, node, number, *where)
                cell_claims[(line_no, number.column)] = node
            line_claims.setdefault(number.text, node)
            written += 1
        if line_checks := line_findings(line_no, line, found, bind):
            emit_checks(
                ctx,
                line_checks,
                lambda ref, claims=line_claims: claims.get(ref[2]),
                file_node,
                keys,
                check_ids,
            )
    for table in tables:
        for row in table.rows:
            checks += row_findings(table, row, bind)
    emit_checks(ctx, checks, lambda ref: cell_claims.get((ref[0], ref[1])), file_node, keys, check_ids)
    return written


def _readable(ctx: ImportContext, lines: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines numbers can be read from: UTF-8, at most :data:`MAX_LINE_CHARS` long."""
    readable = []
    for line_no, line in lines:
        if any("\udc80" <= ch <= "\udcff" for ch in line):
            ctx.problem(line_no, "not UTF-8 text; numbers on this line were not read")
        elif len(line) > MAX_LINE_CHARS:
            ctx.problem(
                line_no,
                f"a line of {len(line):,} characters, over the {MAX_LINE_CHARS >> 20} MiB read "
                "for claims; numbers on this line were not read",
            )
        else:
            readable.append((line_no, line))
    return readable


def _emit_tables(
    ctx: ImportContext, tables: list[Table], file_node: IRI, keys: tuple[str, ...]
) -> tuple[CellIndex, CellNumbers]:
    add = ctx.add
    cells: CellIndex = {}
    by_line: CellNumbers = {}
    seen: dict[int, int] = {}
    for table in tables:
        seen[table.line] = seen.get(table.line, 0) + 1
        extra = (str(seen[table.line]),) if seen[table.line] > 1 else ()  # two tables on one line
        node = ctx.iri("table", *keys, str(table.line), *extra)
        add(node, RDF_TYPE, PG.Table)
        add(node, PG.sourceFile, file_node)
        add(node, PG.sourceLine, table.line)
        add(node, PG.tableFormat, table.format)
        add(node, PG.caption, table.caption)
        for row in table.rows:
            for index, cell in enumerate(row.cells):
                for number, line_no in zip(cell.numbers, cell.number_lines, strict=True):
                    cells[(line_no, number.column)] = (node, table, row, index)
                    by_line.setdefault(line_no, []).append(number)
    return cells, by_line


def _emit_cell(
    ctx: ImportContext, node: IRI, number: Number, table_node: IRI, table: Table, row: Row, index: int
) -> None:
    add = ctx.add
    add(node, PG.inTable, table_node)
    add(node, PG.tableRow, row.index)
    add(node, PG.tableColumn, index + 1)
    add(node, PG.rowLabel, row.label)
    add(node, PG.rowGroup, row.group)
    add(node, PG.columnLabel, table.columns[index] or None)
    if number.unit != "percent":
        add(node, PG.columnUnit, table.units[index])


def _emit_mentions(
    ctx: ImportContext,
    registry: Registry,
    line_no: int,
    line: str,
    context: str,
    file_node: IRI,
    keys: tuple[str, ...],
) -> tuple[list[IRI], list[tuple[int, int]], int]:
    """The line's mentions: the nodes of names, the spans of model names ("3.5" in "Claude 3.5
    Sonnet" is no claim), and how many were written."""
    add = ctx.add
    mention_nodes: list[IRI] = []
    names: list[tuple[int, int]] = []
    seen: dict[str, int] = {}
    for mention in registry.mentions(line):
        if mention.value is None:
            names.append((mention.column, mention.column + len(mention.text)))
        seen[mention.text] = seen.get(mention.text, 0) + 1
        node = ctx.iri("mention", *keys, str(line_no), mention.text, str(seen[mention.text]))
        add(node, RDF_TYPE, PG.Mention)
        add(node, PG.entity, ctx.iri("entity", mention.entity))
        add(node, PG.text, mention.text)
        add(node, PG.value, mention.value)
        add(node, PG.context, context)
        add(node, PG.sourceFile, file_node)
        add(node, PG.sourceLine, line_no)
        if mention.value is None:
            mention_nodes.append(node)
    return mention_nodes, names, sum(seen.values())


def _emit_claim(
    ctx: ImportContext,
    node: IRI,
    number: Number,
    registry: Registry,
    context: str,
    file_node: IRI,
    line_no: int,
) -> None:
    add = ctx.add
    add(node, RDF_TYPE, PG.Claim)
    add(node, PG.text, number.text)
    add(node, PG.value, number.value)
    add(node, PG.unit, number.unit)
    add(node, PG.resolution, number.resolution)
    add(node, PG.label, number.label)
    add(node, PG.relation, number.relation)
    add(node, PG.numerator, number.numerator)
    add(node, PG.n, number.n)
    add(node, PG.context, context)
    add(node, PG.sourceFile, file_node)
    add(node, PG.sourceLine, line_no)
    add(node, PG.sourceColumn, number.column + 1)
    add(node, PROV.hadPrimarySource, file_node)
    matched = registry.match(number)
    for value in matched:
        add(node, PG.registryValue, ctx.iri("registry-value", value.name, normal_text(value.text)))
    stat_names = {v.name for v in matched}
    # A name written as "Q = ..." names the statistic; a table row's first cell does not.
    add(
        node,
        PG.statName,
        stat_names.pop() if len(stat_names) == 1 else (number.label if number.relation else None),
    )
