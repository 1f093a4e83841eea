"""Small HTML helpers shared by the report's sections: escaping, node anchors, evidence
panels, and the stylesheet (``report.css``, shipped as package data and inlined into the page
so the report stays one self-contained file).
"""

from __future__ import annotations

import functools
import hashlib
import html
from importlib import resources


def esc(text: object) -> str:
    """``text`` escaped for HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def anchor(iri: str) -> str:
    """The HTML id of a focus node's section."""
    return "node-" + hashlib.sha256(iri.encode()).hexdigest()[:12]


@functools.cache
def stylesheet() -> str:
    """The report's CSS (``provgraph/report/report.css``)."""
    return resources.files("provgraph.report").joinpath("report.css").read_text(encoding="utf-8")


def panel(panel_id: str, title: str, body: str | None, absent: str, summary: str = "") -> str:
    """One evidence panel; ``body`` None: the evidence is not in the graph, ``absent`` says why."""
    if body is None:
        return f"""<div class="panel absent" id="panel-{panel_id}"><h3>{esc(title)}</h3>
<p>Not in the graph: {absent}</p></div>"""
    lead = f'<p class="lead">{esc(summary)}</p>' if summary else ""
    return f"""<div class="panel" id="panel-{panel_id}"><h3>{esc(title)}</h3>{lead}{body}</div>"""
