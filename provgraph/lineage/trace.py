"""Walking the lineage of one node: its sources, their descriptions and violations, and its status.

The stable API (used by the CLI, the views and the report)::

    from provgraph.lineage.resolve import resolve
    from provgraph.lineage.trace import trace
    for iri in resolve(store, "182.29"):        # or a node IRI, "FILE:LINE", a bundle path
        lineage = trace(store, iri)
        lineage.status                          # retained | restricted | unverifiable | withdrawn
        lineage.nodes[iri].violations           # what fired on the node itself
        lineage.children(iri)                   # edges towards its sources

Which edges are walked and how the status is decided: :mod:`provgraph.lineage.model`. Hubs
with very many sources are sampled: :mod:`provgraph.lineage.hubs`.
"""

from __future__ import annotations

from collections import deque

import pyoxigraph as ox

from provgraph.lineage.hubs import big_hubs, hub_classes, hub_reasons, sample_sources
from provgraph.lineage.model import (
    Edge,
    Lineage,
    Node,
    Reason,
    Sampled,
    Violation,
    inverse_properties,
    lineage_properties,
    status_of,
    worst,
)
from provgraph.rdf.vocab import PG_NS, RDF_NS, RDFS_NS
from provgraph.store import scopes
from provgraph.store.base import Store

#: Classes whose presence in a number's lineage counts as evidence for it (an analysis plan is
#: reached only by a significance threshold it declares: see :func:`inferred_statistics`).
EVIDENCE = (PG_NS + "Statistic", PG_NS + "RegistryValue", PG_NS + "Build", PG_NS + "AnalysisPlan")
NUMBER_CLASSES = (PG_NS + "Claim", PG_NS + "ReportedValue")
_BATCH = 400
#: Nodes a lineage examines before it is cut (and the status becomes at least unverifiable).
#: The Q of a 30-study, 10-condition pilot already reaches about 10,000 nodes (cells, labels,
#: extractions, reports, calls), so the cap leaves room for twice that.
DEFAULT_MAX_NODES = 20_000
_INFO = [
    "label",
    "path",
    "text",
    "name",
    "statName",
    "value",
    "n",
    "key",
    "callId",
    "memberPath",
    "commitId",
    "registryStatus",
    "cohortRule",
    "testVariant",
    "sourceLine",
    "relation",
    "command",
]


def trace(store: Store, iri: str, max_nodes: int = DEFAULT_MAX_NODES) -> Lineage:
    """The lineage of ``iri``: nodes, edges towards sources, violations and the status.

    Stops after ``max_nodes`` nodes (``truncated`` is then True and the status is at least
    unverifiable, since part of the chain was not examined).
    """
    return trace_many(store, [iri], max_nodes)[0]


def trace_many(store: Store, iris: list[str], max_nodes: int = DEFAULT_MAX_NODES) -> list[Lineage]:
    """The lineage of each of ``iris``, as :func:`trace` gives it, from one shared walk: a
    number written in several places matches nodes whose chains are mostly the same (the
    claim, its registry value and its statistics at 10^6 calls: four walks over the same 60
    nodes), so each node's sources are read once and each node described once."""
    walk = _Walk(store)
    found = [walk.lineage(iri, max_nodes) for iri in iris]
    hubs = {x.source for sampled in walk.sampled.values() for x in sampled}
    nodes = describe(store, list(dict.fromkeys(n for order, *_ in found for n in order)), hubs)
    out = []
    for iri, (order, edges, sampled, truncated) in zip(iris, found, strict=True):
        mine = {n: nodes[n] for n in order}
        edges = [e for e in dict.fromkeys(edges) if e.target in mine]
        reasons = _reasons(store, iri, mine, truncated) + hub_reasons(store, mine, sampled)
        out.append(Lineage(iri, mine, edges, worst([r.status for r in reasons]), reasons, truncated, sampled))
    return out


