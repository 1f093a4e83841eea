"""The cohort rules over the per-case evidence view against the hand-joined rules they replace.

    .venv/bin/python bench/cohort_view.py --store STORE [--store STORE ...] [--old REV] [--rounds 2]

Each ``STORE`` is an ingested scale bundle (``bench/scale.py step ingest --bundle ... --store
...``). On each, interleaved for ``--rounds`` rounds in one process: the seven cohort rules and
``analysis-cohort-mismatch`` as they were at ``--old`` (default: main before issue 21's
rewrite), then the view recomputed (``caseview.refresh(force=True)``; dropping the previous view
graph, which a check after a changed import also pays, is timed apart) plus the rewritten rules.
The call evidence view both read is refreshed once first and reported apart (every call rule
shares it). Each round also checks that both sets give the same outcome and the same
(focus, message) rows. Prints seconds per rule, totals, ratios and the load average.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
IDS = (
    "cohort-case-not-in-cohort",
    "cohort-patient-in-two-splits",
    "cohort-repeated-patient",
    "cohort-split-not-allowed",
    "cohort-split-not-recorded",
    "cohort-view-not-allowed",
    "cohort-view-undocumented",
    "analysis-cohort-mismatch",
)


def old_rules(rev: str) -> list:
    from provgraph.rules.rule import parse_rule, queries_dir

    rules = []
    for rule_id in IDS:
        clause = rule_id.split("-", 1)[0]
        rel = f"provgraph/data/rules/{clause}/{rule_id}.rq"
        text = subprocess.run(
            ["git", "-C", str(HERE.parent), "show", f"{rev}:{rel}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rules.append(parse_rule(queries_dir() / clause / f"{rule_id}.rq", text))
    return rules


def run(store, rules) -> tuple[dict[str, float], dict[str, tuple[str, frozenset]]]:
    from provgraph.rules import run_check

    def show(r) -> None:
        print(f"     {r.rule.id} {r.seconds:.2f} s", flush=True)

    report = run_check(store, rules, on_result=show)
    seconds = {r.rule.id: r.seconds for r in report.results}
    rows = {
        r.rule.id: (r.outcome, frozenset((v.focus, v.message) for v in r.violations)) for r in report.results
    }
    return seconds, rows


def bench_store(path: Path, old: list, new: list, rounds: int) -> None:
    from provgraph.rules import callview, caseview
    from provgraph.store import catalog, open_store

    store = open_store(str(path))
    t0 = time.perf_counter()
    callview.refresh(store)
    shared = time.perf_counter() - t0
    print(f"{path}: {store.quad_count()} quads; call view {shared:.1f} s (shared, not counted)")
    for k in range(rounds):
        load = os.getloadavg()[0]
        before, old_rows = run(store, old)
        t0 = time.perf_counter()
        slot = catalog.current(store, caseview.SLOT)
        if slot is not None:  # what a check after a changed import also pays, shown apart
            store.drop_graph(slot.graph)
        dropped = time.perf_counter() - t0
        t0 = time.perf_counter()
        caseview.refresh(store, force=True)
        view = time.perf_counter() - t0
        print(f"     view {view:.2f} s (dropping the previous one: {dropped:.2f} s)", flush=True)
        after, new_rows = run(store, new)
        same = old_rows == new_rows
        differ = sorted(i for i in IDS if old_rows.get(i) != new_rows.get(i))
        print(
            f" round {k + 1} (load {load:.1f} -> {os.getloadavg()[0]:.1f}); same rows: {same} {differ or ''}"
        )
        for rule_id in IDS:
            print(
                f"   {rule_id:32} before {before[rule_id]:7.2f} s  after {after[rule_id]:7.2f} s  "
                f"({new_rows[rule_id][0]}, {len(new_rows[rule_id][1])} rows)"
            )
        total_before, total_after = sum(before.values()), sum(after.values()) + view
        print(
            f"   total before {total_before:.2f} s; after {total_after:.2f} s (view {view:.2f} s + rules "
            f"{sum(after.values()):.2f} s): {total_before / total_after:.1f}x faster"
        )
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, action="append", required=True)
    ap.add_argument("--old", default="935f2b7", help="revision whose rules are the baseline")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    from provgraph.rules import load_rules

    old = old_rules(args.old)
    new = [r for r in load_rules() if r.id in IDS]
    for path in args.store:
        bench_store(path, old, new, args.rounds)


if __name__ == "__main__":
    main()
