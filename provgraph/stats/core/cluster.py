"""Cluster-aware inference for matched binary outcomes, and the seeded cluster bootstrap.

Findings are nested in studies and studies in patients, so the rows of a keyed matrix are not
independent (the audit's section 6.8). Three tools, all vectorised:

* :func:`clustered_mcnemar`: Durkalski et al. (2003), X^2 = (B - C)^2 / sum_g (b_g - c_g)^2,
  chi-square with 1 df. With one row per cluster it is the asymptotic McNemar statistic.
  For every pair at once: with S the ``G x k`` matrix of per-cluster column totals,
  b_g - c_g = S_gi - S_gj, so the denominator is G_ii + G_jj - 2 G_ij of the Gram matrix S'S.
* :func:`clustered_cochran`: a cluster-robust score test of marginal homogeneity. Each
  cluster contributes its row-centred totals u_g = S_g - (R_g / k) 1; the statistic is
  u' V^+ u with u = sum_g u_g and V = sum_g u_g u_g' (chi-square, k - 1 df). For k = 2 it is
  exactly :func:`clustered_mcnemar` (and McNemar with singleton clusters).
* :func:`cluster_bootstrap_ratios`: percentile intervals of ratio statistics
  (sum of successes / sum of trials) by resampling whole clusters with replacement.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from scipy import stats

from provgraph.stats.core.paired import pair_index

#: Above this many distinct cluster profiles the bootstrap draws cluster indices instead of
#: multinomial counts over profiles (both resample clusters with replacement).
MAX_PROFILES = 4096


def cluster_sums(y: np.ndarray, cluster: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster column totals ``S`` (G x k) and cluster sizes, for integer cluster codes."""
    codes, inverse = np.unique(cluster, return_inverse=True)
    g = codes.size
    sums = np.zeros((g, y.shape[1]), dtype=np.float64)
    np.add.at(sums, inverse, y)
    sizes = np.bincount(inverse, minlength=g)
    return sums, sizes


