"""Importer plugins used only by the tests (registered by monkeypatching the registry)."""

from __future__ import annotations

from pathlib import Path

from provgraph.ingest.api import LIKELY, NO, PG, RDF_TYPE, Bundle, ImportContext, Importer, Source


class _Twin(Importer):
    version = "1"
    handles = "file"

    def detect(self, path: Path, bundle: Bundle) -> int:
        return LIKELY if path.suffix == ".twin" else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        ctx.add(ctx.iri("thing", source.rel), RDF_TYPE, PG.File)


class TwinA(_Twin):
    name = "twin-a"
    description = "test importer that claims *.twin"


class TwinB(_Twin):
    name = "twin-b"
    description = "second test importer that claims *.twin"


class Crashing(Importer):
    name = "crashing"
    description = "raises a bug-like exception halfway"
    handles = "file"

    def detect(self, path: Path, bundle: Bundle) -> int:
        return LIKELY if path.suffix == ".crash" else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        for i in range(10):
            ctx.add(ctx.iri("thing", str(i)), RDF_TYPE, PG.File)
        raise KeyError("boom")


class CrashingLate(Importer):
    name = "crashing-late"
    description = "writes several megabytes of triples, then raises"
    handles = "file"

    def detect(self, path: Path, bundle: Bundle) -> int:
        return LIKELY if path.suffix == ".late" else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        for i in range(40_000):  # ~4 MB of N-Triples: the store has started loading them
            ctx.add(ctx.iri("thing", source.rel, str(i)), RDF_TYPE, PG.File)
        raise RuntimeError("late failure")
