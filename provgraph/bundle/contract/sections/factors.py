"""``[factors]``: a factorial design, expanded at load time into the ``[conditions]`` it
stands for, so that every rule reads the same graph a hand-crossed contract writes.

```toml
[factors]
system_prompt = { A = "prompts/a.txt", B = "prompts/b.txt", C = "prompts/c.txt" }
model = ["gpt4o", "sonnet"]          # keys of [models]; each is one level
replicates = 3                       # fills [plan] replicates
```

The conditions are the cross product of the levels, keyed by the levels joined with ``.`` in
the order the factors are written (``A.gpt4o``, ``A.sonnet``, ``B.gpt4o``, ...). Two conditions
whose prompt levels differ get ``differs_from`` each other: their executed prompts must differ.
Two that differ only in the model level are expected to send the same prompt. A ``[plan]``
with ``cases`` plans every case x condition x replicate; a plan file names a subset, and a row
naming a condition (or a replicate) the design lacks is a problem of that row. ``[factors]``
and ``[conditions]`` together are an error: one contract states its conditions once.
"""

from __future__ import annotations

import itertools
from typing import Any

NAME = "factors"
#: The clauses come from the ``[conditions]`` the design expands to.
CLAUSES: tuple[str, ...] = ()
#: A level name; no ``.``, which joins the levels into a condition key.
LEVEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
PROMPT_FACTORS = ("system_prompt", "user_prompt")
#: Most conditions a design may expand to (each pair of them may become a pair to compare).
MAX_CELLS = 1000
_PATH = {"type": "string", "minLength": 1, "description": "The file holding this level's exact prompt text."}


def _prompt_factor(role: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": f"Levels of the {role} prompt: level name -> file holding its exact text.",
        "patternProperties": {LEVEL_PATTERN: _PATH},
        "additionalProperties": False,
        "minProperties": 1,
    }


SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A factorial design: its conditions are the cross product of the levels.",
    "properties": {
        "system_prompt": _prompt_factor("system"),
        "user_prompt": _prompt_factor("user"),
        "model": {
            "type": "array",
            "items": {"type": "string", "pattern": LEVEL_PATTERN, "description": "a key of [models]"},
            "minItems": 1,
            "uniqueItems": True,
            "description": "Model levels: keys of [models].",
        },
        "replicates": {
            "type": "integer",
            "minimum": 1,
            "description": "Replicates per case and condition (sets [plan] replicates).",
        },
    },
    "additionalProperties": False,
}


def check(section: dict[str, Any], data: dict[str, Any]) -> list[tuple[list[str], str]]:
    """What the schema cannot say: a factor to cross, model levels that exist, one
    statement of the conditions, and replicates that agree with ``[plan]``."""
    if "conditions" in data:
        return [([NAME], "give either [factors] or [conditions], not both")]
    if not any(k in section for k in (*PROMPT_FACTORS, "model")):
        return [([NAME], "a design needs at least one factor (system_prompt, user_prompt or model)")]
    size = 1
    for factor in (*PROMPT_FACTORS, "model"):
        size *= len(section.get(factor) or [None])
    if size > MAX_CELLS:
        return [([NAME], f"the design crosses to {size} conditions, more than the {MAX_CELLS} allowed")]
    models = data.get("models") or {}
    for level in section.get("model", []):
        if level not in models:
            return [([NAME, "model"], f"no [models.{level}] entry declares model level {level!r}")]
    plan = data.get("plan")
    if plan is not None and plan.get("conditions"):
        designed = {key for key, _ in cells(section)}
        outside = [c for c in plan["conditions"] if c not in designed]
        if outside:
            return [(["plan", "conditions"], f"condition {outside[0]!r} is not a cell of [factors]")]
    replicates = section.get("replicates")
    if replicates is not None:
        if plan is None:
            return [([NAME, "replicates"], "replicates need a [plan]: cases = [...] or a plan file")]
        if plan.get("replicates", replicates) != replicates:
            reason = f"{replicates} replicates here but {plan['replicates']} in [plan]: state them once"
            return [([NAME, "replicates"], reason)]
    return []


def cells(section: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """Each condition of the design: its key and its level of each factor, in the order the
    factors are written."""
    factors = [(k, list(v)) for k, v in section.items() if k in (*PROMPT_FACTORS, "model")]
    found = []
    for levels in itertools.product(*(names for _, names in factors)):
        named = {name: level for (name, _), level in zip(factors, levels, strict=True)}
        found.append((".".join(levels), named))
    return found


def expand(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``[conditions]`` (and ``[plan]`` replicates) written out from
    ``[factors]``; ``data`` unchanged when it has none. Run after :func:`check`."""
    section = data.get(NAME)
    if section is None:
        return data
    design = cells(section)
    conditions: dict[str, Any] = {}
    for index, (key, levels) in enumerate(design):
        prompt = {role: levels[role] for role in PROMPT_FACTORS if role in levels}
        spec: dict[str, Any] = {role: section[role][level] for role, level in prompt.items()}
        if "model" in levels:
            spec["model"] = levels["model"]
        # each pair once, at its first condition in design order
        spec["differs_from"] = [
            other
            for other, theirs in design[index + 1 :]
            if any(theirs[r] != level for r, level in prompt.items())
        ]
        conditions[key] = spec
    out = {**data, "conditions": conditions}
    if "replicates" in section:
        out["plan"] = {**data["plan"], "replicates": section["replicates"]}
    return out
