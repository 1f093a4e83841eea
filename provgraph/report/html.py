"""The audit report: one self-contained HTML file (inline CSS and SVG, no scripts, no fetches).

Sections: the gate per clause; every violation with its focus node, message, remedy and a
link to the node's own section (its lineage); Figure-2-style accounting plots drawn from the
graph; reported against recomputed statistics; claim statuses; the collapsed picture of the
whole graph; one section per focus node. Panels whose evidence is not in the graph say what
is absent and which import would bring it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import logging
import re
from collections import defaultdict
from dataclasses import dataclass

from provgraph import __version__
from provgraph.errors import MissingExtraError
from provgraph.report import accounting, plots
from provgraph.rules.rule import CLAUSES
from provgraph.rules.runner import CheckReport, RuleResult, Violation
from provgraph.store.base import Store

log = logging.getLogger(__name__)

_OUTCOME = {"pass": "pass", "violated": "violated", "error": "could not run", "skipped": "skipped"}


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def anchor(iri: str) -> str:
    """The HTML id of a focus node's section."""
    return "node-" + hashlib.sha256(iri.encode()).hexdigest()[:12]


@dataclass
class ReportOptions:
    limit: int | None = 200  # violations listed per rule (None: all)
    graph: bool = True


def build_report(store: Store, check: CheckReport, options: ReportOptions | None = None) -> str:
    """The HTML page for the graph in ``store`` and the check result ``check``."""
    from provgraph.views.graph import marks_from_report, whole_graph

    options = options or ReportOptions()
    listed = _listed(check, options.limit)
    view = whole_graph(store, marks_from_report(check)) if options.graph else None
    parts = [
        _head(check),
        _banner(check, store),
        _nav(),
        _gate(check),
        _violations(check, listed, options.limit),
        _accounting(store),
        _statistics(store),
        _claims(store),
        _graph(view),
        _nodes(store, check, listed),
        _footer(store),
    ]
    return "\n".join(parts)


def _listed(check: CheckReport, limit: int | None) -> list[tuple[RuleResult, Violation]]:
    out = []
    for r in check.results:
        shown = r.violations if limit is None else r.violations[:limit]
        out += [(r, v) for v in shown]
    return out


# ---------------------------------------------------------------------------
# page frame
# ---------------------------------------------------------------------------

