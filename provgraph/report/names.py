"""Readable names for the nodes the report shows: a node's own name (its path, call id, key,
statistic name, label), a claim's or mention's number with it, else its IRI below the project's
base decoded (``extraction/labels/cache.jsonl/outputs/a.txt``, not ``labels%2Fcache.jsonl``).
Headings and links use these; the full IRI stays beside them for whoever needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote

from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.vocab import PG_NS
from provgraph.store.base import Store
from provgraph.views.nodes import node_names, value_blocks


def decoded(short: str) -> str:
    """A short IRI with its percent-escapes decoded, so ``name%3Dcochran_q`` reads ``name=cochran_q``."""
    return unquote(short)


def readable_names(store: Store, iris: Sequence[str], base: str) -> dict[str, str]:
    """One readable name per node; a node with a ``pg:value`` (a claim, a reported value) is
    named by its value and its own name: ``123.02 (cochran_q)``."""
    unique = list(dict.fromkeys(iris))
    names = node_names(store, unique)
    values: dict[str, str] = {}
    for block in value_blocks([i for i in unique if plain_iri(i)]):
        for r in store.select(
            f"SELECT ?s (SAMPLE(?v) AS ?value) WHERE {{ VALUES ?s {{ {block} }} ?s <{PG_NS}value> ?v }} "
            "GROUP BY ?s"
        ):
            values[r["s"].value] = r["value"].value  # type: ignore[union-attr]
    out = {}
    for iri in unique:
        name = names.get(iri, iri)
        if base and iri.startswith(base) and name == iri[len(base) :]:
            name = decoded(name)  # no name property: the IRI tail, made legible
        elif name == iri:
            name = decoded(name)
        value = values.get(iri)
        out[iri] = f"{value} ({name})" if value is not None and value != name else name
    return out
