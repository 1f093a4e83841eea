"""``provgraph init``: start a bundle."""

from __future__ import annotations

import re
from pathlib import Path

import click

from provgraph.bundle.contract import CONTRACT_FILE
from provgraph.cli import App, pass_app
from provgraph.cli.common import out


@click.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--name", help="Project name (default: the folder's name).")
@click.option("--base-iri", help="Base IRI for node IRIs (default: https://example.org/<name>/).")
@pass_app
def command(app: App, folder: Path, name: str | None, base_iri: str | None) -> int:
    """Create provgraph.toml and an empty store in FOLDER (default: here), or check a --store server.

    An existing contract is never overwritten. The store lives in FOLDER/.provgraph/, which
    holds its own .gitignore so it never lands in version control.
    """
    from importlib.resources import files

    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.bundle.layout import STORE_DIR, Bundle
    from provgraph.store import open_store

    folder.mkdir(parents=True, exist_ok=True)
    contract = folder / CONTRACT_FILE
    name = name or folder.resolve().name or "project"
    if contract.exists():
        out.print(f"{contract} already exists; leaving it as it is")
    else:
        slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "project"
        template = (files("provgraph.bundle.contract") / "template.toml").read_text(encoding="utf-8")
        text = template.replace("{name}", name.replace('"', "'")).replace("{slug}", slug)
        if base_iri:
            text = text.replace(f"https://example.org/{slug}/", base_iri)
        contract.write_text(text, encoding="utf-8")
        out.print(f"wrote {contract}")
    bundle = Bundle.open(folder)  # validates what we wrote or found
    state = folder / STORE_DIR
    state.mkdir(exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    location = app.store_path(bundle)
    open_store(location).close()  # a server: reachable, and holds the vocabulary
    out.print(f"store ready at {location}")
    out.print("next: put your artifacts in the folder, then `provgraph ingest` and `provgraph check`")
    return 0
