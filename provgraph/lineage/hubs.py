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

import itertools
import json
import uuid
from typing import IO

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from provgraph.lineage.model import Node, Reason, Sampled, inverse_properties, lineage_properties, status_of
from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG_NS
from provgraph.stats import scan
from provgraph.store import catalog
from provgraph.store.base import Store

HUB_THRESHOLD = 500
HUB_SAMPLE = 3


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
        total = counts.get(prop, len(shown))
        if total == HUB_SAMPLE and prop not in counts:
            (row,) = store.select(
                f"SELECT (COUNT(*) AS ?k) WHERE {{ <{hub}> <{prop}> ?o FILTER(isIRI(?o)) }}"
            )
            total = int(row["k"].value)  # type: ignore[union-attr]
        out.append(Sampled(hub, prop, label, total, shown))
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


def hub_summaries(store: Store, undescribed_limit: int = 20) -> list[tuple[str, str, object]]:
    """For every hub too large to trace source by source: what lies upstream of it.

    Returns (hub, property, object) facts (objects are :class:`~provgraph.rdf.terms.IRI` nodes or
    literal values): how many sources the hub has per property (``pg:sourceCounts``, JSON),
    every recorded violation whose focus lies upstream
    of the hub (``pg:upstreamViolation``), the first ``undescribed_limit`` nodes upstream of it
    that are referenced but described by no import (``pg:upstreamUndescribed``), and
    ``pg:upstreamSummarised true``. Written by :func:`record_hubs` after the check recorded its
    violations (:func:`provgraph.rules.record_check`); a trace through the hub reads these
    instead of walking every source.

    The lineage edges are read once (:class:`LineageEdges`: one triple-pattern scan per lineage
    property) and walked from each hub in memory. Whether a node is described is asked of the
    store only for the nodes upstream of a hub that no scanned edge has as a subject.
    """
    classes = hub_classes(store)
    if not classes:
        return []
    props = lineage_properties(store)
    hubs = [
        r["h"].value  # type: ignore[union-attr]
        for r in store.select(
            f"SELECT DISTINCT ?h WHERE {{ ?h a ?c FILTER(?c IN ({', '.join(f'<{c}>' for c in classes)})) }}"
        )
    ]
    big = sorted(big_hubs(store, hubs, classes, ", ".join(f"<{p}>" for p in props))) if hubs else []
    if not big:
        return []
    edges = LineageEdges.read(store, list(props), list(inverse_properties(store)))
    ups = {hub: edges.upstream(hub) for hub in big}
    loose = edges.undescribed(store, np.logical_or.reduce(list(ups.values())))
    loose_ids = edges.ids(loose)
    foci = _violation_foci(store)
    focus_ids = edges.ids([f for _, f in foci])
    facts: list[tuple[str, str, object]] = []
    for hub in big:
        up = ups[hub]
        facts.append((hub, PG_NS + "upstreamSummarised", True))
        facts.append((hub, PG_NS + "sourceCounts", json.dumps(edges.source_counts(hub), sort_keys=True)))
        facts += [
            (hub, PG_NS + "upstreamViolation", IRI(v))
            for (v, _), i in zip(foci, focus_ids, strict=True)
            if up[i]
        ]
        found = sorted(n for n, i in zip(loose, loose_ids, strict=True) if up[i])
        facts += [(hub, PG_NS + "upstreamUndescribed", IRI(n)) for n in found[:undescribed_limit]]
    return facts


