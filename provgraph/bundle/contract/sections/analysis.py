"""``[analysis]``: the declared analysis. Its presence puts the analysis clause in force and
makes ``provgraph check`` recompute every statistic before the analysis rules run.

```toml
[analysis]
cohort_rule = "globally-complete"          # or "pairwise-available"
sensitivity = ["positional-truncation"]    # named routes computed beside the primary one
clusters = ["study", "patient"]            # cluster-aware inference units
bootstrap = { resamples = 10000, seed = 1, level = 0.95 }
harness = "lm-eval"                        # reported metrics come from a harness's samples

[[analysis.family]]
name = "mcnemar-all-pairs"
size = 45                                  # the declared family size
adjustments = ["holm"]
```
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "analysis"
CLAUSES: tuple[str, ...] = ("analysis",)

PRIMARY_RULES = ["globally-complete", "pairwise-available"]
ROUTES = ["globally-complete", "pairwise-available", "positional-truncation"]
ADJUSTMENTS = ["holm", "bonferroni", "bh"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "How statistics are recomputed from keyed subgraphs.",
    "properties": {
        "cells": {
            "type": "string",
            "enum": ["auto", "labels", "reported"],
            "default": "auto",
            "description": "Binary cells from labels (reference x candidate), from a reported confusion-cell "
            "matrix, or auto (labels when candidate labels exist).",
        },
        "harness": {
            "type": "string",
            "enum": ["lm-eval"],
            "description": "The benchmark harness whose per-sample output the reported metrics must "
            "be recomputed from (its samples are then required: the harness rules apply).",
        },
        "conditions": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
            "description": "The conditions of the matrix, in display order "
            "(default: every condition with cells).",
        },
        "replicate": {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "Which replicate of each (case, condition) enters the matrix.",
        },
        "omnibus": {
            "type": "boolean",
            "default": True,
            "description": "Compute Cochran's Q over the conditions (on the globally complete blocks).",
        },
        "cohort_rule": {
            "type": "string",
            "enum": PRIMARY_RULES,
            "default": "globally-complete",
            "description": "Which blocks enter the omnibus test and, unless a family says "
            "otherwise, the post-hoc tests.",
        },
        "sensitivity": {
            "type": "array",
            "items": {"type": "string", "enum": ROUTES},
            "uniqueItems": True,
            "default": ["positional-truncation", "pairwise-available"],
            "description": "Routes computed beside the primary one as named sensitivity analyses.",
        },
        "alpha": {
            "type": "number",
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1,
            "default": 0.05,
            "description": "Significance level of the omnibus and post-hoc tests.",
        },
        "clusters": {
            "type": "array",
            "items": {"type": "string", "enum": ["study", "patient"]},
            "uniqueItems": True,
            "default": ["study", "patient"],
            "description": "Units for cluster-aware inference (patient needs pg:patient links of the cases).",
        },
        "bootstrap": {
            "type": "object",
            "properties": {
                "resamples": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 10000,
                    "description": "Cluster bootstrap resamples (0: no bootstrap intervals).",
                },
                "seed": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Seed of the resampling, so the intervals are reproducible.",
                },
                "level": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "exclusiveMaximum": 1,
                    "default": 0.95,
                    "description": "Confidence level of the bootstrap intervals.",
                },
            },
            "additionalProperties": False,
            "default": {},
            "description": "The cluster bootstrap of the confidence intervals.",
        },
        "family": {
            "type": "array",
            "description": "Declared multiplicity families.",
            "items": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                        "description": "Family name (letters, digits, '.', '_' or '-'); the statistics "
                        "name it.",
                    },
                    "test": {
                        "type": "string",
                        "enum": ["mcnemar"],
                        "default": "mcnemar",
                        "description": "The paired test each member of the family runs.",
                    },
                    "size": {"type": "integer", "minimum": 1, "description": "Declared number of tests."},
                    "adjustments": {
                        "type": "array",
                        "items": {"type": "string", "enum": ADJUSTMENTS},
                        "uniqueItems": True,
                        "default": ["holm"],
                        "description": "Multiplicity adjustments reported for the family's p-values.",
                    },
                    "cohort_rule": {
                        "type": "string",
                        "enum": PRIMARY_RULES,
                        "description": "Which blocks enter the family's tests (default: the "
                        "section's cohort_rule).",
                    },
                    "denominator": {
                        "type": "string",
                        "enum": ["fixed", "varying"],
                        "default": "fixed",
                        "description": "varying declares that tests of the family may use different n.",
                    },
                    "pairs": {
                        "type": "array",
                        "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                        "description": "The pairs of conditions in the family (default: all pairs).",
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
            "default": [],
        },
    },
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    add = ctx.add
    plan = ctx.iri("analysis-plan", "main")
    add(plan, RDF_TYPE, PG.AnalysisPlan)
    add(plan, PG.contract, ctx.contract_iri)
    add(plan, PG.cohortRule, section["cohort_rule"])
    add(plan, PG.alpha, float(section["alpha"]))
    add(plan, PG.settings, json.dumps(section, sort_keys=True))
    add(plan, PG.harness, section.get("harness"))
    for family in section["family"]:
        node = ctx.iri("family", family["name"])
        add(node, RDF_TYPE, PG.Family)
        add(node, PG.contract, ctx.contract_iri)
        add(node, PG.name, family["name"])
        add(node, PG.test, family["test"])
        add(node, PG.declaredSize, family.get("size"))
        add(node, PG.cohortRule, family.get("cohort_rule", section["cohort_rule"]))
        add(node, PG.denominator, family["denominator"])
        for adjustment in family["adjustments"]:
            add(node, PG.adjustment, adjustment)
