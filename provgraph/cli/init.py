"""``provgraph init``: start a bundle; in a folder with artifacts, draft its contract from them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from provgraph.bundle.contract import CONTRACT_FILE
from provgraph.cli import App, pass_app
from provgraph.cli.common import out
from provgraph.errors import UsageError


@click.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--name", help="Project name (default: the folder's name).")
@click.option("--base-iri", help="Base IRI for node IRIs (default: https://example.org/<name>/).")
@click.option("--force", is_flag=True, help="Replace an existing provgraph.toml (and a drafted plan.csv).")
@pass_app
def command(app: App, folder: Path, name: str | None, base_iri: str | None, force: bool) -> int:
    """Create provgraph.toml and an empty store in FOLDER (default: here).

    In a folder that already holds artifacts, the contract is a commented draft inferred from
    them (the importers' own reading): the plan frozen from the request side (written as
    plan.csv), conditions, requested models, and, commented out, the cohort and release texts
    found. It prints what it inferred, what it could not, and what you must confirm. An
    existing contract (or plan.csv) is never overwritten without --force. The store lives in
    FOLDER/.provgraph/, which holds its own .gitignore so it never lands in version control.
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.bundle.layout import STORE_DIR, Bundle
    from provgraph.store import open_store

    folder.mkdir(parents=True, exist_ok=True)
    contract = folder / CONTRACT_FILE
    if contract.exists() and not force:
        raise UsageError(f"{contract} already exists; not overwritten (--force replaces it with a new draft)")
    name = name or folder.resolve().name or "project"
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "project"
    base = base_iri or f"https://example.org/{slug}/"
    template = _template(name, slug, base)
    if _has_artifacts(folder):
        _draft(folder, contract, template, name, base, force)
    else:
        _write(contract, template)
        out.print(f"wrote {contract}")
    bundle = Bundle.open(folder)  # validates what we wrote
    state = folder / STORE_DIR
    state.mkdir(exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    location = app.store_path(bundle)
    open_store(location).close()  # a server: reachable, and holds the vocabulary
    out.print(f"store ready at {location}")
    out.print("next: `provgraph ingest` and `provgraph check`")
    return 0


def _template(name: str, slug: str, base: str) -> str:
    from importlib.resources import files  # lazy: start-up time

    text = (files("provgraph.bundle.contract") / "template.toml").read_text(encoding="utf-8")
    text = text.replace("{name}", name.replace('"', "'")).replace("{slug}", slug)
    return text.replace(f"https://example.org/{slug}/", base)


def _has_artifacts(folder: Path) -> bool:
    return any(not p.name.startswith(".") and p.name != CONTRACT_FILE for p in folder.iterdir())


def _write(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file renamed into place)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _draft(folder: Path, contract: Path, template: str, name: str, base: str, force: bool) -> None:
    # lazy: drafting ingests the folder, which only this path of the command needs
    from provgraph.bundle.layout import Bundle
    from provgraph.ingest.draft.infer import infer
    from provgraph.ingest.draft.write import PLAN_FILE, contract_text, plan_csv, sections_to_confirm

    old = contract.read_text(encoding="utf-8") if contract.exists() else None
    plan = folder / PLAN_FILE
    old_plan = plan.read_text(encoding="utf-8") if plan.exists() else None
    _write(contract, template)  # the importers need a contract to read the folder under
    try:
        draft = infer(folder)
        if draft.plan_rows and old_plan is not None and not force:
            raise UsageError(f"{plan} already exists; not overwritten (--force replaces it)")
        if draft.plan_rows:
            _write(plan, plan_csv(draft))
        _write(contract, contract_text(draft, name, base))
        Bundle.open(folder)  # the draft validates, or nothing of it stays
    except BaseException:
        _restore(contract, old)
        _restore(plan, old_plan)
        raise
    say = _plain
    say(f"drafted {contract} from the artifacts" + (f" and {plan}" if draft.plan_rows else ""))
    for importer, paths in sorted(draft.detected.items()):
        if importer not in ("contract", "files"):
            shown = ", ".join(paths[:3]) + (f" (+{len(paths) - 3})" if len(paths) > 3 else "")
            say(f"  found {importer}: {shown}")
    say("inferred:")
    if draft.plan_source:
        say(f"  [plan] from {draft.plan_source}")
    if draft.conditions:
        say(f"  [conditions] {', '.join(sorted(draft.conditions))}")
    if draft.models:
        say(f"  [models] {', '.join(sorted(draft.models.values()))}")
    say("could not infer:" if draft.unknown else "could not infer: nothing else")
    for line in draft.unknown:
        say(f"  {line}")
    say("confirm: " + "; ".join(sections_to_confirm(draft)))


def _restore(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
    else:
        _write(path, text)


def _plain(line: str) -> None:
    out.print(line, markup=False)  # contract section names are in brackets, not rich markup
