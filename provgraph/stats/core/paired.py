"""Matched binary outcomes: Cochran's Q, all pairwise McNemar tests, multiplicity adjustment,
and the cohort routes that decide which rows enter them.

Everything is vectorised: an ``n x k`` 0/1 matrix (``n`` keyed blocks, ``k`` conditions) is
reduced to column totals, row totals and the ``k x k`` Gram matrix ``Y'Y`` (BLAS products over
blocks of rows); every pairwise discordant count follows from those. Formulas follow the audit's section 3.4:

* Cochran's Q = (k-1) (k sum_j C_j^2 - T^2) / (k T - sum_i R_i^2), chi-square with k-1 df;
* McNemar for a pair: b = blocks correct only in the first condition, c = only in the second;
  asymptotic (b-c)^2/(b+c), continuity-corrected (|b-c|-1)^2/(b+c) (the Edwards correction as
  R's ``mcnemar.test`` and statsmodels apply it), exact two-sided binomial
  min(1, 2 P(X <= min(b, c))), and mid-p 2 P(X <= min(b, c)) - P(X = min(b, c)) with
  X ~ Binomial(b + c, 1/2). With no discordant block every variant gives statistic 0, p = 1.

Missing cells are ``NaN`` in a float matrix; the cohort routes turn such a matrix into the
rows (or, for the historical positional route, the row positions) each test uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import stats

VARIANTS = ("asymptotic", "continuity-corrected", "exact", "mid-p")
ADJUSTMENTS = ("holm", "bonferroni", "bh")
COHORT_RULES = ("globally-complete", "pairwise-available", "positional-truncation")


@dataclass(frozen=True)
class CochranQ:
    q: float
    df: int
    p: float
    n: int
    k: int


def cochran_q(y: np.ndarray) -> CochranQ:
    """Cochran's Q of an ``n x k`` 0/1 matrix (no missing cells).

    Q is NaN (and so is p) when every row is constant: the statistic is then undefined.

    >>> r = cochran_q(np.array([[1, 0], [1, 0], [1, 1], [0, 0]]))
    >>> (float(r.q), r.df)
    (2.0, 1)
    """
    y = np.asarray(y)
    n, k = y.shape
    col = y.sum(axis=0, dtype=np.int64).astype(np.float64)
    row = y.sum(axis=1, dtype=np.int64).astype(np.float64)
    total = col.sum()
    numerator = (k - 1) * (k * float(col @ col) - total * total)
    denominator = k * total - float(row @ row)
    if denominator <= 0:
        return CochranQ(float("nan"), k - 1, float("nan"), n, k)
    q = numerator / denominator
    return CochranQ(q, k - 1, float(stats.chi2.sf(q, k - 1)), n, k)


def pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices (i, j), i < j, of all k(k-1)/2 pairs in row-major order."""
    return np.triu_indices(k, 1)


#: rows per matrix product: the float copies a product needs are this many rows by k columns,
#: not the whole matrix (1.4 M blocks x 10 conditions at 10^6 calls: 109 MB per copy)
ROWS_PER_PRODUCT = 1 << 16