CSS = """
:root { --ink:#1d2430; --muted:#5f6b7a; --line:#dde2e8; --bg:#ffffff; --soft:#f5f7fa;
        --fail:#b3261e; --pass:#2e7d32; --warn:#b26a00; --link:#1f5fbf; }
* { box-sizing: border-box; }
html { font-size: 15px; }
body { margin: 0; color: var(--ink); background: var(--bg); line-height: 1.45;
       font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 0 1.5rem 3rem; }
header.top { background: var(--soft); border-bottom: 1px solid var(--line); }
header.top .inner { max-width: 1180px; margin: 0 auto; padding: 1.1rem 1.5rem; display: flex;
       gap: 1.2rem; align-items: center; flex-wrap: wrap; }
h1 { font-size: 1.45rem; margin: 0; }
h2 { font-size: 1.2rem; margin: 2.2rem 0 0.7rem; padding-top: 0.4rem; border-top: 1px solid var(--line); }
h3 { font-size: 1.02rem; margin: 1.3rem 0 0.4rem; }
.sub { color: var(--muted); font-size: 0.9rem; }
.badge { display: inline-block; padding: 0.25rem 0.8rem; border-radius: 999px; font-weight: 700;
         color: #fff; letter-spacing: 0.04em; }
.badge.fail { background: var(--fail); } .badge.pass { background: var(--pass); }
.gate-line { font-weight: 600; }
nav { position: sticky; top: 0; z-index: 2; background: rgba(255,255,255,0.96);
      border-bottom: 1px solid var(--line); }
nav .inner { max-width: 1180px; margin: 0 auto; padding: 0.45rem 1.5rem; display: flex; gap: 1.1rem;
      flex-wrap: wrap; font-size: 0.92rem; }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
table { border-collapse: collapse; width: 100%; font-size: 0.92rem; }
th, td { text-align: left; padding: 0.35rem 0.55rem; border-bottom: 1px solid var(--line);
         vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
.outcome-fail, .outcome-violated, .outcome-error { color: var(--fail); font-weight: 600; }
.outcome-pass { color: var(--pass); font-weight: 600; }
.outcome-skipped, .outcome-none { color: var(--muted); }
.rule { border: 1px solid var(--line); border-radius: 8px; padding: 0.2rem 1rem 0.8rem; margin: 0.9rem 0; }
.rule.fail { border-left: 5px solid var(--fail); } .rule.restrict { border-left: 5px solid var(--warn); }
.rule.info { border-left: 5px solid var(--muted); }
.remedy { background: var(--soft); border-radius: 6px; padding: 0.45rem 0.7rem; margin: 0.5rem 0; }
code, .iri { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.86em;
       overflow-wrap: anywhere; }
.panels { display: grid; grid-template-columns: repeat(auto-fit, minmax(330px, 1fr)); gap: 1rem; }
.panel { border: 1px solid var(--line); border-radius: 8px; padding: 0.6rem 0.8rem; background: #fff; }
.panel h3 { margin-top: 0.2rem; margin-bottom: 0.2rem; }
.panel .lead { margin: 0 0 0.3rem; font-weight: 600; }
.panel.absent { background: var(--soft); color: var(--muted); }
svg.plot { max-width: 100%; height: auto; display: block; margin: 0.2rem 0; }
.graph { border: 1px solid var(--line); border-radius: 8px; padding: 0.5rem; overflow: auto;
         max-height: 80vh; }
.graph svg { max-width: 100%; height: auto; display: block; margin: 0 auto; }
.node { border-top: 1px dashed var(--line); padding: 0.3rem 0 0.6rem; }
.node:target { background: #fff8e1; }
.flag { color: var(--fail); font-weight: 600; }
details summary { cursor: pointer; color: var(--link); }
pre { background: var(--soft); padding: 0.6rem; border-radius: 6px; overflow: auto; max-height: 22rem;
      font-size: 0.8rem; }
footer { color: var(--muted); font-size: 0.85rem; margin-top: 3rem; border-top: 1px solid var(--line);
         padding-top: 0.8rem; }
@media print { nav { display: none; } .graph { max-height: none; } }
"""


def _head(check: CheckReport) -> str:
    verdict = "PASS" if check.passed else "FAIL"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>provgraph audit: {esc(check.project)} — gate {verdict}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>"
    )


def _banner(check: CheckReport, store: Store) -> str:
    from provgraph.rules.formats import gate_line

    verdict = "pass" if check.passed else "fail"
    return f"""<header class="top"><div class="inner">
<h1>Audit report: {esc(check.project)}</h1>
<span class="badge {verdict}" id="gate-badge">GATE {verdict.upper()}</span>
<span class="gate-line">{esc(gate_line(check))}</span>
<span class="sub">checked {esc(check.started.isoformat())} ·
base IRI <code>{esc(check.base_iri)}</code></span>
</div></header>"""


def _nav() -> str:
    links = [
        ("gate", "Gate"),
        ("violations", "Violations"),
        ("accounting", "Accounting"),
        ("statistics", "Statistics"),
        ("claims", "Claims"),
        ("graph", "Graph"),
        ("nodes", "Focus nodes"),
    ]
    items = " ".join(f'<a href="#{k}">{v}</a>' for k, v in links)
    return f'<nav><div class="inner">{items}</div></nav>\n<main>'


