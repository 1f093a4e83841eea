"""Lineage of any node, number or line, and the status of the claim it supports.

Two calls make the stable API (used by the CLI and by the report)::

    from provgraph.lineage.trace import resolve, trace
    for iri in resolve(store, "182.29"):        # or a node IRI, "FILE:LINE", a bundle path
        lineage = trace(store, iri)
        lineage.status                          # retained | restricted | unverifiable | withdrawn
        lineage.nodes[iri].violations           # what fired on the node itself
        lineage.children(iri)                   # edges towards its sources

**Which edges.** Lineage walks, from the derived node towards its sources, every edge whose
property is ``prov:wasDerivedFrom``, ``prov:wasGeneratedBy``, ``prov:used``,
``prov:wasInformedBy``, ``prov:hadPrimarySource``, ``prov:hadMember`` or declared
``rdfs:subPropertyOf`` one of them (transitively, read from the ontology graph with a SPARQL
``rdfs:subPropertyOf*`` path). A claim or registry value with no explicit ``pg:recomputedAs``
is also linked to every ``pg:Statistic`` with the same ``pg:statName`` whose value rounds to
the claim's value at its written precision (an *inferred* edge, marked as such).

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
  registry value or build record;
- otherwise retained.

Violations are those recorded by the last ``provgraph check`` (see
:func:`provgraph.rules.record_check`); run the check after each ingest.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import pyoxigraph as ox

from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG_NS, PROV_NS, RDF_NS, RDFS_NS
from provgraph.store.base import Store

STATUSES = ("retained", "restricted", "unverifiable", "withdrawn")
SEVERITY_STATUS: dict[str, str | None] = {"fail": "withdrawn", "restrict": "restricted", "info": None}
LINEAGE_ROOTS = tuple(
    PROV_NS + p
    for p in ("wasDerivedFrom", "wasGeneratedBy", "used", "wasInformedBy", "hadPrimarySource", "hadMember")
)
#: Classes whose presence in a number's lineage counts as evidence for it.
EVIDENCE = (PG_NS + "Statistic", PG_NS + "RegistryValue", PG_NS + "Build")
NUMBER_CLASSES = (PG_NS + "Claim", PG_NS + "ReportedValue")
_BATCH = 400
#: Nodes a lineage examines before it is cut (and the status becomes at least unverifiable).
#: The Q of a 30-study, 10-condition pilot already reaches about 10,000 nodes (cells, labels,
#: extractions, reports, calls), so the cap leaves room for twice that.
DEFAULT_MAX_NODES = 20_000
#: A node of a ``pg:lineageHub`` class (a cell grid: one source per label row) with more lineage
#: edges than this is sampled: its first :data:`HUB_SAMPLE` sources per property are traced, and
#: what lies upstream of all of them is read from the last check (:func:`hub_summaries`). Below
#: it, the hub is traced like any other node, source by source.
HUB_THRESHOLD = 500
HUB_SAMPLE = 3
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


@dataclass
class Violation:
    """A recorded violation on a node, and the status it implies (None for info rules)."""

    rule: str
    severity: str
    message: str
    status: str | None


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

    status: str
    text: str
    node: str | None = None
    rule: str | None = None


@dataclass
class Sampled:
    """``total`` sources of ``source`` through ``prop``, of which ``shown`` are traced."""

    source: str
    prop: str
    label: str
    total: int
    shown: list[str]


@dataclass
class Lineage:
    """The chain from ``root`` back to its sources, with its status and the reasons for it."""

    root: str
    nodes: dict[str, Node]
    edges: list[Edge]
    status: str
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


def worst(statuses: list[str | None]) -> str:
    """The strongest limitation among ``statuses`` ('retained' when there is none).

    >>> worst(["restricted", None, "unverifiable"])
    'unverifiable'
    """
    found = [s for s in statuses if s]
    return max(found, key=STATUSES.index) if found else "retained"


def status_of(severity: str, recorded: str | None = None) -> str | None:
    """The claim status a violation implies: the one its rule's header names (recorded on the
    violation as ``pg:lineageStatus``), else its severity's."""
    return recorded or SEVERITY_STATUS.get(severity)


