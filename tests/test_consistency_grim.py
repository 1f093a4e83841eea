"""GRIM (provgraph.evidence.grim) against random integer data and brute force.

The test is Brown and Heathers' (2017, "The GRIM test", Social Psychological and Personality
Science 8(4)): a mean of n integers is k/n for an integer k.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from provgraph.evidence.consistency import Bind
from provgraph.evidence.grim import grim


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=200),
    st.integers(1, 3),
    st.sampled_from([ROUND_HALF_UP, ROUND_HALF_EVEN]),
)
def test_means_of_integers_always_pass(values: list[int], decimals: int, rounding: str) -> None:
    q = Decimal(1).scaleb(-decimals)
    mean = (Decimal(sum(values)) / Decimal(len(values))).quantize(q, rounding=rounding)
    assert grim(mean, q, len(values)).consistent


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 60), st.integers(0, 700), st.integers(1, 3))
def test_agrees_with_brute_force(n: int, hundredths: int, items: int) -> None:
    mean, q = Decimal(hundredths) / 100, Decimal("0.01")
    possible = any(
        abs(Fraction(k, n * items) - Fraction(mean)) <= Fraction(1, 200) for k in range(0, 7 * n * items + 2)
    )
    result = grim(mean, q, n, items)
    assert result.consistent == possible
    if not possible:
        assert result.nearest is not None and result.total is not None
        assert abs(Fraction(result.total, n * items) - Fraction(mean)) < Fraction(1, n * items)


def test_large_n_always_passes() -> None:
    assert grim(Decimal("3.14"), Decimal("0.01"), 100).consistent


def test_integer_data_headers_are_globs_in_normal_form() -> None:
    """``[release.bind] integer_data`` holds header globs; markup, case and a unit suffix are
    ignored as ``statnames.normal_name`` ignores them, ``*`` and ``?`` stay globs."""
    bind = Bind.of({"bind": {"integer_data": ["Mean *", "**Likert** score (1-7)"]}})
    assert bind.integer("Mean rating") and bind.integer("**Mean items** (%)")
    assert bind.integer("Likert score") and not bind.integer("Mean") and not bind.integer("Median rating")
