"""Metric tuples checked without raw data: is there a confusion table that prints them all?

A text publishes, for one condition, some of TP, FN, FP, TN, the numbers of positives and
negatives, n, and rates (detection rate, FPR, specificity, precision, NPV, F1, accuracy), each
rounded to its written precision. :func:`check` searches integer counts (TP, FN, FP, TN) that
give every written value at its precision and the stated n. A written value stands for the
closed interval of half a unit around it, so half-up and half-even rounding both pass.

Every metric is a ratio of two linear forms of the counts, so with the numbers of positives P
and negatives N fixed each written value is a pair of integer linear inequalities in (TP, FP).
The search walks the shorter of the two count ranges the one-variable inequalities leave (DR
bounds TP, FPR bounds FP) and solves the others for the second count in closed form: a few
operations per candidate, no brute force. When no tuple exists, :func:`nearest` finds the one
that changes the fewest written values, then the least in units of their written resolution.

>>> rates = [Written("detection_rate", Decimal(94), Decimal(1), percent=True),
...          Written("false_positive_rate", Decimal(17), Decimal(1), percent=True),
...          Written("f1", Decimal("0.90"), Decimal("0.01"))]
>>> result = check(rates, positives=18, negatives=18)
>>> result.consistent, result.counts, [w.name for w in result.changed], result.prints
(False, (17, 1, 3, 15), ['f1'], {'f1': '0.89'})
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from functools import cached_property
from math import lcm
from typing import Any

#: (numerator, denominator) of each rate, as coefficients of (TP, FN, FP, TN)
RATE_FORMS: dict[str, tuple[tuple[int, int, int, int], tuple[int, int, int, int]]] = {
    "detection_rate": ((1, 0, 0, 0), (1, 1, 0, 0)),
    "false_positive_rate": ((0, 0, 1, 0), (0, 0, 1, 1)),
    "specificity": ((0, 0, 0, 1), (0, 0, 1, 1)),
    "precision": ((1, 0, 0, 0), (1, 0, 1, 0)),
    "npv": ((0, 0, 0, 1), (0, 1, 0, 1)),
    "f1": ((2, 0, 0, 0), (2, 1, 1, 0)),
    "accuracy": ((1, 0, 0, 1), (1, 1, 1, 1)),
}
#: counts and sizes, as coefficients of (TP, FN, FP, TN)
COUNT_FORMS: dict[str, tuple[int, int, int, int]] = {
    "tp": (1, 0, 0, 0),
    "fn": (0, 1, 0, 0),
    "fp": (0, 0, 1, 0),
    "tn": (0, 0, 0, 1),
    "n_positive": (1, 1, 0, 0),
    "n_negative": (0, 0, 1, 1),
    "n": (1, 1, 1, 1),
}
NAMES = frozenset(RATE_FORMS) | frozenset(COUNT_FORMS)
#: the count a rate's written denominator (``17/18``, ``17% (8/45)``) states
_DENOMINATOR_OF = {
    "detection_rate": "n_positive",
    "false_positive_rate": "n_negative",
    "specificity": "n_negative",
    "accuracy": "n",
}
#: The nearest-tuple search visits at most this many candidate tables (numpy, ~0.1 s); over an
#: unknown split of n it takes the splits closest to the written rates' prevalence first.
MAX_NEAREST_CELLS = 1_000_000
MAX_NEAREST_SPLITS = 8
_UNBOUNDED = 10**9
#: Sizes the search takes on (bounded time and memory whatever a text writes): a stated number of
#: positives or negatives up to MAX_SIZE, a total whose split is unknown up to MAX_SPLIT_N.
MAX_SIZE = 100_000
MAX_SPLIT_N = 5_000


@dataclass(frozen=True)
class Written:
    """One published value: its canonical name (``evidence.statnames``) and how it is written."""

    name: str
    value: Decimal
    resolution: Decimal = Decimal(1)
    percent: bool = False
    numerator: int | None = None  # 17 of "17/18"
    denominator: int | None = None  # 18 of "17/18" or of "17% (n = 18)"
    ref: Any = None  # the caller's handle (a claim node)

    def interval(self) -> tuple[Fraction, Fraction, Fraction]:
        """(low, high, resolution) of the value this text stands for, as a proportion or count."""
        return self._interval

    @cached_property
    def _interval(self) -> tuple[Fraction, Fraction, Fraction]:
        if self.name in RATE_FORMS and self.numerator is not None and self.denominator:
            exact = Fraction(self.numerator, self.denominator)
            return exact, exact, Fraction(1, self.denominator)
        value, res = Fraction(self.value), Fraction(self.resolution)
        # A rate above 1 can only be a percentage (a column "DR" holding 94).
        if self.name in RATE_FORMS and (self.percent or value > 1):
            value, res = value / 100, res / 100
        if self.name in COUNT_FORMS:
            return value, value, Fraction(1)
        return value - res / 2, value + res / 2, res

    def shown(self, exact: Fraction) -> str:
        """``exact`` printed the way this value is written (same unit and decimals)."""
        if self.name in COUNT_FORMS:
            return str(int(exact))
        percent = self.percent or (self.numerator is None and Fraction(self.value) > 1)
        if self.numerator is not None and self.denominator:
            return f"{exact.numerator}/{exact.denominator}"
        scaled = Decimal(exact.numerator) / Decimal(exact.denominator) * (100 if percent else 1)
        text = str(scaled.quantize(self.resolution, rounding=ROUND_HALF_EVEN))
        return text + ("%" if percent and self.percent else "")


@dataclass(frozen=True)
class Result:
    """What :func:`check` found. ``counts`` is (TP, FN, FP, TN): a consistent tuple, or the
    nearest one when ``consistent`` is False (None when none was searched)."""

    consistent: bool
    mode: str  # "counts" | "positives only" | "n-free" | "nothing to check"
    counts: tuple[int, int, int, int] | None = None
    changed: tuple[Written, ...] = ()
    prints: dict[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class _Ineq:
    """g . (TP, FN, FP, TN) + g0 >= 0, and the written value it comes from."""

    g: tuple[int, int, int, int]
    g0: int
    source: int


def _dot(coefs: Sequence[int], x: Sequence[Any]) -> Any:
    return sum(a * v for a, v in zip(coefs, x, strict=True))


def _constraints(written: Sequence[Written]) -> list[_Ineq]:
    out: list[_Ineq] = []
    for i, w in enumerate(written):
        lo, hi, _ = w.interval()
        if w.name in COUNT_FORMS:
            c = COUNT_FORMS[w.name]
            if lo.denominator != 1:
                out.append(_Ineq((0, 0, 0, 0), -1, i))  # a fractional count: never
                continue
            v = int(lo)
            out += [_Ineq(c, -v, i), _Ineq(tuple(-x for x in c), v, i)]  # type: ignore[arg-type]
            continue
        num, den = RATE_FORMS[w.name]
        d = lcm(lo.denominator, hi.denominator)
        lo_n, hi_n = int(lo * d), int(hi * d)
        out.append(_Ineq(tuple(d * a - lo_n * b for a, b in zip(num, den, strict=True)), 0, i))  # type: ignore[arg-type]
        out.append(_Ineq(tuple(hi_n * b - d * a for a, b in zip(num, den, strict=True)), 0, i))  # type: ignore[arg-type]
        out.append(_Ineq(den, -1, i))  # the rate is defined: its denominator is not 0
    return out


def _sizes(written: Sequence[Written], positives: int | None, negatives: int | None) -> dict[str, set[int]]:
    """The numbers of positives (P), negatives (N) and n the written values state."""
    stated: dict[str, set[int]] = {"n_positive": set(), "n_negative": set(), "n": set()}
    counts: dict[str, int] = {}
    for w in written:
        if w.name in stated and w.value == int(w.value):
            stated[w.name].add(int(w.value))
        elif w.name in _DENOMINATOR_OF and w.denominator:
            stated[_DENOMINATOR_OF[w.name]].add(w.denominator)
        elif w.name in ("tp", "fn", "fp", "tn") and w.value == int(w.value):
            counts[w.name] = int(w.value)
    if "tp" in counts and "fn" in counts:
        stated["n_positive"].add(counts["tp"] + counts["fn"])
    if "fp" in counts and "tn" in counts:
        stated["n_negative"].add(counts["fp"] + counts["tn"])
    # The contract's sizes stand in only for a tuple that states none: a row with its own n
    # is over that n (another table, a subset), whatever the defaults say.
    if not any(stated.values()):
        stated["n_positive"] |= {positives} if positives is not None else set()
        stated["n_negative"] |= {negatives} if negatives is not None else set()
    return stated


def _grid(stated: dict[str, set[int]]) -> tuple[str, list[tuple[int, int]]]:
    """(mode, the (P, N) pairs to search)."""
    (p,) = stated["n_positive"] or {None}
    (q,) = stated["n_negative"] or {None}
    (n,) = stated["n"] or {None}
    if p is not None and q is None and n is not None:
        q = n - p
    if q is not None and p is None and n is not None:
        p = n - q
    if p is not None and q is not None:
        return "counts", [(p, q)] if p >= 0 and q >= 0 else []
    if n is not None:
        return "counts", [(k, n - k) for k in range(n + 1)]
    if p is not None:
        return "positives only", [(p, _UNBOUNDED)]
    return "n-free", []


def _involves_negatives(w: Written) -> bool:
    if w.name in COUNT_FORMS:
        return COUNT_FORMS[w.name][3] != 0
    num, den = RATE_FORMS[w.name]
    return num[3] != 0 or den[3] != 0


def _solve(ineqs: Sequence[_Ineq], p: int, q: int) -> tuple[int, int] | None:
    """Some (TP, FP) in [0, P] x [0, N] satisfying every inequality, or None."""
    t_lo, t_hi, f_lo, f_hi = 0, p, 0, q
    mixed: list[tuple[int, int, int]] = []
    for ineq in ineqs:
        g = ineq.g
        a, b, c = g[1] * p + g[3] * q + ineq.g0, g[0] - g[1], g[2] - g[3]
        if b == 0 and c == 0:
            if a < 0:
                return None
        elif c == 0:
            t_lo, t_hi = _narrow(t_lo, t_hi, a, b)
        elif b == 0:
            f_lo, f_hi = _narrow(f_lo, f_hi, a, c)
        else:
            mixed.append((a, b, c))
        if t_lo > t_hi or f_lo > f_hi:
            return None
    if t_hi - t_lo <= f_hi - f_lo:
        for t in range(t_lo, t_hi + 1):
            found = _second(mixed, t, f_lo, f_hi, swap=False)
            if found is not None:
                return t, found
    else:
        for f in range(f_lo, f_hi + 1):
            found = _second(mixed, f, t_lo, t_hi, swap=True)
            if found is not None:
                return found, f
    return None


def _narrow(lo: int, hi: int, a: int, k: int) -> tuple[int, int]:
    """[lo, hi] cut by a + k x >= 0."""
    if k > 0:
        return max(lo, -(a // k)), hi
    return lo, min(hi, a // -k)


def _second(mixed: Sequence[tuple[int, int, int]], x: int, lo: int, hi: int, swap: bool) -> int | None:
    for a, b, c in mixed:
        if swap:
            b, c = c, b
        lo, hi = _narrow(lo, hi, a + b * x, c)
        if lo > hi:
            return None
    return lo


def check(written: Sequence[Written], positives: int | None = None, negatives: int | None = None) -> Result:
    """Whether integer confusion counts give every ``written`` value at its precision.

    ``positives`` / ``negatives`` are the contract's defaults (``[release.bind]``), used only
    when the written values state no size at all (no n, positives, negatives, TP + FN, FP + TN
    or rate denominator).
    """
    written = [w for w in written if w.name in NAMES]
    if not written:
        return Result(True, "nothing to check")
    stated = _sizes(written, positives, negatives)
    clash = [name for name, values in stated.items() if len(values) > 1]
    if clash:
        sizes = ", ".join(f"{name} {sorted(stated[name])}" for name in clash)
        return Result(False, "counts", note=f"the written values state different sizes ({sizes})")
    largest = max((v for values in stated.values() for v in values), default=0)
    if largest > MAX_SIZE or (
        not stated["n_positive"] and not stated["n_negative"] and largest > MAX_SPLIT_N
    ):
        return Result(
            True, "nothing to check", note=f"a size of {largest:,} is over what the search takes on"
        )
    mode, pairs = _grid(stated)
    if mode == "n-free":
        return _n_free(written)
    used = written if mode == "counts" else [w for w in written if not _involves_negatives(w)]
    ineqs = _constraints(used)
    if len(pairs) > 1:  # an unknown split of n: try the likeliest first (a consistent row stops early)
        share = _prevalence(written)
        n = pairs[0][0] + pairs[0][1]
        pairs = sorted(pairs, key=lambda pq: abs(pq[0] - share * n))
    for p, q in pairs:
        found = _solve(ineqs, p, q)
        if found is not None:
            t, f = found
            return Result(True, mode, (t, p - t, f, q - f if q != _UNBOUNDED else -1))
    counts, changed = nearest(used, pairs)
    prints = {} if counts is None else {w.name: w.shown(_exact(w, counts)) for w in changed}
    return Result(False, mode, counts, tuple(changed), prints)


def _prevalence(written: Sequence[Written]) -> float:
    """The share of positives the written rates suggest (accuracy = s DR + (1 - s) spec), or 1/2."""
    mid = {}
    for w in written:
        if w.name in RATE_FORMS:
            lo, hi, _ = w.interval()
            mid[w.name] = float(lo + hi) / 2
    if "specificity" not in mid and "false_positive_rate" in mid:
        mid["specificity"] = 1 - mid["false_positive_rate"]
    dr, spec, acc, prec = (mid.get(k) for k in ("detection_rate", "specificity", "accuracy", "precision"))
    if dr is not None and spec is not None and acc is not None and abs(dr - spec) > 1e-9:
        return min(max((acc - spec) / (dr - spec), 0.0), 1.0)
    if dr is not None and spec is not None and prec is not None and 0 < prec < 1 and dr > 0:
        fpr = 1 - spec  # precision = s DR / (s DR + (1 - s) FPR)
        odds = prec * fpr / (dr * (1 - prec)) if dr * (1 - prec) else 1.0
        return odds / (1 + odds)
    return 0.5


def _exact(w: Written, counts: tuple[int, int, int, int]) -> Fraction:
    if w.name in COUNT_FORMS:
        return Fraction(_dot(COUNT_FORMS[w.name], counts))
    num, den = RATE_FORMS[w.name]
    d = _dot(den, counts)
    return Fraction(_dot(num, counts), d) if d else Fraction(0)


def nearest(
    written: Sequence[Written], pairs: Sequence[tuple[int, int]]
) -> tuple[tuple[int, int, int, int] | None, list[Written]]:
    """The (TP, FN, FP, TN) over ``pairs`` that changes the fewest written values, then the
    least in units of their resolution; and the values it changes. Over many pairs (an unknown
    split) only the first :data:`MAX_NEAREST_SPLITS` within :data:`MAX_NEAREST_CELLS` tables
    are searched."""
    import numpy as np  # why: numpy is needed only once a tuple is inconsistent

    cap_f = lambda p, q: q if q != _UNBOUNDED else 10 * (p + 1) + 100  # noqa: E731
    best: tuple[float, tuple[int, int, int, int]] | None = None
    cells = 0
    for k, (p, q) in enumerate(pairs):  # an unknown split: likeliest first, within the budget
        q_cap = cap_f(p, q)
        cells += (p + 1) * (q_cap + 1)
        if cells > MAX_NEAREST_CELLS and best is None:
            return None, []  # a grid this large is not searched: the message gives no nearest
        if cells > MAX_NEAREST_CELLS or k >= MAX_NEAREST_SPLITS:
            break
        # TP down, FP across: a form of TP or FP alone stays one row or column (broadcasting)
        t, f = np.arange(p + 1, dtype=np.int64)[:, None], np.arange(q_cap + 1, dtype=np.int64)[None, :]
        x = (t, p - t, f, q_cap - f)
        score = np.zeros((p + 1, q_cap + 1))
        for w in written:
            score += _cost(np, w, x)
        i = int(np.argmin(score))
        ti, fi = divmod(i, q_cap + 1)
        if best is None or score.flat[i] < best[0]:
            best = (float(score.flat[i]), (ti, p - ti, fi, q - fi if q != _UNBOUNDED else -1))
    if best is None:
        return None, []
    counts = best[1]
    full = counts if counts[3] >= 0 else (*counts[:3], 0)
    changed = [w for w in written if not _inside(w, full)]
    return counts, changed


def _cost(np: Any, w: Written, x: tuple[Any, ...]) -> Any:
    """1000 per value the tables would print otherwise, plus the distance in resolution units."""
    lo, hi, res = w.interval()
    if w.name in COUNT_FORMS:
        miss = np.abs(_form(COUNT_FORMS[w.name], x) - float(lo))
        return np.where(miss > 0, 1000 + miss, 0.0)
    num, den = RATE_FORMS[w.name]
    n, d = _form(num, x), _form(den, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = n / d
    # floats choose the tuple; _inside (exact) then says which values it changes
    dist = np.maximum(float(lo) - ratio, ratio - float(hi)) / float(res)
    return np.where(d > 0, np.where(dist <= 1e-9, 0.0, 1000 + dist), 10_000.0)


def _form(coefs: Sequence[int], x: tuple[Any, ...]) -> Any:
    """A linear form of the count grids, skipping zero coefficients (each term is a full grid)."""
    terms = [v if a == 1 else a * v for a, v in zip(coefs, x, strict=True) if a]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _inside(w: Written, counts: tuple[int, int, int, int]) -> bool:
    lo, hi, _ = w.interval()
    if w.name in RATE_FORMS and _dot(RATE_FORMS[w.name][1], counts) == 0:
        return False
    return lo <= _exact(w, counts) <= hi


def _n_free(written: Sequence[Written]) -> Result:
    """Identities that hold whatever the sizes: F1 from precision and DR; accuracy between DR
    and specificity; FPR + specificity = 1."""
    ranges: dict[str, tuple[Fraction, Fraction, Written]] = {}
    for w in written:
        if w.name in RATE_FORMS and w.name not in ranges:
            lo, hi, _ = w.interval()
            ranges[w.name] = (max(lo, Fraction(0)), min(hi, Fraction(1)), w)
    note = "no number of positives or negatives is stated: only the n-free identities were checked"
    if "false_positive_rate" in ranges and "specificity" not in ranges:
        lo, hi, w = ranges["false_positive_rate"]
        ranges["specificity"] = (1 - hi, 1 - lo, w)
    elif "false_positive_rate" in ranges:
        lo, hi, w = ranges["false_positive_rate"]
        s_lo, s_hi, s = ranges["specificity"]
        if max(s_lo, 1 - hi) > min(s_hi, 1 - lo):
            return Result(False, "n-free", changed=(s,), note=f"{note}; FPR and specificity do not add to 1")
    checks = 0
    if {"precision", "detection_rate", "f1"} <= ranges.keys():
        checks += 1
        (p_lo, p_hi, _), (r_lo, r_hi, _) = ranges["precision"], ranges["detection_rate"]
        f_lo, f_hi, f1 = ranges["f1"]
        low = 2 * p_lo * r_lo / (p_lo + r_lo) if p_lo + r_lo else Fraction(0)
        high = 2 * p_hi * r_hi / (p_hi + r_hi) if p_hi + r_hi else Fraction(0)
        if high < f_lo or low > f_hi:
            why = f"{note}; F1 does not follow from precision and DR"
            return Result(False, "n-free", changed=(f1,), prints={"f1": f1.shown((low + high) / 2)}, note=why)
    if {"accuracy", "detection_rate", "specificity"} <= ranges.keys():
        checks += 1
        (a_lo, a_hi, acc), (r_lo, r_hi, _) = ranges["accuracy"], ranges["detection_rate"]
        s_lo, s_hi, _ = ranges["specificity"]
        if a_hi < min(r_lo, s_lo) or a_lo > max(r_hi, s_hi):
            why = f"{note}; accuracy lies outside DR and specificity"
            return Result(False, "n-free", changed=(acc,), note=why)
    return Result(True, "n-free" if checks else "nothing to check", note=note)
