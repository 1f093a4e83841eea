"""The evidence sections of the report: accounting (after Figure 2 of the audit), reported
against recomputed statistics; each says what is absent when the graph lacks its evidence.
The claim statuses are :mod:`provgraph.report.claims`.
"""

from __future__ import annotations

import logging

from provgraph.report import accounting, plots
from provgraph.report.markup import esc, panel
from provgraph.store.base import Store

log = logging.getLogger(__name__)


def accounting_section(store: Store) -> str:
    """Figure-2-style panels: view positions, output files, complete blocks."""
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
        panel(
            "views",
            "(a) View positions",
            views_body,
            "no DICOM view positions (<code>pg:viewPosition</code>). Import DICOM headers or the "
            "MIMIC-CXR metadata table (cohort clause) to count studies by view.",
            views_summary or "",
        ),
        panel(
            "outputs",
            "(b) Output files",
            out_body,
            "no planned calls (<code>pg:PlannedCall</code>). Declare <code>[plan]</code> in the "
            "contract and import the plan and the call records (output clause).",
            out_summary or "",
        ),
        panel(
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


def statistics_section(store: Store) -> str:
    """Each reported value beside its recomputed statistic, with the verdict."""
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
