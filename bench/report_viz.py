"""Report and viz on ingested, checked stores (issue 21): each step in its own child process,
for two code trees in turn (``--before``: a checkout of main; ``--after``: this tree), so the
same store is measured by both in one session.

    python bench/report_viz.py --store S4 --store S5 --before /work/main --after . [--rounds 2]

Steps (wall time measured in the child; the child's CPU time (user + system) and peak RSS
from ``os.wait4``, the CPU time being the figure to compare on a loaded machine):

- ``viz``: ``views.whole.whole_graph`` + DOT + ``dot -Tsvg`` (what ``provgraph viz`` does);
- ``read``: the recorded check read back (``rules.recorded.read_recorded``; after only);
- ``page``: ``report.html.build_report`` on that check (the page; the report's code is the
  same on both trees, so it runs once).

The stores must hold a check recorded by the after tree (``bench/scale.py step check`` with it
on the path), or ``--stamp`` writes ``check:record`` for the check main recorded (its clause
graphs read back, the violations located as the runner does), without running it again.
A report that reruns the check costs the check's time (``bench/scale.py step check``) plus
``page``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
step, store_path, read_only = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
from provgraph.store import open_store
if read_only:  # beside a process that holds the store (a check still running): its snapshot
    import pyoxigraph as ox
    from provgraph.store.oxigraph import OxigraphStore
    store = OxigraphStore.__new__(OxigraphStore)
    store.path, store.location = Path(store_path), store_path
    store._ox = ox.Store.read_only(store_path)
else:
    store = open_store(Path(store_path))
out = {}
t0 = time.perf_counter()
if step == "viz":
    from provgraph.views import dot, whole
    view = whole.whole_graph(store)
    dot.render(dot.to_dot(view), "svg")
    out["boxes"], out["arrows"] = len(view.boxes), len(view.arrows)
else:
    from provgraph.rules import load_rules
    from provgraph.rules.recorded import read_recorded
    rec = read_recorded(store, load_rules())
    out["read_seconds"] = time.perf_counter() - t0
    out["reason"] = rec.reason
    if step == "page" and rec.report is not None:
        from provgraph.report.html import ReportOptions, build_report
        p0 = time.perf_counter()
        page = build_report(store, rec.report, ReportOptions())
        out["page_seconds"] = time.perf_counter() - p0
        out["kib"] = len(page.encode()) // 1024
out["seconds"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def run(code: Path, step: str, store: Path, read_only: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code.resolve())}
    env.setdefault("PROVGRAPH_SECRET", "provgraph-bench-secret-0123456789abcdef")
    load = os.getloadavg()[0]
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, step, str(store), str(int(read_only))],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    out = json.loads(proc.stdout.read()) if status == 0 else {"error": status}  # type: ignore[union-attr]
    cpu = usage.ru_utime + usage.ru_stime  # less sensitive than wall time to a loaded machine
    out.update(cpu_seconds=cpu, peak_mib=usage.ru_maxrss / 1024, load=[load, os.getloadavg()[0]], step=step)
    return out


STAMP = r"""
import sys
from pathlib import Path
from provgraph.rules import load_rules, recorded
from provgraph.rules.runner import CheckReport, contract_state, locate
from provgraph.store import open_store
store = open_store(Path(sys.argv[1]))
rules = load_rules()
row = store.select(recorded._P + '''SELECT ?started ?ended WHERE {
  ?c a pg:Check ; prov:startedAtTime ?started ; prov:endedAtTime ?ended } LIMIT 1''')[0]
started, ended = recorded._time(row["started"].value), recorded._time(row["ended"].value)
project, base, in_force = contract_state(store)
results = recorded._results(store, rules, in_force, started)
assert not isinstance(results, str), results
locate(store, [v for r in results for v in r.violations])
report = CheckReport(results, in_force, base, project, started, (ended - started).total_seconds())
recorded.write_record(store, report)
print(recorded.read_recorded(store, rules).reason)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, action="append", required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--read-only", action="store_true", help="open the stores read-only (viz only)")
    ap.add_argument("--stamp", action="store_true", help="write check:record for main's recorded check first")
    args = ap.parse_args()
    if args.stamp:
        env = {**os.environ, "PYTHONPATH": str(args.after.resolve())}
        for store in args.store:
            subprocess.run([sys.executable, "-c", STAMP, str(store)], env=env, check=True)
    for store in args.store:
        for i in range(args.rounds):
            steps = [("before", args.before, "viz"), ("after", args.after, "viz")]
            if not args.read_only:
                steps.append(("after", args.after, "page"))
            for name, code, step in steps:
                t = time.strftime("%H:%M:%S")
                fig = run(code, step, store, args.read_only)
                print(json.dumps({"store": store.name, "round": i, "code": name, "at": t, **fig}), flush=True)


if __name__ == "__main__":
    main()
