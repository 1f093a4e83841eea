"""``provgraph rules``: list the contract rules."""

from __future__ import annotations

import json

import click
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import format_option, out
from provgraph.rules.rule import CLAUSES


@click.command("rules")
@click.option("--clause", "clauses", multiple=True, type=click.Choice(CLAUSES), help="Only this clause.")
@click.option("--remedy", is_flag=True, help="Show each rule's remedy too.")
@click.option(
    "--why",
    is_flag=True,
    help="Show why each rule has its severity (the audit's repair boundary) and when it applies.",
)
@format_option("json: every field of every rule (the --remedy and --why columns included).")
@pass_app
def command(app: App, clauses: tuple[str, ...], remedy: bool, why: bool, fmt: str) -> int:
    """List the shipped contract rules by clause, with severity and title.

    A `fail` rule blocks the gate; a `restrict` rule marks the claims downstream of its findings
    (and blocks only under `[project] strict = true`); an `info` rule only informs.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.rules import load_rules

    rules = [rule for rule in load_rules() if not clauses or rule.clause in clauses]
    if fmt == "json":
        doc = {
            "rules": [
                {
                    "id": rule.id,
                    "clause": rule.clause,
                    "severity": rule.severity,
                    "title": rule.title,
                    "remedy": rule.remedy,
                    "why": rule.why,
                    "requires": list(rule.requires),
                    "applies": list(rule.applies),
                    "lineage": rule.lineage,
                    "engine_forms": [engine for engine, _ in rule.forms],
                }
                for rule in rules
            ]
        }
        click.echo(json.dumps(doc, indent=2))
        return 0
    table = Table("clause", "rule", "severity", "title", box=None)
    if remedy:
        table.add_column("remedy")
    if why:
        table.add_column("why")
        table.add_column("applies only with")
    for rule in rules:
        row = [rule.clause, rule.id, rule.severity, rule.title]
        row += [rule.remedy] if remedy else []
        forms = "".join(f"\n(a {engine} form: {rule.path.stem}.{engine}.rq)" for engine, _ in rule.forms)
        row += [rule.why + forms, ", ".join(rule.applies) or "-"] if why else []
        table.add_row(*row)
    out.print(table)
    return 0
