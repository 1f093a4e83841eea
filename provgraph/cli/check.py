"""``provgraph check``: run the contract rules as a fail-closed release gate."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from provgraph.cli import App, pass_app
from provgraph.cli.common import REJECTIONS_SHOWN, capped_rejections, err, out, progress_bar, run_gate_shown
from provgraph.errors import ExitCode, ProvgraphError, UsageError
from provgraph.rules.formats import FORMATS
from provgraph.rules.rule import CLAUSES

_STYLE = {
    "pass": "green",
    "violated": "bold red",
    "error": "bold magenta",
    "skipped": "dim",
    "not-applicable": "dim",
}
_SHOWN = 20


@click.command("check")
@click.option(
    "--clause",
    "clauses",
    multiple=True,
    type=click.Choice(CLAUSES),
    help="Only this clause (repeatable). Named clauses run even when the contract does not declare them.",
)
@click.option("--rule", "rule_ids", multiple=True, metavar="ID", help="Only this rule (repeatable).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Report format: printed to stdout, or written to --output.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the --format report to this file (the table still prints).",
)
@click.option(
    "--rules-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Rule folder to use instead of the shipped rules (provgraph/data/rules/) (for rule authors).",
)
@click.option(
    "--all-violations", is_flag=True, help=f"List every violation (default: first {_SHOWN} per rule)."
)
@click.option("--no-record", is_flag=True, help="Do not record this check in the store.")
@click.option(
    "--ingest",
    "ingest_first",
    is_flag=True,
    help="Import the whole bundle first (as `provgraph ingest`): one command gates a fresh "
    "checkout (CI, the pre-commit hook). Rejected records then exit 2 even when the gate passes.",
)
@click.option(
    "--sarif-base",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder SARIF uris are relative to (%SRCROOT%; default: the git top-level holding the "
    "bundle, else the bundle root). GitHub reads them from the repository root.",
)
@click.option(
    "--sarif-max-results",
    type=click.IntRange(1, 25_000),
    default=5000,
    show_default=True,
    metavar="N",
    help="Results in the SARIF at most (GitHub shows 5,000 per run, rejects more than 25,000): "
    "fail rules first, shared evenly between rules.",
)
@pass_app
def command(
    app: App,
    clauses: tuple[str, ...],
    rule_ids: tuple[str, ...],
    fmt: str,
    output: Path | None,
    rules_dir: Path | None,
    all_violations: bool,
    no_record: bool,
    ingest_first: bool,
    sarif_base: Path | None,
    sarif_max_results: int,
) -> int:
    """Run the contract rules and exit 1 when the gate fails.

    The gate fails when a rule of severity `fail` finds a violation, or when any rule cannot
    run (bad query, or the evidence it needs is missing from the graph): fail closed.
    Rules of `restrict` severity mark downstream claims as restricted; `info` rules only
    inform. Clauses the contract does not declare are skipped.

    Each full-clause run is recorded in the store as a pg:Check activity whose violations
    point at their focus nodes (used by lineage and the report).

    Rules and derived views run side by side, one thread per core (up to 4);
    PROVGRAPH_WORKERS=1 runs them one at a time.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.rules import load_rules
    from provgraph.rules.formats import gate_line, render
    from provgraph.rules.runner import select_rules

    store = app.open_store()
    rejected = _ingest(app, store) if ingest_first else False
    rules = select_rules(load_rules(rules_dir), clauses, rule_ids)
    record = not no_record and not rule_ids and rules_dir is None
    shown = app.verbosity >= 0
    report = run_gate_shown(store, rules, shown, explicit=bool(clauses or rule_ids), record=record)
    machine = fmt != "text"
    place = sarif_place(app, sarif_base, sarif_max_results) if fmt == "sarif" else None
    if output is not None:
        output.write_text(render(report, fmt, place), encoding="utf-8")
    if machine and output is None:
        click.echo(render(report, fmt, place), nl=False)
    elif app.verbosity >= 0:
        _print_table(report, None if all_violations else _SHOWN)
    elif any(r.outcome == "error" for r in report.results):
        _print_errors(report)
    if output is not None or not machine:
        style = "bold green" if report.passed else "bold red"
        out.print(Text(gate_line(report), style=style))
    if not report.passed:
        return ExitCode.VIOLATIONS
    return ExitCode.USAGE if rejected else ExitCode.OK


