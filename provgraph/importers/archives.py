"""Zip, tar and tar.gz archives: every member with its SHA-256, read safely.

Members become ``pg:ArchiveMember`` nodes (path ``ARCHIVE!/MEMBER``) that point back at the
archive (``pg:extractedFrom``). A ``SHA256SUMS`` at the archive root is the archive's closed
manifest: its lines become ``pg:ManifestEntry`` nodes the release rules compare with the
members. Members matching ``[release].texts`` are read for claims like any text.

Unsafe archives (path traversal, absolute paths, links leaving the tree or running through
another link, special files, decompression bombs and hard-link amplification beyond
``[release.limits]``) are rejected whole with a clear error; the checks are those of
:func:`provgraph.evidence.archive.walk`, the same as `release verify`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from provgraph.evidence import sha256sums as sums
from provgraph.evidence.archive import ARCHIVE_SUFFIXES, Limits, archive_kind, walk
from provgraph.evidence.claimnodes import emit_text, text_format
from provgraph.evidence.claims import Registry
from provgraph.evidence.patterns import matcher
from provgraph.ingest.api import CERTAIN, NO, PG, RDF_TYPE, Bundle, ImportContext, Importer, Source

#: Texts and manifests larger than this are hashed but not read for claims or entries.
MAX_TEXT_BYTES = 32 << 20


class ArchivesImporter(Importer):
    name = "archives"
    version = "3"  # 2: table cells and source columns on the claims of member texts; 3: TSV
    description = "zip, tar, tar.gz: members with sha256, root SHA256SUMS as closed manifest, claims in texts"
    handles = "file"
    suffixes = frozenset({".zip", ".tar", ".gz", ".tgz"})  # detect() claims no other file
    uses_sections = ("release",)

    def detect(self, path: Path, bundle: Bundle) -> int:
        if not path.name.lower().endswith(ARCHIVE_SUFFIXES):
            return NO
        return CERTAIN if archive_kind(path) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add = ctx.add
        section = ctx.bundle.contract.section("release")
        registry = Registry(section)
        texts = matcher((section or {}).get("texts", [])) if section else None
        archive = ctx.source_iri
        add(archive, RDF_TYPE, PG.Archive)
        for entry in walk(source.path, Limits.from_section(section), source.rel):
            if entry.kind == "dir":
                continue
            node = ctx.iri("member", source.rel, entry.path)
            add(node, RDF_TYPE, PG.ArchiveMember)
            add(node, PG.path, f"{source.rel}!/{entry.path}")
            add(node, PG.memberPath, entry.path)
            add(node, PG.extractedFrom, archive)
            add(archive, PG.containsMember, node)
            ctx.record()
            if entry.kind != "file":
                add(node, PG.linkTarget, entry.link)
                continue
            is_manifest = "/" not in entry.path and entry.path in sums.MANIFEST_NAMES
            is_text = bool(section) and texts is not None and bool(texts.match(entry.path))
            keep = (is_manifest or is_text) and entry.size <= MAX_TEXT_BYTES
            digest = hashlib.sha256()
            size = 0
            parts: list[bytes] = []
            for chunk in entry.chunks():
                digest.update(chunk)
                size += len(chunk)
                if keep:
                    parts.append(chunk)
            add(node, PG.sha256, digest.hexdigest())
            add(node, PG.byteSize, size)
            if not keep:
                continue
            text = b"".join(parts).decode("utf-8-sig", errors="surrogateescape")
            if is_manifest:
                self._manifest(ctx, source.rel, entry.path, node, text)
            if is_text:
                lines = enumerate(text.splitlines(), start=1)
                emit_text(
                    ctx, lines, node, ("archive", source.rel, entry.path), text_format(entry.path), registry
                )

    @staticmethod
    def _manifest(ctx: ImportContext, rel: str, member: str, node, text: str) -> None:
        add = ctx.add
        add(node, RDF_TYPE, PG.Manifest)
        add(ctx.source_iri, PG.manifest, node)
        seen: set[str] = set()
        for line, entry, problem in sums.parse(text.splitlines()):
            if problem or entry is None:
                ctx.problem(line, f"{member}: {problem}")
                continue
            if entry.path in seen:
                ctx.problem(line, f"{member}: {entry.path!r} is listed twice")
                continue
            seen.add(entry.path)
            item = ctx.iri("manifest-entry", rel, member, entry.path)
            add(item, RDF_TYPE, PG.ManifestEntry)
            add(item, PG.inManifest, node)
            add(item, PG.memberPath, entry.path)
            add(item, PG.sha256, entry.sha256)
            add(item, PG.manifestStyle, entry.style)
            add(item, PG.sourceFile, node)
            add(item, PG.sourceLine, line)
