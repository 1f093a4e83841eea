"""Manuscripts and texts (LaTeX, Markdown, HTML, CSV, TSV, plain text) named by ``[release].texts``.

Every number a reader would take as a claim (``Q = 154.73``, ``26/45``, ``17%``, ``0.90``)
becomes a ``pg:Claim`` with its value as written, precision, the name next to it, the
denominator it is stated over, the line it is on, file and line number. A claim whose text
equals a registry value of the contract points at it (``pg:registryValue``); every registry
entity written on a line (a model name, "5 models") becomes a ``pg:Mention``. Every table
(Markdown, LaTeX, HTML, a CSV or TSV file) becomes a ``pg:Table`` and each claim in one of its cells
carries its row, column, row label, group and column header (:mod:`provgraph.evidence.tables`).
"""

from __future__ import annotations

from pathlib import Path

from provgraph.evidence.claimnodes import emit_text, text_format
from provgraph.evidence.claims import Registry
from provgraph.evidence.patterns import matcher
from provgraph.ingest.api import LIKELY, NO, Bundle, ImportContext, Importer, Source


class TextsImporter(Importer):
    name = "texts"
    version = "4"  # 3: tables as cells, pg:sourceColumn, HTML and CSV texts; 4: TSV texts
    description = (
        "manuscripts and texts named by release.texts: numbers as claims (table cells with their"
        " row and column), registry names as mentions"
    )
    handles = "file"
    uses_sections = ("release",)

    def detect(self, path: Path, bundle: Bundle) -> int:
        section = bundle.contract.section("release")
        if section is None:
            return NO
        cached = self.__dict__.get("_texts")
        if cached is None or cached[0] is not section:  # the planner asks once per file
            cached = self.__dict__["_texts"] = (section, matcher(section.get("texts", [])))
        texts = cached[1]
        return LIKELY if texts and texts.match(bundle.relpath(path)) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        data = source.path.read_bytes()
        text = data.decode("utf-8-sig", errors="surrogateescape")
        registry = Registry(ctx.bundle.contract.section("release"))
        lines = enumerate(text.splitlines(), start=1)
        count = emit_text(
            ctx, lines, ctx.source_iri, tuple(source.rel.split("/")), text_format(source.rel), registry
        )
        for _ in range(count):
            ctx.record()
        ctx.advance(len(data))
