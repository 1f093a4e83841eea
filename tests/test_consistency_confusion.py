"""The confusion-count search (provgraph.evidence.confusion) against random tables and brute force.

Metric definitions are the usual ones (e.g. https://en.wikipedia.org/wiki/Precision_and_recall);
the real case is the public Replication Trap README (github.com/jheuer/replication-trap,
README.md, the "GPT-4o + taxonomy" row over 18 flawed / 18 sound scripts).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provgraph.evidence.confusion import RATE_FORMS, Written, check

RATES = sorted(RATE_FORMS)


def exact(name: str, tp: int, fn: int, fp: int, tn: int) -> Fraction | None:
    num, den = RATE_FORMS[name]
    x = (tp, fn, fp, tn)
    d = sum(a * v for a, v in zip(den, x, strict=True))
    return Fraction(sum(a * v for a, v in zip(num, x, strict=True)), d) if d else None


def written(name: str, value: Fraction, style: str, decimals: int, mode: str) -> Written:
    """``value`` rounded as a paper prints it: a percent with 0-1 decimals or a proportion with
    2-3, half-up or half-even."""
    rounding = ROUND_HALF_UP if mode == "half-up" else ROUND_HALF_EVEN
    scale = 100 if style == "percent" else 1
    q = Decimal(1).scaleb(-decimals)
    shown = (Decimal(value.numerator) * scale / Decimal(value.denominator)).quantize(q, rounding=rounding)
    return Written(name, shown, q, percent=style == "percent")


@st.composite
def published(draw: st.DrawFn) -> tuple[list[Written], dict[str, int | None]]:
    p, q = draw(st.integers(1, 500)), draw(st.integers(1, 500))
    tp, fp = draw(st.integers(0, p)), draw(st.integers(0, q))
    counts = (tp, p - tp, fp, q - fp)
    names = draw(st.lists(st.sampled_from(RATES), min_size=1, max_size=len(RATES), unique=True))
    rows = []
    for name in names:
        value = exact(name, *counts)
        if value is None:
            continue  # a paper prints no precision of a table with no positive calls
        style = draw(st.sampled_from(["percent", "decimal"]))
        decimals = draw(st.integers(0, 1) if style == "percent" else st.integers(2, 3))
        rows.append(written(name, value, style, decimals, draw(st.sampled_from(["half-up", "half-even"]))))
    stated = draw(st.sampled_from(["both", "total", "contract", "none", "positives"]))
    sizes: dict[str, int | None] = {"positives": None, "negatives": None}
    if stated == "both":
        rows += [Written("n_positive", Decimal(p)), Written("n_negative", Decimal(q))]
    elif stated == "total":
        rows.append(Written("n", Decimal(p + q)))
    elif stated == "contract":
        sizes = {"positives": p, "negatives": q}
    elif stated == "positives":
        sizes = {"positives": p, "negatives": None}
    return rows, sizes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(published())
def test_rounded_real_tables_are_always_consistent(case: tuple[list[Written], dict[str, int | None]]) -> None:
    """Metrics of a real table, rounded as papers do, never fire, whatever subset and n."""
    rows, sizes = case
    result = check(rows, **sizes)
    assert result.consistent, (rows, sizes, result)


def brute_force(rows: list[Written], p: int, q: int) -> bool:
    """Whether any (TP, FP) in [0, P] x [0, N] gives every written value: the whole grid."""
    for tp in range(p + 1):
        for fp in range(q + 1):
            counts = (tp, p - tp, fp, q - fp)
            ok = True
            for w in rows:
                lo, hi, _ = w.interval()
                value = exact(w.name, *counts)
                if value is None or not lo <= value <= hi:
                    ok = False
                    break
            if ok:
                return True
    return False


@st.composite
def arbitrary(draw: st.DrawFn) -> tuple[list[Written], int, int]:
    """Rates of a real table with one of them moved by -3..3 written units (near misses), or
    rates drawn independently of any table (most have no integer counts)."""
    p, q = draw(st.integers(1, 25)), draw(st.integers(1, 25))
    names = draw(st.lists(st.sampled_from(RATES), min_size=2, max_size=4, unique=True))
    if draw(st.booleans()):
        rows = [
            Written(name, Decimal(draw(st.integers(0, 100))), Decimal(1), percent=True)
            if draw(st.booleans())
            else Written(name, Decimal(draw(st.integers(0, 100))) / 100, Decimal("0.01"))
            for name in names
        ]
        return rows, p, q
    tp, fp = draw(st.integers(0, p)), draw(st.integers(0, q))
    rows = []
    for name in names:
        value = exact(name, tp, p - tp, fp, q - fp)
        if value is not None:
            style = draw(st.sampled_from(["percent", "decimal"]))
            rows.append(written(name, value, style, 0 if style == "percent" else 2, "half-even"))
    if rows:
        i, delta = draw(st.integers(0, len(rows) - 1)), draw(st.integers(-3, 3))
        w = rows[i]
        rows[i] = Written(w.name, w.value + delta * w.resolution, w.resolution, w.percent)
    return rows, p, q


@settings(max_examples=400, deadline=None)
@given(arbitrary())
def test_search_agrees_with_brute_force(case: tuple[list[Written], int, int]) -> None:
    """Tuples no integer counts satisfy (brute force over the grid) always fire; the others never."""
    rows, p, q = case
    result = check(rows, positives=p, negatives=q)
    assert result.consistent == brute_force(rows, p, q), (rows, p, q, result)
    if not result.consistent:
        assert result.counts is not None and result.changed
        tp, fn, fp, tn = result.counts
        assert tp + fn == p and fp + tn == q


def test_replication_trap_row_is_inconsistent() -> None:
    """ "GPT-4o + taxonomy | 94% | 17% | 0.90" over 18 flawed / 18 sound scripts: DR 94% forces
    TP = 17, FPR 17% forces FP = 3, and then F1 = 34/38 = 0.895 prints 0.89, not 0.90."""
    rows = [
        Written("detection_rate", Decimal(94), Decimal(1), percent=True),
        Written("false_positive_rate", Decimal(17), Decimal(1), percent=True),
        Written("f1", Decimal("0.90"), Decimal("0.01")),
    ]
    assert not brute_force(rows, 18, 18)
    result = check(rows, positives=18, negatives=18)
    assert not result.consistent
    assert result.counts == (17, 1, 3, 15)
    assert [w.name for w in result.changed] == ["f1"] and result.prints == {"f1": "0.89"}
    # the row above it in the same table is consistent: 100% / 39% / 0.84 (TP 18, FP 7)
    sonnet = [
        Written("detection_rate", Decimal(100), Decimal(1), percent=True),
        Written("false_positive_rate", Decimal(39), Decimal(1), percent=True),
        Written("f1", Decimal("0.84"), Decimal("0.01")),
    ]
    assert check(sonnet, positives=18, negatives=18).consistent


def test_fraction_denominators_state_the_sizes() -> None:
    """``17/18`` states P = 18 and TP = 17; no contract default is needed."""
    rows = [
        Written("detection_rate", Decimal(17), Decimal(1), numerator=17, denominator=18),
        Written("false_positive_rate", Decimal(3), Decimal(1), numerator=3, denominator=18),
        Written("f1", Decimal("0.90"), Decimal("0.01")),
    ]
    result = check(rows)
    assert result.mode == "counts" and not result.consistent and result.prints == {"f1": "0.89"}
    rows[2] = Written("f1", Decimal("0.89"), Decimal("0.01"))
    assert check(rows).consistent


def test_sizes_that_disagree_fire() -> None:
    rows = [
        Written("detection_rate", Decimal(17), numerator=17, denominator=18),
        Written("n_positive", Decimal(20)),
    ]
    result = check(rows)
    assert not result.consistent and "different sizes" in result.note


def test_without_any_n_only_identities_are_checked() -> None:
    """No n anywhere: F1 must follow from precision and DR (harmonic mean, monotone)."""
    rows = [
        Written("precision", Decimal("0.80"), Decimal("0.01")),
        Written("detection_rate", Decimal("0.90"), Decimal("0.01")),
        Written("f1", Decimal("0.90"), Decimal("0.01")),
    ]
    result = check(rows)
    assert result.mode == "n-free" and not result.consistent and result.prints == {"f1": "0.85"}
    assert "n-free" in result.note
    rows[2] = Written("f1", Decimal("0.85"), Decimal("0.01"))
    assert check(rows).consistent
    acc = [
        Written("detection_rate", Decimal("0.90"), Decimal("0.01")),
        Written("specificity", Decimal("0.80"), Decimal("0.01")),
        Written("accuracy", Decimal("0.95"), Decimal("0.01")),
    ]
    assert not check(acc).consistent


def test_counts_against_rates() -> None:
    rows = [
        Written("tp", Decimal(8)),
        Written("fn", Decimal(2)),
        Written("detection_rate", Decimal(75), percent=True),
    ]
    result = check(rows)
    assert not result.consistent and result.counts is not None
    assert len(result.changed) == 1


def test_huge_sizes_are_bounded_not_searched() -> None:
    """A hostile or mistyped n (10^12) costs no time or memory: the check says it did not search."""
    rows = [Written("detection_rate", Decimal("0.9"), Decimal("0.01")), Written("n", Decimal(10**12))]
    result = check(rows)
    assert result.consistent and result.mode == "nothing to check" and "over what the search" in result.note
    big = [
        Written("detection_rate", Decimal("0.9"), Decimal("0.01")),
        Written("f1", Decimal("0.10"), Decimal("0.01")),
        Written("n_positive", Decimal(90_000)),
        Written("n_negative", Decimal(90_000)),
    ]
    result = check(big)  # inconsistent, but its 8.1e9-cell grid is not searched for a nearest tuple
    assert not result.consistent and result.counts is None