# --- resolving a target -----------------------------------------------------------------

_NUMBER = re.compile(r"^-?\d[\d,]*(?:\.\d+)?%?$|^\d+/\d+$")
_FILE_LINE = re.compile(r"^(.+):(\d+)$")


def resolve(store: Store, target: str, base: str | None = None) -> list[str]:
    """The node IRIs ``target`` names, best matches first (an empty list when none).

    ``target`` is a node IRI (absolute, or relative to the project's base IRI), a number as
    written (``182.29``, ``26/45``, ``17%``: claims writing it, then reported values, registry
    values and statistics equal to it at its precision), ``FILE:LINE`` (the claims and
    mentions on that line; ``ARCHIVE!/MEMBER:LINE`` inside an archive) or a bundle path.
    """
    base = base if base is not None else _base(store)
    target = target.strip()
    found: list[str] = []
    if re.match(r"^[A-Za-z][\w+.-]*:", target) and not _FILE_LINE.match(target):
        return [target] if _exists(store, target) else []
    if _NUMBER.match(target):
        found += _numbers(store, target)
    elif match := _FILE_LINE.match(target):
        found += _on_line(store, match.group(1), int(match.group(2)))
    if not found and base and _exists(store, base + target):
        found.append(base + target)
    if not found:  # a bundle path: the file itself (build records and manifests also name it)
        rows = store.select(
            f"""SELECT DISTINCT ?n ?k WHERE {{ ?n <{PG_NS}path> ?p ; a ?c .
                  OPTIONAL {{ ?c <{RDFS_NS}subClassOf>* ?file FILTER(?file = <{PG_NS}File>) }}
                  BIND(IF(BOUND(?file), 0, 1) AS ?k) }} ORDER BY ?k ?n""",
            {"p": ox.Literal(target)},
        )
        files = [r["n"].value for r in rows if r["k"].value == "0"]  # type: ignore[union-attr]
        found += files or [r["n"].value for r in rows]  # type: ignore[union-attr]
    return list(dict.fromkeys(found))


def _base(store: Store) -> str:
    rows = store.select(f"SELECT ?b WHERE {{ ?p a <{PG_NS}Project> ; <{PG_NS}baseIri> ?b }} LIMIT 1")
    return rows[0]["b"].value if rows else ""  # type: ignore[union-attr]


def _exists(store: Store, iri: str) -> bool:
    node = ox.NamedNode(iri)
    return store.ask("ASK { { ?n ?p ?o } UNION { ?s ?p ?n } }", {"n": node})


def _numbers(store: Store, text: str) -> list[str]:
    from provgraph.evidence.claims import normal_text

    written = normal_text(text)
    plain = written.rstrip("%").split("/")[0].replace(",", "")
    try:
        value = Decimal(plain)
    except InvalidOperation:
        return []
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    half = Decimal(1).scaleb(-decimals) / 2
    pg = f"PREFIX pg: <{PG_NS}>\n"
    claims = store.select(
        pg
        + "SELECT DISTINCT ?n WHERE { ?n a pg:Claim ; pg:text ?t . OPTIONAL { ?n pg:sourceFile/pg:path ?p } "
        "OPTIONAL { ?n pg:sourceLine ?l } } ORDER BY ?p ?l ?n",
        {"t": ox.Literal(written)},
    )
    others = store.select(
        pg + "SELECT DISTINCT ?n ?k WHERE { "
        "{ ?n a pg:ReportedValue ; pg:value ?v . BIND(1 AS ?k) } UNION "
        "{ ?n a pg:RegistryValue ; pg:text ?tt . BIND(2 AS ?k) } UNION "
        "{ ?n a pg:Statistic ; pg:value ?v . BIND(3 AS ?k) } "
        # outside the UNION: filters inside a branch would not see the bound ?x, ?h and ?t
        "FILTER((?k = 1 && ?v = ?x) || (?k = 2 && ?tt = ?t) || (?k = 3 && ABS(?v - ?x) <= ?h)) } "
        "ORDER BY ?k ?n",
        {
            "x": ox.Literal(str(value), datatype=ox.NamedNode(RDF_XSD_DECIMAL)),
            "h": ox.Literal(str(half), datatype=ox.NamedNode(RDF_XSD_DECIMAL)),
            "t": ox.Literal(written),
        },
    )
    return [r["n"].value for r in claims] + [r["n"].value for r in others]  # type: ignore[union-attr]


