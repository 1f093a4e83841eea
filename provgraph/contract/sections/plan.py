"""``[plan]``: the planned call matrix. Its presence puts the output clause in force."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provgraph.ingest import ImportContext

NAME = "plan"
CLAUSES: tuple[str, ...] = ("output",)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The planned calls every terminal record is reconciled against.",
    "properties": {
        "file": {
            "type": "string",
            "minLength": 1,
            "default": "plan.csv",
            "description": "Plan CSV (call_id, case, condition, replicate), relative to the bundle.",
        },
        "replicates": {
            "type": "integer",
            "minimum": 1,
            "description": "Replicates planned per case and condition.",
        },
    },
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    from provgraph.vocab import PG, RDF_TYPE

    plan = ctx.iri("plan", "main")
    ctx.add(plan, RDF_TYPE, PG.CallPlan)
    ctx.add(plan, PG.contract, ctx.contract_iri)
    ctx.add(plan, PG.planFile, ctx.file_iri(section["file"]))
    ctx.add(plan, PG.replicates, section.get("replicates"))
