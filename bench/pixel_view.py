"""What judging pixels costs (issue 18): grids at import, the pixel view before the rules.

A benchmark of ``--studies`` chest-like DX DICOMs (512 x 448, 12 bits; ``_cal_pixels``) sent
inline by two conditions in one OpenAI batch (PNG, or resized JPEG with ``--jpeg``), with no
rendering record. Measured in the same run:

- reading every request line with ``prompt_from_messages(..., grids=True)`` (what the importer
  does) against ``grids=False`` (hashing only, the importer before issue 18);
- refreshing the pixel view (re-render every linked DICOM, judge every sent image) against a
  bare ``dcmread`` + ``pixel_array`` loop over the same files (decoding alone), and against the
  call evidence view refreshed on the same store.

    python bench/pixel_view.py [--studies 40] [--jpeg]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "calibration" / "shapes"))

import _cal_pixels as cp

from provgraph.evidence.identity import prompt_from_messages
from provgraph.ingest.testing import ingest_bundle
from provgraph.rules import callview, pixelview
from provgraph.store import catalog


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=40)
    parser.add_argument("--jpeg", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef-0123456789")
    photometrics = ("MONOCHROME2", "MONOCHROME1")
    studies = [(f"5{n:07d}", f"1{n:07d}", photometrics[n % 2]) for n in range(args.studies)]
    variant = "resized-jpeg" if args.jpeg else "correct"
    with tempfile.TemporaryDirectory(prefix="provgraph-pixelbench-") as tmp:
        root = Path(tmp) / "b"
        sent = dict.fromkeys(paths_of(studies), variant)
        paths = cp.write_benchmark(root, "openai", sent, size=(512, 448), studies=studies)
        lines = (root / "batches" / "batch_01_input.jsonl").read_text(encoding="utf-8").splitlines()
        bodies = [json.loads(line)["body"]["messages"] for line in lines]
        hashed = best(lambda: [prompt_from_messages(m) for m in bodies])
        gridded = best(lambda: [prompt_from_messages(m, grids=True) for m in bodies])
        store, results, _ = ingest_bundle(root)
        assert all(r.outcome == "imported" for r in results), [r.error for r in results if r.error]

        def decode() -> None:
            from pydicom import dcmread

            for rel in paths.values():
                dcmread(root / rel).pixel_array  # noqa: B018

        def view(module) -> None:
            catalog.remove(store, module.SLOT)
            module.refresh(store)

        bare = best(decode)
        calls = best(lambda: view(callview))
        pixels = best(lambda: view(pixelview))
        verdicts = {v.verdict for v in pixelview.judge_all(store)}
        assert verdicts == {"correct"}, verdicts
    n = len(bodies)
    print(f"{args.studies} DICOMs, {n} requests ({variant}), best of 3 on this machine:")
    print(f"| reading requests, hashes only (baseline) | {hashed:.3f} s | 1.00x |")
    per_image = (gridded - hashed) / n * 1e3
    print(f"| requests with grids | {gridded:.3f} s | {gridded / hashed:.2f}x ({per_image:.2f} ms/image) |")
    print(f"| bare dcmread + pixel_array (baseline) | {bare:.3f} s | 1.00x |")
    print(f"| call evidence view refresh | {calls:.3f} s | {calls / bare:.2f}x |")
    per_dicom = pixels / args.studies * 1e3
    print(f"| pixel view refresh | {pixels:.3f} s | {pixels / bare:.2f}x ({per_dicom:.1f} ms/DICOM) |")


def paths_of(studies: list[tuple[str, str, str]]) -> list[str]:
    return [s for s, _, _ in studies]


if __name__ == "__main__":
    main()