def _footer(store: Store) -> str:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    return f"""<footer>Generated by provgraph {esc(__version__)} at {esc(now)} from the store
<code>{esc(store.location)}</code>. This file is self-contained: it loads nothing from the network.
</footer>
</main>
</body>
</html>
"""


# ---------------------------------------------------------------------------
# gate and violations
# ---------------------------------------------------------------------------


def _gate(check: CheckReport) -> str:
    grouped = check.by_clause()
    rows = []
    for clause in CLAUSES:
        results = grouped.get(clause, [])
        in_force = clause in check.clauses_in_force
        counts = {
            k: sum(1 for r in results if r.outcome == k) for k in ("pass", "violated", "error", "skipped")
        }
        nviol = sum(len(r.violations) for r in results)
        if not results:
            outcome, css = "no rules", "none"
        elif all(r.outcome == "skipped" for r in results):
            outcome, css = "not declared", "skipped"
        elif any(r.blocks_gate for r in results):
            outcome, css = "FAIL", "fail"
        elif counts["violated"]:
            outcome, css = "pass (non-blocking findings)", "pass"
        else:
            outcome, css = "pass", "pass"
        rows.append(
            f"<tr><td><b>{esc(clause)}</b></td><td>{'in force' if in_force else 'not declared'}</td>"
            f'<td class="num">{len(results)}</td><td class="num">{counts["pass"]}</td>'
            f'<td class="num">{counts["violated"]}</td><td class="num">{counts["error"]}</td>'
            f'<td class="num">{counts["skipped"]}</td><td class="num">{nviol}</td>'
            f'<td class="outcome-{css}">{esc(outcome)}</td></tr>'
        )
    errors = [r for r in check.results if r.outcome == "error"]
    notes = "".join(
        f'<p class="outcome-error">{esc(r.rule.id)} could not run: {esc(r.error)}</p>' for r in errors
    )
    return f"""<section id="gate">
<h2>Gate summary by clause</h2>
<p>The gate fails when a rule of severity <i>fail</i> finds a violation or when any rule cannot
run (fail closed). Clauses the contract does not declare are not checked.</p>
<div class="scroll"><table id="gate-table">
<thead><tr><th>clause</th><th>contract</th><th class="num">rules</th><th class="num">pass</th>
<th class="num">violated</th><th class="num">could not run</th><th class="num">skipped</th>
<th class="num">violations</th><th>outcome</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table></div>
{notes}
</section>"""


def _violations(check: CheckReport, listed: list[tuple[RuleResult, Violation]], limit: int | None) -> str:
    fired = [r for r in check.results if r.violations]
    if not fired:
        return """<section id="violations"><h2>Violations</h2>
<p class="outcome-pass">No rule found a violation.</p></section>"""
    shown: dict[str, list[Violation]] = defaultdict(list)
    for r, v in listed:
        shown[r.rule.id].append(v)
    blocks = []
    for r in fired:
        rows = []
        for v in shown[r.rule.id]:
            loc = f"<code>{esc(v.location)}</code>" if v.location else "—"
            rows.append(
                f'<tr><td><a href="#{anchor(v.focus)}" class="iri">{esc(check.short(v.focus))}</a></td>'
                f"<td>{loc}</td><td>{esc(v.message)}</td></tr>"
            )
        more = len(r.violations) - len(shown[r.rule.id])
        extra = (
            f'<p class="sub">… and {more} more (run <code>provgraph report --all-violations</code> '
            "to list them).</p>"
            if more
            else ""
        )
        blocks.append(
            f"""<div class="rule {esc(r.rule.severity)}" id="rule-{esc(r.rule.id)}">
<h3><code>{esc(r.rule.id)}</code> — {esc(r.rule.title)}</h3>
<p class="sub">clause {esc(r.rule.clause)} · severity {esc(r.rule.severity)} ·
{len(r.violations)} violation{"s" if len(r.violations) != 1 else ""}</p>
<div class="remedy"><b>Remedy:</b> {esc(r.rule.remedy)}</div>
<div class="scroll"><table><thead>
<tr><th>focus node (lineage)</th><th>source</th><th>message</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table></div>{extra}
</div>"""
        )
    return f"""<section id="violations"><h2>Violations</h2>
<p>Each focus node links to its own section below: what it is, where it was read, and what it came from.</p>
{"".join(blocks)}
</section>"""


