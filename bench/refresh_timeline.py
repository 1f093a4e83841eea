"""The check's refresh (``refresh_derived``) with a memory timeline: when each step ran and the
largest resident set inside it, and which steps were running at the peak.

    .venv/bin/python bench/refresh_timeline.py --store FRESH-INGEST --out timeline.tsv

The store must have imports newer than its views (a fresh ingest), or nothing is recomputed.
The resident set is sampled every second (``--out``: seconds and MiB per line); one JSON line
at the end gives the total, the peak, the steps running at the peak and each step's span.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

from check_phases import _rss_mib  # bench/ is the script's folder, first on sys.path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="the timeline (seconds, MiB per line)")
    args = ap.parse_args()
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    from provgraph.lineage import gate
    from provgraph.rules import callview, caseview, decodingview, fileview, pixelview
    from provgraph.stats import materialize
    from provgraph.store import open_store

    t0 = time.perf_counter()
    spans: list[tuple[str, float, float]] = []
    series: list[tuple[float, float]] = []

    def timed(owner: Any, name: str, label: str) -> None:
        step = getattr(owner, name)

        @functools.wraps(step)
        def run(*a: Any, **k: Any) -> Any:
            start = time.perf_counter() - t0
            try:
                return step(*a, **k)
            finally:
                spans.append((label, start, time.perf_counter() - t0))

        setattr(owner, name, run)

    for module in (callview, caseview, pixelview, fileview, decodingview):
        timed(module, "refresh", module.__name__.rsplit(".", 1)[-1])
    timed(materialize, "refresh", "stats")
    store = open_store(args.store)
    timed(store, "compact", "compact")
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(1.0):
            series.append((time.perf_counter() - t0, _rss_mib()))

    threading.Thread(target=sample, daemon=True).start()
    gate.refresh_derived(store)
    stop.set()
    store.close()
    total = time.perf_counter() - t0
    at, peak = max(series, key=lambda x: x[1]) if series else (0.0, _rss_mib())
    args.out.write_text("".join(f"{t:.0f}\t{r:.0f}\n" for t, r in series))
    print(
        json.dumps(
            {
                "seconds": round(total, 1),
                "peak_mib": round(peak),
                # the kernel's high-water mark: a peak between two samples is not missed
                "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "peak_at": round(at),
                "running_at_peak": [label for label, s, e in spans if s <= at <= e],
                "spans": [
                    (label, round(s), round(e), round(max((r for t, r in series if s <= t <= e), default=0)))
                    for label, s, e in sorted(spans, key=lambda x: x[1])
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