class _Walk:
    """Each node's edges towards its sources, read from the store once per node (in batches)
    and kept, so several lineages can walk the same nodes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.props = lineage_properties(store)
        # FILTER IN rather than a second VALUES block: Oxigraph joins two VALUES blocks as a
        # cross product (one lookup per node and property, 16x slower on 400-node batches)
        self.prop_list = ", ".join(f"<{p}>" for p in self.props)
        # One query per inverse property, the property written out: Oxigraph then looks up
        # (property, node) pairs. As a variable (FILTER IN or a second VALUES block) it scans
        # every edge into the node, or the whole store: a million edges into an import activity
        # at 10^6.
        self.inverse = inverse_properties(store)
        self.classes = hub_classes(store)
        self.found: dict[str, list[tuple[str, str, str, bool]]] = {}  # node -> its edges, in order
        self.sampled: dict[str, list[Sampled]] = {}  # hub -> its sampled sources

    def lineage(self, iri: str, max_nodes: int) -> tuple[list[str], list[Edge], list[Sampled], bool]:
        """The nodes (in walk order), edges and sampled hubs of ``iri``'s lineage, and whether
        it was cut at ``max_nodes``."""
        seen, order, edges, sampled = {iri}, [iri], [], []
        queue = deque([iri])
        truncated = False
        while queue:
            batch = [queue.popleft() for _ in range(min(_BATCH, len(queue)))]
            self._read([n for n in batch if n not in self.found])
            for n in batch:
                sampled += self.sampled.get(n, [])
            for s, p, o, inferred in (t for n in batch for t in self.found[n]):
                label = self.inverse.get(p) if p in self.inverse else self.props.get(p, "recomputed as")
                edges.append(Edge(s, o, p, label, inferred))
                if o not in seen:
                    if len(seen) >= max_nodes:
                        truncated = True
                        continue
                    seen.add(o)
                    order.append(o)
                    queue.append(o)
        return order, edges, sampled, truncated

    def _read(self, batch: list[str]) -> None:
        if not batch:
            return
        store = self.store
        values = " ".join(f"<{n}>" for n in batch)
        found: list[tuple[str, str, str, bool]] = []
        big = big_hubs(store, batch, self.classes, self.prop_list)
        for hub in sorted(big):
            self.sampled[hub] = sample_sources(store, hub, self.props)
            found += [(hub, x.prop, o, False) for x in self.sampled[hub] for o in x.shown]
        walk = [n for n in batch if n not in big]
        if walk:
            rows = store.select(
                f"""SELECT DISTINCT ?s ?p ?o WHERE {{ VALUES ?s {{ {" ".join(f"<{n}>" for n in walk)} }}
                      ?s ?p ?o . FILTER(isIRI(?o) && ?p IN ({self.prop_list})) }} ORDER BY ?s ?p ?o"""
            )
            found += [(r["s"].value, r["p"].value, r["o"].value, False) for r in rows]  # type: ignore[union-attr]
        found += inferred_statistics(store, batch)
        for p in self.inverse:  # e.g. an output file comes from the call records that name it
            rows = store.select(
                f"""SELECT DISTINCT ?s ?o WHERE {{ VALUES ?s {{ {values} }}
                      ?o <{p}> ?s . FILTER(isIRI(?o)) }} ORDER BY ?s ?o"""
            )
            found += [(r["s"].value, p, r["o"].value, False) for r in rows]  # type: ignore[union-attr]
        for n in batch:
            self.found[n] = []
        for t in found:  # each edge is its first node's; the order within a node is kept
            self.found[t[0]].append(t)


def inferred_statistics(store: Store, batch: list[str]) -> list[tuple[str, str, str, bool]]:
    """Claims and registry values with no pg:recomputedAs, matched to statistics by name and
    value; percentages to the k/n they are stated over; thresholds to the alpha declaring them.

    Name and value alone are no evidence for a statistic of one condition: 0.944 written for
    GPT-4o is not made right by Opus's detection rate being 0.944. A statistic with a
    ``pg:condition`` is matched only by a number bound to that same condition
    (``pg:boundCondition``, or its own ``pg:condition``); a number the binding left unbound
    (``pg:bindingNote``) is matched by none.
    """
    # Only numbers as written have inferred sources: the batch's claims and registry values
    # first (1 ms), so a batch of files and calls skips the three matching queries (30 ms each
    # at 10^5 calls, most of a trace's time).
    kinds = f"<{PG_NS}Claim>, <{PG_NS}RegistryValue>"
    values = " ".join(f"<{n}>" for n in batch)
    numbers = store.select(
        f"SELECT DISTINCT ?n WHERE {{ VALUES ?n {{ {values} }} ?n a ?c FILTER(?c IN ({kinds})) }}"
    )
    if not numbers:
        return []
    values = " ".join(f"<{r['n'].value}>" for r in numbers)  # type: ignore[union-attr]
    # the candidates (numbers no binding or recomputation decides) in a query of their own:
    # as a sub-select, Oxigraph matched every statistic first (27 ms at 10^6 calls for none)
    candidates = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT ?n ?name ?v ?res WHERE {{ VALUES ?n {{ {values} }}
          {{ ?n a pg:Claim ; pg:resolution ?res . }} UNION {{ ?n a pg:RegistryValue . BIND(0.0 AS ?res) }}
          ?n pg:statName ?name ; pg:value ?v .
          FILTER NOT EXISTS {{ ?n pg:recomputedAs ?any }}
          FILTER NOT EXISTS {{ ?n pg:registryValue ?rv }}
          FILTER NOT EXISTS {{ ?n pg:bindingNote ?note }} }}"""
    )
    rows = []
    if candidates:
        table = " ".join(f"({' '.join(str(r[k]) for k in ('n', 'name', 'v', 'res'))})" for r in candidates)
        rows = store.select(
            f"""PREFIX pg: <{PG_NS}>
            SELECT DISTINCT ?n ?stat WHERE {{ VALUES (?n ?name ?v ?res) {{ {table} }}
              ?stat pg:statName ?name ; a pg:Statistic ; pg:value ?sv .
              FILTER(ABS(?sv - ?v) <= ?res / 2 + 0.0000001)
              FILTER NOT EXISTS {{ ?stat pg:condition ?cond
                FILTER NOT EXISTS {{ ?n pg:boundCondition|pg:condition ?cond }} }}
            }} ORDER BY ?n ?stat"""
        )
    found = [(r["n"].value, PG_NS + "recomputedAs", r["stat"].value, True) for r in rows]  # type: ignore[union-attr]
    # a percentage stated over k/n, and a significance threshold, have evidence of their own
    return found + _stated_over(store, values) + _thresholds(store, values)