RDF_XSD_DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"


def _on_line(store: Store, path: str, line: int) -> list[str]:
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n ?k WHERE {{ ?n pg:sourceFile ?f ; pg:sourceLine ?line . ?f pg:path ?path .
          OPTIONAL {{ ?n a pg:Claim . BIND(0 AS ?c) }} BIND(COALESCE(?c, 1) AS ?k) }} ORDER BY ?k ?n""",
        {"path": ox.Literal(path), "line": ox.Literal(str(line), datatype=ox.NamedNode(XSD_INTEGER))},
    )
    return [r["n"].value for r in rows]  # type: ignore[union-attr]


XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


# --- tracing ----------------------------------------------------------------------------


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


def trace(store: Store, iri: str, max_nodes: int = DEFAULT_MAX_NODES) -> Lineage:
    """The lineage of ``iri``: nodes, edges towards sources, violations and the status.

    Stops after ``max_nodes`` nodes (``truncated`` is then True and the status is at least
    unverifiable, since part of the chain was not examined).
    """
    props = lineage_properties(store)
    # FILTER IN rather than a second VALUES block: Oxigraph joins two VALUES blocks as a
    # cross product (one lookup per node and property, 16x slower on 400-node batches)
    prop_list = ", ".join(f"<{p}>" for p in props)
    inverse = inverse_properties(store)
    # One query per inverse property, the property written out: Oxigraph then looks up
    # (property, node) pairs. As a variable (FILTER IN or a second VALUES block) it scans every
    # edge into the node, or the whole store: a million edges into an import activity at 10^6.
    seen = {iri}
    order = [iri]
    edges: list[Edge] = []
    queue = deque([iri])
    truncated = False
    sampled: list[Sampled] = []
    hub_classes = _hub_classes(store)
    while queue:
        batch = [queue.popleft() for _ in range(min(_BATCH, len(queue)))]
        values = " ".join(f"<{n}>" for n in batch)
        found: list[tuple[str, str, str, bool]] = []
        big = _big_hubs(store, batch, hub_classes, prop_list)
        for hub in big:
            for x in _sample_sources(store, hub, props):
                sampled.append(x)
                found += [(hub, x.prop, o, False) for o in x.shown]
        walk = [n for n in batch if n not in big]
        if walk:
            rows = store.select(
                f"""SELECT DISTINCT ?s ?p ?o WHERE {{ VALUES ?s {{ {" ".join(f"<{n}>" for n in walk)} }}
                      ?s ?p ?o . FILTER(isIRI(?o) && ?p IN ({prop_list})) }} ORDER BY ?s ?p ?o"""
            )
            found += [(r["s"].value, r["p"].value, r["o"].value, False) for r in rows]  # type: ignore[union-attr]
        found += _inferred_statistics(store, batch)
        for p in inverse:  # e.g. an output file comes from the call records that name it
            rows = store.select(
                f"""SELECT DISTINCT ?s ?o WHERE {{ VALUES ?s {{ {values} }}
                      ?o <{p}> ?s . FILTER(isIRI(?o)) }} ORDER BY ?s ?o"""
            )
            found += [(r["s"].value, p, r["o"].value, False) for r in rows]  # type: ignore[union-attr]
        for s, p, o, inferred in found:
            label = inverse.get(p) if p in inverse else props.get(p, "recomputed as")
            edges.append(Edge(s, o, p, label, inferred))
            if o not in seen:
                if len(seen) >= max_nodes:
                    truncated = True
                    continue
                seen.add(o)
                order.append(o)
                queue.append(o)
    nodes = _describe(store, order, {x.source for x in sampled})
    edges = [e for e in dict.fromkeys(edges) if e.target in nodes]
    reasons = _reasons(store, iri, nodes, truncated)
    reasons += _hub_reasons(store, nodes, sampled)
    status = worst([r.status for r in reasons])
    return Lineage(iri, nodes, edges, status, reasons, truncated, sampled)


# --- hubs: nodes with one source per call ------------------------------------------------


def _hub_classes(store: Store) -> list[str]:
    rows = store.select(f"SELECT DISTINCT ?c WHERE {{ ?c <{PG_NS}lineageHub> true }}")
    return [r["c"].value for r in rows]  # type: ignore[union-attr]


def _big_hubs(store: Store, batch: list[str], hub_classes: list[str], prop_list: str) -> set[str]:
    """The nodes of ``batch`` that are hubs with more than :data:`HUB_THRESHOLD` sources."""
    if not hub_classes:
        return set()
    values = " ".join(f"<{n}>" for n in batch)
    classes = ", ".join(f"<{c}>" for c in hub_classes)
    rows = store.select(
        f"SELECT DISTINCT ?n WHERE {{ VALUES ?n {{ {values} }} ?n a ?c FILTER(?c IN ({classes})) }}"
    )
    big = set()
    for r in rows:
        hub = r["n"].value  # type: ignore[union-attr]
        # counting stops at the threshold: a million sources are not read to learn there are many
        (row,) = store.select(
            f"""SELECT (COUNT(*) AS ?k) WHERE {{ SELECT ?o WHERE {{ <{hub}> ?p ?o
                  FILTER(?p IN ({prop_list})) }} LIMIT {HUB_THRESHOLD + 1} }}"""
        )
        if int(row["k"].value) > HUB_THRESHOLD:  # type: ignore[union-attr]
            big.add(hub)
    return big


def _sample_sources(store: Store, hub: str, props: dict[str, str]) -> list[Sampled]:
    """Per lineage property of ``hub``: how many sources, and the first few (in index order)."""
    out = []
    # counted once by the check (pg:sourceCounts): counting a million edges here would cost more
    # than the rest of the lineage
    rows = store.select(f"SELECT ?j WHERE {{ <{hub}> <{PG_NS}sourceCounts> ?j }} LIMIT 1")
    counts: dict[str, int] = json.loads(rows[0]["j"].value) if rows else {}  # type: ignore[union-attr]
    for prop, label in props.items():
        rows = store.select(f"SELECT ?o WHERE {{ <{hub}> <{prop}> ?o FILTER(isIRI(?o)) }} LIMIT {HUB_SAMPLE}")
        if not rows:
            continue
        shown = sorted(r["o"].value for r in rows)  # type: ignore[union-attr]
        total = counts.get(prop, len(shown))
        if total == HUB_SAMPLE and prop not in counts:
            (row,) = store.select(
                f"SELECT (COUNT(*) AS ?k) WHERE {{ <{hub}> <{prop}> ?o FILTER(isIRI(?o)) }}"
            )
            total = int(row["k"].value)  # type: ignore[union-attr]
        out.append(Sampled(hub, prop, label, total, shown))
    return out


def _hub_reasons(store: Store, nodes: dict[str, Node], sampled: list[Sampled]) -> list[Reason]:
    """What lies upstream of the sources a sampled hub did not trace, as the last check found it."""
    reasons: list[Reason] = []
    seen = {(n.iri, v.rule, v.message) for n in nodes.values() for v in n.violations}
    for hub in dict.fromkeys(x.source for x in sampled):
        label = nodes[hub].label if hub in nodes else hub
        summary = store.ask(f"ASK {{ <{hub}> <{PG_NS}upstreamSummarised> true }}")
        if not summary:
            reasons.append(
                Reason(
                    "unverifiable",
                    f"{label} derives from too many sources to trace one by one, and no check has "
                    "recorded what lies upstream of them: run `provgraph check`",
                    hub,
                )
            )
            continue
        rows = store.select(
            f"""PREFIX pg: <{PG_NS}>
            SELECT DISTINCT ?focus ?rule ?severity ?message ?status WHERE {{
              <{hub}> pg:upstreamViolation ?v . ?v pg:focus ?focus ; pg:rule/pg:ruleId ?rule ;
                 pg:severity ?severity ; pg:message ?message .
              OPTIONAL {{ ?v pg:lineageStatus ?status }} }} ORDER BY ?rule ?focus ?message"""
        )
        for r in rows:
            focus, rule, severity, message = (r[k].value for k in ("focus", "rule", "severity", "message"))  # type: ignore[union-attr]
            status = status_of(severity, r["status"].value if r["status"] else None)  # type: ignore[union-attr]
            if status and (focus, rule, message) not in seen:
                seen.add((focus, rule, message))
                reasons.append(
                    Reason(
                        status, f"{rule} ({severity}) on {focus}, upstream of {label}: {message}", focus, rule
                    )
                )
        for r in store.select(f"SELECT ?x WHERE {{ <{hub}> <{PG_NS}upstreamUndescribed> ?x }} ORDER BY ?x"):
            reasons.append(
                Reason(
                    "unverifiable",
                    f"{r['x'].value} (upstream of {label}) is referenced but no import describes it: "  # type: ignore[union-attr]
                    "its source was not retained",
                    r["x"].value,  # type: ignore[union-attr]
                )
            )
    return reasons


def hub_summaries(
    store: Store, undescribed_limit: int = 20, budget: int = 2_000
) -> list[tuple[str, str, object]]:
    """For every hub too large to trace source by source: what lies upstream of it.

    Returns (hub, property, object) facts (objects are :class:`~provgraph.rdf.terms.IRI` nodes or
    literal values): how many sources the hub has per property (``pg:sourceCounts``, JSON),
    every recorded violation whose focus lies upstream
    of the hub (``pg:upstreamViolation``), the first ``undescribed_limit`` nodes upstream of it
    that are referenced but described by no import (``pg:upstreamUndescribed``), and
    ``pg:upstreamSummarised true``. Run by the check after it recorded its violations
    (:func:`provgraph.rules.record_check`); a trace through the hub reads these instead of
    walking every source.

    The search goes downstream from the few places that matter (violation foci, undescribed
    nodes), not upstream from the hub through every call: a focus on one call reaches the hub
    in a handful of steps. A focus whose downstream exceeds ``budget`` nodes (a condition, a
    prompt, an import activity) is decided by walking everything upstream of the hub once.
    """
    classes = _hub_classes(store)
    if not classes:
        return []
    props = lineage_properties(store)
    inverse = inverse_properties(store)
    hubs = [
        r["h"].value  # type: ignore[union-attr]
        for r in store.select(
            f"SELECT DISTINCT ?h WHERE {{ ?h a ?c FILTER(?c IN ({', '.join(f'<{c}>' for c in classes)})) }}"
        )
    ]
    big = _big_hubs(store, hubs, classes, ", ".join(f"<{p}>" for p in props)) if hubs else set()
    if not big:
        return []
    foci = _violation_foci(store)
    loose = _undescribed(store, props)
    starts = sorted({f for _, f in foci} | set(loose))
    reaches, over = _downstream_hubs(store, starts, big, props, inverse, budget)
    walked = {hub: _upstream_walk(store, hub, props, inverse) for hub in sorted(big)} if over else {}
    facts: list[tuple[str, str, object]] = []
    for hub in sorted(big):

        def upstream(node: str, hub: str = hub) -> bool:
            return node in walked[hub] if node in over else hub in reaches.get(node, ())

        facts.append((hub, PG_NS + "upstreamSummarised", True))
        counts = {}
        for prop in props:
            (row,) = store.select(
                f"SELECT (COUNT(*) AS ?k) WHERE {{ <{hub}> <{prop}> ?o FILTER(isIRI(?o)) }}"
            )
            if int(row["k"].value):  # type: ignore[union-attr]
                counts[prop] = int(row["k"].value)  # type: ignore[union-attr]
        facts.append((hub, PG_NS + "sourceCounts", json.dumps(counts, sort_keys=True)))
        facts += [(hub, PG_NS + "upstreamViolation", IRI(v)) for v, focus in foci if upstream(focus)]
        facts += [(hub, PG_NS + "upstreamUndescribed", IRI(n)) for n in sorted(filter(upstream, loose))][
            :undescribed_limit
        ]
    return facts


def _downstream_hubs(
    store: Store,
    starts: list[str],
    hubs: set[str],
    props: dict[str, str],
    inverse: dict[str, str],
    budget: int,
) -> tuple[dict[str, set[str]], set[str]]:
    """For each start: the hubs downstream of it; and the starts whose downstream is too large."""
    prop_list = ", ".join(f"<{p}>" for p in props)
    cache: dict[str, list[str]] = {}

    def children(n: str) -> list[str]:  # what derives from n (the lineage edges read backwards)
        if n not in cache:
            rows = store.select(
                f"""SELECT ?s WHERE {{ ?s ?p <{n}> FILTER(isIRI(?s) && ?p IN ({prop_list})) }}
                    LIMIT {budget + 1}"""
            )
            kids = [r["s"].value for r in rows]  # type: ignore[union-attr]
            for q in inverse:
                rows = store.select(
                    f"SELECT ?o WHERE {{ <{n}> <{q}> ?o FILTER(isIRI(?o)) }} LIMIT {budget + 1}"
                )
                kids += [r["o"].value for r in rows]  # type: ignore[union-attr]
            cache[n] = kids
        return cache[n]

    reaches: dict[str, set[str]] = {}
    over: set[str] = set()
    for start in starts:
        seen, frontier, hit = {start}, [start], set()
        while frontier and start not in over:
            nxt = []
            for n in frontier:
                if n in hubs:
                    hit.add(n)
                for c in children(n):
                    if c not in seen:
                        seen.add(c)
                        nxt.append(c)
                if len(seen) > budget:
                    over.add(start)
                    break
            frontier = nxt
        reaches[start] = hit
    return reaches, over


def _undescribed(store: Store, props: dict[str, str]) -> list[str]:
    """Nodes a lineage edge points at that no import describes (no triple of their own)."""
    union = " UNION ".join(f"{{ ?s <{p}> ?o }}" for p in props)  # each an index range, not a scan
    rows = store.select(
        f"SELECT DISTINCT ?o WHERE {{ {union} FILTER(isIRI(?o)) FILTER NOT EXISTS {{ ?o ?q ?r }} }}"
    )
    return [r["o"].value for r in rows]  # type: ignore[union-attr]


def _upstream_walk(store: Store, hub: str, props: dict[str, str], inverse: dict[str, str]) -> set[str]:
    """Every node upstream of ``hub`` (batched, one index scan per node)."""
    prop_list = ", ".join(f"<{p}>" for p in props)
    seen = {hub}
    frontier = [hub]
    while frontier:
        nxt: list[str] = []
        for i in range(0, len(frontier), 1000):
            values = " ".join(f"<{n}>" for n in frontier[i : i + 1000])
            # only ?o is returned: every term a row returns is one more dictionary read
            found = store.select(
                f"""SELECT DISTINCT ?o WHERE {{ VALUES ?s {{ {values} }} ?s ?p ?o .
                      FILTER(isIRI(?o) && ?p IN ({prop_list})) }}"""
            )
            for p in inverse:  # one query per property, written out (see trace)
                found += store.select(
                    f"""SELECT DISTINCT ?o WHERE {{ VALUES ?s {{ {values} }}
                          ?o <{p}> ?s . FILTER(isIRI(?o)) }}"""
                )
            for r in found:
                o = r["o"].value  # type: ignore[union-attr]
                if o not in seen:
                    seen.add(o)
                    nxt.append(o)
        frontier = nxt
    return seen


def _violation_foci(store: Store) -> list[tuple[str, str]]:
    rows = store.select(f"""SELECT ?v ?focus WHERE {{ ?v a <{PG_NS}Violation> ; <{PG_NS}focus> ?focus }}""")
    return [(r["v"].value, r["focus"].value) for r in rows]  # type: ignore[union-attr]


def _inferred_statistics(store: Store, batch: list[str]) -> list[tuple[str, str, str, bool]]:
    """Claims and registry values with no pg:recomputedAs, matched to statistics by name and value."""
    values = " ".join(f"<{n}>" for n in batch)
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n ?stat WHERE {{ VALUES ?n {{ {values} }}
          {{ ?n a pg:Claim ; pg:resolution ?res . }} UNION {{ ?n a pg:RegistryValue . BIND(0.0 AS ?res) }}
          ?n pg:statName ?name ; pg:value ?v .
          FILTER NOT EXISTS {{ ?n pg:recomputedAs ?any }}
          FILTER NOT EXISTS {{ ?n pg:registryValue ?rv }}
          ?stat a pg:Statistic ; pg:statName ?name ; pg:value ?sv .
          FILTER(ABS(?sv - ?v) <= ?res / 2 + 0.0000001) }} ORDER BY ?n ?stat"""
    )
    return [(r["n"].value, PG_NS + "recomputedAs", r["stat"].value, True) for r in rows]  # type: ignore[union-attr]


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


