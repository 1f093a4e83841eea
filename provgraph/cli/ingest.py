"""``provgraph ingest``: import artifacts into the store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import err, out, progress_bar
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
@pass_app
def command(app: App, paths: tuple[Path, ...], importer_name: str | None, dry_run: bool) -> int:
    """Import PATHS (files or folders; default: the whole bundle) into the store.

    Each source becomes one named graph, swapped in atomically: unchanged bytes are skipped,
    changed bytes replace the previous graph, and an import that fails or is killed leaves
    the previous graph as it was. Bad records are listed (file:line: reason) and skipped; the
    rest still import. Exit status 2 when any record or file was rejected; records imported
    with a note (a DICOM without PatientID) are listed as notes and leave the status alone.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest.run import ingest_paths

    bundle = app.bundle(paths[0] if paths and app.bundle_dir is None else None)
    targets = [p.resolve() for p in paths] or [bundle.root]
    for t in targets:
        bundle.relpath(t)  # error early when a path lies outside the bundle
    if dry_run:
        return _dry_run(bundle, targets, importer_name)

    store = app.open_store(bundle)
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
    with progress_bar(app.verbosity >= 0) as progress:
        results, problems = ingest_paths(store, bundle, targets, importer_name, progress)
    bad = list(problems)
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
        bad += r.problems
    if app.verbosity >= 0:
        out.print(table)
    failed = [r for r in results if r.outcome == "failed"]
    for r in results:
        if r.outcome == "removed":
            err.print(
                f"provgraph: removed {r.rel} ({r.importer}): no longer a source of the bundle", markup=False
            )
    for r in failed:
        err.print(f"provgraph: error: {r.error}", markup=False)
    notes = [p for p in bad if p.kept]
    bad = [p for p in bad if not p.kept]
    for p in notes:
        err.print(f"provgraph: note: {p}", markup=False)
    for p in bad:
        err.print(f"provgraph: rejected: {p}", markup=False)
    store.flush()
    if app.verbosity >= 0:
        counts = {
            o: sum(1 for r in results if r.outcome == o)
            for o in ("imported", "unchanged", "failed", "removed")
        }
        removed = f", {counts['removed']} removed" if counts["removed"] else ""
        out.print(
            f"{counts['imported']} imported, {counts['unchanged']} unchanged, "
            f"{counts['failed']} failed{removed}; {len(bad)} records rejected"
            f"{f', {len(notes)} imported with a note' if notes else ''}; "
            f"store holds {store.quad_count()} quads"
        )
    return ExitCode.USAGE if failed or bad else ExitCode.OK


def _dry_run(bundle: Bundle, targets: list[Path], importer_name: str | None) -> int:
    """Print which importer would read which path; import nothing."""
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.ingest.planner import plan_bundle
    from provgraph.ingest.sources import overlaps

    table = Table("path", "importer", box=None)
    rels = [bundle.relpath(t) for t in targets]
    overrides = {r: importer_name for r in rels} if importer_name else {}
    plan, problems = plan_bundle(bundle, None, overrides)
    for path, importer in plan:
        if any(overlaps(bundle.relpath(path), r) for r in rels):
            table.add_row(bundle.relpath(path), importer.name)
    for p in problems:
        if any(overlaps(p.path, r) for r in rels):
            err.print(f"provgraph: {p}", markup=False)
    out.print(table)
    return ExitCode.OK
