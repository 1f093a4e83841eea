"""``provgraph release``: build a deterministic release behind the gate, verify an archive."""

from __future__ import annotations

from pathlib import Path

import click

from provgraph.cli import App, pass_app
from provgraph.cli.common import out
from provgraph.errors import ExitCode


@click.group("release")
def command() -> None:
    """Build the release archive from the [release] whitelist, or verify an archive.

    \b
      provgraph release build            # ingest, check, privacy scan, then dist/NAME-VERSION.zip
      provgraph release verify dist/x.zip
    """


@command.command("build")
@pass_app
def build_cmd(app: App) -> int:
    """Ingest the bundle, run the gate, scan for private data, then write the release.

    The zip is deterministic (sorted entries, fixed timestamps and modes): building twice
    gives identical bytes. It holds a SHA256SUMS of its members; a SHA256SUMS beside it lists
    the archive. Nothing is written when the gate fails or the privacy scan finds anything
    (exit 1).
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.release.builder import build

    bundle = app.bundle()
    store = app.open_store(bundle)
    built, report = build(bundle, store)
    rel = bundle.relpath(built.archive)
    out.print(f"released {rel}: {len(built.members)} files, sha256 {built.sha256}")
    out.print(f"manifest {bundle.relpath(built.manifest)}; gate passed ({report.counts()['pass']} rules)")
    return ExitCode.OK


@command.command("verify")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--manifest",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="SHA256SUMS that lists the archive (default: the one beside it, if any).",
)
@click.option("--no-privacy", is_flag=True, help="Skip the privacy scan of the extracted files.")
@pass_app
def verify_cmd(app: App, archive: Path, manifest: Path | None, no_privacy: bool) -> int:
    """Extract ARCHIVE safely and check it against its SHA256SUMS; exit 1 on any mismatch.

    Unsafe archives (path traversal, absolute paths, links leaving the tree, decompression
    bombs) are refused with exit 2. Limits and privacy patterns come from the bundle's
    [release] section when run inside a bundle, else the defaults apply.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.bundle.layout import find_root
    from provgraph.evidence.archive import Limits
    from provgraph.evidence.privacy import Scanner

    spec = None
    if app.bundle_dir is not None or find_root(Path.cwd()) is not None:
        spec = app.bundle().contract.section("release")
    scanner = None if no_privacy else Scanner((spec or {}).get("privacy"))
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.release.builder import verify

    result = verify(archive, manifest, Limits.from_section(spec), scanner)
    for problem in result.problems:
        out.print(f"  {problem}")
    for finding in result.findings:
        out.print(f"  privacy: {finding}")
    if result.ok:
        out.print(f"{archive.name}: OK ({result.members} files match its SHA256SUMS)", style="bold green")
        return ExitCode.OK
    n = len(result.problems) + len(result.findings)
    out.print(f"{archive.name}: FAILED ({n} problem{'s' if n != 1 else ''})", style="bold red")
    return ExitCode.VIOLATIONS
