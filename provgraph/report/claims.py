"""The report's claims table: every number of every declared text, grouped by file, with the
status lineage gives it and the reason that decides it.

Each file is one collapsible section (open when one of its numbers is withdrawn) with its
first :data:`FIRST_SHOWN` numbers and a "show all" control for the rest, as the violations
are shown. The statuses are computed for all texts at once
(:func:`provgraph.lineage.claims.claim_statuses`), not one lineage per number.
"""

from __future__ import annotations

from itertools import groupby

from provgraph.lineage.claims import NumberStatus
from provgraph.lineage.model import STATUSES
from provgraph.report import accounting, plots
from provgraph.report.markup import esc
from provgraph.store.base import Store

#: Numbers of a file shown before its "show all" control.
FIRST_SHOWN = 25

_HEAD = (
    '<thead><tr><th class="num">number</th><th>where</th><th>row / column</th>'
    "<th>status</th><th>reason</th></tr></thead>"
)


def claims_section(store: Store) -> str:
    """Every number of the declared texts, by file, with its status and reason."""
    rows = accounting.claims(store)
    if rows is None:
        return """<section id="claims"><h2>Claim statuses</h2>
<div class="panel absent" id="panel-claims"><p>Not in the graph: no claims (<code>pg:Claim</code>).
Import the manuscript or released text to trace its numbers (release clause).</p></div></section>"""
    note = (
        f"<p class='sub'>{len(rows)} numbers in the declared texts. Each status is the strongest "
        "limitation lineage finds upstream of the number: a fail rule withdraws it, a restrict "
        "rule restricts it, missing evidence makes it unverifiable; a retained number names the "
        "recomputation it agrees with.</p>"
    )
    files = "".join(_file(path, list(group)) for path, group in groupby(rows, key=lambda r: r.path or "—"))
    return f"""<section id="claims"><h2>Claim statuses</h2>
<div class="panel" id="panel-claims">{plots.claims_plot(rows)}{note}
<div id="claims-table">{files}</div></div></section>"""


def _file(path: str, rows: list[NumberStatus]) -> str:
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    first, rest = rows[:FIRST_SHOWN], rows[FIRST_SHOWN:]
    more = ""
    if rest:
        more = (
            f'<details class="more"><summary>show all ({len(rest)} more)</summary>'
            f'<div class="scroll"><table class="claims">{_HEAD}<tbody>{_rows(rest)}</tbody></table></div>'
            "</details>"
        )
    opened = " open" if counts["withdrawn"] else ""
    table = f'<div class="scroll"><table class="claims">{_HEAD}<tbody>{_rows(first)}</tbody></table></div>'
    return f"""<details class="claims-file"{opened} data-path="{esc(path)}"><summary><code>{esc(path)}</code>
— {len(rows)} number{"s" if len(rows) != 1 else ""}: {esc(summary)}</summary>
{table}{more}</details>"""


def _rows(rows: list[NumberStatus]) -> str:
    out = []
    for r in rows:
        cell = " / ".join(x for x in (r.row, r.column_label) if x) or r.statistic or "—"
        out.append(
            f"<tr><td class='num'>{esc(r.text)}</td><td><code>{esc(r.location)}</code></td>"
            f"<td>{esc(cell)}</td><td class='status-{esc(r.status)}'>{esc(r.status)}</td>"
            f"<td>{esc(r.reason or '—')}</td></tr>"
        )
    return "".join(out)
