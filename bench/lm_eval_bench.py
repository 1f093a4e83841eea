"""Importing lm-evaluation-harness samples end to end (issue 16), against same-run baselines.

Writes one run folder in the harness's shapes (``tests/lm_eval_writer.py``: a multiple-choice
task and a generation task with two filters, ``--samples`` sample lines in all), then times:

- ``json.loads``: a bare ``json.loads`` loop over the same samples files (the floor of any
  reader of these files in Python);
- ``bulk load``: a bare pyoxigraph bulk load of exactly the triples the ingest wrote (dumped
  from its graph), into a fresh store of the same kind;
- ``ingest``: ``ingest_paths`` on the bundle (detection, hashing, the importer, the loader
  thread, the catalog switch), as ``provgraph ingest`` runs it.

    .venv/bin/python bench/lm_eval_bench.py --samples 100000 [--disk]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the writer of the harness's shapes

from lm_eval_writer import Task, write_run  # noqa: E402

from provgraph.bundle.layout import Bundle  # noqa: E402
from provgraph.ingest.run import ingest_paths  # noqa: E402
from provgraph.ingest.testing import write_bundle  # noqa: E402
from provgraph.store import open_store  # noqa: E402

CONTRACT = """[project]
name = "lm-eval bench"
base_iri = "https://example.org/bench/"

[analysis]
harness = "lm-eval"
"""


def bundle(tmp: Path, samples: int) -> Path:
    root = write_bundle(tmp / "bundle", {}, CONTRACT)
    mc = samples // 2
    gen = (samples - mc) // 2  # two filters: two sample lines per document
    write_run(
        root / "output",
        [
            Task("arc_easy", "multiple_choice", mc),
            Task("gsm8k", "generate_until", gen, filters=("strict-match", "flexible-extract")),
        ],
    )
    return root


def bare_json(root: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = 0
    for path in sorted(root.rglob("samples_*.jsonl")):
        with path.open("rb") as fh:
            for line in fh:
                json.loads(line)
                n += 1
    return time.perf_counter() - t0, n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--disk", action="store_true", help="on-disk stores (default: in memory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pg-lmeval-bench-") as tmp:
        root = bundle(Path(tmp), args.samples)
        json_s, lines = bare_json(root)
        store = open_store(Path(tmp) / "store" if args.disk else None)
        t0 = time.perf_counter()
        results, problems = ingest_paths(store, Bundle.open(root), [root])
        ingest_s = time.perf_counter() - t0
        (result,) = [r for r in results if r.importer == "lm-eval"]
        assert not problems and not result.problems, (problems, result.problems[:3])
        buf = io.BytesIO()
        store.dump(buf, ox.RdfFormat.N_QUADS)
        quads = buf.getvalue()
        target = ox.Store(str(Path(tmp) / "bare")) if args.disk else ox.Store()
        t0 = time.perf_counter()
        target.bulk_load(quads, ox.RdfFormat.N_QUADS)
        bulk_s = time.perf_counter() - t0
        triples = len(target)
        out = {
            "store": "disk" if args.disk else "memory",
            "sample_lines": lines,
            "triples": triples,
            "triples_per_sample": round(triples / lines, 1),
            "json_loads_s": round(json_s, 2),
            "bulk_load_s": round(bulk_s, 2),
            "ingest_s": round(ingest_s, 2),
            "ingest_records_per_s": round(lines / ingest_s),
            "json_loads_lines_per_s": round(lines / json_s),
            "bulk_load_samples_per_s": round(lines / bulk_s),
            "ingest_x_json_loads": round(json_s / ingest_s, 3),
            "ingest_x_bulk_load": round(bulk_s / ingest_s, 3),
        }
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
