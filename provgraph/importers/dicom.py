"""DICOM files and folders, headers only: pixel data is never read, let alone decoded.

Each file is read up to Pixel Data by :mod:`provgraph.importers.dicom_read` (pydicom's own
parser, every transfer syntax pydicom reads, truncation judged from the elements' declared
lengths and the encapsulated fragment items). The file node (its bundle path, sha256 and size)
becomes a ``pg:DicomFile`` carrying the attributes rules need: Modality, ViewPosition,
PhotometricInterpretation, Rows/Columns, BitsAllocated/BitsStored, PixelRepresentation,
SamplesPerPixel, NumberOfFrames, Rescale slope/intercept, the first window centre/width,
whether a VOI or modality LUT sequence is present, the SOP class (UID and pydicom's name), the
transfer syntax and whether it has Pixel Data. DICOM objects without an image (structured
reports, RT plans, DICOMDIR, waveforms, palettes) are imported as what they are: header facts
and SOP class, ``pg:hasPixelData false``, no image attributes asked for.

Identifying attributes become keyed hashes (:mod:`provgraph.evidence.pseudonym`): PatientID is the
patient node (``patient/<hmac>``, the same node the MIMIC tables and the cohort manifest
mint); PatientName, PatientBirthDate, AccessionNumber and the Study/Series/SOP Instance UIDs
(replaced in de-identification by DICOM PS3.15) are stored only as hashes. Raw values never
enter the graph or a message, and pydicom's own warnings (which can quote values) are
captured and replaced by messages that quote none.

A folder is read whole. Files named ``*.dcm``/``*.dicom`` or without a suffix must be DICOM;
each that is not, or is truncated, is rejected on its own line while the rest of the folder
imports. An image that lacks a tag the rules need, or text in an unknown or undecodable
character set, is imported with a note (``ctx.note``). Files with other suffixes (a study's
``.txt`` report) are inventoried (path, size, sha256) without complaint.
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

from provgraph.importers.dicom_read import MAGIC_OFFSET, Parsed, read_header
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
#: Sniff at most this many suffix-less files when deciding whether a folder is DICOM.
SNIFF_LIMIT = 256
#: Tags without which a rule cannot judge the file (reported, the rest is still imported).
NEEDED = ("SOPInstanceUID", "PatientID", "PhotometricInterpretation", "Rows", "Columns", "BitsStored")
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
        members = (
            source.members if source.kind == "tree" else (Member(source.rel, source.sha256, source.size),)
        )
        # lazy: the pool module (multiprocessing) loads only for folders large enough to split
        from provgraph.importers.dicom_pool import import_in_parallel

        if not import_in_parallel(ctx, members, source.kind == "tree", patients):
            import_members(ctx, members, source.kind == "tree", patients)


def import_members(ctx: Any, members: Any, tree: bool, patients: Any) -> None:
    """Import ``members`` through ``ctx`` (the import's own context, or a worker's)."""
    add, hashes = ctx.add, patients.pseudonyms
    root = str(ctx.bundle_root)
    source, has_member, file_class, dicom_class = ctx.source_iri, PROV.hadMember, PG.File, PG.DicomFile
    path, sha256, size = PG.path, PG.sha256, PG.byteSize
    with quiet_pydicom() as caught:
        for member in members:
            node = ctx.file_iri(member.rel)
            if tree:
                add(source, has_member, node)
                add(node, RDF_TYPE, file_class)
                add(node, path, member.rel)
                add(node, sha256, member.sha256)
                add(node, size, member.size)
            ctx.advance(member.size)
            if not must_be_dicom(member.rel):
                ctx.record()
                continue
            del caught[:]
            parsed, reason = read_header(os.path.join(root, member.rel), member.size)
            where = f"{member.rel}: " if tree else ""
            if parsed is None:
                ctx.problem(None, where + (reason or "unreadable"))
                continue
            add(node, RDF_TYPE, dicom_class)
            header = write_header(ctx, node, parsed, patients, hashes)
            for p in header.problems + charset_problems(header, caught):
                ctx.note(None, where + p)  # the header is imported: these are notes, not rejections
            ctx.record()


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
        *("hasVoiLut", "hasModalityLut", "transferSyntax", "sopClassName", "hasPixelData"),
    )
    return {name: PG[name] for name in names}


def write_header(ctx: Any, node: Any, parsed: Parsed, patients: Any, hashes: Any) -> Header:
    """Emit the header attributes of one file; its ``problems`` say what is wrong (no values quoted).

    A file without Pixel Data is a DICOM object without an image (a structured report, an RT
    plan, a DICOMDIR, a waveform): its header facts and SOP class are written and the image
    attributes are not asked for. An image SOP class without Pixel Data is said so.
    """
    add, term = ctx.add, _terms()
    header = Header(parsed.ds)
    text = {k: header.text(k) for k in (*NEEDED[:3], *HASHED, "Modality", "ViewPosition", "SOPClassUID")}
    sop = text["SOPClassUID"] or _meta_text(parsed, 0x00020002)
    name = sop_class_name(sop)
    problems = header.problems
    if parsed.pixels:
        ints = {k: header.unsigned(k) for k in _INTS if k != "NumberOfFrames"}
        present = {k: v is not None and v.strip() != "" for k, v in text.items()}
        present.update({k: v is not None for k, v in ints.items()})
        missing = [k for k in NEEDED if not present[k]]
        if missing:
            problems.append(
                f"missing {', '.join(missing)}; its other header facts are imported "
                f"(a rule that needs {'it' if len(missing) == 1 else 'them'} cannot judge this file)"
            )
    else:
        ints, missing = {}, ["PhotometricInterpretation"]
        if name is not None and "Image Storage" in name:
            problems.append(
                f"no Pixel Data (7FE0,0010) although its SOP class is {name}: imported as a header "
                "without pixels (written without them, or cut at an element boundary)"
            )
    add(node, term["hasPixelData"], parsed.pixels)
    add(node, term["patient"], patients.node(text["PatientID"]) if _filled(text["PatientID"]) else None)
    for keyword, prop in HASHED.items():
        if text[keyword] is not None:
            add(node, term[prop], hashes.optional(keyword, text[keyword]))
    if "PhotometricInterpretation" not in missing:
        add(node, term["photometricInterpretation"], text["PhotometricInterpretation"].strip().upper())
    if parsed.pixels:  # a view position belongs to an image: a report has none, not a blank one
        add(node, term["viewPosition"], (text["ViewPosition"] or "").strip().upper())
    add(node, term["modality"], (text["Modality"] or "").strip() or None)
    add(node, term["sopClass"], sop)
    add(node, term["sopClassName"], name)
    for keyword, number in ints.items():
        add(node, term[_INTS[keyword]], number)
    _write_numbers(header, node, add, term, problems, parsed.pixels)
    add(node, term["hasVoiLut"], header.has("VOILUTSequence"))
    add(node, term["hasModalityLut"], header.has("ModalityLUTSequence"))
    add(node, term["transferSyntax"], parsed.transfer_syntax)
    return header


def _write_numbers(header: Header, node: Any, add: Any, term: Any, problems: list[str], image: bool) -> None:
    numbers = {"NumberOfFrames": _INTS["NumberOfFrames"], **_FLOATS} if image else {}
    for keyword, prop in numbers.items():
        raw = header.first(keyword)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            problems.append(f"{keyword} is not a number; ignored")
            continue
        if keyword == "NumberOfFrames" and not (value.is_integer() and value >= 1):
            problems.append("NumberOfFrames is not a whole number of at least 1; ignored")
            continue
        add(node, term[prop], int(value) if keyword == "NumberOfFrames" else value)


def _filled(value: str | None) -> bool:
    return value is not None and value.strip() != ""


def _meta_text(parsed: Parsed, tag: int) -> str | None:
    elem = parsed.meta.get(tag)
    if elem is None or elem.value is None:
        return None
    value = elem.value
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    return text.strip(" \x00") or None


@cache
def sop_class_name(uid: str | None) -> str | None:
    """pydicom's name for a SOP class UID (None when pydicom does not know it)."""
    if not uid:
        return None
    from pydicom.uid import UID  # pydicom loads only when a DICOM is read

    name = UID(uid).name
    return None if name == uid else name


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
