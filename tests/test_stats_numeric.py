"""The numerical core against statsmodels and scipy (property tests on random matrices) and
against small cases worked out by hand."""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as sps
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
from statsmodels.stats.multitest import multipletests

from provgraph.stats.core import cluster, paired, verdicts

binary = st.integers(2, 6).flatmap(
    lambda k: st.integers(1, 60).flatmap(lambda n: arrays(np.int8, (n, k), elements=st.integers(0, 1)))
)


def table(y: np.ndarray, a: int, b: int) -> np.ndarray:
    x, z = y[:, a], y[:, b]
    return np.array(
        [
            [((x == 1) & (z == 1)).sum(), ((x == 1) & (z == 0)).sum()],
            [((x == 0) & (z == 1)).sum(), ((x == 0) & (z == 0)).sum()],
        ]
    )


@settings(max_examples=60, deadline=None)
@given(binary)
def test_cochran_q_matches_statsmodels(y: np.ndarray) -> None:
    ours = paired.cochran_q(y)
    row = y.sum(axis=1)
    if np.all((row == 0) | (row == y.shape[1])):  # every row constant: Q is undefined
        assert np.isnan(ours.q) and np.isnan(ours.p)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = cochrans_q(y)
    assert ours.q == pytest.approx(ref.statistic, rel=1e-12, abs=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert ours.df == ref.df == y.shape[1] - 1


@settings(max_examples=60, deadline=None)
@given(binary)
def test_all_pairwise_mcnemar_match_statsmodels(y: np.ndarray) -> None:
    result = paired.pairwise_complete(y)
    for p, (a, b) in enumerate(combinations(range(y.shape[1]), 2)):
        assert (int(result.i[p]), int(result.j[p])) == (a, b)
        t = table(y, a, b)
        assert (result.b[p], result.c[p], result.n[p]) == (t[0, 1], t[1, 0], len(y))
        exact = mcnemar(t, exact=True)
        assert result.variants["exact"][1][p] == pytest.approx(exact.pvalue, rel=1e-12)
        assert result.variants["exact"][0][p] == exact.statistic
        if t[0, 1] + t[1, 0] == 0:  # statsmodels divides by zero; no discordant pair means p = 1
            assert all(result.variants[v][1][p] == 1.0 for v in paired.VARIANTS)
            continue
        for variant, correction in (("asymptotic", False), ("continuity-corrected", True)):
            ref = mcnemar(t, exact=False, correction=correction)
            stat, pv = result.variants[variant]
            assert stat[p] == pytest.approx(ref.statistic, rel=1e-12)
            assert pv[p] == pytest.approx(ref.pvalue, rel=1e-12)
        # mid-p from scipy's binomial distribution, summed independently
        low, d = min(t[0, 1], t[1, 0]), t[0, 1] + t[1, 0]
        midp = min(1.0, 2 * sum(sps.binom.pmf(i, d, 0.5) for i in range(low)) + sps.binom.pmf(low, d, 0.5))
        assert result.variants["mid-p"][1][p] == pytest.approx(midp, rel=1e-9)


@settings(max_examples=25, deadline=None)  # statsmodels' holm takes ~30 ms a call
@given(st.lists(st.floats(0, 1), min_size=1, max_size=50))
def test_adjustments_match_statsmodels(values: list[float]) -> None:
    p = np.array(values)
    for ours, theirs in (("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")):
        assert paired.adjust(p, ours) == pytest.approx(
            multipletests(p, method=theirs)[1], rel=1e-12, abs=1e-15
        )


@settings(max_examples=40, deadline=None)
@given(binary, st.data())
def test_pairwise_available_equals_per_pair_deletion(y: np.ndarray, data) -> None:
    values = y.astype(float)
    holes = data.draw(arrays(np.bool_, y.shape))
    values[holes] = np.nan
    result, lazy = paired.pairwise_available(values)
    rows = list(lazy)
    for p, (a, b) in enumerate(combinations(range(y.shape[1]), 2)):
        keep = ~np.isnan(values[:, a]) & ~np.isnan(values[:, b])
        t = table(y[keep], a, b)
        assert (result.b[p], result.c[p], result.n[p]) == (t[0, 1], t[1, 0], keep.sum())
        assert rows[p].tolist() == np.flatnonzero(keep).tolist()


@pytest.mark.parametrize("rows_per_product", [1, 7, 1000])
def test_products_over_blocks_of_rows_count_what_one_product_counts(monkeypatch, rows_per_product) -> None:
    """The Gram products summed over blocks of rows (bounded memory) give every pair's counts,
    blocks ending inside, at and past the matrix's last row."""
    rng = np.random.default_rng(rows_per_product)
    y = rng.integers(0, 2, size=(400, 5)).astype(np.int8)
    values = y.astype(float)
    values[rng.random(y.shape) < 0.2] = np.nan
    monkeypatch.setattr(paired, "ROWS_PER_PRODUCT", rows_per_product)
    i, j, b, c = paired.discordant_all_pairs(y)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == list(combinations(range(5), 2))
    result, lazy = paired.pairwise_available(values)
    for p, (a, bb) in enumerate(combinations(range(5), 2)):
        assert (b[p], c[p]) == (table(y, a, bb)[0, 1], table(y, a, bb)[1, 0])
        keep = ~np.isnan(values[:, a]) & ~np.isnan(values[:, bb])
        t = table(y[keep], a, bb)
        assert (result.b[p], result.c[p], result.n[p]) == (t[0, 1], t[1, 0], keep.sum())
    assert [r.tolist() for r in lazy] == [
        np.flatnonzero(~np.isnan(values[:, a]) & ~np.isnan(values[:, bb])).tolist()
        for a, bb in combinations(range(5), 2)
    ]


def test_mcnemar_by_hand() -> None:
    # b = 10, c = 2: (b-c)^2/(b+c) = 64/12; (|b-c|-1)^2/(b+c) = 49/12;
    # exact = 2 P(X <= 2), X ~ Bin(12, 1/2) = 2 (1 + 12 + 66) / 4096; mid-p subtracts P(X = 2) = 66/4096
    v = paired.mcnemar(np.array([10]), np.array([2]))
    assert v["asymptotic"][0][0] == pytest.approx(64 / 12)
    assert v["continuity-corrected"][0][0] == pytest.approx(49 / 12)
    assert v["exact"][1][0] == pytest.approx(158 / 4096)
    assert v["mid-p"][1][0] == pytest.approx(92 / 4096)
    # b = c: exact and mid-p are 1
    v = paired.mcnemar(np.array([3]), np.array([3]))
    assert v["exact"][1][0] == 1.0 and v["mid-p"][1][0] == pytest.approx(1.0)


def test_cochran_q_by_hand() -> None:
    # k = 3, rows (1,1,0) (1,0,0) (1,1,1) (0,0,0) (1,0,1): C = (4, 2, 2), T = 8, sum R^2 = 4+1+9+0+4 = 18
    # Q = 2 (3 (16+4+4) - 64) / (3*8 - 18) = 2 * 8 / 6 = 8/3
    y = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 1]])
    q = paired.cochran_q(y)
    assert q.q == pytest.approx(8 / 3)
    assert q.p == pytest.approx(np.exp(-4 / 3))  # chi-square(2) survival is exp(-x/2)


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 x (3, 2, 1) = 0.03, 0.06, 0.04 -> running max 0.03, 0.06, 0.06
    assert paired.adjust(np.array([0.04, 0.01, 0.03]), "holm").tolist() == pytest.approx([0.06, 0.03, 0.06])


