"""Recomputed statistics as plain records, and matching reported values to them.

A :class:`Stat` knows what it measures (name, conditions, variant, adjustment, cohort rule,
family, cluster...), its value and denominator, and the exact graph nodes it was computed
from (``inputs``). Its IRI is minted from those identifying fields, never from an order.

A reported value is matched on the fields it states; a field it leaves out must either be
empty on the statistic or, failing that, leave exactly one candidate (so "the FPR of
condition X" matches the single-run FPR when X was run once, and stays unmatched when X has
single-run, pooled and majority-vote FPRs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from provgraph.rdf.terms import IRI, mint

NAME_ALIASES = {
    "q": "cochran_q",
    "cochrans_q": "cochran_q",
    "cochran": "cochran_q",
    "cochran_p": "cochran_q_p",
    "mcnemar": "mcnemar_p",
    "mcnemar_statistic": "mcnemar_chi2",
    "mcnemar_stat": "mcnemar_chi2",
    "p_adjusted": "mcnemar_p_adjusted",
    "adjusted_p": "mcnemar_p_adjusted",
    "dr": "detection_rate",
    "sensitivity": "detection_rate",
    "fpr": "false_positive_rate",
    "f1_score": "f1",
    "significant": "significant_count",
    "n_significant": "significant_count",
}
VARIANT_ALIASES = {
    "chi2": "asymptotic",
    "chi-square": "asymptotic",
    "chisquare": "asymptotic",
    "uncorrected": "asymptotic",
    "corrected": "continuity-corrected",
    "continuity": "continuity-corrected",
    "yates": "continuity-corrected",
    "edwards": "continuity-corrected",
    "binomial": "exact",
    "exact-binomial": "exact",
    "exact_binomial": "exact",
    "midp": "mid-p",
    "mid_p": "mid-p",
    "exact-mid-p": "mid-p",
    "single": "single-run",
    "single_run": "single-run",
    "majority": "majority-vote",
    "majority_vote": "majority-vote",
    "pooled": "pooled-runs",
}
ADJUSTMENT_ALIASES = {
    "fdr_bh": "bh",
    "benjamini-hochberg": "bh",
    "benjamini_hochberg": "bh",
    "fdr": "bh",
    "holm-bonferroni": "holm",
    "raw": "none",
    "unadjusted": "none",
}
ROUTE_ALIASES = {
    "complete": "globally-complete",
    "global": "globally-complete",
    "keyed": "globally-complete",
    "pairwise": "pairwise-available",
    "available-case": "pairwise-available",
    "positional": "positional-truncation",
    "truncation": "positional-truncation",
}
#: identifying fields besides name and conditions, in IRI order
FIELDS = ("variant", "adjustment", "route", "family", "replicate", "confidence", "cluster", "case", "model")


def canonical(value: str | None, aliases: dict[str, str]) -> str | None:
    if value is None:
        return None
    text = value.strip().lower()
    return aliases.get(text, text)


@dataclass
class Stat:
    name: str
    value: float
    method: str
    n: int | None = None
    route: str | None = None  # cohort rule
    variant: str | None = None
    conditions: tuple[str, ...] = ()
    adjustment: str | None = None
    family: str | None = None
    replicate: int | None = None
    confidence: str | None = None
    cluster: str | None = None
    case: str | None = None
    model: str | None = None  # the requested model, for a harness's per-model statistics
    df: int | None = None
    alpha: float | None = None
    family_size: int | None = None
    cluster_count: int | None = None
    resamples: int | None = None
    seed: int | None = None
    level: float | None = None
    role: str = "primary"
    inputs: tuple[str, ...] = ()
    keyset: str | None = None
    cohort: str | None = None  # matrix IRI
    sensitivity_for: Stat | None = field(default=None, repr=False)

    def segments(self) -> list[str]:
        out = [f"name={self.name}", *(f"condition={c}" for c in self.conditions)]
        for f in FIELDS:
            value = getattr(self, f)
            if value is not None:
                out.append(f"{f}={value}")
        return out

    def title(self) -> str:
        """A short human-readable name, e.g. ``mcnemar_p A vs B (exact, holm, globally-complete)``."""
        text = self.name
        if self.conditions:
            text += " " + " vs ".join(self.conditions)
        if self.case:
            text += f" script {self.case}"
        extra = [str(x) for x in (self.variant, self.adjustment, self.confidence, self.model) if x]
        if self.replicate is not None:
            extra.append(f"run {self.replicate}")
        if self.cluster:
            extra.append(f"clusters: {self.cluster}")
        if self.route:
            extra.append(self.route)
        return f"{text} ({', '.join(extra)})" if extra else text

    def iri(self, base: str) -> IRI:
        return mint(base, "statistic", *self.segments())

    def identity(self) -> tuple:
        """What makes two statistics the same quantity (pairs are unordered)."""
        conds = tuple(sorted(self.conditions)) if len(self.conditions) == 2 else self.conditions
        return (self.name, conds, *(getattr(self, f) for f in FIELDS))


@dataclass
class Reported:
    iri: str
    name: str
    value: float
    tolerance: float | None
    lexical: str
    conditions: tuple[str, ...]
    fields: dict[str, object]  # identifying fields the report states (canonical)
    n: int | None = None
    where: str | None = None  # file:line it was read from

    def title(self) -> str:
        text = self.name + (" " + " vs ".join(self.conditions) if self.conditions else "")
        extra = [f"{v}" for k, v in self.fields.items() if k != "case"]
        if "case" in self.fields:
            text += f" script {self.fields['case']}"
        return f"{text} ({', '.join(extra)})" if extra else text


class StatIndex:
    """All recomputed statistics, indexed for matching reported values."""

    def __init__(self, stats: list[Stat]) -> None:
        self.stats = stats
        self._by_name: dict[str, list[Stat]] = {}
        self._by_conditions: dict[tuple, list[Stat]] = {}  # (name, conditions): no scan per value
        seen: dict[tuple, Stat] = {}
        for s in stats:
            ident = s.identity()
            if ident in seen:
                raise ValueError(f"statistic computed twice: {s.segments()}")
            seen[ident] = s
            self._by_name.setdefault(s.name, []).append(s)
            self._by_conditions.setdefault((s.name, _conditions_key(s.conditions)), []).append(s)

    def match(self, r: Reported) -> tuple[Stat | None, str]:
        """The statistic a reported value states, or None with the reason."""
        pool = list(self._by_conditions.get((r.name, _conditions_key(r.conditions)), []))
        if not pool:
            known = sorted(self._by_name)
            if r.name not in self._by_name:
                return None, f"provgraph does not recompute {r.name!r} (it recomputes: {', '.join(known)})"
            return None, f"no {r.name} is recomputed for conditions {', '.join(r.conditions) or '(none)'}"
        for f, value in r.fields.items():
            # a family named on a value that does not depend on its family (an unadjusted p)
            pool = [s for s in pool if getattr(s, f) == value or (f == "family" and s.family is None)]
        if not pool:
            stated = ", ".join(f"{k}={v}" for k, v in r.fields.items())
            return None, f"no recomputed {r.name} has {stated}"
        unstated = [f for f in FIELDS if f not in r.fields]
        if "route" not in r.fields:
            pool = [s for s in pool if s.role == "primary"] or pool
        bare = [s for s in pool if all(getattr(s, f) is None for f in unstated if f != "route")]
        if len(bare) == 1:
            return bare[0], ""
        if len(pool) == 1:
            return pool[0], ""
        differ = sorted({f for f in unstated for s in pool if getattr(s, f) != getattr(pool[0], f)})
        return (
            None,
            f"ambiguous: {len(pool)} recomputed {r.name} values differ in {', '.join(differ)}; state it",
        )


def _conditions_key(conditions: tuple[str, ...]) -> tuple[str, ...]:
    """Conditions as a lookup key: a pair is unordered."""
    return tuple(sorted(conditions)) if len(conditions) == 2 else conditions


def bootstrap_settings(analysis: dict) -> tuple[int, int, float]:
    """(resamples, seed, level) of the analysis plan's bootstrap clause, with their defaults."""
    boot = analysis.get("bootstrap") or {}
    return int(boot.get("resamples", 10000)), int(boot.get("seed", 0)), float(boot.get("level", 0.95))
