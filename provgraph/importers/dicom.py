"""DICOM files and folders, headers only: pixel data is never read, let alone decoded.

Each file is read with ``pydicom.dcmread(stop_before_pixels=True)``. The file node (its
bundle path, sha256 and size) becomes a ``pg:DicomFile`` carrying the attributes rules need:
Modality, ViewPosition, PhotometricInterpretation, Rows/Columns, BitsAllocated/BitsStored,
PixelRepresentation, SamplesPerPixel, NumberOfFrames, Rescale slope/intercept, the first
window centre/width, whether a VOI or modality LUT sequence is present, the SOP class and the
transfer syntax.

Identifying attributes become keyed hashes (:mod:`provgraph.evidence.pseudonym`): PatientID is the
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
import os
import struct
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from provgraph.ingest.api import (
    CERTAIN,
    LIKELY,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Member,
    Patients,
    Source,
    UsesSecret,
    tree_rels,
)

DICOM_SUFFIXES = {".dcm", ".dicom"}
#: Suffixes of formats that are never DICOM (DICOM files carry .dcm, no suffix, or a UID part).
NOT_DICOM = frozenset(
    {
        ".txt",
        ".md",
        ".csv",
        ".tsv",
        ".json",
        ".jsonl",
        ".ndjson",
        ".toml",
        ".yaml",
        ".yml",
        ".xml",
        ".html",
        ".svg",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".tif",
        ".tiff",
        ".pdf",
        ".tex",
        ".py",
        ".r",
        ".ipynb",
        ".zip",
        ".gz",
        ".tgz",
        ".tar",
        ".lock",
        ".nt",
        ".ttl",
        ".log",
    }
)
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
    suffix = os.path.splitext(os.path.basename(name))[1].lower()
    return suffix in DICOM_SUFFIXES or suffix == ""


class DicomImporter(UsesSecret, Importer):
    name = "dicom"
    version = "1"
    description = "DICOM files or folders, headers only (PatientID and other identifiers as keyed hashes)"
    handles = "any"

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.is_file():
            if path.suffix.lower() in NOT_DICOM:
                return NO  # spares reading the header of every text, table and image of a bundle
            if has_magic(path):
                return CERTAIN
            return LIKELY if path.suffix.lower() in DICOM_SUFFIXES else NO
        dicom = other = sniffed = 0
        for member in tree_rels(bundle, path):
            suffix = os.path.splitext(member.rsplit("/", 1)[-1])[1].lower()
            if suffix in DICOM_SUFFIXES:
                dicom += 1
            elif suffix == "" and sniffed < SNIFF_LIMIT:
                sniffed += 1
                if has_magic(bundle.resolve(member)):
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
        root = str(ctx.bundle.root)
        tree, has_member, file_class, dicom_class = ctx.source_iri, PROV.hadMember, PG.File, PG.DicomFile
        path, sha256, size = PG.path, PG.sha256, PG.byteSize
        with quiet_pydicom() as caught:
            for member in members:
                node = ctx.file_iri(member.rel)
                if source.kind == "tree":
                    add(tree, has_member, node)
                    add(node, RDF_TYPE, file_class)
                    add(node, path, member.rel)
                    add(node, sha256, member.sha256)
                    add(node, size, member.size)
                ctx.advance(member.size)
                if not must_be_dicom(member.rel):
                    ctx.record()
                    continue
                del caught[:]
                header, reason = read_header(os.path.join(root, member.rel), member.size)
                where = f"{member.rel}: " if source.kind == "tree" else ""
                if header is None:
                    ctx.problem(None, where + reason)
                    continue
                add(node, RDF_TYPE, dicom_class)
                parsed = write_header(ctx, node, header, patients, hashes)
                for p in parsed.problems + charset_problems(parsed, caught):
                    ctx.problem(None, where + p)
                ctx.record()


def read_header(path: str, size: int) -> tuple[Any, str | None]:
    """The dataset up to Pixel Data, or None and why the file is unusable."""
    from pydicom import dcmread
    from pydicom.errors import InvalidDicomError

    try:
        with open(path, "rb") as fh:
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
    if transfer_syntax(ds) == DEFLATED:
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


#: Attributes whose values are ASCII by definition (CS, UI, DA, DS, IS): read from the raw bytes.
_ASCII_VRS = {"CS", "UI", "DA", "DS", "IS", "TM"}
#: Text whose bytes depend on SpecificCharacterSet.
_CHARSET_TEXT = ("PatientID", "PatientName", "AccessionNumber")
_TAGS: dict[str, int] = {}  # keyword -> tag as a plain int


@cache
def _pydicom() -> SimpleNamespace:
    """The pydicom names the hot loop uses, imported once (pydicom loads only when needed)."""
    from pydicom.charset import python_encoding
    from pydicom.datadict import dictionary_VR, tag_for_keyword
    from pydicom.dataelem import RawDataElement

    return SimpleNamespace(
        python_encoding=python_encoding,
        dictionary_VR=dictionary_VR,
        tag_for_keyword=tag_for_keyword,
        RawDataElement=RawDataElement,
    )


def _tag(keyword: str) -> int:
    tag = _TAGS.get(keyword)
    if tag is None:
        tag = _TAGS[keyword] = int(_pydicom().tag_for_keyword(keyword))
    return tag


def transfer_syntax(ds: Any) -> str | None:
    """The file meta's TransferSyntaxUID as text (None when absent)."""
    meta = getattr(ds, "file_meta", None)
    elem = meta.get_item(0x00020010) if meta is not None else None
    if elem is None:
        return None
    value = elem.value
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value or "")
    return text.strip(" \x00") or None