def _stated_over(store: Store, values: str) -> list[tuple[str, str, str, bool]]:
    """A percentage stated over k/n ("30/45 (66.7%)") comes from the claim on its line writing
    k/n, when 100 k/n rounds to it: it stands or falls with that number."""
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n ?f WHERE {{ VALUES ?n {{ {values} }}
          ?n a pg:Claim ; pg:unit "percent" ; pg:numerator ?k ; pg:n ?d ; pg:value ?v ;
             pg:resolution ?res ; pg:sourceFile ?file ; pg:sourceLine ?line .
          ?f pg:sourceFile ?file ; pg:sourceLine ?line ; pg:unit "fraction" ; pg:numerator ?k ;
             pg:n ?d ; a pg:Claim .
          FILTER(?d > 0 && ABS(100 * ?k / ?d - ?v) <= ?res / 2 + 0.0000001) }} ORDER BY ?n ?f"""
    )
    return [(r["n"].value, PG_NS + "recomputedAs", r["f"].value, True) for r in rows]  # type: ignore[union-attr]


def _thresholds(store: Store, values: str) -> list[tuple[str, str, str, bool]]:
    """A significance threshold as written ("p < 0.05") comes from the analysis plan that
    declares that alpha (``pg:alpha``); a threshold no plan declares is linked to nothing."""
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n ?plan WHERE {{ VALUES ?n {{ {values} }}
          ?n a pg:Claim ; pg:statName "p" ; pg:relation ?rel ; pg:value ?v ; pg:resolution ?res .
          FILTER(?rel IN ("<", "<="))
          FILTER NOT EXISTS {{ ?n pg:recomputedAs ?any }}
          ?plan a pg:AnalysisPlan ; pg:alpha ?a . FILTER(ABS(?a - ?v) <= ?res / 2 + 0.0000001) }}
        ORDER BY ?n ?plan"""
    )
    return [(r["n"].value, PG_NS + "recomputedAs", r["plan"].value, True) for r in rows]  # type: ignore[union-attr]


