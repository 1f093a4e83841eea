"""DICOM files and folders, headers only: pixel data is never read, let alone decoded.

Each file is read with ``pydicom.dcmread(stop_before_pixels=True)``. The file node (its
bundle path, sha256 and size) becomes a ``pg:DicomFile`` carrying the attributes rules need:
Modality, ViewPosition, PhotometricInterpretation, Rows/Columns, BitsAllocated/BitsStored,
PixelRepresentation, SamplesPerPixel, NumberOfFrames, Rescale slope/intercept, the first
window centre/width, whether a VOI or modality LUT sequence is present, the SOP class and the
transfer syntax.

Identifying attributes become keyed hashes (:mod:`provgraph.pseudonym`): PatientID is the
patient node (``patient/<hmac>``, the same node the MIMIC tables and the cohort manifest
mint); PatientName, PatientBirthDate, AccessionNumber and the Study/Series/SOP Instance UIDs
(replaced in de-identification by DICOM PS3.15) are stored only as hashes. Raw values never
enter the graph or a message, and pydicom's own warnings (which can quote values) are
captured and replaced by messages that quote none.

A folder is read whole. Files named ``*.dcm``/``*.dicom`` or without a suffix must be DICOM;
each that is not (no ``DICM`` marker), is truncated (before or inside Pixel Data), lacks a tag
the rules need, or uses an unknown character set is reported on its own line while the rest of
the folder imports. Files with other suffixes (a study's ``.txt`` report) are inventoried
(path, size, sha256) without complaint.
"""

from __future__ import annotations

import logging
import struct
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from provgraph.bundle import Bundle
from provgraph.ingest import CERTAIN, LIKELY, NO, ImportContext, Importer, Member, Source, tree_members
from provgraph.pseudonym import Patients, UsesSecret
from provgraph.vocab import PG, PROV, RDF_TYPE

DICOM_SUFFIXES = {".dcm", ".dicom"}
MAGIC_OFFSET = 128
#: Sniff at most this many suffix-less files when deciding whether a folder is DICOM.
SNIFF_LIMIT = 256
#: Tags without which a rule cannot judge the file (reported, the rest is still imported).
NEEDED = ("SOPInstanceUID", "PatientID", "PhotometricInterpretation", "Rows", "Columns", "BitsStored")
PIXEL_DATA = 0x7FE00010
DEFLATED = "1.2.840.10008.1.2.1.99"
SEQUENCE_DELIMITER = b"\xfe\xff\xdd\xe0\x00\x00\x00\x00"
_LONG_VRS = {b"OB", b"OW", b"OF", b"OD", b"OL", b"OV", b"UN", b"SQ", b"UC", b"UR", b"UT"}
#: Identifying attributes stored as keyed hashes (keyword -> property).
HASHED = {
    "SOPInstanceUID": "sopInstanceHash",
    "StudyInstanceUID": "studyInstanceHash",
    "SeriesInstanceUID": "seriesInstanceHash",
    "AccessionNumber": "accessionHash",
    "PatientName": "patientNameHash",
    "PatientBirthDate": "birthDateHash",
}
_INTS = {
    "Rows": "imageRows",
    "Columns": "imageColumns",
    "BitsStored": "bitsStored",
    "BitsAllocated": "bitsAllocated",
    "PixelRepresentation": "pixelRepresentation",
    "SamplesPerPixel": "samplesPerPixel",
    "NumberOfFrames": "numberOfFrames",
}
_FLOATS = {
    "RescaleSlope": "rescaleSlope",
    "RescaleIntercept": "rescaleIntercept",
    "WindowCenter": "windowCenter",
    "WindowWidth": "windowWidth",
}


def has_magic(path: Path) -> bool:
    """True when ``path`` has the DICOM Part 10 ``DICM`` marker at byte 128."""
    try:
        with path.open("rb") as fh:
            fh.seek(MAGIC_OFFSET)
            return fh.read(4) == b"DICM"
    except OSError:
        return False


def must_be_dicom(name: str) -> bool:
    """Files the importer expects to be DICOM: ``*.dcm``, ``*.dicom`` or no suffix."""
    suffix = Path(name).suffix.lower()
    return suffix in DICOM_SUFFIXES or suffix == ""


