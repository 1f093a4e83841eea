"""The experiment behind ``provgraph.evidence.pixels.MATCH`` and ``SAME``: how a sent image's grid correlates
with its source's correct render, under the changes a real pipeline makes, against another
patient's radiograph and against images that are not radiographs.

Synthetic chest-like radiographs (``tests/calibration/shapes/_cal_pixels.chest``: body, lung
fields, mediastinum and heart, spine, ribs, clavicles, diaphragm domes, a side marker, quantum
noise; anatomy varied per seed), written as 12-bit DX DICOMs by pydicom in both photometric
interpretations and rendered by the reference renderer. Each render is then sent as a pipeline would send it:
as is (PNG), resized (down to 224..1024 px on the long side, aspect kept or squashed), JPEG at
quality 50..95, windowed differently (a narrower window) and both combined, in the right
polarity and inverted. For every variant the grid correlation r with the correct render of its
own source and with those of other patients is recorded, and so is r between each source and
unrelated images (uniform noise; a smooth diagonal gradient; a flat grey frame).

    python bench/pixel_thresholds.py [--patients 40]

prints the distributions and the margins around ``MATCH`` and ``SAME``; ``tests/test_pixelcheck.py`` runs a
small version of it, so the threshold cannot drift from what the experiment shows.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "calibration" / "shapes"))

from _cal_pixels import chest, dicom, encode

from provgraph.capture.renderer import render_dataset
from provgraph.evidence.pixels import MATCH, SAME, correlation, grid_of_array, grid_of_bytes

#: (name, size (w, h) or None, JPEG quality or None, narrower window?)
VARIANTS = [
    ("png", None, None, False),
    ("resized 224 squashed", (224, 224), None, False),
    ("resized 1024", (896, 1024), None, False),
    ("jpeg q95", None, 95, False),
    ("jpeg q50", None, 50, False),
    ("resized 336 + jpeg q50", (294, 336), 50, False),
    ("resized 128 + jpeg q30", (112, 128), 30, False),
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
        f"{max(r.other_max for r in results):.4f}"
    )
    declared = [r.own for r in results if r.polarity == "right" and not r.variant.startswith("window")]
    other = max(r.other_max for r in results if not r.variant.startswith("window"))
    lines.append(
        f"SAME = {SAME}: declared rendering, own r >= {min(declared):.4f} (margin "
        f"{min(declared) - SAME:+.4f}); another patient's chest r <= {other:.4f} (margin {SAME - other:+.4f})"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patients", type=int, default=40)
    args = parser.parse_args()
    print(summary(*run(args.patients)))


if __name__ == "__main__":
    main()
