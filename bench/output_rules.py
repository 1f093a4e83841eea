"""The output, pixel and annotation rules rewritten as plain SPARQL (issue 21), timed against the
sub-select versions they replace, on one store, in one session, interleaved.

    .venv/bin/python bench/output_rules.py --store STORE [--before REV] [--rounds 3]

``STORE`` is an ingested bundle (e.g. ``bench/scale.py step ingest`` of
``scale_bundle(100_000)``). The derived views are brought up to date first (their cost is
printed: it counts in the check's time); then each round runs every rule of the list once in
its old form (the rule file at git revision ``--before``) and once in its new form (the working
tree), alternating which goes first. Each rule's rows (focus, message) must be the same in
both forms; the medians and their ratio are printed as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from provgraph.lineage.gate import refresh_derived  # noqa: E402
from provgraph.rules import load_rules  # noqa: E402
from provgraph.store import open_store  # noqa: E402

RULES = (
    "output-call-not-successful",
    "output-decoding-mismatch",
    "output-differs-from-record",
    "output-ok-with-failed-finish",
    "output-ok-without-output",
    "output-planned-without-terminal",
    "output-request-without-result",
    "output-unplanned-record",
    "pixel-conditions-differ-in-image",
    "pixel-image-not-recorded",
    "pixel-image-without-rendering",
    "pixel-rendered-hash-mismatch",
    "annotation-raw-response-missing",
)


def old_query(rev: str, path: Path) -> str:
    rel = path.resolve().relative_to(HERE.parent)
    return subprocess.run(
        ["git", "-C", str(HERE.parent), "show", f"{rev}:{rel}"], check=True, capture_output=True, text=True
    ).stdout


def timed(store, query: str) -> tuple[float, set[tuple[str, str]]]:
    t0 = time.perf_counter()
    rows = store.select(query)
    seconds = time.perf_counter() - t0
    return seconds, {(r["focus"].value, r["message"].value) for r in rows}  # type: ignore[union-attr]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--before", default="main")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rules", default=",".join(RULES))
    args = ap.parse_args()
    store = open_store(args.store)
    t0 = time.perf_counter()
    refresh_derived(store)
    views = time.perf_counter() - t0
    print(f"views: {views:.1f} s", file=sys.stderr, flush=True)
    rules = {r.id: r for r in load_rules()}
    ids = args.rules.split(",")
    queries = {i: (old_query(args.before, rules[i].path), rules[i].query) for i in ids}
    times: dict[str, tuple[list[float], list[float]]] = {i: ([], []) for i in ids}
    rows: dict[str, int] = {}
    differ: list[str] = []
    for n in range(args.rounds):
        for i in ids:
            order = (0, 1) if n % 2 == 0 else (1, 0)
            found: dict[int, set[tuple[str, str]]] = {}
            for k in order:
                seconds, found[k] = timed(store, queries[i][k])
                times[i][k].append(seconds)
                print(f"{i} {('before', 'after')[k]}: {seconds:.2f} s", file=sys.stderr, flush=True)
            rows[i] = len(found[1])
            if found[0] != found[1] and i not in differ:
                differ.append(i)
                print(f"{i}: rows differ: {len(found[0])} before, {len(found[1])} after", file=sys.stderr)
    out = {
        "store": str(args.store),
        "load": os.getloadavg(),
        "views_s": round(views, 2),
        "rules": {
            i: {
                "before_s": round(statistics.median(b), 3),
                "after_s": round(statistics.median(a), 3),
                "ratio": round(statistics.median(a) / max(statistics.median(b), 1e-6), 2),
                "rows": rows[i],
            }
            for i, (b, a) in times.items()
        },
        "total_before_s": round(sum(statistics.median(b) for b, _ in times.values()), 2),
        "total_after_s": round(sum(statistics.median(a) for _, a in times.values()), 2),
        "differ": differ,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