class DicomImporter(UsesSecret, Importer):
    name = "dicom"
    version = "1"
    description = "DICOM files or folders, headers only (PatientID and other identifiers as keyed hashes)"
    handles = "any"

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.is_file():
            if has_magic(path):
                return CERTAIN
            return LIKELY if path.suffix.lower() in DICOM_SUFFIXES else NO
        dicom = other = sniffed = 0
        for member in tree_members(bundle, path):
            suffix = member.suffix.lower()
            if suffix in DICOM_SUFFIXES:
                dicom += 1
            elif suffix == "" and sniffed < SNIFF_LIMIT:
                sniffed += 1
                if has_magic(member):
                    dicom += 1
                else:
                    other += 1
            else:
                other += 1
        return LIKELY if dicom > other else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        patients = Patients(ctx)
        hashes = patients.pseudonyms
        add = ctx.add
        members = (
            source.members if source.kind == "tree" else (Member(source.rel, source.sha256, source.size),)
        )
        with quiet_pydicom() as caught:
            for member in members:
                node = ctx.file_iri(member.rel)
                if source.kind == "tree":
                    add(ctx.source_iri, PROV.hadMember, node)
                    add(node, RDF_TYPE, PG.File)
                    add(node, PG.path, member.rel)
                    add(node, PG.sha256, member.sha256)
                    add(node, PG.byteSize, member.size)
                ctx.advance(member.size)
                if not must_be_dicom(member.rel):
                    ctx.record()
                    continue
                del caught[:]
                header, reason = read_header(ctx.bundle.resolve(member.rel), member.size)
                if header is None:
                    ctx.problem(None, f"{member.rel}: {reason}")
                    continue
                add(node, RDF_TYPE, PG.DicomFile)
                problems = write_header(ctx, node, header, patients, hashes)
                problems += charset_problems(header, caught)
                for p in problems:
                    ctx.problem(None, f"{member.rel}: {p}")
                ctx.record()


def read_header(path: Path, size: int) -> tuple[Any, str | None]:
    """The dataset up to Pixel Data, or None and why the file is unusable."""
    from pydicom import dcmread
    from pydicom.errors import InvalidDicomError

    try:
        with path.open("rb") as fh:
            try:
                ds = dcmread(fh, stop_before_pixels=True)
            except InvalidDicomError:
                return None, "not a DICOM file (no 'DICM' marker at byte 128)"
            except Exception as err:  # pydicom raises many types on corrupt input
                return None, f"unreadable DICOM header ({type(err).__name__})"
            reason = _pixel_data_problem(ds, fh, size)
    except OSError as err:
        return None, f"cannot read: {err.strerror or err}"
    return (None, reason) if reason else (ds, None)


def _pixel_data_problem(ds: Any, fh: Any, size: int) -> str | None:
    """Truncation, found without reading pixel values: after ``stop_before_pixels`` pydicom
    leaves the file at the Pixel Data tag (or at the end when the file stops short of it)."""
    meta = getattr(ds, "file_meta", None)
    syntax = str(meta.get("TransferSyntaxUID", "")) if meta is not None else ""
    if syntax == DEFLATED:
        return None  # the position refers to the inflated stream; nothing to compare
    start = fh.tell()
    head = fh.read(12)
    if len(head) < 8:
        if len(ds) == 0:
            return f"truncated: no data elements after the file meta header ({size} bytes)"
        return f"truncated or not an image: the file ends at byte {start} without Pixel Data (7FE0,0010)"
    implicit, little = getattr(ds, "original_encoding", (False, True))
    order = "<" if little is not False else ">"
    group, element = struct.unpack(order + "HH", head[:4])
    if (group << 16) | element != PIXEL_DATA:
        return None  # float / double pixel data: not checked
    if implicit:
        length, header_len = struct.unpack(order + "I", head[4:8])[0], 8
    elif head[4:6] in _LONG_VRS:
        if len(head) < 12:
            return f"truncated inside the Pixel Data header at byte {start}"
        length, header_len = struct.unpack(order + "I", head[8:12])[0], 12
    else:
        length, header_len = struct.unpack(order + "H", head[6:8])[0], 8
    if length == 0xFFFFFFFF:
        fh.seek(max(size - 8, 0))
        if fh.read(8) != SEQUENCE_DELIMITER:
            return "truncated: encapsulated Pixel Data does not end with a sequence delimiter"
        return None
    remaining = size - start - header_len
    if remaining < length:
        return f"truncated: Pixel Data declares {length} bytes but only {max(remaining, 0)} remain"
    return None


