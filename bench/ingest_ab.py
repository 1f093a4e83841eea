"""The ingest before and after a change, beside the bare bulk load of the same triples, interleaved.

    .venv/bin/python bench/ingest_ab.py --bundle BUNDLE --baseline DIR [--rounds 3]

``BUNDLE`` is a generated scale bundle (``bench/scale.py`` makes them under ``--out``); ``DIR``
holds another provgraph package (``git archive <commit> provgraph | tar -x -C DIR``). Each round
runs, in turn and each in its own child process (``scale.py step ingest`` and ``scale.py
bulkload``): the ingest with the baseline package, the ingest with this one, and the bare bulk
load (the first ingest's import graphs dumped as N-Triples once, loaded one call per graph into
a fresh store). Every ingest starts from an empty store and no hash cache. The machine is
shared, so only runs next to each other compare: one JSON line per run, then the medians and
their ratios to the bare load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale import dump_graphs, spawn  # noqa: E402


def _run(argv: list[str], package: Path | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(package)} if package is not None else None  # found first
    lines, _, peak, status = spawn(argv, env=env)
    if status or not lines:
        sys.exit(f"{' '.join(argv[:2])} failed (status {status})")
    last = lines[-1]
    return {"seconds": round(last["seconds"], 1), "triples": last["triples"], "peak_mib": round(peak)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, required=True, help="a bundle bench/scale.py generated")
    ap.add_argument("--baseline", type=Path, required=True, help="a folder holding another provgraph package")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scratch", type=Path, help="where the stores go (default: a temporary folder)")
    args = ap.parse_args()
    if not (args.baseline / "provgraph" / "__init__.py").is_file():
        sys.exit(f"{args.baseline}: no provgraph package in it")

    runs: dict[str, list[dict]] = {"baseline": [], "this": [], "bare": []}
    with tempfile.TemporaryDirectory(prefix="ingest-ab-", dir=args.scratch) as tmp:
        store, nts, bare = Path(tmp) / "store", Path(tmp) / "nt", Path(tmp) / "bare"
        for r in range(1, args.rounds + 1):
            for variant in runs:
                shutil.rmtree(store, ignore_errors=True)
                shutil.rmtree(bare, ignore_errors=True)
                shutil.rmtree(args.bundle / ".provgraph", ignore_errors=True)  # no hash cache
                if variant == "bare":
                    fig = _run(["bulkload", "--nt-dir", str(nts), "--target", str(bare)], None)
                else:
                    package = args.baseline if variant == "baseline" else None
                    argv = ["step", "ingest", "--bundle", str(args.bundle), "--store", str(store)]
                    fig = _run([*argv, "--info", "{}"], package)
                    if not nts.exists():  # the bare load's input: the imports as the first ingest wrote them
                        dump_graphs(store, nts)
                fig.update(round=r, variant=variant, load=[round(x, 2) for x in os.getloadavg()])
                runs[variant].append(fig)
                print(json.dumps(fig), flush=True)
    medians = {v: statistics.median(f["seconds"] for f in figs) for v, figs in runs.items()}
    bare = medians["bare"]
    print(
        json.dumps(
            {
                "medians": medians,
                "ratio_to_bare": {v: round(bare / m, 2) for v, m in medians.items() if v != "bare"},
                "this_to_baseline": round(medians["this"] / medians["baseline"], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
