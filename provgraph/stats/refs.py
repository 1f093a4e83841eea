"""Registry references to recomputed statistics, resolved by their facets, not their spelling.

A ``[[release.values]]`` entry names the statistic that recomputes it (``statistic = ...``);
the contract importer keeps that reference as written (``pg:statisticRef``). Here it is read
as a set of facets (``name=cochran_q``, ``route=globally-complete``, or bare values such as
``cochran_q``, each percent-decoded, in any order) and resolved against the statistics this
engine recomputed: the statistics holding every facet; of several, the one with no facet
beyond them. One -> ``pg:recomputedAs``; none or several -> a ``pg:bindingNote`` naming the
candidates. So ``statistic/cochran_q/globally-complete`` and
``statistic/name%3Dcochran_q/route%3Dglobally-complete`` resolve alike.

>>> facets("statistic/name%3Dcochran_q/route%3Dglobally-complete", "https://x/")
(('name', 'cochran_q'), ('route', 'globally-complete'))
>>> facets("https://x/statistic/cochran_q/globally-complete", "https://x/")
((None, 'cochran_q'), (None, 'globally-complete'))
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG
from provgraph.stats.query import stream
from provgraph.stats.statistic import NAME_ALIASES, ROUTE_ALIASES, VARIANT_ALIASES, Stat
from provgraph.store.base import Store

_REFS = "SELECT ?node ?ref WHERE { ?node a pg:RegistryValue ; pg:statisticRef ?ref }"
_ALIASES = {"name": NAME_ALIASES, "route": ROUTE_ALIASES, "variant": VARIANT_ALIASES}


@dataclass(frozen=True)
class Resolved:
    node: str  # the registry value
    ref: str  # as written
    stat: Stat | None
    note: str = ""


def facets(ref: str, base: str) -> tuple[tuple[str | None, str], ...]:
    """The (field, value) pairs a reference states; field None for a bare value."""
    text = ref[len(base) :] if ref.startswith(base) else ref
    parts = [unquote(p) for p in text.strip("/").split("/") if p]
    if parts and parts[0] == "statistic":
        parts = parts[1:]
    out = []
    for part in parts:
        key, eq, value = part.partition("=")
        out.append((key, value) if eq else (None, part))
    return tuple(out)


def _stat_facets(s: Stat) -> set[tuple[str, str]]:
    return {tuple(seg.split("=", 1)) for seg in s.segments()}  # type: ignore[misc]


def _holds(have: set[tuple[str, str]], key: str | None, value: str) -> bool:
    if key is None:
        return any(v == value or _ALIASES.get(k, {}).get(value.lower()) == v for k, v in have)
    canon = _ALIASES.get(key, {}).get(value.lower(), value)
    return (key, value) in have or (key, canon) in have


def resolve(ref: str, base: str, stats: list[Stat], node: str = "") -> Resolved:
    """The one recomputed statistic a reference names, or a note naming the candidates."""
    if ref.startswith(base) or ":" not in ref.split("/")[0]:
        wanted = facets(ref, base)
        pool = [s for s in stats if all(_holds(f, k, v) for f in [_stat_facets(s)] for k, v in wanted)]
    else:  # an absolute IRI outside the project: only the very node
        wanted, pool = (), [s for s in stats if s.iri(base) == ref]
    if len(pool) > 1:
        exact = [s for s in pool if len(s.segments()) == len(wanted)]
        pool = exact if len(exact) == 1 else pool
    if len(pool) == 1:
        return Resolved(node, ref, pool[0])
    if not pool:
        named = {NAME_ALIASES.get(v.lower(), v) for k, v in wanted if k in (None, "name")}
        near = sorted(s.iri(base)[len(base) :] for s in stats if s.name in named)
        known = _few(sorted({s.name for s in stats}), 12)
        hint = f"; of that name: {_few(near)}" if near else f"; recomputed names: {known}"
        return Resolved(node, ref, None, f"statistic {ref!r} names no recomputed statistic{hint}")
    cands = sorted(s.iri(base)[len(base) :] for s in pool)
    note = f"statistic {ref!r} names {len(pool)} statistics: {_few(cands)}; add a facet"
    return Resolved(node, ref, None, note)


def resolve_registry(store: Store, base: str, stats: list[Stat]) -> list[Resolved]:
    """Every registry reference in the store, resolved."""
    return [resolve(ref or "", base, stats, node or "") for node, ref in stream(store, _REFS)]


def write_resolved(add, base: str, resolved: list[Resolved]) -> None:
    for r in resolved:
        if r.stat is not None:
            add(IRI(r.node), PG.recomputedAs, r.stat.iri(base))
        else:
            add(IRI(r.node), PG.bindingNote, r.note)


def _few(items: list[str], most: int = 5) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")
