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

Only single-frame, single-sample MONOCHROME1/MONOCHROME2 images are rendered; anything else
raises :class:`RenderError` naming the file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
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
    pipeline's behaviour (in tests and audits) and is recorded faithfully.
    """
    import numpy as np
    from pydicom.pixels import apply_modality_lut, apply_voi, apply_windowing

    photometric = str(ds.get("PhotometricInterpretation", "")).strip().upper()
    if photometric not in ("MONOCHROME1", "MONOCHROME2"):
        raise RenderError(name, f"PhotometricInterpretation {photometric or 'missing'}: only MONOCHROME1/2")
    if int(ds.get("SamplesPerPixel", 1) or 1) != 1 or int(ds.get("NumberOfFrames", 1) or 1) != 1:
        raise RenderError(name, "only single-frame, single-sample images are rendered")
    try:
        stored = ds.pixel_array
    except Exception as err:
        syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", "unknown")
        raise RenderError(name, f"cannot decode pixel data (transfer syntax {syntax}): {err}") from err

    if ds.get("ModalityLUTSequence"):
        modality_transform = "lut"
    elif "RescaleSlope" in ds and "RescaleIntercept" in ds:
        modality_transform = "rescale"
    else:
        modality_transform = "none"
    values = apply_modality_lut(stored, ds)
    if values.dtype.kind == "f" and np.all(np.mod(values, 1) == 0):
        values = values.astype(np.int64)  # integral rescale: keep the VOI LUT on integers

    center = width = None
    voi_lut = ds.get("VOILUTSequence")
    if window is not None:
        ds = ds.copy()
        ds.WindowCenter, ds.WindowWidth = float(window[0]), float(window[1])
        ds.VOILUTFunction = ds.get("VOILUTFunction", "LINEAR")
        voi_lut = None
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


def render_file(
    source: Path,
    image: Path,
    window: tuple[float, float] | None = None,
    invert: bool | None = None,
) -> dict[str, Any]:
    """Render ``source`` (DICOM) to ``image`` (PNG) and write the record beside it.

    Returns the record. Raises :class:`RenderError` for a file that cannot be rendered.
    """
    from pydicom import dcmread
    from pydicom.errors import InvalidDicomError

    name = str(source)
    try:
        data = source.read_bytes()
    except OSError as err:
        raise RenderError(name, f"cannot read: {err.strerror or err}") from err
    try:
        ds = dcmread(io.BytesIO(data))
    except InvalidDicomError as err:
        raise RenderError(name, "not a DICOM file (no 'DICM' marker at byte 128)") from err
    except Exception as err:
        raise RenderError(name, f"unreadable DICOM ({type(err).__name__})") from err
    result = render_dataset(ds, name, window, invert)
    image_sha = write_png(result.pixels, image)
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
    sidecar.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()
