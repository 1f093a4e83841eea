"""Which condition a table row or a sentence names, and what value a written number means.

Pure functions for :mod:`provgraph.stats.bind`. A row label is matched to the condition keys
of the recomputed statistics and the display names the importers recorded for them, after
normalising case, punctuation and markup (``+`` reads as ``with``, ``4.6`` as ``4_6``, digits
apart from letters so ``3runs`` is ``3 runs``):

1. ``[release.bind].rows`` (the contract's own mapping) wins;
2. a key or display name written exactly;
3. a token cover: the conditions all of whose key tokens (then: display-name tokens) the label
   holds; the one covering the most tokens wins, and a tie is ambiguous.

The label's words left over after the match (``majority`` in "Claude Sonnet 4.6, 3 runs
(majority)") are read for a test variant or adjustment (:func:`words_fields`).

>>> names = {"claude_sonnet_4_6": [], "claude_sonnet_4_6_with_taxonomy": [], "claude_sonnet_4_6_3runs": []}
>>> match_condition("Claude Sonnet 4.6", names).key
'claude_sonnet_4_6'
>>> m = match_condition("Claude Sonnet 4.6, 3 runs (majority)", names)
>>> m.key, words_fields(m.leftover)
('claude_sonnet_4_6_3runs', {'variant': 'majority-vote'})
>>> match_condition("Claude Sonnet 4.6 + taxonomy", names).key
'claude_sonnet_4_6_with_taxonomy'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from provgraph.evidence.statnames import RATES, normal_name
from provgraph.stats.statistic import VARIANT_ALIASES

_COMMAND = re.compile(r"\\[A-Za-z]+")
_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)")
_SPLIT = re.compile(r"[^a-z0-9]+")
#: label words that state a variant or an adjustment (lower case, as tokens)
_VARIANT_WORDS = {
    **{k: v for k, v in VARIANT_ALIASES.items() if re.fullmatch(r"[a-z0-9]+", k)},
    **{v: v for v in VARIANT_ALIASES.values() if re.fullmatch(r"[a-z0-9]+", v)},
}
_ADJUSTMENT_WORDS = {
    "holm": "holm", "bonferroni": "bonferroni", "bh": "bh", "fdr": "bh", "unadjusted": "none",
}  # fmt: skip


def tokens(text: str) -> tuple[str, ...]:
    """A name as lower-case word and number tokens (markup, punctuation and spacing dropped).

    >>> tokens("**GPT-4o** + taxonomy"), tokens("claude_sonnet_4_6_3runs")
    (('gpt', '4', 'o', 'with', 'taxonomy'), ('claude', 'sonnet', '4', '6', '3', 'runs'))
    """
    text = _COMMAND.sub(" ", text).lower().replace("+", " with ").replace("&", " and ")
    return tuple(t for t in _SPLIT.split(_DIGIT_LETTER.sub(" ", text)) if t)


@dataclass(frozen=True)
class Match:
    """A label matched to a condition (``key``), or not (``key`` None, ``reason`` says why)."""

    key: str | None
    leftover: tuple[str, ...] = ()  # the label's tokens the match did not use
    reason: str = ""
    candidates: tuple[str, ...] = ()  # the tied conditions, when ambiguous
    declared: bool = False  # the contract's [release.bind].rows decided it


class Conditions:
    """Condition keys and display names, tokenised once and indexed by token, so matching a
    label costs the conditions that share a token with it, not all of them."""

    def __init__(self, names: dict[str, list[str]], declared: dict[str, str] | None = None) -> None:
        self.keys = sorted(names)
        self.declared = {normal_name(w): k for w, k in (declared or {}).items()}
        #: stage 0: keys only; stage 1: keys and display names -> (key, token set)
        self.forms: tuple[list[tuple[str, frozenset[str]]], list[tuple[str, frozenset[str]]]] = ([], [])
        self.exact: dict[tuple[str, ...], set[str]] = {}
        self.index: tuple[dict[str, set[int]], dict[str, set[int]]] = ({}, {})
        for key, shown in names.items():
            for i, form in enumerate((key, *shown)):
                seq = tokens(form)
                if seq:
                    self.exact.setdefault(seq, set()).add(key)
                    for stage in (0, 1) if i == 0 else (1,):
                        self.forms[stage].append((key, frozenset(seq)))
        for stage in (0, 1):
            # each form under its rarest token: a label holding all of a form's tokens holds it
            counts: dict[str, int] = {}
            for _, need in self.forms[stage]:
                for t in need:
                    counts[t] = counts.get(t, 0) + 1
            for i, (_, need) in enumerate(self.forms[stage]):
                self.index[stage].setdefault(min(need, key=lambda t: (counts[t], t)), set()).add(i)

    def _covered(self, held: set[str], stage: int) -> dict[str, frozenset[str]]:
        """key -> its largest form whose tokens the text holds all of."""
        found: dict[str, frozenset[str]] = {}
        seen: set[int] = set()
        for token in held:
            for i in self.index[stage].get(token, ()):
                if i in seen:
                    continue
                seen.add(i)
                key, need = self.forms[stage][i]
                if need <= held and len(need) > len(found.get(key, ())):
                    found[key] = need
        return found

    def match(self, label: str) -> Match:
        """The condition a row label names (see the module docstring)."""
        if self.declared and (wanted := normal_name(label)) in self.declared:
            key = self.declared[wanted]
            if not key:
                return Match(None, reason=f"[release.bind].rows leaves {label!r} unbound", declared=True)
            return Match(key, declared=True)
        seq = tokens(label)
        if not seq:
            return Match(None, reason=f"the row label {label!r} holds no name")
        exact = sorted(self.exact.get(seq, ()))
        if len(exact) == 1:
            return Match(exact[0])
        tied: list[str] = []
        for stage in (0, 1):
            cover = self._covered(set(seq), stage)
            if not cover:
                continue
            best = max(len(need) for need in cover.values())
            top = sorted(k for k, need in cover.items() if len(need) == best)
            if len(top) == 1:
                return Match(top[0], tuple(t for t in seq if t not in cover[top[0]]))
            tied = tied or top
        if tied or exact:
            some = tuple(tied or exact)
            return Match(
                None, reason=f"{label!r} matches several conditions: {', '.join(some)}", candidates=some
            )
        return Match(None, reason=f"{label!r} matches no condition ({_some(self.keys)})")

    def named(self, line: str) -> list[str]:
        """The conditions a sentence names: each key (failing that, display name) written as
        consecutive words, less those inside another's words (a line naming "Sonnet 4.6 +
        taxonomy" names one condition, not also "Sonnet 4.6"); with none so written, those
        whose words the line holds anywhere, less those another one's words contain."""
        seq = tokens(line)
        held = set(seq)
        for stage in (0, 1):
            found = self._covered(held, stage)
            if not found:
                continue
            spans = []
            for key in found:
                for _, need in (f for f in self.forms[stage] if f[0] == key):
                    spans += [(a, b, key) for a, b in _runs(seq, need)]
            if spans:
                inner = {s for s in spans for o in spans if o != s and o[0] <= s[0] and s[1] <= o[1]}
                return sorted({key for a, b, key in spans if (a, b, key) not in inner})
            return sorted(k for k, need in found.items() if not any(need < o for o in found.values()))
        return []


