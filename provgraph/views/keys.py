"""Node keys: how the whole-graph view assigns each node to a box, computed inside the store.

A key is "DD|class|" for a group (DD = class depth, so MAX() over a node's types picks its
most specific class), "DD|class||node|IRI" for a node drawn on its own, either followed by
"|state|STATE" when the node overrides its class's state. :class:`NodeKeys` writes the SPARQL
that binds a node's key (so groups are counted by the store, not in Python) and computes the
same key in Python for small node sets; :class:`Key` reads one back. Every query here is
asked of the store seen through :func:`drawn_graphs` (``Store.within``), so a class's own
``pg:state`` in the ontology is not mistaken for a node's.
"""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.vocab import PG_NS
from provgraph.store import scopes
from provgraph.store.base import Rows, Store
from provgraph.views.nodes import value_blocks
from provgraph.views.vocabulary import Vocabulary

log = logging.getLogger(__name__)

NODE = "|node|"  # key of a node drawn on its own: "DD|class||node|IRI"
STATE = "|state|"  # suffix of a key whose node states its own pg:state


@dataclass
class NodeKeys:
    """How nodes map to keys in one view: which classes are drawn, which are expanded into
    their members, and whether keys are exact (see :func:`provgraph.views.whole.whole_graph`)."""

    vocab: Vocabulary
    expanded: frozenset[str]
    exact: bool  # per-node MAX over types and state overrides; needed when nodes have several types

    def values(self) -> str:
        """Rows of a SPARQL ``VALUES (?class ?key)`` block: each drawn class and its group key."""
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
            return f'IF({c} IN ({listed}), CONCAT({k}, "{NODE}", STR({v})), {k})'

        if not self.exact:
            plain = (
                f"{v} a {c} . VALUES ({c} ?{var}_k) {{ {self.values()} }} "
                f"BIND({key(f'?{var}_k')} AS ?{var}_key)"
            )
            # DISTINCT: a type stated in two graphs would count the node's triples twice
            return f"{{ SELECT DISTINCT {v} ?{var}_key WHERE {{ {plain} }} }}" if join else plain
        return f"""{{ SELECT {v} (CONCAT(MAX(?{var}_kx), COALESCE(SAMPLE(?{var}_st), "")) AS ?{var}_key)
            WHERE {{
              {v} a {c} . VALUES ({c} ?{var}_k) {{ {self.values()} }}
              BIND({key(f"?{var}_k")} AS ?{var}_kx)
              OPTIONAL {{ {v} <{PG_NS}state> ?{var}_s0 }}
              BIND(IF(BOUND(?{var}_s0), CONCAT("{STATE}", STR(?{var}_s0)), "") AS ?{var}_st)
            }} GROUP BY {v} }}"""

    @functools.cached_property
    def _drawn(self) -> dict:
        return {c.iri: c for c in self.vocab.drawn_classes()}

    def key_of(self, iri: str, types: Iterable[str], state: str | None) -> str | None:
        """The key :meth:`pattern` gives a node, computed in Python from its types and state."""
        drawn = self._drawn
        found = []
        for t in types:
            c = drawn.get(t)
            if c is not None:
                found.append(f"{c.depth:02d}|{c.iri}|" + (f"{NODE}{iri}" if c.iri in self.expanded else ""))
        if not found:
            return None
        return max(found) + (f"{STATE}{state}" if self.exact and state else "")

    def lookup(self, store: Store, iris: Iterable[str]) -> dict[str, str]:
        """Keys of a (small) set of nodes; nodes outside drawn classes are left out."""
        plain = sorted({i for i in iris if plain_iri(i)})
        types: dict[str, list[str]] = defaultdict(list)
        states: dict[str, str] = {}
        for values in value_blocks(plain):
            for r in store.select(
                f"""SELECT ?s ?c ?st WHERE {{ VALUES ?s {{ {values} }}
                    {{ ?s a ?c }}
                    UNION {{ ?s <{PG_NS}state> ?st }} }}"""
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
class Key:
    """A key read back: the node's class, its own state (if it overrides its class's) and, for
    a node drawn on its own, its IRI."""

    cls: str
    state_override: str | None
    iri: str | None

    @classmethod
    def parse(cls, text: str) -> Key:
        text, _, state = text.partition(STATE)
        head, _, iri = text.partition(NODE)
        klass = head.split("|")[1]
        return cls(klass, state or None, iri or None)


def drawn_graphs(store: Store) -> list[str]:
    """The graphs a picture of the whole graph draws (:func:`scopes.evidence_graphs`): the
    imports and the recomputed statistics; not the ontology, the check's derived views
    (internal to the rules, and most of the store at scale) nor its records."""
    return scopes.evidence_graphs(store)


def has_state_overrides(store: Store) -> bool:
    """Whether any node of the (drawn) data states its own pg:state."""
    return store.ask(f"ASK {{ ?s <{PG_NS}state> ?st }}")


def group_rows(store: Store, keys: NodeKeys) -> Rows:
    """One row per key: ``?s_key``, its node count ``?n`` and a sample node ``?ex``."""
    return store.select(
        f"SELECT ?s_key (COUNT(DISTINCT ?s) AS ?n) (SAMPLE(?s) AS ?ex) "
        f"WHERE {{ {keys.pattern('s')} }} GROUP BY ?s_key"
    )
