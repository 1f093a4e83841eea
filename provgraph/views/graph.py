"""Pictures of the graph: a collapsed whole-graph view, subgraph views, and the lineage adapter.

A view is plain data (:class:`View`: boxes and arrows) built from the store; :mod:`provgraph.views.dot`
turns it into graphviz DOT and, when the ``dot`` program exists, SVG or PNG.

The whole-graph view never draws one box per node. Nodes of one class (and one state) collapse
into a counted group ("4 planned calls"), annotated with the distribution of a few telling
properties ("4 ok, 1 error") and with the rules whose violations fall on its members; arrows
between groups count the triples they stand for. Every count is an aggregate computed inside
the store, so a benchmark with 100,000 calls still gives a picture of a dozen boxes in seconds.
``expand`` opens chosen groups into their members.

Layout follows the six states of a result (intended -> released): each class carries
``pg:state`` in the ontology (inherited by subclasses); a node may override it with its own
``pg:state``. The PROV kind (entity, activity, agent) of a class is found through
``rdfs:subClassOf*`` like :func:`provgraph.export.prov_types`.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from provgraph.errors import UsageError
from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.vocab import PG_NS, PROV_NS, RDFS_NS
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

OWL_NS = "http://www.w3.org/2002/07/owl#"
KINDS = {PROV_NS + "Entity": "entity", PROV_NS + "Activity": "activity", PROV_NS + "Agent": "agent"}

#: Classes that describe checks rather than the benchmark: drawn as marks on the nodes they
#: concern, not as boxes.
META_CLASSES = frozenset(PG_NS + c for c in ("Check", "Rule", "RuleResult", "Violation"))

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

#: Properties whose value distribution is shown on a group ("4 ok, 1 error").
FACETS = (PG_NS + "status", PG_NS + "verdict", PG_NS + "labelState")
_FACET_VALUES = 4  # at most this many values per facet, then "+k more"

#: Properties that name a node in a picture, in order of preference.
NAME_PROPERTIES = (
    PG_NS + "path",
    PG_NS + "name",
    PG_NS + "callId",
    PG_NS + "key",
    PG_NS + "ruleId",
    PG_NS + "statName",
    RDFS_NS + "label",
)

_CHUNK = 500
_NODE = "|node|"  # key of a node drawn on its own: "DD|class||node|IRI"
_STATE = "|state|"  # suffix of a key whose node states its own pg:state


# ---------------------------------------------------------------------------
# The vocabulary as the views need it
# ---------------------------------------------------------------------------


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
        known = ", ".join(sorted(_local(c.iri) for c in self.drawn_classes()))
        raise UsageError(f"--expand {name!r}: no such kind of node; known kinds: {known}")


def _norm(text: str) -> str:
    return re.sub(r"[\s_-]+", "", text).lower()


def _local(iri: str) -> str:
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


def vocabulary(store: Store) -> Vocabulary:
    """Classes (label, PROV kind, state, depth), states and drawable relations from the
    ontology graph of ``store``."""
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
        supers[c]
        if r["super"] is not None:
            supers[c].add(r["super"].value)
        if r["label"] is not None:
            labels[c] = r["label"].value
        if r["state"] is not None:
            own_state[c] = r["state"].value
    states = {
        r["s"].value: State(r["s"].value, r["label"].value, int(r["order"].value))  # type: ignore[union-attr]
        for r in store.select(
            f"""PREFIX rdfs: <{RDFS_NS}> PREFIX pg: <{PG_NS}>
            SELECT ?s ?label ?order WHERE {{ ?s a pg:State ; rdfs:label ?label ; pg:order ?order }}"""
        )
    }

    def walk(c: str) -> tuple[str | None, str | None, int]:
        # breadth-first up the hierarchy: nearest PROV root and nearest declared state
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

    classes = {}
    for c in supers:
        kind, state, depth = walk(c)
        classes[c] = ClassInfo(c, labels.get(c, _local(c)), kind, state, depth)

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
    return Vocabulary(classes, states, tuple(sorted(relations)), ranges, labels)


# ---------------------------------------------------------------------------
# The picture as data
# ---------------------------------------------------------------------------


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


def marks_from_report(report) -> list[Mark]:  # report: CheckReport
    """Violations of an in-process check run."""
    return [Mark(v.focus, r.rule.id) for r in report.results for v in r.violations]


# ---------------------------------------------------------------------------
# Node keys: how a node is assigned to a box, computed inside the store
# ---------------------------------------------------------------------------
#
# A key is "DD|class|" for a group (DD = class depth, so MAX() over a node's types picks its
# most specific class), "DD|class||node|IRI" for a node drawn on its own, either followed by
# "|state|STATE" when the node overrides its class's state.


@dataclass
class _Keys:
    vocab: Vocabulary
    data_graphs: list[str]
    expanded: frozenset[str]
    exact: bool  # per-node MAX over types and state overrides; needed when nodes have several types

    def values(self) -> str:
        rows = " ".join(
            f'(<{c.iri}> "{c.depth:02d}|{c.iri}|")'
            for c in sorted(self.vocab.drawn_classes(), key=lambda c: c.iri)
        )
        return rows

    def pattern(self, var: str, join: bool = False) -> str:
        """SPARQL binding ``?{var}_key`` for node ``?{var}`` (nodes outside drawn classes drop out).

        ``join``: as a sub-select, which Oxigraph evaluates once and hash-joins; much faster
        when the rest of the query touches most nodes, slower when it touches a few.
        """
        v, c = f"?{var}", f"?{var}_c"

        def key(k: str) -> str:
            if not self.expanded:
                return k
            listed = ", ".join(f"<{x}>" for x in sorted(self.expanded))
            return f'IF({c} IN ({listed}), CONCAT({k}, "{_NODE}", STR({v})), {k})'

        if not self.exact:
            plain = (
                f"{v} a {c} . VALUES ({c} ?{var}_k) {{ {self.values()} }} "
                f"BIND({key(f'?{var}_k')} AS ?{var}_key)"
            )
            return f"{{ SELECT {v} ?{var}_key WHERE {{ {plain} }} }}" if join else plain
        graphs = " ".join(f"<{g}>" for g in self.data_graphs)
        return f"""{{ SELECT {v} (CONCAT(MAX(?{var}_kx), COALESCE(SAMPLE(?{var}_st), "")) AS ?{var}_key)
            WHERE {{
              {v} a {c} . VALUES ({c} ?{var}_k) {{ {self.values()} }}
              BIND({key(f"?{var}_k")} AS ?{var}_kx)
              OPTIONAL {{ VALUES ?{var}_g {{ {graphs} }} GRAPH ?{var}_g {{ {v} <{PG_NS}state> ?{var}_s0 }} }}
              BIND(IF(BOUND(?{var}_s0), CONCAT("{_STATE}", STR(?{var}_s0)), "") AS ?{var}_st)
            }} GROUP BY {v} }}"""

    def key_of(self, iri: str, types: Iterable[str], state: str | None) -> str | None:
        """The key :meth:`pattern` gives a node, computed in Python from its types and state."""
        drawn = {c.iri: c for c in self.vocab.drawn_classes()}
        found = []
        for t in types:
            c = drawn.get(t)
            if c is not None:
                found.append(f"{c.depth:02d}|{c.iri}|" + (f"{_NODE}{iri}" if c.iri in self.expanded else ""))
        if not found:
            return None
        return max(found) + (f"{_STATE}{state}" if self.exact and state else "")

    def lookup(self, store: Store, iris: Iterable[str]) -> dict[str, str]:
        """Keys of a (small) set of nodes; nodes outside drawn classes are left out."""
        plain = sorted({i for i in iris if plain_iri(i)})
        graphs = " ".join(f"<{g}>" for g in self.data_graphs)
        types: dict[str, list[str]] = defaultdict(list)
        states: dict[str, str] = {}
        for i in range(0, len(plain), _CHUNK):
            values = " ".join(f"<{x}>" for x in plain[i : i + _CHUNK])
            for r in store.select(
                f"""SELECT ?s ?c ?st WHERE {{ VALUES ?s {{ {values} }}
                    {{ ?s a ?c }}
                    UNION {{ VALUES ?g {{ {graphs} }} GRAPH ?g {{ ?s <{PG_NS}state> ?st }} }} }}"""
            ):
                s = r["s"].value  # type: ignore[union-attr]
                if r["c"] is not None:
                    types[s].append(r["c"].value)
                if r["st"] is not None:
                    states[s] = r["st"].value
        out = {}
        for iri, ts in types.items():
            key = self.key_of(iri, ts, states.get(iri))
            if key is not None:
                out[iri] = key
        return out


@dataclass(frozen=True)
class _Key:
    cls: str
    state_override: str | None
    iri: str | None

    @classmethod
    def parse(cls, text: str) -> _Key:
        text, _, state = text.partition(_STATE)
        head, _, iri = text.partition(_NODE)
        klass = head.split("|")[1]
        return cls(klass, state or None, iri or None)


def _data_graphs(store: Store) -> list[str]:
    return [s.graph for s in catalog.slots(store) if s.key != "ontology"]


def _has_state_overrides(store: Store, keys: _Keys) -> bool:
    """Whether any node of the data states its own pg:state."""
    if not keys.data_graphs:
        return False
    graphs = " ".join(f"<{g}>" for g in keys.data_graphs)
    return store.ask(f"ASK {{ VALUES ?g {{ {graphs} }} GRAPH ?g {{ ?s <{PG_NS}state> ?st }} }}")


def _group_rows(store: Store, keys: _Keys):
    return store.select(
        f"SELECT ?s_key (COUNT(DISTINCT ?s) AS ?n) (SAMPLE(?s) AS ?ex) "
        f"WHERE {{ {keys.pattern('s')} }} GROUP BY ?s_key"
    )


def _distinct_nodes(store: Store, keys: _Keys) -> int:
    classes = " ".join(f"<{c.iri}>" for c in keys.vocab.drawn_classes())
    rows = store.select(f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ ?s a ?c . VALUES ?c {{ {classes} }} }}")
    return int(rows[0]["n"].value)  # type: ignore[union-attr]


# ---------------------------------------------------------------------------
# Whole-graph view
# ---------------------------------------------------------------------------


def whole_graph(
    store: Store,
    marks: Sequence[Mark] | None = None,
    expand: Iterable[str] = (),
    max_nodes: int = 500,
    title: str | None = None,
) -> View:
    """The collapsed picture of everything the store holds.

    ``marks``: violations to show (default: those the last recorded check wrote).
    ``expand``: kinds of node (class local name or label, or ``all``) drawn one box per node;
    refused when that would draw more than ``max_nodes`` boxes.
    """
    vocab = vocabulary(store)
    notes: list[str] = []
    if marks is None:
        marks = recorded_violations(store)
        if marks is None:
            notes.append("no check is recorded in the store: run `provgraph check` to mark violations")
            marks = []
    expanded = _expanded_classes(store, vocab, expand, max_nodes)
    keys = _Keys(vocab, _data_graphs(store), frozenset(expanded), exact=False)
    # The fast path counts each node under each of its drawn types; it is exact unless some
    # node has several drawn types (the counts then add up to more than the nodes) or a state
    # of its own, and the exact path (per-node keys) is taken instead.
    keys.exact = _has_state_overrides(store, keys)
    rows = _group_rows(store, keys)
    if not keys.exact and sum(int(r["n"].value) for r in rows) != _distinct_nodes(store, keys):  # type: ignore[union-attr]
        keys.exact = True
        rows = _group_rows(store, keys)
    boxes: dict[str, Box] = {}
    singles: dict[str, str] = {}
    for r in rows:
        key = r["s_key"].value  # type: ignore[union-attr]
        n = int(r["n"].value)  # type: ignore[union-attr]
        box = _box(vocab, key, n)
        boxes[key] = box
        if n == 1:
            box.iri = r["ex"].value  # type: ignore[union-attr]
            singles[box.iri] = key
    for iri, name in node_names(store, list(singles)).items():
        box = boxes[singles[iri]]
        box.title = f"{vocab.classes[box.cls].label if box.cls in vocab.classes else ''}\n{name}".strip()

    arrows = _arrows(store, vocab, keys, boxes)
    _facets(store, keys, boxes)
    _mark(store, vocab, keys, boxes, marks, notes)
    empty = [
        s.label for s in sorted(vocab.states.values(), key=lambda s: s.order) if not _has_state(boxes, s.iri)
    ]
    if boxes and empty:
        notes.append(f"no nodes in state{'s' if len(empty) > 1 else ''}: {', '.join(empty)}")
    if not boxes:
        notes.append("the store holds no imported nodes: run `provgraph ingest` first")
    project = _project_name(store)
    title = title or (f"provgraph: {project}" if project else "provgraph")
    return View(title, boxes, arrows, vocab.states, notes)


def _has_state(boxes: dict[str, Box], state: str) -> bool:
    return any(b.state == state for b in boxes.values())


def _project_name(store: Store) -> str:
    rows = store.select(f"SELECT ?n WHERE {{ ?p a <{PG_NS}Project> ; <{PG_NS}name> ?n }} LIMIT 1")
    return rows[0]["n"].value if rows else ""  # type: ignore[union-attr]


def _expanded_classes(store: Store, vocab: Vocabulary, expand: Iterable[str], max_nodes: int) -> set[str]:
    names = list(expand)
    if not names:
        return set()
    if any(n.lower() == "all" for n in names):
        chosen = {c.iri for c in vocab.drawn_classes()}
    else:
        chosen = {vocab.find_class(n).iri for n in names}
    classes = " ".join(f"<{c}>" for c in sorted(chosen))
    rows = store.select(f"SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ ?s a ?c . VALUES ?c {{ {classes} }} }}")
    n = int(rows[0]["n"].value)  # type: ignore[union-attr]
    if n > max_nodes:
        raise UsageError(
            f"--expand would draw {n} nodes (limit {max_nodes}); expand a smaller kind, raise "
            "--max-nodes, or draw the lineage of one node instead"
        )
    return chosen


def _box(vocab: Vocabulary, key: str, n: int) -> Box:
    k = _Key.parse(key)
    info = vocab.classes.get(k.cls)
    label = info.label if info else _local(k.cls)
    state = k.state_override or (info.state if info else None)
    if k.iri is not None:
        return Box(key, k.cls, info.kind if info else None, state, label, 1, iri=k.iri)
    title = f"{n} {plural(label) if n != 1 else label}"
    return Box(key, k.cls, info.kind if info else None, state, title, n, group=n > 1)


def _arrows(store: Store, vocab: Vocabulary, keys: _Keys, boxes: dict[str, Box]) -> list[Arrow]:
    relations = " ".join(f"<{p}>" for p in vocab.relations)
    rows = store.select(
        f"""SELECT ?s_key ?p ?o_key (COUNT(*) AS ?n) WHERE {{
          VALUES ?p {{ {relations} }}
          ?s ?p ?o .
          {keys.pattern("s", join=True)}
          OPTIONAL {{ {keys.pattern("o", join=True)} }}
        }} GROUP BY ?s_key ?p ?o_key"""
    )
    arrows: list[Arrow] = []
    dangling: list[tuple[str, str]] = []
    for r in rows:
        s_key, p = r["s_key"].value, r["p"].value  # type: ignore[union-attr]
        if r["o_key"] is None:
            dangling.append((s_key, p))
            continue
        o_key = r["o_key"].value
        if s_key in boxes and o_key in boxes:
            arrows.append(Arrow(s_key, o_key, p, _short_pred(vocab, p), int(r["n"].value)))  # type: ignore[union-attr]
    if dangling:
        arrows += _absent(store, vocab, keys, boxes, dangling)
    arrows.sort(key=lambda a: (a.tail, a.head, a.predicate))
    return arrows


def _absent(
    store: Store, vocab: Vocabulary, keys: _Keys, boxes: dict[str, Box], pairs: list[tuple[str, str]]
) -> list[Arrow]:
    """Boxes for nodes that are pointed at but that no import describes (no type at all),
    such as the output file of a call that was never written."""
    preds = " ".join(sorted({f"<{p}>" for _, p in pairs}))
    rows = store.select(
        f"""SELECT ?s ?p ?o WHERE {{
          VALUES ?p {{ {preds} }} ?s ?p ?o . FILTER(isIRI(?o)) FILTER NOT EXISTS {{ ?o a ?any }} }}"""
    )
    subject_keys = keys.lookup(store, (r["s"].value for r in rows))  # type: ignore[union-attr]
    wanted = set(pairs)
    targets: dict[tuple[str, str], set[str]] = defaultdict(set)
    edges: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        s_key = subject_keys.get(r["s"].value)  # type: ignore[union-attr]
        pair = (s_key, r["p"].value)  # type: ignore[union-attr]
        if s_key is None or pair not in wanted or s_key not in boxes:
            continue
        targets[pair].add(r["o"].value)  # type: ignore[union-attr]
        edges[pair] += 1
    arrows = []
    singles: dict[str, str] = {}
    for (s_key, p), nodes in sorted(targets.items()):
        n = len(nodes)
        key = f"absent|{s_key}|{p}"
        rng = vocab.classes.get(vocab.ranges.get(p, ""))
        label = rng.label if rng else vocab.labels.get(p, _local(p))
        box = Box(
            key,
            rng.iri if rng else None,
            rng.kind if rng else None,
            rng.state if rng and rng.state else boxes[s_key].state,
            f"{n} {plural(label) if n != 1 else label}\nreferenced, not in the graph",
            n,
            group=n > 1,
            absent=True,
        )
        if n == 1:
            box.iri = next(iter(nodes))
            singles[box.iri] = key
        boxes[key] = box
        arrows.append(Arrow(s_key, key, p, _short_pred(vocab, p), edges[(s_key, p)]))
    for iri, name in node_names(store, list(singles)).items():
        box = boxes[singles[iri]]
        box.title = f"{box.title.split(chr(10))[0].removeprefix('1 ')}\n{name}\nreferenced, not in the graph"
    return arrows


def _short_pred(vocab: Vocabulary, p: str) -> str:
    if p.startswith(PG_NS):
        return "pg:" + p[len(PG_NS) :]
    if p.startswith(PROV_NS):
        return "prov:" + p[len(PROV_NS) :]
    return vocab.labels.get(p, _local(p))


def _facets(store: Store, keys: _Keys, boxes: dict[str, Box]) -> None:
    facets = " ".join(f"<{p}>" for p in FACETS)
    rows = store.select(
        f"""SELECT ?s_key ?p ?v (COUNT(DISTINCT ?s) AS ?n) WHERE {{
          VALUES ?p {{ {facets} }} ?s ?p ?v . {keys.pattern("s", join=True)}
        }} GROUP BY ?s_key ?p ?v"""
    )
    found: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for r in rows:
        found[(r["s_key"].value, r["p"].value)].append((int(r["n"].value), r["v"].value))  # type: ignore[union-attr]
    for (key, _p), values in sorted(found.items()):
        box = boxes.get(key)
        if box is None:
            continue
        values.sort(key=lambda x: (-x[0], x[1]))
        shown = values[:_FACET_VALUES]
        text = ", ".join(f"{n} {v}" if box.count > 1 else v for n, v in shown)
        if len(values) > len(shown):
            text += f", +{len(values) - len(shown)} more"
        box.facets.append(text)
    zero = store.select(f"SELECT DISTINCT ?s WHERE {{ ?s <{PG_NS}byteSize> 0 }}")
    counts: dict[str, int] = defaultdict(int)
    for key in keys.lookup(store, (r["s"].value for r in zero)).values():  # type: ignore[union-attr]
        counts[key] += 1
    for key, n in sorted(counts.items()):
        box = boxes.get(key)
        if box is not None:
            box.facets.append(f"{n} zero-byte" if box.count > 1 else "zero-byte")


def _mark(
    store: Store,
    vocab: Vocabulary,
    keys: _Keys,
    boxes: dict[str, Box],
    marks: Sequence[Mark],
    notes: list[str],
) -> None:
    """Attach each violation to the box of its focus node (or of the absent node it is)."""
    by_focus: dict[str, set[str]] = defaultdict(set)
    for m in marks:
        by_focus[m.focus].add(m.rule_id)
    where = keys.lookup(store, by_focus)
    rest = [f for f in by_focus if f not in where and plain_iri(f)]
    for i in range(0, len(rest), _CHUNK):  # absent nodes: placed by what points at them
        values = " ".join(f"<{f}>" for f in rest[i : i + _CHUNK])
        rows = store.select(f"SELECT ?o ?s ?p WHERE {{ VALUES ?o {{ {values} }} ?s ?p ?o }}")
        subject_keys = keys.lookup(store, (r["s"].value for r in rows))  # type: ignore[union-attr]
        for r in rows:
            s_key = subject_keys.get(r["s"].value)  # type: ignore[union-attr]
            key = f"absent|{s_key}|{r['p'].value}"  # type: ignore[union-attr]
            if s_key is not None and key in boxes:
                where.setdefault(r["o"].value, key)  # type: ignore[union-attr]
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    unplaced = 0
    for focus, rules in by_focus.items():
        key = where.get(focus)
        if key is None or key not in boxes:
            unplaced += len(rules)
            continue
        for rule in rules:
            counts[key][rule] += 1
    for key, rules in counts.items():
        boxes[key].violations = dict(sorted(rules.items()))
    if unplaced:
        notes.append(f"{unplaced} violation(s) concern nodes that are not drawn")


# ---------------------------------------------------------------------------
# Subgraph views (one box per node): lineage and other node sets
# ---------------------------------------------------------------------------


def node_names(store: Store, iris: Sequence[str]) -> dict[str, str]:
    """A short display name per node: its path, name, call id or key, else its IRI tail."""
    base = _base_iri(store)
    names: dict[str, str] = {}
    rank: dict[str, int] = {}
    plain = [i for i in iris if plain_iri(i)]
    props = " ".join(f"<{p}>" for p in NAME_PROPERTIES)
    for i in range(0, len(plain), _CHUNK):
        values = " ".join(f"<{x}>" for x in plain[i : i + _CHUNK])
        for r in store.select(
            f"SELECT ?s ?p ?v WHERE {{ VALUES ?s {{ {values} }} VALUES ?p {{ {props} }} ?s ?p ?v }}"
        ):
            s, p = r["s"].value, r["p"].value  # type: ignore[union-attr]
            order = NAME_PROPERTIES.index(p)
            if order < rank.get(s, 99):
                rank[s], names[s] = order, r["v"].value  # type: ignore[union-attr]
    for iri in iris:
        if iri not in names:
            names[iri] = iri[len(base) :] if base and iri.startswith(base) else iri
    return names


def _base_iri(store: Store) -> str:
    rows = store.select(f"SELECT ?b WHERE {{ ?p a <{PG_NS}Project> ; <{PG_NS}baseIri> ?b }} LIMIT 1")
    return rows[0]["b"].value if rows else ""  # type: ignore[union-attr]


def subgraph(
    store: Store,
    iris: Sequence[str],
    edges: Iterable[tuple[str, str, str]],
    marks: Sequence[Mark] | None = None,
    focus: str | None = None,
    title: str = "",
    status: str | None = None,
) -> View:
    """A picture of the given nodes, one box each, and the given (subject, predicate, object)
    edges between them. Used by the lineage view; violations as in :func:`whole_graph`."""
    vocab = vocabulary(store)
    notes: list[str] = []
    if marks is None:
        marks = recorded_violations(store) or []
    drawn = {c.iri: c for c in vocab.classes.values()}
    types: dict[str, list[ClassInfo]] = defaultdict(list)
    plain = [i for i in dict.fromkeys(iris) if plain_iri(i)]
    overrides: dict[str, str] = {}
    for i in range(0, len(plain), _CHUNK):
        values = " ".join(f"<{x}>" for x in plain[i : i + _CHUNK])
        for r in store.select(
            f"""SELECT ?s ?c ?st WHERE {{ VALUES ?s {{ {values} }}
                {{ ?s a ?c }} UNION {{ ?s <{PG_NS}state> ?st }} }}"""
        ):
            s = r["s"].value  # type: ignore[union-attr]
            if r["c"] is not None and r["c"].value in drawn:
                types[s].append(drawn[r["c"].value])
            if r["st"] is not None:
                overrides[s] = r["st"].value
    names = node_names(store, plain)
    boxes: dict[str, Box] = {}
    for n, iri in enumerate(plain):
        info = max(types[iri], key=lambda c: (c.depth, c.iri)) if types[iri] else None
        label = info.label if info else "not in the graph"
        boxes[iri] = Box(
            f"n{n}",
            info.iri if info else None,
            info.kind if info else None,
            overrides.get(iri) or (info.state if info else None),
            f"{label}\n{names[iri]}",
            iri=iri,
            absent=info is None,
            focus=iri == focus,
        )
    by_focus: dict[str, dict[str, int]] = defaultdict(dict)
    for m in marks:
        if m.focus in boxes:
            by_focus[m.focus][m.rule_id] = 1
    for iri, rules in by_focus.items():
        boxes[iri].violations = dict(sorted(rules.items()))
    arrows = []
    for s, p, o in dict.fromkeys(tuple(e) for e in edges):
        if s in boxes and o in boxes:
            arrows.append(Arrow(boxes[s].id, boxes[o].id, p, _short_pred(vocab, p)))
    by_id = {b.id: b for b in boxes.values()}
    return View(title, by_id, arrows, vocab.states, notes, status)


def lineage_view(store: Store, target: str, marks: Sequence[Mark] | None = None) -> View:
    """The lineage of one number or node (TARGET as ``provgraph lineage`` accepts it).

    A thin adapter over :mod:`provgraph.lineage.trace` (``resolve(store, target) -> list[str]``,
    ``trace(store, iri) -> Lineage`` whose ``nodes`` are keyed by IRI and whose ``edges`` have
    ``source``, ``prop`` and ``target``, plus a ``status``): the traversal lives there, the
    drawing here (:func:`subgraph`).
    """
    from provgraph.lineage.resolve import resolve
    from provgraph.lineage.trace import trace as trace_lineage

    matches = resolve(store, target)
    if not matches:
        raise UsageError(f"{target!r} matches no node or reported number in the graph")
    if len(matches) > 1:
        listed = ", ".join(matches[:10]) + (" ..." if len(matches) > 10 else "")
        raise UsageError(f"{target!r} matches {len(matches)} nodes ({listed}); give one node IRI")
    trace = trace_lineage(store, matches[0])
    iris = list(trace.nodes)
    edges = [(e.source, e.prop, e.target) for e in trace.edges]
    return subgraph(
        store,
        iris,
        edges,
        marks,
        focus=matches[0],
        title=f"lineage of {target}",
        status=getattr(trace, "status", None),
    )
