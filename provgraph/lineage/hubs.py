"""Lineage hubs: nodes with one source per call (a cell grid), sampled instead of walked.

A node of a ``pg:lineageHub`` class with more lineage edges than :data:`HUB_THRESHOLD` is
sampled by :func:`provgraph.lineage.trace.trace`: its first :data:`HUB_SAMPLE` sources per
property are traced (:func:`sample_sources`), and what lies upstream of all of them is read from
what the check recorded (:func:`hub_reasons`). Below the threshold, the hub is traced like any
other node, source by source.

After a check is recorded, :func:`record_hubs` writes :func:`hub_summaries` (what lies upstream
of each such hub) into the ``check:lineage`` graph, so a trace need not walk a million sources.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path

from provgraph.lineage.model import Node, Reason, Sampled, inverse_properties, lineage_properties, status_of
from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG_NS
from provgraph.store import catalog, scopes
from provgraph.store.base import Store

HUB_THRESHOLD = 500
HUB_SAMPLE = 3
#: Sources of a hub counted in a trace when no check recorded how many there are.
COUNT_BOUND = 1_000


def hub_classes(store: Store) -> list[str]:
    rows = store.select(f"SELECT DISTINCT ?c WHERE {{ ?c <{PG_NS}lineageHub> true }}")
    return [r["c"].value for r in rows]  # type: ignore[union-attr]


def big_hubs(store: Store, batch: list[str], classes: list[str], prop_list: str) -> set[str]:
    """The nodes of ``batch`` that are hubs with more than :data:`HUB_THRESHOLD` sources."""
    if not classes:
        return set()
    values = " ".join(f"<{n}>" for n in batch)
    class_list = ", ".join(f"<{c}>" for c in classes)
    rows = store.select(
        f"SELECT DISTINCT ?n WHERE {{ VALUES ?n {{ {values} }} ?n a ?c FILTER(?c IN ({class_list})) }}"
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


def sample_sources(store: Store, hub: str, props: dict[str, str]) -> list[Sampled]:
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
        total, at_least = counts.get(prop, len(shown)), False
        if total == HUB_SAMPLE and prop not in counts:
            # no check has counted them: count up to a bound (a million edges of a cell grid at
            # 10^6 calls took 2.8 s per trace), and say "at least"
            (row,) = store.select(
                f"""SELECT (COUNT(*) AS ?k) WHERE {{ SELECT ?o WHERE {{ <{hub}> <{prop}> ?o
                      FILTER(isIRI(?o)) }} LIMIT {COUNT_BOUND + 1} }}"""
            )
            total = min(int(row["k"].value), COUNT_BOUND)  # type: ignore[union-attr]
            at_least = int(row["k"].value) > COUNT_BOUND  # type: ignore[union-attr]
        out.append(Sampled(hub, prop, label, total, shown, at_least))
    return out


def hub_reasons(store: Store, nodes: dict[str, Node], sampled: list[Sampled]) -> list[Reason]:
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
    ``pg:upstreamSummarised true``. Written by :func:`record_hubs` after the check recorded its
    violations (:func:`provgraph.rules.record_check`); a trace through the hub reads these
    instead of walking every source.

    The search goes downstream from the few places that matter (violation foci, undescribed
    nodes), not upstream from the hub through every call: a focus on one call reaches the hub
    in a handful of steps. A focus whose downstream exceeds ``budget`` nodes (a condition, a
    prompt, an import activity) is decided by walking everything upstream of the hub once.
    """
    classes = hub_classes(store)
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
    big = big_hubs(store, hubs, classes, ", ".join(f"<{p}>" for p in props)) if hubs else set()
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
    """Nodes a lineage edge points at that no import describes (no triple of their own outside
    the derived views: :func:`scopes.in_describing`)."""
    union = " UNION ".join(f"{{ ?s <{p}> ?o }}" for p in props)  # each an index range, not a scan
    own = scopes.in_describing(store)("?o ?q ?r")
    rows = store.select(
        f"SELECT DISTINCT ?o WHERE {{ {union} FILTER(isIRI(?o)) FILTER NOT EXISTS {{ {own} }} }}"
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


def record_hubs(store: Store) -> None:
    """Write :func:`hub_summaries` into the ``check:lineage`` graph (replacing the previous one).

    Run after :func:`provgraph.rules.record_check`: the summaries read the violations it recorded.
    """
    facts = hub_summaries(store)
    with tempfile.TemporaryDirectory(prefix="provgraph-check-") as tmp:
        nt = Path(tmp) / "hubs.nt"
        with nt.open("w", encoding="utf-8") as fh:
            w = TripleWriter(fh)
            for hub, prop, obj in facts:
                w.add(IRI(hub), IRI(prop), obj)
        catalog.replace(store, "check:lineage", uuid.uuid4().hex, nt)
