"""The Inspect AI eval log format: what its fields mean, shared by the importer and its tests.

Shapes from UKGovernmentBEIS/inspect_ai: ``model/_model_output.py`` (``StopReason``),
``log/_log.py`` (``EvalSampleLimit.type``, ``attachments``), ``scorer/_metric.py``
(``value_to_float``: C 1, P 0.5, I and N 0, yes/true 1, no/false 0, numbers as they are).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from provgraph.evidence.identity import Prompt, model_family, prompt_from_messages

_NOT_KEY = re.compile(r"[^A-Za-z0-9_.-]+")
#: Inspect's ``stop_reason`` values (model/_model_output.py StopReason) -> provgraph status
STOP_STATUS = {
    "stop": "ok",
    "tool_calls": "ok",
    "unknown": "ok",
    "max_tokens": "length",
    "model_length": "length",
    "content_filter": "refused",
}
#: a sample that hit a limit (EvalSampleLimit.type) did not finish its answer
LIMIT_STATUS = {"time": "timeout", "working": "timeout", "operator": "canceled", "custom": "error"}


def condition_key(spec: dict[str, Any]) -> str:
    """The condition a log's samples ran under: ``metadata.condition``, else
    ``<task>.<model family>`` (``mmlu_0_shot.gpt-4o`` for ``inspect_evals/mmlu_0_shot`` on
    ``openai/gpt-4o``), so one task run on two models is two conditions."""
    meta = spec.get("metadata") if isinstance(spec.get("metadata"), dict) else {}
    name = meta.get("condition") if isinstance(meta.get("condition"), str) else None
    if not name:
        name = str(spec.get("task") or "task").rsplit("/", 1)[-1]
        if isinstance(spec.get("model"), str) and spec["model"].strip():
            name += "." + model_family(spec["model"])
    return _NOT_KEY.sub("_", name).strip("_.-") or "task"


def score_float(value: Any) -> float | None:
    """A score value as ``value_to_float`` (scorer/_metric.py) reads it; None for a list or dict."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    if not isinstance(value, str):
        return None
    if value in ("C", "P", "I", "N"):
        return {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}[value]
    text = value.lower()
    if text in ("yes", "true"):
        return 1.0
    if text in ("no", "false"):
        return 0.0
    try:
        return float(text)
    except ValueError:
        return None


def sample_prompt(messages: Any, sample_input: Any, attachments: dict[str, Any]) -> Prompt | None:
    """The executed prompt: system and user messages the sample sent (its input if none)."""
    if isinstance(messages, list) and messages:
        return prompt_from_messages(messages)
    sample_input = resolve_attachments(sample_input, attachments)
    if isinstance(sample_input, str):
        return Prompt(None, sample_input)
    if isinstance(sample_input, list):
        return prompt_from_messages(sample_input)
    return None


def resolve_attachments(value: Any, attachments: dict[str, Any]) -> Any:
    """Content the log moved to ``attachments`` (``attachment://<id>``) put back in place."""
    if isinstance(value, str) and value.startswith("attachment://"):
        found = attachments.get(value[len("attachment://") :])
        return found if isinstance(found, str) else value
    if isinstance(value, list):
        return [resolve_attachments(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: resolve_attachments(v, attachments) for k, v in value.items()}
    return value


def plain_json(value: Any) -> Any:
    """JSON values with decimals as floats (for canonical JSON)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [plain_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_json(v) for k, v in value.items()}
    return value


def log_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def completion_text(output: dict[str, Any]) -> str | None:
    """A ModelOutput's text: its ``completion`` (written since Inspect 0.3.5x), else the text of
    its first choice's message (older logs: a string, or content parts of type text)."""
    if isinstance(output.get("completion"), str):
        return output["completion"]
    choices = output.get("choices") if isinstance(output.get("choices"), list) else []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None
