"""``provgraph report``: one self-contained HTML audit report."""

from __future__ import annotations

from pathlib import Path

import click

from provgraph.cli import App, pass_app
from provgraph.cli.common import err, run_gate_shown
from provgraph.errors import ExitCode, ProvgraphError


@click.command("report")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="HTML file to write (default: .provgraph/report.html in the bundle).",
)
@click.option("--all-violations", is_flag=True, help="List every violation (default: first 200 per rule).")
@click.option("--no-graph", is_flag=True, help="Leave out the clauses' lineage pictures.")
@click.option("--no-record", is_flag=True, help="Do not record the check the report runs in the store.")
@click.option(
    "--rerun",
    is_flag=True,
    help="Run the check again even when the one recorded in the store is current.",
)
@click.option(
    "--rules-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Rule folder to use instead of the shipped rules (provgraph/data/rules/).",
)
@click.option(
    "--gate",
    is_flag=True,
    help="Exit as `provgraph check` does: 1 when the gate fails (default: 0 once the report is written).",
)
@click.option(
    "--since",
    metavar="RELEASE",
    help="The previous release to show the changes since (default: for a git tag, the tag before).",
)
@click.option(
    "--release",
    metavar="RELEASE",
    help="The release whose changes to show (default: the one [release] names, NAME-VERSION or vVERSION).",
)
@pass_app
def command(
    app: App,
    output: Path | None,
    all_violations: bool,
    no_graph: bool,
    no_record: bool,
    rerun: bool,
    rules_dir: Path | None,
    gate: bool,
    since: str | None,
    release: str | None,
) -> int:
    """Write the audit report: gate by clause, violations with remedies, accounting plots,
    reported vs recomputed statistics, claim statuses and reasons, a lineage picture per clause.

    The report reads the check `provgraph check` recorded in the store when it is current:
    computed from the imports the store holds now and from the same rules (same text). It says
    "using the check recorded at ..."; otherwise, or with --rerun, it runs the contract's rules
    itself (and records the check, as `provgraph check` does), so it always shows the graph as
    it is now. The file is self-contained HTML with
    inline CSS, SVG and one small script (the filter): it opens offline and can be attached
    to a review.

    Exit status 0 once the report is written, whatever the gate says (the report is how a
    failing gate is read); with --gate, 1 when the gate fails, as `provgraph check`.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.lineage.gate import require_complete_ingest
    from provgraph.report.html import ReportOptions, build_report
    from provgraph.rules import load_rules
    from provgraph.rules.formats import gate_line
    from provgraph.rules.recorded import read_recorded

    store = app.open_store()
    rules = load_rules(rules_dir)
    check = None
    if not rerun:
        require_complete_ingest(store)  # a half-updated store fails closed, recorded check or not
        recorded = read_recorded(store, rules)
        check = recorded.report
        err.print(recorded.reason if check is not None else f"running the check: {recorded.reason}")
    if check is None:
        check = run_gate_shown(store, rules, app.verbosity >= 0, record=not no_record and rules_dir is None)
    if output is None:
        try:
            output = app.bundle().state_dir / "report.html"
        except ProvgraphError:  # no bundle: --store alone
            output = Path.cwd() / "provgraph-report.html"
    page = build_report(
        store,
        check,
        ReportOptions(
            limit=None if all_violations else 200, graph=not no_graph, since=since, release=release
        ),
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, encoding="utf-8")
    err.print(f"wrote {output} ({len(page.encode()) // 1024} KiB); {gate_line(check)}")
    return ExitCode.VIOLATIONS if gate and not check.passed else ExitCode.OK
