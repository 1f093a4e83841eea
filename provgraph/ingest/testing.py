"""Helpers to test an importer: write a bundle into a folder, ingest it into a real in-memory
Oxigraph store, and query what it wrote.

A complete test (the importer is registered for the block only, no package install needed)::

    from provgraph.ingest.testing import ingest_bundle, registered, write_bundle

    def test_latency(tmp_path):
        root = write_bundle(tmp_path / "b", {"latency.csv": "call_id,ms\\nc1,250\\n"})
        with registered(LatencyImporter):
            ingested = ingest_bundle(root)
        assert ingested.problems == [] and ingested.rejected == []
        assert ingested.select("SELECT ?s WHERE { ?s a pg:ModelCall }") == [...]

The same, run here as a doctest, with a one-line importer that types each ``*.note`` file:

>>> import tempfile
>>> from pathlib import Path
>>> from provgraph.ingest.api import CERTAIN, NO, PG, RDF_TYPE, Importer
>>> class Notes(Importer):
...     name = "notes"
...     def detect(self, path, bundle):
...         return CERTAIN if path.suffix == ".note" else NO
...     def ingest(self, source, ctx):
...         ctx.add(ctx.source_iri, RDF_TYPE, PG.File)
>>> tmp = tempfile.TemporaryDirectory()
>>> root = write_bundle(Path(tmp.name) / "bundle", {"a.note": "hello"})
>>> sorted(p.name for p in root.iterdir())
['a.note', 'provgraph.toml']
>>> with registered(Notes):
...     ingested = ingest_bundle(root)
>>> ingested.result("a.note")
ImportResult(rel='a.note', importer='notes', outcome='imported', ...)
>>> ingested.problems, ingested.rejected
([], [])
>>> ingested.select("SELECT ?f WHERE { ?f a pg:File } ORDER BY ?f")
[{'f': 'https://example.org/t/file/a.note'}]
>>> ingested.close()
>>> tmp.cleanup()
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from provgraph.bundle.contract import CONTRACT_FILE
from provgraph.bundle.layout import Bundle
from provgraph.ingest import registry
from provgraph.ingest.base import Importer, Problem
from provgraph.ingest.run import ImportResult, ingest_paths
from provgraph.rdf.vocab import PREFIXES
from provgraph.store import open_store
from provgraph.store.base import Store

log = logging.getLogger(__name__)

__all__ = ["CONTRACT", "Ingested", "ingest_bundle", "registered", "write_bundle"]

#: The smallest valid contract: a project name and the base IRI nodes are minted under.
CONTRACT = """[project]
name = "t"
base_iri = "https://example.org/t/"
"""

_PREFIX_LINES = "".join(f"PREFIX {p}: <{ns}>\n" for p, ns in PREFIXES.items())


def write_bundle(root: Path, files: Mapping[str, str | bytes], contract: str = CONTRACT) -> Path:
    """Write a bundle into ``root``: the contract (``provgraph.toml``) and ``files``, a map of
    bundle-relative POSIX paths to text (written as UTF-8) or bytes. Returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / CONTRACT_FILE).write_text(contract, encoding="utf-8")
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@dataclass
class Ingested:
    """What :func:`ingest_bundle` produced. Unpacks as ``store, results, problems``."""

    store: Store
    #: One result per planned source (importer, outcome, records, triples, problems).
    results: list[ImportResult]
    #: Paths the planner could not give to an importer (a tie, an unreadable or excluded path).
    problems: list[Problem]

    def __iter__(self) -> Iterator[object]:
        return iter((self.store, self.results, self.problems))

    @property
    def rejected(self) -> list[Problem]:
        """Every record an importer rejected, over all sources (``ctx.problem`` calls)."""
        return [p for r in self.results for p in r.problems if not p.kept]

    @property
    def notes(self) -> list[Problem]:
        """Every note on a record that was imported all the same (``ctx.note`` calls)."""
        return [p for r in self.results for p in r.problems if p.kept]

    def select(self, query: str) -> list[dict[str, str | None]]:
        """Run a SPARQL SELECT (the ``pg``, ``prov``, ``rdf``, ``rdfs`` and ``xsd`` prefixes
        are declared) and return each solution as plain values (None when unbound)."""
        rows = self.store.select(_PREFIX_LINES + query)
        return [{k: None if v is None else v.value for k, v in row.items()} for row in rows]

    def result(self, rel: str) -> ImportResult:
        """The result of the source at bundle path ``rel`` (KeyError if none was planned)."""
        for r in self.results:
            if r.rel == rel:
                return r
        raise KeyError(rel)

    def close(self) -> None:
        self.store.close()


def ingest_bundle(root: Path, store: Store | None = None) -> Ingested:
    """Ingest the whole bundle at ``root`` into ``store`` (default: a fresh in-memory store),
    the way ``provgraph ingest`` does, with every registered importer."""
    store = store or open_store(None)
    bundle = Bundle.open(root)
    results, problems = ingest_paths(store, bundle, [bundle.root])
    return Ingested(store, results, problems)


@dataclass(frozen=True)
class _ClassEntryPoint:
    """Stands in for an installed entry point: ``load()`` hands back the class itself, so an
    importer defined in a test (or a doctest) need not be importable by name."""

    name: str
    cls: type[Importer]

    @property
    def value(self) -> str:
        return f"{self.cls.__module__}:{self.cls.__qualname__}"

    def load(self) -> type[Importer]:
        return self.cls


@contextmanager
def registered(*importers: type[Importer]) -> Iterator[None]:
    """Within the block, ``importers`` are registered as if installed as ``provgraph.importers``
    entry points under their ``name`` (replacing an installed one of the same name)."""
    installed = registry._entry_points
    eps = dict(installed())
    for cls in importers:
        eps[cls.name] = _ClassEntryPoint(cls.name, cls)  # type: ignore[assignment]
    log.debug("registered for a test: %s", ", ".join(cls.name for cls in importers))
    registry._entry_points = lambda: eps  # type: ignore[assignment]
    registry.get.cache_clear()
    try:
        yield
    finally:
        registry._entry_points = installed  # type: ignore[assignment]
        registry.get.cache_clear()
