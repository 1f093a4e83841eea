"""Any file or folder no other importer claims: every file's path, size and sha256.

This is what makes output files checkable: a call record names a path, and the file node
minted from the same path says whether the file exists and how many bytes it has.
"""

from __future__ import annotations

from pathlib import Path

from provgraph.ingest.api import FALLBACK, PG, PROV, RDF_TYPE, Bundle, ImportContext, Importer, Source


class FilesImporter(Importer):
    name = "files"
    version = "1"
    description = "fallback for anything unclaimed: file inventory (path, byte size, sha256)"
    handles = "any"

    def detect(self, path: Path, bundle: Bundle) -> int:
        return FALLBACK

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add = ctx.add
        if source.kind == "file":
            add(ctx.source_iri, RDF_TYPE, PG.File)
            ctx.record()
            return
        tree = ctx.source_iri
        for member in source.members:
            node = ctx.file_iri(member.rel)
            add(tree, PROV.hadMember, node)
            add(node, RDF_TYPE, PG.File)
            add(node, PG.path, member.rel)
            add(node, PG.sha256, member.sha256)
            add(node, PG.byteSize, member.size)
            ctx.record()
