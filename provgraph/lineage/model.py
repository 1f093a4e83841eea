"""What a lineage is: which edges it walks, the nodes and edges it returns, and the status policy.

**Which edges.** Lineage walks, from the derived node towards its sources, every edge whose
property is ``prov:wasDerivedFrom``, ``prov:wasGeneratedBy``, ``prov:used``,
``prov:wasInformedBy``, ``prov:hadPrimarySource``, ``prov:hadMember`` or declared
``rdfs:subPropertyOf`` one of them (transitively, read from the ontology graph with a SPARQL
``rdfs:subPropertyOf*`` path), and backwards every property marked ``pg:lineageInverse``. A
claim or registry value with no explicit ``pg:recomputedAs`` is also linked to every
``pg:Statistic`` with the same ``pg:statName`` whose value rounds to the claim's value at its
written precision (an *inferred* edge, marked as such; see :mod:`provgraph.lineage.trace`),
unless the statistic is of a condition the number is not bound to (a value equal to another
condition's statistic is no evidence). Also inferred: a percentage stated over k/n comes from
the claim on its line writing k/n (when 100 k/n rounds to it), and a significance threshold
(``p < 0.05``) from the analysis plan declaring that alpha.

**Which status.** The status is the strongest limitation found anywhere in the lineage (the
audit's rule: "when several defects affected one claim, the strongest limitation governed its
disposition"), ordered retained < restricted < unverifiable < withdrawn:

- a recorded ``pg:Violation`` on any node maps through its severity: ``fail`` -> withdrawn,
  ``restrict`` -> restricted, ``info`` -> no limitation; a rule whose header names another
  status (``lineage:``, recorded on its violations as ``pg:lineageStatus``) maps to that instead,
  e.g. unverifiable when evidence was not retained (a derived artifact with no build record);
- a registry value marked ``superseded`` or ``withdrawn`` -> withdrawn;
- unverifiable when evidence is missing: no check has been recorded in the store, a rule in
  force could not run, a node on the chain is referenced but described by no import (its
  source was not retained), or a number (claim or reported value) reaches no statistic,
  registry value, build record or (for a threshold) analysis plan;
- otherwise retained.

Violations are those recorded by the last ``provgraph check`` (see
:func:`provgraph.rules.record_check`); run the check after each ingest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from provgraph.rdf.vocab import PG_NS, PROV_NS, RDFS_NS
from provgraph.store.base import Store

#: The status of a claim, weakest limitation first.
ClaimStatus = Literal["retained", "restricted", "unverifiable", "withdrawn"]
STATUSES: tuple[ClaimStatus, ...] = get_args(ClaimStatus)
SEVERITY_STATUS: dict[str, ClaimStatus | None] = {
    "fail": "withdrawn",
    "restrict": "restricted",
    "info": None,
}
LINEAGE_ROOTS = tuple(
    PROV_NS + p
    for p in ("wasDerivedFrom", "wasGeneratedBy", "used", "wasInformedBy", "hadPrimarySource", "hadMember")
)


@dataclass
class Violation:
    """A recorded violation on a node, and the status it implies (None for info rules)."""

    rule: str
    severity: str
    message: str
    status: ClaimStatus | None


@dataclass
class Node:
    """One node of a lineage, described for display."""

    iri: str
    label: str
    classes: list[str] = field(default_factory=list)  # class labels, most specific first
    state: str | None = None  # intended, executed, observed, analyzed, reported, released
    path: str | None = None
    line: int | None = None
    described: bool = True  # False: referenced, but no import states anything about it
    violations: list[Violation] = field(default_factory=list)

    @property
    def location(self) -> str | None:
        if self.path is None:
            return None
        return f"{self.path}:{self.line}" if self.line is not None else self.path


@dataclass(frozen=True)
class Edge:
    """``source`` (derived) comes from ``target`` through ``prop``."""

    source: str
    target: str
    prop: str
    label: str
    inferred: bool = False


@dataclass
class Reason:
    """Why the status is what it is: one limitation found on the chain."""

    status: ClaimStatus
    text: str
    node: str | None = None
    rule: str | None = None


@dataclass
class Sampled:
    """``total`` sources of ``source`` through ``prop``, of which ``shown`` are traced;
    ``at_least``: the total is a lower bound (no check recorded the count, and counting stopped)."""

    source: str
    prop: str
    label: str
    total: int
    shown: list[str]
    at_least: bool = False


@dataclass
class Lineage:
    """The chain from ``root`` back to its sources, with its status and the reasons for it."""

    root: str
    nodes: dict[str, Node]
    edges: list[Edge]
    status: ClaimStatus
    reasons: list[Reason]
    truncated: bool = False
    sampled: list[Sampled] = field(default_factory=list)

    def children(self, iri: str) -> list[Edge]:
        """Edges from ``iri`` towards what it came from."""
        return [e for e in self.edges if e.source == iri]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the ``--format json`` output)."""
        return {
            "root": self.root,
            "status": self.status,
            "truncated": self.truncated,
            "sampled": [x.__dict__ for x in self.sampled],
            "reasons": [r.__dict__ for r in self.reasons],
            "nodes": [
                {
                    "iri": n.iri,
                    "label": n.label,
                    "classes": n.classes,
                    "state": n.state,
                    "location": n.location,
                    "described": n.described,
                    "violations": [v.__dict__ for v in n.violations],
                }
                for n in self.nodes.values()
            ],
            "edges": [e.__dict__ for e in self.edges],
        }


def worst(statuses: list[ClaimStatus | None]) -> ClaimStatus:
    """The strongest limitation among ``statuses`` ('retained' when there is none).

    >>> worst(["restricted", None, "unverifiable"])
    'unverifiable'
    """
    found = [s for s in statuses if s]
    return max(found, key=STATUSES.index) if found else "retained"


def status_of(severity: str, recorded: str | None = None) -> ClaimStatus | None:
    """The claim status a violation implies: the one its rule's header names (recorded on the
    violation as ``pg:lineageStatus``), else its severity's."""
    if recorded in STATUSES:
        return recorded  # type: ignore[return-value]  # checked against STATUSES
    return SEVERITY_STATUS.get(severity)


# --- which edges ------------------------------------------------------------------------


def inverse_properties(store: Store) -> dict[str, str]:
    """Properties lineage walks backwards (``pg:lineageInverse true``): IRI -> label."""
    rows = store.select(
        f"""SELECT DISTINCT ?p ?label WHERE {{ ?p <{PG_NS}lineageInverse> true .
              OPTIONAL {{ ?p <{RDFS_NS}label> ?label }} }}"""
    )
    return {
        r["p"].value: f"{r['label'].value if r['label'] else r['p'].value.rsplit('#', 1)[-1]} of"  # type: ignore[union-attr]
        for r in rows
    }


def lineage_properties(store: Store) -> dict[str, str]:
    """Every lineage property (IRI -> label): the PROV roots and their sub-properties."""
    values = " ".join(f"<{p}>" for p in LINEAGE_ROOTS)
    rows = store.select(
        f"""SELECT DISTINCT ?p ?label WHERE {{ VALUES ?root {{ {values} }}
              ?p <{RDFS_NS}subPropertyOf>* ?root . OPTIONAL {{ ?p <{RDFS_NS}label> ?label }} }}"""
    )
    found = {p: p.rsplit("#", 1)[-1] for p in LINEAGE_ROOTS}
    for r in rows:
        iri = r["p"].value  # type: ignore[union-attr]
        found[iri] = r["label"].value if r["label"] else iri.rsplit("#", 1)[-1]  # type: ignore[union-attr]
    return found
