"""Benchmark-harness statistics: the mean of each per-sample metric, recomputed from the sample
records (``pg:sampleMetrics`` of the ``pg:CallRecord`` nodes a harness importer wrote), per
(model, task, filter, metric). lm-evaluation-harness reports exactly this mean for every metric
whose aggregation is ``mean`` (``lm_eval/evaluator_utils.py`` ``_compute_task_aggregations``),
so a reported value that differs from it was not computed from the logged samples.
"""

from __future__ import annotations

import json
from collections import defaultdict

from provgraph.stats.query import PREFIXES, key_of
from provgraph.stats.statistic import Stat
from provgraph.store.base import Store

METHOD = "mean of the per-sample values the harness logged (one per sample line)"

_SAMPLES = """SELECT ?rec ?cond ?filter ?model ?metrics WHERE {
  { SELECT ?rec ?metrics ?filter ?model ?call WHERE {
      ?rec pg:sampleMetrics ?metrics ; pg:filterName ?filter ; pg:requestedModel ?model ; pg:forCall ?call } }
  { SELECT ?call ?cond WHERE { ?call pg:condition ?cond } } }"""


def harness_statistics(store: Store, base: str) -> list[Stat]:
    """One mean per (model, task, filter, metric) over the sample records that logged it."""
    sums: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    inputs: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in store.select(PREFIXES + _SAMPLES):
        task = key_of(row["cond"].value, base, "condition")  # type: ignore[union-attr]
        model, filt = row["model"].value, row["filter"].value  # type: ignore[union-attr]
        inputs[(model, task, filt)].append(row["rec"].value)  # type: ignore[union-attr]
        for metric, value in json.loads(row["metrics"].value).items():  # type: ignore[union-attr]
            sums[(model, task, filt, metric)].append(float(value))
    stats = []
    for (model, task, filt, metric), values in sorted(sums.items()):
        stats.append(
            Stat(
                name=metric,
                value=sum(values) / len(values),
                method=METHOD,
                n=len(values),
                conditions=(task,),
                variant=filt,
                model=model,
                inputs=tuple(sorted(inputs[(model, task, filt)])),
            )
        )
    return stats
