"""``provgraph lineage``: where a published number comes from, and whether it can stand."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from provgraph.cli import App, pass_app
from provgraph.cli.common import err, out, run_gate_shown
from provgraph.errors import ExitCode

if TYPE_CHECKING:
    from provgraph.store.base import Store


@click.command("lineage")
@click.argument("target")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["tree", "json", "dot"]),
    default="tree",
    show_default=True,
    help="tree (text), json (nodes, edges, violations, status) or dot (Graphviz).",
)
@click.option(
    "--no-check",
    is_flag=True,
    help="Use the violations of the last recorded check instead of running the check first.",
)
@click.option(
    "--max-nodes",
    type=click.IntRange(min=1),
    default=20_000,  # provgraph.lineage.trace.DEFAULT_MAX_NODES (not imported: keeps start-up light)
    show_default=True,
    help="Stop tracing after this many nodes (the status is then at least unverifiable).",
)
@click.option(
    "--at",
    "release",
    metavar="RELEASE",
    help="Only what one release holds: its files and the claims and mentions in them "
    "(a release as `provgraph diff` names it: archive path or name, tag, or id).",
)
@pass_app
def command(app: App, target: str, fmt: str, no_check: bool, max_nodes: int, release: str | None) -> int:
    """Trace TARGET back to its source files and give its claim status.

    TARGET is a number as written (182.29, 26/45, 17%), FILE:LINE (README.md:12, or
    dist/x.zip!/README.md:3 inside an archive), FILE:LINE:COL (the number starting at that
    column), a text (README.md: every number it writes, with its status and reason, one
    line each), a bundle path, a node IRI (absolute or
    relative to the project's base IRI), or text a document writes (a model name). Every node
    shows the violations recorded on it; the status (retained, restricted, unverifiable,
    withdrawn) is the strongest limitation found upstream. Several matches are all listed;
    exit 1 when nothing matches.

    The contract rules are run (and recorded) first, so the violations are current; use
    --no-check to read the last recorded check instead.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.lineage.resolve import resolve
    from provgraph.lineage.show import render_dot, render_tree
    from provgraph.lineage.trace import trace_many
    from provgraph.store.catalog import base_iri

    store = app.open_store()
    if not no_check:
        # lazy: only the command that runs loads its engine (start-up time)
        from provgraph.rules import load_rules

        run_gate_shown(store, load_rules(), app.verbosity >= 0)
    base = base_iri(store)
    if fmt != "dot":
        # lazy: only the command that runs loads its engine (start-up time)
        from provgraph.lineage.claims import is_text

        if is_text(store, target.strip()):
            return _numbers(store, target.strip(), fmt, release)
    matches = resolve(store, target, base)
    label, scope = target, {}
    if release is not None:
        # lazy: only the command that runs loads its engine (start-up time)
        from provgraph.lineage.history import find_release, holds

        at = find_release(store, release)  # an unknown name is an error before any tracing
        matches = [iri for iri in matches if holds(store, at, iri)]
        label, scope = f"{target} at {at.id}", {"release": at.id}
    if not matches:
        shown = label if label.isprintable() else repr(label)  # a tab or newline: still one line
        where = "in the release" if scope else "in the store"
        if fmt == "json":  # scripts parse stdout whatever the outcome
            click.echo(json.dumps({"target": target, **scope, "matches": []}, indent=2))
            err.print(f"{shown}: matches no node, claim, reported value or statistic {where}", markup=False)
            return ExitCode.VIOLATIONS
        click.echo(f"{shown}: matches no node, claim, reported value or statistic {where}")
        return ExitCode.VIOLATIONS
    lineages = trace_many(store, matches, max_nodes)  # one walk: the matches share most of it
    if fmt == "json":
        doc = {"target": target, **scope, "matches": [lin.to_dict() for lin in lineages]}
        click.echo(json.dumps(doc, indent=2))
    elif fmt == "dot":
        click.echo("".join(render_dot(lin, base) for lin in lineages), nl=False)
    else:
        if len(lineages) > 1:
            out.print(f"{label} matches {len(lineages)} nodes:", markup=False)
            for lin in lineages:
                node = lin.nodes[lin.root]
                loc = f" [{node.location}]" if node.location else ""
                out.print(f"  {lin.status:<12} {node.label}{loc}", markup=False, highlight=False)
            out.print("")
        for lin in lineages:
            click.echo(render_tree(lin, base))
    return ExitCode.OK


def _numbers(store: Store, path: str, fmt: str, release: str | None) -> int:
    """Every number of the text at ``path`` with its status and reason (``lineage FILE``)."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.lineage.claims import claim_statuses
    from provgraph.lineage.model import STATUSES
    from provgraph.lineage.show import render_numbers

    rows = claim_statuses(store, path)
    scope: dict[str, str] = {}
    if release is not None:
        # lazy: only the command that runs loads its engine (start-up time)
        from provgraph.lineage.history import find_release, holds

        at = find_release(store, release)
        rows = [r for r in rows if holds(store, at, r.iri)]
        scope = {"release": at.id}
    if fmt == "json":
        counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
        doc = {"target": path, **scope, "counts": counts, "numbers": [r.to_dict() for r in rows]}
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(render_numbers(path, rows), nl=False)
    return ExitCode.OK
