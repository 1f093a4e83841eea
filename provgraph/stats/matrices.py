"""Keyed matrices of a cell grid, one per cohort route, and the pairwise results on each.

A route decides which blocks a matrix holds: every condition scored (``globally-complete``),
both conditions of a pair scored (``pairwise-available``), or the historical positional cut
(``positional-truncation``). Each column records exactly which blocks it holds (the SHA-256 of
their keys), so a statistic points at the columns it used and nothing else.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from provgraph.rdf.terms import IRI, mint
from provgraph.stats.core import paired
from provgraph.stats.core.grid import CellGrid

ROUTE_METHOD = {
    "globally-complete": "blocks with a cell in every condition, joined by (case, finding)",
    "pairwise-available": "blocks with a cell in both conditions of the pair, joined by (case, finding)",
    "positional-truncation": "historical route: missing cells dropped per condition, columns cut to the "
    "shortest and paired by position (not by key)",
}


def keyset_sha256(blocks: list[tuple[str, str]]) -> str:
    """SHA-256 over the sorted ``case<TAB>finding`` lines (what :meth:`CellGrid.keyset` gives)."""
    text = "".join(f"{c}\t{f}\n" for c, f in sorted(blocks))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Column:
    """One condition's column of a matrix: the blocks it holds, by the SHA-256 of their keys."""

    iri: IRI
    condition: str
    n: int
    keyset: str


@dataclass
class Matrix:
    """The keyed matrix of one cohort route: its columns and the missingness table."""

    iri: IRI
    route: str
    n: int
    block_count: int
    conditions: list[str]
    columns: list[Column] = field(default_factory=list)
    keyset: str | None = None
    mispaired: int | None = None
    missing: dict[tuple[str, str], int] = field(default_factory=dict)


class Routes:
    """Computes each cohort route once and hands out its pairwise results and columns."""

    def __init__(self, grid: CellGrid, base: str) -> None:
        self.grid, self.base = grid, base
        self.k = len(grid.condition_keys)
        self.matrices: dict[str, Matrix] = {}
        self._pairwise: dict[str, tuple[paired.PairwiseResult, list[list[Column]]]] = {}
        self._y: dict[str, np.ndarray] = {}
        self.complete_rows = np.empty(0, dtype=np.int64)  # set with the globally complete matrix

    def _column(self, route: str, j: int, rows: np.ndarray, *extra: str) -> Column:
        cond = self.grid.condition_keys[j]
        iri = mint(self.base, "matrix", route, *extra, "column", cond)
        return Column(iri, cond, int(np.asarray(rows).size), self.grid.keyset(rows))

    def matrix(self, route: str) -> Matrix:
        if route in self.matrices:
            return self.matrices[route]
        grid, values = self.grid, self.grid.values
        iri = mint(self.base, "matrix", route)
        m = Matrix(iri, route, 0, grid.block_count, list(grid.condition_keys), missing=dict(grid.missing))
        if route == "globally-complete":
            rows = paired.complete_rows(values)
            m.n = int(rows.size)
            m.keyset = grid.keyset(rows)
            m.columns = [self._column(route, j, rows) for j in range(self.k)]
            self._y[route] = values[rows].astype(np.int8)
            self.complete_rows = rows
        elif route == "positional-truncation":
            y, rows = paired.positional_truncation(values)
            m.n = int(y.shape[0])
            m.mispaired = paired.mispaired_positions(rows)
            m.columns = [self._column(route, j, rows[:, j]) for j in range(self.k)]
            self._y[route] = y
        elif route == "pairwise-available":
            result, pair_rows = paired.pairwise_available(values)
            columns = []
            for p, rows in enumerate(pair_rows):
                a, b = int(result.i[p]), int(result.j[p])
                keys = (grid.condition_keys[a], grid.condition_keys[b])
                columns.append(
                    [self._column(route, a, rows, "pair", *keys), self._column(route, b, rows, "pair", *keys)]
                )
            m.columns = [c for pair in columns for c in pair]
            m.n = int(result.n.max()) if result.n.size else 0
            self._pairwise[route] = (result, columns)
        else:
            raise ValueError(f"unknown cohort route {route!r}")
        self.matrices[route] = m
        return m

    def y(self, route: str) -> np.ndarray | None:
        self.matrix(route)
        return self._y.get(route)

    def pairwise(self, route: str) -> tuple[paired.PairwiseResult, list[list[Column]]]:
        m = self.matrix(route)
        if route not in self._pairwise:
            result = paired.pairwise_complete(self._y[route])
            by_cond = {c.condition: c for c in m.columns}
            cols = [
                [by_cond[self.grid.condition_keys[int(a)]], by_cond[self.grid.condition_keys[int(b)]]]
                for a, b in zip(result.i, result.j, strict=True)
            ]
            self._pairwise[route] = (result, cols)
        return self._pairwise[route]