def _ingest(app: App, store) -> bool:  # store: Store
    """``--ingest``: import the bundle; True when a file failed or a record was rejected."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest.run import ingest_paths

    bundle = app.bundle()
    with progress_bar(app.verbosity >= 0) as progress:
        results, problems = ingest_paths(store, bundle, [bundle.root], None, progress)
    store.flush()
    bad = [*problems, *(p for r in results for p in r.problems)]
    failed = [r for r in results if r.outcome == "failed"]
    for r in failed:
        err.print(f"provgraph: error: {r.error}", markup=False)
    for line in capped_rejections(bad, REJECTIONS_SHOWN):
        err.print(line, markup=False)
    return bool(failed or bad)


def _print_table(report, limit: int | None) -> None:  # report: CheckReport
    out.print(Text(f"provgraph check: {report.project}", style="bold"))
    for clause, results in report.by_clause().items():
        in_force = clause in report.clauses_in_force
        table = Table(
            title=f"{clause}{'' if in_force else ' (not declared in the contract)'}",
            title_justify="left",
            title_style="bold",
            box=None,
            pad_edge=False,
        )
        table.add_column("outcome", no_wrap=True)
        table.add_column("severity", no_wrap=True)
        table.add_column("rule", no_wrap=True)
        table.add_column("n", justify="right")
        table.add_column("title")
        for r in results:
            table.add_row(
                Text(r.outcome, style=_STYLE[r.outcome]),
                r.rule.severity,
                r.rule.id,
                str(len(r.violations)),
                r.rule.title,
            )
        out.print(table)
        for r in results:
            if r.outcome == "error":
                out.print(Text(f"  {r.rule.id} could not run: {r.error}", style="magenta"))
            shown = r.violations if limit is None else r.violations[:limit]
            for v in shown:
                loc = f" [{v.location}]" if v.location else ""
                out.print(Text(f"  {r.rule.id}: {report.short(v.focus)}{loc}: {v.message}"))
            if len(shown) < len(r.violations):
                out.print(
                    Text(
                        f"  ... and {len(r.violations) - len(shown)} more (--all-violations to list them)",
                        style="dim",
                    )
                )
            if r.violations:
                out.print(Text(f"  remedy: {r.rule.remedy}", style="dim"))


def _print_errors(report) -> None:  # report: CheckReport
    """``-q``: only the rules that could not run (the verdict line follows)."""
    for r in report.results:
        if r.outcome == "error":
            err.print(Text(f"provgraph: error: {r.rule.id} could not run: {r.error}"))


def sarif_place(app: App, base: Path | None, max_results: int = 5000):  # -> SarifPlace
    """Where the bundle lies below the SARIF base, and the contract line of each clause."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.bundle.contract import CONTRACT_FILE
    from provgraph.bundle.contract.sections import section_modules
    from provgraph.rules.sarif import SarifPlace, clause_lines, table_lines

    try:
        bundle = app.bundle()
    except ProvgraphError:  # --store alone: paths stay bundle-relative
        return SarifPlace(max_results=max_results)
    root = bundle.root.resolve()
    top = base.resolve() if base is not None else _git_top(root) or root
    if not root.is_relative_to(top):
        raise UsageError(f"--sarif-base {base}: the bundle {root} is not inside it")
    prefix = root.relative_to(top).as_posix()
    contract = bundle.root / CONTRACT_FILE
    try:
        text = contract.read_text(encoding="utf-8", errors="replace")
    except OSError:  # a store checked after the contract file moved: no clause lines
        text = ""
    sections = {name: tuple(m.CLAUSES) for name, m in section_modules().items()}
    by_clause: dict[str, tuple[str, ...]] = {}
    for name, clauses in sections.items():
        for clause in clauses:
            by_clause[clause] = (*by_clause.get(clause, ()), name)
    return SarifPlace(
        "" if prefix == "." else prefix,
        CONTRACT_FILE,
        clause_lines(text, sections),
        table_lines(text),
        by_clause,
        max_results,
    )


def _git_top(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():  # a folder, or a file in a worktree or submodule
            return folder
    return None
