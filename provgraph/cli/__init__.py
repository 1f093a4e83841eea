"""The ``provgraph`` command line: a click group with one thin module per command.

Exit codes: 0 ok, 1 the gate failed (a fail rule fired or a rule could not run), 2 usage or
input error, 3 internal error (a bug), 130 interrupted (Ctrl-C). User errors are one line each
on stderr.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import click

from provgraph import __version__
from provgraph.errors import ExitCode, ProvgraphError


@dataclass
class App:
    """Options shared by every command, resolved lazily."""

    bundle_dir: Path | None = None
    store_location: str | None = None
    verbosity: int = 0
    _stores: list = field(default_factory=list)

    def bundle(self, start: Path | None = None):  # -> Bundle
        # lazy: only the command that runs loads its engine (start-up time)
        from provgraph.bundle.layout import Bundle

        if self.bundle_dir is not None:
            return Bundle.open(self.bundle_dir)
        return Bundle.find(start or Path.cwd())

    def store_path(self, bundle=None) -> str:
        if self.store_location:
            return self.store_location
        bundle = bundle or self.bundle()
        return str(bundle.default_store)

    def open_store(self, bundle=None):  # -> Store
        # lazy: only the command that runs loads its engine (start-up time)
        from provgraph.store import open_store

        store = open_store(self.store_path(bundle))
        self._stores.append(store)
        return store

    def close(self) -> None:
        for store in self._stores:
            store.close()
        self._stores.clear()


pass_app = click.make_pass_decorator(App)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="provgraph")
@click.option(
    "-C",
    "--bundle",
    "bundle_dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="PROVGRAPH_BUNDLE",
    help="Bundle folder (holds provgraph.toml). Default: search upwards from the current "
    "folder, or from the path given to `ingest`.",
)
@click.option(
    "--store",
    "store_location",
    envvar="PROVGRAPH_STORE",
    metavar="PATH|URL",
    help="Store folder, or a SPARQL 1.1 server: [PRESET+]http(s)://host/path[#options] "
    "(presets oxigraph, fuseki, graphdb, virtuoso, neptune; see the README). "
    "Default: .provgraph/store inside the bundle.",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors.")
@click.pass_context
def cli(
    ctx: click.Context, bundle_dir: Path | None, store_location: str | None, verbose: int, quiet: bool
) -> None:
    """provgraph: trace benchmark results from protocol to released archive.

    Import a benchmark's artifacts into one W3C PROV graph, check the contract's rules as a
    fail-closed release gate, and query the lineage of any number.

    \b
    Typical session, inside a bundle folder:
      provgraph init            # write provgraph.toml and the store folder
      provgraph ingest          # import every artifact of the bundle
      provgraph check           # run the contract rules; exit 1 if the gate fails

    Exit codes: 0 ok, 1 gate failed, 2 usage or input error, 3 internal error.
    """
    level = logging.WARNING - 10 * verbose if not quiet else logging.ERROR
    logging.basicConfig(
        level=max(level, logging.DEBUG), format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    app = App(bundle_dir, store_location, -1 if quiet else verbose)
    ctx.obj = app
    ctx.call_on_close(app.close)


def _register() -> None:
    """Add every module of this package that defines ``command`` (one command per module).

    Command modules import only click and rich at the top; heavy work is imported inside the
    command function, so start-up stays fast.
    """
    import importlib
    import pkgutil

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        command = getattr(module, "command", None)
        if isinstance(command, click.Command):
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn provgraph errors into one line on stderr.

    The run's temporary files (spilled view partitions, staged graphs) go under one folder of
    its own, removed when it ends: also when Ctrl-C ends it while a reader thread still writes
    into it (:func:`_end_interrupted`)."""
    previous, folder = tempfile.tempdir, tempfile.mkdtemp(prefix="provgraph-run-")
    tempfile.tempdir = folder
    try:
        try:
            code = cli.main(args=argv, prog_name="provgraph", standalone_mode=False)
        except BaseException as err:
            if _interrupted(err):
                _end_interrupted(folder)
            _fail(err)
        sys.exit(code if isinstance(code, int) else 0)
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(folder, ignore_errors=True)


def _fail(err: BaseException) -> NoReturn:
    if isinstance(err, ProvgraphError):
        for line in str(err).splitlines():
            click.echo(f"provgraph: error: {line}", err=True)
        sys.exit(err.exit_code)
    if isinstance(err, click.exceptions.Abort):
        click.echo("provgraph: aborted", err=True)
        sys.exit(ExitCode.USAGE)
    if isinstance(err, click.ClickException):
        err.show()
        sys.exit(ExitCode.USAGE if err.exit_code != 0 else 0)
    if not isinstance(err, Exception):  # SystemExit from a command: its own code
        raise err
    logging.getLogger("provgraph").debug("internal error", exc_info=err)
    click.echo(
        f"provgraph: internal error: {type(err).__name__}: {err} "
        "(this is a bug; run with -v to see the traceback)",
        err=True,
    )
    if logging.getLogger().isEnabledFor(logging.INFO):
        import traceback

        traceback.print_exception(err)
    sys.exit(ExitCode.INTERNAL)


def _interrupted(err: BaseException | None) -> bool:
    """Whether ``err`` is a Ctrl-C or arose from one: click re-raises it as ``Abort``, and a
    temporary folder removed while a reader still wrote into it fails on the way out."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def _end_interrupted(folder: str) -> NoReturn:
    """Exit 130 at once. Queries still running on reader threads cannot be stopped, and the
    interpreter would wait for them at exit (a rule that groups a million rows: minutes); what
    they read is thrown away, and nothing half-written is switched in (the store was closed on
    the way out, and its graphs change only by atomic switches)."""
    click.echo("provgraph: interrupted; the store keeps its last complete state", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    shutil.rmtree(folder, ignore_errors=True)
    os._exit(ExitCode.INTERRUPTED)