def _describe(
    store: Store, order: list[str], hubs: frozenset[str] | set[str] = frozenset()
) -> dict[str, Node]:
    labels, states, supers = _class_info(store)
    info: dict[str, dict[str, list[str]]] = {n: {} for n in order}
    keys = {f"{PG_NS}{p}": p for p in _INFO} | {f"{RDF_NS}type": "type", f"{RDFS_NS}label": "rdfsLabel"}
    wanted = ", ".join(f"<{p}>" for p in keys)  # FILTER IN, not a VALUES cross product (see trace)
    for i in range(0, len(order), _BATCH):
        batch = order[i : i + _BATCH]
        values = " ".join(f"<{n}>" for n in batch)
        plain = " ".join(f"<{n}>" for n in batch if n not in hubs)
        rows = store.select(
            f"""SELECT ?n ?p ?o WHERE {{ VALUES ?n {{ {plain} }} ?n ?p ?o . FILTER(?p IN ({wanted})) }}"""
        )
        for hub in hubs.intersection(batch):
            # a million edges out of it: each property written out, so each is one index lookup
            # (a variable property, even bound by VALUES, scans every edge of the node)
            union = " UNION ".join(f"{{ <{hub}> <{p}> ?o BIND(<{p}> AS ?p) }}" for p in keys)
            rows += store.select(f"SELECT ?n ?p ?o WHERE {{ {union} BIND(<{hub}> AS ?n) }}")
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
    pg = f"PREFIX pg: <{PG_NS}>\n"
    values = " ".join(f"<{n}>" for n in nodes)
    for r in store.select(
        pg + f"SELECT ?n ?status WHERE {{ VALUES ?n {{ {values} }} ?n a pg:RegistryValue ; "
        "pg:registryStatus ?status "
        'FILTER(?status IN ("superseded", "withdrawn")) } ORDER BY ?n'
    ):
        n = r["n"].value  # type: ignore[union-attr]
        reasons.append(
            Reason("withdrawn", f"the registry marks {nodes[n].label.removeprefix('registry value ')}", n)
        )
    if not store.ask(pg + "ASK { ?c a pg:Check }"):
        reasons.append(Reason("unverifiable", "no check has been recorded: run `provgraph check`"))
    for r in store.select(
        pg + 'SELECT DISTINCT ?rule ?msg WHERE { ?res a pg:RuleResult ; pg:outcome "error" ; '
        "pg:rule/pg:ruleId ?rule . OPTIONAL { ?res pg:message ?msg } } ORDER BY ?rule"
    ):
        msg = r["msg"].value if r["msg"] else "could not run"  # type: ignore[union-attr]
        reasons.append(
            Reason(
                "unverifiable",
                f"rule {r['rule'].value} could not run: {msg}",
                None,  # type: ignore[union-attr]
                r["rule"].value,
            )
        )  # type: ignore[union-attr]
    root_types = _types(store, root)
    if root_types & set(NUMBER_CLASSES):
        classes = ", ".join(f"<{c}>" for c in EVIDENCE)  # FILTER IN: one type lookup per node
        if not store.ask(f"ASK {{ VALUES ?n {{ {values} }} ?n a ?c FILTER(?c IN ({classes})) }}"):
            reasons.append(
                Reason(
                    "unverifiable",
                    "the number traces to no statistic, registry value or build "
                    "record: nothing shows where it comes from",
                    root,
                )
            )
    if truncated:
        reasons.append(
            Reason(
                "unverifiable", "the lineage was cut at its size limit; part of the chain was not examined"
            )
        )
    return reasons