def _runs(seq: tuple[str, ...], need: frozenset[str]) -> list[tuple[int, int]]:
    """Where ``seq`` holds exactly the words of ``need`` consecutively."""
    size = len(need)
    return [(i, i + size) for i in range(len(seq) - size + 1) if set(seq[i : i + size]) == need]


def match_condition(label: str, names: dict[str, list[str]], declared: dict[str, str] | None = None) -> Match:
    """The condition a row label names. ``names``: condition key -> its display names."""
    return Conditions(names, declared).match(label)


def named_conditions(line: str, names: dict[str, list[str]]) -> list[str]:
    """The conditions a sentence names (:meth:`Conditions.named`)."""
    return Conditions(names).named(line)


def words_fields(words: tuple[str, ...] | list[str]) -> dict[str, object]:
    """The test variant and adjustment written among a label's or header's words."""
    fields: dict[str, object] = {}
    for word in words:
        if word in _ADJUSTMENT_WORDS:
            fields.setdefault("adjustment", _ADJUSTMENT_WORDS[word])
    for word in words:
        if word in ("corrected", "continuity") and "adjustment" in fields:
            continue  # "Holm-corrected": the adjustment, not a continuity correction
        if word in _VARIANT_WORDS:
            fields.setdefault("variant", _VARIANT_WORDS[word])
    return fields


@dataclass(frozen=True)
class Value:
    """A written number as the statistic means it: value, tolerance, a stated n, and the form
    it was written in (``percent``, ``fraction``, ``number``; ``places`` after the point)."""

    value: float | None
    tolerance: float = 0.0
    n: int | None = None
    reason: str = ""  # why it has no value
    form: str = "number"
    places: int = 0

    def show(self, recomputed: float, n: int | None) -> str:
        """A recomputed value written in this number's form and precision."""
        if recomputed != recomputed:
            return "undefined"
        if self.form == "fraction" and n:
            return f"{round(recomputed * n)}/{n}"
        if self.form == "percent":
            return f"{100 * recomputed:.{self.places}f}%"
        return f"{recomputed:.{self.places}f}"


def written_value(
    name: str, unit: str | None, value: Decimal, resolution: Decimal | None, numerator: int | None,
    n: int | None, column_unit: str | None = None, relation: str | None = None,
) -> Value:  # fmt: skip
    """``39%`` (or 39 in a ``%`` column) of a rate -> 0.39 +/- 0.005; ``17/18`` -> 17/18 exactly
    with n = 18; a decimal -> itself +/- half its last digit.

    >>> written_value("f1", "number", Decimal("0.84"), Decimal("0.01"), None, None).tolerance
    0.005
    >>> v = written_value("false_positive_rate", "percent", Decimal("39"), Decimal("1"), None, None)
    >>> (v.value, v.tolerance, v.show(5 / 18, None))
    (0.39, 0.005, '28%')
    """
    if relation not in (None, "="):
        return Value(None, reason=f"written as a bound ({relation}), not a value")
    resolution = resolution if resolution is not None else Decimal(1)
    half = float(resolution) / 2
    places = max(0, -int(resolution.normalize().as_tuple().exponent))  # type: ignore[arg-type]
    rate = name in RATES
    if unit == "fraction" and numerator is not None and n:
        if not rate:
            return Value(None, reason=f"a fraction for {name}, which is no rate")
        return Value(numerator / n, 1e-12, n, form="fraction")
    if unit == "percent" or (column_unit == "percent" and rate) or (rate and 1 < value <= 100):
        # a rate is at most 1: a larger number in a rate column is a percentage
        if not rate:
            return Value(None, reason=f"a percentage for {name}, which is no rate")
        return Value(float(value) / 100, half / 100, n, form="percent", places=places)
    return Value(float(value), half, n, places=places)


def _some(keys: list[str], most: int = 6) -> str:
    if not keys:
        return "no conditions are recomputed"
    more = f" and {len(keys) - most} more" if len(keys) > most else ""
    return f"conditions: {', '.join(keys[:most])}{more}"
