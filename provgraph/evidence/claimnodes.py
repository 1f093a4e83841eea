"""Claim and mention nodes for the lines of one text (a bundle file or an archive member)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from provgraph.evidence.claims import Registry, normal_text, numbers
from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG, PROV, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

CONTEXT_CHARS = 300
#: Longest text line read for claims. A manuscript line (a LaTeX paragraph, a Markdown table
#: row) is a few KiB; a longer one is generated or hostile, and reading it costs time linear in
#: its length but could still write millions of claims.
MAX_LINE_CHARS = 1 << 20


def is_latex(path: str) -> bool:
    return path.lower().endswith((".tex", ".sty", ".bib"))


def emit_text(
    ctx: ImportContext,
    lines: Iterable[tuple[int, str]],
    file_node: IRI,
    keys: tuple[str, ...],
    latex: bool,
    registry: Registry,
) -> int:
    """Write a pg:Claim per number and a pg:Mention per registry entity; returns the count."""
    add = ctx.add
    written = 0
    for line_no, line in lines:
        if any("\udc80" <= ch <= "\udcff" for ch in line):
            ctx.problem(line_no, "not UTF-8 text; numbers on this line were not read")
            continue
        if len(line) > MAX_LINE_CHARS:
            ctx.problem(
                line_no,
                f"a line of {len(line):,} characters, over the {MAX_LINE_CHARS >> 20} MiB read "
                "for claims; numbers on this line were not read",
            )
            continue
        context = line.strip()[:CONTEXT_CHARS]
        mention_nodes = []
        names: list[tuple[int, int]] = []  # spans of model names: "3.5" in "Claude 3.5 Sonnet" is no claim
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
            written += 1
        seen = {}
        for number in numbers(line, latex=latex):
            if any(start <= number.column < end for start, end in names):
                continue
            seen[number.text] = seen.get(number.text, 0) + 1
            node = ctx.iri("claim", *keys, str(line_no), number.text, str(seen[number.text]))
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
            add(node, PROV.hadPrimarySource, file_node)
            matched = registry.match(number)
            for value in matched:
                add(node, PG.registryValue, ctx.iri("registry-value", value.name, normal_text(value.text)))
            stat_names = {v.name for v in matched}  # not ``names``: those spans serve the next number
            # A name written as "Q = ..." names the statistic; a table row's first cell does not.
            add(
                node,
                PG.statName,
                stat_names.pop() if len(stat_names) == 1 else (number.label if number.relation else None),
            )
            for mention in mention_nodes:
                add(node, PG.namedEntity, mention)
            written += 1
    return written