def _types(store: Store, iri: str) -> set[str]:
    rows = store.select(f"SELECT ?t WHERE {{ ?n <{RDF_NS}type> ?t }}", {"n": ox.NamedNode(iri)})
    return {r["t"].value for r in rows}  # type: ignore[union-attr]


# --- rendering --------------------------------------------------------------------------


def render_tree(lineage: Lineage, base: str = "", max_children: int = 12) -> str:
    """The lineage as an indented tree, each node with its state, location and violations.

    A node reached twice is printed once and referred to as "(see above)"; more than
    ``max_children`` sources of one node are summarised by class.
    """
    out: list[str] = []
    printed: set[str] = set()

    def describe(node: Node) -> str:
        bits = [node.label]
        if node.location:
            bits.append(f"[{node.location}]")
        if node.state:
            bits.append(f"<{node.state}>")
        return "  ".join(bits)

    def walk(iri: str, prefix: str, via: str) -> None:
        node = lineage.nodes[iri]
        out.append(f"{prefix}{via}{describe(node)}" + ("  (see above)" if iri in printed else ""))
        if iri in printed:
            return
        printed.add(iri)
        pad = prefix.replace("├── ", "│   ").replace("└── ", "    ")
        for v in node.violations:
            out.append(f"{pad}    ! {v.severity} {v.rule}: {v.message}")
        kids = sorted(
            {e.target: e for e in lineage.children(iri)}.values(),
            key=lambda e: (e.label, lineage.nodes[e.target].label),
        )
        shown, rest = kids[:max_children], kids[max_children:]
        hidden = sum(x.total - len(x.shown) for x in lineage.sampled if x.source == iri)
        for i, edge in enumerate(shown):
            last = i == len(shown) - 1 and not rest and not hidden
            mark = "└── " if last else "├── "
            tag = f"{edge.label}{' (inferred)' if edge.inferred else ''}: "
            walk(edge.target, pad + mark, tag)
        if rest:
            kinds: dict[str, int] = {}
            for e in rest:
                node_kind = (lineage.nodes[e.target].classes or ["node"])[0]
                kinds[node_kind] = kinds.get(node_kind, 0) + 1
            summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            mark = "├── " if hidden else "└── "
            out.append(f"{pad}{mark}... and {len(rest)} more ({summary}); --format json lists them")
        if hidden:
            out.append(
                f"{pad}└── ... and {hidden:,} more sources, sampled: what lies upstream of them "
                "was recorded by the last check (see the status)"
            )

    walk(lineage.root, "", "")
    out.append("")
    out.append(f"status: {lineage.status}")
    for r in sorted(lineage.reasons, key=lambda r: -STATUSES.index(r.status)):
        out.append(f"  - {r.status}: {r.text}")
    return "\n".join(out) + "\n"


