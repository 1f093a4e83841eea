"""``provgraph export``: write the graph in an RDF or PROV format."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from provgraph.cli import App, pass_app
from provgraph.cli.common import err
from provgraph.export import FORMATS


@click.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="turtle",
    show_default=True,
    help="turtle, nt, jsonld: merged graph, with the PROV classes of every node asserted; "
    "nquads, trig: one graph per import, as stored; provn, provjson, provxml: W3C PROV-N / "
    "PROV-JSON / PROV-XML through the prov package (provxml needs the provxml extra).",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default: stdout)."
)
@click.option("--with-ontology", is_flag=True, help="Include the provgraph vocabulary graph.")
@pass_app
def command(app: App, fmt: str, output: Path | None, with_ontology: bool) -> int:
    """Export the imported graph (the store's catalog is never exported).

    No raw patient identifier is ever in the graph, so exports carry keyed hashes only.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.export import export
    from provgraph.store.catalog import base_iri

    store = app.open_store()
    base = base_iri(store)
    if output is None:
        n = export(store, fmt, sys.stdout.buffer, with_ontology, base)
        sys.stdout.buffer.flush()
    else:
        # written beside the target and renamed into place: a failed export (a server that dies
        # mid-answer) leaves the old file, or none, never an empty or partial one
        fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".part", dir=output.parent or None)
        try:
            with os.fdopen(fd, "wb") as fh:
                n = export(store, fmt, fh, with_ontology, base)
            os.replace(tmp, output)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        err.print(f"wrote {n} {'quads' if fmt in ('nquads', 'trig') else 'triples'} to {output}")
    return 0
