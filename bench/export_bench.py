"""Export time and peak memory per format on a generated bundle, for two source trees.

Usage: ``.venv/bin/python bench/export_bench.py --calls 10000 --baseline /path/to/other/tree``

Generates the proportional bundle of ``bench/scale.py`` (:func:`bundles.scale_bundle`, without
pixels), ingests it once, then runs ``provgraph export --format F -o FILE`` in a child process
for every format, once with this tree and once with the baseline tree (e.g. ``main`` before a
change) on the same store in the same session; each child's peak resident memory is read from
``wait4``'s ``ru_maxrss``. Formats the baseline does not know are skipped for it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FORMATS = ("turtle", "nt", "nquads", "trig", "jsonld", "provn", "provjson", "provxml")


def run(tree: Path, argv: list[str]) -> tuple[int, float, float]:
    """Exit code, seconds and peak MiB of ``provgraph ARGV`` run from ``tree``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])),
    }
    t0 = time.perf_counter()
    # cwd=tree: `python -m` puts the working directory first on sys.path, before PYTHONPATH
    proc = subprocess.Popen(
        [sys.executable, "-m", "provgraph", *argv], env=env, cwd=tree, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.perf_counter() - t0, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--baseline", type=Path, required=True, help="the other source tree (e.g. main)")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "export")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--trees", default="baseline,this", help="which trees to run")
    args = ap.parse_args()
    from bundles import scale_bundle

    root = args.out / f"bundle-{args.calls}"
    if not (root / ".ingested").is_file():
        scale_bundle(root, args.calls, pixel=False, log=lambda m: print(m, flush=True))
        code, seconds, peak = run(HERE.parent, ["-C", str(root), "-q", "ingest"])
        assert code == 0, "ingest failed"
        (root / ".ingested").write_text(json.dumps({"seconds": seconds, "peak_mib": peak}))
    results = {}
    with open(os.devnull, "w") as devnull:
        known = subprocess.run(
            [sys.executable, "-m", "provgraph", "export", "--help"],
            env={**os.environ, "PYTHONPATH": str(args.baseline)},
            cwd=args.baseline,
            capture_output=True,
            text=True,
            stdin=devnull,
        ).stdout
    for fmt in args.formats.split(","):
        for name, tree in (("baseline", args.baseline), ("this", HERE.parent)):
            if name not in args.trees.split(",") or (name == "baseline" and fmt not in known):
                continue
            target = args.out / f"{name}.{fmt}"
            code, seconds, peak = run(tree, ["-C", str(root), "export", "--format", fmt, "-o", str(target)])
            size = target.stat().st_size if target.exists() else 0
            results[f"{name}:{fmt}"] = {
                "code": code,
                "seconds": round(seconds, 2),
                "peak_mib": round(peak),
                "bytes": size,
            }
            print(
                f"{name:8} {fmt:8} exit {code} {seconds:7.2f} s {peak:7.0f} MiB {size / 2**20:8.1f} MiB",
                flush=True,
            )
    (args.out / f"results-{args.trees.replace(',', '-')}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
