"""The experiment behind ``provgraph.evidence.pixels.SAME``: how a sent image's grid correlates
with its source's correct render, under the changes a real pipeline makes, against another
patient's radiograph.

Synthetic chest-like radiographs (:func:`chest`: body, lung fields, mediastinum and heart,
spine, ribs, clavicles, diaphragm domes, a side marker, quantum noise; anatomy varied per
seed), written as 12-bit DX DICOMs by pydicom in both photometric interpretations and
rendered by the reference renderer. Each render is then sent as a pipeline would send it:
as is (PNG), resized (down to 224..1024 px on the long side, aspect kept or squashed), JPEG at
quality 50..95, windowed differently (a narrower window) and both combined, in the right
polarity and inverted. For every variant the grid correlation r with the correct render of its
own source and with those of other patients is recorded, and so is r between each source and
unrelated images (uniform noise; a smooth diagonal gradient; a flat grey frame).

    python bench/pixel_thresholds.py [--patients 40]

prints the distributions and the margins around ``MATCH``; ``tests/test_pixelcheck.py`` runs a
small version of it, so the threshold cannot drift from what the experiment shows.
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provgraph.capture.renderer import render_dataset
from provgraph.evidence.pixels import MATCH, correlation, grid_of_array, grid_of_bytes


def chest(seed: int, rows: int = 512, columns: int = 448) -> np.ndarray:
    """A 12-bit 'attenuation' image of a PA chest (high = more attenuation = white on a
    MONOCHROME2 display): an ellipse of soft tissue, two darker lung fields, a bright
    mediastinum and heart, a spine, rib arcs, clavicles, diaphragm domes and a marker."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:rows, 0:columns].astype(np.float64)
    yn, xn = y / rows, x / columns
    cx = 0.5 + rng.uniform(-0.04, 0.04)
    body = ((xn - cx) / rng.uniform(0.42, 0.48)) ** 2 + ((yn - 0.55) / 0.6) ** 2 < 1
    img = np.where(body, 1700.0, 250.0)
    lung_w, lung_h, top = rng.uniform(0.14, 0.19), rng.uniform(0.28, 0.36), rng.uniform(0.40, 0.47)
    for side in (-1, 1):
        lx = cx + side * rng.uniform(0.17, 0.21)
        lung = ((xn - lx) / lung_w) ** 2 + ((yn - top) / lung_h) ** 2 < 1
        img = np.where(lung & body, img - rng.uniform(900, 1200), img)
    heart = ((xn - cx - 0.05) / rng.uniform(0.11, 0.16)) ** 2 + ((yn - 0.62) / 0.13) ** 2 < 1
    img = np.where(heart, img + 700, img)
    img += np.where(np.abs(xn - cx) < 0.035, 900.0, 0.0) * (yn > 0.08)  # spine and mediastinum
    phase = rng.uniform(0, 2 * np.pi)
    ribs = (np.sin((yn + 0.08 * np.abs(xn - cx)) * 2 * np.pi * rng.uniform(9, 11) + phase) > 0.75) & body
    img += ribs * 260.0
    for side in (-1, 1):  # clavicles
        clav = np.abs(yn - 0.16 - 0.12 * np.abs(xn - cx)) < 0.012
        img += (clav & (side * (xn - cx) > 0.03) & (side * (xn - cx) < 0.3)) * 500.0
    dome = yn > 0.78 + 0.05 * np.cos((xn - cx) * 9)
    img = np.where(dome & body, img + 600, img)
    mx, my = int(columns * 0.08), int(rows * 0.08)
    img[my : my + 18, mx : mx + 12] = 4000.0  # lead side marker
    img += rng.normal(0, 60, img.shape)
    return np.clip(img, 0, 4095).astype(np.uint16)


