"""``provgraph importers``: list the importer plugins."""

from __future__ import annotations

import json

import click
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import format_option, out


@click.command("importers")
@format_option("json: name, version, reads and description of each importer.")
@pass_app
def command(app: App, fmt: str) -> int:
    """List importers (entry-point group provgraph.importers), built-in and third-party."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest import registry

    if fmt == "json":
        doc = {
            "importers": [
                {"name": i.name, "version": i.version, "reads": i.handles, "description": i.description}
                for i in registry.all_importers()
            ]
        }
        click.echo(json.dumps(doc, indent=2))
        return 0
    table = Table("name", "version", "reads", "description", box=None)
    for importer in registry.all_importers():
        table.add_row(importer.name, importer.version, importer.handles, importer.description)
    out.print(table)
    return 0