def test_positional_route_differs_from_keyed_after_one_asymmetric_gap() -> None:
    # Condition B lacks block 2. Positional truncation drops it from B only and pairs B's block 3
    # with A's block 2, and so on: every position from the gap onwards compares different blocks.
    a = [1, 1, 0, 1, 0, 0]
    b = [0, np.nan, 1, 1, 0, 1]
    values = np.array([a, b], dtype=float).T
    keyed = paired.complete_rows(values)
    assert keyed.tolist() == [0, 2, 3, 4, 5]
    y_pos, rows = paired.positional_truncation(values)
    assert rows.tolist() == [[0, 0], [1, 2], [2, 3], [3, 4], [4, 5]]
    assert paired.mispaired_positions(rows) == 4
    keyed_pairs = paired.pairwise_complete(values[keyed].astype(int))
    pos_pairs = paired.pairwise_complete(y_pos)
    # keyed: A=(1,0,1,0,0), B=(0,1,1,0,1): b = 1 (block 0), c = 2 (blocks 2, 5)
    assert (keyed_pairs.b[0], keyed_pairs.c[0]) == (1, 2)
    # positional: A=(1,1,0,1,0), B=(0,1,1,0,1): b = 2, c = 2
    assert (pos_pairs.b[0], pos_pairs.c[0]) == (2, 2)
    assert keyed_pairs.variants["asymptotic"][0][0] == pytest.approx(1 / 3)
    assert pos_pairs.variants["asymptotic"][0][0] == 0.0


def test_positional_route_equals_keyed_without_gaps() -> None:
    y = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 0]], dtype=float)
    y_pos, rows = paired.positional_truncation(y)
    assert paired.mispaired_positions(rows) == 0
    assert paired.cochran_q(y_pos).q == paired.cochran_q(y.astype(int)).q


# --- cluster-aware inference ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(binary)
def test_clustered_tests_reduce_to_mcnemar_with_singleton_clusters(y: np.ndarray) -> None:
    singletons = np.arange(len(y))
    stat, p, g = cluster.clustered_mcnemar(y, singletons)
    plain = paired.pairwise_complete(y).variants["asymptotic"]
    assert stat == pytest.approx(plain[0]) and p == pytest.approx(plain[1])
    assert (g == len(y)).all()
    q2 = cluster.clustered_cochran(y[:, :2], singletons)
    if plain[0][0] > 0:
        assert q2.statistic == pytest.approx(plain[0][0]) and q2.df == 1


