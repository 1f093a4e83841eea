"""Counts of the whole-graph view corrected for nodes with several drawn types.

The view counts nodes, arrows and facet values under each node's key. Binding every node's
exact key (its most specific drawn class: a ``GROUP BY`` over every node of the store, see
:meth:`provgraph.views.keys.NodeKeys.pattern`) cost 18 times as much as binding a key per
type triple (9 s against 0.5 s on 10^4 calls), and the store holds that key sub-select three
times in one view. So the view counts per type triple (the fast keys), and this module
corrects the counts for the few nodes that carry several drawn types (a DICOM file is a
``pg:DicomFile`` and a ``pg:File``): their extra keys are subtracted and their exact key
added, from their own triples, looked up with ``VALUES`` (cost in proportion to those nodes,
not to the store). Nodes stating their own ``pg:state`` still take the exact path. Those
lookups by node are asked of the whole store within the drawn graphs (``in_graphs``).
"""

from __future__ import annotations

from collections import defaultdict

import pyoxigraph as ox

from provgraph.rdf.sparql import plain_iri
from provgraph.store.base import Within
from provgraph.store.scopes import in_graphs
from provgraph.views.keys import NodeKeys
from provgraph.views.nodes import value_blocks

Counts = dict[tuple[str, str, str | None], int]  # (subject key, predicate, object key or value) -> n


class MultiTyped:
    """The IRIs with two or more drawn types, each with its fast keys and its exact key."""

    def __init__(self, store: Within, keys: NodeKeys) -> None:
        self.keys = keys
        drawn = " ".join(f"<{c.iri}>" for c in keys.vocab.drawn_classes())
        types: dict[str, set[str]] = defaultdict(set)
        for s, c in store.stream(
            f"""SELECT DISTINCT ?s ?c WHERE {{
              {{ SELECT ?s WHERE {{ ?s a ?c1 . VALUES ?c1 {{ {drawn} }} FILTER(isIRI(?s)) }}
                 GROUP BY ?s HAVING (COUNT(DISTINCT ?c1) > 1) }}
              ?s a ?c . VALUES ?c {{ {drawn} }} }}"""
        ):
            if plain_iri(s):  # type: ignore[arg-type]
                types[s].add(c)  # type: ignore[index,arg-type]
        self.exact: dict[str, str] = {}
        self.extra: dict[str, set[str]] = {}  # the fast keys that are not the exact one
        for s, ts in types.items():
            fast = {keys.key_of(s, [t], None) for t in ts}
            exact = keys.key_of(s, ts, None)
            self.exact[s] = exact  # type: ignore[assignment]
            self.extra[s] = {k for k in fast if k is not None and k != exact}

    def __bool__(self) -> bool:
        return bool(self.exact)

    def fast(self, iri: str) -> set[str]:
        return self.extra[iri] | {self.exact[iri]}

    def groups(self, store: Within, groups: dict[str, list]) -> None:
        """Correct ``groups`` (key -> [node count, sample node]): each node counted once, under
        its exact key; a group left with one node gets that node as its sample."""
        changed = set()
        for extra in self.extra.values():
            for k in extra:
                if k in groups:
                    groups[k][0] -= 1
                    changed.add(k)
        for k in changed:
            n = groups[k][0]
            if n <= 0:
                del groups[k]
            elif n == 1:
                groups[k][1] = self._sole_member(store, k)

    def _sole_member(self, store: Within, key: str) -> str:
        cls = key.split("|")[1]
        for (s,) in store.stream(f"SELECT DISTINCT ?s WHERE {{ ?s a <{cls}> }}"):
            if s is not None and key not in self.extra.get(s, ()):
                return s
        raise AssertionError(f"no member left in group {key}")  # the counts said one

    def arrows(self, store: Within, relations: str, counts: Counts) -> None:
        """Correct arrow ``counts`` for the triples (of the ``relations`` listed, comma
        separated IRIs) that have a multi-typed node at either end."""
        triples: list[tuple[ox.Term, ...]] = []
        where = f"{in_graphs('?s ?p ?o', store.graphs)} FILTER(?p IN ({relations}))"
        for block in value_blocks(list(self.exact)):
            triples += store.store.solutions(f"SELECT ?s ?p ?o WHERE {{ VALUES ?s {{ {block} }} {where} }}")  # type: ignore[arg-type]
            triples += [
                t
                for t in store.store.solutions(f"SELECT ?s ?p ?o WHERE {{ VALUES ?o {{ {block} }} {where} }}")
                if t[0] is not None and t[0].value not in self.exact  # type: ignore[union-attr]
            ]
        ends = {t.value for s, _, o in triples for t in (s, o) if isinstance(t, ox.NamedNode)}
        single = self._lookup(store, [e for e in ends if e not in self.exact and plain_iri(e)])
        for s, p, o in triples:
            if not isinstance(s, ox.NamedNode) or isinstance(o, ox.BlankNode):
                continue  # blank nodes are not looked up: left as counted
            fs = self._keys_of(s.value, single)
            if not fs:
                continue  # a subject outside drawn classes has no arrow
            fo = self._keys_of(o.value, single) if isinstance(o, ox.NamedNode) else set()
            pred = p.value  # type: ignore[union-attr]
            for ks in fs:
                for ko in fo or {None}:
                    counts[(ks, pred, ko)] -= 1
            counts[(self._key(s.value, single), pred, self._key(o.value, single) if fo else None)] += 1  # type: ignore[index,arg-type]
        for k in [k for k, n in counts.items() if n <= 0]:
            del counts[k]

    def facets(self, store: Within, facets: str, counts: Counts) -> None:
        """Correct facet ``counts`` (key, property, value) -> nodes: a multi-typed node's
        values counted under its exact key only."""
        for block in value_blocks(list(self.exact)):
            where = f"VALUES ?s {{ {block} }} {in_graphs('?s ?p ?v', store.graphs)} FILTER(?p IN ({facets}))"
            for s, p, v in store.store.stream(f"SELECT DISTINCT ?s ?p ?v WHERE {{ {where} }}"):
                for k in self.extra[s]:  # type: ignore[index]
                    counts[(k, p, v)] -= 1  # type: ignore[index]
        for k in [k for k, n in counts.items() if n <= 0]:
            del counts[k]

    def _lookup(self, store: Within, iris: list[str]) -> dict[str, str]:
        """Keys of nodes with one drawn type, from their types alone (the fast path is taken
        only when no node states its own pg:state, so the key needs no state; NodeKeys.lookup
        also reads the states, a scan of every graph per block)."""
        types: dict[str, list[str]] = defaultdict(list)
        for block in value_blocks(iris):
            types_of = f"VALUES ?s {{ {block} }} {in_graphs('?s a ?c', store.graphs)}"
            for s, c in store.store.stream(f"SELECT DISTINCT ?s ?c WHERE {{ {types_of} }}"):
                types[s].append(c)  # type: ignore[index,arg-type]
        out = {}
        for s, ts in types.items():
            key = self.keys.key_of(s, ts, None)
            if key is not None:
                out[s] = key
        return out

    def _keys_of(self, iri: str, single: dict[str, str]) -> set[str]:
        if iri in self.exact:
            return self.fast(iri)
        return {single[iri]} if iri in single else set()

    def _key(self, iri: str, single: dict[str, str]) -> str | None:
        return self.exact.get(iri) or single.get(iri)
