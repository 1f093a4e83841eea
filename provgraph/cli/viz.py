"""``provgraph viz``: draw the graph (or the lineage of one number) with graphviz."""

from __future__ import annotations

import re
from pathlib import Path

import click

from provgraph.cli import App, pass_app
from provgraph.cli.common import err
from provgraph.errors import ExitCode, ProvgraphError

FORMATS = ("dot", "svg", "png")


def output_stem(app: App, output: Path | None, default: str) -> Path:
    """``output`` without a picture suffix; by default a file in the bundle's .provgraph/views/."""
    if output is not None:
        return output.with_suffix("") if output.suffix.lower() in {f".{f}" for f in FORMATS} else output
    try:
        folder = app.bundle().state_dir / "views"
    except ProvgraphError:  # no bundle: --store alone
        folder = Path.cwd()
    return folder / default


@click.command("viz")
@click.argument("target", required=False)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write: a path stem, suffixes are added per format "
    "(default: .provgraph/views/graph in the bundle).",
)
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(FORMATS),
    help="Formats to write (repeatable; default: dot, and svg and png when graphviz is installed).",
)
@click.option(
    "--expand",
    multiple=True,
    metavar="KIND",
    help="Draw every node of this kind on its own (class name or label, e.g. PlannedCall or "
    "'call record'; 'all' for everything). Repeatable.",
)
@click.option(
    "--max-nodes",
    default=500,
    show_default=True,
    help="Refuse to expand groups into more boxes than this.",
)
@click.option("--no-legend", is_flag=True, help="Leave out the legend.")
@pass_app
def command(
    app: App,
    target: str | None,
    output: Path | None,
    formats: tuple[str, ...],
    expand: tuple[str, ...],
    max_nodes: int,
    no_legend: bool,
) -> int:
    """Draw the whole graph, collapsed into counted groups, or the lineage of TARGET.

    \b
    The whole-graph view has one column per state of a result (intended, executed, observed,
    analyzed, reported, released); like nodes collapse into counted groups ("300 planned
    calls") so it stays readable at any size. PROV styling: entity oval, activity box, agent
    house; nodes with violations (from the last `provgraph check`) are outlined in red and
    name the rules. TARGET (a node IRI, a number as written, or FILE:LINE) draws the lineage
    of one number instead; a TARGET that matches several nodes (a number written in several
    places) lists them and draws all their lineages in one picture, each match outlined.

    The DOT file is always written; SVG and PNG need graphviz's `dot` program. Without it
    viz says how to install it and exits 0, or 2 when --format asked for svg or png.
    """
    # Imported here: command modules load only click and rich at the top (CLI start-up time).
    from provgraph.views import dot
    from provgraph.views.nodes import lineage_view
    from provgraph.views.whole import whole_graph

    store = app.open_store()
    if target:
        view = lineage_view(store, target)
        stem = output_stem(app, output, "lineage-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", target)[-60:] or "x"))
    else:
        view = whole_graph(store, expand=expand, max_nodes=max_nodes)
        stem = output_stem(app, output, "graph")
    wanted = list(dict.fromkeys(formats)) or list(FORMATS)
    stem.parent.mkdir(parents=True, exist_ok=True)
    text = dot.to_dot(view, legend=not no_legend)
    dot_path = stem.with_suffix(".dot")
    dot_path.write_text(text, encoding="utf-8")
    written = [dot_path]  # always: it is what the pictures are drawn from
    missing = False
    for fmt in (f for f in wanted if f != "dot"):
        if dot.dot_program() is None:
            missing = True
            break
        path = stem.with_suffix(f".{fmt}")
        path.write_bytes(dot.render(text, fmt))
        written.append(path)
    summary = f"{len(view.boxes)} boxes, {len(view.arrows)} arrows, {view.violation_count} violations marked"
    for path in written:
        err.print(f"wrote {path}")
    if view.matches:
        err.print(f"{target} matches {len(view.matches)} nodes, all drawn:", markup=False)
        for status, label in view.matches:
            err.print(f"  {status:<12} {label}", markup=False, highlight=False)
    err.print(f"{view.title}: {summary}")
    for note in view.notes:
        err.print(f"note: {note}")
    if missing:
        err.print(f"provgraph: {dot.INSTALL_HINT}", style="yellow")
        return ExitCode.USAGE if formats else ExitCode.OK
    return ExitCode.OK