_DOT_SHAPE = {"build": "box", "import": "box", "check": "box"}
_DOT_STATUS = {"withdrawn": "#d62728", "unverifiable": "#9467bd", "restricted": "#ff7f0e", None: "#444444"}


def render_dot(lineage: Lineage, base: str = "") -> str:
    """The lineage as a Graphviz digraph (edges point from derived to source, as in PROV)."""

    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = [
        "digraph lineage {",
        "  rankdir=BT;",
        '  node [fontname="Helvetica", fontsize=10];',
        f"  label={q('status: ' + lineage.status)}; labelloc=t;",
    ]
    ids = {iri: f"n{i}" for i, iri in enumerate(lineage.nodes)}
    for iri, node in lineage.nodes.items():
        worst_v = worst([v.status for v in node.violations]) if node.violations else None
        color = _DOT_STATUS.get(worst_v if worst_v != "retained" else None, "#444444")
        text = node.label + (f"\n{node.location}" if node.location else "")
        text += "".join(f"\n! {v.rule}" for v in node.violations)
        shape = _DOT_SHAPE.get((node.classes or ["node"])[0], "ellipse")
        style = ", penwidth=2" if iri == lineage.root else ""
        lines.append(f"  {ids[iri]} [label={q(text)}, shape={shape}, color={q(color)}{style}];")
    for e in lineage.edges:
        style = ", style=dashed" if e.inferred else ""
        lines.append(f"  {ids[e.source]} -> {ids[e.target]} [label={q(e.label)}, fontsize=8{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
