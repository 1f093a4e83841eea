"""Binding a text's numbers to the recomputed statistics, at 10,000 cells (issue 15).

    .venv/bin/python bench/claims_bind.py              # 2,500 conditions x 4 metrics
    .venv/bin/python bench/claims_bind.py --rows 250   # a tenth

One generated LLM-reviewer bundle in the Replication Trap harness's format (the shape of
examples/llm_review: ``results/<key>_reviews.json`` per condition, the answer key): ``--rows``
conditions, each with 4 reviewed scripts (2 flawed, 2 controls), and a README whose results
table has one row per condition and 4 metric columns (detection rate, FPR, precision, F1),
so 4 x ``--rows`` cells. Measured on the embedded on-disk store, in this process:

  refresh    ``materialize.refresh`` of the same bundle without the README (baseline: reviews
             read, every statistic recomputed, the statistics graph written)
  bind       the binding step alone on the bundle with the README (``bind.bind_texts``: claims
             read from the store, rows matched to conditions, values read, statistics matched)
  with text  ``materialize.refresh`` with the README (binding and its triples included)

The machine's load average is printed before and after: other processes share the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = {"script_01.py": True, "script_02.py": False, "script_03.py": True, "script_04.py": False}


def write_bundle(root: Path, rows: int, text: bool) -> None:
    """``rows`` conditions; condition i flags control 02 when i is odd (FPR 50%, else 0%)."""
    (root / "results").mkdir(parents=True)
    (root / "audit_answer_key").mkdir()
    key = {s: {"is_flawed": f, "category": "Data leakage"} for s, f in SCRIPTS.items()}
    (root / "audit_answer_key" / "answer_key.json").write_text(json.dumps(key))
    table = ["| Condition | Detection rate | FPR | Precision | F1 |", "|---|---|---|---|---|"]
    for i in range(rows):
        cond = f"model_{i:05d}"
        fp = i % 2
        reviews = [
            {
                "script": s,
                "verdict": "FAIL" if f or (fp and s == "script_02.py") else "PASS",
                "confidence": "HIGH",
            }
            for s, f in SCRIPTS.items()
        ]
        doc = {"model": f"m-{i}", "display_name": f"Model {i:05d}", "n_runs": 1, "reviews": reviews}
        (root / "results" / f"{cond}_reviews.json").write_text(json.dumps(doc))
        precision, f1 = ("67%", "0.80") if fp else ("100%", "1.00")
        table.append(f"| Model {i:05d} | 100% | {50 * fp}% | {precision} | {f1} |")
    release = ""
    if text:
        (root / "README.md").write_text("# Results\n\n" + "\n".join(table) + "\n")
        release = '\n[release]\nname = "b"\nversion = "1"\ninclude = ["README.md"]\ntexts = ["README.md"]\n'
    (root / "provgraph.toml").write_text(
        '[project]\nname = "bind-bench"\nbase_iri = "https://example.org/bind/"\n\n[analysis]\n' + release
    )


def ingest(root: Path):
    from provgraph.cli import main  # after main() set the secret: the CLI reads it at import

    try:
        main(["-C", str(root), "-q", "ingest"])
    except SystemExit as exc:
        if exc.code:
            raise
    from provgraph.store import open_store  # with the CLI's, after the secret is set

    return open_store(root / ".provgraph" / "store")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2500)
    args = ap.parse_args()
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    # imported after the secret is set, like the CLI
    from provgraph.stats import materialize
    from provgraph.stats.bind import bind_texts
    from provgraph.stats.statistic import StatIndex

    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    tmp = Path(tempfile.mkdtemp(prefix="provgraph-bind-bench-"))
    try:
        figures = {}
        for text in (False, True):
            root = tmp / ("text" if text else "plain")
            write_bundle(root, args.rows, text)
            store = ingest(root)
            t0 = time.perf_counter()
            outcome = materialize.refresh(store, force=True)
            figures["with text" if text else "refresh"] = time.perf_counter() - t0
            if text:
                index = StatIndex(outcome.stats)
                t0 = time.perf_counter()
                bindings = bind_texts(store, outcome.base, index)
                figures["bind"] = time.perf_counter() - t0
                bound = [b for b in bindings if b.stat is not None]
                differ = sum(abs(b.value.value - b.stat.value) > b.value.tolerance for b in bound)  # type: ignore[union-attr]
                print(f"cells {len(bindings)}, bound {len(bound)} ({differ} differ)")
                print(f"statistics {outcome.statistics}")
            store.close()
        for name, seconds in figures.items():
            print(f"  {name:<10} {seconds:7.2f} s")
        print(f"  bind / refresh without text: {figures['bind'] / figures['refresh']:.2f}")
        print(f"load after {os.getloadavg()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
