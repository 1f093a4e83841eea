"""The cluster bootstrap on a 1-D profile key (issue 21): the same profiles, draws and intervals
as sorting whole rows, and intervals checked against an independent bootstrap and an exact
small case."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from provgraph.stats.core import cluster


def _rows_unique_bootstrap(successes, trials, resamples: int, seed, level: float = 0.95):
    """The profile sampler as it was before the 1-D key: ``np.unique(profiles, axis=0)``.
    Returns (estimate, low, high, method) or, for the index sampler, only its method."""
    successes = np.asarray(successes, dtype=np.float64)
    trials = np.asarray(trials, dtype=np.float64)
    if successes.ndim == 1:
        successes, trials = successes[:, None], trials[:, None]
    g, m = successes.shape
    rng = np.random.default_rng(seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = successes.sum(axis=0) / trials.sum(axis=0)
    unique, counts = np.unique(np.concatenate([successes, trials], axis=1), axis=0, return_counts=True)
    if unique.shape[0] > cluster.MAX_PROFILES:
        return None, None, None, "indices"
    draws = rng.multinomial(g, counts / g, size=resamples).astype(np.float64)
    totals = draws @ unique
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = totals[:, :m] / totals[:, m:]
    alpha = (1.0 - level) / 2.0
    low = np.nanquantile(ratios, alpha, axis=0) if resamples else np.full(m, np.nan)
    high = np.nanquantile(ratios, 1.0 - alpha, axis=0) if resamples else np.full(m, np.nan)
    return estimate, low, high, "profiles"


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _assert_same_as_rows_unique(successes, trials, resamples: int, seed, level: float = 0.95) -> str:
    new = cluster.cluster_bootstrap_ratios(successes, trials, resamples, seed, level)
    estimate, low, high, method = _rows_unique_bootstrap(successes, trials, resamples, seed, level)
    assert new.method == method
    if method == "profiles":
        assert _same_bits(new.estimate, estimate)
        assert _same_bits(new.low, low) and _same_bits(new.high, high)
    return method


# --- the profiles: exactly np.unique(axis=0) ----------------------------------------------------

counts_matrix = st.integers(1, 6).flatmap(
    lambda w: st.integers(1, 80).flatmap(
        lambda n: arrays(np.float64, (n, w), elements=st.integers(0, 20).map(float))
    )
)


@settings(max_examples=150, deadline=None)
@given(counts_matrix)
def test_profile_counts_equal_sorting_whole_rows(profiles: np.ndarray) -> None:
    unique, counts = cluster.profile_counts(profiles)
    ref_unique, ref_counts = np.unique(profiles, axis=0, return_counts=True)
    assert _same_bits(unique, ref_unique) and _same_bits(counts, ref_counts)


def test_row_keys_follow_the_rows_lexicographic_order() -> None:
    rng = np.random.default_rng(3)
    profiles = rng.integers(0, 9, size=(2000, 4)).astype(np.float64)
    key, radices, span = cluster._row_keys(profiles)  # type: ignore[misc]
    assert radices is not None and span == int(np.prod(radices))
    by_key = profiles[np.argsort(key, kind="stable")]
    by_rows = profiles[np.lexsort(profiles.T[::-1])]
    assert np.array_equal(by_key, by_rows)
    # equal keys exactly when equal rows
    assert np.unique(key).size == np.unique(profiles, axis=0).shape[0]


@pytest.mark.parametrize(
    "profiles",
    [
        pytest.param(np.array([[3.0, 5.0]]), id="one row"),
        pytest.param(np.zeros((50, 3)), id="all zero"),
        pytest.param(np.full((40, 2), 7.0), id="one profile"),
        # 12 columns of radix 1000 exceed int64: the key is renumbered on the way
        pytest.param(
            np.random.default_rng(1).integers(0, 1000, size=(3000, 12)).astype(float), id="renumbered key"
        ),
        pytest.param(np.array([[2.0**53, 1.0], [1.0, 1.0], [2.0**53, 1.0]]), id="beyond 2**53"),
        pytest.param(np.array([[1.5, 2.0], [0.5, 2.0], [1.5, 2.0]]), id="not whole"),
        pytest.param(np.array([[-1.0, 2.0], [1.0, 2.0], [-1.0, 2.0]]), id="negative"),
        pytest.param(np.array([[np.nan, 1.0], [1.0, 1.0], [np.inf, 1.0]]), id="not finite"),
        pytest.param(np.empty((0, 2)), id="no rows"),
        pytest.param(np.empty((4, 0)), id="no columns"),
    ],
)
def test_profile_counts_on_degenerate_and_unkeyable_rows(profiles: np.ndarray) -> None:
    unique, counts = cluster.profile_counts(profiles)
    ref_unique, ref_counts = np.unique(profiles, axis=0, return_counts=True)
    assert np.array_equal(unique, ref_unique, equal_nan=True) and unique.shape == ref_unique.shape
    assert _same_bits(counts, ref_counts)


def test_negative_zero_is_left_to_sorting_whole_rows() -> None:
    profiles = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 1.0]])
    assert cluster._row_keys(profiles) is None
    unique, counts = cluster.profile_counts(profiles)
    ref_unique, ref_counts = np.unique(profiles, axis=0, return_counts=True)
    assert _same_bits(unique, ref_unique) and _same_bits(counts, ref_counts)


# --- the bootstrap: same draws, same intervals ----------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_bootstrap_is_bit_identical_to_sorting_whole_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = int(rng.integers(1, 3000))
    m = int(rng.integers(1, 4))
    sizes = rng.integers(0 if seed % 5 == 0 else 1, int(rng.integers(2, 15)), size=g)
    trials = np.repeat(sizes[:, None], m, axis=1)
    successes = rng.binomial(trials, rng.uniform(0.1, 0.95, size=m))
    level = (0.95, 0.9, 0.99)[seed % 3]
    key = cluster.seed_for(seed, "proportion_correct", "study")
    assert _assert_same_as_rows_unique(successes, trials, 500, key, level) == "profiles"


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
@pytest.mark.parametrize(
    ("successes", "trials", "resamples"),
    [
        pytest.param(np.array([2.0]), np.array([3.0]), 200, id="one cluster"),
        pytest.param(np.full(10, 2.0), np.full(10, 2.0), 300, id="constant"),
        pytest.param(np.zeros(20), np.zeros(20), 100, id="no trials at all"),
        pytest.param(np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 2.0]), 400, id="empty resamples"),
        pytest.param(np.array([1.0, 0.0]), np.array([1.0, 1.0]), 0, id="no resamples"),
        pytest.param(np.array([0.5, 1.0, 0.25]), np.array([1.0, 1.0, 1.0]), 300, id="fractional totals"),
    ],
)
def test_bootstrap_is_bit_identical_on_degenerate_inputs(successes, trials, resamples: int) -> None:
    _assert_same_as_rows_unique(successes, trials, resamples, 17)


def test_many_profiles_still_switch_to_the_index_sampler() -> None:
    rng = np.random.default_rng(8)
    trials = rng.integers(1, 15, size=(20_000, 3))
    successes = rng.binomial(trials, 0.6)
    assert _assert_same_as_rows_unique(successes, trials, 10, 4) == "indices"


# --- the intervals against an independent bootstrap and an exact case -----------------------------


def test_interval_agrees_with_a_plain_percentile_bootstrap() -> None:
    """A plain cluster bootstrap (draw G cluster indices per resample, numpy percentile) over
    the same clusters, with its own random numbers: the intervals agree to Monte Carlo error."""
    rng = np.random.default_rng(21)
    g = 1500
    sizes = rng.integers(1, 15, size=g)
    successes = rng.binomial(sizes, 0.72)
    ours = cluster.cluster_bootstrap_ratios(successes, sizes, 20_000, 5)
    plain_rng = np.random.default_rng(99)
    ratios = np.empty(20_000)
    for start in range(0, ratios.size, 1000):
        idx = plain_rng.integers(0, g, size=(1000, g))
        ratios[start : start + 1000] = successes[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    spread = ratios.std()
    assert ours.method == "profiles"
    assert abs(ours.low[0] - low) < 0.2 * spread and abs(ours.high[0] - high) < 0.2 * spread
    # and the interval is about +-1.96 bootstrap standard errors wide, not a degenerate one
    assert (ours.high[0] - ours.low[0]) == pytest.approx(2 * 1.96 * spread, rel=0.05)


def test_interval_of_a_small_case_is_the_exact_bootstrap_quantile() -> None:
    """Four clusters (successes/trials 0/1, 1/1, 1/2, 2/2): the bootstrap distribution is
    enumerated over all 4^4 equally likely resamples, and its 10% and 90% quantiles are atoms
    the sampled interval must hit exactly."""
    s = np.array([0.0, 1.0, 1.0, 2.0])
    t = np.array([1.0, 1.0, 2.0, 2.0])
    ratios = np.array([s[list(i)].sum() / t[list(i)].sum() for i in product(range(4), repeat=4)])
    values, counts = np.unique(ratios, return_counts=True)
    cdf = np.cumsum(counts) / counts.sum()
    exact_low = values[np.searchsorted(cdf, 0.10)]
    exact_high = values[np.searchsorted(cdf, 0.90)]
    # both quantiles lie well inside a step of the distribution, so sampling cannot move them
    for q in (0.10, 0.90):
        assert np.min(np.abs(cdf - q)) > 0.01
    r = cluster.cluster_bootstrap_ratios(s, t, 40_000, 2, level=0.80)
    assert r.method == "profiles"
    assert r.low[0] == exact_low and r.high[0] == exact_high
    assert r.estimate[0] == pytest.approx(4 / 6)