# ---------------------------------------------------------------------------
# accounting, statistics, claims
# ---------------------------------------------------------------------------


def _panel(panel_id: str, title: str, body: str | None, absent: str, summary: str = "") -> str:
    if body is None:
        return f"""<div class="panel absent" id="panel-{panel_id}"><h3>{esc(title)}</h3>
<p>Not in the graph: {absent}</p></div>"""
    lead = f'<p class="lead">{esc(summary)}</p>' if summary else ""
    return f"""<div class="panel" id="panel-{panel_id}"><h3>{esc(title)}</h3>{lead}{body}</div>"""


def _accounting(store: Store) -> str:
    outputs = accounting.output_states(store)
    views = accounting.view_positions(store)
    blocks = accounting.blocks(store)
    out_body = out_summary = None
    if outputs is not None:
        out_summary = f"{outputs.nonempty} nonempty of {outputs.planned} planned"
        out_body = plots.output_plot(outputs)
        if outputs.unplanned_records:
            n = outputs.unplanned_records
            out_body += (
                f'<p class="flag">+ {n} record{"s" if n != 1 else ""} for calls that were never planned</p>'
            )
    views_body = views_summary = None
    if views:
        views_body = plots.views_plot(views)
        views_summary = ", ".join(f"{n} {v}" for v, n in views.items())
    blocks_body = blocks_summary = None
    if blocks is not None:
        share = 100.0 * blocks.complete / blocks.total if blocks.total else 0.0
        blocks_summary = (
            f"{share:.1f}% globally complete: {blocks.complete} complete, {blocks.incomplete} incomplete"
        )
        blocks_body = plots.blocks_plot(blocks) + (
            f"<p class='sub'>A (case, finding) block is complete when it is scored (a keyed cell, or a "
            f"label before the statistics are recomputed) under all {blocks.conditions} conditions; "
            f"{blocks.total} blocks in all.</p>"
        )
    panels = [
        _panel(
            "views",
            "(a) View positions",
            views_body,
            "no DICOM view positions (<code>pg:viewPosition</code>). Import DICOM headers or the "
            "MIMIC-CXR metadata table (cohort clause) to count studies by view.",
            views_summary or "",
        ),
        _panel(
            "outputs",
            "(b) Output files",
            out_body,
            "no planned calls (<code>pg:PlannedCall</code>). Declare <code>[plan]</code> in the "
            "contract and import the plan and the call records (output clause).",
            out_summary or "",
        ),
        _panel(
            "blocks",
            "(c) Complete blocks",
            blocks_body,
            "no recomputed cell grid (<code>pg:CellGrid</code>). Import the candidate and reference "
            "labels (annotation clause) and run the statistics (<code>[analysis]</code>, "
            "<code>provgraph stats</code>).",
            blocks_summary or "",
        ),
    ]
    return f"""<section id="accounting"><h2>Accounting</h2>
<p>Counts drawn from the graph, after Figure 2 of the audit: what the cohort holds, what each
planned call left on disk, and how many (case, finding) blocks every condition labelled.</p>
<div class="panels">{"".join(panels)}</div>
</section>"""


