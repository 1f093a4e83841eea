"""The picture as plain data: :class:`View` (boxes and arrows), and the violations
(:class:`Mark`) a picture shows on its boxes.

Views are built from the store by :mod:`provgraph.views.whole` (the collapsed whole graph) and
:mod:`provgraph.views.nodes` (one box per node); :mod:`provgraph.views.dot` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from provgraph.rdf.vocab import PG_NS
from provgraph.store.base import Store
from provgraph.views.vocabulary import State

if TYPE_CHECKING:  # for the annotation only: `provgraph viz` need not load the rule runner
    from provgraph.rules.runner import CheckReport


@dataclass
class Box:
    """One box of a picture: a group of like nodes, one node, or nodes referenced but absent."""

    id: str
    cls: str | None  # class IRI
    kind: str | None  # entity | activity | agent | None
    state: str | None  # state IRI
    title: str
    count: int = 1
    group: bool = False
    absent: bool = False
    iri: str | None = None
    facets: list[str] = field(default_factory=list)
    violations: dict[str, int] = field(default_factory=dict)  # rule id -> nodes in this box
    focus: bool = False

    @property
    def flagged(self) -> bool:
        return bool(self.violations)


@dataclass
class Arrow:
    """Triples from ``tail`` to ``head`` with one predicate (PROV direction: derived -> source)."""

    tail: str
    head: str
    predicate: str
    label: str
    count: int = 1


@dataclass
class View:
    title: str
    boxes: dict[str, Box]
    arrows: list[Arrow]
    states: dict[str, State]
    notes: list[str] = field(default_factory=list)
    status: str | None = None  # lineage views: the claim status
    #: lineage views of a target that matched several nodes: (status, label [location]) each
    matches: list[tuple[str, str]] = field(default_factory=list)

    def box_for(self, iri: str) -> Box | None:
        for b in self.boxes.values():
            if b.iri == iri:
                return b
        return None

    @property
    def violation_count(self) -> int:
        return sum(sum(b.violations.values()) for b in self.boxes.values())


@dataclass(frozen=True)
class Mark:
    """A violation to show on the picture: the rule that fired and its focus node."""

    focus: str
    rule_id: str


def recorded_violations(store: Store) -> list[Mark] | None:
    """Violations written by the last ``provgraph check`` (None when no check is recorded)."""
    if not store.ask(f"ASK {{ ?c a <{PG_NS}Check> }}"):
        return None
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?focus ?rule WHERE {{
          ?v a pg:Violation ; pg:focus ?focus ; pg:rule/pg:ruleId ?rule }}"""
    )
    return [Mark(r["focus"].value, r["rule"].value) for r in rows]  # type: ignore[union-attr]


def marks_from_report(report: CheckReport) -> list[Mark]:
    """Violations of an in-process check run."""
    return [Mark(v.focus, r.rule.id) for r in report.results for v in r.violations]
