"""The vocabulary as the views need it: classes with their PROV kind and state, the states of a
result, and the relations drawn as arrows, all read from the ontology graph of a store.

Each class carries ``pg:state`` in the ontology (inherited by subclasses); the PROV kind
(entity, activity, agent) of a class is found through ``rdfs:subClassOf*`` like
:func:`provgraph.export.prov_types`.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass

from provgraph.errors import UsageError
from provgraph.rdf.vocab import PG_NS, PROV_NS, RDFS_NS
from provgraph.store.base import Store

log = logging.getLogger(__name__)

OWL_NS = "http://www.w3.org/2002/07/owl#"
KINDS = {PROV_NS + "Entity": "entity", PROV_NS + "Activity": "activity", PROV_NS + "Agent": "agent"}

#: Classes that describe checks rather than the benchmark: drawn as marks on the nodes they
#: concern, not as boxes.
META_CLASSES = frozenset(PG_NS + c for c in ("Check", "CheckRecord", "Rule", "RuleResult", "Violation"))

#: PROV-O relations between nodes (object properties). Edges are drawn for these, for every
#: object property the vocabulary declares, and for sub-properties of either.
PROV_RELATIONS = tuple(
    PROV_NS + p
    for p in (
        "used",
        "wasGeneratedBy",
        "wasDerivedFrom",
        "wasInformedBy",
        "wasAssociatedWith",
        "wasAttributedTo",
        "actedOnBehalfOf",
        "hadMember",
        "hadPrimarySource",
        "wasRevisionOf",
        "wasQuotedFrom",
        "wasInvalidatedBy",
        "wasStartedBy",
        "wasEndedBy",
        "wasInfluencedBy",
        "hadPlan",
        "specializationOf",
        "alternateOf",
    )
)


@dataclass(frozen=True)
class State:
    iri: str
    label: str
    order: int


@dataclass(frozen=True)
class ClassInfo:
    iri: str
    label: str
    kind: str | None  # entity | activity | agent | None
    state: str | None  # state IRI
    depth: int  # subClassOf steps below its PROV root: larger is more specific


@dataclass
class Vocabulary:
    classes: dict[str, ClassInfo]
    states: dict[str, State]
    relations: tuple[str, ...]
    ranges: dict[str, str]
    labels: dict[str, str]

    def drawn_classes(self) -> list[ClassInfo]:
        """Classes whose nodes appear in pictures: they have a PROV kind or a state."""
        return [c for c in self.classes.values() if (c.kind or c.state) and c.iri not in META_CLASSES]

    def find_class(self, name: str) -> ClassInfo:
        """A drawn class by local name, label or IRI (case and '-', '_', ' ' ignored)."""
        want = _norm(name)
        for c in self.drawn_classes():
            local = c.iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
            if want in (_norm(c.iri), _norm(local), _norm(c.label), _norm(plural(c.label))):
                return c
        known = ", ".join(sorted(local_name(c.iri) for c in self.drawn_classes()))
        raise UsageError(f"--expand {name!r}: no such kind of node; known kinds: {known}")


def _norm(text: str) -> str:
    return re.sub(r"[\s_-]+", "", text).lower()


def local_name(iri: str) -> str:
    """The last segment of an IRI (after its last '#' or '/')."""
    return re.split(r"[#/]", iri)[-1]


def plural(label: str) -> str:
    """English plural of a class label ("planned call" -> "planned calls").

    >>> [plural(x) for x in ("file", "answer key entry", "analysis", "status", "import problem")]
    ['files', 'answer key entries', 'analyses', 'statuses', 'import problems']
    """
    if label.endswith("sis"):
        return label[:-2] + "es"
    if label.endswith(("s", "x", "ch", "sh")):
        return label + "es"
    if label.endswith("y") and label[-2:-1] not in "aeiou":
        return label[:-1] + "ies"
    return label + "s"


def counted(n: int, label: str) -> str:
    """``"4 planned calls"``, ``"1 planned call"``.

    >>> counted(4, "analysis"), counted(1, "analysis")
    ('4 analyses', '1 analysis')
    """
    return f"{n} {plural(label) if n != 1 else label}"


def short_pred(vocab: Vocabulary, p: str) -> str:
    """A predicate as an arrow label: ``pg:``/``prov:`` names, else its label or IRI tail."""
    if p.startswith(PG_NS):
        return "pg:" + p[len(PG_NS) :]
    if p.startswith(PROV_NS):
        return "prov:" + p[len(PROV_NS) :]
    return vocab.labels.get(p, local_name(p))


def vocabulary(store: Store) -> Vocabulary:
    """Classes (label, PROV kind, state, depth), states and drawable relations from the
    ontology graph of ``store``."""
    classes, labels = _classes(store)
    relations, ranges = _relations(store, labels)
    return Vocabulary(classes, _states(store), relations, ranges, labels)


def _classes(store: Store) -> tuple[dict[str, ClassInfo], dict[str, str]]:
    """Every class with its kind, state and depth, and the class labels."""
    rows = store.select(
        f"""PREFIX rdfs: <{RDFS_NS}> PREFIX owl: <{OWL_NS}> PREFIX pg: <{PG_NS}>
        SELECT ?c ?super ?label ?state WHERE {{
          {{ ?c a owl:Class }} UNION {{ ?c rdfs:subClassOf ?x }}
          UNION {{ VALUES ?c {{ {" ".join(f"<{k}>" for k in KINDS)} }} }}
          FILTER(isIRI(?c))
          OPTIONAL {{ ?c rdfs:subClassOf ?super FILTER(isIRI(?super)) }}
          OPTIONAL {{ ?c rdfs:label ?label }}
          OPTIONAL {{ ?c pg:state ?state }}
        }}"""
    )
    supers: dict[str, set[str]] = defaultdict(set)
    labels: dict[str, str] = {}
    own_state: dict[str, str] = {}
    for r in rows:
        c = r["c"].value  # type: ignore[union-attr]
        supers[c]  # every class gets an entry, even one without superclasses
        if r["super"] is not None:
            supers[c].add(r["super"].value)
        if r["label"] is not None:
            labels[c] = r["label"].value
        if r["state"] is not None:
            own_state[c] = r["state"].value
    classes = {}
    for c in supers:
        kind, state, depth = _walk(c, supers, own_state)
        classes[c] = ClassInfo(c, labels.get(c, local_name(c)), kind, state, depth)
    return classes, labels


def _walk(
    c: str, supers: dict[str, set[str]], own_state: dict[str, str]
) -> tuple[str | None, str | None, int]:
    """Breadth-first up the hierarchy from ``c``: nearest PROV root (and its distance) and
    nearest declared state."""
    kind, state, depth = None, own_state.get(c), 0
    frontier, seen, level = [c], {c}, 0
    while frontier and (kind is None or state is None):
        for x in frontier:
            if kind is None and x in KINDS:
                kind, depth = KINDS[x], level
            if state is None and x in own_state:
                state = own_state[x]
        frontier = [s for x in frontier for s in sorted(supers.get(x, ())) if s not in seen]
        seen.update(frontier)
        level += 1
    return kind, state, depth


def _states(store: Store) -> dict[str, State]:
    return {
        r["s"].value: State(r["s"].value, r["label"].value, int(r["order"].value))  # type: ignore[union-attr]
        for r in store.select(
            f"""PREFIX rdfs: <{RDFS_NS}> PREFIX pg: <{PG_NS}>
            SELECT ?s ?label ?order WHERE {{ ?s a pg:State ; rdfs:label ?label ; pg:order ?order }}"""
        )
    }


def _relations(store: Store, labels: dict[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """Drawable relations (sorted) and their ranges; adds the property labels to ``labels``."""
    prop_rows = store.select(
        f"""PREFIX rdfs: <{RDFS_NS}> PREFIX owl: <{OWL_NS}>
        SELECT ?p ?range ?label ?super WHERE {{
          {{ ?p a owl:ObjectProperty }} UNION {{ ?p rdfs:subPropertyOf ?x }}
          OPTIONAL {{ ?p rdfs:range ?range }} OPTIONAL {{ ?p rdfs:label ?label }}
          OPTIONAL {{ ?p rdfs:subPropertyOf ?super }}
        }}"""
    )
    relations = set(PROV_RELATIONS)
    ranges: dict[str, str] = {}
    for r in prop_rows:
        p = r["p"].value  # type: ignore[union-attr]
        relations.add(p)
        if r["range"] is not None:
            ranges[p] = r["range"].value
        if r["label"] is not None:
            labels[p] = r["label"].value
    relations.discard(PG_NS + "state")
    relations.discard(PG_NS + "focus")
    return tuple(sorted(relations)), ranges
