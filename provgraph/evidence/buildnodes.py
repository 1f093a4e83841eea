"""Build-record nodes shared by the ``dvclock`` and ``buildrecord`` importers.

A build is a ``pg:Build`` activity: each output file ``prov:wasGeneratedBy`` it, it
``prov:used`` each input and ``pg:script`` its script. What the record says about each file
(its hash at build time) is a ``pg:BuildInput`` / ``pg:BuildOutput`` node, so the release rules
can compare recorded and current bytes.

Records that give MD5 (dvc) are translated to SHA-256 at import: when the file's current MD5
equals the recorded one, the current SHA-256 *is* the recorded file's SHA-256 and is stored
as ``pg:recordedSha256``; when it differs (or the file is missing) no recorded SHA-256 exists
and the input is stale. (Changing only the input later is still caught: the translated hash
no longer equals the file's current SHA-256.)

A folder dep or out (dvc's ``.dir`` md5) is written as one node per file in it
(:mod:`provgraph.evidence.dvcdir` says what the build recorded for each): every file under a
folder output ``prov:wasGeneratedBy`` the build, and is checked against its recorded md5 like a
file output. When the folder changed since the build and the bundle lacks the cached ``.dir``
listing, each file gets a node with the folder's hash (``pg:hashAlgorithm "md5-dir"``,
``pg:inFolder``, ``pg:listingPath``): the release rules report the folder as changed, not the file
as unbuilt.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from provgraph.evidence.dvcdir import folder_listing
from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG, PROV, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext


@dataclass(frozen=True)
class Recorded:
    """A file as a build record lists it."""

    path: str
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None


@dataclass
class StageStatus:
    """One stage as ``dvc status`` sees it (computed by :mod:`provgraph.importers.dvcstatus`)."""

    #: the stage's entries as ``dvc status --json`` lists them ([] when up to date)
    entries: list[Any] = field(default_factory=list)
    #: dep or out path as written -> DVC's word for it ("modified", "deleted", "not in cache", "new")
    words: dict[str, str] = field(default_factory=dict)
    #: one line per change in DVC's words, e.g. "changed params: params.yaml prepare.seed modified"
    changes: list[str] = field(default_factory=list)


def _md5s(data: bytes) -> set[str]:
    """MD5 of the bytes, and of the bytes with CRLF turned into LF (dvc 2's text hash)."""
    found = {hashlib.md5(data, usedforsecurity=False).hexdigest()}
    if b"\x00" not in data[:8000] and b"\r\n" in data:
        found.add(hashlib.md5(data.replace(b"\r\n", b"\n"), usedforsecurity=False).hexdigest())
    return found


def _bundle_rel(ctx: ImportContext, base: str, path: str) -> str | None:
    joined = posixpath.normpath(posixpath.join(base, path)) if not path.startswith("/") else path
    return ctx.bundle_rel(joined)


def _describe(ctx: ImportContext, node: IRI, item: Recorded, rel: str | None) -> None:
    add = ctx.add
    add(node, PG.path, rel or item.path)
    add(node, PG.byteSize, item.size)
    if item.sha256:
        add(node, PG.recordedSha256, item.sha256.lower())
        add(node, PG.hashAlgorithm, "sha256")
        return
    if not item.md5:
        return
    add(node, PG.recordedMd5, item.md5)
    if item.md5.endswith(".dir"):
        add(node, PG.hashAlgorithm, "md5-dir")
        return
    add(node, PG.hashAlgorithm, "md5")
    target = ctx.bundle.resolve(rel) if rel else None
    if target is None or not target.is_file():
        return
    data = target.read_bytes()
    current = hashlib.sha256(data).hexdigest()
    add(node, PG.sha256AtImport, current)
    if item.md5.lower() in _md5s(data):
        add(node, PG.recordedSha256, current)


def write_build(
    ctx: ImportContext,
    key: str,
    line: int | None,
    base: str,
    inputs: list[Recorded],
    outputs: list[Recorded],
    script: Recorded | None = None,
    command: str | None = None,
    parameters: Any = None,
    time: dt.datetime | None = None,
    status: StageStatus | None = None,
) -> IRI:
    """Emit one build with its recorded inputs, script and outputs; returns the build IRI."""
    add = ctx.add
    build = ctx.iri("build", ctx.source.rel, key)
    add(build, RDF_TYPE, PG.Build)
    add(build, PG.name, key)
    add(build, PG.command, command)
    if parameters not in (None, {}, []):
        add(build, PG.parameters, json.dumps(parameters, sort_keys=True, default=str))
    add(build, PROV.endedAtTime, time)
    add(build, PG.sourceFile, ctx.source_iri)
    add(build, PG.sourceLine, line)
    words = status.words if status else {}
    for entry in status.entries if status else []:
        add(build, PG.dvcStatus, entry if isinstance(entry, str) else next(iter(entry)))
    for change in status.changes if status else []:
        add(build, PG.dvcChange, change)
    roles = [("input", i) for i in inputs] + ([("script", script)] if script else [])
    roles += [("output", o) for o in outputs]
    for role, listed in roles:
        for item, rel, folder in _files_of(ctx, base, listed):
            file_node = ctx.file_iri(rel) if rel else ctx.iri("external", item.path)
            kind = "build-output" if role == "output" else "build-input"
            node = ctx.iri(kind, ctx.source.rel, key, item.path)
            add(node, RDF_TYPE, PG.BuildOutput if role == "output" else PG.BuildInput)
            add(node, PG.build, build)
            add(node, PG.role, role)
            add(node, PG.file, file_node)
            _describe(ctx, node, item, rel)
            add(node, PG.dvcStatus, words.get(listed.path))
            if folder is not None:
                add(node, PG.inFolder, folder[0])
                add(node, PG.listingPath, folder[1])  # None (not written) for a known listing
            if role == "output":
                add(file_node, PROV.wasGeneratedBy, build)
            else:
                add(build, PG.script if role == "script" else PROV.used, file_node)
    return build


def _files_of(
    ctx: ImportContext, base: str, item: Recorded
) -> list[tuple[Recorded, str | None, tuple[str, str | None] | None]]:
    """The recorded files an entry stands for: itself, or each file of a folder (``.dir``).

    Each comes with its bundle path and, for a file of a folder, (folder, where the listing was
    looked for when the build's listing is unknown: the folder changed and the cached listing is
    absent; else None). A file of a known listing is a file record with the md5 the listing gives."""
    rel = _bundle_rel(ctx, base, item.path)
    if not (item.md5 and item.md5.endswith(".dir")) or rel is None or not ctx.bundle.resolve(rel).is_dir():
        return [(item, rel, None)]
    found = folder_listing(ctx.bundle.root, base, rel, item.md5)
    if found.members is None:
        # Which file changed cannot be told: every file now there carries the folder's hash.
        where = (rel, found.cache_path)
        return [(Recorded(path, md5=item.md5), path, where) for path in found.present] or [(item, rel, where)]
    # A file the listing names is the build's (a missing one is an input "not in the bundle");
    # a file the listing does not name is no output of this build.
    return [(Recorded(path, md5=md5), path, (rel, None)) for path, md5 in sorted(found.members.items())]
