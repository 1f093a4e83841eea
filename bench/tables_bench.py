"""Tables in texts: find_tables against the line scan it adds to, and hostile texts (issue 15).

For each format a table of N cells is parsed with :func:`provgraph.evidence.tables.find_tables`;
the baseline, measured in the same run, is :func:`provgraph.evidence.claims.numbers` over the
same lines (what the text importer did before tables). Reported: seconds, the ratio to the
baseline, and the growth from N to 4N (4.0 is linear). Hostile texts (unclosed markup, unclosed
environments, a row of 10^5 cells) must grow linearly too.

    .venv/bin/python bench/tables_bench.py [--cells 10000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from provgraph.evidence.claims import numbers
from provgraph.evidence.tables import find_tables

COLUMNS = 10


def markdown(cells: int) -> str:
    rows = cells // COLUMNS
    head = "| Model | " + " | ".join(f"M{k} (%)" for k in range(1, COLUMNS)) + " |\n"
    head += "|---" * COLUMNS + "|\n"
    body = "".join(
        f"| model {r} | " + " | ".join(f"**{(r * k) % 100}.{k}%**" for k in range(1, COLUMNS)) + " |\n"
        for r in range(rows)
    )
    return head + body


def latex(cells: int) -> str:
    rows = cells // COLUMNS
    head = "\\begin{table}\\caption{Big}\\begin{tabular}{l" + "c" * (COLUMNS - 1) + "}\n\\toprule\n"
    head += (
        " & ".join(["Model", *(f"\\multicolumn{{1}}{{c}}{{M{k}}}" for k in range(1, COLUMNS))]) + " \\\\\n"
    )
    head += "\\midrule\n"
    body = "".join(
        f"Model {r} & " + " & ".join(f"{(r * k) % 100}\\% [1--9]" for k in range(1, COLUMNS)) + " \\\\\n"
        for r in range(rows)
    )
    return head + body + "\\bottomrule\n\\end{tabular}\\end{table}\n"


def html(cells: int) -> str:
    rows = cells // COLUMNS
    head = "<table><caption>Big</caption><thead><tr>" + "<th>M</th>" * COLUMNS + "</tr></thead>\n"
    body = "".join(
        "<tr><th>m</th>"
        + "".join(f"<td><b>0.{k}{r % 10}</b>&#37;</td>" for k in range(1, COLUMNS))
        + "</tr>\n"
        for r in range(rows)
    )
    return head + body + "</table>\n"


def csv_text(cells: int) -> str:
    rows = cells // COLUMNS
    head = ",".join(f"c{k}" for k in range(COLUMNS)) + "\n"
    return head + "".join(
        f'"m, {r}",' + ",".join(f"0.{k}{r % 10}" for k in range(1, COLUMNS)) + "\n" for r in range(rows)
    )


def hostile(kind: str, size: int) -> tuple[str, str]:
    if kind == "unclosed **, `, _ in one cell":
        return "markdown", "| a | b |\n|---|---|\n| x | " + "**a `b _c " * (size // 10) + " |\n"
    if kind == "one row of N cells":
        return "markdown", "|" + " a |" * size + "\n" + "|-" * size + "|\n" + "| 0.5 " * size + "|\n"
    if kind == "N unclosed \\begin{tabular}":
        return "latex", "\\begin{tabular}{l" * (size // 16) + "\n"
    if kind == "N unclosed <!-- in a table":
        return "html", "<table><tr><td>" + "<!-- 0.5 " * (size // 9) + "\n"
    if kind == "N unclosed <td in a table":
        return "html", "<table><tr>" + "<td 0.5 " * (size // 8) + "\n"
    if kind == "N open <table>":
        return "markdown", "<table><tr><td>0.5" * (size // 18) + "\n"
    raise ValueError(kind)


HOSTILE = (
    "unclosed **, `, _ in one cell",
    "one row of N cells",
    "N unclosed \\begin{tabular}",
    "N unclosed <!-- in a table",
    "N unclosed <td in a table",
    "N open <table>",
)


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def lines_of(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), start=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10_000)
    n = parser.parse_args().cells
    growth = f"growth {n:,} -> {4 * n:,}"
    print(f"| format | cells | find_tables s | line scan s (baseline) | x baseline | {growth} |")
    print("|---|---|---|---|---|---|")
    for fmt, make in (("markdown", markdown), ("latex", latex), ("html", html), ("csv", csv_text)):
        small, large = lines_of(make(n)), lines_of(make(4 * n))
        t_small = timed(lambda small=small, fmt=fmt: find_tables(small, fmt))
        t_large = timed(lambda large=large, fmt=fmt: find_tables(large, fmt))
        base = timed(lambda small=small, fmt=fmt: [numbers(t, latex=fmt == "latex") for _, t in small])
        print(
            f"| {fmt} | {n:,} | {t_small:.3f} | {base:.3f} | {t_small / base:.1f} | {t_large / t_small:.1f} |"
        )
    size = 100_000
    print(f"\n| hostile text | chars {size:,}: s | chars {4 * size:,}: s | growth |")
    print("|---|---|---|---|")
    for kind in HOSTILE:
        fmt, small_text = hostile(kind, size)
        _, large_text = hostile(kind, 4 * size)
        small, large = lines_of(small_text), lines_of(large_text)
        t_small = timed(lambda small=small, fmt=fmt: find_tables(small, fmt), 1)
        t_large = timed(lambda large=large, fmt=fmt: find_tables(large, fmt), 1)
        print(f"| {kind} | {t_small:.3f} | {t_large:.3f} | {t_large / max(t_small, 1e-6):.1f} |")


if __name__ == "__main__":
    main()