def _statistics(store: Store) -> str:
    stats = accounting.statistics(store)
    if stats is None:
        body = (
            '<div class="panel absent" id="panel-statistics"><p>Not in the graph: no reported values '
            "(<code>pg:ReportedValue</code>) or recomputed statistics (<code>pg:Statistic</code>). Import "
            "the reported analysis outputs and recompute them (analysis clause).</p></div>"
        )
        return f'<section id="statistics"><h2>Reported vs recomputed statistics</h2>{body}</section>'
    rows = []
    for r in stats.rows:
        if r.statistic is None:
            verdict, css = "not recomputed", "none"
        elif r.agrees is None:
            verdict, css = "not comparable", "none"
        else:
            verdict, css = ("agrees", "pass") if r.agrees else ("differs", "fail")
        diff = f"{100 * r.difference:+.1f}%" if r.difference is not None else "—"
        rows.append(
            f"<tr><td>{esc(r.label)}</td><td class='num'>{esc(r.reported_value)}</td>"
            f"<td class='num'>{esc(r.reported_n if r.reported_n is not None else '—')}</td>"
            f"<td class='num'>{esc(r.recomputed_shown or '—')}</td>"
            f"<td class='num'>{esc(r.recomputed_n if r.recomputed_n is not None else '—')}</td>"
            f"<td>{esc(r.cohort_rule or '—')}</td><td>{esc(r.test_variant or '—')}</td>"
            f"<td class='num'>{diff}</td><td class='outcome-{css}'>{verdict}</td></tr>"
        )
    plot = plots.statistics_plot(stats) or ""
    alone = (
        f"<p class='sub'>{stats.recomputed_only} recomputed statistic(s) have no reported value "
        "beside them.</p>"
        if stats.recomputed_only
        else ""
    )
    return f"""<section id="statistics"><h2>Reported vs recomputed statistics</h2>
<div class="panel" id="panel-statistics">{plot}
<div class="scroll"><table><thead><tr><th>statistic</th><th class="num">reported</th><th class="num">n</th>
<th class="num">recomputed</th><th class="num">n</th><th>cohort rule</th><th>test variant</th>
<th class="num">difference</th><th>verdict</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>
{alone}</div></section>"""


#: Focus nodes whose full lineage is drawn into the report (the rest get the command to run).
LINEAGE_TRACED = 60


def _lineage_note(store: Store, focus: str, base: str, traced: bool) -> str:
    command = f"<p class='sub'>Lineage: <code>provgraph lineage {esc(focus)}</code></p>"
    if not traced:
        return command
    from provgraph.lineage.show import render_tree
    from provgraph.lineage.trace import trace as trace_lineage

    trace = trace_lineage(store, focus, max_nodes=200)
    tree = render_tree(trace, base)
    return (
        f"<p><b>Lineage</b> (status <span class='status-{esc(trace.status)}'>{esc(trace.status)}</span>):"
        f"</p><pre class='lineage'>{esc(tree)}</pre>{command}"
    )


def _claims(store: Store) -> str:
    rows = accounting.claims(store)
    if rows is None:
        return """<section id="claims"><h2>Claim statuses</h2>
<div class="panel absent" id="panel-claims"><p>Not in the graph: no claims (<code>pg:Claim</code>).
Import the manuscript or released text to trace its numbers (release clause).</p></div></section>"""
    note = (
        "<p class='sub'>Each status is the strongest limitation lineage finds upstream of the "
        "claim: a fail rule withdraws it, a restrict rule restricts it, missing evidence makes "
        "it unverifiable.</p>"
    )
    body = "".join(
        f"<tr><td class='num'>{esc(r.value or '—')}</td><td>{esc(r.name or '—')}</td>"
        f"<td><code>{esc(r.path or '—')}{':' + str(r.line) if r.line is not None else ''}</code></td>"
        f"<td>{esc(r.status)}</td></tr>"
        for r in rows
    )
    return f"""<section id="claims"><h2>Claim statuses</h2>
<div class="panel" id="panel-claims">{plots.claims_plot(rows)}{note}
<div class="scroll"><table><thead><tr><th class="num">value</th><th>statistic</th><th>where</th>
<th>status</th></tr></thead><tbody>{body}</tbody></table></div></div></section>"""


