"""GRIM: can a mean of n integer values be written as it is? (Brown and Heathers 2017)

The mean of n whole numbers (Likert items, counts) is a multiple of 1/n (1/(n * items) for a
mean over several items). A mean written with d decimals stands for the closed interval of half
a unit around it (both rounding directions pass); no multiple of 1/n in it -> inconsistent.
With n >= 10^d every such interval holds one, so the test says nothing and passes.

>>> grim(Decimal("5.19"), Decimal("0.01"), 28)
Grim(consistent=False, nearest='5.18', total=145)
>>> grim(Decimal("5.18"), Decimal("0.01"), 28).consistent
True
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from math import ceil, floor


@dataclass(frozen=True)
class Grim:
    consistent: bool
    nearest: str | None  # the nearest mean n integers give, written at the same precision
    total: int | None  # the integer sum behind it


def grim(mean: Decimal, resolution: Decimal, n: int, items: int = 1) -> Grim:
    """Whether some integer sum over ``n * items`` values gives ``mean`` at its precision."""
    if n <= 0 or items <= 0:
        return Grim(False, None, None)
    cells = n * items
    value, half = Fraction(mean), Fraction(resolution) / 2
    if ceil((value - half) * cells) <= floor((value + half) * cells):
        return Grim(True, None, None)
    below, above = floor(value * cells), ceil(value * cells)
    total = min((below, above), key=lambda s: abs(Fraction(s, cells) - value))
    exact = Decimal(total) / Decimal(cells)
    return Grim(False, str(exact.quantize(resolution, rounding=ROUND_HALF_EVEN)), total)
