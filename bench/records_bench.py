"""Declared records (``[[ingest.records]]``, issue 16): how fast and in how much memory a
harness's JSON Lines file is read by declaration, against the native ``calls`` importer reading
the same calls as canonical records, in the same run.

    .venv/bin/python bench/records_bench.py                       # 10^5 records
    .venv/bin/python bench/records_bench.py --sizes 100000,400000

Each (importer, size) runs in its own child process: a real ``ingest`` of the one file into an
on-disk store (as the CLI does), wall time and the child's peak RSS, then the importer alone
writing into a null triple writer (its own speed), and separately its peak Python heap by
tracemalloc at two sizes (streaming: the file is never held; what grows is the per-call-id
occurrence count both importers keep, to number a call's retries).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONTRACT = """[project]
name = "bench"
base_iri = "https://example.org/bench/"
"""
DECLARATION = """
[[ingest.records]]
glob = "samples.jsonl"
[ingest.records.fields]
call_id = "{task}--{doc_id}--{filter}"
status = { path = "finish", map = { stop = "ok", length = "length" } }
requested_model = "model"
prompt.user = "arguments.gen_args_0.arg_0"
output_text = "resps[0][0]"
[ingest.records.constants]
prompt_source = "request"
"""


def write(root: Path, importer: str, n: int) -> str:
    """The bundle: ``n`` samples as a harness writes them (declared) or as canonical records."""
    root.mkdir(parents=True)
    rel = "samples.jsonl" if importer == "records" else "calls.jsonl"
    (root / "provgraph.toml").write_text(CONTRACT + (DECLARATION if importer == "records" else ""))
    with (root / rel).open("w", encoding="utf-8") as fh:
        for i in range(n):
            prompt = f"Question: what is {i} + {i}?\nAnswer:"
            answer = f" {2 * i}"
            if importer == "records":
                row = {
                    "task": "arith",
                    "doc_id": i,
                    "filter": "none",
                    "model": "gpt-4o-2024-08-06",
                    "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["\n"]}}},
                    "resps": [[answer]],
                    "finish": "stop",
                }
            else:
                row = {
                    "call_id": f"arith--{i}--none",
                    "status": "ok",
                    "requested_model": "gpt-4o-2024-08-06",
                    "prompt": {"system": None, "user": prompt},
                    "prompt_source": "request",
                    "output_sha256": "0" * 64,
                    "output_bytes": len(answer),
                }
            fh.write(json.dumps(row) + "\n")
    return rel


def child(root: Path, rel: str, mode: str) -> dict:
    """In a child process: the ingest, or the importer alone into a null writer."""
    sys.path.insert(0, str(REPO))
    from provgraph.bundle.layout import Bundle
    from provgraph.ingest.base import ImportContext, Progress
    from provgraph.ingest.planner import choose_importer
    from provgraph.ingest.run import ingest_paths
    from provgraph.ingest.sources import describe_source
    from provgraph.rdf.terms import TripleWriter
    from provgraph.store import open_store

    bundle = Bundle.open(root)
    path = root / rel
    t0 = time.perf_counter()
    if mode == "ingest":
        store = open_store(root / ".provgraph" / "store")
        results, problems = ingest_paths(store, bundle, [path])
        (result,) = [r for r in results if r.rel == rel]
        assert not problems and not result.problems, (problems, result.problems[:3])
        records, triples = result.records, result.triples
        heap = None
    else:
        importer = choose_importer(path, bundle)
        source = describe_source(bundle, path, Progress(), None)
        with open(os.devnull, "w", encoding="utf-8") as sink:
            writer = TripleWriter(sink)
            ctx = ImportContext(bundle, source, importer, writer, Progress())
            if mode == "heap":  # tracemalloc slows Python several times: timed separately
                tracemalloc.start()
            t0 = time.perf_counter()
            importer.ingest(source, ctx)
            heap = tracemalloc.get_traced_memory()[1] if mode == "heap" else None
            tracemalloc.stop()
        assert not ctx.problems, ctx.problems[:3]
        records, triples = ctx.records, writer.count
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB (Linux)
    return {
        "records": records,
        "triples": triples,
        "seconds": seconds,
        "rss_mib": rss,
        "heap_mib": heap and heap / 2**20,
    }


def run(importer: str, n: int, mode: str, tmp: Path) -> dict:
    root = tmp / f"{importer}-{n}-{mode}"
    rel = write(root, importer, n)
    code = (
        f"import json, sys; sys.path.insert(0, {str(REPO / 'bench')!r}); import records_bench as b; "
        f"from pathlib import Path; print(json.dumps(b.child(Path({str(root)!r}), {rel!r}, {mode!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000", help="records, for the ingest and importer runs")
    parser.add_argument("--heap-sizes", default="20000,80000", help="records, for the heap runs")
    args = parser.parse_args()
    runs = [(int(n), m) for n in args.sizes.split(",") for m in ("ingest", "importer")]
    runs += [(int(n), "heap") for n in args.heap_sizes.split(",") if n]
    with tempfile.TemporaryDirectory(prefix="provgraph-records-bench-") as tmp:
        for n, mode in runs:
            rows = {imp: run(imp, n, mode, Path(tmp)) for imp in ("calls", "records")}
            for imp, r in rows.items():
                rate = r["records"] / r["seconds"]
                heap = f", heap peak {r['heap_mib']:.1f} MiB" if r["heap_mib"] is not None else ""
                print(
                    f"{n:>8} {mode:8} {imp:8} {r['records']:>8} records {r['triples']:>9} triples "
                    f"{r['seconds']:7.2f} s  {rate:>9,.0f} records/s  RSS {r['rss_mib']:.0f} MiB{heap}"
                )
            ratio = (rows["records"]["records"] / rows["records"]["seconds"]) / (
                rows["calls"]["records"] / rows["calls"]["seconds"]
            )
            print(f"{n:>8} {mode:8} records/s of declared records x canonical calls: {ratio:.2f}")


if __name__ == "__main__":
    main()
