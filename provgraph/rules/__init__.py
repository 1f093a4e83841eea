"""Contract rules: loading ``.rq`` files, running them as a gate, and reporting."""

from provgraph.rules.rule import (
    CLAUSES,
    LINEAGE_STATUSES,
    SEVERITIES,
    LineageStatus,
    Rule,
    Severity,
    load_rules,
    parse_rule,
)
from provgraph.rules.runner import (
    OUTCOMES,
    CheckReport,
    Outcome,
    RuleResult,
    Violation,
    record_check,
    run_check,
)

__all__ = [
    "CLAUSES",
    "LINEAGE_STATUSES",
    "OUTCOMES",
    "SEVERITIES",
    "CheckReport",
    "LineageStatus",
    "Outcome",
    "Rule",
    "RuleResult",
    "Severity",
    "Violation",
    "load_rules",
    "parse_rule",
    "record_check",
    "run_check",
]
