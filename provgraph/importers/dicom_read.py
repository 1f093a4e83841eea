"""Reading one DICOM file for the ``dicom`` importer: the data set up to Pixel Data, and whether
the file is whole, judged from pydicom's own element and fragment parsing.

Files with the Part 10 ``DICM`` marker and a transfer syntax whose encoding is fixed (implicit
or explicit VR little endian, explicit big endian, every encapsulated syntax) take the fast
path: the file meta group and the data set are parsed with pydicom's ``data_element_generator``
and ``read_dataset`` (which switches to implicit VR when the first element says so, as
``dcmread`` does), without ``dcmread``'s file-meta conversion and ``FileDataset`` layer.
Everything else (no file meta, no or a private transfer syntax, deflated data sets) goes
through ``dcmread`` itself, with ``force=True`` for files without the marker, which are kept
only when they hold a data set with a SOP Class UID.

Truncation is found where the file stops short of what its own elements declare: the last
element before Pixel Data (its declared length against the bytes present, or an undefined-length
sequence without its delimiter), the Pixel Data element (a native value's declared length; for
encapsulated pixels, the fragment items as ``pydicom.encaps.parse_fragments`` walks them, the
last fragment's declared length, then the sequence delimiter), and any elements after it
(data set trailing padding, private tags). No check assumes Pixel Data ends the file.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any

MAGIC_OFFSET = 128
#: Files up to this size are read in one call and parsed from memory (syscalls dominate small files).
IN_MEMORY = 1 << 20
#: Header values longer than this are skipped, not read (every attribute the importer reads is short).
DEFER = 1 << 16
PIXEL_TAGS = frozenset({0x7FE00010, 0x7FE00009, 0x7FE00008})
IMPLICIT_LE = "1.2.840.10008.1.2"
EXPLICIT_BE = "1.2.840.10008.1.2.2"
DEFLATED = "1.2.840.10008.1.2.1.99"
_UID = re.compile(r"[0-9]+(\.[0-9]+)+")
#: Explicit-VR VRs with a 2-byte reserved field and a 4-byte length (PS3.5 7.1.2).
_LONG_VRS = frozenset({b"OB", b"OW", b"OF", b"OD", b"OL", b"OV", b"UN", b"SQ", b"UC", b"UR", b"UT"})
ITEM, SEQ_DELIMITER = 0xFFFEE000, 0xFFFEE0DD


@dataclass
class Parsed:
    """One readable DICOM object: its data set up to Pixel Data and what reading it found."""

    ds: Any  # pydicom Dataset of raw elements
    meta: dict[int, Any] = field(default_factory=dict)  # file meta elements by plain int tag
    transfer_syntax: str | None = None
    pixels: bool = False  # Pixel Data (or float / double pixel data) is present
    bare: bool = False  # no file meta: a bare data set pydicom read with force=True
    inflated: Any = None  # a deflated data set: the buffer pydicom inflated it into


@cache
def _pydicom() -> SimpleNamespace:
    """The pydicom functions reading uses, imported once (pydicom loads only when needed)."""
    from pydicom import dcmread
    from pydicom.encaps import parse_fragments
    from pydicom.filereader import data_element_generator, read_dataset

    return SimpleNamespace(
        dcmread=dcmread,
        parse_fragments=parse_fragments,
        data_element_generator=data_element_generator,
        read_dataset=read_dataset,
    )


def _at_pixels(tag: int, vr: Any, length: int) -> bool:
    return tag in PIXEL_TAGS


def _not_meta(tag: int, vr: Any, length: int) -> bool:
    return tag >> 16 != 2


def read_header(path: str, size: int) -> tuple[Parsed | None, str | None]:
    """The data set up to Pixel Data, or None and why the file is unusable (one short clause)."""
    try:
        with open(path, "rb") as fh:
            fp: Any = io.BytesIO(fh.read()) if size <= IN_MEMORY else fh
            try:
                parsed = _parse(fp, size)
            except Exception as err:  # pydicom raises many types on corrupt input
                return None, _parse_error(err, size)
            if isinstance(parsed, str):
                return None, parsed
            if parsed.inflated is not None:  # a deflated data set is checked as pydicom inflated it
                fp, size = parsed.inflated, len(parsed.inflated.getvalue())
            return (None, reason) if (reason := _whole(parsed, fp, size)) else (parsed, None)
    except OSError as err:
        return None, f"cannot read: {err.strerror or err}"


def _parse_error(err: Exception, size: int) -> str:
    """What pydicom's parser raising means: running out of bytes inside a sequence item is a cut."""
    if "No tag to read" in str(err):  # read_sequence_item found no item tag
        return f"truncated inside a sequence: the file ends (at byte {size}) where an item must continue"
    if isinstance(err, EOFError | struct.error):  # a tag, length or value shorter than it must be
        return f"truncated: pydicom's parser ran out of bytes inside an element (the file has {size})"
    return f"unreadable DICOM header ({type(err).__name__})"


