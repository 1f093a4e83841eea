"""``[annotation]``: the findings, and how label states become binary cells.

Its presence puts the annotation clause in force. The mapping of UNCERTAIN and NOT_MENTIONED
has no default on purpose: the audit's candidate uncertainty was folded into "negative" by a
convention nobody declared, and the ``annotation-mapping-undeclared`` rule fires when labels
in such a state exist while the contract is silent about them.

```toml
[annotation]
pool_no_finding = false                                     # No Finding leaves the endpoint
candidate = { uncertain = "exclude", not_mentioned = "negative" }
reference = { uncertain = "positive", not_mentioned = "negative" }
severity = { default = "minor", findings = { Pneumothorax = "major" } }
```
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "annotation"
CLAUSES: tuple[str, ...] = ("annotation",)

#: The 14 CheXpert observations, in the labeler's order.
CHEXPERT_FINDINGS = (
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Lesion",
    "Lung Opacity",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
)
STATES = ("POSITIVE", "NEGATIVE", "UNCERTAIN", "NOT_MENTIONED")
_TARGET = {"type": "string", "enum": ["positive", "negative", "exclude"]}
_MAPPING = {
    "type": "object",
    "properties": {
        "uncertain": {**_TARGET, "description": "What an UNCERTAIN label counts as."},
        "not_mentioned": {**_TARGET, "description": "What a NOT_MENTIONED (blank) label counts as."},
    },
    "additionalProperties": False,
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The labelled findings and the declared reduction of label states to binary cells.",
    "properties": {
        "findings": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
            "minItems": 1,
            "default": list(CHEXPERT_FINDINGS),
            "description": "Findings of the endpoint (default: the 14 CheXpert observations).",
        },
        "no_finding": {
            "type": "string",
            "minLength": 1,
            "default": "No Finding",
            "description": "The finding whose semantics are opposite to the pathology findings.",
        },
        "pool_no_finding": {
            "type": "boolean",
            "default": True,
            "description": "Whether No Finding enters the endpoint like the other findings.",
        },
        "candidate": {**_MAPPING, "description": "Mapping of candidate (extractor) label states."},
        "reference": {**_MAPPING, "description": "Mapping of reference label states."},
        "severity": {
            "type": "object",
            "description": "Severity of FP cells by finding name (a deterministic rule, "
            "not an adjudication).",
            "properties": {
                "default": {
                    "type": "string",
                    "minLength": 1,
                    "default": "minor",
                    "description": "Severity of an FP cell whose finding is not listed in findings.",
                },
                "findings": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "minLength": 1},
                    "description": 'Finding name -> severity of its FP cells (e.g. Pneumothorax = "major").',
                },
            },
            "additionalProperties": False,
        },
        "reference_files": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "description": "Only reference labels read from these files (bundle paths) are the reference.",
        },
        "chexbert_encoding": {
            "type": "string",
            "enum": ["auto", "raw", "converted"],
            "default": "auto",
            "description": "CheXbert output coding: raw classes 0-3, converted 1/0/-1/blank, or detect.",
        },
    },
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    add = ctx.add
    endpoint = ctx.iri("endpoint", "main")
    add(endpoint, RDF_TYPE, PG.Endpoint)
    add(endpoint, PG.contract, ctx.contract_iri)
    add(endpoint, PG.poolsNoFinding, section["pool_no_finding"])
    add(endpoint, PG.settings, json.dumps(section, sort_keys=True))
    for name in section["findings"]:
        finding = ctx.iri("finding", name)
        add(finding, RDF_TYPE, PG.Finding)
        add(finding, PG.key, name)
        add(endpoint, PG.finding, finding)
    for side in ("reference", "candidate"):
        declared = {"POSITIVE": "positive", "NEGATIVE": "negative"}
        for key, target in (section.get(side) or {}).items():
            declared[key.upper()] = target
        for state, target in declared.items():
            mapping = ctx.iri("state-mapping", side, state)
            add(endpoint, PG.mapping, mapping)
            add(mapping, RDF_TYPE, PG.StateMapping)
            add(mapping, PG.side, side)
            add(mapping, PG.labelState, state)
            add(mapping, PG.mapsTo, target)
