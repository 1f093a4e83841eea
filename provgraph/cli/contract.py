"""``provgraph contract``: the reference of every contract section and key, from the schemas."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from provgraph.cli import App, pass_app
from provgraph.cli.common import out


@click.command("contract")
@click.argument("section_name", metavar="[SECTION]", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json"]),
    default="table",
    show_default=True,
    help="table for people; markdown: the docs page (docs/contract.md is this output); json for scripts.",
)
@pass_app
def command(app: App, section_name: str | None, fmt: str) -> int:
    """Document the contract (provgraph.toml): its sections, or every key of one.

    `provgraph contract` lists the sections with the clauses they put in force;
    `provgraph contract SECTION` prints every key of SECTION with its type, default, allowed
    values and description.

    \b
      provgraph contract                     # one line per section and the clauses it puts in force
      provgraph contract plan                # every key of [plan]: type, default, allowed, description
      provgraph contract --format markdown   # the whole reference (docs/contract.md)

    Everything shown is read from the JSON Schemas that validate the contract, so it is what
    `provgraph check` accepts; unknown sections and keys are errors.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.bundle.contract import docs

    everything = docs.sections()
    chosen = everything
    if section_name is not None:
        found = docs.section(section_name.strip("[]"))
        if found is None:
            names = ", ".join(s.name for s in everything)
            raise click.BadParameter(f"no section {section_name!r} (sections: {names})", param_hint="SECTION")
        chosen = [found]
    if fmt == "json":
        click.echo(json.dumps({"sections": [s.as_json() for s in chosen]}, indent=2))
    elif fmt == "markdown":
        click.echo(docs.markdown(None if section_name is None else chosen), nl=False)
    elif section_name is None:
        _print_sections(everything)
    else:
        _print_keys(chosen[0])
    return 0


def _print_sections(sections) -> None:  # list[docs.Section]; docs is imported lazily
    table = Table("section", "puts in force", "declares", box=None)
    for s in sections:
        name = f"[{s.name}]" + (" (required)" if s.required else "")
        table.add_row(*map(Text, (name, ", ".join(s.clauses) or "-", s.description)))
    out.print(table)
    out.print("every key of one section: provgraph contract SECTION", markup=False)


def _print_keys(section) -> None:  # docs.Section
    from provgraph.bundle.contract.docs import toml_value  # lazy, as in the command

    clauses = ", ".join(section.clauses)
    out.print(f"[{section.name}]: {section.description}", markup=False)
    out.print(f"puts in force: {clauses} clause" if clauses else "puts no clause in force", markup=False)
    table = Table("key", "type", "default", "allowed", "description", box=None)
    for k in section.keys:
        default = toml_value(k.default) if k.has_default else ("required" if k.required else "")
        table.add_row(*map(Text, (k.path, k.type, default, k.allowed, k.description)))
    out.print(table)