def dicom(values: np.ndarray, photometric: str):  # -> pydicom Dataset
    """A DX dataset of ``values`` (stored as film for MONOCHROME1: air is the high sample)."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian

    stored = 4095 - values if photometric == "MONOCHROME1" else values
    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.Rows, ds.Columns = stored.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.WindowCenter, ds.WindowWidth = 2048, 4096
    ds.PixelData = stored.astype(np.uint16).tobytes()
    return ds


def encode(pixels: np.ndarray, size: tuple[int, int] | None, quality: int | None) -> bytes:
    """``pixels`` as a pipeline sends them: resized to ``size`` (w, h), PNG or JPEG."""
    from PIL import Image

    image = Image.fromarray(pixels, mode="L")
    if size is not None:
        image = image.resize(size, resample=Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if quality is None:
        image.save(out, format="PNG")
    else:
        image.convert("RGB").save(out, format="JPEG", quality=quality)  # RGB: what VLM pipelines send
    return out.getvalue()


#: (name, size (w, h) or None, JPEG quality or None, narrower window?)
VARIANTS = [
    ("png", None, None, False),
    ("resized 224 squashed", (224, 224), None, False),
    ("resized 1024", (896, 1024), None, False),
    ("jpeg q95", None, 95, False),
    ("jpeg q50", None, 50, False),
    ("resized 336 + jpeg q50", (294, 336), 50, False),
    ("window 1400/2000", None, None, True),
    ("window + resized 224 + jpeg q70", (224, 224), 70, True),
]


@dataclass
class Result:
    variant: str
    polarity: str  # "right" or "inverted"
    own: float  # r with its own source's correct render
    other_max: float  # max |r| with another patient's correct render


def unrelated(rows: int = 512, columns: int = 448) -> list[np.ndarray]:
    """Images that are not radiographs: noise, a diagonal gradient, a flat frame."""
    rng = np.random.default_rng(12345)
    y, x = np.mgrid[0:rows, 0:columns]
    return [
        rng.integers(0, 256, (rows, columns), dtype=np.uint8),
        ((x + y) * 255 // (rows + columns)).astype(np.uint8),
        np.full((rows, columns), 128, dtype=np.uint8),
    ]


def run(patients: int) -> tuple[list[Result], list[float]]:
    """Every variant of every patient, and |r| of every source against every unrelated image."""
    renders, grids = [], []
    for seed in range(patients):
        photometric = "MONOCHROME1" if seed % 2 else "MONOCHROME2"
        ds = dicom(chest(seed), photometric)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            renders.append((ds, render_dataset(ds, f"chest-{seed}").pixels))
        grids.append(grid_of_array(renders[-1][1]))
    results = []
    for i, (ds, pixels) in enumerate(renders):
        for name, size, quality, narrow in VARIANTS:
            shown = render_dataset(ds, "v", window=(1400, 2000)).pixels if narrow else pixels
            for polarity, sent in (("right", shown), ("inverted", 255 - shown)):
                grid = grid_of_bytes(encode(sent, size, quality))
                assert grid is not None
                others = [abs(correlation(grid, g)) for j, g in enumerate(grids) if j != i]
                results.append(Result(name, polarity, correlation(grid, grids[i]), max(others)))
    foreign = [grid_of_bytes(encode(image, None, 80)) for image in unrelated()]
    loose = [abs(correlation(f, g)) for f in foreign if f is not None for g in grids]
    return results, loose


def summary(results: list[Result], loose: list[float]) -> str:
    lines = ["| variant | own r, right polarity (min) | own r, inverted (max) | other patient max abs r |"]
    lines.append("|---|---|---|---|")
    for name, *_ in VARIANTS:
        right = [r.own for r in results if r.variant == name and r.polarity == "right"]
        inv = [r.own for r in results if r.variant == name and r.polarity == "inverted"]
        other = [r.other_max for r in results if r.variant == name]
        lines.append(f"| {name} | {min(right):.4f} | {max(inv):.4f} | {max(other):.4f} |")
    own = min(abs(r.own) for r in results)
    wrong_sign = sum(1 for r in results if (r.own > 0) != (r.polarity == "right"))
    lines.append(
        f"\nMATCH = {MATCH}: own source |r| >= {own:.4f} (margin {own - MATCH:+.4f}), polarity sign "
        f"wrong in {wrong_sign} of {len(results)}; unrelated images |r| <= {max(loose):.4f} "
        f"(margin {MATCH - max(loose):+.4f}); another patient's chest |r| up to "
        f"{max(r.other_max for r in results):.4f} (a grid cannot tell patients apart)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patients", type=int, default=40)
    args = parser.parse_args()
    print(summary(*run(args.patients)))


if __name__ == "__main__":
    main()
