"""Graphviz output of a :class:`~provgraph.views.model.View`: DOT text, and SVG/PNG through ``dot``.

Style is one table keyed by PROV kind, as in the ``prov`` package: entity oval, activity box,
agent house. A double outline is a group of like nodes, a dashed outline a node that is
referenced but not in the graph, a red outline a node with violations (the rule ids are
written in it). Columns are the six states of a result, left to right; arrows keep PROV's
direction (from the derived node to what it came from) while the layout runs from intended to
released. The DOT file needs nothing but graphviz to render; SVG and PNG need its ``dot``
program, and :func:`render` says how to install it when it is missing.
"""

from __future__ import annotations

import html
import itertools
import shutil
import subprocess

from provgraph.errors import MissingExtraError, ProvgraphError
from provgraph.views.model import Box, View

INSTALL_HINT = (
    "graphviz's `dot` program is not installed, so only the DOT file was written; install it "
    "to get SVG and PNG: apt-get install graphviz (Debian/Ubuntu), brew install graphviz "
    "(macOS), conda install graphviz"
)
FORMATS = ("dot", "svg", "png")
FONT = "Helvetica,Arial,sans-serif"

#: Node style by PROV kind (None: a node of a class outside PROV).
STYLE = {
    "entity": {"shape": "ellipse", "fillcolor": "#FFFC87", "color": "#808080"},
    "activity": {"shape": "box", "fillcolor": "#9FB1FC", "color": "#0000FF"},
    "agent": {"shape": "house", "fillcolor": "#FED37F", "color": "#808080"},
    None: {"shape": "note", "fillcolor": "#EEEEEE", "color": "#808080"},
}
VIOLATION = "#C00000"
STATE_FILL = "#F6F7F9"


def _attrs(values: dict[str, object]) -> str:
    parts = []
    for k, v in values.items():
        if isinstance(v, str) and v.startswith("<") and v.endswith(">"):
            parts.append(f"{k}={v}")  # an HTML-like label
        else:
            parts.append(f'{k}="{_quote(str(v))}"')
    return "[" + ", ".join(parts) + "]"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _html(text: str) -> str:
    return html.escape(text, quote=True)


def _label(box: Box) -> str:
    lines = box.title.split("\n")
    rows = [f"<B>{_html(lines[0])}</B>"] + [_html(x) for x in lines[1:]]
    rows += [f'<FONT POINT-SIZE="10">{_html(f)}</FONT>' for f in box.facets]
    for rule, n in box.violations.items():
        count = f" ({n})" if box.count > 1 else ""
        rows.append(f'<FONT POINT-SIZE="10" COLOR="{VIOLATION}">&#9888; {_html(rule)}{count}</FONT>')
    return "<" + "<BR/>".join(rows) + ">"


def _node(box: Box) -> dict[str, object]:
    style = dict(STYLE.get(box.kind, STYLE[None]))
    styles = ["filled"]
    attrs: dict[str, object] = {"label": _label(box), "tooltip": box.iri or box.title.replace("\n", " ")}
    if box.group:
        attrs["peripheries"] = 2
    if box.absent:
        styles.append("dashed")
        style["fillcolor"] = "#FFFFFF"
    if box.flagged:
        style["color"] = VIOLATION
        attrs["penwidth"] = 2.5
    if box.focus:
        styles.append("bold")
        attrs["penwidth"] = 3.5
    attrs.update(style)
    attrs["style"] = ",".join(styles)
    attrs["class"] = "flagged" if box.flagged else ("absent" if box.absent else (box.kind or "other"))
    return attrs


