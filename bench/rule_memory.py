"""Each rule alone, in a fresh process, on a store a check has derived: seconds and peak memory.

    .venv/bin/python bench/rule_memory.py --store CHECKED [--package DIR] [RULE-ID ...]

One JSON line per rule, the largest first: its seconds (``run_rule``, with the look-up of its
violations' files and lines), and its peak resident memory above the process's resting memory
once the store is open (``VmHWM`` reset through ``/proc/self/clear_refs``, Linux only). A fresh
process per rule, as the allocator keeps what one rule freed and would hide the next one's
peak. ``--package`` measures another provgraph package (``git archive <commit> provgraph``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from provgraph.rules import load_rules
from provgraph.rules.runner import run_rule
from provgraph.store import open_store

def resident():
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 // 2**20
def peak():
    return next(int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))

store = open_store(Path(sys.argv[1]))
rule = next(r for r in load_rules() if r.id == sys.argv[2])
store.select("SELECT * WHERE { ?s ?p ?o } LIMIT 1")
Path("/proc/self/clear_refs").write_text("5")
resting = resident()
t = time.perf_counter()
result = run_rule(store, rule)
print(json.dumps({"rule": rule.id, "seconds": round(time.perf_counter() - t, 2),
                  "peak_mib": peak() - resting, "outcome": result.outcome,
                  "violations": len(result.violations)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a store a check has derived")
    ap.add_argument("--package", type=Path, default=HERE.parent, help="folder holding provgraph")
    ap.add_argument("rules", nargs="*", help="rule ids (default: every rule)")
    args = ap.parse_args()
    sys.path.insert(0, str(args.package))
    from provgraph.rules import load_rules

    ids = args.rules or [r.id for r in load_rules()]
    secret = os.environ.get("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    env = {**os.environ, "PROVGRAPH_SECRET": secret}
    results = []
    for rule_id in ids:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.store), rule_id, str(args.package)],
            capture_output=True,
            text=True,
            env=env,
        )
        if done.returncode != 0:
            raise SystemExit(f"{rule_id}: {done.stderr.strip().splitlines()[-1]}")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{rule_id}: {results[-1]['seconds']} s", file=sys.stderr, flush=True)
    for r in sorted(results, key=lambda r: -r["peak_mib"]):
        print(json.dumps(r))


if __name__ == "__main__":
    main()