def clustered_mcnemar(y: np.ndarray, cluster: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Durkalski's clustered McNemar statistic and p-value for every pair of columns.

    Returns ``(statistic, p, clusters)`` in :func:`~provgraph.stats.core.paired.pair_index` order;
    ``clusters`` is the number of clusters (the same for every pair).
    """
    sums, _ = cluster_sums(y, cluster)
    gram = sums.T @ sums
    col = sums.sum(axis=0)
    i, j = pair_index(y.shape[1])
    denominator = gram[i, i] + gram[j, j] - 2.0 * gram[i, j]
    numerator = (col[i] - col[j]) ** 2
    none = denominator <= 0
    stat = np.where(none, 0.0, numerator / np.where(none, 1.0, denominator))
    p = np.where(none, 1.0, stats.chi2.sf(stat, 1))
    return stat, p, np.full(i.size, sums.shape[0])


@dataclass(frozen=True)
class ClusteredQ:
    statistic: float
    df: int
    p: float
    clusters: int


def clustered_cochran(y: np.ndarray, cluster: np.ndarray) -> ClusteredQ:
    """Cluster-robust score test that all k conditions have the same proportion correct."""
    sums, _ = cluster_sums(y, cluster)
    k = y.shape[1]
    centred = sums - sums.sum(axis=1, keepdims=True) / k
    u = centred.sum(axis=0)
    v = centred.T @ centred
    if not np.any(v):
        return ClusteredQ(float("nan"), k - 1, float("nan"), sums.shape[0])
    statistic = float(u @ np.linalg.pinv(v, rcond=1e-10, hermitian=True) @ u)
    df = int(np.linalg.matrix_rank(v, tol=1e-10 * np.abs(v).max(), hermitian=True))
    return ClusteredQ(statistic, df, float(stats.chi2.sf(statistic, df)) if df else 1.0, sums.shape[0])


# --- cluster bootstrap ----------------------------------------------------------------------


def seed_for(seed: int, *key: object) -> np.random.SeedSequence:
    """A seed sequence for one statistic: the contract's seed and the statistic's own key, so
    an interval does not depend on which other statistics were computed before it."""
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode()).digest()
    return np.random.SeedSequence([seed, int.from_bytes(digest[:8], "big")])


#: Row keys whose span is at most this (or at most the number of rows) are counted by
#: ``np.bincount`` instead of sorting.
BINCOUNT_SPAN = 1 << 20
_KEY_LIMIT = 1 << 62  # a row key stays below this (int64 with room for one more digit step)


def profile_counts(profiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``profiles`` in lexicographic order and how often each occurs:
    exactly ``np.unique(profiles, axis=0, return_counts=True)``, on one integer key per row.

    Sorting whole rows (a structured sort, field by field) was 90% of a bootstrap over 10^6
    clusters. Per-cluster totals are small whole numbers, so each row is one mixed-radix
    integer whose order is the rows' lexicographic order; distinct keys are counted (or sorted,
    when their span is large) in one dimension. Rows that are not all finite non-negative
    whole numbers below 2**53 (or an empty shape, or a -0.0 whose representative np.unique
    picks by its sort) take np.unique's own path, so the result never differs from it.
    """
    keyed = _row_keys(profiles)
    if keyed is None:
        return np.unique(profiles, axis=0, return_counts=True)
    key, radices, span = keyed
    if radices is not None and span <= max(BINCOUNT_SPAN, key.size):
        counts = np.bincount(key, minlength=span)
        distinct = np.flatnonzero(counts)
        return _decode(distinct, radices), counts[distinct]
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    return profiles[first], counts


def _row_keys(profiles: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, int] | None:
    """Order-preserving int64 keys of the rows, their radices (None when the key had to be
    renumbered to stay in int64) and the keys' span; None when the rows cannot be keyed."""
    if profiles.ndim != 2 or profiles.shape[0] == 0 or profiles.shape[1] == 0:
        return None
    if not np.isfinite(profiles).all() or np.signbit(profiles).any() or profiles.max() >= 2.0**53:
        return None
    whole = profiles.astype(np.int64)
    if not np.array_equal(whole, profiles):
        return None
    radices = whole.max(axis=0) + 1
    key = np.zeros(profiles.shape[0], dtype=np.int64)
    span, renumbered = 1, False
    for c in range(whole.shape[1]):
        radix = int(radices[c])
        if span * radix >= _KEY_LIMIT:
            # dense ranks of the key so far keep its order and bound its span by the rows
            _, key = np.unique(key, return_inverse=True)
            span, renumbered = int(key.max()) + 1, True
            if span * radix >= _KEY_LIMIT:
                return None
        key = key * radix + whole[:, c]
        span *= radix
    return key, None if renumbered else radices, span


def _decode(keys: np.ndarray, radices: np.ndarray) -> np.ndarray:
    """Rows (float64) of mixed-radix ``keys``: the inverse of :func:`_row_keys`."""
    rows = np.empty((keys.size, radices.size), dtype=np.float64)
    rest = keys.copy()
    for c in range(radices.size - 1, -1, -1):
        rest, digit = np.divmod(rest, radices[c])
        rows[:, c] = digit
    return rows


@dataclass(frozen=True)
class BootstrapResult:
    estimate: np.ndarray  # observed ratio per column
    low: np.ndarray
    high: np.ndarray
    resamples: int
    clusters: int
    method: str  # "profiles" or "indices"


def cluster_bootstrap_ratios(
    successes: np.ndarray,
    trials: np.ndarray,
    resamples: int,
    seed: np.random.SeedSequence | int,
    level: float = 0.95,
    method: str = "auto",
    chunk: int = 64,
) -> BootstrapResult:
    """Percentile CIs of ratio statistics sum(successes) / sum(trials), resampling clusters.

    ``successes`` and ``trials`` are ``G x m`` per-cluster totals (one column per statistic,
    e.g. per condition). A resample draws G clusters with replacement; a resample whose
    trials sum to zero gives NaN and is left out of the interval.

    Clusters with the same totals are interchangeable, so resampling G clusters equals drawing
    the count of each distinct *profile* from Multinomial(G, m_t / G). When the profiles are
    few (the usual case: a handful of findings or scripts per cluster) that is O(resamples x
    profiles) instead of O(resamples x G); otherwise cluster indices are drawn in chunks.
    """
    successes = np.asarray(successes, dtype=np.float64)
    trials = np.asarray(trials, dtype=np.float64)
    if successes.ndim == 1:
        successes, trials = successes[:, None], trials[:, None]
    if successes.shape != trials.shape:
        raise ValueError("successes and trials must have the same shape")
    g = successes.shape[0]
    rng = np.random.default_rng(seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = successes.sum(axis=0) / trials.sum(axis=0)
    profiles = np.concatenate([successes, trials], axis=1)
    unique, counts = profile_counts(profiles)
    if method == "auto":
        method = "profiles" if unique.shape[0] <= MAX_PROFILES else "indices"
    m = successes.shape[1]
    if method == "profiles":
        draws = rng.multinomial(g, counts / g, size=resamples).astype(np.float64)
        totals = draws @ unique
        num, den = totals[:, :m], totals[:, m:]
    elif method == "indices":
        num = np.empty((resamples, m))
        den = np.empty((resamples, m))
        # Whole counts are packed as successes * 2**32 + trials, so one gather sums both.
        packable = (
            np.all(successes >= 0)
            and np.all(trials >= 0)
            and np.all(successes == np.rint(successes))
            and np.all(trials == np.rint(trials))
            and float(g) * max(float(successes.max(initial=0)), float(trials.max(initial=0))) < 2**31
        )
        dtype = np.int64 if g > 2**31 - 1 else np.int32
        for start in range(0, resamples, chunk):
            size = min(chunk, resamples - start)
            idx = rng.integers(0, g, size=(size, g), dtype=dtype)
            for j in range(m):
                if packable:
                    packed = successes[:, j].astype(np.int64) << 32 | trials[:, j].astype(np.int64)
                    total = np.take(packed, idx).sum(axis=1)
                    num[start : start + size, j] = total >> 32
                    den[start : start + size, j] = total & 0xFFFFFFFF
                else:
                    num[start : start + size, j] = np.take(successes[:, j], idx).sum(axis=1)
                    den[start : start + size, j] = np.take(trials[:, j], idx).sum(axis=1)
    else:
        raise ValueError(f"unknown bootstrap method {method!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = num / den
    alpha = (1.0 - level) / 2.0
    low = np.nanquantile(ratios, alpha, axis=0) if resamples else np.full(m, np.nan)
    high = np.nanquantile(ratios, 1.0 - alpha, axis=0) if resamples else np.full(m, np.nan)
    return BootstrapResult(estimate, low, high, resamples, g, method)
