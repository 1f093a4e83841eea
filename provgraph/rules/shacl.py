"""The check result as a SHACL validation report in Turtle (``check --format shacl``).

Written the way SHACL engines write theirs (https://www.w3.org/TR/shacl/#validation-report):
one ``sh:ValidationReport`` with ``sh:conforms`` and one ``sh:ValidationResult`` per violation,
carrying ``sh:focusNode``, ``sh:sourceShape`` and ``sh:sourceConstraint`` (the rule's node, the
IRI :func:`provgraph.rules.record_check` gives it in the store), ``sh:sourceConstraintComponent``
(``sh:SPARQLConstraintComponent``: every rule is a SPARQL query), ``sh:resultSeverity``
(``sh:Violation`` for ``fail``, ``sh:Warning`` for ``restrict``, ``sh:Info`` for ``info``) and
``sh:resultMessage``; plus ``pg:ruleId``, ``pg:clause`` (``pg:OutputClause``...),
``pg:severity``, ``pg:outcome`` and, where known, ``pg:path`` / ``pg:sourceLine`` of the source.

As in SHACL, ``sh:conforms`` is true only when there is no result at all (a restrict violation
is a ``sh:Warning`` result: it does not block provgraph's gate but the data does not conform);
the report's ``pg:outcome`` carries the gate's own verdict (``pass``, ``fail``, ``empty``). The gate fails
closed, and so does this report: a rule that could not run is a ``sh:Violation`` result whose
focus is the rule's node, with ``pg:outcome "error"``.
"""

from __future__ import annotations

import re

import pyoxigraph as ox

from provgraph.rdf.terms import mint
from provgraph.rdf.vocab import PG, PG_NS, RDF_NS, RDFS_NS, XSD_NS
from provgraph.rules.runner import CheckReport, RuleResult

SH_NS = "http://www.w3.org/ns/shacl#"
_SEVERITY = {"fail": "Violation", "restrict": "Warning", "info": "Info"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_PREFIXES = {"sh": SH_NS, "pg": PG_NS, "rdfs": RDFS_NS, "xsd": XSD_NS}


def _sh(name: str) -> ox.NamedNode:
    return ox.NamedNode(SH_NS + name)


def _pg(name: str) -> ox.NamedNode:
    return ox.NamedNode(getattr(PG, name))  # only terms the ontology defines


_TYPE = ox.NamedNode(RDF_NS + "type")
_DATETIME = ox.NamedNode(XSD_NS + "dateTime")


def _node(value: str) -> ox.NamedNode | ox.Literal:
    """A focus as the term the rule bound (an IRI), or as a literal when it is not an IRI."""
    if _SCHEME.match(value):
        try:
            return ox.NamedNode(value)
        except ValueError:
            pass
    return ox.Literal(value)


def to_shacl(report: CheckReport) -> str:
    """``report`` as a SHACL validation report (Turtle)."""
    root = ox.BlankNode("report")
    triples = [
        ox.Triple(root, _TYPE, _sh("ValidationReport")),
        ox.Triple(
            root, _pg("outcome"), ox.Literal("empty" if report.empty else "pass" if report.passed else "fail")
        ),
        ox.Triple(root, ox.NamedNode(RDFS_NS + "label"), ox.Literal(f"provgraph check: {report.project}")),
        ox.Triple(root, _pg("strict"), ox.Literal(report.strict)),
        ox.Triple(root, _pg("startedAt"), ox.Literal(report.started.isoformat(), datatype=_DATETIME)),
    ]
    n = 0
    for r in report.results:
        rule = ox.NamedNode(mint(report.base_iri or "urn:provgraph:", "rule", r.rule.id))
        if r.outcome == "error":
            n += 1
            message = f"rule {r.rule.id} could not run: {r.error or 'unknown error'}"
            triples += _result(root, n, r, rule, rule, "Violation", message, "error")
        for v in r.violations:
            n += 1
            result = _result(
                root, n, r, rule, _node(v.focus), _SEVERITY[r.rule.severity], v.message, r.outcome
            )
            node = result[1].subject  # the result node (result[0] links the report to it)
            if v.path:
                result.append(ox.Triple(node, _pg("path"), ox.Literal(v.path)))
            if v.line is not None:
                result.append(ox.Triple(node, _pg("sourceLine"), ox.Literal(v.line)))
            triples += result
    triples.insert(1, ox.Triple(root, _sh("conforms"), ox.Literal(n == 0)))
    return ox.serialize(triples, format=ox.RdfFormat.TURTLE, prefixes=_PREFIXES).decode("utf-8")


def _result(
    root: ox.BlankNode,
    n: int,
    r: RuleResult,
    rule: ox.NamedNode,
    focus: ox.NamedNode | ox.Literal,
    severity: str,
    message: str,
    outcome: str,
) -> list[ox.Triple]:
    node = ox.BlankNode(f"r{n}")
    return [
        ox.Triple(root, _sh("result"), node),
        ox.Triple(node, _TYPE, _sh("ValidationResult")),
        ox.Triple(node, _sh("focusNode"), focus),
        ox.Triple(node, _sh("sourceShape"), rule),
        ox.Triple(node, _sh("sourceConstraint"), rule),
        ox.Triple(node, _sh("sourceConstraintComponent"), _sh("SPARQLConstraintComponent")),
        ox.Triple(node, _sh("resultSeverity"), _sh(severity)),
        ox.Triple(node, _sh("resultMessage"), ox.Literal(message)),
        ox.Triple(node, _pg("ruleId"), ox.Literal(r.rule.id)),
        ox.Triple(node, _pg("clause"), _pg(f"{r.rule.clause.capitalize()}Clause")),
        ox.Triple(node, _pg("severity"), ox.Literal(r.rule.severity)),
        ox.Triple(node, _pg("outcome"), ox.Literal(outcome)),
    ]