def _parse(fp: Any, size: int) -> Parsed | str:
    lib = _pydicom()
    fp.seek(MAGIC_OFFSET)
    if fp.read(4) != b"DICM":
        return _bare(fp)
    meta = {int(e.tag): e for e in lib.data_element_generator(fp, False, True, stop_when=_not_meta)}
    ts = _uid_text(meta.get(0x00020010))
    if ts is None or ts == DEFLATED or ts not in _known_syntaxes():
        return _with_dcmread(fp, size)  # pydicom works the encoding out (or inflates the data set)
    if fp.tell() >= size:
        return f"truncated: no data elements after the file meta header ({size} bytes)"
    implicit, little = ts == IMPLICIT_LE, ts != EXPLICIT_BE
    ds = lib.read_dataset(fp, implicit, little, stop_when=_at_pixels, defer_size=DEFER)
    return Parsed(ds, meta, ts, pixels=_at_pixel_tag(fp, little))


@cache
def _known_syntaxes() -> frozenset[str]:
    """Transfer syntaxes pydicom knows (all but the private ones it maps to another encoding)."""
    from pydicom import uid

    private = {str(u) for u in getattr(uid, "PrivateTransferSyntaxes", [])}
    return frozenset(str(u) for u in uid.AllTransferSyntaxes if str(u) not in private)


def _with_dcmread(fp: Any, size: int) -> Parsed | str:
    """Files whose encoding pydicom has to work out (no or unusual transfer syntax, deflated)."""
    lib = _pydicom()
    fp.seek(0)
    try:
        ds = lib.dcmread(fp, stop_before_pixels=True, defer_size=DEFER)
    except zlib.error:
        return "truncated or corrupt: the deflated data set does not inflate"
    meta = {int(t): e for t, e in ds.file_meta.items()}
    if len(ds) == 0:
        return f"truncated: no data elements after the file meta header ({size} bytes)"
    ts = _uid_text(meta.get(0x00020010))
    _, little = _encoding(ds)
    inflated = getattr(ds, "buffer", None) if ts == DEFLATED else None
    if inflated is not None:
        return Parsed(ds, meta, ts, pixels=_at_pixel_tag(inflated, little), inflated=inflated)
    return Parsed(ds, meta, ts, pixels=_at_pixel_tag(fp, little))


def _bare(fp: Any) -> Parsed | str:
    """A file without the ``DICM`` marker: kept only when pydicom reads a data set with a SOP class."""
    lib = _pydicom()
    fp.seek(0)
    refused = (
        "not a DICOM file (no 'DICM' marker at byte 128, and pydicom reads no data set with a "
        "SOP Class UID from it)"
    )
    try:
        ds = lib.dcmread(fp, force=True, stop_before_pixels=True)
        sop = _uid_text(ds.get_item(0x00080016))
    except Exception:  # whatever a text or image file makes of pydicom's parser
        return refused
    if sop is None or not _UID.fullmatch(sop):
        return refused
    _, little = _encoding(ds)
    return Parsed(ds, {}, None, pixels=_at_pixel_tag(fp, little), bare=True)


def _known_tag(tag: int, items: Any) -> bool:
    """A tag pydicom's dictionaries know (repeating groups included), a group length, or a
    private tag whose private creator (PS3.5 7.8.1) or another element of its group precedes it
    (real files omit creators; stray bytes read as a tag rarely hit a group already present)."""
    from pydicom.datadict import get_entry  # pydicom is loaded by now (a file was parsed)

    group, element = tag >> 16, tag & 0xFFFF
    if element == 0:  # group length (PS3.5 7.2)
        return True
    if group % 2 == 1:
        if 0x10 <= element <= 0xFF:
            return True  # a private creator
        return element >= 0x1000 and any(int(t) >> 16 == group for t in items if int(t) != tag)
    try:
        get_entry(tag)
    except KeyError:
        return False
    return True


def _encoding(ds: Any) -> tuple[bool, bool]:
    """(implicit VR, little endian) as the elements were read: the first raw element says so
    (``dcmread`` records the transfer syntax's encoding even where ``read_dataset`` switched)."""
    for elem in ds._dict.values():
        if hasattr(elem, "is_implicit_VR") and hasattr(elem, "is_little_endian"):
            return bool(elem.is_implicit_VR), bool(elem.is_little_endian)
        break
    implicit, little = getattr(ds, "original_encoding", (False, True))
    return bool(implicit), little is not False


def _uid_text(elem: Any) -> str | None:
    if elem is None or elem.value is None:
        return None
    value = elem.value
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    return text.strip(" \x00") or None


def _at_pixel_tag(fp: Any, little: bool) -> bool:
    """After ``stop_when`` pydicom rewinds to the tag that stopped it: is it a pixel data tag?"""
    start = fp.tell()
    head = fp.read(4)
    fp.seek(start)
    if len(head) < 4:
        return False
    group, element = struct.unpack("<HH" if little else ">HH", head)
    return (group << 16 | element) in PIXEL_TAGS


