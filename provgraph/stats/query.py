"""Reading the store for the statistics engine: the SPARQL prefixes, chunked ``VALUES``
queries, and the scientific keys node IRIs were minted from."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import unquote

from provgraph.rdf.vocab import PG_NS, PROV_NS
from provgraph.store.base import Store

PREFIXES = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <{PROV_NS}>\n"
CHUNK = 400  # IRIs per VALUES block


def key_of(iri: str, base: str, kind: str) -> str:
    """The scientific key a node IRI was minted from (inverse of :func:`provgraph.rdf.terms.mint`)."""
    prefix = f"{base}{kind}/"
    if not iri.startswith(prefix):
        return iri
    return "/".join(unquote(part) for part in iri[len(prefix) :].split("/"))


class Keys:
    """Memoised :func:`key_of` for one kind (the same case IRI arrives many times)."""

    def __init__(self, base: str, kind: str) -> None:
        self.base, self.kind = base, kind
        self._seen: dict[str, str] = {}

    def __call__(self, iri: str) -> str:
        key = self._seen.get(iri)
        if key is None:
            key = self._seen[iri] = key_of(iri, self.base, self.kind)
        return key


def stream(store: Store, query: str, bindings=None) -> Iterator[tuple[str | None, ...]]:
    """Rows of a ``pg:``/``prov:`` query as tuples of lexical values."""
    return store.stream(PREFIXES + query, bindings)


def in_chunks(store: Store, query: str, var: str, iris: list[str]) -> Iterator[tuple[str | None, ...]]:
    """Run ``query`` (with a ``VALUES_PLACEHOLDER``) for chunks of IRIs bound to ``var``."""
    for i in range(0, len(iris), CHUNK):
        values = " ".join(f"<{x}>" for x in iris[i : i + CHUNK])
        yield from stream(store, query.replace("VALUES_PLACEHOLDER", f"VALUES ?{var} {{ {values} }}"))
