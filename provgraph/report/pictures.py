"""Small lineage pictures, one per clause: the focus nodes of a clause's violations and the
nodes they come from (their own PROV links), drawn by :mod:`provgraph.views` and graphviz and
inlined as SVG. One picture of a few dozen boxes stays legible at page width where the whole
graph does not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from provgraph.errors import MissingExtraError
from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.vocab import PROV_NS
from provgraph.report import plots
from provgraph.report.markup import esc
from provgraph.report.names import decoded
from provgraph.store.base import Store
from provgraph.views import dot
from provgraph.views.model import Mark
from provgraph.views.nodes import subgraph, value_blocks
from provgraph.views.vocabulary import vocabulary

#: Focus nodes drawn per clause (the first of each rule, then the next listed; the caption says
#: how many it leaves out).
FOCI_DRAWN = 6
#: Sources drawn per focus node.
LINKS_DRAWN = 3
#: Longest name in a box before its middle is elided (hashed keys run to 64 characters).
NAME_CHARS = 36


def _links(store: Store, foci: Sequence[str]) -> list[tuple[str, str, str]]:
    """The direct PROV links (derived, property, source) of the nodes, a few per node, one
    arrow per (node, source) pair (PROV's own property before provgraph's)."""
    relations = ", ".join(f"<{p}>" for p in vocabulary(store).relations)  # FILTER IN (node_names)
    edges: dict[tuple[str, str], str] = {}
    per: dict[str, int] = {}
    for block in value_blocks([f for f in foci if plain_iri(f)]):
        for r in store.select(
            f"""SELECT ?s ?p ?o WHERE {{ VALUES ?s {{ {block} }} ?s ?p ?o
                FILTER(?p IN ({relations}) && isIRI(?o)) }}
                ORDER BY ?s DESC(STRSTARTS(STR(?p), "{PROV_NS}")) ?p ?o"""
        ):
            s, o = r["s"].value, r["o"].value  # type: ignore[union-attr]
            if (s, o) not in edges and per.get(s, 0) < LINKS_DRAWN:
                per[s] = per.get(s, 0) + 1
                edges[(s, o)] = r["p"].value  # type: ignore[union-attr]
    return [(s, p, o) for (s, o), p in edges.items()]


def _short(name: str) -> str:
    if len(name) <= NAME_CHARS:
        return name
    half = (NAME_CHARS - 1) // 2
    return f"{name[:half]}…{name[-half:]}"


def clause_picture(
    store: Store, clause: str, foci: Sequence[Sequence[str]], marks: Sequence[Mark], names: dict[str, str]
) -> str:
    """The SVG (or a note saying why there is none) of a clause's violations and their sources.
    ``foci``: the focus nodes of each rule of the clause, in listed order; boxes are named by
    ``names`` (readable names) where it has them."""
    every = list(dict.fromkeys(f for rule in foci for f in rule))
    drawn = list(dict.fromkeys([rule[0] for rule in foci if rule] + every))[:FOCI_DRAWN]
    if not drawn:
        return ""
    edges = _links(store, drawn)
    view = subgraph(store, drawn + [o for _, _, o in edges], edges, marks, title="")
    for box in view.boxes.values():
        kind, _, name = box.title.partition("\n")
        box.title = f"{kind}\n{_short(names.get(box.iri or '', decoded(name)))}"
    # The views' columns put every node of a state in one rank: right for the whole graph,
    # but a clause's few nodes then stack into one tall column. Ranks by the arrows instead.
    text = "\n".join(line for line in dot.to_dot(view, legend=False).splitlines() if "rank=same" not in line)
    left = len(every) - len(drawn)
    caption = (
        f"{len(drawn)} of this clause's focus nodes (the first of each rule first) and what each comes "
        "from" + (f"; {left} more not drawn" if left else "") + ". Red outlines carry the rules that fired."
    )
    try:
        svg = dot.render(text, "svg")
    except MissingExtraError as err:
        return f'<div class="picture absent" id="picture-{esc(clause)}"><p class="sub">{esc(err)}</p></div>'
    return (
        f'<figure class="picture" id="picture-{esc(clause)}">{_inline(svg, clause)}'
        f'<figcaption class="sub">{esc(caption)}</figcaption></figure>'
    )


def _inline(svg: bytes, clause: str) -> str:
    """Graphviz SVG as an inline element: no prolog or comments, ids scoped to the clause."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = plots.scope_ids(text, f"pic-{clause}-")
    label = f"lineage of the {clause} violations"
    return text.replace("<svg ", f'<svg role="img" aria-label="{esc(label)}" ', 1)
