"""Dropping a large graph on Virtuoso: one transaction against row-by-row autocommit.

Starts a private Virtuoso as the tests do (``tests/virtuoso_server.py``), loads a graph of N
quads by Graph Store PUT, and drops it with each form in turn (``--rounds`` times, in the order
given), while a small query is sent every 0.2 s beside the drop: the drop's time, and the longest
the small query waited. The row-by-row form is what the ``virtuoso`` preset's ``drop_update``
sends (bench/README.md, seventeenth run).

    .venv/bin/python bench/virtuoso_drop.py --quads 1600000 --rounds 2
    .venv/bin/python bench/virtuoso_drop.py --quads 1600000 --rounds 2 --reverse
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from virtuoso_server import INSTALL, VirtuosoServer, virtuoso_binaries

from provgraph.rdf.vocab import PG_NS
from provgraph.store import catalog, open_store

FORMS = {
    "transaction": "DROP SILENT GRAPH <{graph}>",
    "row-by-row": "DEFINE sql:log-enable 3 DROP SILENT GRAPH <{graph}>",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quads", type=int, default=1_600_000, help="quads in the dropped graph")
    parser.add_argument("--rounds", type=int, default=2, help="drops of each form")
    parser.add_argument("--reverse", action="store_true", help="row-by-row first in each round")
    args = parser.parse_args()
    if virtuoso_binaries() is None:
        sys.exit(f"Virtuoso is not installed: {INSTALL}")
    order = list(FORMS)[::-1] if args.reverse else list(FORMS)
    with tempfile.TemporaryDirectory(prefix="provgraph-virtuoso-drop-") as tmp:
        nt = Path(tmp) / "graph.nt"
        with nt.open("w") as fh:
            for i in range(args.quads):
                fh.write(f'<https://example.org/p/call/c{i}> <{PG_NS}callId> "c{i}" .\n')
        srv = VirtuosoServer(Path(tmp) / "db").start()
        try:
            store = open_store(srv.url + "#timeout=3600")
            for _ in range(args.rounds):
                for name in order:
                    graph = catalog.new_graph_iri()
                    t0 = time.perf_counter()
                    store.bulk_load(nt, graph)
                    load = time.perf_counter() - t0
                    waits: list[float] = []
                    stop = threading.Event()

                    def reader(waits: list[float] = waits, stop: threading.Event = stop) -> None:
                        while not stop.is_set():
                            t = time.perf_counter()
                            store.select("SELECT (1 AS ?x) WHERE {}")
                            waits.append(time.perf_counter() - t)
                            time.sleep(0.2)

                    beside = threading.Thread(target=reader)
                    beside.start()
                    t0 = time.perf_counter()
                    store.update(FORMS[name].format(graph=graph))
                    drop = time.perf_counter() - t0
                    stop.set()
                    beside.join()
                    left = store.quad_count(graph)
                    rss = subprocess.run(
                        ["ps", "-o", "rss=", "-p", str(srv.proc.pid)], capture_output=True, text=True
                    ).stdout.strip()
                    print(
                        f"{name:12s} load {load:6.1f} s  drop {drop:6.1f} s  quads left {left}  "
                        f"reader waited at most {max(waits, default=0):.2f} s  server {int(rss) // 1024} MiB",
                        flush=True,
                    )
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