@settings(max_examples=40, deadline=None)
@given(binary, st.integers(1, 8), st.randoms(use_true_random=False))
def test_clustered_cochran_with_two_conditions_is_durkalski(y: np.ndarray, groups: int, rnd) -> None:
    codes = np.array([rnd.randrange(groups) for _ in range(len(y))])
    stat, _, _ = cluster.clustered_mcnemar(y[:, :2], codes)
    q = cluster.clustered_cochran(y[:, :2], codes)
    if stat[0] > 0:
        assert q.statistic == pytest.approx(stat[0], rel=1e-9)


def test_durkalski_by_hand() -> None:
    # clusters g1: rows (1,0) (1,0) -> b-c = 2; g2: (0,1) -> -1; g3: (1,0) (1,1) -> 1
    # B - C = 3 - 1 = 2; sum (b_g - c_g)^2 = 4 + 1 + 1 = 6; X^2 = 4/6
    y = np.array([[1, 0], [1, 0], [0, 1], [1, 0], [1, 1]])
    stat, p, g = cluster.clustered_mcnemar(y, np.array([0, 0, 1, 2, 2]))
    assert stat[0] == pytest.approx(4 / 6) and g[0] == 3
    assert p[0] == pytest.approx(sps.chi2.sf(4 / 6, 1))


def test_cluster_bootstrap_is_seeded_and_both_samplers_agree() -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 5, size=300)
    successes = rng.binomial(sizes, 0.7)
    a = cluster.cluster_bootstrap_ratios(successes, sizes, 4000, 11)
    b = cluster.cluster_bootstrap_ratios(successes, sizes, 4000, 11)
    assert a.low.tolist() == b.low.tolist() and a.method == "profiles"
    c = cluster.cluster_bootstrap_ratios(successes, sizes, 4000, 11, method="indices")
    assert a.estimate == pytest.approx(successes.sum() / sizes.sum())
    assert a.low[0] < a.estimate[0] < a.high[0]
    # two exact samplers of the same bootstrap distribution: intervals agree to Monte Carlo error
    assert c.low[0] == pytest.approx(a.low[0], abs=0.01) and c.high[0] == pytest.approx(a.high[0], abs=0.01)
    # the resampling unit is the cluster: a large-cluster design gives a wider interval than
    # the same successes spread over singletons
    flat = cluster.cluster_bootstrap_ratios(
        np.repeat([1, 0], [successes.sum(), sizes.sum() - successes.sum()]), np.ones(sizes.sum()), 4000, 11
    )
    assert (a.high - a.low)[0] > 0 and (flat.high - flat.low)[0] > 0


def test_cluster_bootstrap_of_constant_data_is_degenerate() -> None:
    r = cluster.cluster_bootstrap_ratios(np.full(10, 2.0), np.full(10, 2.0), 500, 0)
    assert r.low[0] == r.high[0] == 1.0


# --- reviewer metrics -------------------------------------------------------------------------


def test_reviewer_metrics_by_hand() -> None:
    # 2 categories x (3 flawed + 3 sound); category 0: 2/3 flawed flagged, 1 sound flagged;
    # category 1: 1/3 flawed flagged (one call failed), 0 sound flagged
    flawed = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0], dtype=bool)
    category = np.array([0] * 6 + [1] * 6)
    verdict = np.array([1, 1, 0, 1, 0, 0, 1, -1, 0, 0, 0, 0])
    c = verdicts.confusion(verdict, flawed)
    assert (c.tp, c.fn, c.fp, c.tn, c.missing) == (3, 2, 1, 5, 1)
    m = verdicts.metrics(c)
    assert m["detection_rate"] == (3 / 5, 5)
    assert m["false_positive_rate"] == (1 / 6, 6)
    assert m["precision"] == (3 / 4, 4)
    assert m["f1"][0] == pytest.approx(2 * 0.75 * 0.6 / (0.75 + 0.6))
    assert verdicts.category_detection(verdict, flawed, category).tolist() == [1, 0]
    s = verdicts.summarise(verdict, flawed, category, 1000, 3)
    assert s.values["category_detection_rate"] == (0.5, 2)
    assert s.ci is not None and s.ci.clusters == 2


def test_majority_vote_and_agreement() -> None:
    script = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    verdict = np.array([1, 1, 0, 0, 0, 0, 1, 0])
    votes = verdicts.majority_vote(script, verdict, 3)
    assert votes.fail_votes.tolist() == [2, 0, 1]
    assert votes.majority.tolist() == [verdicts.FAIL, verdicts.PASS, verdicts.NONE]
    assert votes.agreement.tolist() == pytest.approx([2 / 3, 1.0, 0.5])


def test_accuracy_by_confidence_tier() -> None:
    flawed = np.array([1, 0, 0, 1], dtype=bool)
    verdict = np.array([1, 1, 0, -1])
    tiers = np.array(["HIGH", "HIGH", "LOW", "LOW"], dtype=object)
    assert verdicts.accuracy_by_tier(verdict, flawed, tiers) == {"HIGH": (2, 1, 1), "LOW": (1, 1, 0)}