def discordant_all_pairs(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, b, c)`` for every pair of columns of a complete 0/1 matrix.

    ``b`` counts rows correct in column i only, ``c`` rows correct in column j only. One
    matrix product gives every pair: b_ij = C_i - (Y'Y)_ij.
    """
    y = np.asarray(y)
    gram = np.zeros((y.shape[1], y.shape[1]))
    for start in range(0, y.shape[0], ROWS_PER_PRODUCT):
        # float64 BLAS is exact for integer counts below 2**53
        yf = y[start : start + ROWS_PER_PRODUCT].astype(np.float64)
        gram += yf.T @ yf
    col = np.diag(gram)
    i, j = pair_index(y.shape[1])
    b = col[i] - gram[i, j]
    c = col[j] - gram[i, j]
    return i, j, np.rint(b).astype(np.int64), np.rint(c).astype(np.int64)


def mcnemar(b: np.ndarray, c: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """McNemar statistic and p-value per variant for arrays of discordant counts.

    Returns ``{variant: (statistic, p)}``; the exact and mid-p statistic is min(b, c).
    """
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    d = b + c
    none = d == 0
    safe = np.where(none, 1, d).astype(np.float64)
    diff = np.abs(b - c).astype(np.float64)
    asym = np.where(none, 0.0, diff**2 / safe)
    corrected = np.where(none, 0.0, (diff - 1.0) ** 2 / safe)
    low = np.minimum(b, c)
    cdf = stats.binom.cdf(low, d, 0.5)
    pmf = stats.binom.pmf(low, d, 0.5)
    return {
        "asymptotic": (asym, np.where(none, 1.0, stats.chi2.sf(asym, 1))),
        "continuity-corrected": (corrected, np.where(none, 1.0, stats.chi2.sf(corrected, 1))),
        "exact": (low.astype(np.float64), np.minimum(1.0, 2.0 * cdf)),
        "mid-p": (low.astype(np.float64), np.clip(2.0 * cdf - pmf, 0.0, 1.0)),
    }


def adjust(p: np.ndarray, method: str) -> np.ndarray:
    """Multiplicity-adjusted p-values over one family (Holm, Bonferroni, Benjamini-Hochberg).

    >>> adjust(np.array([0.01, 0.04, 0.03]), "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    if m == 0:
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adjusted = np.maximum.accumulate(ranked * (m - np.arange(m)))
    elif method == "bh":
        adjusted = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(f"unknown adjustment {method!r} (one of {', '.join(ADJUSTMENTS)})")
    out = np.empty(m)
    out[order] = np.minimum(1.0, adjusted)
    return out


# --- cohort routes ---------------------------------------------------------------------------


def complete_rows(values: np.ndarray) -> np.ndarray:
    """Indices of rows with a value in every column (the globally complete cohort)."""
    return np.flatnonzero(~np.isnan(values).any(axis=1))


def pair_rows(values: np.ndarray, i: int, j: int) -> np.ndarray:
    """Indices of rows with a value in both columns i and j (the pairwise-available cohort)."""
    return np.flatnonzero(~np.isnan(values[:, i]) & ~np.isnan(values[:, j]))


def positional_truncation(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The historical route: drop missing cells per column, then cut every column to the
    shortest length and pair by position.

    Returns ``(y, rows)`` where ``y`` is the ``n_min x k`` matrix and ``rows[:, j]`` the
    original row each position of column j came from. After the first asymmetric gap the
    rows of one position differ between columns: that is the defect this route reproduces.
    """
    kept = [np.flatnonzero(~np.isnan(values[:, j])) for j in range(values.shape[1])]
    n_min = min((len(r) for r in kept), default=0)
    rows = np.stack([r[:n_min] for r in kept], axis=1) if kept else np.empty((0, 0), np.int64)
    y = np.take_along_axis(values, rows, axis=0) if n_min else np.empty((0, values.shape[1]))
    return y.astype(np.int8), rows


def mispaired_positions(rows: np.ndarray) -> int:
    """How many positions of a positional route compare different rows across columns."""
    if rows.size == 0:
        return 0
    return int((rows != rows[:, :1]).any(axis=1).sum())


@dataclass(frozen=True)
class PairwiseResult:
    """All pairwise McNemar tests of one cohort, in pair order."""

    i: np.ndarray
    j: np.ndarray
    b: np.ndarray
    c: np.ndarray
    n: np.ndarray
    variants: dict[str, tuple[np.ndarray, np.ndarray]]


def pairwise_complete(y: np.ndarray) -> PairwiseResult:
    """McNemar for every pair of a complete matrix (all pairs share the matrix's rows)."""
    i, j, b, c = discordant_all_pairs(y)
    n = np.full(i.size, y.shape[0], dtype=np.int64)
    return PairwiseResult(i, j, b, c, n, mcnemar(b, c))


def pairwise_available(values: np.ndarray) -> tuple[PairwiseResult, Iterator[np.ndarray]]:
    """McNemar for every pair on the rows both conditions have (a denominator per pair), and
    each pair's rows in pair order (made one at a time as they are taken: at 10^6 calls the 45
    pairs' rows held at once were 0.5 GB)."""
    k = values.shape[1]
    i, j = pair_index(k)
    # Counts restricted to rows defined in both columns, for all pairs at once:
    # only_in[a, b] = rows where column a is 1 and column b is 0, both defined.
    only_in, both_in = np.zeros((k, k)), np.zeros((k, k))
    for start in range(0, values.shape[0], ROWS_PER_PRODUCT):
        chunk = values[start : start + ROWS_PER_PRODUCT]
        defined = ~np.isnan(chunk)
        y = np.where(defined, chunk, 0.0)
        both = defined.astype(np.float64)
        only_in += y.T @ ((1.0 - y) * both)
        both_in += both.T @ both
    n = np.rint(both_in[i, j]).astype(np.int64)
    b = np.rint(only_in[i, j]).astype(np.int64)
    c = np.rint(only_in[j, i]).astype(np.int64)
    rows = (pair_rows(values, int(a), int(bb)) for a, bb in zip(i, j, strict=True))
    return PairwiseResult(i, j, b, c, n, mcnemar(b, c)), rows
