"""``provgraph render``: DICOM to model-ready 8-bit PNG, with a rendering record per image."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import click

from provgraph.cli import App, pass_app
from provgraph.cli.common import err, out
from provgraph.errors import ExitCode, UsageError


@click.command("render")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the PNG images; each gets <image>.render.json beside it.",
)
@click.option(
    "--window",
    nargs=2,
    type=float,
    metavar="CENTER WIDTH",
    help="Use this window instead of the header's VOI LUT or window.",
)
@pass_app
def command(app: App, sources: tuple[Path, ...], output: Path, window: tuple[float, float] | None) -> int:
    """Render DICOM SOURCES (files or folders) to 8-bit greyscale PNG in OUTPUT.

    Stored values go through the modality transform (LUT or rescale), then the VOI LUT, the
    header's window (or --window), or the min-max range, are mapped to 0..255, and
    MONOCHROME1 images are inverted so that air is black. A folder's DICOM files (*.dcm,
    *.dicom, or no suffix) keep their relative paths under OUTPUT with the suffix .png.
    A file that cannot be rendered (not DICOM, truncated, no Pixel Data, colour, multi-frame,
    a malformed header value, pixels no installed decoder can read) is named on its own line
    with the reason, and the rest are still rendered; the exit status is then 2 (3 when a
    file met a bug in provgraph, reported the same way with its exception type).
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.capture.renderer import RenderError, render_file
    from provgraph.importers.dicom import must_be_dicom

    jobs: dict[Path, Path] = {}
    for source in sources:
        if source.is_dir():
            files = sorted(
                p
                for p in source.rglob("*")
                if p.is_file()
                and must_be_dicom(p.name)
                and not any(part.startswith(".") for part in p.relative_to(source).parts)
            )
            targets = [(f, output / f.relative_to(source).with_suffix(".png")) for f in files]
        else:
            targets = [(source, output / (source.stem + ".png"))]
        for dicom, image in targets:
            if image in jobs:
                raise UsageError(f"{dicom} and {jobs[image]} would both be rendered to {image}")
            jobs[image] = dicom
    failed = inverted = bugs = 0
    for image, dicom in jobs.items():
        try:
            record = render_file(dicom, image, window=window)
        except RenderError as error:
            failed += 1
            err.print(f"provgraph: error: {error}", markup=False)
            continue
        except Exception as error:  # a bug met on one file: named with its type, the others still rendered
            bugs += 1
            logging.getLogger("provgraph").debug("internal error on %s", dicom, exc_info=True)
            err.print(
                f"provgraph: internal error: {dicom}: {type(error).__name__}: {error} "
                "(this is a bug; run with -v to see the traceback)",
                markup=False,
            )
            if app.verbosity > 0:
                traceback.print_exc()
            continue
        inverted += record["inverted"]
    done = len(jobs) - failed - bugs
    if app.verbosity >= 0:
        out.print(
            f"rendered {done} image{'s' if done != 1 else ''} into {output} "
            f"({inverted} MONOCHROME1 inverted); {failed + bugs} failed",
            markup=False,
        )
    if bugs:
        return ExitCode.INTERNAL
    return ExitCode.USAGE if failed else ExitCode.OK
