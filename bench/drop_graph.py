"""Dropping a store's largest named graph: pyoxigraph's ``remove_graph`` against provgraph's
``drop_graph``, each in a fresh process on a fresh copy of the store, interleaved.

    .venv/bin/python bench/drop_graph.py --store STORE [--rounds 2] [--copy /tmp/drop-copy]
    .venv/bin/python bench/drop_graph.py --store STORE --in-place --ways drop_graph   # 10^6: 12 GB

A check after a changed import drops every view it rebuilt, and a re-ingest of a changed source
drops the graph it replaced; the largest graph of a checked store is the per-call view. One JSON
line per run: the graph's quads, seconds, and the peak resident memory above what the process
held once the store was open (``VmHWM`` after resetting it). ``--in-place`` drops the graph of
``STORE`` itself, one way (a 10^6-call store is too large to copy per run, and its view
too large for ``remove_graph`` on 24 GiB).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import pyoxigraph as ox
from provgraph.store.oxigraph import OxigraphStore

def status(key):
    return next(int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith(key))

store = OxigraphStore(Path(sys.argv[1]))
(row,) = store._ox.query(
    "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY DESC(?n) LIMIT 1"
)
graph, quads = row["g"], int(row["n"].value)
open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here
rest = status("VmRSS")
t = time.perf_counter()
if sys.argv[2] == "remove_graph":
    store._ox.remove_graph(graph)
else:
    store.drop_graph(graph.value)
store.flush()
seconds = time.perf_counter() - t
assert not store._ox.contains_named_graph(graph)
print(json.dumps({"way": sys.argv[2], "quads": quads, "seconds": round(seconds, 1),
                  "us_per_quad": round(seconds / quads * 1e6, 1), "peak_above_mib": status("VmHWM") - rest}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a checked store (copied for each run)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--copy", type=Path, default=Path("/tmp/provgraph-drop-copy"), help="where the copy goes")
    ap.add_argument("--in-place", action="store_true", help="drop STORE's own largest graph, one run")
    ap.add_argument("--ways", default="remove_graph,drop_graph", help="comma-separated, in this order")
    args = ap.parse_args()
    ways = args.ways.split(",")
    if args.in_place and len(ways) != 1:
        ap.error("--in-place drops the store's largest graph once: give one of --ways")
    for _ in range(1 if args.in_place else args.rounds):
        for way in ways:
            target = args.store if args.in_place else args.copy
            if not args.in_place:
                shutil.rmtree(args.copy, ignore_errors=True)
                shutil.copytree(args.store, args.copy)
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(target), way, str(HERE.parent)],
                capture_output=True,
                text=True,
                check=True,
            )
            print(done.stdout.strip(), flush=True)
    if not args.in_place:
        shutil.rmtree(args.copy, ignore_errors=True)


if __name__ == "__main__":
    main()
