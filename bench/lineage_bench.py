"""Lineage of a published number on the radiology pilot replica (examples/cxr_pilot).

    .venv/bin/python bench/lineage_bench.py [--rounds 3]

Generates the clean twin, ingests it and records a check, then traces the manuscript's
Cochran Q claim: about 10,000 nodes (cells, candidate and reference labels, extractions,
reports, calls). Measured in the same run: the whole trace, and the per-batch edge query in
two forms over the traced nodes: properties as a ``FILTER(?p IN (...))`` (what lineage does)
and as a second ``VALUES ?p`` block (what it did before; Oxigraph joins the two VALUES
blocks as a cross product, one index lookup per node and property). The baseline is the
VALUES form.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def generator():
    spec = importlib.util.spec_from_file_location(
        "cxr_generate", REPO / "examples" / "cxr_pilot" / "generate.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    from provgraph.cli import main as cli
    from provgraph.lineage.model import lineage_properties
    from provgraph.lineage.resolve import resolve
    from provgraph.lineage.trace import trace
    from provgraph.store import open_store

    with tempfile.TemporaryDirectory() as tmp:
        root = generator().generate(Path(tmp) / "clean", "clean")
        for command in (["ingest"], ["check", "--format", "json", "-o", str(Path(tmp) / "c.json")]):
            try:
                cli(["-q", "-C", str(root), *command])
            except SystemExit as exc:
                assert exc.code in (0, None), exc.code
        store = open_store(root / ".provgraph" / "store")
        (iri,) = [i for i in resolve(store, "manuscript/main.tex:3") if "/claim/" in i]
        traces = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            result = trace(store, iri)
            traces.append(time.perf_counter() - start)
        nodes = list(result.nodes)
        props = lineage_properties(store)
        forms = {
            "VALUES ?p (baseline)": lambda values: (
                f"SELECT DISTINCT ?s ?p ?o WHERE {{ VALUES ?s {{ {values} }} VALUES ?p {{ "
                + " ".join(f"<{p}>" for p in props)
                + " } ?s ?p ?o . FILTER(isIRI(?o)) }"
            ),
            "FILTER(?p IN ...)": lambda values: (
                f"SELECT DISTINCT ?s ?p ?o WHERE {{ VALUES ?s {{ {values} }} ?s ?p ?o . "
                f"FILTER(isIRI(?o) && ?p IN ({', '.join(f'<{p}>' for p in props)})) }}"
            ),
        }
        timings: dict[str, list[float]] = {name: [] for name in forms}
        for _ in range(args.rounds):
            for name, form in forms.items():
                start = time.perf_counter()
                rows = 0
                for i in range(0, len(nodes), 400):
                    values = " ".join(f"<{n}>" for n in nodes[i : i + 400])
                    rows += len(store.select(form(values)))
                timings[name].append(time.perf_counter() - start)
        store.close()
    print(
        f"lineage of the manuscript's Q: {len(nodes)} nodes, "
        f"status {result.status}, truncated {result.truncated}"
    )
    print(f"whole trace: median {statistics.median(traces):.2f} s over {args.rounds} rounds")
    base = statistics.median(timings["VALUES ?p (baseline)"])
    print(f"edge queries over {len(nodes)} nodes in batches of 400 ({rows} edges):")
    for name, values in timings.items():
        med = statistics.median(values)
        print(f"  {name:22s} median {med:6.2f} s   {base / med:5.1f}x the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
