"""``provgraph importers``: list the importer plugins."""

from __future__ import annotations

import click
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import out


@click.command("importers")
@pass_app
def command(app: App) -> int:
    """List importers (entry-point group provgraph.importers), built-in and third-party."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest import registry

    table = Table("name", "version", "reads", "description", box=None)
    for importer in registry.all_importers():
        table.add_row(importer.name, importer.version, importer.handles, importer.description)
    out.print(table)
    return 0
