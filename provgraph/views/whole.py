"""The collapsed picture of the whole graph, aggregated inside the store.

The whole-graph view never draws one box per node. Nodes of one class (and one state) collapse
into a counted group ("4 planned calls"), annotated with the distribution of a few telling
properties ("4 ok, 1 error") and with the rules whose violations fall on its members; arrows
between groups count the triples they stand for. Every count is an aggregate computed inside
the store (through the node keys of :mod:`provgraph.views.keys`), so a benchmark with 100,000
calls still gives a picture of a dozen boxes in seconds. ``expand`` opens chosen groups into
their members.

Layout follows the six states of a result (intended -> released): each class carries
``pg:state`` in the ontology (inherited by subclasses); a node may override it with its own
``pg:state``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence

from provgraph.errors import UsageError
from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.vocab import PG_NS
from provgraph.store.base import Store, Within
from provgraph.store.scopes import in_graphs
from provgraph.views.keys import Key, NodeKeys, drawn_graphs, group_rows, has_state_overrides
from provgraph.views.model import Arrow, Box, Mark, View, recorded_violations
from provgraph.views.multityped import Counts, MultiTyped
from provgraph.views.nodes import node_names, value_blocks
from provgraph.views.vocabulary import Vocabulary, counted, local_name, short_pred, vocabulary

log = logging.getLogger(__name__)

#: Properties whose value distribution is shown on a group ("4 ok, 1 error").
FACETS = (PG_NS + "status", PG_NS + "verdict", PG_NS + "labelState")
_FACET_VALUES = 4  # at most this many values per facet, then "+k more"


def whole_graph(
    store: Store,
    marks: Sequence[Mark] | None = None,
    expand: Iterable[str] = (),
    max_nodes: int = 500,
    title: str | None = None,
) -> View:
    """The collapsed picture of everything the store holds, but the check's own graphs.

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
    project = _project_name(store)
    store = store.within(drawn_graphs(store))  # the imports and the statistics
    expanded = _expanded_classes(store, vocab, expand, max_nodes)
    keys = NodeKeys(vocab, frozenset(expanded), exact=False)
    # The fast path counts each node under each of its drawn types, then corrects the counts
    # for the nodes with several drawn types (:mod:`provgraph.views.multityped`); nodes with
    # a state of their own take the exact path (per-node keys, a GROUP BY over every node).
    keys.exact = has_state_overrides(store)
    multi = None if keys.exact else MultiTyped(store, keys)
    groups = {r["s_key"].value: [int(r["n"].value), r["ex"].value] for r in group_rows(store, keys)}  # type: ignore[union-attr]
    if multi:
        multi.groups(store, groups)
    boxes: dict[str, Box] = {}
    singles: dict[str, str] = {}
    for key, (n, ex) in groups.items():
        box = _box(vocab, key, n)
        boxes[key] = box
        if n == 1:
            box.iri = ex
            singles[ex] = key
    for iri, name in node_names(store, list(singles)).items():
        box = boxes[singles[iri]]
        box.title = f"{vocab.classes[box.cls].label if box.cls in vocab.classes else ''}\n{name}".strip()

    arrows = _arrows(store, vocab, keys, boxes, multi)
    _facets(store, keys, boxes, multi)
    _mark(store, vocab, keys, boxes, marks, notes)
    empty = [
        s.label for s in sorted(vocab.states.values(), key=lambda s: s.order) if not _has_state(boxes, s.iri)
    ]
    if boxes and empty:
        notes.append(f"no nodes in state{'s' if len(empty) > 1 else ''}: {', '.join(empty)}")
    if not boxes:
        notes.append("the store holds no imported nodes: run `provgraph ingest` first")
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
    k = Key.parse(key)
    info = vocab.classes.get(k.cls)
    label = info.label if info else local_name(k.cls)
    state = k.state_override or (info.state if info else None)
    if k.iri is not None:
        return Box(key, k.cls, info.kind if info else None, state, label, 1, iri=k.iri)
    title = counted(n, label)
    return Box(key, k.cls, info.kind if info else None, state, title, n, group=n > 1)


