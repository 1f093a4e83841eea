"""``[plan]``: the planned call matrix. Its presence puts the output clause in force.

Either an explicit plan file (``file``, default ``plan.csv``: call_id, case, condition,
replicate), or the matrix ``cases`` x ``conditions`` x ``replicates`` written here, whose call
ids are ``<condition>--<case>--<replicate>`` (the ``custom_id`` a batch request must carry).
``decoding`` states the settings every call must record (temperature, top_p, max_tokens,
seed). ``accept_statuses`` names the non-success final states the protocol accepts as answers
(``length`` for a protocol that scores truncated answers); every other one is a violation.

```toml
[plan]
file = "plan.csv"              # call_id, case, condition, replicate
accept_statuses = ["length"]   # this protocol scores truncated answers
decoding = { temperature = 0, max_tokens = 512 }
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

#: The final states of a call that carry no usable answer (the statuses importers write).
NON_SUCCESS = ("length", "refused", "error", "expired", "canceled", "timeout", "parse_error")
NAME = "plan"
CLAUSES: tuple[str, ...] = ("output",)
_KEY = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The planned calls every terminal record is reconciled against.",
    "properties": {
        "file": {
            "type": "string",
            "minLength": 1,
            "default": "plan.csv",
            "description": "Plan CSV (call_id, case, condition, replicate), relative to the bundle; "
            "not read when the matrix (cases) is given.",
        },
        "replicates": {
            "type": "integer",
            "minimum": 1,
            "description": "Replicates planned per case and condition.",
        },
        "cases": {
            "type": "array",
            "items": _KEY,
            "minItems": 1,
            "uniqueItems": True,
            "description": "Case keys of the call matrix (instead of a plan file).",
        },
        "conditions": {
            "type": "array",
            "items": _KEY,
            "minItems": 1,
            "uniqueItems": True,
            "description": "Condition keys of the call matrix (default: every [conditions] key).",
        },
        "accept_statuses": {
            "type": "array",
            "items": {"enum": sorted(NON_SUCCESS)},
            "uniqueItems": True,
            "default": [],
            "description": "Non-success final states the protocol accepts (e.g. length).",
        },
        "decoding": {
            "type": "object",
            "description": "Decoding settings every call must record.",
            "properties": {
                "temperature": {"type": "number", "minimum": 0, "description": "Sampling temperature."},
                "top_p": {"type": "number", "minimum": 0, "maximum": 1, "description": "Nucleus mass."},
                "max_tokens": {"type": "integer", "minimum": 1, "description": "Output token limit."},
                "seed": {"type": "integer", "description": "Sampling seed sent with each call."},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}


def plan_file(section: dict[str, Any] | None) -> str | None:
    """The plan CSV the section names (``plan.csv`` by default), None for a matrix plan."""
    if section is None or "cases" in section:
        return None
    return section.get("file", "plan.csv")


def matrix_conditions(section: dict[str, Any], data: dict[str, Any]) -> list[str]:
    return list(section.get("conditions") or (data.get("conditions") or {}).keys())


def call_id(condition: str, case: str, replicate: int) -> str:
    """Call id of one cell of the matrix (a batch request's custom_id)."""
    return f"{condition}--{case}--{replicate}"


def check(section: dict[str, Any], data: dict[str, Any]) -> list[tuple[list[str], str]]:
    if "cases" not in section:
        if "conditions" in section:
            return [([NAME, "conditions"], "conditions of the matrix need cases too")]
        return []
    if "file" in section:
        return [([NAME, "cases"], "give either a plan file or the matrix (cases), not both")]
    if not matrix_conditions(section, data):
        return [([NAME, "cases"], "the matrix needs conditions: list them here or declare [conditions]")]
    return []


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    add = ctx.add
    plan = ctx.iri("plan", "main")
    add(plan, RDF_TYPE, PG.CallPlan)
    add(plan, PG.contract, ctx.contract_iri)
    file = plan_file(section)
    if file:
        add(plan, PG.planFile, ctx.file_iri(file))
    add(plan, PG.replicates, section.get("replicates"))
    for status in section.get("accept_statuses", []):
        add(plan, PG.acceptedStatus, status)
    decoding = section.get("decoding") or {}
    for key, prop in (("temperature", PG.temperature), ("top_p", PG.topP)):
        if key in decoding:
            add(plan, prop, float(decoding[key]))
    for key, prop in (("max_tokens", PG.maxTokens), ("seed", PG.seed)):
        add(plan, prop, decoding.get(key))
    if "cases" not in section:
        return
    conditions = matrix_conditions(section, ctx.bundle.contract.data)
    for case in section["cases"]:
        add(ctx.iri("case", case), RDF_TYPE, PG.Case)
        add(ctx.iri("case", case), PG.key, case)
    for condition in conditions:
        add(ctx.iri("condition", condition), RDF_TYPE, PG.Condition)
        add(ctx.iri("condition", condition), PG.key, condition)
    for condition in conditions:
        for case in section["cases"]:
            for replicate in range(1, section.get("replicates", 1) + 1):
                cid = call_id(condition, case, replicate)
                node = ctx.iri("call", cid)
                add(node, RDF_TYPE, PG.PlannedCall)
                add(node, PG.callId, cid)
                add(node, PG.case, ctx.iri("case", case))
                add(node, PG.condition, ctx.iri("condition", condition))
                add(node, PG.replicate, replicate)
                add(node, PG.inPlan, plan)
                add(node, PG.sourceFile, ctx.source_iri)
