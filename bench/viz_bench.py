"""How long the collapsed whole-graph view takes on a large bundle (issue 7).

    .venv/bin/python bench/viz_bench.py [--calls 100000] [--no-files] [--keep DIR] [--check]

Generates a bundle with N planned calls and N call records (and, unless --no-files, one
output file per record, a few of them empty or missing), ingests it into an on-disk store,
then measures in the same run:

  baseline   one pass over every quad of the store (SELECT COUNT(*) { ?s ?p ?o })
  view       provgraph.views.graph.whole_graph: groups, arrows, facets, violation marks
  dot        DOT text + graphviz `dot -Tsvg` layout of the collapsed picture
  panels     the report's accounting queries (output states, views, blocks, statistics, claims)
  report     (--check only) provgraph.report.html.build_report after a real check

and prints each (median of --repeat runs) with its ratio to the baseline. The violations the
view marks are the defects the generator planted (one per missing or empty output, one per
call never run), given to the view directly: the output rules on main take minutes on 100,000
calls, which is the rules' cost, not the view's; --check runs them for real.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def generate(root: Path, calls: int, files: bool) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "provgraph.toml").write_text(
        '[project]\nname = "viz-bench"\nbase_iri = "https://example.org/viz-bench/"\n\n'
        '[plan]\nfile = "plan.csv"\n'
    )
    out = root / "outputs"
    out.mkdir(exist_ok=True)
    with (root / "plan.csv").open("w") as plan, (root / "calls.jsonl").open("w") as log:
        plan.write("call_id,case,condition,replicate\n")
        for i in range(calls):
            cid = f"C{i:06d}"
            plan.write(f"{cid},study-{i // 10},cond-{i % 10},1\n")
            if i % 1000 == 7:
                continue  # planned, never run
            log.write(f'{{"call_id": "{cid}", "status": "ok", "output": "outputs/{cid}.txt"}}\n')
            if not files or i % 991 == 5:
                continue  # missing output
            (out / f"{cid}.txt").write_text("" if i % 997 == 3 else "report\n")


def planted(calls: int, files: bool, base: str) -> list:
    """The violations the output rules find in a generated bundle, as view marks."""
    from provgraph.views.graph import Mark

    marks = []
    for i in range(calls):
        cid = f"C{i:06d}"
        if i % 1000 == 7:
            marks.append(Mark(f"{base}call/{cid}", "output-planned-without-terminal"))
        elif not files or i % 991 == 5 or i % 997 == 3:
            marks.append(Mark(f"{base}record/calls.jsonl/{cid}/1", "output-ok-without-output"))
    return marks


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--no-files", action="store_true", help="records only, no output files")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the bundle here and keep it (reused if present)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    ap.add_argument("--check", action="store_true", help="run the real check and time the report too")
    args = ap.parse_args()

    from provgraph.bundle.layout import Bundle
    from provgraph.ingest.run import ingest_paths
    from provgraph.lineage.gate import run_gate
    from provgraph.report import accounting
    from provgraph.report.html import ReportOptions, build_report
    from provgraph.rules import load_rules
    from provgraph.store import open_store
    from provgraph.views import dot
    from provgraph.views.graph import marks_from_report, whole_graph

    tmp = None
    if args.keep:
        root = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="provgraph-viz-bench-")
        root = Path(tmp) / "bundle"
    try:
        if not (root / "provgraph.toml").exists():
            t0 = time.perf_counter()
            generate(root, args.calls, not args.no_files)
            print(f"generated {args.calls} calls in {time.perf_counter() - t0:.1f} s", flush=True)
        bundle = Bundle.open(root)
        store = open_store(bundle.default_store)
        t0 = time.perf_counter()
        ingest_paths(store, bundle, [bundle.root])
        print(f"ingested in {time.perf_counter() - t0:.1f} s; {store.quad_count()} quads", flush=True)
        if args.check:
            t0 = time.perf_counter()
            check = run_gate(store, load_rules())
            marks = marks_from_report(check)
            print(f"checked in {time.perf_counter() - t0:.1f} s", flush=True)
        else:
            marks = planted(args.calls, not args.no_files, bundle.contract.base_iri)
        print(f"{len(marks)} violations to mark", flush=True)

        base, n = timed(lambda: store.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"), args.repeat)
        quads = int(n[0]["n"].value)  # type: ignore[index]
        t_view, view = timed(lambda: whole_graph(store, marks), args.repeat)
        text = dot.to_dot(view)  # type: ignore[arg-type]
        has_dot = dot.dot_program() is not None
        panels = (
            accounting.output_states,
            accounting.view_positions,
            accounting.blocks,
            accounting.statistics,
            accounting.claims,
        )
        t_dot, _ = timed(lambda: dot.render(dot.to_dot(view), "svg"), args.repeat) if has_dot else (0.0, None)  # type: ignore[arg-type]
        t_panels, _ = timed(lambda: [f(store) for f in panels], args.repeat)
        rows = [
            ("baseline: one pass over all quads", base),
            ("whole-graph view (collapsed)", t_view),
            ("DOT + graphviz SVG layout" if has_dot else "DOT only (no graphviz)", t_dot),
            ("view + picture", t_view + t_dot),
            ("report accounting panels (queries)", t_panels),
        ]
        if args.check:
            t_report, page = timed(lambda: build_report(store, check, ReportOptions()), 1)
            rows.append(("whole HTML report (check already run)", t_report))
            print(f"report {len(page.encode()) // 1024} KiB")  # type: ignore[union-attr]
        boxes, arrows = len(view.boxes), len(view.arrows)  # type: ignore[union-attr]
        print(f"\n{args.calls} planned calls, {quads} quads -> {boxes} boxes, {arrows} arrows")
        print(f"{'step':<40} {'seconds':>8} {'x baseline':>11}")
        for name, secs in rows:
            print(f"{name:<40} {secs:8.2f} {secs / base:11.1f}")
        print(f"DOT text {len(text)} bytes; {view.violation_count} violations marked")  # type: ignore[union-attr]
        if args.json:
            args.json.write_text(
                json.dumps({"calls": args.calls, "quads": quads, "seconds": dict(rows)}, indent=2)
            )
        store.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