def _arrows(
    store: Within, vocab: Vocabulary, keys: NodeKeys, boxes: dict[str, Box], multi: MultiTyped | None
) -> list[Arrow]:
    relations = " ".join(f"<{p}>" for p in vocab.relations)
    counts: Counts = defaultdict(int)
    for s_key, p, o_key, n in store.stream(
        f"""SELECT ?s_key ?p ?o_key (COUNT(*) AS ?n) WHERE {{
          VALUES ?p {{ {relations} }}
          ?s ?p ?o .
          {keys.pattern("s", join=True)}
          OPTIONAL {{ {keys.pattern("o", join=True)} }}
        }} GROUP BY ?s_key ?p ?o_key"""
    ):
        counts[(s_key, p, o_key)] += int(n)  # type: ignore[index,arg-type]
    if multi:
        multi.arrows(store, ", ".join(f"<{p}>" for p in vocab.relations), counts)
    arrows: list[Arrow] = []
    dangling: list[tuple[str, str]] = []
    for (s_key, p, o_key), n in counts.items():
        if o_key is None:
            dangling.append((s_key, p))
            continue
        if s_key in boxes and o_key in boxes:
            arrows.append(Arrow(s_key, o_key, p, short_pred(vocab, p), n))
    if dangling:
        arrows += _absent(store, vocab, keys, boxes, dangling)
    arrows.sort(key=lambda a: (a.tail, a.head, a.predicate))
    return arrows


def _absent(
    store: Within, vocab: Vocabulary, keys: NodeKeys, boxes: dict[str, Box], pairs: list[tuple[str, str]]
) -> list[Arrow]:
    """Boxes for nodes that are pointed at but that nothing describes (no type in any graph: the
    ontology types the contract's clauses), such as the output file of a call that was never
    written."""
    preds = " ".join(sorted({f"<{p}>" for _, p in pairs}))
    rows = store.store.select(
        f"""SELECT ?s ?p ?o WHERE {{ VALUES ?p {{ {preds} }} {in_graphs("?s ?p ?o", store.graphs)}
          FILTER(isIRI(?o)) FILTER NOT EXISTS {{ ?o a ?any }} }}"""
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
        label = rng.label if rng else vocab.labels.get(p, local_name(p))
        box = Box(
            key,
            rng.iri if rng else None,
            rng.kind if rng else None,
            rng.state if rng and rng.state else boxes[s_key].state,
            f"{counted(n, label)}\nreferenced, not in the graph",
            n,
            group=n > 1,
            absent=True,
        )
        if n == 1:
            box.iri = next(iter(nodes))
            singles[box.iri] = key
        boxes[key] = box
        arrows.append(Arrow(s_key, key, p, short_pred(vocab, p), edges[(s_key, p)]))
    for iri, name in node_names(store, list(singles)).items():
        box = boxes[singles[iri]]
        box.title = f"{box.title.split(chr(10))[0].removeprefix('1 ')}\n{name}\nreferenced, not in the graph"
    return arrows


def _facets(store: Store, keys: NodeKeys, boxes: dict[str, Box], multi: MultiTyped | None) -> None:
    facets = " ".join(f"<{p}>" for p in FACETS)
    counts: Counts = defaultdict(int)
    for s_key, p, v, n in store.stream(
        f"""SELECT ?s_key ?p ?v (COUNT(DISTINCT ?s) AS ?n) WHERE {{
          VALUES ?p {{ {facets} }} ?s ?p ?v . {keys.pattern("s", join=True)}
        }} GROUP BY ?s_key ?p ?v"""
    ):
        counts[(s_key, p, v)] += int(n)  # type: ignore[index,arg-type]
    if multi:
        multi.facets(store, ", ".join(f"<{p}>" for p in FACETS), counts)
    found: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for (s_key, p, v), n in counts.items():
        found[(s_key, p)].append((n, v))  # type: ignore[arg-type]
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
    keys: NodeKeys,
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
    for values in value_blocks(rest):  # absent nodes: placed by what points at them
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
