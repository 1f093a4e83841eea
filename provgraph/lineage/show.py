"""Rendering a lineage: an indented text tree (:func:`render_tree`) or a Graphviz digraph
(:func:`render_dot`); the numbers of one text with their statuses (:func:`render_numbers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from provgraph.lineage.model import STATUSES, Lineage, Node, worst

if TYPE_CHECKING:
    from provgraph.lineage.claims import NumberStatus


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
        sampled = [x for x in lineage.sampled if x.source == iri]
        hidden = sum(x.total - len(x.shown) for x in sampled)
        more = "or more" if any(x.at_least for x in sampled) else "more"
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
                f"{pad}└── ... and {hidden:,} {more} sources, sampled: what lies upstream of them "
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


def render_numbers(path: str, rows: list[NumberStatus]) -> str:
    """Every number of the text at ``path``: file:line:col, as written, its table row and column
    labels, status and the reason that decides it (one block per number)."""
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    head = f"{path}: {len(rows)} number{'s' if len(rows) != 1 else ''}"
    out = [head + (f" ({summary})" if summary else "")]
    for r in rows:
        cell = [f"row {r.row!r}" if r.row else "", f"column {r.column_label!r}" if r.column_label else ""]
        where = f"  [{' / '.join(x for x in cell if x)}]" if any(cell) else ""
        out.append(f"  {r.location}  {r.text}{where}")
        out.append(f"      {r.status}: {r.reason or '-'}")
    return "\n".join(out) + "\n"
