"""Rendering records (format ``provgraph.rendering/1``, see :mod:`provgraph.evidence.renderings`).

Reads sidecars (``<image>.render.json``), JSON Lines files of records (first record with
``"format": "provgraph.rendering/1"``), and whole folders of rendered images with their
sidecars (what ``provgraph render`` writes), in which case the images are inventoried too
(path, size, sha256), so a record's hash can be compared with the bytes on disk.

Each record becomes a ``pg:Rendering`` activity, keyed by the rendered image's bundle path:
it ``prov:used`` the DICOM file, the image ``prov:wasGeneratedBy`` it, and it carries what the
record states (hashes, photometric interpretation, inversion, transforms, window, renderer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from provgraph.evidence.renderings import FORMAT, SIDECAR_SUFFIX, check_record, sidecar_for
from provgraph.ingest.api import (
    CERTAIN,
    IRI,
    LIKELY,
    MAX_RECORD_BYTES,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    ProvgraphError,
    RecordError,
    Source,
    document_bytes,
    first_json_object,
    loads_checked,
    read_jsonl,
    tree_rels,
)


def is_sidecar(name: str) -> bool:
    return name.endswith(SIDECAR_SUFFIX) and len(name) > len(SIDECAR_SUFFIX)


class RenderingsImporter(Importer):
    name = "renderings"
    version = "1"
    description = "rendering records: <image>.render.json sidecars, JSONL, or folders of images with sidecars"
    handles = "any"
    suffixes = frozenset({".json", ".jsonl", ".ndjson"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.is_file():
            if is_sidecar(path.name):
                return CERTAIN
            if path.suffix.lower() in (".jsonl", ".ndjson"):
                first = first_json_object(path)
                return CERTAIN if first and first.get("format") == FORMAT else NO
            return NO
        members = tree_rels(bundle, path)
        if not any(is_sidecar(m.rsplit("/", 1)[-1]) for m in members):
            return NO
        # A rendered folder: every file is a record or the image a sibling record describes.
        names = set(members)

        def covered(m: str) -> bool:
            folder, _, name = m.rpartition("/")
            return is_sidecar(name) or (f"{folder}/" if folder else "") + sidecar_for(name) in names

        return LIKELY if all(covered(m) for m in members) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        state = _State(ctx)
        if source.kind == "file":
            if is_sidecar(source.path.name):
                state.read_sidecar(source.rel)
            else:
                for line, value, error in read_jsonl(source.path, source.rel):
                    state.take(source.rel, line, value, error)
            return
        for member in source.members:
            node = ctx.file_iri(member.rel)
            ctx.add(ctx.source_iri, PROV.hadMember, node)
            ctx.add(node, RDF_TYPE, PG.File)
            ctx.add(node, PG.path, member.rel)
            ctx.add(node, PG.sha256, member.sha256)
            ctx.add(node, PG.byteSize, member.size)
            if is_sidecar(Path(member.rel).name):
                state.read_sidecar(member.rel)
            else:
                ctx.record()


class _State:
    """Records of one import, with the images already described (one rendering per image)."""

    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.images: dict[str, str] = {}

    def read_sidecar(self, rel: str) -> None:
        path = self.ctx.bundle.resolve(rel)
        where = "" if rel == self.ctx.source.rel else f"{rel}: "
        try:
            text = document_bytes(path, rel, MAX_RECORD_BYTES).decode("utf-8")
        except UnicodeDecodeError:
            self.take(rel, None, None, f"{where}not UTF-8 text")
            return
        except InputError as err:  # too large or unreadable: this sidecar only
            self.take(rel, None, None, f"{where}{err.reason}")
            return
        if not text.strip():
            self.take(rel, None, None, f"{where}no records")
            return
        try:
            value = loads_checked(text)
        except json.JSONDecodeError as err:
            self.take(rel, None, None, f"{where}malformed JSON: {err.msg} (line {err.lineno})")
            return
        except RecordError as err:
            self.take(rel, None, None, f"{where}{err}")
            return
        self.take(rel, None, value, None, where)

    def take(self, rel: str, line: int | None, value: Any, error: str | None, where: str = "") -> None:
        ctx = self.ctx
        if error:
            ctx.problem(line, error)
            return
        reason = check_record(value)
        if reason:
            ctx.problem(line, where + reason)
            return
        folder = ctx.bundle.resolve(rel).parent
        image_rel = _bundle_rel(ctx.bundle, folder, value["image"])
        source_rel = _bundle_rel(ctx.bundle, folder, value["source"])
        key = image_rel or value["image"]
        if key in self.images:
            ctx.problem(line, f"{where}image {key} already has a rendering record ({self.images[key]})")
            return
        self.images[key] = f"{rel}:{line}" if line else rel
        write_rendering(ctx, value, rel, line, image_rel, source_rel)
        ctx.record()


def _bundle_rel(bundle: Bundle, folder: Path, written: str) -> str | None:
    path = Path(written)
    path = Path(os.path.normpath(path if path.is_absolute() else folder / path))
    try:
        return bundle.relpath(path)
    except ProvgraphError:
        return None


def write_rendering(
    ctx: ImportContext,
    value: dict[str, Any],
    rel: str,
    line: int | None,
    image_rel: str | None,
    source_rel: str | None,
) -> None:
    add = ctx.add
    node = (
        ctx.iri("rendering", *image_rel.split("/"))
        if image_rel
        else ctx.iri("rendering", "external", value["image"])
    )
    image: IRI = ctx.file_iri(image_rel) if image_rel else ctx.iri("external", value["image"])
    dicom: IRI = ctx.file_iri(source_rel) if source_rel else ctx.iri("external", value["source"])
    add(node, RDF_TYPE, PG.Rendering)
    add(node, PROV.used, dicom)
    add(node, PG.renderedImage, image)
    add(image, PROV.wasGeneratedBy, node)
    add(node, PG.imagePath, image_rel or value["image"])
    add(node, PG.sourcePath, source_rel or value["source"])
    add(node, PG.sourceSha256, value["source_sha256"])
    add(node, PG.renderedSha256, value["image_sha256"])
    add(node, PG.photometricInterpretation, value["photometric"].strip().upper())
    add(node, PG.inverted, value["inverted"])
    add(node, PG.renderer, value["renderer"])
    add(node, PG.rendererVersion, value["renderer_version"])
    add(node, PG.modalityTransform, value.get("modality_transform"))
    add(node, PG.voiTransform, value.get("voi_transform"))
    for key, prop in (("window_center", PG.windowCenter), ("window_width", PG.windowWidth)):
        if value.get(key) is not None:
            add(node, prop, float(value[key]))
    add(node, PG.bitsStored, value.get("bits_stored"))
    add(node, PG.outputBits, value.get("output_bits"))
    libraries = value.get("libraries")
    if libraries:
        add(node, PG.libraryVersions, ", ".join(f"{k} {v}" for k, v in sorted(libraries.items())))
    if value.get("rendered_at"):
        import datetime as dt

        add(node, PG.renderedAt, dt.datetime.fromisoformat(value["rendered_at"].replace("Z", "+00:00")))
    add(node, PG.sourceFile, ctx.file_iri(rel))
    add(node, PG.sourceLine, line)
