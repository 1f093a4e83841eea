"""The contract file: project, clauses in force, and the intended state from each section."""

from __future__ import annotations

from pathlib import Path

from provgraph.bundle.contract import CONTRACT_FILE, load_contract
from provgraph.bundle.contract.sections import section_modules
from provgraph.ingest.api import (
    CERTAIN,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    Source,
)


class ContractImporter(Importer):
    name = "contract"
    version = "1"
    description = "provgraph.toml: project, declared clauses and the protocol sections"
    handles = "file"
    suffixes = frozenset({".toml"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        return CERTAIN if path.name == CONTRACT_FILE else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        if source.path.resolve() != (ctx.bundle.root / CONTRACT_FILE).resolve():
            raise InputError(source.rel, "only the bundle's own contract (at its root) is imported")
        contract = load_contract(source.path)
        add = ctx.add
        node = ctx.contract_iri
        project = ctx.iri("project", "main")
        add(node, RDF_TYPE, PG.Contract)
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        add(node, PG.sha256, contract.sha256)
        add(node, PG.project, project)
        add(project, RDF_TYPE, PG.Project)
        info = contract.data["project"]
        add(project, PG.name, info["name"])
        add(project, PG.baseIri, info["base_iri"])
        add(project, PG.description, info.get("description"))
        add(project, PG.version, info.get("version"))
        add(project, PG.strict, info.get("strict", False))
        for clause in contract.clauses():
            add(node, PG.declaresClause, PG[f"{clause.capitalize()}Clause"])
        modules = section_modules()
        for name, section in contract.data.items():
            writer = getattr(modules[name], "write", None)
            if writer is not None:
                writer(section, ctx)
        ctx.record()
