"""A third-party provgraph importer: a CSV of call timings (``call_id, started_at, ended_at``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from provgraph.ingest.api import (
    CERTAIN,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Source,
    csv_header,
    read_csv,
)

COLUMNS = ("call_id", "started_at", "ended_at")


class TimingsImporter(Importer):
    name = "call-timings"
    version = "1"  # bump when the triples written change: re-ingest then re-reads the files
    description = "call timings CSV (call_id, started_at, ended_at)"
    suffixes = frozenset({".csv"})  # never asked about other files

    def detect(self, path: Path, bundle: Bundle) -> int:
        return CERTAIN if path.suffix == ".csv" and csv_header(path) == list(COLUMNS) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        for line, row, error in read_csv(source.path, COLUMNS, source.rel, ctx.advance):
            if error:
                ctx.problem(line, error)  # reported with its line; the rest still imports
                continue
            try:
                started, ended = (dt.datetime.fromisoformat(row[c]) for c in COLUMNS[1:])
            except ValueError as err:
                ctx.problem(line, f"not an ISO 8601 time: {err}")
                continue
            node = ctx.iri("timing", row["call_id"])
            ctx.add(node, RDF_TYPE, PROV.Activity)
            ctx.add(node, PG.forCall, ctx.iri("call", row["call_id"]))
            ctx.add(node, PG.startedAt, started)
            ctx.add(node, PG.endedAt, ended)
            ctx.add(node, PG.sourceFile, ctx.source_iri)
            ctx.add(node, PG.sourceLine, line)
            ctx.record()