class Header:
    """Values of one dataset read straight from its raw elements where the VR allows.

    ``dcmread`` leaves elements raw; converting them through pydicom costs more than reading
    the file. Values that are ASCII by definition (CS, UI, DA, DS, IS) and US integers are
    decoded here, as is text in a single non-ISO-2022 character set (one Python codec, as
    pydicom does); code extensions, unknown character sets, undecodable bytes and unexpected
    VRs go through pydicom's own conversion.
    """

    def __init__(self, ds: Any) -> None:
        self.lib = lib = _pydicom()
        self.ds = ds
        # the top-level elements as stored (raw unless something read them), keyed by plain
        # int: pydicom's BaseTag compares in Python, which would dominate every lookup
        self.elements = {int(tag): elem for tag, elem in ds.items()}
        self.problems: list[str] = []
        self.charsets = [c for c in self.values("SpecificCharacterSet") or [] if c]
        # One non-ISO-2022 character set: raw text decodes with one Python codec (what pydicom
        # does too); anything else (code extensions, unknown names) is left to pydicom.
        single = len(self.charsets) <= 1 and not any(c.startswith("ISO 2022") for c in self.charsets)
        self.codec = lib.python_encoding.get(self.charsets[0] if self.charsets else "") if single else None

    def _element(self, keyword: str) -> Any:
        return self.elements.get(_tag(keyword))

    def has(self, keyword: str) -> bool:
        return _tag(keyword) in self.elements

    def _converted(self, keyword: str) -> Any:
        try:
            return self.ds.get(keyword)
        except Exception:  # a value that does not convert to its VR
            self.problems.append(f"{keyword} has a value that is not valid for its VR; ignored")
            return None

    def values(self, keyword: str) -> list[str] | None:
        """All values as text (None when the attribute is absent)."""
        elem = self.elements.get(_tag(keyword))
        if elem is None:
            return None
        lib = self.lib
        if type(elem) is lib.RawDataElement and elem.value is not None:
            vr = elem.VR or lib.dictionary_VR(elem.tag)
            codec = "ascii" if vr in _ASCII_VRS else self.codec if keyword in _CHARSET_TEXT else None
            if codec is not None:
                try:
                    text = elem.value.decode(codec)
                except UnicodeDecodeError:
                    pass  # pydicom decodes with replacement characters and warns (reported)
                else:
                    if "\\" not in text:
                        return [text.strip(" \x00")]
                    return [v.strip(" \x00") for v in text.split("\\")]
        value = self._converted(keyword)
        if value is None:
            return None
        return [_text(v) for v in value] if _multi(value) else [_text(value)]

    def text(self, keyword: str) -> str | None:
        """The value as one string (multiple values joined by the DICOM separator)."""
        values = self.values(keyword)
        if values is None:
            return None
        return values[0] if len(values) == 1 else "\\".join(values)

    def first(self, keyword: str) -> str | None:
        values = self.values(keyword)
        return values[0] if values and values[0] != "" else None

    def unsigned(self, keyword: str) -> int | None:
        """A US attribute (Rows, BitsStored...)."""
        elem = self._element(keyword)
        if elem is None:
            return None
        if type(elem) is self.lib.RawDataElement and elem.VR in (None, "US") and elem.value is not None:
            if len(elem.value) < 2:
                return None
            return struct.unpack("<H" if elem.is_little_endian else ">H", elem.value[:2])[0]
        value = self._converted(keyword)
        value = value[0] if _multi(value) and len(value) else value
        try:
            return None if value in (None, "") else int(value)
        except (TypeError, ValueError):
            self.problems.append(f"{keyword} is not a whole number; ignored")
            return None