# ---------------------------------------------------------------------------
# the graph and the focus nodes
# ---------------------------------------------------------------------------


def inline_graph_svg(svg: bytes) -> str:
    """Graphviz SVG as an inline element: no XML prolog, DOCTYPE or comments; scales down."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = plots.scope_ids(text, "graph-")
    return text.replace("<svg ", '<svg role="img" aria-label="collapsed provenance graph" ', 1)


def _graph(view) -> str:  # view: View | None
    from provgraph.views import dot

    if view is None:
        return '<section id="graph"><h2>Graph</h2><p class="sub">Not drawn (--no-graph).</p></section>'
    text = dot.to_dot(view)
    try:
        picture = f'<div class="graph" id="graph-picture">{inline_graph_svg(dot.render(text, "svg"))}</div>'
    except MissingExtraError as err:
        picture = f'<div class="panel absent" id="graph-picture"><p>{esc(err)}</p></div>'
    return f"""<section id="graph"><h2>Graph</h2>
<p>Every node of the graph in groups of like nodes, in columns by state (intended → released).
Arrows point from a node to what it came from; red outlines carry the ids of the rules that fired
on members of the group. <code>provgraph viz --expand KIND</code> opens a group.</p>
{picture}
<details><summary>DOT source</summary><pre>{esc(text)}</pre></details>
</section>"""


def _nodes(store: Store, check: CheckReport, listed: list[tuple[RuleResult, Violation]]) -> str:
    from provgraph.views.graph import node_names

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
    names = node_names(store, [o for facts in info.values() for _, o in facts["links"]])
    sections = []
    for number, focus in enumerate(foci):
        facts = info.get(focus, {"types": [], "links": []})
        types = ", ".join(esc(t) for t in facts["types"]) or "not described by any import"
        flags = "".join(
            f'<li><span class="flag">{esc(r.rule.id)}</span>: {esc(v.message)}</li>'
            for r, v in by_focus[focus]
        )
        loc = next((v.location for _, v in by_focus[focus] if v.location), None)
        links = "".join(
            f"<li><code>{esc(p)}</code> → <span class='iri'>{esc(names.get(o, check.short(o)))}</span></li>"
            for p, o in facts["links"]
        )
        came_from = f"<ul>{links}</ul>" if links else "<p class='sub'>no recorded sources</p>"
        lineage_note = _lineage_note(store, focus, check.base_iri, number < LINEAGE_TRACED)
        sections.append(
            f"""<div class="node" id="{anchor(focus)}">
<h3 class="iri">{esc(check.short(focus))}</h3>
<p>{types}{f" · read from <code>{esc(loc)}</code>" if loc else ""} ·
<span class="iri sub">{esc(focus)}</span></p>
<ul>{flags}</ul>
<p><b>Comes from</b> (its own PROV links):</p>{came_from}
{lineage_note}
</div>"""
        )
    return f"""<section id="nodes"><h2>Focus nodes</h2>
{"".join(sections)}
</section>"""


def _node_facts(store: Store, foci: list[str]) -> dict[str, dict]:
    """Class labels and direct PROV links (derived -> source) of each focus node."""
    from provgraph.rdf.sparql import plain_iri
    from provgraph.views.graph import vocabulary

    vocab = vocabulary(store)
    relations = " ".join(f"<{p}>" for p in vocab.relations)
    facts: dict[str, dict] = defaultdict(lambda: {"types": [], "links": []})
    plain = [f for f in foci if plain_iri(f)]
    for i in range(0, len(plain), 300):
        values = " ".join(f"<{f}>" for f in plain[i : i + 300])
        for r in store.select(
            f"""SELECT ?s ?c ?p ?o WHERE {{ VALUES ?s {{ {values} }}
              {{ ?s a ?c }} UNION {{ VALUES ?p {{ {relations} }} ?s ?p ?o FILTER(isIRI(?o)) }} }}"""
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