class LineageEdges:
    """Every lineage edge of the store as integer node ids, directed from a node to its sources.

    Read with one triple-pattern scan per lineage property (each streams in constant memory;
    :func:`provgraph.stats.scan.scan` keys every IRI by two 64-bit hashes), not with a query per
    node: at 10^6 calls a cell grid has a million sources, and what lies upstream of them is
    most of the graph. An edge ``?s p ?o`` runs from ``?s`` to ``?o``; for a
    ``pg:lineageInverse`` property, from ``?o`` to ``?s`` (the object came from the subject).
    """

    def __init__(
        self, props: list[str], n_forward: int, parts: list[tuple[np.ndarray, np.ndarray]], keys: scan.Keys
    ):
        self.props, self.n_forward, self.parts = props, n_forward, parts
        self.a, self.b = keys.a, keys.b  # sorted first keys of the node ids, and their second keys
        src = np.concatenate([s for s, _ in parts]) if parts else np.empty(0, np.int64)
        dst = np.concatenate([d for _, d in parts]) if parts else np.empty(0, np.int64)
        n = int(self.a.size)
        self.graph = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))

    @classmethod
    def read(cls, store: Store, props: list[str], inverse: list[str]) -> LineageEdges:
        """Scan ``props`` (walked forwards) and ``inverse`` (walked backwards)."""
        queries = [f"SELECT ?s ?o WHERE {{ ?s <{p}> ?o FILTER(isIRI(?o)) }}" for p in props]
        queries += [f"SELECT ?s ?o WHERE {{ ?o <{q}> ?s FILTER(isIRI(?s)) }}" for q in inverse]
        ends = [scan.scan(store, q) for q in queries]
        sizes = [len(s) for s, _ in ends]
        a = np.concatenate([x.a for s, o in ends for x in (s, o)] or [np.empty(0, np.int64)])  # type: ignore[union-attr]
        b = np.concatenate([x.b for s, o in ends for x in (s, o)] or [np.empty(0, np.int64)])  # type: ignore[union-attr]
        del ends
        ua, first, ids = np.unique(a, return_index=True, return_inverse=True)
        ub = b[first]
        if not np.array_equal(ub[ids], b):  # two IRIs share a first key: about 3 in 10^6 at 10^7 IRIs
            both, ids = np.unique(np.rec.fromarrays([a, b], names="a,b"), return_inverse=True)
            ua, ub = both["a"], both["b"]
        del a, b
        ids = ids.astype(np.int32 if ua.size < 2**31 else np.int64)
        parts, at = [], 0
        for n in sizes:
            parts.append((ids[at : at + n], ids[at + n : at + 2 * n]))
            at += 2 * n
        return cls(props + inverse, len(props), parts, scan.Keys(ua, ub))

    def ids(self, iris: list[str]) -> np.ndarray:
        """The node id of each IRI; -1 for an IRI no lineage edge touches."""
        if not iris or not self.a.size:
            return np.full(len(iris), -1, dtype=np.int64)
        k = scan.keys_of(iris)
        # ids are in (first key, second key) order: the first key, then the second among equals
        lo = np.searchsorted(self.a, k.a, side="left")
        hi = np.searchsorted(self.a, k.a, side="right")
        pos = np.minimum(lo, self.a.size - 1)
        for i in np.flatnonzero(hi - lo > 1):  # only after a first-key collision
            pos[i] = lo[i] + np.searchsorted(self.b[lo[i] : hi[i]], k.b[i])
        pos = np.minimum(pos, self.a.size - 1)
        return np.where((self.a[pos] == k.a) & (self.b[pos] == k.b), pos, -1)

    def upstream(self, iri: str) -> np.ndarray:
        """``iri`` and every node it derives from, as a mask over node ids (one longer than
        the ids: id -1, an IRI no edge touches, is never upstream)."""
        mask = np.zeros(self.a.size + 1, dtype=bool)
        (i,) = self.ids([iri])
        if i >= 0:
            mask[breadth_first_order(self.graph, int(i), directed=True, return_predecessors=False)] = True
        return mask

    def source_counts(self, iri: str) -> dict[str, int]:
        """Per forward lineage property, how many edges run from ``iri`` (non-zero ones)."""
        (i,) = self.ids([iri])
        counts = {p: int(np.count_nonzero(s == i)) for p, (s, _) in zip(self.props, self.parts, strict=True)}
        return {p: k for p, k in list(counts.items())[: self.n_forward] if k}

    def undescribed(self, store: Store, within: np.ndarray) -> list[str]:
        """The nodes of mask ``within`` that a forward edge points at and that have no triple of
        their own (the store is asked only about those no scanned edge has as subject)."""
        fwd, inv = self.parts[: self.n_forward], self.parts[self.n_forward :]
        described = np.zeros(self.a.size + 1, dtype=bool)
        for s, _ in fwd:
            described[s] = True
        for _, d in inv:  # the subject of the inverse edge's triple
            described[d] = True
        maybe = np.zeros(self.a.size + 1, dtype=bool)
        for _, d in fwd:
            maybe[d] = True
        maybe &= within & ~described
        if not maybe.any():
            return []
        # the candidates' IRIs: the scans kept only their keys
        wanted: set[str] = set()
        for p, (_, d) in zip(self.props, fwd, strict=False):
            if maybe[d].any():
                rows = store.stream(f"SELECT ?o WHERE {{ ?s <{p}> ?o FILTER(isIRI(?o)) }}")
                while batch := [o for (o,) in itertools.islice(rows, scan.BATCH)]:
                    wanted.update(o for o, i in zip(batch, self.ids(batch), strict=True) if maybe[i])  # type: ignore[misc]
        out: list[str] = []
        names = sorted(wanted)
        for i in range(0, len(names), 1000):
            values = " ".join(f"<{n}>" for n in names[i : i + 1000])
            rows = store.select(
                f"SELECT ?n WHERE {{ VALUES ?n {{ {values} }} FILTER NOT EXISTS {{ ?n ?p ?o }} }}"
            )
            out += [r["n"].value for r in rows]  # type: ignore[union-attr]
        return out


def _violation_foci(store: Store) -> list[tuple[str, str]]:
    rows = store.select(f"""SELECT ?v ?focus WHERE {{ ?v a <{PG_NS}Violation> ; <{PG_NS}focus> ?focus }}""")
    return [(r["v"].value, r["focus"].value) for r in rows]  # type: ignore[union-attr]


def record_hubs(store: Store) -> None:
    """Write :func:`hub_summaries` into the ``check:lineage`` graph (replacing the previous one).

    Run after :func:`provgraph.rules.record_check`: the summaries read the violations it recorded.
    """
    facts = hub_summaries(store)

    def produce(fh: IO[str]) -> None:
        w = TripleWriter(fh)
        for hub, prop, obj in facts:
            w.add(IRI(hub), IRI(prop), obj)

    catalog.replace_from(store, "check:lineage", uuid.uuid4().hex, produce)
