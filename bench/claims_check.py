"""Consistency checks of published numbers over 10,000 table cells, against plain parsing.

    .venv/bin/python bench/claims_check.py [--cells 10000]

Generates Markdown results tables (a condition label, DR %, FPR %, precision, F1, accuracy per
row, from random integer confusion tables over 18..500 positives and negatives; one row in 50
gets a wrong F1), then times, in the same run:

1. the baseline: the tables parsed into cells (``evidence.tables.find_tables``, which reads
   every number of every cell);
2. parsing plus the consistency checks of every row (``evidence.consistency.row_findings``:
   the integer confusion-count search, and the nearest consistent tuple for each flawed row),
   with the numbers of positives and negatives in two columns ("split"), only their total in
   one column ("total": the search runs over every split of n) or none ("none": only the
   n-free identities).

Writes nothing; prints the table for bench/README.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from provgraph.evidence.consistency import Bind, row_findings  # noqa: E402
from provgraph.evidence.tables import find_tables  # noqa: E402

COLUMNS = 6  # label + 5 metrics


def table_lines(rows: int, seed: int, sizes: str) -> tuple[list[tuple[int, str]], int]:
    """``sizes``: "split" (n positive, n negative columns), "total" (an n column) or "none"."""
    rng = random.Random(seed)
    extra = {"split": " n positive | n negative |", "total": " n |", "none": ""}[sizes]
    header = "| Condition | DR (%) | FPR (%) | Precision | F1 | Accuracy |" + extra
    out = [header, "|---" * (COLUMNS + extra.count("|")) + "|"]
    planted = 0
    for i in range(rows):
        p, q = rng.randint(18, 500), rng.randint(18, 500)
        tp, fp = rng.randint(1, p), rng.randint(0, q)
        dr, fpr = 100 * tp / p, 100 * fp / q
        precision, f1, acc = tp / (tp + fp), 2 * tp / (2 * tp + fp + p - tp), (tp + q - fp) / (p + q)
        if i % 50 == 49:
            f1, planted = min(f1 + 0.05, 0.99) if f1 < 0.9 else f1 - 0.05, planted + 1
        cells = [f"{dr:.0f}%", f"{fpr:.0f}%", f"{precision:.2f}", f"{f1:.2f}", f"{acc:.3f}"]
        if sizes == "split":
            cells += [str(p), str(q)]
        elif sizes == "total":
            cells.append(str(p + q))
        out.append(f"| model-{i} | " + " | ".join(cells) + " |")
    return list(enumerate(out, start=1)), planted


def timed(fn, repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def check_all(lines: list[tuple[int, str]], bind: Bind) -> int:
    flagged = 0
    for table in find_tables(lines, "markdown"):
        for row in table.rows:
            flagged += sum(not f.consistent for f in row_findings(table, row, bind))
    return flagged


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=10_000)
    args = parser.parse_args()
    bind = Bind({}, None, None, ())
    print("| case | cells | rows | planted | flagged | parse only (baseline) | parse + checks | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for sizes, width in (("split", COLUMNS + 2), ("total", COLUMNS + 1), ("none", COLUMNS)):
        rows = args.cells // width
        lines, planted = table_lines(rows, 1, sizes)
        base = timed(lambda lines=lines: find_tables(lines, "markdown"))
        flagged = check_all(lines, bind)
        full = timed(lambda lines=lines: check_all(lines, bind), repeat=1 if sizes == "total" else 3)
        print(
            f"| {sizes} | {rows * width} | {rows} | {planted} | {flagged} | {base:.3f} s | {full:.3f} s "
            f"| {full / base:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