def _whole(parsed: Parsed, fp: Any, size: int) -> str | None:
    """Why the file is cut short, from what its elements declare (None when it is whole)."""
    # the encoding read_dataset used (it switches to implicit VR when the first element says so)
    implicit, little = _encoding(parsed.ds)
    if not parsed.pixels:
        return _last_element_problem(parsed.ds, fp, size, little)
    start = fp.tell()
    head = fp.read(12)
    order = "<" if little else ">"
    if implicit:
        length, header_len = struct.unpack(order + "I", head[4:8])[0] if len(head) >= 8 else None, 8
    elif head[4:6] in _LONG_VRS:
        length, header_len = struct.unpack(order + "I", head[8:12])[0] if len(head) >= 12 else None, 12
    else:
        length, header_len = struct.unpack(order + "H", head[6:8])[0] if len(head) >= 8 else None, 8
    if length is None:
        return f"truncated inside the Pixel Data element header at byte {start}"
    value_at = start + header_len
    if length == 0xFFFFFFFF:
        end = _fragments_end(fp, value_at, size, order)
        if isinstance(end, str):
            return end
    else:
        end = value_at + length
        if end > size:
            return f"truncated: Pixel Data declares {length} bytes but only {max(size - value_at, 0)} remain"
    return _trailing_problem(fp, end, size, implicit, little)


def _fragments_end(fp: Any, value_at: int, size: int, order: str) -> int | str:
    """End of encapsulated Pixel Data: its items as pydicom walks them, then the delimiter."""
    fp.seek(value_at)
    try:
        count, offsets = _pydicom().parse_fragments(fp, endianness=order)
    except ValueError as err:  # pydicom's reasons: the data ends inside an item header, or a stray tag
        if "end of the data" in str(err):
            return "truncated inside the header of a Pixel Data fragment item"
        return "malformed encapsulated Pixel Data: an element that is not an item among its fragments"
    if not offsets:
        end = value_at  # no item at all: the delimiter must come straight away
    else:
        fp.seek(offsets[-1] + 4)
        raw = fp.read(4)
        if len(raw) < 4:
            return f"truncated inside the header of Pixel Data fragment item {count}"
        length = struct.unpack(order + "I", raw)[0]
        end = offsets[-1] + 8 + length
        if end > size:
            present = max(size - offsets[-1] - 8, 0)
            return (
                f"truncated inside Pixel Data fragment item {count}: it declares {length} bytes, "
                f"{present} are present"
            )
    fp.seek(end)
    tail = fp.read(8)
    if len(tail) < 8:
        return "truncated: encapsulated Pixel Data ends without its sequence delimiter"
    group, element = struct.unpack(order + "HH", tail[:4])
    if (group << 16 | element) != SEQ_DELIMITER:
        return "malformed encapsulated Pixel Data: no sequence delimiter after its last fragment"
    return end + 8


def _trailing_problem(fp: Any, end: int, size: int, implicit: bool, little: bool) -> str | None:
    """Elements after Pixel Data (trailing padding, private tags) must be whole too."""
    if end >= size:
        return None
    fp.seek(end)
    gen = _pydicom().data_element_generator(fp, implicit, little, defer_size=64)
    elems = {int(e.tag): e for e in gen}
    return _last_element_problem(elems, fp, size, little, after=end)


def _last_element_problem(
    elems: Any, fp: Any, size: int, little: bool, after: int | None = None
) -> str | None:
    """The last element parsed before the end of the file must end where the file does."""
    items = elems._dict if hasattr(elems, "_dict") else elems
    if not items:
        if after is None:
            return None
        fp.seek(after)
        if size - after <= 64 and not fp.read(size - after).strip(b"\0"):
            return None  # zero padding after Pixel Data (pydicom skips it too)
        return (
            f"truncated or corrupt: the {size - after} bytes after Pixel Data are not a whole data "
            "element (cut inside one, or stray bytes)"
        )
    tag, last = next(reversed(items.items()))
    where = f"({int(tag) >> 16:04X},{int(tag) & 0xFFFF:04X})"
    length = getattr(last, "length", None)
    if getattr(last, "VR", None) == "SQ" and getattr(last, "is_undefined_length", False):
        fp.seek(max(size - 8, 0))
        delimiter = b"\xfe\xff\xdd\xe0\0\0\0\0" if little else b"\xff\xfe\xe0\xdd\0\0\0\0"
        if fp.read(8) != delimiter:
            return f"truncated inside the sequence {where}: the file ends before its delimiter"
        return None
    if length is None or length == 0xFFFFFFFF or not hasattr(last, "value_tell"):
        return None
    end = last.value_tell + length
    if end > size:
        present = size - last.value_tell
        if not _known_tag(int(tag), items):  # not an element pydicom knows: stray bytes, not a cut
            return (
                f"corrupt: bytes read as element {where}, a tag no dictionary has, declare {length} "
                f"bytes, more than the {present} left in the file"
            )
        return f"truncated inside element {where}: it declares {length} bytes, {present} are present"
    if end < size:
        fp.seek(end)
        if not fp.read(min(size - end, 64)).strip(b"\0") and size - end <= 64:
            return None  # zero padding after the last element (pydicom skips it too)
        return (
            f"truncated or corrupt: the {size - end} bytes after element {where} are not a whole "
            "data element (cut inside one, or stray bytes)"
        )
    return None
