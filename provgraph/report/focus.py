"""The focus-node section of the report: one collapsible section per focus node, headed by its
readable name, with its classes, where it was read, its own PROV links and its lineage (a block
that wraps rather than running off the page). A link to a node opens its section.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from provgraph.lineage.model import Lineage
from provgraph.lineage.show import render_tree
from provgraph.lineage.trace import trace_many
from provgraph.rdf.sparql import plain_iri
from provgraph.report.markup import anchor, esc
from provgraph.report.names import decoded
from provgraph.rules.runner import CheckReport, RuleResult, Violation
from provgraph.store.base import Store
from provgraph.views.nodes import node_names
from provgraph.views.vocabulary import vocabulary

log = logging.getLogger(__name__)

#: Focus nodes whose full lineage is drawn into the report (the rest get the command to run).
LINEAGE_TRACED = 60


def _lineage_note(focus: str, base: str, trace: Lineage | None) -> str:
    command = f"<p class='sub'>Lineage: <code>provgraph lineage {esc(focus)}</code></p>"
    if trace is None:
        return command
    tree = render_tree(trace, base)
    return (
        f"<p><b>Lineage</b> (status <span class='status-{esc(trace.status)}'>{esc(trace.status)}</span>):"
        f"</p><pre class='lineage'>{esc(tree)}</pre>{command}"
    )


def nodes_section(
    store: Store, check: CheckReport, listed: list[tuple[RuleResult, Violation]], names: dict[str, str]
) -> str:
    """One section per focus node of the listed violations: what it is, its links, its lineage
    (``names``: readable names of the focus nodes)."""
    if not listed:
        return (
            '<section id="nodes"><h2>Focus nodes</h2>'
            '<p class="sub">No violations, so no focus nodes.</p></section>'
        )
    by_focus: dict[str, list[tuple[RuleResult, Violation]]] = defaultdict(list)
    for r, v in listed:
        by_focus[v.focus].append((r, v))
    foci = sorted(by_focus)
    info = _node_facts(store, foci)
    linked = node_names(store, [o for facts in info.values() for _, o in facts["links"]])
    # the first foci's lineages in one walk: foci of one clause share most of their sources
    traced = foci[:LINEAGE_TRACED]
    traces = dict(zip(traced, trace_many(store, traced, max_nodes=200), strict=True))
    sections = []
    for focus in foci:
        facts = info.get(focus, {"types": [], "links": []})
        types = ", ".join(esc(t) for t in facts["types"]) or "not described by any import"
        flags = "".join(
            f'<li><span class="flag">{esc(r.rule.id)}</span>: {esc(v.message)}</li>'
            for r, v in by_focus[focus]
        )
        loc = next((v.location for _, v in by_focus[focus] if v.location), None)
        links = "".join(
            f"<li><code>{esc(p)}</code> → "
            f"<span class='iri'>{esc(decoded(linked.get(o, check.short(o))))}</span></li>"
            for p, o in facts["links"]
        )
        came_from = f"<ul>{links}</ul>" if links else "<p class='sub'>no recorded sources</p>"
        lineage_note = _lineage_note(focus, check.base_iri, traces.get(focus))
        rules = sorted({r.rule.id for r, _ in by_focus[focus]})
        sections.append(
            f"""<details class="node" id="{anchor(focus)}">
<summary><h3 class="iri">{esc(names.get(focus, focus))}</h3>
<span class="sub">{f"<code>{esc(loc)}</code> · " if loc else ""}{esc(", ".join(rules))}</span></summary>
<p>{types} · <span class="iri sub">{esc(focus)}</span></p>
<ul>{flags}</ul>
<p><b>Comes from</b> (its own PROV links):</p>{came_from}
{lineage_note}
</details>"""
        )
    return f"""<section id="nodes"><h2>Focus nodes</h2>
<p class="sub">{len(foci)} nodes; open one for what it is, what it comes from and its lineage.</p>
{"".join(sections)}
</section>"""


def _node_facts(store: Store, foci: list[str]) -> dict[str, dict]:
    """Class labels and direct PROV links (derived -> source) of each focus node."""
    vocab = vocabulary(store)
    relations = ", ".join(f"<{p}>" for p in vocab.relations)  # FILTER IN (views.nodes.node_names)
    facts: dict[str, dict] = defaultdict(lambda: {"types": [], "links": []})
    plain = [f for f in foci if plain_iri(f)]
    for i in range(0, len(plain), 300):
        values = " ".join(f"<{f}>" for f in plain[i : i + 300])
        for r in store.select(
            f"""SELECT ?s ?c ?p ?o WHERE {{ VALUES ?s {{ {values} }}
              {{ ?s a ?c }} UNION {{ ?s ?p ?o FILTER(?p IN ({relations}) && isIRI(?o)) }} }}"""
        ):
            s = r["s"].value  # type: ignore[union-attr]
            if r["c"] is not None:
                c = vocab.classes.get(r["c"].value)
                facts[s]["types"].append(c.label if c else r["c"].value)
            if r["p"] is not None:
                p = r["p"].value
                short = p.replace("https://w3id.org/provgraph/ns#", "pg:").replace(
                    "http://www.w3.org/ns/prov#", "prov:"
                )
                facts[s]["links"].append((short, r["o"].value))  # type: ignore[union-attr]
    for f in facts.values():
        f["types"] = sorted(set(f["types"]))
        f["links"] = sorted(set(f["links"]))
    return facts
