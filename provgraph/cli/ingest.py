"""``provgraph ingest``: import artifacts into the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import REJECTIONS_SHOWN, capped_rejections, err, format_option, out, progress_bar
from provgraph.errors import ExitCode

if TYPE_CHECKING:
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.bundle.layout import Bundle


@click.command("ingest")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--importer",
    "importer_name",
    metavar="NAME",
    help="Read every PATH with this importer instead of detecting one (see `provgraph importers`).",
)
@click.option("--dry-run", is_flag=True, help="Show which importer would read which path; import nothing.")
@format_option("json: one document on stdout (sources, every rejection, counts); see the README.")
@click.option(
    "--max-rejections",
    type=click.IntRange(min=0),
    default=REJECTIONS_SHOWN,
    show_default=True,
    metavar="N",
    help="Rejection lines printed per file; the rest are counted by reason.",
)
@click.option("--all-rejections", is_flag=True, help="Print every rejected record (no cap).")
@pass_app
def command(
    app: App,
    paths: tuple[Path, ...],
    importer_name: str | None,
    dry_run: bool,
    fmt: str,
    max_rejections: int,
    all_rejections: bool,
) -> int:
    """Import PATHS (files or folders; default: the whole bundle) into the store.

    Each source becomes one named graph, swapped in atomically: unchanged bytes are skipped,
    changed bytes replace the previous graph, and an import that fails or is killed leaves
    the previous graph as it was. Bad records are listed (file:line: reason) and skipped; the
    rest still import. Exit status 2 when any record or file was rejected; records imported
    with a note (a DICOM image without PatientID) are listed as notes and leave the status alone.

    Rejections go to stderr, the first --max-rejections per file and then one count per
    reason (--all-rejections prints them all; --format json carries every one).
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest.run import ingest_paths

    bundle = app.bundle(paths[0] if paths and app.bundle_dir is None else None)
    targets = [p.resolve() for p in paths] or [bundle.root]
    for t in targets:
        bundle.relpath(t)  # error early when a path lies outside the bundle
    if dry_run:
        return _dry_run(bundle, targets, importer_name, fmt)

    store = app.open_store(bundle)
    with progress_bar(app.verbosity >= 0 and fmt == "table") as progress:
        results, problems = ingest_paths(store, bundle, targets, importer_name, progress)
    bad = list(problems)
    for r in results:
        bad += r.problems
    notes = [p for p in bad if p.kept]  # imported all the same (ctx.note)
    bad = [p for p in bad if not p.kept]
    if app.verbosity >= 0 and fmt == "table":
        out.print(_table(store, results))
    failed = [r for r in results if r.outcome == "failed"]
    for r in results:
        if r.outcome == "removed" and fmt == "table":
            err.print(
                f"provgraph: removed {r.rel} ({r.importer}): no longer a source of the bundle", markup=False
            )
    for r in failed:
        err.print(f"provgraph: error: {r.error}", markup=False)
    if fmt == "table":
        for line in capped_rejections(notes, None if all_rejections else max_rejections, "note"):
            err.print(line, markup=False)
        for line in capped_rejections(bad, None if all_rejections else max_rejections):
            err.print(line, markup=False)
    store.flush()
    counts = {
        o: sum(1 for r in results if r.outcome == o) for o in ("imported", "unchanged", "failed", "removed")
    }
    if fmt == "json":
        click.echo(json.dumps(_as_json(store, results, bad, notes, counts), indent=2))
    elif app.verbosity >= 0:
        removed = f", {counts['removed']} removed" if counts["removed"] else ""
        out.print(
            f"{counts['imported']} imported, {counts['unchanged']} unchanged, "
            f"{counts['failed']} failed{removed}; {len(bad)} records rejected"
            f"{f', {len(notes)} imported with a note' if notes else ''}; "
            f"store holds {store.quad_count()} quads"
        )
    return ExitCode.USAGE if failed or bad else ExitCode.OK


def _table(store, results: list) -> Table:  # store: Store, results: list[ImportResult]
    table = Table(
        "source",
        "importer",
        "outcome",
        "records",
        "triples",
        "problems",
        "seconds",
        box=None,
        title=f"ingest into {store.location}",
        title_justify="left",
    )
    for r in results:
        table.add_row(
            r.rel,
            r.importer,
            r.outcome,
            str(r.records) if r.outcome == "imported" else "",
            str(r.triples) if r.outcome == "imported" else "",
            str(len(r.problems)) if r.problems else "",
            f"{r.seconds:.2f}",
        )
    return table


def _as_json(store, results: list, bad: list, notes: list, counts: dict[str, int]) -> dict:
    """The documented ``ingest --format json`` document."""
    return {
        "store": store.location,
        "sources": [
            {
                "source": r.rel,
                "importer": r.importer,
                "outcome": r.outcome,
                "records": r.records,
                "triples": r.triples,
                "rejected": sum(1 for p in r.problems if not p.kept),
                "notes": sum(1 for p in r.problems if p.kept),
                "seconds": round(r.seconds, 4),
                "error": r.error,
            }
            for r in results
        ],
        "rejections": [{"path": p.path, "line": p.line, "reason": p.reason} for p in bad],
        "notes": [{"path": p.path, "line": p.line, "reason": p.reason} for p in notes],
        "counts": {**counts, "rejected": len(bad), "notes": len(notes)},
        "quads": store.quad_count(),
    }


def _dry_run(bundle: Bundle, targets: list[Path], importer_name: str | None, fmt: str) -> int:
    """Print which importer would read which path; import nothing."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest.planner import plan_bundle
    from provgraph.ingest.sources import overlaps

    table = Table("path", "importer", box=None)
    rels = [bundle.relpath(t) for t in targets]
    overrides = {r: importer_name for r in rels} if importer_name else {}
    plan, problems = plan_bundle(bundle, None, overrides)
    planned = [(bundle.relpath(path), importer.name) for path, importer in plan]
    planned = [(rel, name) for rel, name in planned if any(overlaps(rel, r) for r in rels)]
    unread = [p for p in problems if any(overlaps(p.path, r) for r in rels)]
    if fmt == "json":
        doc = {
            "plan": [{"path": rel, "importer": name} for rel, name in planned],
            "problems": [{"path": p.path, "line": p.line, "reason": p.reason} for p in unread],
        }
        click.echo(json.dumps(doc, indent=2))
        return ExitCode.OK
    for rel, name in planned:
        table.add_row(rel, name)
    for p in unread:
        err.print(f"provgraph: {p}", markup=False)
    out.print(table)
    return ExitCode.OK