def to_dot(view: View, legend: bool = True) -> str:
    """The view as DOT text (deterministic: the same view gives the same bytes)."""
    ids = {key: f"b{i}" for i, key in enumerate(sorted(view.boxes))}
    out = [
        "digraph provgraph {",
        f"  graph {_attrs(_graph_attrs(view))};",
        f'  node [fontname="{FONT}", fontsize=11, margin="0.12,0.06"];',
        f'  edge [fontname="{FONT}", fontsize=9, color="#555555", fontcolor="#555555", arrowsize=0.7];',
    ]
    columns: dict[int, list[str]] = {}
    titles: dict[int, str] = {}
    for key, box in view.boxes.items():
        order = view.states[box.state].order if box.state in view.states else 99
        columns.setdefault(order, []).append(key)
        titles[order] = view.states[box.state].label if box.state in view.states else "no state"
    anchors = []
    for order in sorted(columns):
        anchor = f"anchor{order}"
        anchors.append(anchor)
        out.append(f"  subgraph cluster_state{order} {{")
        label = f"{titles[order]}" if order == 99 else f"{order} {titles[order]}"
        out.append(
            f'    label="{_quote(label)}"; labeljust=l; fontsize=13; style=filled; '
            f'fillcolor="{STATE_FILL}"; color="#D0D4DA";'
        )
        out.append(f'    {anchor} [style=invis, shape=point, width=0, label=""];')
        members = sorted(columns[order])
        for key in members:
            out.append(f"    {ids[key]} {_attrs(_node(view.boxes[key]))};")
        out.append(f"    {{ rank=same; {anchor}; {'; '.join(ids[k] for k in members)}; }}")
        out.append("  }")
    if legend:
        anchors.append("anchorLegend")
        out += _legend()
    for a, b in itertools.pairwise(anchors):
        out.append(f"  {a} -> {b} [style=invis, weight=20];")
    order_of = {
        key: (view.states[b.state].order if b.state in view.states else 99) for key, b in view.boxes.items()
    }
    for arrow in view.arrows:
        t, h = arrow.tail, arrow.head
        label = arrow.label + (f" ×{arrow.count}" if arrow.count > 1 else "")
        attrs: dict[str, object] = {"label": label, "tooltip": f"{arrow.label}: {arrow.count}"}
        if order_of[t] > order_of[h]:  # the layout runs left to right, the PROV arrow backwards
            attrs["dir"] = "back"
            out.append(f"  {ids[h]} -> {ids[t]} {_attrs(attrs)};")
        else:
            out.append(f"  {ids[t]} -> {ids[h]} {_attrs(attrs)};")
    out.append("}")
    return "\n".join(out) + "\n"


def _graph_attrs(view: View) -> dict[str, object]:
    lines = [view.title]
    if view.status:
        lines.append(f"status: {view.status}")
    lines += view.notes
    return {
        "rankdir": "LR",
        "newrank": "true",
        "nodesep": 0.35,
        "ranksep": 0.9,
        "fontname": FONT,
        "fontsize": 14,
        "labelloc": "t",
        "labeljust": "l",
        "label": "\n".join(lines),
        "bgcolor": "white",
        "pad": 0.2,
    }


def _legend() -> list[str]:
    samples = [
        ("entity", {**STYLE["entity"], "style": "filled"}),
        ("activity", {**STYLE["activity"], "style": "filled"}),
        ("agent", {**STYLE["agent"], "style": "filled"}),
        ("group of N like nodes", {**STYLE["entity"], "style": "filled", "peripheries": 2}),
        (
            "referenced, not in the graph",
            {**STYLE["entity"], "style": "filled,dashed", "fillcolor": "#FFFFFF"},
        ),
        (
            "has violations (rule ids)",
            {**STYLE["entity"], "style": "filled", "color": VIOLATION, "penwidth": 2.5},
        ),
    ]
    out = [
        "  subgraph cluster_legend {",
        '    label="legend"; labeljust=l; fontsize=12; style=dashed; color="#BBBBBB";',
        '    anchorLegend [style=invis, shape=point, width=0, label=""];',
    ]
    names = []
    for i, (text, attrs) in enumerate(samples):
        name = f"legend{i}"
        names.append(name)
        out.append(f"    {name} {_attrs({'label': text, 'fontsize': 9, **attrs})};")
    out.append(f"    {{ rank=same; anchorLegend; {'; '.join(names)}; }}")
    out.append("  }")
    return out


def dot_program() -> str | None:
    """Path of graphviz's ``dot``, or None when it is not installed."""
    return shutil.which("dot")


def render(dot_text: str, fmt: str, timeout: float = 300) -> bytes:
    """Lay out ``dot_text`` with graphviz and return ``fmt`` (``svg`` or ``png``) bytes.

    Raises :class:`MissingExtraError` (with the install command) when ``dot`` is missing.
    """
    exe = dot_program()
    if exe is None:
        raise MissingExtraError(INSTALL_HINT)
    args = [exe, f"-T{fmt}"]
    if fmt == "png":
        args.append("-Gdpi=110")
    try:
        proc = subprocess.run(args, input=dot_text.encode("utf-8"), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise ProvgraphError(f"graphviz took more than {timeout:.0f} s to lay out the picture") from err
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ProvgraphError(f"graphviz failed: {detail[0] if detail else f'exit {proc.returncode}'}")
    return proc.stdout
