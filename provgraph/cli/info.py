"""``provgraph info``: what the store holds."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from provgraph.cli import App, pass_app
from provgraph.cli.common import out
from provgraph.rdf.vocab import short


def store_info(store) -> dict:  # store: Store
    """Quads per current graph, nodes per class (vocabulary excluded), base IRI, and any
    ingest that started and did not finish (the store is then half-updated)."""
    with store.snapshot():
        return _store_info(store)


def _store_info(store) -> dict:
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest.run import describe_unfinished
    from provgraph.store import catalog

    runs = catalog.unfinished_ingests(store)
    unfinished = [
        {
            "scope": list(r.scope),
            "started": r.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "planned": r.planned,
            "still_old": list(r.pending),
            "message": line,
        }
        for r, line in zip(runs, describe_unfinished(runs), strict=True)
    ]
    slots = catalog.slots(store)
    graphs = [{"source": s.key, "graph": s.graph, "quads": store.quad_count(s.graph)} for s in slots]
    data = " ".join(f"<{s.graph}>" for s in slots if s.key != "ontology")
    rows = (
        store.select(
            f"""SELECT ?class (COUNT(DISTINCT ?s) AS ?n) WHERE {{
              VALUES ?g {{ {data} }} GRAPH ?g {{ ?s a ?class }} }}
            GROUP BY ?class ORDER BY DESC(?n) ?class"""
        )
        if data
        else []
    )
    classes = [{"class": r["class"].value, "count": int(r["n"].value)} for r in rows]
    return {
        "store": store.location,
        "quads": store.quad_count(),
        "base_iri": catalog.base_iri(store) or None,
        "graphs": graphs,
        "classes": classes,
        "unfinished_ingests": unfinished,
        "failed_sources": [{"source": k, "error": e} for k, e in catalog.failed_sources(store)],
    }


@click.command("info")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@pass_app
def command(app: App, fmt: str) -> int:
    """Counts by named graph (one per imported source and per checked clause) and by class."""
    store = app.open_store()
    info = store_info(store)
    if fmt == "json":
        click.echo(json.dumps(info, indent=2))
        return 0
    base = info["base_iri"] or ""
    out.print(f"store {info['store']}: {info['quads']} quads in {len(info['graphs'])} graphs")
    for run in info["unfinished_ingests"]:
        out.print(Text(f"half-updated: {run['message']}", style="bold red"))
    for failed in info["failed_sources"]:
        out.print(Text(f"not imported: {failed['error']}", style="bold red"))
    graphs = Table("source", "quads", box=None, title="graphs", title_justify="left")
    for g in info["graphs"]:
        graphs.add_row(g["source"], str(g["quads"]))
    out.print(graphs)
    classes = Table("class", "nodes", box=None, title="classes", title_justify="left")
    for c in info["classes"]:
        classes.add_row(short(c["class"], base), str(c["count"]))
    out.print(classes)
    return 0
