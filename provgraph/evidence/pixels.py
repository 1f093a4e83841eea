"""Pixel fingerprints of model-visible images, and the judgement of one against its source.

A call sends PNG or JPEG bytes; the reference renderer (:mod:`provgraph.capture.renderer`)
says what those bytes should show. Exact bytes are compared by hash; anything else (a resized
or lossy copy) is compared as a **grid**: the image decoded, converted to greyscale (ITU-R
601-2 luma, Pillow's ``L``) and box-averaged to :data:`GRID` x :data:`GRID` samples, whatever
its size or aspect. A grid is 1,024 bytes of a 32 x 32 thumbnail: it shows the layout of the
image (where the bright and dark regions are), not who the patient is, and it is what the
graph keeps of a sent image (``pg:pixelGrid``, hex).

:func:`judge` compares a sent grid with the grid of the correct render by Pearson correlation
``r``. The inverted render (``255 - v``) correlates with it by exactly ``-r``, so the
correlation with the correct render against that with the inverse is the sign and size of
``r``: at or above :data:`MATCH` the image shows its source with the right polarity, at or
below ``-MATCH`` with reversed polarity, and in between it does not show this source in either
polarity. Above :data:`MATCH`, ``r >= SAME`` is the declared rendering of this source
(``correct``), below it the image only resembles it (``resembles``: another window or
processing, or another patient's film of the same layout). Both thresholds were set by the
experiment in ``bench/pixel_thresholds.py`` (README "Polarity and identity from pixels"):
resized and JPEG copies of the declared render keep ``r >= 0.997``, re-windowed ones
``|r| >= 0.81``, another synthetic patient's chest reaches 0.979, unrelated images 0.43.

>>> import numpy as np
>>> film = np.tile(np.arange(64, dtype=np.uint8) * 4, (64, 1))
>>> right = grid_of_array(film)
>>> judge(right, right)[0], judge(grid_of_array(255 - film), right)[0]
('correct', 'inverted')
"""

from __future__ import annotations

import io
import warnings
from typing import Any

#: samples per side of a grid
GRID = 32
#: |r| at or above which a sent image shows its source (see bench/pixel_thresholds.py)
MATCH = 0.6
#: r at or above which it is the declared rendering of its source, not only like it
SAME = 0.99
#: images with more pixels are not decoded (memory stays bounded; a radiograph is ~10^7)
MAX_PIXELS = 64_000_000
#: verdicts :func:`judge` gives
VERDICTS = ("correct", "resembles", "inverted", "unmatched")


def _pillow() -> Any:
    # lazy: only importers that meet an inline image, and the pixel view, decode pixels
    from PIL import Image

    return Image


def grid_of_array(pixels: Any) -> bytes:
    """The grid of an 8-bit greyscale array (rows x columns)."""
    import numpy as np  # lazy: numpy is loaded only where pixels are judged

    image = _pillow().fromarray(np.ascontiguousarray(pixels, dtype=np.uint8), mode="L")
    return image.resize((GRID, GRID), resample=_pillow().Resampling.BOX).tobytes()


def grid_of_bytes(data: bytes) -> bytes | None:
    """The grid of PNG/JPEG (any format Pillow reads) ``data``; None when it is not an image or
    has more than :data:`MAX_PIXELS` pixels (the header is read first: nothing is decoded)."""
    image_mod = _pillow()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", image_mod.DecompressionBombWarning)  # MAX_PIXELS rules
            with image_mod.open(io.BytesIO(data)) as image:
                if image.width * image.height > MAX_PIXELS:
                    return None
                image.draft("L", (GRID * 4, GRID * 4))  # JPEG: decode at a reduced scale, much faster
                grey = image.convert("L")
                return grey.resize((GRID, GRID), resample=image_mod.Resampling.BOX).tobytes()
    except (OSError, ValueError, SyntaxError, image_mod.DecompressionBombError):
        return None


def grid_hex(grid: bytes) -> str:
    return grid.hex()


def grid_from_hex(text: str) -> bytes | None:
    """A grid as the graph writes it; None when the literal is not one."""
    try:
        grid = bytes.fromhex(text)
    except ValueError:
        return None
    return grid if len(grid) == GRID * GRID else None


def correlation(a: bytes, b: bytes) -> float:
    """Pearson correlation of two grids (0.0 when either is flat: nothing to compare)."""
    import numpy as np  # lazy: see grid_of_array

    x = np.frombuffer(a, dtype=np.uint8).astype(np.float64)
    y = np.frombuffer(b, dtype=np.uint8).astype(np.float64)
    x -= x.mean()
    y -= y.mean()
    norm = float(np.sqrt((x * x).sum() * (y * y).sum()))
    return float((x * y).sum() / norm) if norm > 0 else 0.0


def judge(sent: bytes, correct: bytes) -> tuple[str, float]:
    """(verdict, r) of a sent grid against the grid of its source's correct render."""
    r = correlation(sent, correct)
    if r >= SAME:
        return "correct", r
    if r >= MATCH:
        return "resembles", r
    if r <= -MATCH:
        return "inverted", r
    return "unmatched", r
