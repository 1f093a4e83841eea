"""The file class closure (provgraph/rules/fileview.py): every file node, whatever its class,
carries ``pg:isFile true`` after the derived evidence is refreshed, and only file nodes do."""

from __future__ import annotations

from pathlib import Path

from conftest import ingest_bundle, rule_bundle

from provgraph.lineage.gate import refresh_derived
from provgraph.rdf.vocab import PG_NS
from provgraph.rules import fileview

P = f"PREFIX pg: <{PG_NS}>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"


def test_every_file_of_any_file_class_is_stated_a_file(tmp_path: Path) -> None:
    """The release-derived-without-build pair's flawed bundle (its files are typed pg:File,
    pg:SourceFile, pg:PromptFile ...): the closure is exactly the nodes of a file class, and a
    second refresh over unchanged imports does nothing."""
    store, _, _ = ingest_bundle(rule_bundle("release-derived-without-build", "flawed", tmp_path / "b"))
    refresh_derived(store)
    stated = {r["f"].value for r in store.select(P + "SELECT ?f WHERE { ?f pg:isFile true }")}
    typed = store.select(P + "SELECT DISTINCT ?f ?cls WHERE { ?cls rdfs:subClassOf* pg:File . ?f a ?cls }")
    assert stated == {r["f"].value for r in typed}
    subclassed = {r["f"].value for r in typed if r["cls"].value != PG_NS + "File"}
    assert subclassed and subclassed <= stated  # files of a subclass of pg:File are there too
    assert not fileview.refresh(store)
