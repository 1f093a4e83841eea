"""The reference renderer: DICOM to 8-bit greyscale PNG, with a rendering record beside it.

The pipeline follows DICOM PS3.3 C.11 with pydicom's implementations as the reference:

1. stored values (``Dataset.pixel_array``);
2. modality transform: ``apply_modality_lut`` (Modality LUT Sequence, or Rescale
   Slope/Intercept);
3. VOI transform: the VOI LUT Sequence when present (``apply_voi``), else the header's first
   window (``apply_windowing``, LINEAR/LINEAR_EXACT/SIGMOID), else an explicit window given
   by the caller, else the min-max range of the modality output;
4. linear mapping of the VOI output range to 0..255 (the range ``apply_windowing`` maps onto,
   the LUT's nominal range, or the min-max range);
5. MONOCHROME1 inversion: its minimum sample is white (PS3.3 C.7.6.3.1.2), so ``255 - v``;
   MONOCHROME2 is never inverted;
6. PNG (8-bit greyscale, no metadata) and ``<image>.render.json`` (see
   :mod:`provgraph.evidence.renderings`).

Only single-frame, single-sample MONOCHROME1/MONOCHROME2 images are rendered. Anything else
raises :class:`RenderError` naming the file and the true reason: not DICOM or truncated (read by
the ``dicom`` importer's reader), no Pixel Data, colour, multi-frame, a malformed header value,
or pixels no installed decoder reads (naming the ``dicom-codecs`` extra when its pylibjpeg
plugins would add one). pydicom's errors are caught only around pydicom's own calls
(:data:`PYDICOM_DATA_ERRORS`), so a bug here still surfaces as one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provgraph import __version__
from provgraph.errors import InputError
from provgraph.evidence.renderings import FORMAT, sidecar_for

RENDERER = "provgraph render"
OUTPUT_BITS = 8


class RenderError(InputError):
    """A DICOM that cannot be rendered (not DICOM, not greyscale, undecodable pixels)."""


@dataclass
class Rendered:
    """An 8-bit image and how it was made."""

    pixels: Any  # numpy uint8 array (rows x columns)
    photometric: str
    inverted: bool
    modality_transform: str
    voi_transform: str
    window_center: float | None
    window_width: float | None
    bits_stored: int | None


def libraries() -> dict[str, str]:
    import numpy
    import PIL
    import pydicom

    return {"numpy": numpy.__version__, "Pillow": PIL.__version__, "pydicom": pydicom.__version__}


def render_dataset(
    ds: Any,
    name: str,
    window: tuple[float, float] | None = None,
    invert: bool | None = None,
) -> Rendered:
    """Render a dataset to 8 bits.

    ``window`` (centre, width), when given, replaces the header's VOI LUT and window.
    ``invert`` overrides the photometric decision; it exists only to reproduce another
    pipeline's behaviour (in tests and audits) and is recorded faithfully. Raises
    :class:`RenderError` with the true reason for a data set that cannot be rendered.
    """
    # lazy: the importer's pydicom setup loads pydicom, which only rendering needs
    from provgraph.importers.dicom import quiet_pydicom

    with quiet_pydicom(), _quiet_decoders():
        photometric = _renderable(ds, name)
        stored = decode(ds, name)
        return _transform(ds, name, stored, photometric, window, invert)


@contextlib.contextmanager
def _quiet_decoders() -> Iterator[None]:
    """Keep the tracebacks pydicom's decoders log for each failing plugin off stderr: the failure
    is raised to us and reported as one line (their loggers are children of the ``pydicom`` one
    that ``quiet_pydicom`` disables, and a child's records still reach its parent's handlers)."""
    loggers = [logging.getLogger(name) for name in DECODER_LOGGERS]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, before, strict=True):
            logger.disabled = disabled


def _transform(
    ds: Any, name: str, stored: Any, photometric: str, window: tuple[float, float] | None, invert: bool | None
) -> Rendered:
    import numpy as np
    from pydicom.pixels import apply_modality_lut, apply_voi, apply_windowing

    if ds.get("ModalityLUTSequence"):
        modality_transform = "lut"
    elif "RescaleSlope" in ds and "RescaleIntercept" in ds:
        modality_transform = "rescale"
    else:
        modality_transform = "none"
    center = width = None
    voi_lut = ds.get("VOILUTSequence")
    if window is not None:
        ds = ds.copy()
        ds.WindowCenter, ds.WindowWidth = float(window[0]), float(window[1])
        ds.VOILUTFunction = ds.get("VOILUTFunction", "LINEAR")
        voi_lut = None
    try:  # pydicom's transforms on header values no one checked: a malformed LUT or window is bad input
        values = apply_modality_lut(stored, ds)
        if values.dtype.kind == "f" and np.all(np.mod(values, 1) == 0):
            values = values.astype(np.int64)  # integral rescale: keep the VOI LUT on integers
        if voi_lut and "LUTDescriptor" in voi_lut[0] and "LUTData" in voi_lut[0]:
            voi_transform = "lut"
            out = apply_voi(values, ds)
            low, high = 0.0, float(2 ** int(voi_lut[0].LUTDescriptor[2]) - 1)
        elif "WindowCenter" in ds and "WindowWidth" in ds:
            voi_transform = "window"
            center, width = float(_first(ds.WindowCenter)), float(_first(ds.WindowWidth))
            out = apply_windowing(values, ds)
            low, high = _window_range(ds)
        else:
            voi_transform = "minmax"
            out = values
            low, high = float(np.min(values)), float(np.max(values))
    except PYDICOM_DATA_ERRORS as err:
        raise RenderError(
            name, f"malformed modality or VOI transform ({type(err).__name__}: {_line(err)})"
        ) from err

    out = np.asarray(out, dtype=np.float64)
    scaled = np.rint((out - low) / (high - low) * 255.0) if high > low else np.zeros_like(out)
    pixels = np.clip(scaled, 0, 255).astype(np.uint8)
    inverted = photometric == "MONOCHROME1" if invert is None else invert
    if inverted:
        pixels = 255 - pixels
    bits = ds.get("BitsStored")
    return Rendered(
        pixels,
        photometric,
        inverted,
        modality_transform,
        voi_transform,
        center,
        width,
        int(bits) if bits is not None else None,
    )


#: What pydicom (and the codecs under it) raise for data it cannot use: caught only around its own
#: calls, so that a bug of ours is never mistaken for a bad file.
PYDICOM_DATA_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,  # pydicom's "missing required element" for the pixel module
    NotImplementedError,
    RuntimeError,  # pydicom's "no plugin could decode" and the codecs' own failures
    EOFError,
    struct.error,
    zlib.error,
    OverflowError,
)
PIXEL_KEYWORDS = ("PixelData", "FloatPixelData", "DoubleFloatPixelData")
COLOUR = ("RGB", "PALETTE COLOR", "YBR_FULL", "YBR_FULL_422", "YBR_PARTIAL_420", "YBR_ICT", "YBR_RCT")
#: pydicom's loggers for pixel decoding (``logging.getLogger(__name__)`` in those modules).
DECODER_LOGGERS = ("pydicom.pixels.decoders.base", "pydicom.pixels.utils")
CODECS_HINT = "pip install 'provgraph[dicom-codecs]'"


def _renderable(ds: Any, name: str) -> str:
    """The photometric interpretation of a data set the renderer can take, or why it cannot."""
    if not any(keyword in ds for keyword in PIXEL_KEYWORDS):
        # lazy: pydicom's UID names are loaded with the importer's helpers
        from provgraph.importers.dicom import sop_class_name

        meta = getattr(ds, "file_meta", None)
        sop = ds.get("SOPClassUID") or (meta.get("MediaStorageSOPClassUID") if meta is not None else None)
        what = sop_class_name(str(sop) if sop else None)
        if what and "Image Storage" in what:  # an image object stored without its pixels
            raise RenderError(name, f"no Pixel Data: a {what} object stored without its pixels")
        if what is None:
            raise RenderError(name, "not an image: no Pixel Data (and no SOP Class UID pydicom knows)")
        raise RenderError(name, f"not an image: a {what} object has no Pixel Data")
    photometric = str(ds.get("PhotometricInterpretation", "") or "").strip().upper()
    if photometric in COLOUR:
        raise RenderError(name, f"colour image (PhotometricInterpretation {photometric}): only MONOCHROME1/2")
    if not photometric:
        missing = [
            k for k in ("PhotometricInterpretation", "Rows", "Columns", "BitsAllocated") if k not in ds
        ]
        raise RenderError(name, f"Pixel Data without the image pixel module ({', '.join(missing)} missing)")
    if photometric not in ("MONOCHROME1", "MONOCHROME2"):
        raise RenderError(name, f"PhotometricInterpretation {photometric}: only MONOCHROME1/2")
    samples = _header_int(ds, "SamplesPerPixel", name, 1)
    if samples != 1:
        raise RenderError(name, f"{samples} samples per pixel: only single-sample greyscale is rendered")
    frames = _header_int(ds, "NumberOfFrames", name, 1)
    if frames != 1:
        raise RenderError(name, f"multi-frame ({frames} frames): only single-frame images are rendered")
    for keyword in ("Rows", "Columns", "BitsAllocated", "BitsStored", "PixelRepresentation"):
        if _header_int(ds, keyword, name, None) is None:
            raise RenderError(name, f"{keyword} missing: the pixels cannot be read without it")
    return photometric


def _header_int(ds: Any, keyword: str, name: str, default: int | None) -> int | None:
    """An integer header value, or a RenderError saying it is malformed (never the raw ValueError)."""
    value = ds.get(keyword)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError) as err:
        shown = repr(str(value))[:24]  # an integer attribute, not a name: safe to quote, kept short
        raise RenderError(name, f"malformed {keyword} {shown} (not an integer)") from err


def decode(ds: Any, name: str) -> Any:
    """The stored pixel values (``Dataset.pixel_array``), or a RenderError with the true reason:
    no transfer syntax, a syntax no installed decoder handles (naming the extra that adds one),
    or the decoders' own complaint."""
    meta = getattr(ds, "file_meta", None)
    syntax = meta.get("TransferSyntaxUID") if meta is not None else None
    if not syntax:
        raise RenderError(name, "no Transfer Syntax UID in the file meta: the pixel encoding is unknown")
    try:
        return ds.pixel_array
    except PYDICOM_DATA_ERRORS as err:
        raise RenderError(name, _decode_failure(str(syntax), err)) from err


