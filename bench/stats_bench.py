"""Speed of the recomputation core, with baselines measured in the same run.

    .venv/bin/python bench/stats_bench.py            # full sizes (about a minute)
    .venv/bin/python bench/stats_bench.py --quick    # 1/10 sizes

1. Cochran's Q + all 45 pairwise McNemar tests in 4 variants + Holm per variant on
   1,000,000 keyed blocks x 10 conditions (target < 2 s). Baseline: statsmodels in a loop
   (``cochrans_q`` once, then per pair a 2x2 table and ``mcnemar`` exact / chi-square with and
   without correction, scipy for mid-p, ``multipletests`` for Holm).
2. A 10,000-resample cluster bootstrap over 100,000 clusters (target < 10 s), with both of
   provgraph's samplers (multinomial counts over cluster profiles, chunked cluster indices).
   Baseline: a pure-Python loop (``random.choices`` over clusters per resample), timed on a few
   resamples and scaled linearly to 10,000 (the loop cost is linear in the resamples).
3. The same bootstrap over 1,000,000 clusters (issue 21's target <= 0.5 s), against the profile
   sampler as it was before the 1-D key (``np.unique(profiles, axis=0)``, written out here):
   the two must give bit-identical intervals; the profile count alone is timed both ways too.

The machine's load average is printed before and after: other processes share the cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from itertools import combinations

import numpy as np


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def paired_provgraph(y: np.ndarray) -> tuple:
    from provgraph.stats.core import paired

    q = paired.cochran_q(y)
    result = paired.pairwise_complete(y)
    holm = {v: paired.adjust(p, "holm") for v, (_, p) in result.variants.items()}
    return q, result, holm


def paired_statsmodels(y: np.ndarray) -> tuple:
    from scipy import stats
    from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
    from statsmodels.stats.multitest import multipletests

    q = cochrans_q(y)
    pvals: dict[str, list[float]] = {v: [] for v in ("asymptotic", "continuity-corrected", "exact", "mid-p")}
    yb = y.astype(bool)
    for a, b in combinations(range(y.shape[1]), 2):
        x, z = yb[:, a], yb[:, b]
        n11, n10, n01 = int((x & z).sum()), int((x & ~z).sum()), int((~x & z).sum())
        table = np.array([[n11, n10], [n01, len(x) - n11 - n10 - n01]])
        pvals["exact"].append(mcnemar(table, exact=True).pvalue)
        pvals["asymptotic"].append(mcnemar(table, exact=False, correction=False).pvalue)
        pvals["continuity-corrected"].append(mcnemar(table, exact=False, correction=True).pvalue)
        low, d = min(n10, n01), n10 + n01
        pvals["mid-p"].append(min(1.0, 2 * stats.binom.cdf(low, d, 0.5) - stats.binom.pmf(low, d, 0.5)))
    holm = {v: multipletests(p, method="holm")[1] for v, p in pvals.items()}
    return q, pvals, holm


def bootstrap_python(successes: list[int], trials: list[int], resamples: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    g = len(successes)
    out = []
    idx = range(g)
    for _ in range(resamples):
        s = t = 0
        for i in rng.choices(idx, k=g):
            s += successes[i]
            t += trials[i]
        out.append(s / t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes")
    parser.add_argument("--only-million", action="store_true", help="only [3], the 10^6-cluster bootstrap")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    n_blocks, k = 1_000_000 // scale, 10
    n_clusters, resamples = 100_000 // scale, 10_000
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    rng = np.random.default_rng(1)
    if args.only_million:
        _million(resamples, 1_000_000 // scale, rng)
        return
    y = (rng.random((n_blocks, k)) < rng.uniform(0.6, 0.9, size=k)).astype(np.int8)
    ours_s, (q, result, holm) = timed(lambda: paired_provgraph(y))
    base_s, (q_ref, p_ref, holm_ref) = timed(lambda: paired_statsmodels(y), repeat=1)
    assert abs(q.q - q_ref.statistic) <= 1e-9 * q.q
    for v in p_ref:
        assert np.allclose(result.variants[v][1], p_ref[v], rtol=1e-9, atol=1e-300)
        assert np.allclose(holm[v], holm_ref[v], rtol=1e-9, atol=1e-300)
    print(
        f"\n[1] Q + {len(result.b)} McNemar x 4 variants + Holm on {n_blocks:,} blocks x {k} conditions\n"
        f"    provgraph (vectorised)      {ours_s:8.3f} s   (median of 3)\n"
        f"    statsmodels in a loop       {base_s:8.3f} s   -> {base_s / ours_s:.1f}x faster; same values"
    )

    sizes = rng.integers(1, 15, size=n_clusters)  # e.g. up to 14 findings per study
    successes = rng.binomial(sizes, 0.72)
    prof_s, prof = timed(lambda: _boot(successes, sizes, resamples, "profiles"))
    idx_s, idx = timed(lambda: _boot(successes, sizes, resamples, "indices"), repeat=1)
    probe = 20 if not args.quick else 100
    t0 = time.perf_counter()
    bootstrap_python(successes.tolist(), sizes.tolist(), probe, 1)
    py_s = (time.perf_counter() - t0) * resamples / probe
    print(
        f"\n[2] cluster bootstrap, {resamples:,} resamples over {n_clusters:,} clusters "
        f"({prof.clusters:,} clusters, CI {prof.low[0]:.4f}..{prof.high[0]:.4f})\n"
        f"    provgraph, profile counts   {prof_s:8.3f} s   (median of 3)\n"
        f"    provgraph, cluster indices  {idx_s:8.3f} s   (CI {idx.low[0]:.4f}..{idx.high[0]:.4f})\n"
        f"    pure-Python loop            {py_s:8.1f} s   (timed on {probe} resamples, scaled)"
        f" -> {py_s / prof_s:,.0f}x / {py_s / idx_s:,.0f}x faster"
    )
    _million(resamples, 1_000_000 // scale, rng)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _rows_unique_bootstrap(successes, trials, resamples: int, seed: int):
    """The profile sampler before the 1-D key: whole rows sorted by ``np.unique(axis=0)``."""
    successes = np.asarray(successes, dtype=np.float64)[:, None]
    trials = np.asarray(trials, dtype=np.float64)[:, None]
    g = successes.shape[0]
    rng = np.random.default_rng(seed)
    unique, counts = np.unique(np.concatenate([successes, trials], axis=1), axis=0, return_counts=True)
    draws = rng.multinomial(g, counts / g, size=resamples).astype(np.float64)
    totals = draws @ unique
    ratios = totals[:, :1] / totals[:, 1:]
    return np.nanquantile(ratios, 0.025, axis=0), np.nanquantile(ratios, 0.975, axis=0)


def _million(resamples: int, n_clusters: int, rng) -> None:
    from provgraph.stats.core.cluster import profile_counts

    sizes = rng.integers(1, 15, size=n_clusters)
    successes = rng.binomial(sizes, 0.72)
    old_s, (low, high) = timed(lambda: _rows_unique_bootstrap(successes, sizes, resamples, 7))
    new_s, new = timed(lambda: _boot(successes, sizes, resamples, "auto"))
    assert new.method == "profiles"
    assert low.tobytes() == new.low.tobytes() and high.tobytes() == new.high.tobytes()
    profiles = np.stack([successes, sizes], axis=1).astype(np.float64)
    rows_s, _ = timed(lambda: np.unique(profiles, axis=0, return_counts=True))
    key_s, _ = timed(lambda: profile_counts(profiles))
    print(
        f"\n[3] cluster bootstrap, {resamples:,} resamples over {n_clusters:,} clusters "
        f"(CI {new.low[0]:.5f}..{new.high[0]:.5f}, bit-identical both ways)\n"
        f"    before: whole rows sorted   {old_s:8.3f} s   "
        f"(median of 3; np.unique(axis=0) alone {rows_s:.3f} s)\n"
        f"    now: one integer key / row  {new_s:8.3f} s   (profile count alone {key_s:.3f} s)"
        f" -> {old_s / new_s:.1f}x faster"
    )


def _boot(successes, sizes, resamples, method):
    from provgraph.stats.core.cluster import cluster_bootstrap_ratios

    return cluster_bootstrap_ratios(successes, sizes, resamples, 7, method=method)


if __name__ == "__main__":
    main()
