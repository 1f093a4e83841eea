"""Contract rules: loading ``.rq`` files, running them as a gate, and reporting."""

from provgraph.rules.rule import CLAUSES, SEVERITIES, Rule, load_rules, parse_rule
from provgraph.rules.runner import CheckReport, RuleResult, Violation, record_check, run_check

__all__ = [
    "CLAUSES",
    "SEVERITIES",
    "CheckReport",
    "Rule",
    "RuleResult",
    "Violation",
    "load_rules",
    "parse_rule",
    "record_check",
    "run_check",
]
