"""The check phase by phase on an ingested store: time and peak resident memory of each.

    .venv/bin/python bench/check_phases.py --store STORE [--phases refresh,rules,record,hubs]
    .venv/bin/python bench/check_phases.py --store STORE --phases hubs --baseline main

The phases are those of ``provgraph check`` (:func:`provgraph.lineage.gate.run_gate`):
``refresh`` (``refresh_derived``: compaction, the derived views and the statistics), ``rules``
(``run_check``), ``record`` (``record_check``) and ``hubs`` (``record_hubs``); and ``stats``,
the statistics recomputed even when their inputs did not change (``provgraph stats``),
``compact`` (the compaction refresh starts with after an import), and ``callview``,
``fileview``, ``caseview``, ``pixelview``, ``decodingview``, refresh's view steps one at a time
(in that order: the later ones read the call view); ``--readers N`` runs the rules on N
threads (default one per core, up to 4). All run in this
one process, in that order; before each, the kernel's high-water mark is reset
(``/proc/self/clear_refs``), and a thread samples the resident set every 50 ms as well, so each
phase's peak is its own. ``hubs`` alone (no ``rules``) reuses the check the store recorded.
``--baseline DIR`` runs the phases with the package in DIR instead (e.g. an extracted
``git archive main provgraph``), for same-session before/after figures. One JSON line per phase.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import threading
import time
from pathlib import Path


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Sampler:
    """The largest resident set seen since the last :meth:`reset` (sampled every 50 ms)."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _rss_mib())

    def reset(self) -> None:
        self.peak = _rss_mib()
        with contextlib.suppress(OSError):
            Path("/proc/self/clear_refs").write_text("5")


#: refresh's view steps (after the statistics), each a phase of its own
VIEWS = ("callview", "fileview", "caseview", "pixelview", "decodingview")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="a store location: a folder, or a server URL")
    ap.add_argument("--phases", default="refresh,rules,record,hubs")
    ap.add_argument("--readers", type=int, help="rules run at once (default: one per core, up to 4)")
    ap.add_argument("--baseline", type=Path, help="a folder holding another provgraph package")
    args = ap.parse_args()
    if args.baseline:
        sys.path.insert(0, str(args.baseline))
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    import provgraph
    from provgraph.lineage.gate import refresh_derived
    from provgraph.lineage.hubs import record_hubs
    from provgraph.rules import load_rules, record_check, run_check
    from provgraph.stats import materialize
    from provgraph.store import open_store, parallel

    store = open_store(args.store)
    sampler = Sampler()
    report = None
    print(json.dumps({"package": provgraph.__file__, "load": os.getloadavg()}), flush=True)
    for phase in args.phases.split(","):
        sampler.reset()
        load = os.getloadavg()
        t0 = time.perf_counter()
        extra: dict = {}
        if phase == "refresh":
            refresh_derived(store, readers=args.readers)
        elif phase == "rules":
            report = run_check(store, load_rules(), readers=args.readers)
            extra["readers"] = parallel.readers(store, args.readers)
            extra["violations"] = sum(len(r.violations) for r in report.results)
            extra["passed"] = report.passed
        elif phase == "record":
            assert report is not None, "record needs the rules phase first"
            record_check(store, report)
        elif phase == "compact":
            store.compact()
        elif phase in VIEWS:  # refresh's steps one at a time, in refresh's order
            importlib.import_module(f"provgraph.rules.{phase}").refresh(store)
        elif phase == "stats":  # the statistics alone, recomputed whether or not inputs changed
            materialize.refresh(store, force=True)
        elif phase == "hubs":
            record_hubs(store)
        else:
            raise SystemExit(f"unknown phase {phase}")
        seconds = time.perf_counter() - t0
        out = {
            "phase": phase,
            "seconds": round(seconds, 2),
            "peak_mib": round(max(sampler.peak, _hwm_mib()), 1),
            "sampled_peak_mib": round(sampler.peak, 1),
            "load": [*load, *os.getloadavg()],
            **extra,
        }
        print(json.dumps(out), flush=True)
    store.close()


if __name__ == "__main__":
    main()
