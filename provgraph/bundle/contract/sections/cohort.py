"""``[cohort]``: the sampling unit and who may be in the cohort. Puts the cohort clause in force.

```toml
[cohort]
manifest = "cohort.csv"        # case_key, patient_key, source, split, view, inclusion, reason
sampling_unit = "study"
repeated_patients = "forbid"   # a patient contributes at most one included case
allowed_splits = ["test"]
allowed_views = ["PA", "AP"]
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "cohort"
CLAUSES: tuple[str, ...] = ("cohort",)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The intended cohort: what a case is and which cases may enter.",
    "properties": {
        "manifest": {
            "type": "string",
            "minLength": 1,
            "default": "cohort.csv",
            "description": "Cohort manifest CSV (case_key, patient_key, source, split, view, inclusion, "
            "reason), relative to the bundle.",
        },
        "sampling_unit": {
            "enum": ["study", "patient"],
            "default": "study",
            "description": "What one case is. With 'patient', two cases of one patient always fail.",
        },
        "repeated_patients": {
            "enum": ["forbid", "clustered"],
            "default": "forbid",
            "description": "forbid: a patient contributes at most one included case; clustered: "
            "repeated patients are allowed and the analysis must cluster by patient.",
        },
        "allowed_splits": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "uniqueItems": True,
            "description": "Dataset splits cases may come from (e.g. ['test']); compared in lower case.",
        },
        "allowed_views": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "uniqueItems": True,
            "description": "View positions cases may have (e.g. ['PA', 'AP']); compared in upper case.",
        },
        "blank_views_acceptable": {
            "type": "boolean",
            "default": False,
            "description": "false: a blank or missing view position is undocumented and fails.",
        },
    },
    "required": ["allowed_splits", "allowed_views"],
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    node = ctx.iri("cohort-protocol", "main")
    add = ctx.add
    add(node, RDF_TYPE, PG.CohortProtocol)
    add(node, PG.contract, ctx.contract_iri)
    add(node, PG.manifestFile, ctx.file_iri(section["manifest"]))
    add(node, PG.samplingUnit, section["sampling_unit"])
    add(node, PG.repeatedPatientPolicy, section["repeated_patients"])
    add(node, PG.blankViewsAcceptable, section["blank_views_acceptable"])
    for split in section["allowed_splits"]:
        add(node, PG.allowedSplit, split.strip().lower())
    for view in section["allowed_views"]:
        add(node, PG.allowedView, view.strip().upper())
