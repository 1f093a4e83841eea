"""Rendering records: which DICOM produced which model-visible image, and how.

Format ``provgraph.rendering/1``: one JSON object per rendered image, kept either as a sidecar
``<image>.render.json`` beside the image (what ``provgraph render`` writes) or as one line of
a JSON Lines file. Paths are POSIX and relative to the folder holding the record, so a
rendered folder can be moved together with its records.

=====================  ========  ===========================================================
field                  required  meaning
=====================  ========  ===========================================================
``format``             yes       ``"provgraph.rendering/1"``
``source``             yes       the DICOM file that was read
``source_sha256``      yes       SHA-256 of the DICOM bytes that were read
``image``              yes       the model-visible image that was written
``image_sha256``       yes       SHA-256 of the image bytes that were written
``photometric``        yes       PhotometricInterpretation as read from the DICOM
``inverted``           yes       whether grey levels were inverted (MONOCHROME1 needs it)
``renderer``           yes       software that rendered (e.g. ``provgraph render``)
``renderer_version``   yes       its version
``modality_transform`` no        ``rescale``, ``lut`` or ``none``
``voi_transform``      no        ``window``, ``lut``, ``minmax`` or ``none``
``window_center``      no        window centre used (with ``voi_transform = window``)
``window_width``       no        window width used
``bits_stored``        no        BitsStored of the source
``output_bits``        no        bit depth of the written image (8)
``libraries``          no        library name -> version (pydicom, numpy, Pillow)
``rendered_at``        no        ISO 8601 timestamp
``x_*``                no        free for the producer's own use
=====================  ========  ===========================================================

Any other key is an error, so a typo cannot silently drop evidence. No field holds an
identifying value: records can be shared with the images they describe.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

FORMAT = "provgraph.rendering/1"
SIDECAR_SUFFIX = ".render.json"
MODALITY_TRANSFORMS = ("rescale", "lut", "none")
VOI_TRANSFORMS = ("window", "lut", "minmax", "none")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_NUMBER = (int, float)

REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "source": str,
    "source_sha256": str,
    "image": str,
    "image_sha256": str,
    "photometric": str,
    "inverted": bool,
    "renderer": str,
    "renderer_version": str,
}
OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "modality_transform": str,
    "voi_transform": str,
    "window_center": (*_NUMBER, type(None)),
    "window_width": (*_NUMBER, type(None)),
    "bits_stored": (int, type(None)),
    "output_bits": int,
    "libraries": dict,
    "rendered_at": str,
}


def sidecar_for(image_name: str) -> str:
    """The sidecar file name of an image: ``a.png`` -> ``a.png.render.json``."""
    return image_name + SIDECAR_SUFFIX


def check_record(value: Any) -> str | None:
    """Why a rendering record is unusable, or None when it is fine."""
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    missing = [k for k in REQUIRED if k not in value]
    if missing:
        return f"missing required key(s) {', '.join(missing)}"
    unknown = sorted(k for k in value if k not in REQUIRED and k not in OPTIONAL and not k.startswith("x_"))
    if unknown:
        return f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join([*REQUIRED, *OPTIONAL])}, x_*)"
    for key, kinds in {**REQUIRED, **OPTIONAL}.items():
        if key not in value:
            continue
        v = value[key]
        # bool is an int in Python; a count or a number must not be true/false
        if not isinstance(v, kinds) or (isinstance(v, bool) and kinds is not bool):
            return f"{key} must be {_kinds(kinds)}, got {type(v).__name__}"
    if value["format"] != FORMAT:
        return f"format must be {FORMAT!r}, got {value['format']!r}"
    for key in ("source", "image", "photometric", "renderer", "renderer_version"):
        if not value[key].strip():
            return f"empty {key}"
    for key in ("source_sha256", "image_sha256"):
        if not _SHA256.fullmatch(value[key]):
            return f"{key} must be 64 lower-case hex digits, got {value[key]!r}"
    for key, allowed in (("modality_transform", MODALITY_TRANSFORMS), ("voi_transform", VOI_TRANSFORMS)):
        if key in value and value[key] not in allowed:
            return f"{key} must be one of {', '.join(allowed)}, got {value[key]!r}"
    if value.get("voi_transform") == "window" and (
        value.get("window_center") is None or value.get("window_width") is None
    ):
        return "voi_transform 'window' needs window_center and window_width"
    libraries = value.get("libraries", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in libraries.items()):
        return "libraries must map names to version strings"
    if "rendered_at" in value:
        try:
            dt.datetime.fromisoformat(value["rendered_at"].replace("Z", "+00:00"))
        except ValueError:
            return f"rendered_at is not an ISO 8601 timestamp: {value['rendered_at']!r}"
    return None


def _kinds(kinds: type | tuple[type, ...]) -> str:
    names = {bool: "true/false", str: "a string", int: "an integer", float: "a number", dict: "an object"}
    seq = kinds if isinstance(kinds, tuple) else (kinds,)
    words = [names.get(k, "null") if k is not type(None) else "null" for k in seq]
    if "an integer" in words and "a number" in words:
        words.remove("an integer")
    return " or ".join(words)