def write_header(ctx: ImportContext, node: Any, ds: Any, patients: Patients, hashes: Any) -> list[str]:
    """Emit the header attributes of one file; return what is wrong with them (no values quoted)."""
    add = ctx.add
    problems: list[str] = []
    values: dict[str, Any] = {}
    for keyword in (*NEEDED, "Modality", "ViewPosition", *HASHED, *_INTS, *_FLOATS, "SOPClassUID"):
        if keyword in values:
            continue
        try:
            values[keyword] = ds.get(keyword)
        except Exception:  # a value that does not convert to its VR
            values[keyword] = None
            problems.append(f"{keyword} has a value that is not valid for its VR; ignored")
    missing = [k for k in NEEDED if values.get(k) is None or str(values[k]).strip() == ""]
    if missing:
        problems.append(
            f"missing {', '.join(missing)}; imported without {'it' if len(missing) == 1 else 'them'}"
        )
    add(node, PG.patient, patients.node(values["PatientID"]) if "PatientID" not in missing else None)
    for keyword, prop in HASHED.items():
        value = values.get(keyword)
        if value is not None:
            add(node, PG[prop], hashes.optional(keyword, _text(value)))
    photometric = values.get("PhotometricInterpretation")
    if photometric is not None and str(photometric).strip():
        add(node, PG.photometricInterpretation, str(photometric).strip().upper())
    add(node, PG.viewPosition, _text(values.get("ViewPosition") or "").strip().upper())
    add(node, PG.modality, _text(values.get("Modality") or "").strip() or None)
    sop_class = values.get("SOPClassUID")
    add(node, PG.sopClass, str(sop_class) if sop_class else None)
    for keyword, prop in _INTS.items():
        number = _first(values.get(keyword))
        if number is not None:
            try:
                add(node, PG[prop], int(number))
            except (TypeError, ValueError):
                problems.append(f"{keyword} is not a whole number; ignored")
    for keyword, prop in _FLOATS.items():
        number = _first(values.get(keyword))
        if number is not None:
            try:
                add(node, PG[prop], float(number))
            except (TypeError, ValueError):
                problems.append(f"{keyword} is not a number; ignored")
    add(node, PG.hasVoiLut, "VOILUTSequence" in ds)
    add(node, PG.hasModalityLut, "ModalityLUTSequence" in ds)
    meta = getattr(ds, "file_meta", None)
    syntax = meta.get("TransferSyntaxUID") if meta is not None else None
    add(node, PG.transferSyntax, str(syntax) if syntax else None)
    return problems


def charset_problems(ds: Any, caught: list[warnings.WarningMessage]) -> list[str]:
    """Unknown character sets and undecodable text, reported without quoting any value."""
    from pydicom.charset import python_encoding

    problems = []
    try:
        declared = ds.get("SpecificCharacterSet")
    except Exception:
        declared = None
    names = [declared] if isinstance(declared, str) else list(declared or [])
    unknown = [n for n in names if n and n.strip() not in python_encoding]
    if unknown:
        shown = ", ".join(repr(n[:32]) for n in unknown)
        problems.append(
            f"unknown SpecificCharacterSet {shown}; text was decoded as ASCII, so keyed hashes of "
            "names may not match other sources"
        )
    elif any("decode" in str(w.message) for w in caught):
        problems.append(
            "text that does not decode in its declared character set (replacement characters "
            "used); keyed hashes of names may not match other sources"
        )
    return problems


def _first(value: Any) -> Any:
    """The first value of a multi-valued attribute; None when empty."""
    from pydicom.multival import MultiValue

    if isinstance(value, MultiValue | list | tuple):
        return value[0] if len(value) else None
    return None if value in ("", b"") else value


def _text(value: Any) -> str:
    """A DICOM value as text; multi-valued attributes joined by the DICOM separator."""
    from pydicom.multival import MultiValue

    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, MultiValue | list | tuple):
        return "\\".join(str(v) for v in value)
    return str(value)


@contextmanager
def quiet_pydicom() -> Iterator[list[warnings.WarningMessage]]:
    """Read leniently and keep pydicom's warnings (which may quote values) out of every log.

    Yields the list the warnings are recorded in, so callers can turn them into messages that
    quote nothing.
    """
    from pydicom import config

    logger = logging.getLogger("pydicom")
    mode, disabled = config.settings.reading_validation_mode, logger.disabled
    config.settings.reading_validation_mode = config.IGNORE
    logger.disabled = True
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield caught
    finally:
        config.settings.reading_validation_mode = mode
        logger.disabled = disabled
