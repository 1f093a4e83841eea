"""``SHA256SUMS`` files (GNU ``sha256sum`` or BSD ``--tag`` style) in the bundle.

A manifest is closed over its own folder: every entry names a file relative to that folder
(``pg:file`` points at the bundle file node), and the release rules check that each listed
file exists with the listed hash and that nothing else sits in the folder.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from provgraph.evidence import sha256sums as sums
from provgraph.ingest.api import (
    CERTAIN,
    LIKELY,
    NO,
    PG,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Source,
    sniff_text,
)


class ManifestImporter(Importer):
    name = "manifest"
    version = "1"
    description = "SHA256SUMS manifests (GNU and BSD --tag styles), closed over their folder"
    handles = "file"
    suffixes = frozenset({"", ".txt", ".sha256"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.name in sums.MANIFEST_NAMES:
            return CERTAIN
        if path.name.lower().endswith(".sha256"):
            first = next((ln for ln in sniff_text(path, 4096).splitlines() if ln.strip()), "")
            return LIKELY if first and not isinstance(sums.parse_line(first), str) else NO
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add = ctx.add
        node = ctx.source_iri
        add(node, RDF_TYPE, PG.Manifest)
        folder = posixpath.dirname(source.rel)
        text = source.path.read_bytes().decode("utf-8-sig", errors="surrogateescape")
        seen: dict[str, int] = {}
        for line, entry, problem in sums.parse(text.splitlines()):
            if problem or entry is None:
                ctx.problem(line, problem or "unreadable line")
                continue
            if entry.path in seen:
                ctx.problem(line, f"{entry.path!r} is listed twice (first on line {seen[entry.path]})")
                continue
            seen[entry.path] = line
            rel = posixpath.normpath(posixpath.join(folder, entry.path))
            if rel.startswith("../") or rel == ".." or entry.path.startswith("/"):
                ctx.problem(line, f"{entry.path!r} lies outside the manifest's folder")
                continue
            item = ctx.iri("manifest-entry", source.rel, entry.path)
            add(item, RDF_TYPE, PG.ManifestEntry)
            add(item, PG.inManifest, node)
            add(item, PG.memberPath, entry.path)
            add(item, PG.path, rel)
            add(item, PG.file, ctx.file_iri(rel))
            add(item, PG.sha256, entry.sha256)
            add(item, PG.manifestStyle, entry.style)
            add(item, PG.sourceFile, node)
            add(item, PG.sourceLine, line)
            ctx.record()