def _class_info(store: Store) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    rows = store.select(
        f"""SELECT ?c ?label ?state ?super WHERE {{
              {{ ?c a <http://www.w3.org/2002/07/owl#Class> }} UNION {{ ?c <{RDFS_NS}subClassOf> ?any }}
              OPTIONAL {{ ?c <{RDFS_NS}label> ?label }}
              OPTIONAL {{ ?c <{PG_NS}state> ?s . ?s <{RDFS_NS}label> ?state }}
              OPTIONAL {{ ?c <{RDFS_NS}subClassOf> ?super }} }}"""
    )
    labels: dict[str, str] = {}
    states: dict[str, str] = {}
    supers: dict[str, list[str]] = {}
    for r in rows:
        c = r["c"].value  # type: ignore[union-attr]
        if r["label"]:
            labels[c] = r["label"].value  # type: ignore[union-attr]
        if r["state"]:
            states[c] = r["state"].value  # type: ignore[union-attr]
        if r["super"]:
            supers.setdefault(c, []).append(r["super"].value)  # type: ignore[union-attr]
    return labels, states, supers


def _state(cls: str, states: dict[str, str], supers: dict[str, list[str]]) -> str | None:
    todo, seen = [cls], set()
    while todo:
        c = todo.pop(0)
        if c in states:
            return states[c]
        seen.add(c)
        todo += [s for s in supers.get(c, []) if s not in seen]
    return None


def _depth(cls: str, supers: dict[str, list[str]]) -> int:
    depth, todo = 0, supers.get(cls, [])
    while todo and depth < 20:
        depth += 1
        todo = [s for c in todo for s in supers.get(c, [])]
    return depth


def describe(
    store: Store, order: list[str], hubs: frozenset[str] | set[str] = frozenset()
) -> dict[str, Node]:
    labels, states, supers = _class_info(store)
    described = scopes.in_describing(store)  # a derived view's facts describe nothing
    info: dict[str, dict[str, list[str]]] = {n: {} for n in order}
    keys = {f"{PG_NS}{p}": p for p in _INFO} | {f"{RDF_NS}type": "type", f"{RDFS_NS}label": "rdfsLabel"}
    wanted = ", ".join(f"<{p}>" for p in keys)  # FILTER IN, not a VALUES cross product (see trace)
    for i in range(0, len(order), _BATCH):
        batch = order[i : i + _BATCH]
        values = " ".join(f"<{n}>" for n in batch)
        plain = " ".join(f"<{n}>" for n in batch if n not in hubs)
        rows = store.select(
            f"""SELECT DISTINCT ?n ?p ?o WHERE {{ VALUES ?n {{ {plain} }} {described("?n ?p ?o")}
                  FILTER(?p IN ({wanted})) }}"""
        )
        for hub in hubs.intersection(batch):
            # a million edges out of it: each property written out, so each is one index lookup
            # (a variable property, even bound by VALUES, scans every edge of the node)
            union = " UNION ".join(f"{{ <{hub}> <{p}> ?o BIND(<{p}> AS ?p) }}" for p in keys)
            rows += store.select(
                f"SELECT DISTINCT ?n ?p ?o WHERE {{ {described(union)} BIND(<{hub}> AS ?n) }}"
            )
        for r in rows:
            key = keys[r["p"].value]  # type: ignore[union-attr]
            info[r["n"].value].setdefault(key, []).append(r["o"].value)  # type: ignore[union-attr]
        rows = store.select(
            f"""SELECT ?n ?path WHERE {{ VALUES ?n {{ {values} }}
                  ?n <{PG_NS}sourceFile> ?f . ?f <{PG_NS}path> ?path }}"""
        )
        for r in rows:
            info[r["n"].value].setdefault("sourcePath", []).append(r["path"].value)  # type: ignore[union-attr]
    violations = _violations(store, order)
    nodes: dict[str, Node] = {}
    for iri in order:
        facts = info[iri]
        # most specific class first; between equally deep ones, one that declares its own state
        types = sorted(
            set(facts.get("type", [])),
            key=lambda c: (-_depth(c, supers), c not in states, labels.get(c, c)),
        )
        state = next((s for c in types if (s := _state(c, states, supers))), None)
        path = (facts.get("sourcePath") or facts.get("path") or [None])[0]
        line = int(facts["sourceLine"][0]) if facts.get("sourceLine") else None
        nodes[iri] = Node(
            iri,
            _label(iri, facts, [labels.get(c, c.rsplit("#", 1)[-1]) for c in types]),
            [labels.get(c, c.rsplit("#", 1)[-1]) for c in types],
            state,
            path,
            line if facts.get("sourcePath") else None,
            bool(facts),
            violations.get(iri, []),
        )
    return nodes