@cache
def _terms() -> dict[str, Any]:
    """The pg: properties written per file, looked up once."""
    names = (
        *HASHED.values(),
        *_INTS.values(),
        *_FLOATS.values(),
        *("patient", "photometricInterpretation", "viewPosition", "modality", "sopClass"),
        *("hasVoiLut", "hasModalityLut", "transferSyntax"),
    )
    return {name: PG[name] for name in names}


def write_header(ctx: ImportContext, node: Any, ds: Any, patients: Patients, hashes: Any) -> Header:
    """Emit the header attributes of one file; its ``problems`` say what is wrong (no values quoted)."""
    add, term = ctx.add, _terms()
    header = Header(ds)
    text = {k: header.text(k) for k in (*NEEDED[:3], *HASHED, "Modality", "ViewPosition", "SOPClassUID")}
    ints = {k: header.unsigned(k) for k in _INTS if k != "NumberOfFrames"}
    present = {k: v is not None and v.strip() != "" for k, v in text.items()}
    present.update({k: v is not None for k, v in ints.items()})
    missing = [k for k in NEEDED if not present[k]]
    problems = header.problems
    if missing:
        problems.append(
            f"missing {', '.join(missing)}; imported without {'it' if len(missing) == 1 else 'them'}"
        )
    add(node, term["patient"], patients.node(text["PatientID"]) if "PatientID" not in missing else None)
    for keyword, prop in HASHED.items():
        if text[keyword] is not None:
            add(node, term[prop], hashes.optional(keyword, text[keyword]))
    if "PhotometricInterpretation" not in missing:
        add(node, term["photometricInterpretation"], text["PhotometricInterpretation"].strip().upper())
    add(node, term["viewPosition"], (text["ViewPosition"] or "").strip().upper())
    add(node, term["modality"], (text["Modality"] or "").strip() or None)
    add(node, term["sopClass"], text["SOPClassUID"] or None)
    for keyword, number in ints.items():
        add(node, term[_INTS[keyword]], number)
    numbers = {"NumberOfFrames": _INTS["NumberOfFrames"], **_FLOATS}
    for keyword, prop in numbers.items():
        raw = header.first(keyword)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            problems.append(f"{keyword} is not a number; ignored")
            continue
        add(node, term[prop], int(value) if keyword == "NumberOfFrames" else value)
    add(node, term["hasVoiLut"], header.has("VOILUTSequence"))
    add(node, term["hasModalityLut"], header.has("ModalityLUTSequence"))
    add(node, term["transferSyntax"], transfer_syntax(ds))
    return header


def charset_problems(header: Header, caught: list[warnings.WarningMessage]) -> list[str]:
    """Unknown character sets and undecodable text, reported without quoting any value."""
    if not header.charsets and not caught:
        return []
    problems = []
    unknown = [n for n in header.charsets if n not in header.lib.python_encoding]
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


def _multi(value: Any) -> bool:
    from pydicom.multival import MultiValue

    return isinstance(value, MultiValue | list | tuple)


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
