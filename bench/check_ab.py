"""The whole check, before and after a change, on fresh copies of one ingested store, interleaved.

    .venv/bin/python bench/check_ab.py --store STORE --baseline DIR [--rounds 2]
    .venv/bin/python bench/check_ab.py --store STORE --in-place      # one run on STORE itself
    .venv/bin/python bench/check_ab.py --store CHECKED --baseline DIR --rules-only

``DIR`` holds another provgraph package (e.g. ``git archive <commit> provgraph | tar -x -C DIR``).
Each run copies ``STORE`` as the ingest left it (no views, no statistics, no check) and runs, in
one child process, what ``provgraph check`` runs (:func:`provgraph.lineage.gate.refresh_derived`,
the rules, the record, the hub summaries), with the baseline package and with this one in turn,
``--rounds`` times: the machine is shared, so only runs next to each other compare. One JSON line
per run: seconds per step, CPU seconds, peak resident memory (the child's ``VmHWM``), violations.
``--in-place`` runs once on ``STORE`` without copying it (a 10^6-call store is 12 GB).
``--rules-only`` times the rules alone (``run_check``, which writes nothing) on a store a check
has already derived, in place, packages interleaved; each line adds the six slowest rules.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from provgraph.lineage.gate import refresh_derived
from provgraph.lineage.hubs import record_hubs
from provgraph.rules import load_rules, record_check, run_check
from provgraph.store import open_store

store = open_store(Path(sys.argv[1]))
steps, t0 = {}, time.perf_counter()
def step(name, f):
    t = time.perf_counter(); out = f(); steps[name] = round(time.perf_counter() - t, 1); return out
rules_only = sys.argv[3] == "rules"
if not rules_only:
    step("views", lambda: refresh_derived(store))
report = step("rules", lambda: run_check(store, load_rules()))
if not rules_only:
    step("record", lambda: record_check(store, report))
    step("hubs", lambda: record_hubs(store))
total = round(time.perf_counter() - t0, 1)
store.close()
cpu = os.times()
hwm = next(int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"total": total, **steps, "cpu": round(cpu.user + cpu.system, 1), "peak_mib": hwm,
                  "violations": sum(len(r.violations) for r in report.results),
                  "violated": sorted(r.rule.id for r in report.results if r.outcome == "violated"),
                  "slowest": [(r.rule.id, round(r.seconds, 1))
                              for r in sorted(report.results, key=lambda r: -r.seconds)[:6]]}))
"""


def run(package: Path, store: Path, steps: str = "all") -> dict:
    secret = os.environ.get("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    command = [sys.executable, "-c", CHILD, str(store), str(package), steps]
    env = {**os.environ, "PROVGRAPH_SECRET": secret}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return {"package": str(package), **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="an ingested store (copied unless --in-place)")
    ap.add_argument("--baseline", type=Path, help="a folder holding the provgraph package to compare with")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--in-place", action="store_true", help="one run on STORE itself, with this package")
    ap.add_argument(
        "--rules-only", action="store_true", help="the rules alone, in place, on a store a check derived"
    )
    args = ap.parse_args()
    this = HERE.parent
    if args.rules_only:
        for _ in range(args.rounds):
            for package in [p for p in (args.baseline, this) if p is not None]:
                print(json.dumps(run(package, args.store, "rules")), flush=True)
        return
    if args.in_place:
        print(json.dumps(run(this, args.store)), flush=True)
        return
    packages = [p for p in (args.baseline, this) if p is not None]
    with tempfile.TemporaryDirectory(prefix="check-ab-", dir=args.store.parent) as tmp:
        copy = Path(tmp) / "store"
        for _ in range(args.rounds):
            for package in packages:
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(args.store, copy)
                print(json.dumps(run(package, copy)), flush=True)


if __name__ == "__main__":
    main()