def _label(iri: str, facts: dict[str, list[str]], classes: list[str]) -> str:
    def one(key: str) -> str | None:
        return facts[key][0] if facts.get(key) else None

    kind = classes[0] if classes else "node"
    if kind == "claim":
        text = one("text") or one("value") or "?"
        name, relation = one("label"), one("relation")
        if name and relation:
            return f"claim {name} {relation} {text}"
        return f"claim {text} ({name})" if name else f"claim {text}"
    if kind == "registry value":
        return f"registry value {one('statName')} = {one('text')} ({one('registryStatus') or 'current'})"
    if kind in ("statistic", "reported value"):
        extra = [f"n={one('n')}"] if one("n") else []
        extra += [x for x in (one("cohortRule"), one("testVariant")) if x]
        more = f" ({', '.join(extra)})" if extra else ""
        return f"{kind} {one('statName') or ''} = {one('value')}{more}".replace("  ", " ")
    if kind == "mention":
        return f"mention '{one('text')}'"
    if kind == "build":
        return f"build {one('name')}" + (f": {one('command')}" if one("command") else "")
    for key in ("rdfsLabel", "path", "memberPath", "name", "callId", "key", "commitId", "text"):
        if one(key):
            return f"{kind} {one(key)}"
    if not facts:
        return f"(not in the store) {iri}"
    return f"{kind} {iri.rsplit('/', 1)[-1]}"


def _violations(store: Store, order: list[str]) -> dict[str, list[Violation]]:
    found: dict[str, list[Violation]] = {}
    for i in range(0, len(order), _BATCH):
        values = " ".join(f"<{n}>" for n in order[i : i + _BATCH])
        rows = store.select(
            f"""PREFIX pg: <{PG_NS}>
            SELECT DISTINCT ?focus ?rule ?severity ?message ?status WHERE {{ VALUES ?focus {{ {values} }}
              ?v a pg:Violation ; pg:focus ?focus ; pg:rule ?r ; pg:severity ?severity ; pg:message ?message .
              ?r pg:ruleId ?rule . OPTIONAL {{ ?v pg:lineageStatus ?status }} }}
            ORDER BY ?focus ?rule ?message"""
        )
        for r in rows:
            rule, severity = r["rule"].value, r["severity"].value  # type: ignore[union-attr]
            status = status_of(severity, r["status"].value if r["status"] else None)  # type: ignore[union-attr]
            found.setdefault(r["focus"].value, []).append(  # type: ignore[union-attr]
                Violation(rule, severity, r["message"].value, status)  # type: ignore[union-attr]
            )
    return found


def _reasons(store: Store, root: str, nodes: dict[str, Node], truncated: bool) -> list[Reason]:
    reasons = node_reasons(store, nodes) + global_reasons(store)
    values = " ".join(f"<{n}>" for n in nodes)
    root_types = _types(store, root)
    if root_types & set(NUMBER_CLASSES):
        classes = ", ".join(f"<{c}>" for c in EVIDENCE)  # FILTER IN: one type lookup per node
        if not store.ask(f"ASK {{ VALUES ?n {{ {values} }} ?n a ?c FILTER(?c IN ({classes})) }}"):
            reasons.append(Reason("unverifiable", NO_EVIDENCE, root))
    if truncated:
        reasons.append(
            Reason(
                "unverifiable", "the lineage was cut at its size limit; part of the chain was not examined"
            )
        )
    return reasons


