"""The ``provgraph`` command line: a click group with one thin module per command.

Exit codes: 0 ok, 1 the gate failed (a fail rule fired or a rule could not run), 2 usage or
input error, 3 internal error (a bug). User errors are one line each on stderr.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

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
    """Entry point: run the CLI and turn provgraph errors into one line on stderr."""
    try:
        code = cli.main(args=argv, prog_name="provgraph", standalone_mode=False)
    except ProvgraphError as err:
        for line in str(err).splitlines():
            click.echo(f"provgraph: error: {line}", err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("provgraph: aborted", err=True)
        sys.exit(ExitCode.USAGE)
    except click.ClickException as err:
        err.show()
        sys.exit(ExitCode.USAGE if err.exit_code != 0 else 0)
    except KeyboardInterrupt:
        click.echo("provgraph: interrupted; the store keeps its last complete state", err=True)
        sys.exit(130)
    except Exception as err:
        logging.getLogger("provgraph").debug("internal error", exc_info=True)
        click.echo(
            f"provgraph: internal error: {type(err).__name__}: {err} "
            "(this is a bug; run with -v to see the traceback)",
            err=True,
        )
        if logging.getLogger().isEnabledFor(logging.INFO):
            import traceback

            traceback.print_exc()
        sys.exit(ExitCode.INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)