def _decode_failure(syntax: str, err: Exception) -> str:
    from pydicom.pixels import get_decoder
    from pydicom.uid import UID

    label = f"{syntax} '{UID(syntax).name}'" if UID(syntax).name != syntax else syntax
    try:
        decoder = get_decoder(syntax)
    except NotImplementedError:
        return f"cannot decode pixel data: pydicom has no decoder for transfer syntax {label}"
    # pydicom lists a plugin it could not load with its requirements; ours is the pylibjpeg one
    missing = any(d.startswith("pylibjpeg") for d in decoder.missing_dependencies)
    if missing and not decoder.available_plugins:
        return f"transfer syntax {label} needs a decoder that is not installed: {CODECS_HINT}"
    why = f"cannot decode {label} pixel data: {_line(err)}"
    return (
        f"{why}; the decoders of provgraph[dicom-codecs] are not installed ({CODECS_HINT})"
        if missing
        else why
    )


def _line(err: Exception, limit: int = 400) -> str:
    """An exception's message on one line (pydicom lists each plugin's failure on its own line)."""
    parts = [part.strip() for part in str(err).splitlines() if part.strip()]
    text = " ".join(p if p.endswith(":") or i == len(parts) - 1 else f"{p};" for i, p in enumerate(parts))
    text = text or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first(value: Any) -> Any:
    from pydicom.multival import MultiValue

    return value[0] if isinstance(value, MultiValue | list | tuple) else value