#: Why a number that reaches no evidence class is unverifiable.
NO_EVIDENCE = (
    "the number traces to no statistic, registry value or build record: nothing shows where it comes from"
)


def node_reasons(store: Store, nodes: dict[str, Node]) -> list[Reason]:
    """The limitations ``nodes`` carry themselves: their violations, being referenced but
    undescribed, a registry value marked superseded or withdrawn (each with its node)."""
    reasons: list[Reason] = []
    for node in nodes.values():
        for v in node.violations:
            if v.status:
                reasons.append(
                    Reason(
                        v.status, f"{v.rule} ({v.severity}) on {node.label}: {v.message}", node.iri, v.rule
                    )
                )
        if not node.described:
            reasons.append(
                Reason(
                    "unverifiable",
                    f"{node.iri} is referenced but no import describes it: its source was not retained",
                    node.iri,
                )
            )
    order = list(nodes)
    for i in range(0, len(order), _BATCH):
        values = " ".join(f"<{n}>" for n in order[i : i + _BATCH])
        for r in store.select(
            f"""PREFIX pg: <{PG_NS}>
            SELECT ?n ?status WHERE {{ VALUES ?n {{ {values} }} ?n a pg:RegistryValue ;
              pg:registryStatus ?status FILTER(?status IN ("superseded", "withdrawn")) }} ORDER BY ?n"""
        ):
            n = r["n"].value  # type: ignore[union-attr]
            label = nodes[n].label.removeprefix("registry value ")
            reasons.append(Reason("withdrawn", f"the registry marks {label}", n))
        # a registry entry naming its statistic that the statistics engine did not resolve (stats/refs.py)
        for r in store.select(
            f"""PREFIX pg: <{PG_NS}>
            SELECT ?n ?ref ?note WHERE {{ VALUES ?n {{ {values} }} ?n pg:statisticRef ?ref
              FILTER NOT EXISTS {{ ?n pg:recomputedAs ?s }} OPTIONAL {{ ?n pg:bindingNote ?note }} }}
            ORDER BY ?n"""
        ):
            n, why = r["n"].value, r["note"].value if r["note"] else "no recomputation resolved it"  # type: ignore[union-attr]
            text = f"{nodes[n].label} names statistic {r['ref'].value}, which is not recomputed: {why}"  # type: ignore[union-attr]
            reasons.append(Reason("unverifiable", text, n))
    return reasons


def global_reasons(store: Store) -> list[Reason]:
    """Limitations on every lineage of the store: no recorded check, a rule that could not run."""
    pg = f"PREFIX pg: <{PG_NS}>\n"
    reasons: list[Reason] = []
    if not store.ask(pg + "ASK { ?c a pg:Check }"):
        reasons.append(Reason("unverifiable", "no check has been recorded: run `provgraph check`"))
    for r in store.select(
        pg + 'SELECT DISTINCT ?rule ?msg WHERE { ?res a pg:RuleResult ; pg:outcome "error" ; '
        "pg:rule/pg:ruleId ?rule . OPTIONAL { ?res pg:message ?msg } } ORDER BY ?rule"
    ):
        msg = r["msg"].value if r["msg"] else "could not run"  # type: ignore[union-attr]
        rule = r["rule"].value  # type: ignore[union-attr]
        reasons.append(Reason("unverifiable", f"rule {rule} could not run: {msg}", None, rule))
    return reasons


def _types(store: Store, iri: str) -> set[str]:
    rows = store.select(f"SELECT ?t WHERE {{ ?n <{RDF_NS}type> ?t }}", {"n": ox.NamedNode(iri)})
    return {r["t"].value for r in rows}  # type: ignore[union-attr]
