"""Per-sample score statistics: the metrics an eval harness reports, recomputed from its samples.

Read from ``pg:SampleScore`` nodes (one scorer's score of one sample epoch that completed without
error, as the Inspect AI importer writes them). Per condition and scorer, each sample's epochs
are reduced by their mean (Inspect's default ``epochs_reducer``), then over the samples:
``accuracy`` and ``mean`` (their mean, as Inspect's ``accuracy()`` and ``mean()``), ``std``
(sample standard deviation, ddof 1) and ``stderr`` (``std / sqrt(n)``, 0 below two samples, as
Inspect's unclustered ``stderr()``), each named with the scorer as its variant. A scorer whose
run reduces epochs otherwise (mode, max, pass_at_k...) is left out with a note.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from provgraph.stats.query import PREFIXES, key_of
from provgraph.stats.statistic import VARIANT_ALIASES, Stat, canonical
from provgraph.store.base import Store

METHOD = {
    "accuracy": "mean over samples of the sample's score (its epochs' mean), as value_to_float reads it",
    "mean": "mean over samples of the sample's score (its epochs' mean)",
    "std": "sample standard deviation (ddof 1) of the samples' scores",
    "stderr": "sample standard deviation (ddof 1) of the samples' scores / sqrt(n)",
}


def score_statistics(store: Store, base: str) -> tuple[list[Stat], list[str]]:
    """Recomputed metrics per (condition, scorer), and notes on what was left out."""
    rows = store.select(
        PREFIXES
        + """SELECT ?cond ?scorer ?case ?epoch ?value ?run ?reducer WHERE {
               ?s a pg:SampleScore ; pg:condition ?cond ; pg:scorer ?scorer ; pg:case ?case ;
                  pg:replicate ?epoch ; pg:scoreValue ?value ; pg:evalRun ?run .
               OPTIONAL { ?run pg:epochsReducer ?reducer } }"""
    )
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    runs: dict[tuple[str, str], set[str]] = defaultdict(set)
    skipped: set[tuple[str, str, str]] = set()
    for r in rows:
        cond = key_of(r["cond"].value, base, "condition")  # type: ignore[union-attr]
        scorer = r["scorer"].value  # type: ignore[union-attr]
        reducer = r["reducer"].value if r["reducer"] else "mean"  # type: ignore[union-attr]
        if reducer.split(",")[0] != "mean":
            skipped.add((cond, scorer, reducer))
            continue
        case = key_of(r["case"].value, base, "case")  # type: ignore[union-attr]
        groups[(cond, scorer)][case].append(float(r["value"].value))  # type: ignore[union-attr]
        runs[(cond, scorer)].add(r["run"].value)  # type: ignore[union-attr]
    stats: list[Stat] = []
    for (cond, scorer), by_case in sorted(groups.items()):
        per_sample = np.array([np.mean(v) for v in by_case.values()], dtype=float)
        n = int(per_sample.size)
        std = float(np.std(per_sample, ddof=1)) if n > 1 else 0.0
        values = {
            "accuracy": float(np.mean(per_sample)),
            "mean": float(np.mean(per_sample)),
            "std": std,
            "stderr": std / float(np.sqrt(n)) if n > 1 else 0.0,
        }
        variant = canonical(scorer, VARIANT_ALIASES)
        inputs = tuple(sorted(runs[(cond, scorer)]))
        for name, value in values.items():
            stats.append(
                Stat(
                    name,
                    value,
                    f"{METHOD[name]}; scorer {scorer}",
                    n=n,
                    variant=variant,
                    conditions=(cond,),
                    inputs=inputs,
                )
            )
    notes = [
        f"scorer {scorer} of condition {cond}: epochs reduced by {reducer}, not recomputed (only mean is)"
        for cond, scorer, reducer in sorted(skipped)
    ]
    return stats, notes