def _window_range(ds: Any) -> tuple[float, float]:
    """The output range ``apply_windowing`` maps onto (pydicom 3, processing.py)."""
    if ds.get("ModalityLUTSequence"):
        y_min, y_max = 0.0, float(2 ** int(ds.ModalityLUTSequence[0].LUTDescriptor[2]) - 1)
    elif int(ds.get("PixelRepresentation", 0)) == 0:
        y_min, y_max = 0.0, float(2 ** int(ds.BitsStored) - 1)
    else:
        y_min, y_max = float(-(2 ** (int(ds.BitsStored) - 1))), float(2 ** (int(ds.BitsStored) - 1) - 1)
    if ds.get("RescaleSlope") is not None and ds.get("RescaleIntercept") is not None:
        slope, intercept = float(ds.RescaleSlope), float(ds.RescaleIntercept)
        y_min, y_max = y_min * slope + intercept, y_max * slope + intercept
    return min(y_min, y_max), max(y_min, y_max)


def write_png(pixels: Any, path: Path) -> str:
    """Write an 8-bit greyscale PNG (no metadata) atomically; return its sha256."""
    import numpy as np
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8)).save(buffer, format="PNG")
    data = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def read_dataset(source: Path, data: bytes) -> Any:
    """The whole data set of ``source`` (its bytes ``data``), read as the ``dicom`` importer reads
    it: a file the importer refuses (not DICOM, truncated by its own elements' account) is refused
    here with the same reason, and a file without file meta is read with ``force=True``."""
    # lazy: pydicom loads only when a file is rendered
    from pydicom import dcmread
    from pydicom.errors import InvalidDicomError

    # lazy as pydicom: the importer's reader, so that a file is refused for the reason ingest gives
    from provgraph.importers.dicom import quiet_pydicom
    from provgraph.importers.dicom_read import read_header

    name = str(source)
    with quiet_pydicom():
        parsed, reason = read_header(name, len(data))
        if parsed is None:
            raise RenderError(name, reason or "unreadable DICOM")
        try:
            ds = dcmread(io.BytesIO(data), force=parsed.bare)
        except (InvalidDicomError, *PYDICOM_DATA_ERRORS) as err:
            raise RenderError(name, f"unreadable DICOM ({type(err).__name__}: {_line(err)})") from err
    if parsed.bare:
        _bare_syntax(ds)
    return ds


