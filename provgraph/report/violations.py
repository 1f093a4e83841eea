"""The report's violations, built to be navigated when there are thousands: one collapsible
section per clause (``<details>``, open when the clause fails the gate) with a small lineage
picture of what its violations touch, then each rule with its first :data:`FIRST_SHOWN`
violations and a "show all" control for the rest, and a filter box (inline script, no
network) over the text, rule and clause of every violation. Without scripts the page still
reads: the sections and "show all" are plain HTML, only the filter box stays hidden.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from importlib import resources

from provgraph.report.markup import anchor, esc
from provgraph.rules.rule import CLAUSES
from provgraph.rules.runner import CheckReport, RuleResult, Violation

#: Violations of a rule shown before its "show all" control.
FIRST_SHOWN = 10

Picture = Callable[[str, list[list[str]]], str]  # (clause, focus nodes of each rule) -> HTML


@functools.cache
def script() -> str:
    """The filter's script (``provgraph/report/filter.js``), inlined into the page."""
    return resources.files("provgraph.report").joinpath("filter.js").read_text(encoding="utf-8")


def violations_section(
    check: CheckReport,
    listed: list[tuple[RuleResult, Violation]],
    names: dict[str, str],
    picture: Picture | None,
) -> str:
    """Clause sections of the listed violations (``names``: readable node names)."""
    fired = [r for r in check.results if r.violations]
    if not fired:
        return """<section id="violations"><h2>Violations</h2>
<p class="outcome-pass">No rule found a violation.</p></section>"""
    shown: dict[str, list[Violation]] = defaultdict(list)
    for r, v in listed:
        shown[r.rule.id].append(v)
    by_clause: dict[str, list[RuleResult]] = defaultdict(list)
    for r in fired:
        by_clause[r.rule.clause].append(r)
    clauses = [c for c in CLAUSES if c in by_clause] + sorted(set(by_clause) - set(CLAUSES))
    total = sum(len(r.violations) for r in fired)
    sections = []
    for clause in clauses:
        results = by_clause[clause]
        foci = [[v.focus for v in shown[r.rule.id]] for r in results]
        art = picture(clause, foci) if picture else ""
        rules = "".join(_rule(r, shown[r.rule.id], names) for r in results)
        sections.append(_clause(clause, results, art + rules))
    return f"""<section id="violations"><h2>Violations</h2>
<p>{total} violation{"s" if total != 1 else ""} by clause; a failing clause is open. Each focus node
links to its own section below: what it is, where it was read, and what it came from.</p>
<div class="filter" id="filter-box" hidden><label for="filter">Filter violations</label>
<input type="search" id="filter" placeholder="words of a message, file, rule id or clause"
autocomplete="off"> <span class="sub" id="filter-count" aria-live="polite"></span></div>
{"".join(sections)}
</section>"""


def _clause(clause: str, results: list[RuleResult], body: str) -> str:
    blocking = any(r.blocks_gate for r in results)
    n = sum(len(r.violations) for r in results)
    verdict = "FAIL" if blocking else "non-blocking findings"
    css = "fail" if blocking else "pass"
    return f"""<details class="clause" id="clause-{esc(clause)}" data-clause="{esc(clause)}"
data-open="{int(blocking)}"{" open" if blocking else ""}>
<summary><h3>{esc(clause)}</h3> <span class="outcome-{css}">{verdict}</span>
<span class="sub">· {len(results)} rule{"s" if len(results) != 1 else ""} violated ·
{n} violation{"s" if n != 1 else ""}</span></summary>
{body}
</details>"""


def _rows(violations: list[Violation], names: dict[str, str]) -> str:
    rows = []
    for v in violations:
        loc = f"<code>{esc(v.location)}</code>" if v.location else "—"
        rows.append(
            f'<tr class="v"><td><a href="#{anchor(v.focus)}" class="iri">{esc(names.get(v.focus, v.focus))}'
            f"</a></td><td>{loc}</td><td>{esc(v.message)}</td></tr>"
        )
    return "".join(rows)


_COLUMNS = '<colgroup><col class="c-focus"><col class="c-source"><col class="c-message"></colgroup>'


def _rule(r: RuleResult, shown: list[Violation], names: dict[str, str]) -> str:
    first, rest = shown[:FIRST_SHOWN], shown[FIRST_SHOWN:]
    more = ""
    if rest:
        more = (
            f'<details class="more"><summary>show all ({len(rest)} more)</summary>'
            f'<table class="violations">{_COLUMNS}<tbody>{_rows(rest, names)}</tbody></table></details>'
        )
    left = len(r.violations) - len(shown)
    if left:
        more += (
            f'<p class="sub">… and {left} more not in this page (run <code>provgraph report '
            "--all-violations</code> to list them).</p>"
        )
    n = len(r.violations)
    rid, severity = esc(r.rule.id), esc(r.rule.severity)
    return f"""<div class="rule {severity}" id="rule-{rid}" data-rule="{rid}">
<h4><code>{rid}</code> — {esc(r.rule.title)}</h4>
<p class="sub">clause {esc(r.rule.clause)} · severity {severity} · {n} violation{"s" if n != 1 else ""}</p>
<div class="remedy"><b>Remedy:</b> {esc(r.rule.remedy)}</div>
<table class="violations">{_COLUMNS}<thead>
<tr><th>focus node (lineage)</th><th>source</th><th>message</th></tr></thead>
<tbody>{_rows(first, names)}</tbody></table>{more}
</div>"""
