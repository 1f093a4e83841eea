"""``provgraph diff A B``: the numbers, names and files that changed between two releases."""

from __future__ import annotations

import json

import click
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import format_option, out
from provgraph.errors import ExitCode


@click.command("diff")
@click.argument("a")
@click.argument("b")
@format_option("json: one document on stdout (numbers, names, files, counts); see the README.")
@pass_app
def command(app: App, a: str, b: str, fmt: str) -> int:
    """List what changed from release A to release B: the numbers their texts write (with
    their claim status from the last recorded check, as `lineage --no-check` gives it, and the
    registry status of the value each matches), the registry names they mention, and their
    files (SHA-256),
    each changed, appeared or disappeared, with file:line on both sides.

    A and B name releases in the store: a released archive (its path, file name or release
    id archive:PATH) or a git tag (its name, REPO@NAME, or tag:NAME). An unknown name lists
    the known releases. Exit 0 whatever changed: a diff is not a gate.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.lineage.releasediff import diff_releases

    found = diff_releases(app.open_store(), a, b)
    if fmt == "json":
        click.echo(json.dumps(found.to_dict(), indent=2))
        return ExitCode.OK
    doc = found.to_dict()
    out.print(f"A = {doc['a']['id']}, B = {doc['b']['id']}", markup=False)
    if doc["texts_not_read"]:
        out.print(
            f"numbers and names: not compared: the texts of {', '.join(doc['texts_not_read'])} were "
            "not read (of a git repository only the release tag's are, [release].version)",
            markup=False,
        )
    for section in ("numbers", "names") if not doc["texts_not_read"] else ():
        table = Table("change", "file", "line in A", "A", "line in B", "B", box=None)
        for c in doc[section]:
            cells = [c["change"], c["member"]]
            for side in (c["a"], c["b"]):
                status = ", ".join(side[k] for k in ("status", "registry") if side and side.get(k))
                status = f" ({status})" if status else ""
                cells += ["", ""] if side is None else [str(side["line"]), f"{side['text']}{status}"]
            table.add_row(*cells)
        _section(section, doc[section], table)
    table = Table("change", "file", "sha256 in A", "sha256 in B", box=None)
    for f in doc["files"]:
        table.add_row(f["change"], f["path"], (f["a"] or "")[:12], (f["b"] or "")[:12])
    _section("files", doc["files"], table)
    return ExitCode.OK


def _section(name: str, rows: list, table: Table) -> None:
    if not rows:
        out.print(f"{name}: no change", markup=False)
        return
    out.print(f"{name}: {len(rows)} changed, appeared or disappeared", markup=False)
    out.print(table)