def _bare_syntax(ds: Any) -> None:
    """Give a bare data set (no file meta) the transfer syntax it was read in.

    Without file meta there is no Transfer Syntax UID, but there is also no encapsulated
    pixel data (PS3.5 A.4: encapsulation needs a declared syntax), so the pixels are native and
    their encoding is the one pydicom found reading the elements (``original_encoding``)."""
    # lazy: pydicom loads only when a file is rendered
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import ExplicitVRBigEndian, ExplicitVRLittleEndian, ImplicitVRLittleEndian

    implicit, little = ds.original_encoding
    if implicit is None or (implicit and not little):
        return  # not read as any syntax there is: decode() names the missing syntax
    meta = getattr(ds, "file_meta", None) or FileMetaDataset()
    if "TransferSyntaxUID" not in meta:
        meta.TransferSyntaxUID = (
            ImplicitVRLittleEndian if implicit else ExplicitVRLittleEndian if little else ExplicitVRBigEndian
        )
        ds.file_meta = meta


def render_file(
    source: Path,
    image: Path,
    window: tuple[float, float] | None = None,
    invert: bool | None = None,
) -> dict[str, Any]:
    """Render ``source`` (DICOM) to ``image`` (PNG) and write the record beside it.

    Returns the record. Raises :class:`RenderError` for a file that cannot be rendered.
    """
    name = str(source)
    try:
        data = source.read_bytes()
    except OSError as err:
        raise RenderError(name, f"cannot read: {err.strerror or err}") from err
    result = render_dataset(read_dataset(source, data), name, window, invert)
    try:
        image_sha = write_png(result.pixels, image)
    except OSError as err:
        raise RenderError(str(image), f"cannot write the image: {err.strerror or err}") from err
    record: dict[str, Any] = {
        "format": FORMAT,
        "source": _relative(source, image.parent),
        "source_sha256": hashlib.sha256(data).hexdigest(),
        "image": image.name,
        "image_sha256": image_sha,
        "photometric": result.photometric,
        "inverted": result.inverted,
        "renderer": RENDERER,
        "renderer_version": __version__,
        "modality_transform": result.modality_transform,
        "voi_transform": result.voi_transform,
        "window_center": result.window_center,
        "window_width": result.window_width,
        "bits_stored": result.bits_stored,
        "output_bits": OUTPUT_BITS,
        "libraries": libraries(),
        "rendered_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
    }
    sidecar = image.with_name(sidecar_for(image.name))
    try:
        sidecar.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except OSError as err:
        raise RenderError(str(sidecar), f"cannot write the rendering record: {err.strerror or err}") from err
    return record


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()
